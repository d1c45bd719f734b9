// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: MPA connection setup (RFC 5044 section 7.1, RFC 6581), both
 * roles. Initiator: send the Request as the options say, read and print
 * the Reply, send the RTR it asks for. Responder: read and print the
 * Request, answer it (as RFC 5044/6581 allow, or as the options say).
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mpa-peer.h"

/* the parts of a received Request or Reply the rest depends on */
struct mpa_rr {
	unsigned int flags, rev;
	int enh;		/* carries the RFC 6581 word */
	uint32_t iw, ow;	/* its IRD and ORD words (0 without) */
	size_t pd_got;		/* private data received (taken off the buffer) */
};

/* text private data: tokens NAME=NUMBER separated by blanks -> variables */
static void parse_pdata_vars(const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		size_t s, e, eq = 0;
		uint64_t v;
		char num[40];
		char *end;

		while (i < n && (p[i] == ' ' || p[i] == 0 || p[i] == '\n'))
			i++;
		s = i;
		while (i < n && p[i] != ' ' && p[i] != 0 && p[i] != '\n') {
			if (!isprint(p[i]))
				return;
			if (p[i] == '=' && !eq)
				eq = i;
			i++;
		}
		e = i;
		if (!eq || eq == s || e - eq - 1 == 0 ||
		    e - eq - 1 >= sizeof(num))
			continue;
		memcpy(num, p + eq + 1, e - eq - 1);
		num[e - eq - 1] = 0;
		errno = 0;
		v = strtoull(num, &end, 0);
		if (errno || *end)
			continue;
		set_var((const char *)p + s, eq - s, v);
		out("var %.*s=0x%" PRIx64 "\n", (int)(eq - s), p + s, v);
	}
}

static void parse_pdata(void)
{
	if (opt.pdata_hex &&
	    parse_hex(opt.pdata_hex, opt.pdx, sizeof(opt.pdx), &opt.pdxlen))
		die(2, "--pdata: bad hex");
}

/*
 * An MPA Request or Reply: the key (16 bytes), flags, rev, the RFC 6581
 * word when the flags have S (IRD/ORD, A, and with A the RTR flags of
 * --rtr; --ird-word/--ord-word override it), --pdata, and PD_Length (or
 * --pd-len). Returns the length.
 */
static size_t mpa_frame(uint8_t *buf, size_t size, const char *key,
			unsigned int flags, unsigned int rev, uint32_t ird,
			uint32_t ord, int a)
{
	size_t n = SIWX_MPA_RR_HDR_SIZE;
	uint32_t iw, ow;

	memcpy(buf, key, SIWX_MPA_KEY_SIZE);
	buf[SIWX_MPA_OFF_FLAGS] = flags;
	buf[SIWX_MPA_OFF_REV] = rev;
	if (flags & SIWX_MPA_FLAG_S) {
		iw = (ird & SIWX_MPA_V2_IRD_ORD_MASK) | (a ? SIWX_MPA_V2_IRD_A : 0);
		ow = ord & SIWX_MPA_V2_IRD_ORD_MASK;
		if (a) {
			if (strstr(opt.rtr_list, "send"))
				iw |= SIWX_MPA_V2_IRD_B;
			if (strstr(opt.rtr_list, "write"))
				ow |= SIWX_MPA_V2_ORD_C;
			if (strstr(opt.rtr_list, "read"))
				ow |= SIWX_MPA_V2_ORD_D;
		}
		if (opt.ird_word >= 0)
			iw = opt.ird_word;
		if (opt.ord_word >= 0)
			ow = opt.ord_word;
		be16(buf + n + SIWX_MPA_V2_OFF_IRD, iw);
		be16(buf + n + SIWX_MPA_V2_OFF_ORD, ow);
		n += SIWX_MPA_V2_HDR_SIZE;
	}
	if (n + opt.pdxlen > size)
		die(2, "private data too long");
	memcpy(buf + n, opt.pdx, opt.pdxlen);
	n += opt.pdxlen;
	be16(buf + SIWX_MPA_OFF_PD_LEN, opt.pd_len >= 0 ? (uint32_t)opt.pd_len :
	     (uint32_t)(n - SIWX_MPA_RR_HDR_SIZE));
	return n;
}

/*
 * Print a received MPA Request/Reply as one line: hdr -> the 20-byte
 * header, followed by got bytes of the private data (got < PD_Length: not
 * all of it arrived; pd_got= says how much did). key: the expected key,
 * printed as key=ok|bad (Requests). Fills in *rr: flags, rev, whether it
 * carries the RFC 6581 word (S set, PD_Length >= 4) and the word, and got.
 */
static void print_mpa(const char *what, const uint8_t *hdr, size_t got,
		      const char *key, struct mpa_rr *rr)
{
	static char line[2 * 65536 + 400], hex[2 * 65536 + 8];
	unsigned int flags = hdr[SIWX_MPA_OFF_FLAGS];
	size_t pdlen = rd16(hdr + SIWX_MPA_OFF_PD_LEN), skip = 0, o;
	const uint8_t *pd = hdr + SIWX_MPA_RR_HDR_SIZE;

	rr->flags = flags;
	rr->rev = hdr[SIWX_MPA_OFF_REV];
	rr->enh = (flags & SIWX_MPA_FLAG_S) && pdlen >= SIWX_MPA_V2_HDR_SIZE &&
		  got >= SIWX_MPA_V2_HDR_SIZE;
	rr->iw = 0;
	rr->ow = 0;
	rr->pd_got = got;
	if (rr->enh) {
		rr->iw = rd16(pd + SIWX_MPA_V2_OFF_IRD);
		rr->ow = rd16(pd + SIWX_MPA_V2_OFF_ORD);
		skip = SIWX_MPA_V2_HDR_SIZE;
	}
	o = snprintf(line, sizeof(line),
		     "%s rev=%u flags=0x%02x m=%d c=%d r=%d s=%d pd_len=%zu",
		     what, rr->rev, flags, !!(flags & SIWX_MPA_FLAG_M),
		     !!(flags & SIWX_MPA_FLAG_C), !!(flags & SIWX_MPA_FLAG_R),
		     !!(flags & SIWX_MPA_FLAG_S), pdlen);
	if (key)
		o += snprintf(line + o, sizeof(line) - o, " key=%s",
			      memcmp(hdr, key, SIWX_MPA_KEY_SIZE) ? "bad" : "ok");
	if (rr->enh)
		o += snprintf(line + o, sizeof(line) - o,
			      " ird=%u ord=%u a=%d b=%d c_rtr=%d d_rtr=%d ird_word=0x%04x ord_word=0x%04x",
			      rr->iw & SIWX_MPA_V2_IRD_ORD_MASK,
			      rr->ow & SIWX_MPA_V2_IRD_ORD_MASK,
			      !!(rr->iw & SIWX_MPA_V2_IRD_A),
			      !!(rr->iw & SIWX_MPA_V2_IRD_B),
			      !!(rr->ow & SIWX_MPA_V2_ORD_C),
			      !!(rr->ow & SIWX_MPA_V2_ORD_D), rr->iw, rr->ow);
	hexstr(hex, sizeof(hex), pd + skip, got - skip);
	if (got < pdlen)
		out("%s pdata=%s pd_got=%zu\n", line, hex, got);
	else
		out("%s pdata=%s\n", line, hex);
}

/*
 * The text private data of the received frame rr (at S.rx), after the
 * RFC 6581 word, as variables (after those of the header: a token wins).
 */
static void mpa_pdata_vars(const struct mpa_rr *rr)
{
	size_t skip = rr->enh ? SIWX_MPA_V2_HDR_SIZE : 0;

	parse_pdata_vars(S.rx + SIWX_MPA_RR_HDR_SIZE + skip, rr->pd_got - skip);
}

/* the header and private data of a received Request/Reply off the buffer */
static void mpa_consume(const struct mpa_rr *rr)
{
	size_t n = SIWX_MPA_RR_HDR_SIZE + rr->pd_got;

	memmove(S.rx, S.rx + n, S.rxlen - n);
	S.rxlen -= n;
}

/* the sent-frame line: "request|reply rev= flags= pd_len= bytes= after_key=" */
static void print_sent(const char *what, const uint8_t *f, size_t n,
		       char *hex, size_t hexlen)
{
	hexstr(hex, hexlen, f + SIWX_MPA_KEY_SIZE,
	       n > SIWX_MPA_KEY_SIZE ? n - SIWX_MPA_KEY_SIZE : 0);
	out("%s rev=%u flags=0x%02x pd_len=%u bytes=%zu after_key=%s\n", what,
	    f[SIWX_MPA_OFF_REV], f[SIWX_MPA_OFF_FLAGS],
	    rd16(f + SIWX_MPA_OFF_PD_LEN), n, hex);
}

/* ---------------------------------------------------------------- initiator */

/* the MPA Request (--req-hex, or built from the options), sent at once */
static void send_request(void)
{
	uint8_t req[SIWX_MPA_RR_HDR_SIZE + SIWX_MPA_MAX_PD + 64];
	char hex[2 * SIWX_MPA_MAX_PD + 8];
	size_t reqlen;
	int c;

	parse_pdata();
	if (opt.req_hex) {
		if (parse_hex(opt.req_hex, req, sizeof(req), &reqlen))
			die(2, "--req-hex: bad hex");
		if (reqlen < SIWX_MPA_RR_HDR_SIZE)	/* keep the printout defined */
			memset(req + reqlen, 0, SIWX_MPA_RR_HDR_SIZE - reqlen);
	} else {
		unsigned int flags;

		flags = (opt.crc ? SIWX_MPA_FLAG_C : 0) |
			(opt.markers ? SIWX_MPA_FLAG_M : 0) |
			(opt.rev >= SIWX_MPA_REV_2 && opt.enhanced ?
			 SIWX_MPA_FLAG_S : 0);
		if (opt.flags_raw >= 0)
			flags = opt.flags_raw;
		reqlen = mpa_frame(req, sizeof(req), SIWX_MPA_KEY_REQ, flags,
				   opt.rev, opt.ird, opt.ord, opt.p2p > 0);
	}
	print_sent("request", req, reqlen, hex, sizeof(hex));
	S.crc_req = !!(req[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
	S.txlen = 0;
	c = S.coalesce;
	S.coalesce = 0;
	tx_queue(req, reqlen);
	S.coalesce = c;
}

/* Read and print the MPA Reply into *rr: 0, or 1 (none, or a bad one). */
static int read_reply(struct mpa_rr *rr)
{
	char hex[2 * SIWX_MPA_MAX_PD + 8];
	size_t pdlen;

	if (rx_exact(SIWX_MPA_RR_HDR_SIZE, opt.timeout)) {
		hexstr(hex, sizeof(hex), S.rx, S.rxlen);
		out("no-reply got=%zu bytes=%s%s\n", S.rxlen, hex,
		    S.closed ? " closed" : "");
		out(S.closed ? "closed\n" : "open\n");
		return 1;
	}
	if (memcmp(S.rx, SIWX_MPA_KEY_REP, SIWX_MPA_KEY_SIZE)) {
		hexstr(hex, sizeof(hex), S.rx, SIWX_MPA_RR_HDR_SIZE);
		out("bad-reply key=%s\n", hex);
		return 1;
	}
	pdlen = rd16(S.rx + SIWX_MPA_OFF_PD_LEN);
	if (pdlen > SIWX_MPA_MAX_PD ||
	    rx_exact(SIWX_MPA_RR_HDR_SIZE + pdlen, opt.timeout)) {
		out("bad-reply pd_len=%zu (not received)\n", pdlen);
		return 1;
	}
	print_mpa("reply", S.rx, pdlen, NULL, rr);
	set_var("rev", 3, rr->rev);
	set_var("crc", 3, !!(rr->flags & SIWX_MPA_FLAG_C));
	if (rr->enh) {
		set_var("ird", 3, rr->iw & SIWX_MPA_V2_IRD_ORD_MASK);
		set_var("ord", 3, rr->ow & SIWX_MPA_V2_IRD_ORD_MASK);
	}
	mpa_pdata_vars(rr);
	return 0;
}

/* --send-rtr auto: the RTR the reply selects (with A on both sides) */
static void send_auto_rtr(const struct mpa_rr *rr)
{
	if (!rr->enh || !(rr->iw & SIWX_MPA_V2_IRD_A))
		return;
	if (rr->ow & SIWX_MPA_V2_ORD_C)
		send_rtr("write");
	else if (rr->ow & SIWX_MPA_V2_ORD_D)
		send_rtr("read");
	else if (rr->iw & SIWX_MPA_V2_IRD_B)
		send_rtr("send");
	else
		out("rtr sent=none (reply selects no RTR)\n");
}

/*
 * The initiator's handshake on S.fd: Request, Reply, RTR. Returns -1 when
 * the steps are to run, else the exit status (no or a bad Reply: 1; a
 * reject, after reading for --rx-ms: 0).
 */
int mpa_initiate(char **early, int nearly)
{
	struct mpa_rr rr;

	send_request();
	if (nearly) {
		/*
		 * An initiator that does not wait for the Reply (RFC 5044
		 * forbids it): what the responder's socket holds before its
		 * QP takes it over. Framed with the CRC as requested.
		 */
		S.crc = S.crc_req;
		if (opt.delay)
			usleep(opt.delay * 1000);
		run_steps(early, nearly);
		tx_flush();
		out("early steps sent %d\n", nearly);
	}
	if (read_reply(&rr))
		return 1;
	S.crc = !!(rr.flags & SIWX_MPA_FLAG_C);
	mpa_consume(&rr);
	if (rr.flags & SIWX_MPA_FLAG_R) {
		out("rejected\n");
		rx_for(opt.rx_ms, RX_UNTIL_NONE);
		out(S.closed ? "closed\n" : "open\n");
		return 0;
	}
	if (S.crc != S.crc_req)
		out("note crc requested=%d reply=%d\n", S.crc_req, S.crc);
	if (opt.crc_use >= 0) {
		S.crc = opt.crc_use;
		out("note crc use=%d (forced)\n", S.crc);
		set_var("crc", 3, S.crc);
	}

	/* anything that came with the reply */
	rx_parse(RX_UNTIL_NONE);

	if (opt.delay)
		usleep(opt.delay * 1000);
	if (!strcmp(opt.send_rtr, "auto"))
		send_auto_rtr(&rr);
	else
		send_rtr(opt.send_rtr);
	return -1;
}

/* ---------------------------------------------------------------- responder */

static uint8_t rep_hex[MAX_FRAME], garbage[MAX_FRAME];
static size_t rep_hexlen, garbage_len;

/* the responder's options that are parsed once, before listening */
void mpa_responder_setup(void)
{
	parse_pdata();
	if (opt.reply_hex &&
	    parse_hex(opt.reply_hex, rep_hex,
		      sizeof(rep_hex) - SIWX_MPA_RR_HDR_SIZE, &rep_hexlen))
		die(2, "--reply-hex: bad hex");
	if (opt.garbage_hex &&
	    parse_hex(opt.garbage_hex, garbage, sizeof(garbage), &garbage_len))
		die(2, "--garbage: bad hex");
}

/*
 * Read and print the MPA Request (partial private data: what came within
 * --timeout) into *q and take it off the buffer. -1: none.
 */
static int read_request(struct mpa_rr *q)
{
	uint64_t end = now_ms() + opt.timeout, t;
	size_t pdlen, got;

	if (rx_exact(SIWX_MPA_RR_HDR_SIZE, opt.timeout)) {
		out("request none (%s)\n", S.closed ? "closed" : "timeout");
		return -1;
	}
	pdlen = rd16(S.rx + SIWX_MPA_OFF_PD_LEN);
	t = now_ms();
	if (rx_exact(SIWX_MPA_RR_HDR_SIZE + pdlen, end > t ? end - t : 0) &&
	    S.closed) {
		out("request none (closed)\n");
		return -1;
	}
	got = S.rxlen - SIWX_MPA_RR_HDR_SIZE < pdlen ?
	      S.rxlen - SIWX_MPA_RR_HDR_SIZE : pdlen;
	print_mpa("request", S.rx, got, SIWX_MPA_KEY_REQ, q);
	set_var("req_rev", 7, q->rev);
	set_var("req_a", 5, !!(q->iw & SIWX_MPA_V2_IRD_A));
	set_var("req_b", 5, !!(q->iw & SIWX_MPA_V2_IRD_B));
	set_var("req_c", 5, !!(q->ow & SIWX_MPA_V2_ORD_C));
	set_var("req_d", 5, !!(q->ow & SIWX_MPA_V2_ORD_D));
	if (q->enh) {
		set_var("req_ird", 7, q->iw & SIWX_MPA_V2_IRD_ORD_MASK);
		set_var("req_ord", 7, q->ow & SIWX_MPA_V2_IRD_ORD_MASK);
	} else {
		unset_var("req_ird");
		unset_var("req_ord");
	}
	mpa_pdata_vars(q);
	S.crc_req = !!(q->flags & SIWX_MPA_FLAG_C);
	mpa_consume(q);
	return 0;
}

/*
 * The Reply to request q into rep (--reply-hex, or as RFC 5044/6581 allow
 * with the options' overrides). Returns its length; *c: it has C.
 */
static size_t build_reply(uint8_t *rep, size_t size, const struct mpa_rr *q,
			  int *c)
{
	unsigned int flags, rev;
	char key[SIWX_MPA_KEY_SIZE];
	uint32_t ird, ord;
	size_t replen;
	int a;

	if (opt.reply_hex) {
		memcpy(rep, rep_hex, rep_hexlen);
		replen = rep_hexlen;
		if (replen < SIWX_MPA_RR_HDR_SIZE)	/* keep the header defined */
			memset(rep + replen, 0, SIWX_MPA_RR_HDR_SIZE - replen);
		*c = replen > SIWX_MPA_OFF_FLAGS &&
		     (rep[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
		return replen;
	}
	rev = opt.rev_set ? opt.rev :
	      q->rev <= SIWX_MPA_REV_1 ? SIWX_MPA_REV_1 : SIWX_MPA_REV_2;
	flags = (opt.crc >= 0 ? opt.crc : S.crc_req) ? SIWX_MPA_FLAG_C : 0;
	if (opt.markers)
		flags |= SIWX_MPA_FLAG_M;
	if (opt.reject)
		flags |= SIWX_MPA_FLAG_R;
	if (opt.enhanced >= 0 ? opt.enhanced :
	    (q->flags & SIWX_MPA_FLAG_S) && rev >= SIWX_MPA_REV_2)
		flags |= SIWX_MPA_FLAG_S;
	if (opt.flags_raw >= 0)
		flags = opt.flags_raw;
	a = opt.p2p >= 0 ? opt.p2p : q->enh && (q->iw & SIWX_MPA_V2_IRD_A);
	/* IRD = the request's ORD, ORD = its IRD, unless --ird/--ord */
	ird = !opt.ird_set && q->enh ? q->ow & SIWX_MPA_V2_IRD_ORD_MASK : opt.ird;
	ord = !opt.ord_set && q->enh ? q->iw & SIWX_MPA_V2_IRD_ORD_MASK : opt.ord;
	memset(key, 0, sizeof(key));
	if (opt.key)
		memcpy(key, opt.key, strnlen(opt.key, sizeof(key)));
	else
		memcpy(key, SIWX_MPA_KEY_REP, sizeof(key));
	replen = mpa_frame(rep, size, key, flags, rev, ird, ord, a);
	*c = !!(rep[SIWX_MPA_OFF_FLAGS] & SIWX_MPA_FLAG_C);
	return replen;
}

/* Print and send the reply and --garbage behind it, in one send(). */
static void send_reply(const uint8_t *rep, size_t replen)
{
	static char hex[2 * MAX_FRAME + 8];
	int c;

	print_sent("reply", rep, replen, hex, sizeof(hex));
	c = S.coalesce;
	S.coalesce = 1;
	tx_queue(rep, replen);
	if (garbage_len) {
		hexstr(hex, sizeof(hex), garbage, garbage_len);
		out("garbage bytes=%zu data=%s\n", garbage_len, hex);
		tx_queue(garbage, garbage_len);
	}
	tx_flush();
	S.coalesce = c;
}

/*
 * The responder's handshake on S.fd: read the Request, answer it. Returns
 * 1 when the steps are to run, 0 when only reading is (--no-reply), -1
 * when the connection is done (no Request, --close-on-enhanced).
 */
int mpa_respond(void)
{
	static uint8_t rep[MAX_FRAME];
	struct mpa_rr q;
	size_t replen;
	int rep_c;

	if (read_request(&q))
		return -1;
	if (opt.close_on_enh &&
	    (q.rev >= SIWX_MPA_REV_2 || (q.flags & SIWX_MPA_FLAG_S))) {
		out("closing on enhanced request\n");
		return -1;
	}
	if (opt.no_reply) {
		out("reply none\n");
		S.crc = opt.crc_use >= 0 ? opt.crc_use : S.crc_req;
		set_var("crc", 3, S.crc);
		return 0;
	}
	replen = build_reply(rep, sizeof(rep), &q, &rep_c);
	send_reply(rep, replen);

	S.crc = opt.crc_use >= 0 ? opt.crc_use : S.crc_req || rep_c;
	if (S.crc_req != rep_c || opt.crc_use >= 0)
		out("note crc requested=%d reply=%d use=%d\n", S.crc_req,
		    rep_c, S.crc);
	set_var("rev", 3, rep[SIWX_MPA_OFF_REV]);
	set_var("crc", 3, S.crc);

	/* anything that came with the request */
	rx_parse(RX_UNTIL_NONE);
	if (opt.delay)
		usleep(opt.delay * 1000);
	if (strcmp(opt.send_rtr, "auto"))
		send_rtr(opt.send_rtr);
	return 1;
}
