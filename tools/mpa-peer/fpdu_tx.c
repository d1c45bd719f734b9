// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: the steps that send. An FPDU step (send, write, read_resp,
 * read_req, atomic, atomic_resp, imm, flush, flush_resp, awrite,
 * awrite_resp, term, untagged, tagged) fills in a
 * frame -- DDP header, RDMAP header, data -- which emit() frames with the
 * MPA length, pad and CRC32c, all overridable; "fpdu" frames given ULPDU
 * bytes, "raw" sends bytes as they are. Also the zero-length RTR.
 */
#include <stdlib.h>
#include <string.h>

#include "mpa-peer.h"

/* the frame an FPDU step builds */
struct frame {
	uint8_t ctrl0, ctrl1;
	int tagged;
	uint32_t stag;		/* tagged */
	uint64_t to;
	uint32_t inval, qn, msn, mo;	/* untagged */
	uint8_t hdr[128];	/* RDMAP header after the DDP header */
	size_t hdrlen;
	uint8_t data[65536];
	size_t datalen;
};

static struct frame F;

/* the largest pad= override (the value is taken modulo 8) */
#define PAD_MAX		7

/* The DDP header of F into buf (at the DDP control); returns its size. */
static size_t put_ddp(uint8_t *buf)
{
	buf[0] = F.ctrl0;
	buf[1] = F.ctrl1;
	if (F.tagged) {
		be32(buf + SIWX_DDP_OFF_STAG, F.stag);
		be64(buf + SIWX_DDP_OFF_TO, F.to);
		return SIWX_DDP_TAGGED_HDR_SIZE;
	}
	be32(buf + SIWX_DDP_OFF_INVAL_STAG, F.inval);
	be32(buf + SIWX_DDP_OFF_QN, F.qn);
	be32(buf + SIWX_DDP_OFF_MSN, F.msn);
	be32(buf + SIWX_DDP_OFF_MO, F.mo);
	return SIWX_DDP_UNTAGGED_HDR_SIZE;
}

/*
 * Frame F and queue it. Options every FPDU step takes: l= (last flag,
 * default 1), dv= rv= (versions, default 1), t= (tagged flag override),
 * ctrl= (both control bytes, raw), mpalen= (length field override), crc=
 * (CRC field: a value or "bad"), pad= (number of pad bytes override),
 * trunc= (send only the first N bytes of the frame).
 */
static void emit(struct step *st, int opcode)
{
	static uint8_t buf[MAX_FRAME];
	uint64_t l, dv, rv, t, ctrl, v;
	size_t n, pad, i;
	const char *crcs;

	nget(st, "l", 1, &l);
	nget(st, "dv", SIWX_DDP_VERSION, &dv);
	nget(st, "rv", SIWX_RDMAP_VERSION, &rv);
	nget(st, "t", F.tagged, &t);
	F.ctrl0 = (t ? SIWX_DDP_FLAG_T : 0) | (l ? SIWX_DDP_FLAG_L : 0) |
		  (dv & SIWX_DDP_MASK_DV);
	F.ctrl1 = ((rv << SIWX_RDMAP_RV_SHIFT) & SIWX_RDMAP_MASK_RV) |
		  (opcode & SIWX_RDMAP_MASK_OPCODE);
	if (nget(st, "ctrl", 0, &ctrl)) {
		F.ctrl0 = ctrl >> 8;
		F.ctrl1 = ctrl;
	}
	n = SIWX_MPA_HDR_SIZE + put_ddp(buf + SIWX_MPA_HDR_SIZE);
	if (n + F.hdrlen + F.datalen + PAD_MAX + SIWX_MPA_CRC_SIZE > sizeof(buf))
		die(2, "step '%s': frame too large", st->text);
	memcpy(buf + n, F.hdr, F.hdrlen);
	n += F.hdrlen;
	memcpy(buf + n, F.data, F.datalen);
	n += F.datalen;
	nget(st, "mpalen", n - SIWX_MPA_HDR_SIZE, &v);
	be16(buf, v);
	pad = mpa_pad(n);
	if (nget(st, "pad", pad, &v))
		pad = v & PAD_MAX;
	for (i = 0; i < pad; i++)
		buf[n++] = 0;
	v = S.crc ? crc32c(buf, n) : 0;
	crcs = sget(st, "crc");
	if (crcs) {
		if (!strcmp(crcs, "bad"))
			v ^= 0x1;
		else if (eval(crcs, &v))
			die(2, "step '%s': bad crc=%s", st->text, crcs);
	}
	put_crc(buf + n, v);
	n += SIWX_MPA_CRC_SIZE;
	if (nget(st, "trunc", n, &v) && v < n)
		n = v;
	step_done(st);
	tx_queue(buf, n);
}

/* data=HEX, or len=N bytes of fill=B (default 1, 2, 3, ...) */
static void get_data(struct step *st)
{
	const char *d = sget(st, "data");
	uint64_t len, fill;

	F.datalen = 0;
	if (d) {
		if (parse_hex(d, F.data, sizeof(F.data), &F.datalen))
			die(2, "step '%s': bad hex data=%s", st->text, d);
	} else if (nget(st, "len", 0, &len)) {
		size_t i;
		int hf = nget(st, "fill", 0, &fill);

		if (len > sizeof(F.data))
			die(2, "step '%s': len too large", st->text);
		for (i = 0; i < len; i++)
			F.data[i] = hf ? (uint8_t)fill : (uint8_t)(i + 1);
		F.datalen = len;
	}
}

/* hdr=HEX: the RDMAP header as given */
static void get_hdr(struct step *st)
{
	const char *h = sget(st, "hdr");

	if (h && parse_hex(h, F.hdr, sizeof(F.hdr), &F.hdrlen))
		die(2, "step '%s': bad hdr=", st->text);
}

/* the untagged header: qn= (default dqn), msn= (queue's next), mo= inval= */
static void untagged(struct step *st, uint32_t dqn)
{
	uint64_t v;
	unsigned int q;

	F.tagged = 0;
	nget(st, "qn", dqn, &v);
	F.qn = v;
	q = F.qn < SIWX_DDP_QN_COUNT ? F.qn : SIWX_DDP_QN_SEND;
	if (!nget(st, "msn", S.msn[q], &v) && F.qn >= SIWX_DDP_QN_COUNT)
		v = SIWX_DDP_MSN_FIRST;
	F.msn = v;
	nget(st, "mo", 0, &v);
	F.mo = v;
	nget(st, "inval", 0, &v);
	F.inval = v;
}

/* advance the MSN counter of the queue an untagged last segment went to */
static void untagged_sent(uint64_t last)
{
	if (!F.tagged && last && F.qn < SIWX_DDP_QN_COUNT)
		S.msn[F.qn]++;
}

static void tagged(struct step *st)
{
	uint64_t v;

	F.tagged = 1;
	nget(st, "stag", 0, &v);
	F.stag = v;
	nget(st, "to", 0, &v);
	F.to = v;
}

/*
 * The builders of the FPDU steps: each reads its keys (in this order: an
 * error names the first bad one) into F and returns the opcode used when
 * the step gives no opcode=.
 */
static unsigned int build_send(struct step *st)
{
	uint64_t se;

	nget(st, "se", 0, &se);
	untagged(st, SIWX_DDP_QN_SEND);
	get_data(st);
	if (F.inval)
		return se ? SIWX_RDMAP_OP_SEND_SE_INV : SIWX_RDMAP_OP_SEND_INV;
	return se ? SIWX_RDMAP_OP_SEND_SE : SIWX_RDMAP_OP_SEND;
}

static unsigned int build_write(struct step *st)
{
	tagged(st);
	get_data(st);
	return SIWX_RDMAP_OP_WRITE;
}

static unsigned int build_read_resp(struct step *st)
{
	tagged(st);
	get_data(st);
	return SIWX_RDMAP_OP_READ_RESP;
}

static unsigned int build_read_req(struct step *st)
{
	uint64_t v;

	untagged(st, SIWX_DDP_QN_READ_REQ);
	nget(st, "sink_stag", 0, &v);
	be32(F.hdr + SIWX_RREQ_OFF_SINK_STAG, v);
	nget(st, "sink_to", 0, &v);
	be64(F.hdr + SIWX_RREQ_OFF_SINK_TO, v);
	nget(st, "size", 0, &v);
	be32(F.hdr + SIWX_RREQ_OFF_SIZE, v);
	nget(st, "src_stag", 0, &v);
	be32(F.hdr + SIWX_RREQ_OFF_SRC_STAG, v);
	nget(st, "src_to", 0, &v);
	be64(F.hdr + SIWX_RREQ_OFF_SRC_TO, v);
	F.hdrlen = SIWX_RDMAP_READ_REQ_SIZE;
	get_data(st);
	return SIWX_RDMAP_OP_READ_REQ;
}

static unsigned int build_atomic(struct step *st)
{
	uint64_t aop, rsvd, v;

	untagged(st, SIWX_DDP_QN_READ_REQ);
	nget(st, "aop", 0, &aop);
	nget(st, "rsvd", 0, &rsvd);
	/* the reserved bits are the ones above the AOpCode */
	be32(F.hdr + SIWX_AREQ_OFF_AOPCODE,
	     field_prep(SIWX_AREQ_RSVD_MASK, rsvd) |
	     field_prep(SIWX_AREQ_AOPCODE_MASK, aop));
	if (!nget(st, "reqid", S.reqid, &v))
		S.reqid++;
	be32(F.hdr + SIWX_AREQ_OFF_REQ_ID, v);
	nget(st, "stag", 0, &v);
	be32(F.hdr + SIWX_AREQ_OFF_STAG, v);
	nget(st, "to", 0, &v);
	be64(F.hdr + SIWX_AREQ_OFF_TO, v);
	if (!nget(st, "add", 0, &v))
		nget(st, "swap", 0, &v);
	be64(F.hdr + SIWX_AREQ_OFF_ADD_SWAP, v);
	if (!nget(st, "addmask", 0, &v))
		nget(st, "swapmask", 0, &v);
	be64(F.hdr + SIWX_AREQ_OFF_ADD_SWAP_MASK, v);
	nget(st, "cmp", 0, &v);
	be64(F.hdr + SIWX_AREQ_OFF_COMPARE, v);
	nget(st, "cmpmask", 0, &v);
	be64(F.hdr + SIWX_AREQ_OFF_COMPARE_MASK, v);
	F.hdrlen = SIWX_RDMAP_ATOMIC_REQ_SIZE;
	get_data(st);
	return SIWX_RDMAP_OP_ATOMIC_REQ;
}

static unsigned int build_atomic_resp(struct step *st)
{
	uint64_t v;

	untagged(st, SIWX_DDP_QN_ATOMIC_RESP);
	nget(st, "reqid", 0, &v);
	be32(F.hdr + SIWX_ARESP_OFF_REQ_ID, v);
	nget(st, "value", 0, &v);
	be64(F.hdr + SIWX_ARESP_OFF_VALUE, v);
	F.hdrlen = SIWX_RDMAP_ATOMIC_RESP_SIZE;
	get_data(st);
	return SIWX_RDMAP_OP_ATOMIC_RESP;
}

/*
 * flush stag= to= size= [p= g= sel= drsvd=] | [disp=]: a Flush Request
 * (QN 1). The Disposition Flags are disp= as given, or made of p=
 * (default 0), g= (default 1), sel= and drsvd= (reserved bits, in place).
 */
static unsigned int build_flush(struct step *st)
{
	uint64_t v, pb, gb, sel, rsvd;

	untagged(st, SIWX_DDP_QN_READ_REQ);
	nget(st, "stag", 0, &v);
	be32(F.hdr + SIWX_FREQ_OFF_STAG, v);
	nget(st, "size", 0, &v);
	be32(F.hdr + SIWX_FREQ_OFF_LEN, v);
	nget(st, "to", 0, &v);
	be64(F.hdr + SIWX_FREQ_OFF_TO, v);
	nget(st, "p", 0, &pb);
	nget(st, "g", 1, &gb);
	nget(st, "sel", SIWX_FLUSH_SEL_RANGE, &sel);
	nget(st, "drsvd", 0, &rsvd);
	if (!nget(st, "disp", 0, &v))
		v = (pb ? SIWX_FLUSH_DISP_P : 0) | (gb ? SIWX_FLUSH_DISP_G : 0) |
		    field_prep(SIWX_FLUSH_DISP_SEL_MASK, sel) |
		    (rsvd & SIWX_FLUSH_DISP_RSVD);
	be32(F.hdr + SIWX_FREQ_OFF_DISP, v);
	F.hdrlen = SIWX_RDMAP_FLUSH_REQ_SIZE;
	get_data(st);
	return SIWX_RDMAP_OP_FLUSH_REQ;
}

/*
 * awrite stag= to= [size=8] value=U64: an Atomic Write Request (QN 1).
 * The data field is value= big-endian: its bytes as the hex digits read
 * (value=0x1122.. puts 11 22 .. on the wire, which the responder stores
 * in that order).
 */
static unsigned int build_awrite(struct step *st)
{
	uint64_t v;

	untagged(st, SIWX_DDP_QN_READ_REQ);
	nget(st, "stag", 0, &v);
	be32(F.hdr + SIWX_AWREQ_OFF_STAG, v);
	nget(st, "size", SIWX_ATOMIC_WRITE_SIZE, &v);
	be32(F.hdr + SIWX_AWREQ_OFF_LEN, v);
	nget(st, "to", 0, &v);
	be64(F.hdr + SIWX_AWREQ_OFF_TO, v);
	nget(st, "value", 0, &v);
	be64(F.hdr + SIWX_AWREQ_OFF_DATA, v);
	F.hdrlen = SIWX_RDMAP_ATOMIC_WRITE_REQ_SIZE;
	get_data(st);
	return SIWX_RDMAP_OP_ATOMIC_WRITE_REQ;
}

/* flush_resp, awrite_resp: the responses (QN 3), no header */
static unsigned int build_flush_resp(struct step *st)
{
	untagged(st, SIWX_DDP_QN_ATOMIC_RESP);
	get_data(st);
	return SIWX_RDMAP_OP_FLUSH_RESP;
}

static unsigned int build_awrite_resp(struct step *st)
{
	untagged(st, SIWX_DDP_QN_ATOMIC_RESP);
	get_data(st);
	return SIWX_RDMAP_OP_ATOMIC_WRITE_RESP;
}

static unsigned int build_imm(struct step *st)
{
	uint64_t se, v;

	nget(st, "se", 0, &se);
	untagged(st, SIWX_DDP_QN_SEND);
	if (nget(st, "value", 0, &v)) {
		be64(F.data, v);
		F.datalen = SIWX_RDMAP_IMM_SIZE;
	} else {
		get_data(st);
	}
	return se ? SIWX_RDMAP_OP_IMM_SE : SIWX_RDMAP_OP_IMM;
}

static unsigned int build_term(struct step *st)
{
	uint64_t layer, etype, code;
	const char *h = sget(st, "hdrs");
	uint32_t w;

	untagged(st, SIWX_DDP_QN_TERMINATE);
	nget(st, "layer", 0, &layer);
	nget(st, "etype", 0, &etype);
	nget(st, "code", 0, &code);
	w = field_prep(SIWX_TERM_CTRL_LAYER, layer) |
	    field_prep(SIWX_TERM_CTRL_ETYPE, etype) |
	    field_prep(SIWX_TERM_CTRL_ECODE, code);
	if (h) {
		w |= strchr(h, 'M') ? SIWX_TERM_CTRL_FLAG_M : 0;
		w |= strchr(h, 'D') ? SIWX_TERM_CTRL_FLAG_D : 0;
		w |= strchr(h, 'R') ? SIWX_TERM_CTRL_FLAG_R : 0;
	}
	be32(F.hdr, w);
	F.hdrlen = SIWX_RDMAP_TERM_CTRL_SIZE;
	h = sget(st, "attach");
	if (h && parse_hex(h, F.data, sizeof(F.data), &F.datalen))
		die(2, "step '%s': bad attach=", st->text);
	return SIWX_RDMAP_OP_TERMINATE;
}

/* untagged/tagged: no default opcode (0 without opcode=) */
static unsigned int build_untagged(struct step *st)
{
	untagged(st, SIWX_DDP_QN_SEND);
	get_hdr(st);
	get_data(st);
	return 0;
}

static unsigned int build_tagged(struct step *st)
{
	tagged(st);
	get_hdr(st);
	get_data(st);
	return 0;
}

static const struct {
	const char *cmd;
	unsigned int (*build)(struct step *st);
} fpdu_cmds[] = {
	{ "send", build_send },
	{ "write", build_write },
	{ "read_resp", build_read_resp },
	{ "read_req", build_read_req },
	{ "atomic", build_atomic },
	{ "atomic_resp", build_atomic_resp },
	{ "imm", build_imm },
	{ "flush", build_flush },
	{ "flush_resp", build_flush_resp },
	{ "awrite", build_awrite },
	{ "awrite_resp", build_awrite_resp },
	{ "term", build_term },
	{ "untagged", build_untagged },
	{ "tagged", build_tagged },
};

/*
 * An FPDU step, repeat= times. Returns 0 if st is no FPDU step -- after
 * repeat=, l= and opcode= were read (and marked used) all the same, as
 * they always were: other steps accept these keys, and repeat=0 makes any
 * step a no-op.
 */
int run_fpdu_step(struct step *st)
{
	unsigned int (*build)(struct step *st) = NULL;
	uint64_t v, op = 0, last, rep, r;
	unsigned int dflt, i;
	int has_op;

	for (i = 0; i < sizeof(fpdu_cmds) / sizeof(fpdu_cmds[0]); i++)
		if (!strcmp(st->cmd, fpdu_cmds[i].cmd))
			build = fpdu_cmds[i].build;
	nget(st, "repeat", 1, &rep);
	for (r = 0; r < rep; r++) {
		memset(st->used, 0, sizeof(st->used));
		(void)nget(st, "repeat", 1, &v);
		memset(&F, 0, sizeof(F));
		nget(st, "l", 1, &last);
		has_op = nget(st, "opcode", 0, &op);
		if (!build)
			return 0;
		dflt = build(st);
		emit(st, (int)(has_op ? op : dflt));
		untagged_sent(last);
	}
	return 1;
}

/* fpdu ulpdu=HEX [mpalen=] [crc=]: MPA framing around given bytes */
static void fpdu_step(struct step *st)
{
	const char *h = sget(st, "ulpdu");
	uint8_t *b = malloc(MAX_FRAME);
	size_t n = 0, pad;
	uint64_t v;
	uint32_t c;

	/* (room kept for the length field, pad and CRC) */
	if (!b || (h && parse_hex(h, b + SIWX_MPA_HDR_SIZE, MAX_FRAME - 8, &n)))
		die(2, "step '%s': bad ulpdu=", st->text);
	nget(st, "mpalen", n, &v);
	be16(b, v);
	n += SIWX_MPA_HDR_SIZE;
	pad = mpa_pad(n);
	memset(b + n, 0, pad);
	n += pad;
	c = S.crc ? crc32c(b, n) : 0;
	h = sget(st, "crc");
	if (h && !strcmp(h, "bad"))
		c ^= 1;
	else if (h && !eval(h, &v))
		c = v;
	put_crc(b + n, c);
	n += SIWX_MPA_CRC_SIZE;
	step_done(st);
	tx_queue(b, n);
	free(b);
}

/* raw hex=HEX: bytes as they are */
static void raw_step(struct step *st)
{
	uint8_t *b = malloc(MAX_FRAME);
	size_t n;
	const char *h = sget(st, "hex");

	if (!b || !h || parse_hex(h, b, MAX_FRAME, &n))
		die(2, "step '%s': raw needs hex=", st->text);
	step_done(st);
	tx_queue(b, n);
	free(b);
}

/* The steps "raw" and "fpdu"; returns 0 for any other. */
int run_frame_step(struct step *st)
{
	if (!strcmp(st->cmd, "raw"))
		raw_step(st);
	else if (!strcmp(st->cmd, "fpdu"))
		fpdu_step(st);
	else
		return 0;
	return 1;
}

/* ---------------------------------------------------------------- RTR */

/* The zero-length RTR FPDU of kind write, read or send (none: nothing). */
void send_rtr(const char *kind)
{
	struct step st;
	char line[64];

	if (!strcmp(kind, "none"))
		return;
	if (!strcmp(kind, "write"))
		snprintf(line, sizeof(line), "write stag=0 to=0");
	else if (!strcmp(kind, "read"))
		snprintf(line, sizeof(line), "read_req size=0");
	else if (!strcmp(kind, "send"))
		snprintf(line, sizeof(line), "send");
	else
		die(2, "unknown RTR type %s", kind);
	step_parse(&st, line, kind, 0);
	run_fpdu_step(&st);
	tx_flush();
	out("rtr sent=%s\n", kind);
}
