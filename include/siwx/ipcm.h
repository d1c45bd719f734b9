/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * siwx/ipcm.h - the IBTA RDMA IP CM Service annex (Annex A11) on the wire,
 * and the InfiniBand CM and RoCEv2 framing that carries it.
 *
 * The annex gives an InfiniBand connection the IP 5-tuple: the CM REQ's
 * Service ID carries the IP protocol and destination port, the first 36
 * bytes of the REQ's private data carry the version, the IP version, the
 * source port and both IP addresses, and a request the IP CM Service
 * cannot take is rejected (reason 28) with a rejection layer, an ARI code
 * and an optional suggested value. The annex text here is the IBTA
 * presentation of it (slides, no section numbers): "slide N" below is the
 * page of ../shared/seeds/002_4893f6bb9885724e.txt that states the fact.
 *
 * This header is the one home of these numbers for everything the project
 * writes (tools/ipcm, its tests, Python through siwx_wire.parse()). It
 * keeps include/siwx/wire.h's rules, so that C, Python and shell read it
 * alike: only object-like #defines with the SIWX_ prefix; a value is an
 * integer literal or an expression of literals, other SIWX_ names of this
 * file, parentheses and + - * << >> | & ~. No types, no includes.
 *
 * Offsets are byte offsets, multi-byte fields big-endian (network order),
 * as InfiniBand sends every MAD field. Offsets of a CM message count from
 * the first byte after the 24-byte MAD header, as IBTA Vol. 1 chapter 12's
 * message tables and Linux's include/rdma/ibta_vol1_c12.h do.
 */
#ifndef _SIWX_IPCM_H
#define _SIWX_IPCM_H

/* ---------------------------------------------------------------- RoCEv2 */

/*
 * RoCEv2 (IBTA Annex A17): InfiniBand transport headers in UDP. The CM
 * MADs travel as UD SEND_ONLY packets to the General Services QP (QP 1):
 * BTH, DETH, the 256-byte MAD, then the 4-byte invariant CRC (ICRC).
 */
#define SIWX_ROCEV2_UDP_PORT		4791

/* Base Transport Header (IBTA Vol. 1 9.2) */
#define SIWX_BTH_SIZE			12
#define SIWX_BTH_OFF_OPCODE		0
/* byte 1: SE | M | PadCnt (2 bits) | TVer (4 bits) */
#define SIWX_BTH_OFF_FLAGS		1
#define SIWX_BTH_PAD_MASK		0x30
#define SIWX_BTH_PAD_SHIFT		4
#define SIWX_BTH_OFF_PKEY		2
/* 24-bit fields, each after a byte of its own (reserved; AckReq) */
#define SIWX_BTH_OFF_DEST_QP		5
#define SIWX_BTH_OFF_PSN		9
#define SIWX_BTH_QP_MASK		0xffffff
/* UD (opcode prefix 011) SEND Only */
#define SIWX_BTH_OP_UD_SEND_ONLY	0x64

/* Datagram Extended Transport Header (IBTA Vol. 1 9.3.3) */
#define SIWX_DETH_SIZE			8
#define SIWX_DETH_OFF_QKEY		0
#define SIWX_DETH_OFF_SRC_QP		5	/* 24 bits */

#define SIWX_ICRC_SIZE			4
/* the General Services Interface QP and its well-known Q_Key */
#define SIWX_GSI_QP			1
#define SIWX_GSI_QKEY			0x80010000

/* ---------------------------------------------------------------- MAD */

/* the common MAD header (IBTA Vol. 1 13.4.2) */
#define SIWX_MAD_SIZE			256
#define SIWX_MAD_HDR_SIZE		24
#define SIWX_MAD_OFF_BASE_VERSION	0
#define SIWX_MAD_OFF_MGMT_CLASS		1
#define SIWX_MAD_OFF_CLASS_VERSION	2
#define SIWX_MAD_OFF_METHOD		3
#define SIWX_MAD_OFF_STATUS		4
#define SIWX_MAD_OFF_TID		8
#define SIWX_MAD_OFF_ATTR_ID		16
#define SIWX_MAD_OFF_ATTR_MOD		20
#define SIWX_MAD_BASE_VERSION		1
#define SIWX_MAD_METHOD_SEND		0x03
#define SIWX_MAD_CLASS_CM		0x07
#define SIWX_CM_CLASS_VERSION		2

/* ---------------------------------------------------------------- CM */

/* attribute IDs of the CM messages (IBTA Vol. 1 12.6, Linux ib_cm.h) */
#define SIWX_CM_ATTR_REQ		0x0010
#define SIWX_CM_ATTR_MRA		0x0011
#define SIWX_CM_ATTR_REJ		0x0012
#define SIWX_CM_ATTR_REP		0x0013
#define SIWX_CM_ATTR_RTU		0x0014
#define SIWX_CM_ATTR_DREQ		0x0015
#define SIWX_CM_ATTR_DREP		0x0016

/*
 * Every connected-mode CM message starts with the sender's Local
 * Communication ID; all but the REQ then name the receiver's (Remote).
 */
#define SIWX_CM_OFF_LOCAL_COMM_ID	0
#define SIWX_CM_OFF_REMOTE_COMM_ID	4

/* REQ (IBTA Vol. 1 table 106) */
#define SIWX_CM_REQ_OFF_SERVICE_ID	8
#define SIWX_CM_REQ_OFF_PD		140
#define SIWX_CM_REQ_PD_SIZE		92

/*
 * The rest of the REQ (IBTA Vol. 1 table 106; Linux ibta_vol1_c12.h
 * CM_REQ_*), what tools/ipcm/cm-inject needs to build one by hand. Bit
 * fields share a byte with others: MASK and SHIFT give their place.
 */
#define SIWX_CM_REQ_OFF_LOCAL_CA_GUID	16
#define SIWX_CM_REQ_OFF_LOCAL_QKEY	28
#define SIWX_CM_REQ_OFF_LOCAL_QPN	32	/* 24 bits */
#define SIWX_CM_REQ_OFF_RESP_RESOURCES	35
#define SIWX_CM_REQ_OFF_LOCAL_EECN	36	/* 24 bits */
#define SIWX_CM_REQ_OFF_INIT_DEPTH	39
#define SIWX_CM_REQ_OFF_REMOTE_EECN	40	/* 24 bits */
/* byte 43: Remote CM Response Timeout | Transport Service Type | EEFC */
#define SIWX_CM_REQ_OFF_REMOTE_CM_TIMEOUT 43
#define SIWX_CM_REQ_REMOTE_CM_TIMEOUT_SHIFT 3
#define SIWX_CM_REQ_TST_SHIFT		1	/* 0: RC */
#define SIWX_CM_REQ_OFF_STARTING_PSN	44	/* 24 bits */
/* byte 47: Local CM Response Timeout | Retry Count */
#define SIWX_CM_REQ_OFF_LOCAL_CM_TIMEOUT 47
#define SIWX_CM_REQ_LOCAL_CM_TIMEOUT_SHIFT 3
#define SIWX_CM_REQ_RETRY_COUNT_MASK	0x07
#define SIWX_CM_REQ_OFF_PKEY		48
/* byte 50: Path MTU | RDC Exists | RNR Retry Count */
#define SIWX_CM_REQ_OFF_PATH_MTU	50
#define SIWX_CM_REQ_PATH_MTU_SHIFT	4
#define SIWX_CM_REQ_RNR_RETRY_MASK	0x07
/* byte 51: Max CM Retries | SRQ | Extended Transport Type */
#define SIWX_CM_REQ_OFF_MAX_CM_RETRIES	51
#define SIWX_CM_REQ_MAX_CM_RETRIES_SHIFT 4
#define SIWX_CM_REQ_OFF_PRI_LOCAL_LID	52
#define SIWX_CM_REQ_OFF_PRI_REMOTE_LID	54
#define SIWX_CM_REQ_OFF_PRI_LOCAL_GID	56
#define SIWX_CM_REQ_OFF_PRI_REMOTE_GID	72
#define SIWX_CM_REQ_GID_SIZE		16
/* bytes 88-91: Flow Label (31:12) | reserved | Packet Rate (5:0) */
#define SIWX_CM_REQ_OFF_PRI_FLOW	88
#define SIWX_CM_REQ_FLOW_LABEL_SHIFT	12
#define SIWX_CM_REQ_PACKET_RATE_MASK	0x3f
#define SIWX_CM_REQ_OFF_PRI_TCLASS	92
#define SIWX_CM_REQ_OFF_PRI_HOP_LIMIT	93
/* byte 94: SL | Subnet Local; byte 95: Local ACK Timeout (7:3) */
#define SIWX_CM_REQ_OFF_PRI_SL		94
#define SIWX_CM_REQ_SL_SHIFT		4
#define SIWX_CM_REQ_OFF_PRI_ACK_TIMEOUT	95
#define SIWX_CM_REQ_ACK_TIMEOUT_SHIFT	3
/* the permissive LID: what Linux sends for a routed (RoCEv2) path */
#define SIWX_CM_LID_PERMISSIVE		0xffff
#define SIWX_IB_DEFAULT_PKEY		0xffff

/* MRA */
#define SIWX_CM_MRA_OFF_PD		10
#define SIWX_CM_MRA_PD_SIZE		222

/* REJ (IBTA Vol. 1 table 108) */
#define SIWX_CM_REJ_OFF_MSG_REJECTED	8	/* bits 7:6 */
#define SIWX_CM_REJ_MSG_REJECTED_SHIFT	6
#define SIWX_CM_REJ_OFF_INFO_LEN	9	/* bits 7:1, the ARI length */
#define SIWX_CM_REJ_INFO_LEN_SHIFT	1
#define SIWX_CM_REJ_OFF_REASON		10
#define SIWX_CM_REJ_OFF_ARI		12
#define SIWX_CM_REJ_ARI_SIZE		72
#define SIWX_CM_REJ_OFF_PD		84
#define SIWX_CM_REJ_PD_SIZE		148
/* values of the Message REJected field */
#define SIWX_CM_REJ_MSG_REQ		0
#define SIWX_CM_REJ_MSG_REP		1
#define SIWX_CM_REJ_MSG_OTHER		2
/* rejection reasons the checker names (IBTA Vol. 1 table 109) */
#define SIWX_CM_REJ_REASON_INVALID_SID	8
#define SIWX_CM_REJ_REASON_CONSUMER	28

/* REP */
#define SIWX_CM_REP_OFF_PD		36
#define SIWX_CM_REP_PD_SIZE		196

/* RTU */
#define SIWX_CM_RTU_OFF_PD		8
#define SIWX_CM_RTU_PD_SIZE		224

/* DREQ */
#define SIWX_CM_DREQ_OFF_PD		12
#define SIWX_CM_DREQ_PD_SIZE		220

/* DREP */
#define SIWX_CM_DREP_OFF_PD		8
#define SIWX_CM_DREP_PD_SIZE		224

/* ---------------------------------------------------------------- annex */

/*
 * The Service ID (slide 5): byte 0 the IBTA AGN (0x00), bytes 1-3 0x00,
 * byte 4 0x01 (the RDMA-aware ULP range), byte 5 the IP protocol number
 * (IANA), bytes 6-7 the destination port. The first five bytes are the
 * range; a REQ whose SID is in it carries the annex's private data
 * (slide 5: "SID range indicates that private data is formatted").
 */
#define SIWX_IPCM_SID_OFF_AGN		0
#define SIWX_IPCM_SID_OFF_RANGE		4
#define SIWX_IPCM_SID_OFF_PROTOCOL	5
#define SIWX_IPCM_SID_OFF_PORT		6
#define SIWX_IPCM_SID_AGN		0x00
#define SIWX_IPCM_SID_RANGE_RDMA_AWARE	0x01
#define SIWX_IPCM_SID_PREFIX_MASK	0xffffffffff000000ULL
#define SIWX_IPCM_SID_PREFIX		0x0000000001000000ULL
#define SIWX_IPCM_SID_PROTOCOL_SHIFT	16
#define SIWX_IPCM_SID_PROTOCOL_MASK	0xff
#define SIWX_IPCM_SID_PORT_MASK		0xffff

/*
 * IP protocol numbers (IANA) rdma_cm uses: its port spaces are annex
 * SIDs, RDMA_IB_IP_PS_* in Linux's include/rdma/rdma_cm.h (0x3f, "any
 * local network", is its native IB port space).
 */
#define SIWX_IPCM_PROTOCOL_TCP		6
#define SIWX_IPCM_PROTOCOL_UDP		17
#define SIWX_IPCM_PROTOCOL_IB		0x3f
#define SIWX_IPCM_PS_MASK		0xffffffffffff0000ULL
#define SIWX_IPCM_PS_TCP		0x0000000001060000ULL
#define SIWX_IPCM_PS_UDP		0x0000000001110000ULL
#define SIWX_IPCM_PS_IB			0x00000000013f0000ULL

/*
 * The REQ private data header (slide 4), bytes 0-35 of the REQ's 92 bytes
 * of private data:
 *   0      MajV (7:4) | MinV (3:0)
 *   1      IPV (7:4)  | reserved (3:0)
 *   2-3    Source Port
 *   4-19   Source IP Address (bits 127-0)
 *   20-35  Destination IP Address
 *   36-91  Consumer Private Data
 * An IPv4 address takes the last 4 bytes of its 16-byte field.
 */
#define SIWX_IPCM_HDR_OFF_VERSION	0
#define SIWX_IPCM_HDR_MAJOR_MASK	0xf0
#define SIWX_IPCM_HDR_MAJOR_SHIFT	4
#define SIWX_IPCM_HDR_MINOR_MASK	0x0f
#define SIWX_IPCM_HDR_OFF_IPV		1
#define SIWX_IPCM_HDR_IPV_MASK		0xf0
#define SIWX_IPCM_HDR_IPV_SHIFT		4
#define SIWX_IPCM_HDR_RSVD_MASK		0x0f
#define SIWX_IPCM_HDR_OFF_SRC_PORT	2
#define SIWX_IPCM_HDR_OFF_SRC_ADDR	4
#define SIWX_IPCM_HDR_OFF_DST_ADDR	20
#define SIWX_IPCM_HDR_ADDR_SIZE		16
/* where an IPv4 address sits in its 16-byte field */
#define SIWX_IPCM_HDR_ADDR_OFF_IPV4	12
#define SIWX_IPCM_HDR_SIZE		36
#define SIWX_IPCM_CONSUMER_PD_SIZE (SIWX_CM_REQ_PD_SIZE - SIWX_IPCM_HDR_SIZE)
/*
 * The one version there is, 0.0: the annex's slides give no number; it is
 * what Linux (cma.c CMA_VERSION 0x00) and illumos (IBT_CM_IP_MAJ_VER,
 * IBT_CM_IP_MIN_VER) send.
 */
#define SIWX_IPCM_MAJOR_VERSION		0
#define SIWX_IPCM_MINOR_VERSION		0
#define SIWX_IPCM_IPV4			4
#define SIWX_IPCM_IPV6			6
/*
 * Slide 13: private data starts at byte 140 of the REQ, the addresses at
 * 144, 8-byte aligned. This is the alignment unit.
 */
#define SIWX_IPCM_ADDR_ALIGN		8

/*
 * The reject (slides 6 and 7): reason 28 (Consumer Reject), its 72 bytes
 * of Additional Rejection Information laid out as
 *   0      Rejection Layer: 0x00 the IP CM Service, 0x01 the RDMA-aware ULP
 * and for layer 0x00:
 *   1      the ARI code (below)
 *   2      the length of a suggested value (0: none)
 *   3      reserved (alignment filler)
 *   4-71   the suggested value
 * For layer 0x01 bytes 1-71 are the ULP's. The slides' byte range 0-71 is
 * the REJ's 72-byte ARI field, where illumos's ibcm puts it (the layer
 * byte first in ari_consumer.rej_ari), not the REJ's private data.
 */
#define SIWX_IPCM_REJ_REASON		SIWX_CM_REJ_REASON_CONSUMER
#define SIWX_IPCM_REJ_OFF_LAYER		0
#define SIWX_IPCM_REJ_OFF_ARI		1
#define SIWX_IPCM_REJ_OFF_VALUE_LEN	2
#define SIWX_IPCM_REJ_OFF_RSVD		3
#define SIWX_IPCM_REJ_OFF_VALUE		4
#define SIWX_IPCM_REJ_HDR_SIZE		4
#define SIWX_IPCM_REJ_SIZE		SIWX_CM_REJ_ARI_SIZE
#define SIWX_IPCM_REJ_VALUE_MAX (SIWX_IPCM_REJ_SIZE - SIWX_IPCM_REJ_OFF_VALUE)
#define SIWX_IPCM_LAYER_IPCM		0x00
#define SIWX_IPCM_LAYER_ULP		0x01

/* ARI codes of the IP CM Service layer (slide 7) */
#define SIWX_IPCM_ARI_UNSPECIFIED	0x00
#define SIWX_IPCM_ARI_MAJOR_VERSION	0x01
#define SIWX_IPCM_ARI_MINOR_VERSION	0x02
#define SIWX_IPCM_ARI_IP_VERSION	0x03
#define SIWX_IPCM_ARI_SRC_ADDR		0x04	/* format does not match IPV */
#define SIWX_IPCM_ARI_DST_ADDR		0x05	/* format does not match IPV */
#define SIWX_IPCM_ARI_UNKNOWN_ADDR	0x06	/* not the server's address */
#define SIWX_IPCM_ARI_COUNT		7

#endif /* _SIWX_IPCM_H */
