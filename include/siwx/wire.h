/* SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause */
/*
 * siwx/wire.h - every on-the-wire constant and header layout siwx speaks.
 *
 * MPA (RFC 5044, RFC 6581), DDP (RFC 5041) and RDMAP (RFC 5040, RFC 7306),
 * as numbers in host order and as byte offsets and sizes. This header is
 * the one home of these facts for everything the project writes:
 *   - the kernel build checks the patched iwarp.h against it
 *     (drivers/infiniband/sw/siw/siwx_wire_check.c, static_assert);
 *   - the C tools and tests include it (tools/mpa-peer, selftests);
 *   - the Python decoders read it (selftests/lib/siwx_wire.py parses this
 *     file; its unit test compares every value with what the C compiler
 *     makes of it).
 *
 * Rules, so that all three can read it: only object-like #defines; a value
 * is an integer literal, a string literal, or an expression of literals,
 * other SIWX_ names, parentheses and the operators + - * << >> | & ~.
 * No types, no includes: it is usable from kernel and user space alike.
 *
 * Byte offsets of the DDP and RDMAP headers count from the first byte after
 * the MPA ULPDU_Length field (the DDP control byte); offsets of an RDMAP
 * header (Read Request, Atomic Request, ...) count from its first byte,
 * which follows the untagged DDP header.
 */
#ifndef _SIWX_WIRE_H
#define _SIWX_WIRE_H

/* ---------------------------------------------------------------- MPA */

/* MPA Request and Reply frame (RFC 5044 section 7.1) */
#define SIWX_MPA_KEY_REQ		"MPA ID Req Frame"
#define SIWX_MPA_KEY_REP		"MPA ID Rep Frame"
#define SIWX_MPA_KEY_SIZE		16
#define SIWX_MPA_OFF_FLAGS		16
#define SIWX_MPA_OFF_REV		17
#define SIWX_MPA_OFF_PD_LEN		18
#define SIWX_MPA_RR_HDR_SIZE		20

/* the flags byte (byte 16) */
#define SIWX_MPA_FLAG_M			0x80	/* markers */
#define SIWX_MPA_FLAG_C			0x40	/* CRC */
#define SIWX_MPA_FLAG_R			0x20	/* reject (Reply only) */
#define SIWX_MPA_FLAG_S			0x10	/* enhanced (RFC 6581) */
/* siw's own use of a reserved bit: GSO-sized FPDUs (not an RFC flag) */
#define SIWX_MPA_FLAG_SIW_GSO		0x08
#define SIWX_MPA_FLAGS_RSVD		0x0f

#define SIWX_MPA_REV_1			1	/* RFC 5044 */
#define SIWX_MPA_REV_2			2	/* RFC 6581 */
/* private data limit on the wire, the enhanced prefix included */
#define SIWX_MPA_MAX_PD			512

/*
 * RFC 6581 section 9: the enhanced connection establishment data at the
 * start of the private data, an IRD word then an ORD word.
 */
#define SIWX_MPA_V2_HDR_SIZE		4
#define SIWX_MPA_V2_OFF_IRD		0
#define SIWX_MPA_V2_OFF_ORD		2
#define SIWX_MPA_V2_IRD_A		0x8000	/* peer-to-peer */
#define SIWX_MPA_V2_IRD_B		0x4000	/* zero-length Send RTR */
#define SIWX_MPA_V2_ORD_C		0x8000	/* zero-length Write RTR */
#define SIWX_MPA_V2_ORD_D		0x4000	/* zero-length Read RTR */
#define SIWX_MPA_V2_IRD_ORD_MASK	0x3fff
/* an IRD or ORD of all ones: no automatic negotiation */
#define SIWX_MPA_V2_NO_NEGOTIATION	0x3fff

/* FPDU framing (RFC 5044 section 4): ULPDU_Length | ULPDU | pad | CRC */
#define SIWX_MPA_HDR_SIZE		2
#define SIWX_MPA_CRC_SIZE		4
#define SIWX_MPA_PAD_ALIGN		4
#define SIWX_MPA_MARKER_SIZE		4
#define SIWX_MPA_MARKER_INTERVAL	512
/* the largest ULPDU the 16-bit length field can carry */
#define SIWX_MPA_MAX_ULPDU		0xffff
/*
 * The FPDU CRC: CRC32c (Castagnoli, RFC 3385), reflected polynomial,
 * initial value and final XOR all ones; the 4 bytes go out least
 * significant byte first, as iSCSI sends them (what the kernel's crc32c
 * produces when stored in memory order).
 */
#define SIWX_MPA_CRC32C_POLY		0x82f63b78
#define SIWX_MPA_CRC32C_INIT		0xffffffff
#define SIWX_MPA_CRC32C_XOROUT		0xffffffff

/* ---------------------------------------------------------------- DDP */

/*
 * The DDP/RDMAP control field (RFC 5041 section 4, RFC 5040 section 4.3)
 * as one 16-bit word in host order: DDP byte, then RDMAP byte.
 */
#define SIWX_CTRL_DDP_TAGGED		0x8000
#define SIWX_CTRL_DDP_LAST		0x4000
#define SIWX_CTRL_DDP_RSVD		0x3c00
#define SIWX_CTRL_DDP_VERSION		0x0300
#define SIWX_CTRL_RDMAP_VERSION		0x00c0
/*
 * draft-talpey-rdma-commit widens the opcode by one of RFC 5040's
 * reserved bits (RFC 5040: RSVD 0x0030, OpCode 0x000f), so that
 * 0x10/0x11 fit; one reserved bit is left.
 */
#define SIWX_CTRL_RDMAP_RSVD		0x0020
#define SIWX_CTRL_RDMAP_OPCODE		0x001f

/* the same as bits of the DDP control byte (byte 0) ... */
#define SIWX_DDP_FLAG_T			(SIWX_CTRL_DDP_TAGGED >> 8)
#define SIWX_DDP_FLAG_L			(SIWX_CTRL_DDP_LAST >> 8)
#define SIWX_DDP_MASK_RSVD		(SIWX_CTRL_DDP_RSVD >> 8)
#define SIWX_DDP_MASK_DV		(SIWX_CTRL_DDP_VERSION >> 8)
#define SIWX_DDP_RSVD_SHIFT		2
#define SIWX_DDP_VERSION		1
/* ... and of the RDMAP control byte (byte 1) */
#define SIWX_RDMAP_MASK_RV		SIWX_CTRL_RDMAP_VERSION
#define SIWX_RDMAP_RV_SHIFT		6
#define SIWX_RDMAP_MASK_RSVD		SIWX_CTRL_RDMAP_RSVD
#define SIWX_RDMAP_RSVD_SHIFT		5
#define SIWX_RDMAP_MASK_OPCODE		SIWX_CTRL_RDMAP_OPCODE
#define SIWX_RDMAP_VERSION		1

#define SIWX_DDP_CTRL_SIZE		2
/* tagged: ctrl | STag | TO */
#define SIWX_DDP_TAGGED_HDR_SIZE	14
#define SIWX_DDP_OFF_STAG		2
#define SIWX_DDP_OFF_TO			6
/* untagged: ctrl | Invalidate STag (or reserved) | QN | MSN | MO */
#define SIWX_DDP_UNTAGGED_HDR_SIZE	18
#define SIWX_DDP_OFF_INVAL_STAG		2
#define SIWX_DDP_OFF_QN			6
#define SIWX_DDP_OFF_MSN		10
#define SIWX_DDP_OFF_MO			14

/* untagged queue numbers (RFC 5040 section 5, RFC 7306 section 8) */
#define SIWX_DDP_QN_SEND		0	/* Send, Immediate Data */
#define SIWX_DDP_QN_READ_REQ		1	/* Read, Atomic, Flush, Atomic Write Requests */
#define SIWX_DDP_QN_TERMINATE		2
#define SIWX_DDP_QN_ATOMIC_RESP		3	/* Atomic, Flush, Atomic Write Responses */
#define SIWX_DDP_QN_COUNT		4
/* the first MSN of every queue and direction */
#define SIWX_DDP_MSN_FIRST		1

/* ---------------------------------------------------------------- RDMAP */

/* opcodes (RFC 5040 section 4.3, RFC 7306 section 9) */
#define SIWX_RDMAP_OP_WRITE		0x0
#define SIWX_RDMAP_OP_READ_REQ		0x1
#define SIWX_RDMAP_OP_READ_RESP		0x2
#define SIWX_RDMAP_OP_SEND		0x3
#define SIWX_RDMAP_OP_SEND_INV		0x4
#define SIWX_RDMAP_OP_SEND_SE		0x5
#define SIWX_RDMAP_OP_SEND_SE_INV	0x6
#define SIWX_RDMAP_OP_TERMINATE		0x7
#define SIWX_RDMAP_OP_IMM		0x8
#define SIWX_RDMAP_OP_IMM_SE		0x9
#define SIWX_RDMAP_OP_ATOMIC_REQ	0xa
#define SIWX_RDMAP_OP_ATOMIC_RESP	0xb
/* draft-talpey-rdma-commit-01 section 3 (Documentation/flush.md) */
#define SIWX_RDMAP_OP_FLUSH_REQ		0xc
#define SIWX_RDMAP_OP_FLUSH_RESP	0xd
#define SIWX_RDMAP_OP_VERIFY_REQ	0xe	/* known, not implemented */
#define SIWX_RDMAP_OP_VERIFY_RESP	0xf	/* known, not implemented */
#define SIWX_RDMAP_OP_ATOMIC_WRITE_REQ	0x10
/* -01's opcode table prints 0x11 wrongly; its message text says 0x11 */
#define SIWX_RDMAP_OP_ATOMIC_WRITE_RESP	0x11
/* the number of opcodes siwx knows (one past the last) */
#define SIWX_RDMAP_OP_COUNT		0x12

/* Read Request header (RFC 5040 section 4.4), 28 bytes */
#define SIWX_RDMAP_READ_REQ_SIZE	28
#define SIWX_RREQ_OFF_SINK_STAG		0
#define SIWX_RREQ_OFF_SINK_TO		4
#define SIWX_RREQ_OFF_SIZE		12
#define SIWX_RREQ_OFF_SRC_STAG		16
#define SIWX_RREQ_OFF_SRC_TO		20

/* Atomic Request header (RFC 7306 section 5.1), 52 bytes */
#define SIWX_RDMAP_ATOMIC_REQ_SIZE	52
#define SIWX_AREQ_OFF_AOPCODE		0	/* reserved (28) | AOpCode (4) */
#define SIWX_AREQ_OFF_REQ_ID		4
#define SIWX_AREQ_OFF_STAG		8
#define SIWX_AREQ_OFF_TO		12
#define SIWX_AREQ_OFF_ADD_SWAP		20
#define SIWX_AREQ_OFF_ADD_SWAP_MASK	28
#define SIWX_AREQ_OFF_COMPARE		36
#define SIWX_AREQ_OFF_COMPARE_MASK	44
#define SIWX_AREQ_AOPCODE_MASK		0xf
#define SIWX_AREQ_RSVD_MASK		0xfffffff0
/* the AOpCode registry (RFC 7306 section 9.2) */
#define SIWX_AOP_FETCH_ADD		0x0
#define SIWX_AOP_CMP_SWAP		0x2
/* the original data and the operands are 8 bytes, 8-byte aligned */
#define SIWX_ATOMIC_SIZE		8

/* Atomic Response header (RFC 7306 section 5.2), 12 bytes */
#define SIWX_RDMAP_ATOMIC_RESP_SIZE	12
#define SIWX_ARESP_OFF_REQ_ID		0
#define SIWX_ARESP_OFF_VALUE		4

/*
 * Flush Request (draft-talpey-rdma-commit-01 section 3.1), 20 bytes after
 * the untagged DDP header: Data Sink STag, Length, Tagged Offset, then the
 * Disposition Flags. The Flush Response (3.2) carries nothing.
 */
#define SIWX_RDMAP_FLUSH_REQ_SIZE	20
#define SIWX_FREQ_OFF_STAG		0
#define SIWX_FREQ_OFF_LEN		4
#define SIWX_FREQ_OFF_TO		8
#define SIWX_FREQ_OFF_DISP		16
/* Disposition Flags: the draft's P and G (the reverse of verbs' values) */
#define SIWX_FLUSH_DISP_P		0x00000001	/* persistence */
#define SIWX_FLUSH_DISP_G		0x00000002	/* global visibility */
/*
 * Selectivity, which -01 leaves "to be added": siwx's choice, bits 5-4 as
 * in InfiniBand's FETH. 0: the range given; 1: the whole region the STag
 * names (Length and Tagged Offset ignored).
 */
#define SIWX_FLUSH_DISP_SEL_MASK	0x00000030
#define SIWX_FLUSH_DISP_SEL_SHIFT	4
#define SIWX_FLUSH_SEL_RANGE		0
#define SIWX_FLUSH_SEL_MR		1
#define SIWX_FLUSH_DISP_RSVD		0xffffffcc

/*
 * Atomic Write Request (draft-talpey-rdma-commit-01 section 3.5), 24
 * bytes after the untagged DDP header: STag, Length (always 8), Tagged
 * Offset (64-bit aligned), the 8 data bytes (placed as they are, in
 * the order they arrive). The Atomic Write Response carries nothing.
 */
#define SIWX_RDMAP_ATOMIC_WRITE_REQ_SIZE	24
#define SIWX_AWREQ_OFF_STAG		0
#define SIWX_AWREQ_OFF_LEN		4
#define SIWX_AWREQ_OFF_TO		8
#define SIWX_AWREQ_OFF_DATA		16
#define SIWX_ATOMIC_WRITE_SIZE		8

/* Immediate Data (RFC 7306 section 6): 8 bytes after the DDP header */
#define SIWX_RDMAP_IMM_SIZE		8

/*
 * Terminate (RFC 5040 section 4.8): the 4-byte Terminate Control after the
 * untagged DDP header, then, as its M/D/R bits say, the DDP Segment Length
 * (2 bytes) and the terminated DDP and RDMAP headers.
 */
#define SIWX_RDMAP_TERM_CTRL_SIZE	4
#define SIWX_TERM_OFF_LAYER_ETYPE	0	/* Layer << 4 | EType */
#define SIWX_TERM_OFF_ECODE		1
#define SIWX_TERM_OFF_FLAGS		2
#define SIWX_TERM_LAYER_SHIFT		4
#define SIWX_TERM_ETYPE_MASK		0x0f
#define SIWX_TERM_FLAG_M		0x80	/* DDP Segment Length follows */
#define SIWX_TERM_FLAG_D		0x40	/* the DDP header follows */
#define SIWX_TERM_FLAG_R		0x20	/* the RDMAP header follows */
#define SIWX_TERM_SEGLEN_SIZE		2
/* the Terminate Control as one 32-bit word in host order */
#define SIWX_TERM_CTRL_LAYER		0xf0000000
#define SIWX_TERM_CTRL_ETYPE		0x0f000000
#define SIWX_TERM_CTRL_ECODE		0x00ff0000
#define SIWX_TERM_CTRL_FLAG_M		(SIWX_TERM_FLAG_M << 8)
#define SIWX_TERM_CTRL_FLAG_D		(SIWX_TERM_FLAG_D << 8)
#define SIWX_TERM_CTRL_FLAG_R		(SIWX_TERM_FLAG_R << 8)
#define SIWX_TERM_CTRL_RSVD		0x00001fff

/* Terminate layers */
#define SIWX_TERM_LAYER_RDMAP		0x0
#define SIWX_TERM_LAYER_DDP		0x1
#define SIWX_TERM_LAYER_LLP		0x2	/* MPA */

/* RDMAP layer: error types and codes */
#define SIWX_RDMAP_ETYPE_CATASTROPHIC		0x0
#define SIWX_RDMAP_ETYPE_REMOTE_PROTECTION	0x1
#define SIWX_RDMAP_ETYPE_REMOTE_OPERATION	0x2
#define SIWX_RDMAP_ECODE_INVALID_STAG		0x00
#define SIWX_RDMAP_ECODE_BASE_BOUNDS		0x01
#define SIWX_RDMAP_ECODE_ACCESS_RIGHTS		0x02
#define SIWX_RDMAP_ECODE_STAG_NOT_ASSOC		0x03
#define SIWX_RDMAP_ECODE_TO_WRAP		0x04
#define SIWX_RDMAP_ECODE_VERSION		0x05
#define SIWX_RDMAP_ECODE_OPCODE			0x06
#define SIWX_RDMAP_ECODE_CATASTROPHIC_STREAM	0x07
#define SIWX_RDMAP_ECODE_CATASTROPHIC_GLOBAL	0x08
#define SIWX_RDMAP_ECODE_CANNOT_INVALIDATE	0x09
#define SIWX_RDMAP_ECODE_UNSPECIFIED		0xff

/* DDP layer: error types and codes (RFC 5041 section 7.2) */
#define SIWX_DDP_ETYPE_CATASTROPHIC		0x0
#define SIWX_DDP_ETYPE_TAGGED_BUF		0x1
#define SIWX_DDP_ETYPE_UNTAGGED_BUF		0x2
#define SIWX_DDP_ETYPE_RSVD			0x3
#define SIWX_DDP_ECODE_CATASTROPHIC		0x00
#define SIWX_DDP_ECODE_T_INVALID_STAG		0x00
#define SIWX_DDP_ECODE_T_BASE_BOUNDS		0x01
#define SIWX_DDP_ECODE_T_STAG_NOT_ASSOC		0x02
#define SIWX_DDP_ECODE_T_TO_WRAP		0x03
#define SIWX_DDP_ECODE_T_VERSION		0x04
#define SIWX_DDP_ECODE_UT_INVALID_QN		0x01
#define SIWX_DDP_ECODE_UT_INVALID_MSN_NOBUF	0x02
#define SIWX_DDP_ECODE_UT_INVALID_MSN_RANGE	0x03
#define SIWX_DDP_ECODE_UT_INVALID_MO		0x04
#define SIWX_DDP_ECODE_UT_MSG_TOOLONG		0x05
#define SIWX_DDP_ECODE_UT_VERSION		0x06

/* LLP (MPA) layer: RFC 5044 section 8, RFC 6581 section 8 */
#define SIWX_LLP_ETYPE_MPA			0x0
#define SIWX_LLP_ECODE_TCP_STREAM_LOST		0x01
#define SIWX_LLP_ECODE_RECEIVED_CRC		0x02
#define SIWX_LLP_ECODE_FPDU_START		0x03
#define SIWX_LLP_ECODE_INVALID_REQ_RESP		0x04
#define SIWX_LLP_ECODE_LOCAL_CATASTROPHIC	0x05
#define SIWX_LLP_ECODE_INSUFFICIENT_IRD		0x06
#define SIWX_LLP_ECODE_NO_MATCHING_RTR		0x07

/*
 * Whole FPDU headers, ULPDU_Length included: what a zero-length message
 * of each kind puts on the wire before pad and CRC.
 */
#define SIWX_FPDU_TAGGED_HDR_SIZE	(SIWX_MPA_HDR_SIZE + SIWX_DDP_TAGGED_HDR_SIZE)
#define SIWX_FPDU_UNTAGGED_HDR_SIZE	(SIWX_MPA_HDR_SIZE + SIWX_DDP_UNTAGGED_HDR_SIZE)

#endif /* _SIWX_WIRE_H */
