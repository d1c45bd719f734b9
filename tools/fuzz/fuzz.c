// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * siwx-fuzz - a fuzzer for the iWARP receive path of siw (see README).
 *
 * It completes a real MPA handshake with selftests/fuzz/fuzz_target (as
 * MPA initiator against its rdma_cm listener, or as MPA responder to its
 * rdma_connect), then sends a stream of FPDUs: valid messages of every
 * opcode, a share of them mutated at field level, cut into TCP segments
 * at random or merged. What it checks per connection:
 *   - the target's verdict (fuzz_target): memory no valid request could
 *     reach unchanged, the QP disconnected, the next connection made;
 *   - on the wire: a stream whose MPA framing stayed intact either still
 *     works (a Read Request probe is answered) or ended with a Terminate;
 *     a connection closed without a Terminate after intact framing, and
 *     FPDUs after a Terminate, are failures too.
 * Frames are built by tools/mpa-peer's step engine (the same units, linked
 * in): a stream is a list of mpa-peer steps, so a failing connection is
 * written as a replay file (the steps and the connection's settings) that
 * --replay runs again and --minimise shrinks.
 *
 * Everything follows from --seed: connection c's stream comes from
 * splitmix64(seed ^ c * golden), independent of what happened before.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mpa-peer.h"

#define NREG		7	/* fuzz_target's regions x w r a n p i */
#define MAX_STEPS	1024
#define MAX_KV		16
#define PROBE_STAG	0xf00dfeedu
#define PROBE_MS	5000
#define VERDICT_MS	75000
#define STALL_MS	5000
#define MAX_OUTSTANDING	4
#define MAX_OUTCOMES	4096
#define RD_MAX		4		/* fuzz_target's Reads per connection */
#define RD_SLOT		1024		/* each in its own slot of region s */
#define RD_STAG		0xc0de5a00u	/* our "memory" the target reads */
#define RD_TO		0x100000u
#define REG_S		7		/* fuzz_target's Read sink (k7: lkey) */

/* ---------------------------------------------------------------- rng */

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t G;	/* generation */
static uint64_t C;	/* chunking (TCP segments) */

static uint64_t rnd(void)
{
	return splitmix64(&G);
}

static uint32_t rn(uint32_t n)
{
	return n ? (uint32_t)(rnd() % n) : 0;
}

/* ---------------------------------------------------------------- options */

static struct {
	uint64_t seed, frames, secs, conns, first;
	const char *addr, *port, *ctl, *laddr, *outdir, *replay;
	int roles;		/* bit 0 initiator, bit 1 responder */
	int minimise, verbose;
	uint64_t max_steps;
} o = {
	.frames = 20000, .conns = ~0ull, .port = "42000", .ctl = "42001",
	.roles = 3, .max_steps = 300,
};

static void fz_usage(FILE *f)
{
	fprintf(f,
"usage: siwx-fuzz [options] TARGET-ADDR\n"
"  --port P          fuzz_target's rdma_cm listener (42000)\n"
"  --ctl P           fuzz_target's control port (42001)\n"
"  --listen-addr A   our address for responder-role connections (the\n"
"                    target connects to A:port+2); without it: initiator only\n"
"  --roles init,resp which roles to take (both)\n"
"  --seed S          seed (default: from the clock, printed)\n"
"  --frames N        stop after N frames (20000)\n"
"  --seconds N       stop after N seconds (no limit)\n"
"  --conns N         stop after N connections\n"
"  --first N         number of the first connection (0)\n"
"  --max-steps N     steps per connection at most (300)\n"
"  --out DIR         report and replay files (current directory)\n"
"  --replay FILE     run one stored connection again; exit 1 if it fails\n"
"  --minimise        shrink each failing connection (more connections)\n"
"  --verbose         print every connection\n"
"  --debug           print mpa-peer's lines too (handshakes, every frame\n"
"                    received) and each step of the stream as it is sent\n");
}

/* ---------------------------------------------------------------- steps */

struct kv {
	char k[12];
	char v[200];
};

/* one step while it is being built: command and key=value pairs */
struct gen {
	char cmd[16];
	int nkv;
	struct kv kv[MAX_KV];
	int tagged, untagged;	/* which header keys it takes */
	int fpdu;		/* builds an FPDU (opcode=, crc=, ... apply) */
	int req;		/* a request the target answers */
};

struct gstep {
	char *text;
	int frames;		/* FPDUs it sends (0: a control step) */
	int breaks;		/* MPA framing no longer intact after it */
	int req;
	int ends;		/* a Terminate of ours: the stream ends */
	int rresp;		/* an unmutated last Read Response segment */
	const char *mut;	/* its mutation, or NULL */
};

struct stream {
	int role, rev, crc, p2p, split;
	const char *rtr;
	uint64_t cseed;
	/* the RDMA Reads fuzz_target posts to us (siw as the requester) */
	int nrd;
	unsigned int rd_fill;
	uint32_t rd_len[RD_MAX], rd_off[RD_MAX];
	int n;
	struct gstep s[MAX_STEPS];
};

static void gset(struct gen *g, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void gset(struct gen *g, const char *k, const char *fmt, ...)
{
	struct kv *kv = NULL;
	va_list ap;
	int i;

	for (i = 0; i < g->nkv; i++)
		if (!strcmp(g->kv[i].k, k))
			kv = &g->kv[i];
	if (!kv) {
		if (g->nkv == MAX_KV)
			die(2, "too many keys");
		kv = &g->kv[g->nkv++];
		snprintf(kv->k, sizeof(kv->k), "%s", k);
	}
	va_start(ap, fmt);
	vsnprintf(kv->v, sizeof(kv->v), fmt, ap);
	va_end(ap);
}

static void gdel(struct gen *g, const char *k)
{
	int i;

	for (i = 0; i < g->nkv; i++)
		if (!strcmp(g->kv[i].k, k)) {
			g->kv[i] = g->kv[--g->nkv];
			return;
		}
}

static void gnew(struct gen *g, const char *cmd, int tagged, int req)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->cmd, sizeof(g->cmd), "%s", cmd);
	g->tagged = tagged;
	g->untagged = !tagged;
	g->fpdu = 1;
	g->req = req;
}

static void hexrand(char *dst, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		sprintf(dst + 2 * i, "%02x", rn(256));
	dst[2 * n] = 0;
}

/*
 * Whether a step sends a Terminate of ours, which siw must not answer
 * with one of its own: "term", or an "untagged" segment with opcode 7 on
 * queue 2 (it gets that queue's next MSN and offset 0: a valid one).
 */
static int ours_terminate(const char *text)
{
	unsigned int op, qn;

	if (!strncmp(text, "term ", 5))
		return 1;
	return sscanf(text, "untagged opcode=%u qn=%u", &op, &qn) == 2 &&
	       op == SIWX_RDMAP_OP_TERMINATE && qn == SIWX_DDP_QN_TERMINATE;
}

static void push(struct stream *s, const char *text, int frames, int breaks,
		 int req, int ends, const char *mut)
{
	struct gstep *g;

	if (s->n == MAX_STEPS)
		return;
	g = &s->s[s->n++];
	g->text = strdup(text);
	if (!g->text)
		die(1, "out of memory");
	g->frames = frames;
	g->breaks = breaks;
	g->req = req;
	g->ends = ends;
	g->mut = mut;
}

static void gpush(struct stream *s, struct gen *g, int breaks,
		  const char *mut)
{
	char buf[4096];
	size_t n;
	int i, frames = 1;

	n = snprintf(buf, sizeof(buf), "%s", g->cmd);
	for (i = 0; i < g->nkv && n < sizeof(buf); i++) {
		n += snprintf(buf + n, sizeof(buf) - n, " %s=%s", g->kv[i].k,
			      g->kv[i].v);
		if (!strcmp(g->kv[i].k, "repeat"))
			frames = atoi(g->kv[i].v);
	}
	push(s, buf, frames, breaks, g->req, ours_terminate(buf), mut);
}

/* an offset of len bytes inside a region */
static uint32_t off_in(uint32_t ml, uint32_t len, uint32_t align)
{
	uint32_t o = len > ml ? 0 : rn(ml - len + 1);

	return o - o % align;
}

/* ---- valid messages */

static const int w_regs[] = { 0, 1, 6 };	/* remote write */
static const int r_regs[] = { 0, 2, 6 };	/* remote read */
static const int a_regs[] = { 0, 3, 6 };	/* remote atomic */

#define PICK(a) ((a)[rn(sizeof(a) / sizeof((a)[0]))])

/* the lengths a stream uses (from the target's private data) */
struct lens {
	uint32_t ml, rl;
};

static void g_send(struct gen *g, const struct lens *L)
{
	gnew(g, "send", 0, 0);
	gset(g, "len", "%u", rn(L->rl + 1));
	gset(g, "fill", "%u", rn(256));
	if (!rn(4))
		gset(g, "se", "1");
}

static void g_write(struct gen *g, const struct lens *L, uint32_t *len,
		    int *reg, uint32_t *off)
{
	uint32_t max = L->ml < 4096 ? L->ml : 4096;

	*reg = PICK(w_regs);
	*len = rn(4) ? rn(256) : rn(max + 1);
	*off = off_in(L->ml, *len, 1);
	gnew(g, "write", 1, 0);
	gset(g, "stag", "${k%d}", *reg);
	gset(g, "to", "${a%d}+%u", *reg, *off);
	gset(g, "len", "%u", *len);
	gset(g, "fill", "%u", rn(256));
}

static void g_read(struct gen *g, const struct lens *L)
{
	int reg = PICK(r_regs);
	uint32_t len = rn(4) ? rn(256) : rn(L->ml + 1);

	gnew(g, "read_req", 0, 1);
	gset(g, "sink_stag", "0x%x", (uint32_t)rnd() & ~0xffu);
	gset(g, "sink_to", "0x%" PRIx64, rnd() >> rn(64));
	gset(g, "size", "%u", len);
	gset(g, "src_stag", "${k%d}", reg);
	gset(g, "src_to", "${a%d}+%u", reg, off_in(L->ml, len, 1));
}

static void g_atomic(struct gen *g, const struct lens *L)
{
	int reg = PICK(a_regs);

	gnew(g, "atomic", 0, 1);
	gset(g, "aop", "%u", rn(2) ? SIWX_AOP_FETCH_ADD : SIWX_AOP_CMP_SWAP);
	gset(g, "stag", "${k%d}", reg);
	gset(g, "to", "${a%d}+%u", reg, off_in(L->ml, 8, 8));
	gset(g, "add", "0x%" PRIx64, rnd());
	gset(g, "cmp", "0x%" PRIx64, rnd());
}

static void g_imm(struct gen *g)
{
	gnew(g, "imm", 0, 0);
	gset(g, "value", "0x%" PRIx64, rnd());
	if (!rn(4))
		gset(g, "se", "1");
}

static void g_flush(struct gen *g, const struct lens *L)
{
	uint32_t len = rn(L->ml + 1);

	gnew(g, "flush", 0, 1);
	gset(g, "stag", "${k0}");
	gset(g, "to", "${a0}+%u", off_in(L->ml, len, 1));
	gset(g, "size", "%u", len);
	/* region x has FLUSH_GLOBAL only: P is refused, as are neither */
	gset(g, "p", "0");
	gset(g, "g", "1");
	if (!rn(4))
		gset(g, "sel", "1");
}

static void g_awrite(struct gen *g, const struct lens *L)
{
	gnew(g, "awrite", 0, 1);
	gset(g, "stag", "${k0}");
	gset(g, "to", "${a0}+%u", off_in(L->ml, 8, 8));
	gset(g, "value", "0x%" PRIx64, rnd());
}

/* ---- mutations: return the name; *breaks when MPA framing is gone */

static const char *mutate(struct gen *g, const struct lens *L, int crc,
			  int *breaks)
{
	uint32_t r;

	*breaks = 0;
	for (;;) {
		r = rn(22);
		switch (r) {
		case 0:
			gset(g, "opcode", "%u", rn(32));
			return "opcode";
		case 1: {
			uint32_t v = rn(3);	/* 0, 2, 3: never DDP version 1 */

			gset(g, "dv", "%u", v ? v + 1 : 0);
			return "ddp_version";
		}
		case 2:
			gset(g, "rv", "%u", rn(2) ? 0 : 2 + rn(2));
			return "rdmap_version";
		case 3:
			gset(g, "t", "%u", !g->tagged);
			return "tagged_flag";
		case 4:
			gset(g, "l", "0");
			return "last_flag";
		case 5:
			gset(g, "ctrl", "0x%x", rn(65536));
			return "ctrl";
		case 6:
			if (!crc)
				continue;
			gset(g, "crc", "bad");
			return "crc";
		case 7:
			gset(g, "mpalen", "%u", rn(4) ? rn(80) : rn(65536));
			*breaks = 1;
			return "mpa_length";
		case 8:
			gset(g, "trunc", "%u", 1 + rn(40));
			*breaks = 1;
			return "truncate";
		case 9:
			gset(g, "pad", "%u", 1 + rn(7));
			*breaks = 1;	/* unless it hits the right count */
			return "pad";
		case 10:
			gset(g, "repeat", "%u", 2 + rn(40));
			return "repeat";
		case 11:
			if (!g->untagged)
				continue;
			gset(g, "qn", "%u", rn(2) ? rn(8) : (uint32_t)rnd());
			return "qn";
		case 12:
			if (!g->untagged)
				continue;
			gset(g, "msn", "%u", rn(2) ? rn(8) : (uint32_t)rnd());
			return "msn";
		case 13:
			if (!g->untagged)
				continue;
			gset(g, "mo", "%u", rn(2) ? rn(512) : (uint32_t)rnd());
			return "mo";
		case 14:
			if (!g->untagged)
				continue;
			gset(g, "inval", "%s", rn(2) ? "${k6}" : "0xdeadbe00");
			return "inval";
		case 15: {
			/* an STag: one bit off, another region's, any */
			const char *k = !strcmp(g->cmd, "read_req") ? "src_stag" :
				strcmp(g->cmd, "send") && strcmp(g->cmd, "imm") ?
				"stag" : NULL;
			uint32_t m = rn(3);

			if (!k)
				continue;
			if (m == 0)
				gset(g, k, "${k%u}^0x%x", rn(NREG), 1u << rn(32));
			else if (m == 1)
				gset(g, k, "${k%u}", rn(NREG));
			else
				gset(g, k, "0x%x", (uint32_t)rnd());
			return "stag";
		}
		case 16: {
			/* a tagged offset: straddling the end, before the start, wrapping */
			const char *k = !strcmp(g->cmd, "read_req") ? "src_to" :
				strcmp(g->cmd, "send") && strcmp(g->cmd, "imm") ?
				"to" : NULL;
			uint32_t m = rn(4), reg = rn(NREG);

			if (!k)
				continue;
			if (m == 0)
				gset(g, k, "${a%u}+%u", reg, L->ml - rn(16));
			else if (m == 1)
				gset(g, k, "${a%u}-%u", reg, 1 + rn(64));
			else if (m == 2)
				gset(g, k, "0x%" PRIx64, (uint64_t)(~0ull - rn(256)));
			else
				gset(g, k, "${a%u}+%u", reg, 1 + rn(7));
			return "tagged_offset";
		}
		case 17: {
			/* a length: one past, huge, wrapping */
			const char *k = !strcmp(g->cmd, "send") ||
				!strcmp(g->cmd, "write") ? "len" :
				!strcmp(g->cmd, "read_req") ||
				!strcmp(g->cmd, "flush") ||
				!strcmp(g->cmd, "awrite") ? "size" : NULL;
			uint32_t v = rn(3) == 0 ? (uint32_t)rnd() :
				     rn(2) ? L->ml + 1 : 0xffffffffu - rn(8);

			if (!k)
				continue;
			if (!strcmp(k, "len"))	/* bytes actually sent */
				v = !strcmp(g->cmd, "send") ? L->rl + 1 + rn(64) :
				    L->ml + 1 + rn(64);
			gset(g, k, "%u", v);
			return "length";
		}
		case 18:
			if (strcmp(g->cmd, "atomic"))
				continue;
			if (rn(2))
				gset(g, "aop", "%u", rn(16));
			else
				gset(g, "rsvd", "0x%x", 1 + rn(0xfffffff));
			return "atomic_op";
		case 19:
			if (strcmp(g->cmd, "flush"))
				continue;
			if (rn(2)) {
				gset(g, rn(2) ? "p" : "g", rn(2) ? "1" : "0");
				return "flush_disp_pg";
			}
			gset(g, "disp", "0x%x", (uint32_t)rnd() >> rn(32));
			return "flush_disp";
		case 20: {
			/* trailing bytes behind a header that has none */
			char hex[2 * 64 + 1];

			if (!strcmp(g->cmd, "send") || !strcmp(g->cmd, "write") ||
			    !strcmp(g->cmd, "read_resp"))
				continue;
			if (!strcmp(g->cmd, "imm")) {
				/* Immediate Data of another size than 8 */
				uint32_t l = rn(23);

				gdel(g, "value");
				l += l >= SIWX_RDMAP_IMM_SIZE;
				if (!l) {
					gset(g, "len", "0");
					return "imm_size";
				}
				hexrand(hex, l);
				gset(g, "data", "%s", hex);
				return "imm_size";
			}
			hexrand(hex, 1 + rn(64));
			gset(g, "data", "%s", hex);
			return "trailing_data";
		}
		default:
			if (!g->tagged)
				continue;
			gset(g, "to", "0x%" PRIx64, rnd());
			return "tagged_offset_any";
		}
	}
}

/* a step of its own that no valid stream has */
static const char *wild(struct stream *s, const struct lens *L)
{
	char hdr[2 * 64 + 1], data[2 * 96 + 1], buf[600];
	struct gen g;
	uint32_t r = rn(9);

	switch (r) {
	case 0:
		hexrand(hdr, rn(64));
		hexrand(data, rn(96));
		snprintf(buf, sizeof(buf), "untagged opcode=%u qn=%u hdr=%s%s%s",
			 rn(32), rn(5), hdr, *data ? " data=" : "", data);
		push(s, buf, 1, 0, 0, ours_terminate(buf), "untagged_any");
		return "untagged_any";
	case 1:
		hexrand(hdr, rn(64));
		snprintf(buf, sizeof(buf), "tagged opcode=%u stag=${k%u} to=${a%u}+%u%s%s",
			 rn(32), rn(NREG), rn(NREG), rn(L->ml), *hdr ? " hdr=" : "", hdr);
		push(s, buf, 1, 0, 0, 0, "tagged_any");
		return "tagged_any";
	case 2:
		hexrand(data, 1 + rn(96));
		snprintf(buf, sizeof(buf), "fpdu ulpdu=%s", data);
		push(s, buf, 1, 0, 0, 0, "ulpdu_garbage");
		return "ulpdu_garbage";
	case 3:
		hexrand(data, 1 + rn(96));
		snprintf(buf, sizeof(buf), "raw hex=%s", data);
		push(s, buf, 1, 1, 0, 0, "raw_garbage");
		return "raw_garbage";
	case 4:
		gnew(&g, "read_resp", 1, 0);
		gset(&g, "stag", "${k%u}", rn(NREG));
		gset(&g, "to", "${a%u}", rn(NREG));
		gset(&g, "len", "%u", rn(64));
		gpush(s, &g, 0, "read_resp_unsolicited");
		return "read_resp_unsolicited";
	case 5:
		gnew(&g, "atomic_resp", 0, 0);
		gset(&g, "reqid", "%u", rn(4));
		gset(&g, "value", "0x%" PRIx64, rnd());
		gpush(s, &g, 0, "atomic_resp_unsolicited");
		return "atomic_resp_unsolicited";
	case 6:
		gnew(&g, rn(2) ? "flush_resp" : "awrite_resp", 0, 0);
		gpush(s, &g, 0, "response_unsolicited");
		return "response_unsolicited";
	case 7:
		gnew(&g, "term", 0, 0);
		gset(&g, "layer", "%u", rn(3));
		gset(&g, "etype", "%u", rn(4));
		gset(&g, "code", "%u", rn(256));
		gpush(s, &g, 0, "terminate");
		return "terminate";
	default:
		gnew(&g, "send", 0, 0);
		gset(&g, "len", "%u", L->rl + 1 + rn(L->rl));
		gpush(s, &g, 0, "send_too_long");
		return "send_too_long";
	}
}

/*
 * A tagged message (Write, Read Response) of len bytes at region reg,
 * offset off, pushed as two DDP segments cut at a random point; the
 * caller pushes nothing of it itself. With bad set, the second segment
 * names another STag or a TO that does not continue the first (RFC 5041
 * 5.1: a tagged message's segments carry one STag, contiguous offsets):
 * returns the mutation's name (the framing stays intact: the probe
 * follows), else NULL.
 */
static const char *gpush_two_segments(struct stream *s, struct gen *g,
				      int reg, uint32_t off, uint32_t len,
				      int bad)
{
	struct gen g2 = *g;
	uint32_t first = 1 + rn(len - 1);
	const char *mut = NULL;

	gset(g, "len", "%u", first);
	gset(g, "l", "0");
	gpush(s, g, 0, NULL);
	gset(&g2, "to", "${a%d}+%u", reg, off + first);
	gset(&g2, "len", "%u", len - first);
	if (bad && rn(2)) {
		/* another region's key (one that allows it), or a bit off */
		if (rn(2))
			gset(&g2, "stag", "${k%d}", reg == 1 ? 0 : 1);
		else
			gset(&g2, "stag", "${k%d}^0x%x", reg, 1u << rn(32));
		mut = "split_stag";
	} else if (bad) {
		/* a gap or an overlap, still inside the region */
		gset(&g2, "to", "${a%d}+%u", reg,
		     off + first + (rn(2) || first < 2 ? 1 : -1));
		mut = "split_offset";
	}
	gpush(s, &g2, 0, mut);
	return mut;
}

/*
 * A Read Response mutation after which its Read must not complete
 * successfully: the response is not the one the Read asked for (RFC 5040
 * 4.4, RFC 5041 5.1). The generic field mutations and a repeated
 * response (the Read itself was answered) are not among them.
 */
static int rresp_refused(const char *mut)
{
	static const char *const refused[] = {
		"rresp_too_long", "rresp_too_long_not_last", "rresp_too_short",
		"rresp_sink_offset", "rresp_sink_stag", "rresp_untagged",
		"split_stag", "split_offset",
	};
	size_t i;

	for (i = 0; mut && i < sizeof(refused) / sizeof(refused[0]); i++)
		if (!strcmp(mut, refused[i]))
			return 1;
	return 0;
}

/* a Read Response mutation of its own; "" when it is none of these */
static const char *rresp_mutate(struct gen *g, const struct stream *s, int k)
{
	uint32_t len = s->rd_len[k], off = s->rd_off[k];

	switch (rn(7)) {
	case 0:		/* more than the Read asked for */
		gset(g, "len", "%u", len + 1 + rn(64));
		return "rresp_too_long";
	case 6:		/* more, in a segment that is not the last */
		gset(g, "len", "%u", len + 1 + rn(64));
		gset(g, "l", "0");
		return "rresp_too_long_not_last";
	case 1:		/* less, and the last segment */
		gset(g, "len", "%u", rn(len));
		return "rresp_too_short";
	case 2:		/* another offset in the sink */
		gset(g, "to", "${a%d}+%u", REG_S, rn(2) ? off + 1 + rn(64) :
		     (off > 64 ? off - 1 - rn(64) : off + len));
		return "rresp_sink_offset";
	case 3:		/* another STag: a region's rkey, or off by a bit */
		if (rn(2))
			gset(g, "stag", "${k%u}", rn(NREG));
		else
			gset(g, "stag", "${k%d}^0x%x", REG_S, 1u << rn(32));
		return "rresp_sink_stag";
	case 4:		/* untagged: a Read Response must be tagged */
		gset(g, "t", "0");
		return "rresp_untagged";
	default:	/* the same response twice */
		gset(g, "repeat", "2");
		return "rresp_repeat";
	}
}

/*
 * The answers to the target's Reads: "@rreq" (wait for its Read Requests),
 * then one response per Read, some in two DDP segments; in a connection
 * with mutations (p > 0) a fifth of them mutated.
 */
static void g_reads(struct stream *s, const struct lens *L, uint32_t p,
		    int *broken)
{
	int k;

	(void)L;
	push(s, "@rreq", 0, 0, 0, 0, NULL);
	for (k = 0; k < s->nrd; k++) {
		uint32_t len = s->rd_len[k], off = s->rd_off[k];
		const char *mut = NULL;
		struct gen g;
		int breaks = 0;

		gnew(&g, "read_resp", 1, 0);
		gset(&g, "stag", "${k%d}", REG_S);
		gset(&g, "to", "${a%d}+%u", REG_S, off);
		gset(&g, "len", "%u", len);
		gset(&g, "fill", "%u", (s->rd_fill + k) & 0xff);
		if (p && rn(5) == 0)
			mut = rn(2) ? rresp_mutate(&g, s, k) :
			      mutate(&g, L, s->crc, &breaks);
		if (!mut && len > 1 && !rn(3)) {
			mut = gpush_two_segments(s, &g, REG_S, off, len,
						 p && rn(5) == 0);
		} else {
			gpush(s, &g, breaks, mut);
		}
		s->s[s->n - 1].rresp = !mut;
		*broken |= breaks;
	}
}

/*
 * The stream of one connection: up to --max-steps steps, a share p of
 * them mutated (p is 0, 0.5, 1, 2 or 5 %, drawn per connection; a
 * quarter as many are replaced by a step no valid stream has); every
 * MAX_OUTSTANDING requests an "@drain" (wait for their responses).
 */
static void generate(struct stream *s, const struct lens *L)
{
	static const uint32_t pm[] = { 0, 5, 10, 20, 50 };	/* per 1000 */
	uint32_t p = pm[rn(5)], nsteps = 1 + rn((uint32_t)o.max_steps);
	uint32_t rd_at = s->nrd ? rn(nsteps) : nsteps;
	int outstanding = 0, broken = 0;
	uint32_t i;

	for (i = 0; i < nsteps && s->n < MAX_STEPS - 4 - 2 * RD_MAX; i++) {
		struct gen g;
		const char *mut = NULL;
		int breaks = 0, kind;
		uint32_t len = 0, off = 0;
		int reg = 0;

		if (i == rd_at)
			g_reads(s, L, p, &broken);
		kind = rn(100);
		if (rn(1000) < p / 4) {
			mut = wild(s, L);
			if (s->s[s->n - 1].breaks)
				broken = 1;
			if (s->s[s->n - 1].ends)
				break;
			continue;
		}
		if (kind < 30)
			g_send(&g, L);
		else if (kind < 55)
			g_write(&g, L, &len, &reg, &off);
		else if (kind < 70)
			g_read(&g, L);
		else if (kind < 80)
			g_atomic(&g, L);
		else if (kind < 88)
			g_imm(&g);
		else if (kind < 94)
			g_flush(&g, L);
		else
			g_awrite(&g, L);
		if (rn(1000) < p)
			mut = mutate(&g, L, s->crc, &breaks);
		if (!mut && kind >= 30 && kind < 55 && len > 1 && !rn(4)) {
			/* in a connection with mutations a tenth of them bad */
			gpush_two_segments(s, &g, reg, off, len,
					   p && rn(10) == 0);
			continue;
		}
		gpush(s, &g, breaks, mut);
		broken |= breaks;
		if (g.req && !broken && ++outstanding >= MAX_OUTSTANDING) {
			push(s, "@drain", 0, 0, 0, 0, NULL);
			outstanding = 0;
		}
	}
	push(s, "@drain", 0, 0, 0, 0, NULL);
}

/* ---------------------------------------------------------------- wire */

static struct {
	int term, term_layer, term_etype, term_code;
	int after_term;		/* FPDUs after the first Terminate */
	int responses;		/* responses to our requests */
	int probe_ok;
	uint64_t frames_rx;
	int rreqs;		/* the target's Read Requests */
	struct rreq {
		uint32_t sink_stag, size, src_stag;
		uint64_t sink_to, src_to;
	} rq[RD_MAX];
	char rreq_bad[160];	/* the first one not as it posted it */
	/* an RFC 6581 Read RTR (a zero-length Read Request) to answer */
	int rtr_read;
	uint32_t rtr_stag;
	uint64_t rtr_to;
} W;

/*
 * A Read Request of the target (header p): kept, and checked against the
 * Read it posted once the region variables are known (check_rreqs(); the
 * first may arrive with the MPA Reply, before region_vars() ran).
 */
static void note_rreq(const uint8_t *p, size_t len)
{
	const uint8_t *h = p + SIWX_DDP_UNTAGGED_HDR_SIZE;
	struct rreq *q;

	if (len < SIWX_DDP_UNTAGGED_HDR_SIZE + SIWX_RDMAP_READ_REQ_SIZE) {
		if (!W.rreq_bad[0])
			snprintf(W.rreq_bad, sizeof(W.rreq_bad),
				 "Read Request %d of %zu bytes", W.rreqs, len);
		W.rreqs++;
		return;
	}
	if (!rd32(h + SIWX_RREQ_OFF_SIZE)) {
		/* the Read RTR of siw as the initiator, not one of ours */
		W.rtr_read = 1;
		W.rtr_stag = rd32(h + SIWX_RREQ_OFF_SINK_STAG);
		W.rtr_to = rd64(h + SIWX_RREQ_OFF_SINK_TO);
		return;
	}
	if (W.rreqs < RD_MAX) {
		q = &W.rq[W.rreqs];
		q->sink_stag = rd32(h + SIWX_RREQ_OFF_SINK_STAG);
		q->sink_to = rd64(h + SIWX_RREQ_OFF_SINK_TO);
		q->size = rd32(h + SIWX_RREQ_OFF_SIZE);
		q->src_stag = rd32(h + SIWX_RREQ_OFF_SRC_STAG);
		q->src_to = rd64(h + SIWX_RREQ_OFF_SRC_TO);
	}
	W.rreqs++;
}

/* the Read Requests received against the Reads the target posted */
static void check_rreqs(const struct stream *s)
{
	uint64_t a7 = 0, k7 = 0;
	int k;

	if (W.rreq_bad[0])
		return;
	if (W.rreqs > s->nrd) {
		snprintf(W.rreq_bad, sizeof(W.rreq_bad),
			 "%d Read Requests, %d posted", W.rreqs, s->nrd);
		return;
	}
	get_var("a7", 2, &a7);
	get_var("k7", 2, &k7);
	for (k = 0; k < W.rreqs; k++) {
		const struct rreq *q = &W.rq[k];
		uint32_t off = s->rd_off[k];

		if (q->sink_stag != (uint32_t)k7 || q->sink_to != a7 + off ||
		    q->size != s->rd_len[k] || q->src_stag != RD_STAG ||
		    q->src_to != (uint64_t)RD_TO + off) {
			snprintf(W.rreq_bad, sizeof(W.rreq_bad),
				 "Read Request %d: sink 0x%x@0x%" PRIx64 " size %u src "
				 "0x%x@0x%" PRIx64 ", posted 0x%x@0x%" PRIx64 " %u 0x%x@0x%" PRIx64,
				 k, q->sink_stag, q->sink_to, q->size, q->src_stag,
				 q->src_to, (uint32_t)k7, a7 + off, s->rd_len[k],
				 RD_STAG, (uint64_t)RD_TO + off);
			return;
		}
	}
}

static void on_rx(const uint8_t *p, size_t len, const char *crcs)
{
	unsigned int op;

	(void)crcs;
	W.frames_rx++;
	if (len < SIWX_DDP_CTRL_SIZE)
		return;
	if (W.term)
		W.after_term++;
	op = p[1] & SIWX_RDMAP_MASK_OPCODE;
	switch (op) {
	case SIWX_RDMAP_OP_TERMINATE:
		if (len >= SIWX_DDP_UNTAGGED_HDR_SIZE + SIWX_RDMAP_TERM_CTRL_SIZE &&
		    !W.term) {
			const uint8_t *t = p + SIWX_DDP_UNTAGGED_HDR_SIZE;

			W.term_layer = t[SIWX_TERM_OFF_LAYER_ETYPE] >>
				       SIWX_TERM_LAYER_SHIFT;
			W.term_etype = t[SIWX_TERM_OFF_LAYER_ETYPE] &
				       SIWX_TERM_ETYPE_MASK;
			W.term_code = t[SIWX_TERM_OFF_ECODE];
		}
		W.term = 1;
		break;
	case SIWX_RDMAP_OP_READ_REQ:
		note_rreq(p, len);
		break;
	case SIWX_RDMAP_OP_READ_RESP:
		if ((p[0] & SIWX_DDP_FLAG_T) && len >= SIWX_DDP_TAGGED_HDR_SIZE &&
		    rd32(p + SIWX_DDP_OFF_STAG) == PROBE_STAG)
			W.probe_ok = 1;
		if (p[0] & SIWX_DDP_FLAG_L)
			W.responses++;
		break;
	case SIWX_RDMAP_OP_ATOMIC_RESP:
	case SIWX_RDMAP_OP_FLUSH_RESP:
	case SIWX_RDMAP_OP_ATOMIC_WRITE_RESP:
		W.responses++;
		break;
	}
}

/*
 * One receive (flags: MSG_DONTWAIT or 0), parsed. Returns 0 when
 * nothing was there; marks the stream closed (2: reset) at its end.
 */
static int rx_once(int flags)
{
	ssize_t r = recv(S.fd, S.rx + S.rxlen, sizeof(S.rx) - S.rxlen, flags);

	if (r < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (r <= 0) {
		S.closed = r < 0 ? 2 : 1;
		return 0;
	}
	S.rxlen += r;
	rx_parse(RX_UNTIL_NONE);
	if (S.rxlen == sizeof(S.rx))	/* a bogus length: drop it */
		S.rxlen = 0;
	return 1;
}

/* read what is there (up to ms), parse it */
static void pump(int ms)
{
	struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
	uint64_t end = now_ms() + ms;

	while (!S.closed) {
		int t = (int)(end > now_ms() ? end - now_ms() : 0);

		if (poll(&pfd, 1, t) <= 0)
			return;
		rx_once(0);
	}
}

/*
 * After a failed send: read what the peer sent before its reset (a
 * Terminate, typically), which is still queued, without waiting.
 */
static void rx_rest(void)
{
	while (!S.closed && rx_once(MSG_DONTWAIT))
		;
}

/*
 * Send what the steps queued: whole (frames merged into segments) or, in
 * split mode, cut at random points, sometimes with a pause so that the
 * pieces become segments of their own. Reads while the socket is full.
 * Returns -1 when nothing could be sent for STALL_MS.
 */
static int send_queued(int split)
{
	size_t off = 0;
	uint64_t stall = now_ms() + STALL_MS;

	while (off < S.txlen && !S.closed) {
		size_t n = S.txlen - off;
		ssize_t r;

		if (split) {
			size_t cut = 1 + splitmix64(&C) % 200;

			if (cut < n)
				n = cut;
		}
		r = send(S.fd, S.tx + off, n, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 && errno == EAGAIN) {
			if (now_ms() >= stall) {
				S.txlen = 0;
				return -1;
			}
			pump(10);
			continue;
		}
		if (r < 0) {
			rx_rest();
			S.closed = 2;
			break;
		}
		off += r;
		stall = now_ms() + STALL_MS;
		if (split && splitmix64(&C) % 4 == 0)
			usleep(splitmix64(&C) % 300);
	}
	S.txlen = 0;
	return 0;
}

/* ---------------------------------------------------------------- control */

static int ctl_fd = -1;
static int lfd = -1;	/* responder role: our listener */
static char ctl_buf[1024];
static size_t ctl_len;

static void ctl_send(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ctl_send(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0 || n > (int)sizeof(buf) - 2)
		die(2, "internal: control line too long");
	buf[n++] = '\n';
	if (write(ctl_fd, buf, n) != n)
		die(1, "control connection lost");
}

/* the next control line within ms; "" on timeout */
static void ctl_read(char *line, size_t n, int ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = ctl_fd, .events = POLLIN };

	for (;;) {
		char *nl = memchr(ctl_buf, '\n', ctl_len);
		ssize_t r;

		if (nl) {
			size_t l = nl - ctl_buf;

			snprintf(line, n, "%.*s", (int)l, ctl_buf);
			memmove(ctl_buf, nl + 1, ctl_len - l - 1);
			ctl_len -= l + 1;
			return;
		}
		if (now_ms() >= end || poll(&pfd, 1, (int)(end - now_ms())) <= 0) {
			line[0] = 0;
			return;
		}
		r = read(ctl_fd, ctl_buf + ctl_len, sizeof(ctl_buf) - ctl_len - 1);
		if (r <= 0)
			die(1, "control connection lost (target gone?)");
		ctl_len += r;
	}
}

/* ---------------------------------------------------------------- one run */

struct result {
	char cls[64];		/* failure class, "" if none */
	char outcome[48];
	char detail[256];
	uint64_t frames;
};

/* the control line's " rd=..." for the stream's Reads ("" for none) */
static const char *rd_arg(const struct stream *s)
{
	static char buf[160];
	size_t n;
	int k;

	if (!s->nrd)
		return "";
	n = snprintf(buf, sizeof(buf), " rd=0x%x:0x%x:%u:", RD_STAG, RD_TO,
		     s->rd_fill);
	for (k = 0; k < s->nrd && n < sizeof(buf); k++)
		n += snprintf(buf + n, sizeof(buf) - n, "%s%u@%u", k ? "," : "",
			      s->rd_len[k], s->rd_off[k]);
	return buf;
}

static const char *rtr_name[] = { "send", "write", "read" };

/* the MPA handshake in role s->role; 0 ok */
static int handshake(struct stream *s, unsigned long n, struct result *res)
{
	char rtr[8], ird[8];
	char *av[24];
	uint64_t fz;
	int ac = 0, fd;

	snprintf(rtr, sizeof(rtr), "%s", s->rtr);
	snprintf(ird, sizeof(ird), "%d", 16);
	av[ac++] = "siwx-fuzz";
	if (s->role)
		av[ac++] = "--listen";
	av[ac++] = s->crc ? "--crc" : "--no-crc";
	av[ac++] = "--delay";
	av[ac++] = "0";
	av[ac++] = "--timeout";
	av[ac++] = "15000";
	if (!s->role) {
		av[ac++] = "--rev";
		av[ac++] = s->rev == 1 ? "1" : "2";
		if (s->rev == 1)
			av[ac++] = "--no-enhanced";
		av[ac++] = s->p2p ? "--p2p" : "--no-p2p";
	}
	av[ac++] = "--rtr";
	av[ac++] = rtr;
	av[ac] = NULL;
	/* parse_options() sets defaults, not the "given" marks: clear all */
	memset(&opt, 0, sizeof(opt));
	if (parse_options(ac, av) != ac)
		die(2, "internal: options");
	if (!s->role) {
		ctl_send("a %lu%s", n, rd_arg(s));
		fd = tcp_connect(o.addr, o.port, NULL, 15000);
		conn_init(fd);
		if (mpa_initiate(NULL, 0) != -1) {
			snprintf(res->cls, sizeof(res->cls), "handshake");
			snprintf(res->detail, sizeof(res->detail),
				 "no MPA Reply from the target");
			return -1;
		}
	} else {
		char port[16];

		snprintf(port, sizeof(port), "%u", atoi(o.port) + 2);
		ctl_send("c %lu %s %s %d %d %s %d%s", n, o.laddr, port,
			 s->rev, s->p2p, s->rtr, s->crc, rd_arg(s));
		fd = tcp_accept(lfd, 20000);
		if (fd < 0) {
			snprintf(res->cls, sizeof(res->cls), "handshake");
			snprintf(res->detail, sizeof(res->detail),
				 "the target did not connect");
			return -1;
		}
		conn_init(fd);
		mpa_responder_setup();
		unset_var("fz");
		if (mpa_respond() != 1) {
			snprintf(res->cls, sizeof(res->cls), "handshake");
			snprintf(res->detail, sizeof(res->detail),
				 "no MPA Request from the target");
			return -1;
		}
		if (get_var("fz", 2, &fz) || fz != n) {
			snprintf(res->cls, sizeof(res->cls), "control");
			snprintf(res->detail, sizeof(res->detail),
				 "the target's request is not of connection %lu", n);
			return -1;
		}
	}
	return 0;
}

/* the regions' addresses as variables a0..a7 */
static int region_vars(struct lens *L)
{
	uint64_t b, st, v;
	char name[4];
	int i;

	if (get_var("b", 1, &b) || get_var("st", 2, &st) ||
	    get_var("ml", 2, &v))
		return -1;
	L->ml = (uint32_t)v;
	if (get_var("rl", 2, &v))
		return -1;
	L->rl = (uint32_t)v;
	for (i = 0; i <= REG_S; i++) {
		snprintf(name, sizeof(name), "a%d", i);
		set_var(name, 2, b + (uint64_t)i * st);
	}
	return 0;
}

/*
 * One connection: handshake, the stream (only the steps keep[] marks, all
 * when keep is NULL; generated here when s->n is 0), probe, close, the
 * target's verdict.
 */
static void run_conn(struct stream *s, unsigned long n, const char *keep,
		     struct result *res)
{
	char line[512];
	struct lens L;
	int i, broken = 0, ours_term = 0, stalled = 0, asked = 0, mutated = 0;
	int fl, answered = 0;
	/* Read Response messages sent; the first Read that must fail */
	int rk = 0, refuse_k = -1;

	memset(res, 0, sizeof(*res));
	memset(&W, 0, sizeof(W));
	if (handshake(s, n, res))
		goto verdict;
	if (region_vars(&L)) {
		snprintf(res->cls, sizeof(res->cls), "pdata");
		snprintf(res->detail, sizeof(res->detail),
			 "the target's private data lacks b/st/ml/rl");
		goto out;
	}
	if (!s->n)
		generate(s, &L);
	fl = fcntl(S.fd, F_GETFL);
	fcntl(S.fd, F_SETFL, fl | O_NONBLOCK);
	S.coalesce = 1;
	C = s->cseed;
	for (i = 0; i < s->n && !S.closed; i++) {
		struct gstep *g = &s->s[i];

		if (keep && !keep[i])
			continue;
		if (!strcmp(g->text, "@drain")) {
			/* wait for the responses to every request so far */
			uint64_t end = now_ms() + 2000;

			if (send_queued(s->split))
				stalled = 1;
			while (now_ms() < end && !S.closed && !W.term &&
			       W.responses < asked)
				pump(20);
			continue;
		}
		if (!strcmp(g->text, "@rreq")) {
			/* wait for the target's Read Requests */
			uint64_t end = now_ms() + 3000;

			if (send_queued(s->split))
				stalled = 1;
			while (now_ms() < end && !S.closed && !W.term &&
			       W.rreqs < s->nrd)
				pump(20);
			if (W.rtr_read == 1) {
				/*
				 * the target's Read RTR heads its ORQ: answer
				 * it first (RFC 6581: a zero-length response)
				 */
				char rtr[96], *rp = rtr;

				snprintf(rtr, sizeof(rtr),
					 "read_resp stag=0x%x to=0x%" PRIx64 " len=0",
					 W.rtr_stag, W.rtr_to);
				run_steps(&rp, 1);
				W.rtr_read = 2;
			}
			continue;
		}
		if (!out_quiet)	/* --debug: the stream as it goes */
			printf("step %d%s%s %s\n", i, g->mut ? " mut=" : "",
			       g->mut ? g->mut : "", g->text);
		run_steps(&g->text, 1);
		if (!strncmp(g->text, "read_resp ", 10)) {
			if (refuse_k < 0 && rresp_refused(g->mut))
				refuse_k = rk;
			rk += !strstr(g->text, " l=0");
		}
		answered += g->rresp;
		res->frames += g->frames;
		asked += g->req;
		mutated |= !!g->mut;
		broken |= g->breaks;
		ours_term |= g->ends;
		if (S.txlen > 32768 || !s->split || i % 8 == 7) {
			if (send_queued(s->split))
				stalled = 1;
			pump(0);
		}
		if (stalled)
			break;
	}
	if (!stalled && send_queued(s->split))
		stalled = 1;
	/* the probe: a Read Request of 8 bytes from region r */
	if (!S.closed && !broken && !ours_term && !W.term && !stalled) {
		char probe[160];
		char *pp = probe;
		uint64_t end = now_ms() + PROBE_MS;

		snprintf(probe, sizeof(probe),
			 "read_req sink_stag=0x%x sink_to=0 size=8 src_stag=${k2} src_to=${a2}",
			 PROBE_STAG);
		run_steps(&pp, 1);
		if (send_queued(0))
			stalled = 1;
		while (now_ms() < end && !S.closed && !W.term && !W.probe_ok)
			pump(50);
	}
	/* the end: we close; read what is left (a Terminate, the FIN) */
	shutdown(S.fd, SHUT_WR);
	pump(W.term || broken || ours_term ? 1500 : 300);
	check_rreqs(s);

	if (W.term)
		snprintf(res->outcome, sizeof(res->outcome), "term:%d/%d/0x%02x",
			 W.term_layer, W.term_etype, W.term_code);
	else if (W.probe_ok)
		snprintf(res->outcome, sizeof(res->outcome), "probe_ok");
	else if (S.closed)
		snprintf(res->outcome, sizeof(res->outcome), "%s",
			 S.closed == 2 ? "reset" : "closed");
	else
		snprintf(res->outcome, sizeof(res->outcome), "%s",
			 stalled ? "stalled" : "silent");

	if (W.term && !mutated) {
		snprintf(res->cls, sizeof(res->cls), "valid_terminated");
		snprintf(res->detail, sizeof(res->detail),
			 "a stream without a mutation got a Terminate (%s)",
			 res->outcome);
	} else if (W.rreq_bad[0]) {
		snprintf(res->cls, sizeof(res->cls), "read_request");
		snprintf(res->detail, sizeof(res->detail), "%s", W.rreq_bad);
	} else if (W.after_term) {
		snprintf(res->cls, sizeof(res->cls), "fpdu_after_terminate");
		snprintf(res->detail, sizeof(res->detail),
			 "%d FPDUs followed the Terminate", W.after_term);
	} else if (!broken && !ours_term && !W.term && !W.probe_ok) {
		snprintf(res->cls, sizeof(res->cls), "%s",
			 S.closed ? "closed_without_terminate" :
			 stalled ? "stalled" : "probe_unanswered");
		snprintf(res->detail, sizeof(res->detail),
			 "intact framing, no Terminate, the probe Read got no response (%s)",
			 res->outcome);
	}
out:
verdict:
	if (S.fd >= 0)
		close(S.fd);
	S.fd = -1;
	ctl_read(line, sizeof(line), VERDICT_MS);
	if (!line[0]) {
		if (!res->cls[0])
			snprintf(res->cls, sizeof(res->cls), "target_silent");
		snprintf(res->detail, sizeof(res->detail),
			 "no verdict from the target within %d ms", VERDICT_MS);
	} else {
		const char *r = strstr(line, " reads=");
		unsigned int ok = 0, posted = 0;
		int have_reads = r && sscanf(r, " reads=%u/%u", &ok, &posted) == 2;
		unsigned long vn;
		char what[16];

		if (sscanf(line, "v %lu %15s", &vn, what) != 2 || vn != n) {
			snprintf(res->cls, sizeof(res->cls), "control");
			snprintf(res->detail, sizeof(res->detail),
				 "unexpected control line '%s'", line);
		} else if (!strcmp(what, "refused")) {
			/* an error status: the connection never came up */
			snprintf(res->outcome, sizeof(res->outcome),
				 "connect_error");
			res->cls[0] = 0;
		} else if (strcmp(what, "ok") && !res->cls[0]) {
			snprintf(res->cls, sizeof(res->cls), "target_%s", what);
			snprintf(res->detail, sizeof(res->detail), "%s", line);
		} else if (!strcmp(what, "ok") && !res->cls[0] && refuse_k >= 0 &&
			   have_reads && ok > (unsigned int)refuse_k) {
			/*
			 * Reads complete in order: the one whose response was
			 * not what it asked for, and every later one, must not
			 * complete successfully
			 */
			snprintf(res->cls, sizeof(res->cls), "read_accepted");
			snprintf(res->detail, sizeof(res->detail),
				 "Read %d got a response it did not ask for, yet "
				 "the target says '%s'", refuse_k, line);
		} else if (!strcmp(what, "ok") && !res->cls[0] && s->nrd &&
			   answered == s->nrd && !mutated && !broken &&
			   !ours_term && !W.term && !stalled) {
			/* every Read answered as asked: each must have completed */
			if (!have_reads || posted != (unsigned int)s->nrd ||
			    ok != posted) {
				snprintf(res->cls, sizeof(res->cls), "reads_failed");
				snprintf(res->detail, sizeof(res->detail),
					 "valid Read Responses, the target says '%s'",
					 line);
			}
		}
	}
	if (!res->outcome[0])
		snprintf(res->outcome, sizeof(res->outcome), "none");
}

/* ---------------------------------------------------------------- streams */

static void stream_free(struct stream *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		free(s->s[i].text);
	s->n = 0;
}

/* connection c's settings (role from the roles allowed) */
static void stream_init(struct stream *s, unsigned long c)
{
	uint64_t x = o.seed ^ (c * 0x9e3779b97f4a7c15ull);

	memset(s, 0, sizeof(*s));
	G = splitmix64(&x);
	s->cseed = splitmix64(&x);
	s->role = o.roles == 3 ? (int)rn(2) : o.roles == 2;
	s->rev = rn(4) ? 2 : 1;
	s->crc = rn(2);
	s->p2p = s->rev == 2 && rn(3);
	s->rtr = rtr_name[rn(3)];
	s->split = rn(2);
	/* two in five connections: the target reads from us, too */
	if (rn(5) < 2) {
		int k;

		s->nrd = 1 + (int)rn(RD_MAX);
		s->rd_fill = rn(256);
		for (k = 0; k < s->nrd; k++) {
			uint32_t len = rn(4) ? 1 + rn(256) : 1 + rn(RD_SLOT);

			s->rd_len[k] = len;
			s->rd_off[k] = k * RD_SLOT + rn(RD_SLOT - len + 1);
		}
	}
}

static void write_replay(const char *path, const struct stream *s,
			 unsigned long c, const char *keep,
			 const struct result *r)
{
	FILE *f = fopen(path, "w");
	int i;

	if (!f) {
		fprintf(stderr, "siwx-fuzz: %s: %s\n", path, strerror(errno));
		return;
	}
	fprintf(f, "# siwx-fuzz replay: seed=0x%" PRIx64 " conn=%lu\n"
		"# failure: %s: %s\n# outcome: %s\n", o.seed, c, r->cls,
		r->detail, r->outcome);
	fprintf(f, "cfg role=%d rev=%d crc=%d p2p=%d rtr=%s split=%d cseed=0x%" PRIx64 "\n",
		s->role, s->rev, s->crc, s->p2p, s->rtr, s->split, s->cseed);
	if (s->nrd)
		fprintf(f, "reads%s\n", rd_arg(s));
	for (i = 0; i < s->n; i++) {
		if (keep && !keep[i])
			continue;
		if (s->s[i].mut)
			fprintf(f, "mstep %s %s\n", s->s[i].mut, s->s[i].text);
		else
			fprintf(f, "step %s\n", s->s[i].text);
	}
	fclose(f);
}

static int read_replay(const char *path, struct stream *s)
{
	char line[8192], rtr[16];
	FILE *f = fopen(path, "r");

	if (!f)
		die(2, "%s: %s", path, strerror(errno));
	memset(s, 0, sizeof(*s));
	while (fgets(line, sizeof(line), f)) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = 0;
		if (!strncmp(line, "cfg ", 4)) {
			if (sscanf(line, "cfg role=%d rev=%d crc=%d p2p=%d rtr=%15s split=%d cseed=0x%" SCNx64,
				   &s->role, &s->rev, &s->crc, &s->p2p, rtr,
				   &s->split, &s->cseed) != 7)
				die(2, "%s: bad cfg line", path);
			s->rtr = !strcmp(rtr, "send") ? rtr_name[0] :
				 !strcmp(rtr, "read") ? rtr_name[2] : rtr_name[1];
		} else if (!strncmp(line, "reads rd=", 9)) {
			const char *p = strchr(line + 9, ':');
			unsigned int len, off;
			int used;

			/* rd=STAG:TO:FILL:LEN@OFF,... (STAG and TO are ours) */
			p = p ? strchr(p + 1, ':') : NULL;
			if (!p || sscanf(p + 1, "%u:%n", &s->rd_fill, &used) != 1)
				die(2, "%s: bad reads line", path);
			p += 1 + used;
			while (sscanf(p, "%u@%u%n", &len, &off, &used) == 2 &&
			       s->nrd < RD_MAX) {
				s->rd_len[s->nrd] = len;
				s->rd_off[s->nrd++] = off;
				p += used + (p[used] == ',');
			}
			if (!s->nrd)
				die(2, "%s: bad reads line", path);
		} else if (!strncmp(line, "step ", 5) ||
			   !strncmp(line, "mstep ", 6)) {
			const char *t = line + 5, *mut = NULL;
			static char muts[MAX_STEPS][32];

			if (line[0] == 'm') {
				t = strchr(line + 6, ' ');
				if (!t)
					die(2, "%s: bad mstep line", path);
				snprintf(muts[s->n % MAX_STEPS], sizeof(muts[0]),
					 "%.*s", (int)(t - line - 6), line + 6);
				mut = muts[s->n % MAX_STEPS];
				t++;
			}
			int brk = !strncmp(t, "raw ", 4) || strstr(t, " mpalen=") ||
				  strstr(t, " trunc=") || strstr(t, " pad=");
			const char *rep = strstr(t, " repeat=");

			push(s, t, strcmp(t, "@drain") && strcmp(t, "@rreq") ?
			     (rep ? atoi(rep + 8) : 1) : 0,
			     brk, !strncmp(t, "read_req ", 9) ||
			     !strncmp(t, "atomic ", 7) || !strncmp(t, "flush ", 6) ||
			     !strncmp(t, "awrite ", 7), ours_terminate(t), mut);
			s->s[s->n - 1].rresp = !mut && !strncmp(t, "read_resp ", 10) &&
					       !strstr(t, " l=0");
		}
	}
	fclose(f);
	if (!s->n || !s->rtr)
		die(2, "%s: no cfg or no steps", path);
	return 0;
}

/* ---------------------------------------------------------------- report */

static struct {
	char key[96];
	uint64_t count;
} outcomes[MAX_OUTCOMES];
static int noutcomes;

static void count_outcome(const char *mut, const char *outcome)
{
	char key[96];
	int i;

	snprintf(key, sizeof(key), "%s -> %s", mut ? mut : "valid", outcome);
	for (i = 0; i < noutcomes; i++)
		if (!strcmp(outcomes[i].key, key)) {
			outcomes[i].count++;
			return;
		}
	if (noutcomes < MAX_OUTCOMES) {
		snprintf(outcomes[noutcomes].key, sizeof(outcomes[0].key), "%s", key);
		outcomes[noutcomes++].count = 1;
	}
}

static int cmp_outcome(const void *a, const void *b)
{
	return strcmp(((const typeof(outcomes[0]) *)a)->key,
		      ((const typeof(outcomes[0]) *)b)->key);
}

/* the first mutation of a stream (what the outcome is attributed to) */
static const char *first_mut(const struct stream *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (s->s[i].mut)
			return s->s[i].mut;
	return NULL;
}

/* ---------------------------------------------------------------- minimise */

static unsigned long next_conn;

/*
 * Remove chunks of steps while the connection still fails the same way
 * (ddmin, chunk sizes n/2 .. 1). Returns the kept mask.
 */
static char *minimise(struct stream *s, const char *cls)
{
	char *keep = malloc(s->n), *trial = malloc(s->n);
	int chunk, i, j, kept = s->n, tries = 0;
	struct result r;

	if (!keep || !trial)
		die(1, "out of memory");
	memset(keep, 1, s->n);
	for (chunk = s->n / 2; chunk >= 1; chunk /= 2) {
		for (i = 0; i < s->n && tries < 400; i += chunk) {
			int any = 0;

			memcpy(trial, keep, s->n);
			for (j = i; j < i + chunk && j < s->n; j++) {
				any |= trial[j];
				trial[j] = 0;
			}
			if (!any)
				continue;
			tries++;
			run_conn(s, next_conn++, trial, &r);
			if (!strcmp(r.cls, cls)) {
				memcpy(keep, trial, s->n);
				kept = 0;
				for (j = 0; j < s->n; j++)
					kept += keep[j];
			}
		}
	}
	printf("fuzz minimised to %d of %d steps in %d tries\n", kept, s->n,
	       tries);
	free(trial);
	return keep;
}

/* ---------------------------------------------------------------- main */

static void connect_ctl(void)
{
	uint64_t end = now_ms() + 30000;

	for (;;) {
		int fd = -1;

		fd = tcp_connect(o.addr, o.ctl, NULL, 2000);
		if (fd >= 0) {
			ctl_fd = fd;
			return;
		}
		if (now_ms() > end)
			die(1, "no control connection to %s:%s", o.addr, o.ctl);
	}
}

static int parse_args(int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (a[0] != '-' || a[1] != '-')
			break;
		if (!strcmp(a, "--help")) {
			fz_usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--minimise")) {
			o.minimise = 1;
			continue;
		} else if (!strcmp(a, "--verbose")) {
			o.verbose = 1;
			continue;
		} else if (!strcmp(a, "--debug")) {
			out_quiet = 0;	/* mpa-peer's own lines: every frame */
			continue;
		}
		if (!v)
			die(2, "%s needs an argument", a);
		i++;
		if (!strcmp(a, "--port"))
			o.port = v;
		else if (!strcmp(a, "--ctl"))
			o.ctl = v;
		else if (!strcmp(a, "--listen-addr"))
			o.laddr = v;
		else if (!strcmp(a, "--roles"))
			o.roles = (strstr(v, "init") ? 1 : 0) |
				  (strstr(v, "resp") ? 2 : 0);
		else if (!strcmp(a, "--seed"))
			o.seed = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--frames"))
			o.frames = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--seconds"))
			o.secs = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--conns"))
			o.conns = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--first"))
			o.first = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--max-steps"))
			o.max_steps = strtoull(v, NULL, 0);
		else if (!strcmp(a, "--out"))
			o.outdir = v;
		else if (!strcmp(a, "--replay"))
			o.replay = v;
		else
			die(2, "unknown option %s", a);
	}
	if (i != argc - 1) {
		fz_usage(stderr);
		exit(2);
	}
	o.addr = argv[i];
	if (!o.roles || ((o.roles & 2) && !o.laddr)) {
		if (o.roles == 2 || !o.roles)
			die(2, "--roles resp needs --listen-addr");
		o.roles = 1;
	}
	if (!o.max_steps || o.max_steps > MAX_STEPS - 8)
		die(2, "--max-steps: 1..%d", MAX_STEPS - 8);
	return 0;
}

static int replay(void)
{
	static struct stream s;
	struct result r;

	read_replay(o.replay, &s);
	run_conn(&s, o.first, NULL, &r);
	printf("replay %s frames=%" PRIu64 " outcome=%s result=%s%s%s\n",
	       o.replay, r.frames, r.outcome, r.cls[0] ? "FAIL " : "ok",
	       r.cls, r.cls[0] ? "" : "");
	if (r.cls[0]) {
		printf("replay detail: %s\n", r.detail);
		if (o.minimise) {
			char path[4096], *keep;

			next_conn = o.first + 1;
			keep = minimise(&s, r.cls);
			snprintf(path, sizeof(path), "%s/%s.min", o.outdir,
				 strrchr(o.replay, '/') ? strrchr(o.replay, '/') + 1 :
				 o.replay);
			write_replay(path, &s, o.first, keep, &r);
			printf("replay minimised: %s\n", path);
			free(keep);
		}
	}
	ctl_send("q");
	return r.cls[0] ? 1 : 0;
}

int main(int argc, char **argv)
{
	static struct stream s;
	uint64_t t0, last = 0, frames = 0, conns = 0, fails = 0;
	char path[4096];
	unsigned long c;
	int i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	crc32c_init();
	out_quiet = 1;
	rx_hook = on_rx;
	S.fd = -1;
	o.seed = now_ms() * 0x2545f4914f6cdd1dull;
	parse_args(argc, argv);
	if (!o.outdir)
		o.outdir = ".";
	connect_ctl();
	if (o.roles & 2) {
		char port[16];

		snprintf(port, sizeof(port), "%u", atoi(o.port) + 2);
		lfd = tcp_listen(o.laddr, port);
	}
	if (o.replay)
		return replay();

	printf("fuzz seed=0x%" PRIx64 " frames=%" PRIu64 " seconds=%" PRIu64
	       " roles=%s%s target=%s:%s\n", o.seed, o.frames, o.secs,
	       o.roles & 1 ? "init" : "", o.roles & 2 ? ",resp" : "",
	       o.addr, o.port);
	t0 = now_ms();
	next_conn = o.first + (1ull << 32);	/* minimisation runs */
	for (c = o.first; conns < o.conns && frames < o.frames; c++) {
		struct result r;
		uint64_t t = now_ms();

		if (o.secs && t - t0 >= o.secs * 1000)
			break;
		stream_init(&s, c);
		run_conn(&s, c, NULL, &r);
		conns++;
		frames += r.frames;
		count_outcome(first_mut(&s), r.outcome);
		if (o.verbose)
			printf("conn %lu role=%d rev=%d crc=%d p2p=%d rtr=%s split=%d steps=%d frames=%" PRIu64 " mut=%s outcome=%s%s%s\n",
			       c, s.role, s.rev, s.crc, s.p2p, s.rtr, s.split,
			       s.n, r.frames, first_mut(&s) ? first_mut(&s) : "none",
			       r.outcome, r.cls[0] ? " FAIL " : "", r.cls);
		if (r.cls[0]) {
			char *keep = NULL;

			fails++;
			printf("fuzz FAIL conn=%lu class=%s: %s (outcome %s, first mutation %s)\n",
			       c, r.cls, r.detail, r.outcome,
			       first_mut(&s) ? first_mut(&s) : "none");
			snprintf(path, sizeof(path), "%s/replay-%016" PRIx64 "-%lu.fz",
				 o.outdir, o.seed, c);
			write_replay(path, &s, c, NULL, &r);
			if (o.minimise && strcmp(r.cls, "handshake") &&
			    strcmp(r.cls, "target_noconn")) {
				keep = minimise(&s, r.cls);
				snprintf(path, sizeof(path),
					 "%s/replay-%016" PRIx64 "-%lu.min.fz",
					 o.outdir, o.seed, c);
				write_replay(path, &s, c, keep, &r);
				free(keep);
			}
			printf("fuzz replay %s\n", path);
		}
		stream_free(&s);
		if (now_ms() - last >= 10000) {
			double el = (now_ms() - t0) / 1000.0;

			last = now_ms();
			printf("fuzz progress %.0fs conns=%" PRIu64 " frames=%" PRIu64
			       " (%.0f/s) outcomes=%d fails=%" PRIu64 "\n", el, conns,
			       frames, frames / (el > 0 ? el : 1), noutcomes, fails);
		}
	}
	ctl_send("q");
	{
		double el = (now_ms() - t0) / 1000.0;

		qsort(outcomes, noutcomes, sizeof(outcomes[0]), cmp_outcome);
		for (i = 0; i < noutcomes; i++)
			printf("fuzz outcome %-60s %" PRIu64 "\n", outcomes[i].key,
			       outcomes[i].count);
		printf("fuzz done seed=0x%" PRIx64 " conns=%" PRIu64 " frames=%" PRIu64
		       " seconds=%.1f frames_per_s=%.0f distinct_outcomes=%d fails=%" PRIu64 "\n",
		       o.seed, conns, frames, el, frames / (el > 0 ? el : 1),
		       noutcomes, fails);
	}
	return fails ? 1 : 0;
}
