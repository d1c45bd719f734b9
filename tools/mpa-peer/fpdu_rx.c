// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: the receive side. FPDUs are cut out of the receive buffer by
 * their MPA framing, their CRC checked, and each printed as one line:
 *
 *   rx opcode=0x.. NAME len= t= l= dv= rv= <DDP header> <RDMAP header>
 *      payload= data= crc=
 *
 * (a Terminate prints its control and attached headers instead of
 * payload= data=). The fields of the last FPDU become rx_* variables.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "mpa-peer.h"

/* one output line under construction (cut at its size, never overrun) */
struct line {
	char s[2048];
	size_t o;
};

static void __attribute__((format(printf, 2, 3)))
add(struct line *ln, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	ln->o += vsnprintf(ln->s + ln->o, sizeof(ln->s) - ln->o, fmt, ap);
	va_end(ap);
	if (ln->o >= sizeof(ln->s))
		ln->o = sizeof(ln->s) - 1;
}

/* the RDMAP opcode's name; "op_NN" (hex) for one siwx does not know */
static const char *opname(unsigned int op)
{
	static const char *const n[SIWX_RDMAP_OP_COUNT] = {
		[SIWX_RDMAP_OP_WRITE] = "write",
		[SIWX_RDMAP_OP_READ_REQ] = "read_req",
		[SIWX_RDMAP_OP_READ_RESP] = "read_resp",
		[SIWX_RDMAP_OP_SEND] = "send",
		[SIWX_RDMAP_OP_SEND_INV] = "send_inv",
		[SIWX_RDMAP_OP_SEND_SE] = "send_se",
		[SIWX_RDMAP_OP_SEND_SE_INV] = "send_se_inv",
		[SIWX_RDMAP_OP_TERMINATE] = "term",
		[SIWX_RDMAP_OP_IMM] = "imm",
		[SIWX_RDMAP_OP_IMM_SE] = "imm_se",
		[SIWX_RDMAP_OP_ATOMIC_REQ] = "atomic_req",
		[SIWX_RDMAP_OP_ATOMIC_RESP] = "atomic_resp",
		[SIWX_RDMAP_OP_FLUSH_REQ] = "flush_req",
		[SIWX_RDMAP_OP_FLUSH_RESP] = "flush_resp",
		[SIWX_RDMAP_OP_VERIFY_REQ] = "verify_req",
		[SIWX_RDMAP_OP_VERIFY_RESP] = "verify_resp",
		[SIWX_RDMAP_OP_ATOMIC_WRITE_REQ] = "awrite_req",
		[SIWX_RDMAP_OP_ATOMIC_WRITE_RESP] = "awrite_resp",
	};
	static char unknown[8];

	op &= SIWX_RDMAP_MASK_OPCODE;
	if (op < SIWX_RDMAP_OP_COUNT && n[op])
		return n[op];
	snprintf(unknown, sizeof(unknown), "op_%02x", op);
	return unknown;
}

/* a Flush Request header (p holds all of it); prefix "" or "att_" */
static void print_flush_req(struct line *ln, const char *pre, const uint8_t *p)
{
	uint32_t disp = rd32(p + SIWX_FREQ_OFF_DISP);

	add(ln, " %sfstag=0x%08x %sflen=%u %sfto=0x%" PRIx64
	    " %sdisp=0x%08x %sp=%d %sg=%d %ssel=%u %sdrsvd=0x%x",
	    pre, rd32(p + SIWX_FREQ_OFF_STAG), pre, rd32(p + SIWX_FREQ_OFF_LEN),
	    pre, rd64(p + SIWX_FREQ_OFF_TO), pre, disp,
	    pre, !!(disp & SIWX_FLUSH_DISP_P), pre, !!(disp & SIWX_FLUSH_DISP_G),
	    pre, (disp & SIWX_FLUSH_DISP_SEL_MASK) >> SIWX_FLUSH_DISP_SEL_SHIFT,
	    pre, disp & SIWX_FLUSH_DISP_RSVD);
}

/* an Atomic Write Request header (p holds all of it) */
static void print_awrite_req(struct line *ln, const char *pre,
			     const uint8_t *p)
{
	char hex[2 * SIWX_ATOMIC_WRITE_SIZE + 1];

	hexstr(hex, sizeof(hex), p + SIWX_AWREQ_OFF_DATA, SIWX_ATOMIC_WRITE_SIZE);
	add(ln, " %swstag=0x%08x %swlen=%u %swto=0x%" PRIx64 " %swdata=%s",
	    pre, rd32(p + SIWX_AWREQ_OFF_STAG), pre, rd32(p + SIWX_AWREQ_OFF_LEN),
	    pre, rd64(p + SIWX_AWREQ_OFF_TO), pre, hex);
}

/*
 * The DDP header at p (len bytes). Prints and returns its size, 0 when
 * the FPDU is too short for it.
 */
static size_t print_ddp(struct line *ln, const uint8_t *p, size_t len)
{
	if (p[0] & SIWX_DDP_FLAG_T) {
		if (len < SIWX_DDP_TAGGED_HDR_SIZE)
			return 0;
		add(ln, " stag=0x%08x to=0x%" PRIx64, rd32(p + SIWX_DDP_OFF_STAG),
		    rd64(p + SIWX_DDP_OFF_TO));
		set_var("rx_stag", 7, rd32(p + SIWX_DDP_OFF_STAG));
		set_var("rx_to", 5, rd64(p + SIWX_DDP_OFF_TO));
		return SIWX_DDP_TAGGED_HDR_SIZE;
	}
	if (len < SIWX_DDP_UNTAGGED_HDR_SIZE)
		return 0;
	add(ln, " qn=%u msn=%u mo=%u inval=0x%08x", rd32(p + SIWX_DDP_OFF_QN),
	    rd32(p + SIWX_DDP_OFF_MSN), rd32(p + SIWX_DDP_OFF_MO),
	    rd32(p + SIWX_DDP_OFF_INVAL_STAG));
	set_var("rx_qn", 5, rd32(p + SIWX_DDP_OFF_QN));
	set_var("rx_msn", 6, rd32(p + SIWX_DDP_OFF_MSN));
	return SIWX_DDP_UNTAGGED_HDR_SIZE;
}

/*
 * What a Terminate carries after its control: the DDP Segment Length (M),
 * the terminated DDP header (D) and RDMAP header (R), as far as present.
 * Leaves *pp, *lenp after the part decoded.
 */
static void print_term_attached(struct line *ln, unsigned int f,
				const uint8_t **pp, size_t *lenp)
{
	const uint8_t *p = *pp;
	size_t len = *lenp;

	if ((f & SIWX_TERM_FLAG_M) && len >= SIWX_TERM_SEGLEN_SIZE) {
		add(ln, " att_seglen=%u", rd16(p));
		p += SIWX_TERM_SEGLEN_SIZE;
		len -= SIWX_TERM_SEGLEN_SIZE;
	}
	if ((f & SIWX_TERM_FLAG_D) && len >= SIWX_DDP_CTRL_SIZE) {
		unsigned int a0 = p[0], aop = p[1] & SIWX_RDMAP_MASK_OPCODE;

		add(ln, " att_t=%d att_l=%d att_opcode=0x%x",
		    !!(a0 & SIWX_DDP_FLAG_T), !!(a0 & SIWX_DDP_FLAG_L), aop);
		if ((a0 & SIWX_DDP_FLAG_T) && len >= SIWX_DDP_TAGGED_HDR_SIZE) {
			add(ln, " att_stag=0x%08x att_to=0x%" PRIx64,
			    rd32(p + SIWX_DDP_OFF_STAG), rd64(p + SIWX_DDP_OFF_TO));
			p += SIWX_DDP_TAGGED_HDR_SIZE;
			len -= SIWX_DDP_TAGGED_HDR_SIZE;
		} else if (!(a0 & SIWX_DDP_FLAG_T) &&
			   len >= SIWX_DDP_UNTAGGED_HDR_SIZE) {
			add(ln, " att_qn=%u att_msn=%u att_mo=%u",
			    rd32(p + SIWX_DDP_OFF_QN), rd32(p + SIWX_DDP_OFF_MSN),
			    rd32(p + SIWX_DDP_OFF_MO));
			p += SIWX_DDP_UNTAGGED_HDR_SIZE;
			len -= SIWX_DDP_UNTAGGED_HDR_SIZE;
		} else {
			add(ln, " att_truncated=1");
		}
		/*
		 * of the attached RDMAP headers, those of an Atomic, Flush
		 * and Atomic Write Request are shown (left in rest= too)
		 */
		if ((f & SIWX_TERM_FLAG_R) && aop == SIWX_RDMAP_OP_ATOMIC_REQ &&
		    len >= SIWX_RDMAP_ATOMIC_REQ_SIZE)
			add(ln, " att_aop=%u att_reqid=0x%x",
			    rd32(p + SIWX_AREQ_OFF_AOPCODE) &
			    SIWX_AREQ_AOPCODE_MASK, rd32(p + SIWX_AREQ_OFF_REQ_ID));
		if ((f & SIWX_TERM_FLAG_R) && aop == SIWX_RDMAP_OP_FLUSH_REQ &&
		    len >= SIWX_RDMAP_FLUSH_REQ_SIZE)
			print_flush_req(ln, "att_", p);
		if ((f & SIWX_TERM_FLAG_R) &&
		    aop == SIWX_RDMAP_OP_ATOMIC_WRITE_REQ &&
		    len >= SIWX_RDMAP_ATOMIC_WRITE_REQ_SIZE)
			print_awrite_req(ln, "att_", p);
	}
	*pp = p;
	*lenp = len;
}

/* A Terminate: p -> the Terminate Control, len bytes from there. */
static void print_term(struct line *ln, const uint8_t *p, size_t len)
{
	unsigned int f = p[SIWX_TERM_OFF_FLAGS];
	char hd[4] = "", *h = hd, hex[200];

	S.terms++;
	if (f & SIWX_TERM_FLAG_M)
		*h++ = 'M';
	if (f & SIWX_TERM_FLAG_D)
		*h++ = 'D';
	if (f & SIWX_TERM_FLAG_R)
		*h++ = 'R';
	*h = 0;
	add(ln, " layer=%u etype=%u code=0x%02x hdrs=%s ctrl=%02x%02x%02x%02x",
	    p[SIWX_TERM_OFF_LAYER_ETYPE] >> SIWX_TERM_LAYER_SHIFT,
	    p[SIWX_TERM_OFF_LAYER_ETYPE] & SIWX_TERM_ETYPE_MASK,
	    p[SIWX_TERM_OFF_ECODE], hd[0] ? hd : "-", p[0], p[1], p[2], p[3]);
	p += SIWX_RDMAP_TERM_CTRL_SIZE;
	len -= SIWX_RDMAP_TERM_CTRL_SIZE;
	print_term_attached(ln, f, &p, &len);
	hexstr(hex, sizeof(hex), p, len);
	add(ln, " rest=%s", hex);
}

/*
 * The RDMAP header of opcode op at *pp, if the FPDU holds all of it
 * (Atomic Response, Read Request, Atomic Request, Flush Request, Atomic
 * Write Request: consumed; Immediate Data: shown, left as payload). The
 * Flush and Atomic Write Responses carry no header.
 */
static void print_rdmap(struct line *ln, unsigned int op, const uint8_t **pp,
			size_t *lenp)
{
	const uint8_t *p = *pp;
	unsigned int aop;
	size_t hl = 0;

	switch (op) {
	case SIWX_RDMAP_OP_ATOMIC_RESP:
		if (*lenp < SIWX_RDMAP_ATOMIC_RESP_SIZE)
			break;
		add(ln, " reqid=0x%x value=0x%016" PRIx64,
		    rd32(p + SIWX_ARESP_OFF_REQ_ID), rd64(p + SIWX_ARESP_OFF_VALUE));
		set_var("rx_reqid", 8, rd32(p + SIWX_ARESP_OFF_REQ_ID));
		set_var("rx_value", 8, rd64(p + SIWX_ARESP_OFF_VALUE));
		hl = SIWX_RDMAP_ATOMIC_RESP_SIZE;
		break;
	case SIWX_RDMAP_OP_READ_REQ:
		if (*lenp < SIWX_RDMAP_READ_REQ_SIZE)
			break;
		add(ln, " sink_stag=0x%08x sink_to=0x%" PRIx64
		    " size=%u src_stag=0x%08x src_to=0x%" PRIx64,
		    rd32(p + SIWX_RREQ_OFF_SINK_STAG),
		    rd64(p + SIWX_RREQ_OFF_SINK_TO), rd32(p + SIWX_RREQ_OFF_SIZE),
		    rd32(p + SIWX_RREQ_OFF_SRC_STAG),
		    rd64(p + SIWX_RREQ_OFF_SRC_TO));
		set_var("rx_sink_stag", 12, rd32(p + SIWX_RREQ_OFF_SINK_STAG));
		set_var("rx_sink_to", 10, rd64(p + SIWX_RREQ_OFF_SINK_TO));
		set_var("rx_size", 7, rd32(p + SIWX_RREQ_OFF_SIZE));
		hl = SIWX_RDMAP_READ_REQ_SIZE;
		break;
	case SIWX_RDMAP_OP_ATOMIC_REQ:
		if (*lenp < SIWX_RDMAP_ATOMIC_REQ_SIZE)
			break;
		aop = rd32(p + SIWX_AREQ_OFF_AOPCODE) & SIWX_AREQ_AOPCODE_MASK;
		add(ln, " aop=%u reqid=0x%x astag=0x%08x ato=0x%" PRIx64
		    " add=0x%" PRIx64 " addmask=0x%" PRIx64
		    " cmp=0x%" PRIx64 " cmpmask=0x%" PRIx64,
		    aop, rd32(p + SIWX_AREQ_OFF_REQ_ID),
		    rd32(p + SIWX_AREQ_OFF_STAG), rd64(p + SIWX_AREQ_OFF_TO),
		    rd64(p + SIWX_AREQ_OFF_ADD_SWAP),
		    rd64(p + SIWX_AREQ_OFF_ADD_SWAP_MASK),
		    rd64(p + SIWX_AREQ_OFF_COMPARE),
		    rd64(p + SIWX_AREQ_OFF_COMPARE_MASK));
		set_var("rx_reqid", 8, rd32(p + SIWX_AREQ_OFF_REQ_ID));
		set_var("rx_aop", 6, aop);
		set_var("rx_astag", 8, rd32(p + SIWX_AREQ_OFF_STAG));
		set_var("rx_ato", 6, rd64(p + SIWX_AREQ_OFF_TO));
		set_var("rx_add", 6, rd64(p + SIWX_AREQ_OFF_ADD_SWAP));
		set_var("rx_cmp", 6, rd64(p + SIWX_AREQ_OFF_COMPARE));
		hl = SIWX_RDMAP_ATOMIC_REQ_SIZE;
		break;
	case SIWX_RDMAP_OP_FLUSH_REQ:
		if (*lenp < SIWX_RDMAP_FLUSH_REQ_SIZE)
			break;
		print_flush_req(ln, "", p);
		set_var("rx_fstag", 8, rd32(p + SIWX_FREQ_OFF_STAG));
		set_var("rx_flen", 7, rd32(p + SIWX_FREQ_OFF_LEN));
		set_var("rx_fto", 6, rd64(p + SIWX_FREQ_OFF_TO));
		set_var("rx_disp", 7, rd32(p + SIWX_FREQ_OFF_DISP));
		hl = SIWX_RDMAP_FLUSH_REQ_SIZE;
		break;
	case SIWX_RDMAP_OP_ATOMIC_WRITE_REQ:
		if (*lenp < SIWX_RDMAP_ATOMIC_WRITE_REQ_SIZE)
			break;
		print_awrite_req(ln, "", p);
		set_var("rx_wstag", 8, rd32(p + SIWX_AWREQ_OFF_STAG));
		set_var("rx_wto", 6, rd64(p + SIWX_AWREQ_OFF_TO));
		set_var("rx_wdata", 8, rd64(p + SIWX_AWREQ_OFF_DATA));
		hl = SIWX_RDMAP_ATOMIC_WRITE_REQ_SIZE;
		break;
	case SIWX_RDMAP_OP_IMM:
	case SIWX_RDMAP_OP_IMM_SE:
		if (*lenp == SIWX_RDMAP_IMM_SIZE)
			add(ln, " imm=0x%016" PRIx64, rd64(p));
		break;
	}
	*pp = p + hl;
	*lenp -= hl;
}

void (*rx_hook)(const uint8_t *p, size_t len, const char *crcs);

/*
 * One received FPDU (len = ULPDU length, p -> after the length field).
 * Returns whether its opcode is the one 'until' waits for.
 */
static int print_fpdu(const uint8_t *p, size_t len, const char *crcs,
		      int until)
{
	struct line ln = { .o = 0 };
	char hex[200];
	unsigned int c0, op;
	size_t hl;
	int hit;

	S.rx_fpdus++;
	if (rx_hook)
		rx_hook(p, len, crcs);
	if (len < SIWX_DDP_CTRL_SIZE) {
		hexstr(hex, sizeof(hex), p, len);
		out("rx short len=%zu bytes=%s crc=%s\n", len, hex, crcs);
		return 0;
	}
	c0 = p[0];
	op = p[1] & SIWX_RDMAP_MASK_OPCODE;
	hit = until == RX_UNTIL_ANY || (int)op == until;
	set_var("rx_opcode", 9, op);
	add(&ln, "rx opcode=0x%x %s len=%zu t=%d l=%d dv=%u rv=%u", op,
	    opname(op), len, !!(c0 & SIWX_DDP_FLAG_T), !!(c0 & SIWX_DDP_FLAG_L),
	    c0 & SIWX_DDP_MASK_DV, p[1] >> SIWX_RDMAP_RV_SHIFT);
	/* the reserved bits, shown only when set (no real peer sets them) */
	if ((c0 & SIWX_DDP_MASK_RSVD) || (p[1] & SIWX_RDMAP_MASK_RSVD))
		add(&ln, " ddp_rsvd=0x%x rdmap_rsvd=0x%x",
		    (c0 & SIWX_DDP_MASK_RSVD) >> SIWX_DDP_RSVD_SHIFT,
		    (p[1] & SIWX_RDMAP_MASK_RSVD) >> SIWX_RDMAP_RSVD_SHIFT);
	hl = print_ddp(&ln, p, len);
	if (!hl) {
		add(&ln, " truncated=1");
		goto done;
	}
	p += hl;
	len -= hl;
	if (op == SIWX_RDMAP_OP_TERMINATE && !(c0 & SIWX_DDP_FLAG_T) &&
	    len >= SIWX_RDMAP_TERM_CTRL_SIZE) {
		print_term(&ln, p, len);
		goto done;
	}
	print_rdmap(&ln, op, &p, &len);
	add(&ln, " payload=%zu", len);
	hexstr(hex, sizeof(hex), p, len > 64 ? 64 : len);
	add(&ln, " data=%s", hex);
done:
	add(&ln, " crc=%s", crcs);
	out("%s\n", ln.s);
	return hit;
}

/*
 * Parse the complete FPDUs out of the receive buffer. Returns whether one
 * had the RDMAP opcode 'until' (RX_UNTIL_ANY: any FPDU).
 */
int rx_parse(int until)
{
	size_t off = 0, ulen, body, flen;
	const char *crcs;
	int hit = 0;

	for (;;) {
		if (S.rxlen - off < SIWX_MPA_HDR_SIZE)
			break;
		ulen = rd16(S.rx + off);
		body = SIWX_MPA_HDR_SIZE + ulen;
		body += mpa_pad(body);
		flen = body + SIWX_MPA_CRC_SIZE;
		if (S.rxlen - off < flen)
			break;
		if (S.crc)
			crcs = get_crc(S.rx + off + body) ==
				crc32c(S.rx + off, body) ? "ok" : "bad";
		else
			crcs = get_crc(S.rx + off + body) ? "nonzero" : "none";
		hit |= print_fpdu(S.rx + off + SIWX_MPA_HDR_SIZE, ulen, crcs,
				  until);
		off += flen;
	}
	memmove(S.rx, S.rx + off, S.rxlen - off);
	S.rxlen -= off;
	return hit;
}
