// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * imm - RFC 7306 Immediate Data / RDMA Write with Immediate, single VM.
 *
 * The receiver (server, SIWX_ADDR0) and the sender (client, bound to
 * SIWX_ADDR1) connect through rdma_cm; both live in this process, so every
 * write is checked byte for byte against what was posted. The expected
 * results are those of Documentation/rfc7306.md and the ABI of
 * /work/brief/siw-abi.h:
 *   - IBV_WR_RDMA_WRITE_WITH_IMM places the data, then consumes one
 *     receive WQE (or SRQ entry) that completes with
 *     IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_WITH_IMM and the immediate value
 *     (network order, as posted); nothing is placed in the receive buffer;
 *   - byte_len is the length of the RDMA Write message received right
 *     before the Immediate Data message, 0 if any other inbound message
 *     (Send, Immediate Data, Read Request) came in between: its own length
 *     for every write with immediate, 0 for a zero-length one unless a
 *     plain RDMA Write directly precedes it;
 *   - IBV_SEND_SOLICITED makes it an Immediate Data with SE that fires a
 *     solicited-only CQ notification;
 *   - at most 5 SGEs or 64 inline bytes (EINVAL), IBV_WR_SEND_WITH_IMM is
 *     refused with EOPNOTSUPP;
 *   - an Immediate Data message without a receive is refused with a
 *     Terminate: both QPs go to error, nothing more is placed.
 *
 *   imm.sizes                fixed lengths x SGE counts x inline
 *   imm.random               random lengths/SGEs/immediates, pipelined
 *   imm.ordering_chain       Sends, writes with immediate (zero-length
 *                            too), plain Writes and Reads in one long
 *                            chain, solicited or not: order, values, the
 *                            byte_len rule
 *   imm.solicited_events     solicited-only CQ notification
 *   imm.srq_consumption      two QPs on one SRQ, SRQ limit event
 *   imm.qp_ex_write_imm      ibv_wr_rdma_write_imm (ibv_qp_ex)
 *   imm.cq_ex_read_imm       receiver CQ from ibv_create_cq_ex
 *   imm.siwdv_imm64          64-bit immediate through <infiniband/siwdv.h>
 *   imm.post_errors          refused posts, the QP keeps working
 *   imm.qp_ex_post_errors    the same through ibv_wr_*
 *   imm.flush_exactly_once   WRs flushed by a refused immediate in
 *                            every state complete exactly once, in order
 *   siwdv_device_caps        siwdv_query_device() reports the limits
 *   norecv.*.terminate       Immediate Data without a receive: Terminate,
 *                            both QPs in error, WRs behind it flushed,
 *                            nothing more placed
 *   norecv.*.posts_after_error  WRs posted after that: no success, no hang
 *
 * Environment: SIWX_ADDR0/1, SIWX_SEED (repeat a run), SIWX_IMM_RANDOM
 * (writes in imm.random, 160), SIWX_IMM_CHAIN (posts in
 * imm.ordering_chain, 300), SIWX_IMM_FLUSH_ROUNDS (connections in
 * imm.flush_exactly_once, 12).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "siwx_test.h"
#include "imm_common.h"

#define WAIT_MS		15000
#define QUIET_MS	1500	/* "nothing happens" windows */
#define REGION		(65536 + 4096)	/* source region of one write */
#define TSLOT		(65536 + RU_GUARD)	/* target slot of one write */
#define RSLOT		256	/* receive slot */
#define RPOST		192	/* length posted for a receive slot */
#define MAXB		16

/*
 * Bytes [off, off+n) of p against positions off.. of the stream of seed
 * (ru_check() compares from position 0). Index of the first difference
 * relative to p + off, or -1.
 */
static long check_at(const uint8_t *p, size_t off, size_t n, uint64_t seed)
{
	uint8_t *ref = malloc(off + n + 1);
	long at;

	if (!ref)
		return 0;
	ru_fill(ref, off + n, seed);
	at = ru_first_diff(p + off, ref + off, n);
	free(ref);
	return at;
}

static void cfg_client(struct ru_caps *c)
{
	ru_caps_default(c);
	c->max_send_wr = 512;
	c->max_send_sge = IM_MAX_SGE_IMM;
	c->max_inline = IM_MAX_INLINE_IMM;
	c->max_recv_wr = 16;
}

static void cfg_server(struct ru_caps *c)
{
	ru_caps_default(c);
	c->max_recv_wr = 512;
	c->max_send_wr = 16;
}

/* ---- one write with immediate and everything needed to check it ------- */

struct wimm {
	uint32_t len;
	int nsge;
	int inl;
	unsigned int flags;	/* IBV_SEND_* */
	__be32 imm;
	uint8_t *src;		/* REGION bytes of client memory */
	uint32_t lkey;
	struct ibv_sge sg[IM_MAX_SGE_IMM + 1];
	uint8_t *dst;		/* TSLOT bytes of server memory */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t s_old, s_guard;
	uint8_t *expect;	/* len bytes */
	uint8_t *rslot;		/* RSLOT bytes (receive buffer) or NULL */
	uint32_t rlen;		/* length posted */
	uint32_t rlkey;
	uint64_t s_poison;
	uint64_t recv_id, send_id;
	uint32_t want_blen;
};

/*
 * Lay out w->len bytes in w->nsge pieces with random gaps in the source
 * region (filled with a fresh pattern), remember the gathered bytes,
 * give the target its old contents and poison the receive slot.
 */
static void wimm_prepare(uint64_t *rng, struct wimm *w)
{
	uint32_t cut[IM_MAX_SGE_IMM + 2], piece[IM_MAX_SGE_IMM + 1];
	uint32_t cur = 0, i, j;
	int n = w->nsge;

	ru_fill(w->src, REGION, ru_rng(rng));
	w->s_old = ru_rng(rng);
	w->s_guard = ru_rng(rng);
	ru_fill(w->dst, w->len, w->s_old);
	ru_fill(w->dst + w->len, RU_GUARD, w->s_guard);
	if (w->rslot) {
		w->s_poison = ru_rng(rng);
		ru_fill(w->rslot, RSLOT, w->s_poison);
	}
	w->imm = im_rand_imm(rng);
	w->want_blen = w->len;
	free(w->expect);
	w->expect = malloc(w->len ? w->len : 1);

	/* n pieces, none empty when len >= n */
	for (i = 0; i < (uint32_t)n; i++)
		piece[i] = w->len >= (uint32_t)n ? 1 : i < w->len;
	if (w->len >= (uint32_t)n && n > 0) {
		uint32_t left = w->len - n;

		for (i = 0; i + 1 < (uint32_t)n; i++) {
			uint32_t x = ru_rand(rng, left + 1);

			piece[i] += x;
			left -= x;
		}
		piece[n - 1] += left;
	}
	for (i = 0, j = 0; i < (uint32_t)n; i++) {
		cut[i] = j;
		j += piece[i];
	}
	cut[n > 0 ? n : 0] = j;
	for (i = 0; i < (uint32_t)n; i++) {
		uint32_t plen = cut[i + 1] - cut[i];
		uint32_t gap = ru_rand(rng, 512);

		cur += gap;
		w->sg[i].addr = (uintptr_t)(w->src + cur);
		w->sg[i].length = plen;
		w->sg[i].lkey = w->lkey;
		memcpy(w->expect + cut[i], w->src + cur, plen);
		cur += plen;
	}
}

static int wimm_post(struct ru_ep *cli, struct wimm *w)
{
	int rc = ru_post_sge(cli->qp, IBV_WR_RDMA_WRITE_WITH_IMM, w->sg, w->nsge,
			 w->raddr, w->rkey, w->imm,
			 w->flags | (w->inl ? IBV_SEND_INLINE : 0), w->send_id);

	/* inline data is copied at post time: scribble right away */
	if (!rc && w->inl)
		memset(w->src, 0xee, REGION);
	return rc;
}

static const char *wimm_str(const struct wimm *w, char *buf, size_t n)
{
	snprintf(buf, n, "write with imm 0x%08x: %u bytes in %d SGEs%s%s, "
		 "receive of %u bytes", be32toh(w->imm), w->len, w->nsge,
		 w->inl ? " inline" : "",
		 w->flags & IBV_SEND_SOLICITED ? " solicited" : "", w->rlen);
	return buf;
}

/* The receive completion of w, the data placed, nothing else touched. */
static void wimm_check(struct __test_metadata *_metadata, const struct wimm *w,
		       const struct ru_wc *rw)
{
	char b1[160], b2[200];
	long at;

	wimm_str(w, b1, sizeof(b1));
	ru_wc_str(rw, b2, sizeof(b2));
	ASSERT_EQ(IBV_WC_SUCCESS, (int)rw->status) TH_LOG("%s: %s", b1, b2);
	ASSERT_EQ(w->recv_id, rw->wr_id) TH_LOG("%s: %s", b1, b2);
	ASSERT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, (int)rw->opcode)
		TH_LOG("%s: %s", b1, b2);
	ASSERT_TRUE(!!(rw->wc_flags & IBV_WC_WITH_IMM)) TH_LOG("%s: %s", b1, b2);
	ASSERT_EQ(be32toh(w->imm), be32toh(rw->imm)) TH_LOG("%s: %s", b1, b2);
	ASSERT_EQ(w->want_blen, rw->byte_len) TH_LOG("%s: %s", b1, b2);
	at = ru_first_diff(w->dst, w->expect, w->len);
	ASSERT_EQ(-1, at) TH_LOG("%s: target differs at byte %ld", b1, at);
	at = ru_check(w->dst + w->len, RU_GUARD, w->s_guard);
	ASSERT_EQ(-1, at) TH_LOG("%s: byte %ld after the target changed", b1, at);
	if (w->rslot) {
		at = ru_check(w->rslot, RSLOT, w->s_poison);
		ASSERT_EQ(-1, at)
			TH_LOG("%s: receive buffer changed at byte %ld", b1, at);
	}
}

static void wimm_free(struct wimm *w)
{
	free(w->expect);
	w->expect = NULL;
}

/* ---- fixture ----------------------------------------------------------- */

FIXTURE(imm) {
	struct ru_listener l;
	struct ru_ep cli, srv, cli2, srv2;
	struct ru_buf b[MAXB];
	struct ibv_pd *spd;
	struct ibv_srq *ssrq;
	uint64_t seed, rng;
};

FIXTURE_SETUP(imm)
{
	self->seed = ru_random_seed();
	self->rng = self->seed;
	printf("# seed 0x%llx (SIWX_SEED=0x%llx repeats it)\n",
	       (unsigned long long)self->seed, (unsigned long long)self->seed);
	RU_ASSERT_OK(ru_listen(&self->l, ru_addr0(), 0, 8));
}

FIXTURE_TEARDOWN(imm)
{
	int i;

	for (i = 0; i < MAXB; i++)
		ru_buf_free(&self->b[i]);
	ru_ep_close(&self->cli);
	ru_ep_close(&self->srv);
	ru_ep_close(&self->cli2);
	ru_ep_close(&self->srv2);
	if (self->ssrq)
		ibv_destroy_srq(self->ssrq);
	if (self->spd)
		ibv_dealloc_pd(self->spd);
	ru_listener_close(&self->l);
}

/* Nothing more on a CQ for QUIET_MS. */
static void assert_cq_quiet(struct __test_metadata *_metadata,
			    struct ru_ep *m, int recv, const char *what)
{
	struct ru_wc w;
	char buf[200];
	int rc;

	rc = recv ? ru_poll_recv(m, &w, QUIET_MS) : ru_poll_send(m, &w, QUIET_MS);
	ASSERT_EQ(0, rc) TH_LOG("%s: unexpected completion %s", what,
				rc == 1 ? ru_wc_str(&w, buf, sizeof(buf)) :
					  ru_errmsg());
}

/* Sender's completion of a write with immediate. */
static void expect_send_ok(struct __test_metadata *_metadata, struct ru_ep *cli,
			   uint64_t wr_id, enum ibv_wc_opcode op)
{
	struct ru_wc w;
	char buf[200];

	ASSERT_EQ(1, ru_poll_send(cli, &w, WAIT_MS))
		TH_LOG("wr %llu: %s", (unsigned long long)wr_id, ru_errmsg());
	ru_wc_str(&w, buf, sizeof(buf));
	ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status) TH_LOG("%s", buf);
	ASSERT_EQ(wr_id, w.wr_id) TH_LOG("%s", buf);
	ASSERT_EQ((int)op, (int)w.opcode) TH_LOG("%s", buf);
}

/* Buffers of the write tests: b[0] client sources, b[1] server targets,
 * b[2] server receive slots. */
static void alloc_wimm_bufs(struct __test_metadata *_metadata,
			    FIXTURE_DATA(imm) *self, struct ru_ep *cli,
			    struct ru_ep *srv, int n)
{
	RU_ASSERT_OK(ru_buf_alloc(&self->b[0], cli->pd, (size_t)n * REGION,
				  IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[1], srv->pd, (size_t)n * TSLOT,
				  IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[2], srv->pd, (size_t)n * RSLOT,
				  IM_ACC));
}

static void wimm_bind(FIXTURE_DATA(imm) *self, struct wimm *w, int i)
{
	w->src = self->b[0].addr + (size_t)i * REGION;
	w->lkey = self->b[0].mr->lkey;
	w->dst = self->b[1].addr + (size_t)i * TSLOT;
	w->raddr = (uintptr_t)w->dst;
	w->rkey = self->b[1].mr->rkey;
	w->rslot = self->b[2].addr + (size_t)i * RSLOT;
	w->rlkey = self->b[2].mr->lkey;
	if (!w->rlen)
		w->rlen = RPOST;
}

/* wimm_post_recv() needs an MR: the receive slots' */
static int wimm_post_recv_mr(struct ru_ep *srv, struct ibv_mr *mr,
			     struct wimm *w)
{
	return ru_post_recv_mr(srv->qp, srv->srq, mr, w->rslot, w->rlen,
				w->recv_id);
}

/* ---- correctness ---------------------------------------------------------- */

static const struct size_case {
	uint32_t len;
	int nsge;
	int inl;
	uint32_t rlen;
} size_cases[] = {
	{ 0, 0, 0, RPOST },	/* no SGE at all */
	{ 0, 1, 0, RPOST },
	{ 0, 1, 0, 1 },		/* a 1-byte receive takes an immediate */
	{ 1, 1, 0, RPOST },
	{ 1, 1, 0, 1 },
	{ 4095, 1, 0, RPOST },
	{ 4096, 1, 0, RPOST },
	{ 65536, 1, 0, RPOST },
	{ 4096, 2, 0, RPOST },
	{ 4095, 3, 0, RPOST },
	{ 65536, 5, 0, RPOST },
	{ 5, 5, 0, RPOST },
	{ 7, 4, 0, 1 },
	{ 0, 1, 1, RPOST },
	{ 1, 1, 1, RPOST },
	{ 63, 2, 1, RPOST },
	{ 64, 1, 1, RPOST },
	{ 64, 5, 1, RPOST },
	{ 33, 3, 1, 1 },
};

#define NSIZES (int)(sizeof(size_cases) / sizeof(size_cases[0]))

TEST_F_TIMEOUT(imm, sizes, 180)
{
	struct ru_caps cc, sc;
	struct wimm w;
	struct ru_wc rw;
	char buf[160];
	int i;

	cfg_client(&cc);
	cfg_server(&sc);
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	alloc_wimm_bufs(_metadata, self, &self->cli, &self->srv, 1);
	memset(&w, 0, sizeof(w));
	for (i = 0; i < NSIZES; i++) {
		const struct size_case *c = &size_cases[i];

		w.len = c->len;
		w.nsge = c->nsge;
		w.inl = c->inl;
		w.rlen = c->rlen;
		w.flags = IBV_SEND_SIGNALED;
		w.recv_id = 100 + i;
		w.send_id = 200 + i;
		wimm_bind(self, &w, 0);
		wimm_prepare(&self->rng, &w);
		printf("# %s\n", wimm_str(&w, buf, sizeof(buf)));
		RU_ASSERT_OK(wimm_post_recv_mr(&self->srv, self->b[2].mr, &w));
		RU_ASSERT_OK(wimm_post(&self->cli, &w));
		expect_send_ok(_metadata, &self->cli, w.send_id,
			       IBV_WC_RDMA_WRITE);
		ASSERT_EQ(1, ru_poll_recv(&self->srv, &rw, WAIT_MS))
			TH_LOG("%s: %s", buf, ru_errmsg());
		wimm_check(_metadata, &w, &rw);
	}
	wimm_free(&w);
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
	assert_cq_quiet(_metadata, &self->cli, 0, "sender");
}

#define BATCH 8

TEST_F_TIMEOUT(imm, random, 300)
{
	int iters = (int)ru_env_long("SIWX_IMM_RANDOM", 160);
	struct wimm w[BATCH];
	struct ru_caps cc, sc;
	struct ru_wc rw;
	char buf[160];
	int done = 0, i, n, nzero = 0, ninl = 0, nse = 0, nmulti = 0;

	cfg_client(&cc);
	cfg_server(&sc);
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	alloc_wimm_bufs(_metadata, self, &self->cli, &self->srv, BATCH);
	memset(w, 0, sizeof(w));
	while (done < iters) {
		n = 1 + (int)ru_rand(&self->rng, BATCH);
		if (n > iters - done)
			n = iters - done;
		for (i = 0; i < n; i++) {
			struct wimm *x = &w[i];
			uint32_t r = ru_rand(&self->rng, 4);

			x->len = r == 0 ? 0 : r == 1 ? 1 + ru_rand(&self->rng, 64) :
				 r == 2 ? 65 + ru_rand(&self->rng, 8192 - 64) :
				 8193 + ru_rand(&self->rng, 65536 - 8192);
			x->nsge = 1 + (int)ru_rand(&self->rng, IM_MAX_SGE_IMM);
			if (x->len == 0)
				x->nsge = (int)ru_rand(&self->rng, 2);
			else if ((uint32_t)x->nsge > x->len)
				x->nsge = (int)x->len;
			x->inl = x->len <= IM_MAX_INLINE_IMM &&
				 ru_rand(&self->rng, 3) == 0;
			x->flags = IBV_SEND_SIGNALED |
				(ru_rand(&self->rng, 4) == 0 ? IBV_SEND_SOLICITED : 0);
			x->rlen = ru_rand(&self->rng, 4) == 0 ? 1 : RPOST;
			x->recv_id = 1000000 + done + i;
			x->send_id = 2000000 + done + i;
			wimm_bind(self, x, i);
			wimm_prepare(&self->rng, x);
			nzero += x->len == 0;
			ninl += x->inl;
			nse += !!(x->flags & IBV_SEND_SOLICITED);
			nmulti += x->nsge > 1;
			RU_ASSERT_OK(wimm_post_recv_mr(&self->srv, self->b[2].mr, x));
		}
		for (i = 0; i < n; i++)
			RU_ASSERT_OK(wimm_post(&self->cli, &w[i]));
		for (i = 0; i < n; i++)
			expect_send_ok(_metadata, &self->cli, w[i].send_id,
				       IBV_WC_RDMA_WRITE);
		for (i = 0; i < n; i++) {
			ASSERT_EQ(1, ru_poll_recv(&self->srv, &rw, WAIT_MS))
				TH_LOG("%s: %s", wimm_str(&w[i], buf, sizeof(buf)),
				       ru_errmsg());
			wimm_check(_metadata, &w[i], &rw);
		}
		done += n;
	}
	printf("# %d writes with immediate: %d zero-length, %d inline, %d "
	       "multi-SGE, %d solicited\n", done, nzero, ninl, nmulti, nse);
	for (i = 0; i < BATCH; i++)
		wimm_free(&w[i]);
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
}

/* ---- ordering ------------------------------------------------------------- */

enum okind { K_SEND, K_WIMM, K_WRITE, K_READ };

struct cop {
	enum okind k;
	uint32_t len;
	int se;
	__be32 imm;
	uint64_t seed;
	int slot;		/* receive slot, -1 if none */
	uint32_t want_blen;
};

#define CREG	8192			/* client region per op */
#define CTS	(8192 + RU_GUARD)	/* server target per op */
#define CRS	(2048 + RU_GUARD)	/* receive slot */

static const char *okind_str(const struct cop *o)
{
	switch (o->k) {
	case K_SEND: return o->se ? "Send+SE" : "Send";
	case K_WIMM: return o->se ? "WriteImm+SE" : "WriteImm";
	case K_WRITE: return "Write";
	default: return "Read";
	}
}

TEST_F_TIMEOUT(imm, ordering_chain, 300)
{
	int n = (int)ru_env_long("SIWX_IMM_CHAIN", 300), i, nrecv = 0, got;
	uint64_t poison = ru_rng(&self->rng), s_old = ru_rng(&self->rng);
	uint64_t s_rsrc = ru_rng(&self->rng);
	struct ru_buf *csrc = &self->b[0], *stgt = &self->b[1];
	struct ru_buf *srecv = &self->b[2];
	int cnt[4] = { 0 }, nzero = 0, nzero_after_write = 0;
	struct ru_caps cc, sc;
	struct cop *ops;
	uint8_t *seen;
	char buf[200];

	if (n > 500)
		n = 500;
	ops = calloc(n, sizeof(*ops));
	seen = calloc(n, 1);
	ASSERT_TRUE(ops && seen);
	cfg_client(&cc);
	cfg_server(&sc);
	cc.max_send_wr = 512;
	sc.max_recv_wr = 512;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(csrc, self->cli.pd, (size_t)n * CREG, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(stgt, self->srv.pd, (size_t)n * CTS, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(srecv, self->srv.pd, (size_t)n * CRS, IM_ACC));

	/* the chain */
	for (i = 0; i < n; i++) {
		struct cop *o = &ops[i];
		uint32_t r = ru_rand(&self->rng, 10);

		o->k = r < 3 ? K_SEND : r < 7 ? K_WIMM : r < 9 ? K_WRITE : K_READ;
		o->seed = ru_rng(&self->rng);
		o->slot = -1;
		o->se = (o->k == K_SEND || o->k == K_WIMM) &&
			ru_rand(&self->rng, 2);
		switch (o->k) {
		case K_SEND:
			o->len = ru_rand(&self->rng, 4) ? ru_rand(&self->rng, 2049) : 0;
			break;
		case K_WIMM:
			o->len = ru_rand(&self->rng, 3) ? 1 + ru_rand(&self->rng, 8192) : 0;
			o->imm = im_rand_imm(&self->rng);
			break;
		case K_WRITE:	/* zero-length plain Writes: see basic.xfer */
			o->len = 1 + ru_rand(&self->rng, 4096);
			break;
		case K_READ:
			o->len = 1 + ru_rand(&self->rng, 4096);
			break;
		}
		if (o->k == K_SEND || o->k == K_WIMM)
			o->slot = nrecv++;
		if (o->k == K_WIMM) {
			/* the byte_len rule of rfc7306.md */
			o->want_blen = o->len;
			if (!o->len) {
				nzero++;
				if (i > 0 && ops[i - 1].k == K_WRITE) {
					o->want_blen = ops[i - 1].len;
					nzero_after_write++;
				}
			}
		}
		cnt[o->k]++;
		if (o->k == K_READ) {
			/* the server's target slot is the Read source */
			ru_fill(stgt->addr + (size_t)i * CTS, CTS, s_rsrc + i);
			ru_fill(csrc->addr + (size_t)i * CREG, CREG, ~o->seed);
		} else {
			ru_fill(csrc->addr + (size_t)i * CREG, CREG, o->seed);
			ru_fill(stgt->addr + (size_t)i * CTS, CTS, s_old + i);
		}
	}
	printf("# chain of %d: %d Sends, %d writes with immediate (%d zero-length, "
	       "%d of them right after a plain Write), %d Writes, %d Reads\n",
	       n, cnt[K_SEND], cnt[K_WIMM], nzero, nzero_after_write,
	       cnt[K_WRITE], cnt[K_READ]);
	for (i = 0; i < nrecv; i++) {
		ru_fill(srecv->addr + (size_t)i * CRS, CRS, poison + i);
		RU_ASSERT_OK(ru_post_recv_mr(self->srv.qp, NULL, srecv->mr,
					      srecv->addr + (size_t)i * CRS,
					      2048, 10000 + i));
	}
	for (i = 0; i < n; i++) {
		struct cop *o = &ops[i];
		struct ibv_sge sg = { .addr = (uintptr_t)(csrc->addr + (size_t)i * CREG),
				      .length = o->len, .lkey = csrc->mr->lkey };
		uint64_t raddr = (uintptr_t)(stgt->addr + (size_t)i * CTS);
		unsigned int fl = IBV_SEND_SIGNALED | (o->se ? IBV_SEND_SOLICITED : 0);
		static const enum ibv_wr_opcode wop[] = {
			[K_SEND] = IBV_WR_SEND, [K_WIMM] = IBV_WR_RDMA_WRITE_WITH_IMM,
			[K_WRITE] = IBV_WR_RDMA_WRITE, [K_READ] = IBV_WR_RDMA_READ,
		};

		RU_ASSERT_OK(ru_post_sge(self->cli.qp, wop[o->k], &sg, 1, raddr,
				     stgt->mr->rkey, o->imm, fl, i));
	}

	/* sender: every WR once, all successful (Reads may complete late) */
	for (i = 0; i < n; i++) {
		struct ru_wc w;

		ASSERT_EQ(1, ru_poll_send(&self->cli, &w, 60000))
			TH_LOG("sender: %d of %d completions: %s", i, n, ru_errmsg());
		ru_wc_str(&w, buf, sizeof(buf));
		ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status) TH_LOG("sender: %s", buf);
		ASSERT_LT(w.wr_id, (uint64_t)n) TH_LOG("sender: %s", buf);
		ASSERT_EQ(0, seen[w.wr_id]) TH_LOG("sender: twice: %s", buf);
		seen[w.wr_id] = 1;
	}
	/* receiver: exactly the posted order */
	got = 0;
	for (i = 0; i < n; i++) {
		struct cop *o = &ops[i];
		uint8_t *slot;
		struct ru_wc w;
		long at;

		if (o->slot < 0)
			continue;
		slot = srecv->addr + (size_t)o->slot * CRS;
		ASSERT_EQ(1, ru_poll_recv(&self->srv, &w, 60000))
			TH_LOG("receiver: %d of %d completions: %s", got, nrecv,
			       ru_errmsg());
		got++;
		ru_wc_str(&w, buf, sizeof(buf));
		ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status)
			TH_LOG("op %d (%s, %u bytes): %s", i, okind_str(o), o->len, buf);
		ASSERT_EQ((uint64_t)(10000 + o->slot), w.wr_id)
			TH_LOG("op %d (%s, %u bytes): %s", i, okind_str(o), o->len, buf);
		if (o->k == K_SEND) {
			ASSERT_EQ(IBV_WC_RECV, (int)w.opcode)
				TH_LOG("op %d (%s, %u bytes): %s", i, okind_str(o),
				       o->len, buf);
			ASSERT_FALSE(!!(w.wc_flags & IBV_WC_WITH_IMM))
				TH_LOG("op %d (%s): %s", i, okind_str(o), buf);
			ASSERT_EQ(o->len, w.byte_len)
				TH_LOG("op %d (%s): %s", i, okind_str(o), buf);
			at = ru_check(slot, o->len, o->seed);
			ASSERT_EQ(-1, at) TH_LOG("op %d (%s, %u bytes): data differs "
						 "at byte %ld", i, okind_str(o),
						 o->len, at);
			at = check_at(slot, o->len, CRS - o->len, poison + o->slot);
			ASSERT_EQ(-1, at) TH_LOG("op %d (%s): receive slot changed "
						 "after the message, byte %ld", i,
						 okind_str(o), at);
		} else {
			ASSERT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, (int)w.opcode)
				TH_LOG("op %d (%s, %u bytes): %s", i, okind_str(o),
				       o->len, buf);
			ASSERT_TRUE(!!(w.wc_flags & IBV_WC_WITH_IMM))
				TH_LOG("op %d (%s): %s", i, okind_str(o), buf);
			ASSERT_EQ(be32toh(o->imm), be32toh(w.imm))
				TH_LOG("op %d (%s): %s", i, okind_str(o), buf);
			ASSERT_EQ(o->want_blen, w.byte_len)
				TH_LOG("op %d (%s, %u bytes, after %s): %s", i,
				       okind_str(o), o->len,
				       i ? okind_str(&ops[i - 1]) : "nothing", buf);
			at = ru_check(slot, CRS, poison + o->slot);
			ASSERT_EQ(-1, at) TH_LOG("op %d (%s): receive buffer changed "
						 "at byte %ld", i, okind_str(o), at);
		}
	}
	/* memory: every Write and write with immediate placed, nothing more */
	for (i = 0; i < n; i++) {
		struct cop *o = &ops[i];
		uint8_t *t = stgt->addr + (size_t)i * CTS;
		long at;

		if (o->k == K_READ) {
			at = ru_check(csrc->addr + (size_t)i * CREG, o->len,
				      s_rsrc + i);
			ASSERT_EQ(-1, at) TH_LOG("op %d (Read %u bytes): sink "
						 "differs at byte %ld", i, o->len, at);
			continue;
		}
		if (o->k == K_SEND) {
			at = ru_check(t, CTS, s_old + i);
			ASSERT_EQ(-1, at) TH_LOG("op %d (Send): target slot changed", i);
			continue;
		}
		at = ru_check(t, o->len, o->seed);
		ASSERT_EQ(-1, at) TH_LOG("op %d (%s, %u bytes): placed data differs "
					 "at byte %ld", i, okind_str(o), o->len, at);
		at = check_at(t, o->len, CTS - o->len, s_old + i);
		ASSERT_EQ(-1, at) TH_LOG("op %d (%s, %u bytes): target changed "
					 "after the write", i, okind_str(o), o->len);
	}
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
	free(ops);
	free(seen);
}

/* ---- solicited events ------------------------------------------------------ */

/* 1: a CQ event for cq arrived (got and acked), 0: none in timeout_ms */
static int wait_cq_event(struct ibv_comp_channel *cc, struct ibv_cq *want,
			 int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	struct ibv_cq *cq;
	void *ctx;

	for (;;) {
		struct pollfd pfd = { .fd = cc->fd, .events = POLLIN };
		uint64_t now;

		if (ibv_get_cq_event(cc, &cq, &ctx) == 0) {
			ibv_ack_cq_events(cq, 1);
			return cq == want ? 1 : -EPROTO;
		}
		now = ru_now_ms();
		if (now >= deadline)
			return 0;
		poll(&pfd, 1, (int)(deadline - now));
	}
}

struct sol_step {
	const char *what;
	enum ibv_wr_opcode op;
	uint32_t len;
	int se;
	int arm;	/* 1 solicited only, 2 any, 0 keep */
	int wake;	/* the step must fire the channel */
};

static const struct sol_step sol_steps[] = {
	{ "Send, not solicited", IBV_WR_SEND, 64, 0, 1, 0 },
	{ "write with imm, not solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 100, 0, 0, 0 },
	{ "zero-length write with imm, not solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 0, 0 },
	{ "write with imm, solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 100, 1, 0, 1 },
	{ "zero-length write with imm, not solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 0, 0, 1, 0 },
	{ "zero-length write with imm, solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 0, 1, 0, 1 },
	{ "write with imm (4096), not solicited", IBV_WR_RDMA_WRITE_WITH_IMM, 4096, 0, 1, 0 },
	{ "Send, solicited (control)", IBV_WR_SEND, 16, 1, 0, 1 },
	{ "write with imm, not solicited, CQ armed for any completion",
	  IBV_WR_RDMA_WRITE_WITH_IMM, 8, 0, 2, 1 },
};

#define NSOL (int)(sizeof(sol_steps) / sizeof(sol_steps[0]))

TEST_F_TIMEOUT(imm, solicited_events, 180)
{
	struct ru_caps cc, sc;
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1], *rb = &self->b[2];
	int i, rc, bad = 0;

	cfg_client(&cc);
	cfg_server(&sc);
	sc.rcq_channel = 1;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(src, self->cli.pd, 4096, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(tgt, self->srv.pd, NSOL * 4096, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(rb, self->srv.pd, NSOL * RSLOT, IM_ACC));
	ru_fill(src->addr, 4096, self->seed);
	for (i = 0; i < NSOL; i++)
		RU_ASSERT_OK(ru_post_recv_mr(self->srv.qp, NULL, rb->mr,
					      rb->addr + i * RSLOT, RPOST, i));
	for (i = 0; i < NSOL; i++) {
		const struct sol_step *s = &sol_steps[i];
		struct ibv_sge sg = { .addr = (uintptr_t)src->addr,
				      .length = s->len, .lkey = src->mr->lkey };
		__be32 imm = im_rand_imm(&self->rng);
		struct ru_wc w;
		char buf[200];

		if (s->arm)
			ASSERT_EQ(0, ibv_req_notify_cq(self->srv.rcq, s->arm == 1))
				TH_LOG("ibv_req_notify_cq");
		printf("# step %d: %s (CQ %s)\n", i, s->what,
		       s->arm == 1 ? "re-armed, solicited only" :
		       s->arm == 2 ? "re-armed, any completion" : "still armed");
		RU_ASSERT_OK(ru_post_sge(self->cli.qp, s->op, &sg, 1,
				     (uintptr_t)tgt->addr + i * 4096,
				     tgt->mr->rkey, imm,
				     IBV_SEND_SIGNALED |
				     (s->se ? IBV_SEND_SOLICITED : 0), 100 + i));
		expect_send_ok(_metadata, &self->cli, 100 + i,
			       s->op == IBV_WR_SEND ? IBV_WC_SEND :
						      IBV_WC_RDMA_WRITE);
		if (s->wake) {
			rc = wait_cq_event(self->srv.cc, self->srv.rcq, WAIT_MS);
			if (rc != 1) {
				printf("# step %d (%s): no completion event within "
				       "%d ms\n", i, s->what, WAIT_MS);
				bad++;
			}
		}
		/* the completion is there either way */
		ASSERT_EQ(1, ru_poll_recv(&self->srv, &w, WAIT_MS))
			TH_LOG("step %d (%s): %s", i, s->what, ru_errmsg());
		ru_wc_str(&w, buf, sizeof(buf));
		ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status) TH_LOG("step %d: %s", i, buf);
		ASSERT_EQ((uint64_t)i, w.wr_id) TH_LOG("step %d: %s", i, buf);
		if (s->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			ASSERT_EQ(IBV_WC_RECV_RDMA_WITH_IMM, (int)w.opcode)
				TH_LOG("step %d: %s", i, buf);
			ASSERT_EQ(be32toh(imm), be32toh(w.imm))
				TH_LOG("step %d: %s", i, buf);
			ASSERT_EQ(s->len, w.byte_len) TH_LOG("step %d: %s", i, buf);
		}
		if (!s->wake) {
			rc = wait_cq_event(self->srv.cc, self->srv.rcq, QUIET_MS);
			if (rc) {
				printf("# step %d (%s) woke a CQ armed for solicited "
				       "completions only\n", i, s->what);
				bad++;
			}
		}
	}
	/* all steps run, so that the log shows every misbehaving one */
	ASSERT_EQ(0, bad) TH_LOG("%d of %d steps notified wrongly", bad, NSOL);
}

/* ---- SRQ ---------------------------------------------------------------------- */

#define SRQ_N		24
#define SRQ_LIMIT	4

TEST_F_TIMEOUT(imm, srq_consumption, 180)
{
	struct ibv_context *ctx = self->l.id->verbs;
	struct ru_ep *cl[2] = { &self->cli, &self->cli2 };
	struct ru_ep *sv[2] = { &self->srv, &self->srv2 };
	struct wimm w[SRQ_N];
	int count[2] = { 11, 9 }, total = 0, q, i, k, rc;
	int from_srq[SRQ_N];
	struct ibv_srq_init_attr sa;
	struct ibv_srq_attr at;
	struct ibv_async_event ev;
	struct ru_caps cc, sc;
	struct ru_wc rw;
	char buf[200];

	ASSERT_NE(NULL, ctx) TH_LOG("listener has no device");
	RU_ASSERT_OK(ru_async_nonblock(ctx));
	while (ru_get_async(ctx, &ev, 0) == 1)	/* stale ones */
		;
	self->spd = ibv_alloc_pd(ctx);
	ASSERT_NE(NULL, self->spd);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 64;
	sa.attr.max_sge = 1;
	self->ssrq = ibv_create_srq(self->spd, &sa);
	ASSERT_NE(NULL, self->ssrq) TH_LOG("ibv_create_srq: %s", strerror(errno));
	cfg_client(&cc);
	cfg_server(&sc);
	sc.shared_pd = self->spd;
	sc.shared_srq = self->ssrq;
	for (q = 0; q < 2; q++)
		RU_ASSERT_OK(ru_pair_open_on(&self->l, cl[q], sv[q], &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[0], self->cli.pd, REGION, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[3], self->cli2.pd, REGION, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[1], self->spd, (size_t)SRQ_N * TSLOT,
				  IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[2], self->spd, (size_t)SRQ_N * RSLOT,
				  IM_ACC));
	memset(w, 0, sizeof(w));
	/* SRQ_N entries, consumed in posting order whichever QP takes them */
	for (i = 0; i < SRQ_N; i++) {
		ru_fill(self->b[2].addr + i * RSLOT, RSLOT, self->seed + i);
		RU_ASSERT_OK(ru_post_recv_mr(NULL, self->ssrq, self->b[2].mr,
					      self->b[2].addr + i * RSLOT, RPOST,
					      5000 + i));
		from_srq[i] = 0;
	}
	memset(&at, 0, sizeof(at));
	at.srq_limit = SRQ_LIMIT;
	ASSERT_EQ(0, ibv_modify_srq(self->ssrq, &at, IBV_SRQ_LIMIT))
		TH_LOG("arming the SRQ limit");

	/* 11 + 9 = 20 of 24: 4 left, not below the limit */
	for (q = 0; q < 2; q++) {
		struct ru_buf *sb = q ? &self->b[3] : &self->b[0];

		for (k = 0; k < count[q]; k++) {
			struct wimm *x = &w[total + k];

			x->len = k % 3 == 0 ? 0 : 1 + ru_rand(&self->rng, 4096);
			x->nsge = 1;
			x->flags = IBV_SEND_SIGNALED;
			x->src = sb->addr;
			x->lkey = sb->mr->lkey;
			x->dst = self->b[1].addr + (size_t)(total + k) * TSLOT;
			x->raddr = (uintptr_t)x->dst;
			x->rkey = self->b[1].mr->rkey;
			x->send_id = total + k;
			wimm_prepare(&self->rng, x);
			RU_ASSERT_OK(wimm_post(cl[q], x));
			expect_send_ok(_metadata, cl[q], x->send_id,
				       IBV_WC_RDMA_WRITE);
		}
		total += count[q];
	}
	/* each server QP sees its writes, in order, each on a fresh entry */
	total = 0;
	for (q = 0; q < 2; q++) {
		for (k = 0; k < count[q]; k++) {
			struct wimm *x = &w[total + k];
			int e;

			ASSERT_EQ(1, ru_poll_recv(sv[q], &rw, WAIT_MS))
				TH_LOG("QP %d write %d: %s", q, k, ru_errmsg());
			ru_wc_str(&rw, buf, sizeof(buf));
			e = (int)rw.wr_id - 5000;
			ASSERT_TRUE(e >= 0 && e < SRQ_N) TH_LOG("QP %d: %s", q, buf);
			ASSERT_EQ(0, from_srq[e]) TH_LOG("entry used twice: %s", buf);
			from_srq[e] = 1;
			ASSERT_EQ(sv[q]->qp->qp_num, rw.qp_num) TH_LOG("%s", buf);
			x->recv_id = rw.wr_id;	/* the entry it took */
			x->rslot = self->b[2].addr + e * RSLOT;
			x->s_poison = self->seed + e;
			x->rlen = RPOST;
			wimm_check(_metadata, x, &rw);
		}
		total += count[q];
	}
	for (i = 0; i < SRQ_N; i++) {
		int used = from_srq[i];

		ASSERT_EQ(i < total, used)
			TH_LOG("SRQ entry %d %s", i, used ? "used" : "unused");
	}
	printf("# %d writes with immediate on 2 QPs took SRQ entries 0..%d\n",
	       total, total - 1);
	rc = ru_get_async(ctx, &ev, QUIET_MS);
	ASSERT_EQ(0, rc) TH_LOG("async event %s with %d entries left (limit %d)",
				ibv_event_type_str(ev.event_type), SRQ_N - total,
				SRQ_LIMIT);
	/* one more: 3 left < 4 */
	{
		struct wimm *x = &w[total];

		x->len = 0;
		x->nsge = 0;
		x->flags = IBV_SEND_SIGNALED;
		x->src = self->b[3].addr;
		x->lkey = self->b[3].mr->lkey;
		x->dst = self->b[1].addr + (size_t)total * TSLOT;
		x->raddr = (uintptr_t)x->dst;
		x->rkey = self->b[1].mr->rkey;
		x->send_id = 99;
		wimm_prepare(&self->rng, x);
		RU_ASSERT_OK(wimm_post(&self->cli2, x));
		expect_send_ok(_metadata, &self->cli2, 99, IBV_WC_RDMA_WRITE);
		ASSERT_EQ(1, ru_poll_recv(&self->srv2, &rw, WAIT_MS))
			TH_LOG("%s", ru_errmsg());
		ASSERT_EQ((uint64_t)(5000 + total), rw.wr_id);
		x->recv_id = rw.wr_id;
		x->rslot = self->b[2].addr + total * RSLOT;
		x->s_poison = self->seed + total;
		x->rlen = RPOST;
		wimm_check(_metadata, x, &rw);
		total++;
	}
	for (;;) {
		rc = ru_get_async(ctx, &ev, WAIT_MS);
		ASSERT_EQ(1, rc) TH_LOG("no SRQ limit event with %d entries left "
					"(limit %d)", SRQ_N - total, SRQ_LIMIT);
		printf("# async event %s\n", ibv_event_type_str(ev.event_type));
		if (ev.event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			break;
	}
	ASSERT_EQ(self->ssrq, ev.element.srq);
	for (i = 0; i < SRQ_N; i++)
		wimm_free(&w[i]);
}

/* ---- ibv_qp_ex / ibv_cq_ex ------------------------------------------------------ */

/* Post w (or several) through ibv_wr_*; returns ibv_wr_complete()'s result. */
static void qpx_add(struct ibv_qp_ex *qpx, struct wimm *w, int how)
{
	qpx->wr_id = w->send_id;
	qpx->wr_flags = w->flags | (w->inl ? IBV_SEND_INLINE : 0);
	ibv_wr_rdma_write_imm(qpx, w->rkey, w->raddr, w->imm);
	if (w->inl) {
		struct ibv_data_buf d[IM_MAX_SGE_IMM + 1];
		int i;

		for (i = 0; i < w->nsge; i++) {
			d[i].addr = (void *)(uintptr_t)w->sg[i].addr;
			d[i].length = w->sg[i].length;
		}
		ibv_wr_set_inline_data_list(qpx, w->nsge, d);
	} else if (w->nsge == 1 && how) {
		ibv_wr_set_sge(qpx, w->sg[0].lkey, w->sg[0].addr,
			       w->sg[0].length);
	} else {
		ibv_wr_set_sge_list(qpx, w->nsge, w->sg);
	}
}

TEST_F_TIMEOUT(imm, qp_ex_write_imm, 180)
{
	struct ru_caps cc, sc;
	struct wimm w[BATCH];
	struct ru_wc rw;
	char buf[160];
	int round, i, rc;

	cfg_client(&cc);
	cfg_server(&sc);
	cc.send_ops = IM_SEND_OPS;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	ASSERT_NE(NULL, self->cli.qpx);
	alloc_wimm_bufs(_metadata, self, &self->cli, &self->srv, BATCH);
	memset(w, 0, sizeof(w));
	for (round = 0; round < 6; round++) {
		int n = 1 + (round % 2 ? BATCH - 1 : (int)ru_rand(&self->rng, BATCH));

		for (i = 0; i < n; i++) {
			struct wimm *x = &w[i];
			uint32_t r = ru_rand(&self->rng, 4);

			x->len = r == 0 ? 0 : r == 1 ? 1 + ru_rand(&self->rng, 64) :
				 1 + ru_rand(&self->rng, 65536);
			x->nsge = x->len ? 1 + (int)ru_rand(&self->rng, IM_MAX_SGE_IMM) : 1;
			if ((uint32_t)x->nsge > x->len && x->len)
				x->nsge = (int)x->len;
			x->inl = x->len <= IM_MAX_INLINE_IMM && ru_rand(&self->rng, 2);
			x->flags = IBV_SEND_SIGNALED |
				   (ru_rand(&self->rng, 3) ? 0 : IBV_SEND_SOLICITED);
			x->recv_id = 100 * round + i;
			x->send_id = 1000 + 100 * round + i;
			wimm_bind(self, x, i);
			wimm_prepare(&self->rng, x);
			RU_ASSERT_OK(wimm_post_recv_mr(&self->srv, self->b[2].mr, x));
		}
		ibv_wr_start(self->cli.qpx);
		for (i = 0; i < n; i++)
			qpx_add(self->cli.qpx, &w[i], i & 1);
		rc = ibv_wr_complete(self->cli.qpx);
		ASSERT_EQ(0, rc) TH_LOG("round %d: ibv_wr_complete(%d WRs): %d (%s)",
					round, n, rc, strerror(rc < 0 ? -rc : rc));
		for (i = 0; i < n; i++)
			if (w[i].inl)
				memset(w[i].src, 0xee, REGION);
		for (i = 0; i < n; i++)
			expect_send_ok(_metadata, &self->cli, w[i].send_id,
				       IBV_WC_RDMA_WRITE);
		for (i = 0; i < n; i++) {
			ASSERT_EQ(1, ru_poll_recv(&self->srv, &rw, WAIT_MS))
				TH_LOG("%s: %s", wimm_str(&w[i], buf, sizeof(buf)),
				       ru_errmsg());
			wimm_check(_metadata, &w[i], &rw);
		}
	}
	/* a mixed batch: Send, write with imm, Write, write with imm (0) */
	{
		struct ibv_qp_ex *qpx = self->cli.qpx;
		uint8_t *s = self->b[0].addr, *rs = self->b[2].addr;
		uint8_t *t = self->b[1].addr;
		uint32_t lk = self->b[0].mr->lkey, rk = self->b[1].mr->rkey;
		__be32 i1 = im_rand_imm(&self->rng), i2 = im_rand_imm(&self->rng);
		static const int wantop[3] = { IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM,
					       IBV_WC_RECV_RDMA_WITH_IMM };

		ru_fill(s, 3000, self->seed ^ 1);
		memset(rs, 0x5a, 3 * RSLOT);
		memset(t, 0x5a, 3 * TSLOT);
		for (i = 0; i < 3; i++)
			RU_ASSERT_OK(ru_post_recv_mr(self->srv.qp, NULL,
						      self->b[2].mr, rs + i * RSLOT,
						      RPOST, 70 + i));
		ibv_wr_start(qpx);
		qpx->wr_id = 1;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(qpx);
		ibv_wr_set_sge(qpx, lk, (uintptr_t)s, 100);
		qpx->wr_id = 2;
		ibv_wr_rdma_write_imm(qpx, rk, (uintptr_t)t, i1);
		ibv_wr_set_sge(qpx, lk, (uintptr_t)s + 100, 1000);
		qpx->wr_id = 3;
		ibv_wr_rdma_write(qpx, rk, (uintptr_t)t + TSLOT);
		ibv_wr_set_sge(qpx, lk, (uintptr_t)s + 1100, 1900);
		qpx->wr_id = 4;
		ibv_wr_rdma_write_imm(qpx, rk, (uintptr_t)t + 2 * TSLOT, i2);
		ibv_wr_set_sge(qpx, lk, (uintptr_t)s, 0);
		rc = ibv_wr_complete(qpx);
		ASSERT_EQ(0, rc) TH_LOG("mixed batch: ibv_wr_complete: %d", rc);
		expect_send_ok(_metadata, &self->cli, 1, IBV_WC_SEND);
		expect_send_ok(_metadata, &self->cli, 2, IBV_WC_RDMA_WRITE);
		expect_send_ok(_metadata, &self->cli, 3, IBV_WC_RDMA_WRITE);
		expect_send_ok(_metadata, &self->cli, 4, IBV_WC_RDMA_WRITE);
		struct ru_wc mw[3];

		for (i = 0; i < 3; i++) {
			ASSERT_EQ(1, ru_poll_recv(&self->srv, &mw[i], WAIT_MS))
				TH_LOG("mixed batch: %s", ru_errmsg());
			ru_wc_str(&mw[i], buf, sizeof(buf));
			printf("# mixed batch: %s\n", buf);
			ASSERT_EQ(IBV_WC_SUCCESS, (int)mw[i].status) TH_LOG("%s", buf);
			ASSERT_EQ((uint64_t)(70 + i), mw[i].wr_id) TH_LOG("%s", buf);
			ASSERT_EQ(wantop[i], (int)mw[i].opcode) TH_LOG("%s", buf);
		}
		ASSERT_EQ(100u, mw[0].byte_len);
		ASSERT_EQ(be32toh(i1), be32toh(mw[1].imm));
		ASSERT_EQ(1000u, mw[1].byte_len);
		/* byte_len 1900: the plain Write right before (rfc7306.md) */
		ASSERT_EQ(be32toh(i2), be32toh(mw[2].imm));
		ASSERT_EQ(1900u, mw[2].byte_len) TH_LOG("zero-length write with imm "
							"right after a 1900-byte Write");
		ASSERT_EQ(0, memcmp(rs, s, 100));
		ASSERT_EQ(0, memcmp(t, s + 100, 1000));
		ASSERT_EQ(0, memcmp(t + TSLOT, s + 1100, 1900));
		ASSERT_EQ(0x5a, t[2 * TSLOT]);
		ASSERT_EQ(0x5a, rs[RSLOT]);
		ASSERT_EQ(0x5a, rs[2 * RSLOT]);
	}
	for (i = 0; i < BATCH; i++)
		wimm_free(&w[i]);
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
}

TEST_F_TIMEOUT(imm, cq_ex_read_imm, 120)
{
	struct ru_caps cc, sc;
	struct wimm w;
	struct ru_wc rw;
	char buf[200];
	int i;

	cfg_client(&cc);
	cfg_server(&sc);
	sc.rcq_ex = 1;
	/* EOPNOTSUPP here means the provider has no create_cq_ex: a failure */
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	ASSERT_NE(NULL, self->srv.rcqx);
	alloc_wimm_bufs(_metadata, self, &self->cli, &self->srv, 1);
	memset(&w, 0, sizeof(w));
	for (i = 0; i < 12; i++) {
		if (i % 4 == 3) {	/* a Send in between: plain RECV */
			uint8_t *rs = self->b[2].addr;
			struct ibv_sge sg = { .addr = (uintptr_t)self->b[0].addr,
					      .length = 77,
					      .lkey = self->b[0].mr->lkey };

			ru_fill(self->b[0].addr, 77, self->seed + i);
			RU_ASSERT_OK(ru_post_recv_mr(self->srv.qp, NULL,
						      self->b[2].mr, rs, RPOST, 900 + i));
			RU_ASSERT_OK(ru_post_sge(self->cli.qp, IBV_WR_SEND, &sg, 1, 0, 0,
					     0, IBV_SEND_SIGNALED, 800 + i));
			expect_send_ok(_metadata, &self->cli, 800 + i, IBV_WC_SEND);
			ASSERT_EQ(1, ru_poll_recv(&self->srv, &rw, WAIT_MS))
				TH_LOG("%s", ru_errmsg());
			ru_wc_str(&rw, buf, sizeof(buf));
			ASSERT_EQ(IBV_WC_SUCCESS, (int)rw.status) TH_LOG("%s", buf);
			ASSERT_EQ(IBV_WC_RECV, (int)rw.opcode) TH_LOG("%s", buf);
			ASSERT_FALSE(!!(rw.wc_flags & IBV_WC_WITH_IMM)) TH_LOG("%s", buf);
			ASSERT_EQ(77u, rw.byte_len) TH_LOG("%s", buf);
			ASSERT_EQ(self->srv.qp->qp_num, rw.qp_num) TH_LOG("%s", buf);
			RU_ASSERT_PATTERN(rs, 77, self->seed + i, "Send via cq_ex");
			continue;
		}
		w.len = i % 2 ? 0 : 1 + ru_rand(&self->rng, 20000);
		w.nsge = 1;
		w.flags = IBV_SEND_SIGNALED;
		w.recv_id = 100 + i;
		w.send_id = 200 + i;
		w.rlen = RPOST;
		wimm_bind(self, &w, 0);
		wimm_prepare(&self->rng, &w);
		RU_ASSERT_OK(wimm_post_recv_mr(&self->srv, self->b[2].mr, &w));
		RU_ASSERT_OK(wimm_post(&self->cli, &w));
		expect_send_ok(_metadata, &self->cli, w.send_id, IBV_WC_RDMA_WRITE);
		ASSERT_EQ(1, ru_poll_recv(&self->srv, &rw, WAIT_MS))
			TH_LOG("%s", ru_errmsg());
		ASSERT_EQ(self->srv.qp->qp_num, rw.qp_num);
		wimm_check(_metadata, &w, &rw);
	}
	wimm_free(&w);
}

/* ---- 64-bit immediate (siwdv) ----------------------------------------------------- */

#if HAVE_SIWDV
/* one completion and its 64-bit immediate, by either siwdv path */
static int poll_imm64(struct ru_ep *m, struct ru_wc *w, uint64_t *imm64,
		      int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		int rc;

		if (m->rcqx) {
			struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
			struct ibv_cq_ex *cq = m->rcqx;

			rc = ibv_start_poll(cq, &pa);
			if (rc == 0) {
				ru_wc_from_ex(w, cq);
				*imm64 = siwdv_wc_read_imm64(cq);
				ibv_end_poll(cq);
				return 1;
			}
			if (rc != ENOENT)
				return ru_fail(rc, "ibv_start_poll: %d", rc);
		} else {
			struct ibv_wc wc;

			rc = siwdv_poll_cq(m->rcq, 1, &wc, imm64);
			if (rc < 0)
				return ru_fail(rc, "siwdv_poll_cq: %d", rc);
			if (rc == 1) {
				ru_wc_from(w, &wc);
				return 1;
			}
		}
		if (ru_now_ms() >= deadline)
			return ru_fail(ETIMEDOUT, "no completion within %d ms",
				       timeout_ms);
		usleep(200);
	}
}
#endif

TEST(siwdv_device_caps)
{
#if HAVE_SIWDV
	struct ibv_device **list;
	struct siwdv_device_attr da;
	int n = 0, i, rc, found = 0;

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;

		if (strcmp(name, ru_env("SIWX_DEV0", "siw0")) &&
		    strcmp(name, ru_env("SIWX_DEV1", "siw1")))
			continue;
		ctx = ibv_open_device(list[i]);
		ASSERT_NE(NULL, ctx) TH_LOG("open %s", name);
		memset(&da, 0, sizeof(da));
		rc = siwdv_query_device(ctx, &da, sizeof(da));
		printf("# %s: siwdv_query_device %d: caps 0x%llx, write with imm: "
		       "%u SGEs, %u inline bytes\n", name, rc,
		       (unsigned long long)da.device_caps, da.max_write_imm_sge,
		       da.max_write_imm_inline_data);
		ibv_close_device(ctx);
		ASSERT_EQ(0, rc);
		ASSERT_TRUE(!!(da.device_caps & SIWDV_DEVICE_CAP_IMM_DATA));
		ASSERT_EQ((uint32_t)IM_MAX_SGE_IMM, da.max_write_imm_sge);
		ASSERT_EQ((uint32_t)IM_MAX_INLINE_IMM, da.max_write_imm_inline_data);
		found++;
	}
	ibv_free_device_list(list);
	ASSERT_LT(0, found) TH_LOG("no siw device");
#else
	ASSERT_TRUE(HAVE_SIWDV)
		TH_LOG("<infiniband/siwdv.h> missing at build time: the siwx "
		       "capabilities cannot be queried");
#endif
}

TEST_F_TIMEOUT(imm, siwdv_imm64, 180)
{
#if HAVE_SIWDV
	static const uint64_t edge[] = {
		0, ~0ull, 1ull << 63, 0x00000000ffffffffull,
		0xffffffff00000000ull, 0x0123456789abcdefull, 1,
	};
	struct ru_caps cc, sc;
	struct wimm w;
	struct ru_wc rw;
	char buf[200];
	int pass, i, rc;

	for (pass = 0; pass < 2; pass++) {	/* siwdv_poll_cq, then cq_ex */
		cfg_client(&cc);
		cfg_server(&sc);
		cc.send_ops = IM_SEND_OPS;
		sc.rcq_ex = pass;
		printf("# receiver reads the 64 bits with %s\n",
		       pass ? "siwdv_wc_read_imm64()" : "siwdv_poll_cq()");
		RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
		alloc_wimm_bufs(_metadata, self, &self->cli, &self->srv, 1);
		memset(&w, 0, sizeof(w));
		for (i = 0; i < 24; i++) {
			uint64_t v = i < (int)(sizeof(edge) / sizeof(edge[0])) ?
				     edge[i] : ru_rng(&self->rng), got = 0;
			int verbs = i % 5 == 4;	/* a verbs 32-bit one */

			w.len = i % 3 == 0 ? 0 : 1 + ru_rand(&self->rng, 65536);
			w.nsge = w.len ? 1 + (int)ru_rand(&self->rng, IM_MAX_SGE_IMM) : 1;
			if (w.len && (uint32_t)w.nsge > w.len)
				w.nsge = (int)w.len;
			w.inl = 0;
			w.flags = IBV_SEND_SIGNALED;
			w.recv_id = 100 + i;
			w.send_id = 200 + i;
			w.rlen = RPOST;
			wimm_bind(self, &w, 0);
			wimm_prepare(&self->rng, &w);
			if (verbs)
				v = be32toh(w.imm);	/* the upper half is 0 */
			else
				w.imm = htobe32((uint32_t)v);	/* verbs sees the low half */
			RU_ASSERT_OK(wimm_post_recv_mr(&self->srv, self->b[2].mr, &w));
			ibv_wr_start(self->cli.qpx);
			self->cli.qpx->wr_id = w.send_id;
			self->cli.qpx->wr_flags = w.flags;
			if (verbs)
				ibv_wr_rdma_write_imm(self->cli.qpx, w.rkey, w.raddr,
						      w.imm);
			else
				siwdv_wr_rdma_write_imm64(self->cli.qpx, w.rkey,
							  w.raddr, v);
			ibv_wr_set_sge_list(self->cli.qpx, w.nsge, w.sg);
			rc = ibv_wr_complete(self->cli.qpx);
			ASSERT_EQ(0, rc) TH_LOG("imm64 0x%016llx: ibv_wr_complete %d",
						(unsigned long long)v, rc);
			expect_send_ok(_metadata, &self->cli, w.send_id,
				       IBV_WC_RDMA_WRITE);
			ASSERT_EQ(1, poll_imm64(&self->srv, &rw, &got, WAIT_MS))
				TH_LOG("%s", ru_errmsg());
			ru_wc_str(&rw, buf, sizeof(buf));
			printf("# %s 0x%016llx (%u bytes): got 0x%016llx, %s\n",
			       verbs ? "verbs imm" : "imm64", (unsigned long long)v,
			       w.len, (unsigned long long)got, buf);
			ASSERT_EQ(v, got) TH_LOG("64-bit immediate");
			wimm_check(_metadata, &w, &rw);
		}
		wimm_free(&w);
		ru_buf_free(&self->b[0]);
		ru_buf_free(&self->b[1]);
		ru_buf_free(&self->b[2]);
		ru_ep_close(&self->cli);
		ru_ep_close(&self->srv);
	}
#else
	ASSERT_TRUE(HAVE_SIWDV)
		TH_LOG("<infiniband/siwdv.h> missing at build time: the 64-bit "
		       "immediate cannot be tested");
#endif
}

/* ---- post-time errors ---------------------------------------------------------- */

static int post_list(struct ibv_qp *qp, struct ibv_send_wr *wr,
		     struct ibv_send_wr **bad)
{
	int rc = ibv_post_send(qp, wr, bad);

	return rc < 0 ? -rc : rc;
}

/*
 * The post-error tests' buffers: b[0] npage KiB of client source (the
 * seed's pattern), b[1] npage pages of server target (0x5a), b[2] npage
 * receive slots, nrecv of them posted (wr_id 50..); sg[0..5]: 10 bytes
 * each, 100 bytes apart, of b[0].
 */
static void errors_setup(struct __test_metadata *_metadata,
			 FIXTURE_DATA(imm) *self, struct ibv_sge *sg, int npage,
			 int nrecv)
{
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1], *rb = &self->b[2];
	size_t slen = (size_t)npage * 1024;
	int i;

	RU_ASSERT_OK(ru_buf_alloc(src, self->cli.pd, slen, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(tgt, self->srv.pd, (size_t)npage * 4096,
				  IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(rb, self->srv.pd, (size_t)npage * RSLOT,
				  IM_ACC));
	ru_fill(src->addr, slen, self->seed);
	memset(tgt->addr, 0x5a, (size_t)npage * 4096);
	for (i = 0; i < 6; i++) {
		sg[i].addr = (uintptr_t)src->addr + 100 * i;
		sg[i].length = 10;
		sg[i].lkey = src->mr->lkey;
	}
	for (i = 0; i < nrecv; i++)
		RU_ASSERT_OK(ru_post_recv_mr(self->srv.qp, NULL, rb->mr,
					     rb->addr + i * RSLOT, RPOST, 50 + i));
}

TEST_F_TIMEOUT(imm, post_errors, 120)
{
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1];
	struct ibv_sge sg[6];
	struct ibv_send_wr wr[3], *bad;
	struct ru_caps cc, sc;
	uint8_t *t;
	struct ru_wc w;
	char buf[200];
	__be32 imm;
	int i, rc;

	cfg_client(&cc);
	cfg_server(&sc);
	/* the QP could take 6 SGEs and 80 inline bytes: only the opcode limits */
	cc.max_send_sge = 6;
	cc.max_inline = 80;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	errors_setup(_metadata, self, sg, 8, 4);
	t = tgt->addr;
	imm = im_rand_imm(&self->rng);

	/* Send with Immediate has no RFC 7306 encoding */
	rc = ru_post_sge(self->cli.qp, IBV_WR_SEND_WITH_IMM, sg, 1, 0, 0, imm,
		     IBV_SEND_SIGNALED, 1);
	EXPECT_EQ(-EOPNOTSUPP, rc) TH_LOG("SEND_WITH_IMM: %d (%s)", rc, strerror(-rc));
	rc = ru_post_sge(self->cli.qp, IBV_WR_SEND_WITH_IMM, sg, 0, 0, 0, imm,
		     IBV_SEND_SIGNALED, 2);
	EXPECT_EQ(-EOPNOTSUPP, rc) TH_LOG("SEND_WITH_IMM, no data: %d (%s)", rc,
					  strerror(-rc));

	/* 6 SGEs: a plain Write may, a write with immediate may not */
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE, sg, 6,
		     (uintptr_t)t, tgt->mr->rkey, 0, IBV_SEND_SIGNALED, 3);
	ASSERT_EQ(0, rc) TH_LOG("control: RDMA_WRITE with 6 SGEs: %s", ru_errmsg());
	expect_send_ok(_metadata, &self->cli, 3, IBV_WC_RDMA_WRITE);
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE_WITH_IMM, sg, 6,
		     (uintptr_t)t + 4096, tgt->mr->rkey, imm, IBV_SEND_SIGNALED, 4);
	EXPECT_EQ(-EINVAL, rc) TH_LOG("WRITE_WITH_IMM with 6 SGEs: %d (%s)", rc,
				      strerror(-rc));

	/* inline: 80 bytes for a Write, at most 64 with immediate */
	sg[0].length = 80;
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE, sg, 1,
		     (uintptr_t)t + 2 * 4096, tgt->mr->rkey, 0,
		     IBV_SEND_SIGNALED | IBV_SEND_INLINE, 5);
	ASSERT_EQ(0, rc) TH_LOG("control: 80-byte inline RDMA_WRITE: %s",
				ru_errmsg());
	expect_send_ok(_metadata, &self->cli, 5, IBV_WC_RDMA_WRITE);
	sg[0].length = 65;
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE_WITH_IMM, sg, 1,
		     (uintptr_t)t + 3 * 4096, tgt->mr->rkey, imm,
		     IBV_SEND_SIGNALED | IBV_SEND_INLINE, 6);
	EXPECT_EQ(-EINVAL, rc) TH_LOG("65-byte inline WRITE_WITH_IMM: %d (%s)", rc,
				      strerror(-rc));
	sg[0].length = 40;
	sg[1].length = 25;
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE_WITH_IMM, sg, 2,
		     (uintptr_t)t + 3 * 4096, tgt->mr->rkey, imm,
		     IBV_SEND_SIGNALED | IBV_SEND_INLINE, 7);
	EXPECT_EQ(-EINVAL, rc) TH_LOG("65 inline bytes in 2 SGEs with imm: %d (%s)",
				      rc, strerror(-rc));

	/* a list: [ok, 6 SGEs, ok]: the first is posted, bad_wr the second */
	memset(wr, 0, sizeof(wr));
	sg[0].length = 10;
	sg[1].length = 10;
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 10 + i;
		wr[i].opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].sg_list = sg;
		wr[i].num_sge = i == 1 ? 6 : 1;
		wr[i].imm_data = htobe32(0x1000 + i);
		wr[i].wr.rdma.remote_addr = (uintptr_t)t + (4 + i) * 4096;
		wr[i].wr.rdma.rkey = tgt->mr->rkey;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	bad = NULL;
	rc = post_list(self->cli.qp, wr, &bad);
	EXPECT_EQ(EINVAL, rc);
	EXPECT_EQ(&wr[1], bad) TH_LOG("bad_wr is not the 6-SGE one (%p vs %p)",
				      (void *)bad, (void *)&wr[1]);
	expect_send_ok(_metadata, &self->cli, 10, IBV_WC_RDMA_WRITE);

	/* the QP keeps working */
	ASSERT_EQ(IBV_QPS_RTS, ru_qp_state(self->cli.qp));
	sg[0].length = 64;
	rc = ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE_WITH_IMM, sg, 1,
		     (uintptr_t)t + 7 * 4096, tgt->mr->rkey, htobe32(0x2000),
		     IBV_SEND_SIGNALED | IBV_SEND_INLINE, 20);
	ASSERT_EQ(0, rc) TH_LOG("64-byte inline write with imm: %s", ru_errmsg());
	expect_send_ok(_metadata, &self->cli, 20, IBV_WC_RDMA_WRITE);
	rc = ru_post_sge(self->cli.qp, IBV_WR_SEND, sg, 1, 0, 0, 0,
		     IBV_SEND_SIGNALED, 21);
	ASSERT_EQ(0, rc) TH_LOG("Send: %s", ru_errmsg());
	expect_send_ok(_metadata, &self->cli, 21, IBV_WC_SEND);

	/* receiver: wr 10's immediate, the inline one, the Send; nothing else */
	{
		static const struct {
			int op;
			uint32_t imm, len;
		} want[3] = {
			{ IBV_WC_RECV_RDMA_WITH_IMM, 0x1000, 10 },
			{ IBV_WC_RECV_RDMA_WITH_IMM, 0x2000, 64 },
			{ IBV_WC_RECV, 0, 64 },
		};

		for (i = 0; i < 3; i++) {
			ASSERT_EQ(1, ru_poll_recv(&self->srv, &w, WAIT_MS))
				TH_LOG("receive %d: %s", i, ru_errmsg());
			ru_wc_str(&w, buf, sizeof(buf));
			ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status) TH_LOG("%s", buf);
			ASSERT_EQ((uint64_t)(50 + i), w.wr_id) TH_LOG("%s", buf);
			ASSERT_EQ(want[i].op, (int)w.opcode) TH_LOG("%s", buf);
			ASSERT_EQ(want[i].len, w.byte_len) TH_LOG("%s", buf);
			if (want[i].op == IBV_WC_RECV_RDMA_WITH_IMM)
				ASSERT_EQ(want[i].imm, be32toh(w.imm)) TH_LOG("%s", buf);
		}
	}
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
	assert_cq_quiet(_metadata, &self->cli, 0, "sender");
	/* memory: the refused writes placed nothing */
	ASSERT_EQ(0, memcmp(t, src->addr, 10));
	for (i = 1; i < 7; i++) {
		if (i == 2 || i == 4)	/* the 80-byte inline Write; wr 10 */
			continue;
		ASSERT_EQ(0x5a, t[i * 4096]) TH_LOG("target %d written", i);
	}
	ASSERT_EQ(0, memcmp(t + 2 * 4096, src->addr, 80));
	ASSERT_EQ(0, memcmp(t + 4 * 4096, src->addr, 10));
	ASSERT_EQ(0x5a, t[4 * 4096 + 10]);
	ASSERT_EQ(0, memcmp(t + 7 * 4096, src->addr, 64));
}

TEST_F_TIMEOUT(imm, qp_ex_post_errors, 120)
{
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1];
	struct ibv_sge sg[6];
	struct ibv_qp_ex *qpx;
	struct ru_caps cc, sc;
	struct ru_wc w;
	char buf[200];
	uint8_t *t;
	int i, rc;

	cfg_client(&cc);
	cfg_server(&sc);
	/* the most a QP that may write with immediate can have */
	cc.max_send_sge = 5;
	cc.max_inline = 64;
	cc.send_ops = IM_SEND_OPS;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	qpx = self->cli.qpx;

	/* more than that cannot be promised: the QP is refused (EINVAL) */
	{
		struct ibv_qp_init_attr_ex qa = {
			.send_cq = self->cli.scq, .recv_cq = self->cli.scq,
			.cap = { .max_send_wr = 4, .max_recv_wr = 4,
				 .max_send_sge = 6, .max_recv_sge = 1 },
			.qp_type = IBV_QPT_RC,
			.comp_mask = IBV_QP_INIT_ATTR_PD |
				     IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
			.pd = self->cli.pd,
			.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
					  IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
		};
		struct ibv_qp *bad;

		errno = 0;
		bad = ibv_create_qp_ex(self->cli.pd->context, &qa);
		EXPECT_EQ(NULL, bad) TH_LOG("6 SGEs with write_imm accepted");
		EXPECT_EQ(EINVAL, errno);
		if (bad)
			ibv_destroy_qp(bad);
		qa.cap.max_send_sge = 1;
		qa.cap.max_inline_data = 80;
		errno = 0;
		bad = ibv_create_qp_ex(self->cli.pd->context, &qa);
		EXPECT_EQ(NULL, bad) TH_LOG("80 inline with write_imm accepted");
		EXPECT_EQ(EINVAL, errno);
		if (bad)
			ibv_destroy_qp(bad);
	}
	errors_setup(_metadata, self, sg, 4, 2);
	t = tgt->addr;

	/* 6 SGEs, in a batch with a good one: the whole batch is refused */
	ibv_wr_start(qpx);
	qpx->wr_id = 1;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(qpx, tgt->mr->rkey, (uintptr_t)t, htobe32(1));
	ibv_wr_set_sge(qpx, sg[0].lkey, sg[0].addr, 10);
	qpx->wr_id = 2;
	ibv_wr_rdma_write_imm(qpx, tgt->mr->rkey, (uintptr_t)t + 4096, htobe32(2));
	ibv_wr_set_sge_list(qpx, 6, sg);
	rc = ibv_wr_complete(qpx);
	rc = rc < 0 ? -rc : rc;
	EXPECT_EQ(EINVAL, rc) TH_LOG("6 SGEs: ibv_wr_complete %d (%s)", rc,
				     strerror(rc));

	/* 65 inline bytes */
	ibv_wr_start(qpx);
	qpx->wr_id = 3;
	qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_rdma_write_imm(qpx, tgt->mr->rkey, (uintptr_t)t + 2 * 4096,
			      htobe32(3));
	ibv_wr_set_inline_data(qpx, src->addr, 65);
	rc = ibv_wr_complete(qpx);
	rc = rc < 0 ? -rc : rc;
	EXPECT_EQ(EINVAL, rc) TH_LOG("65 inline bytes: ibv_wr_complete %d (%s)",
				     rc, strerror(rc));

	/* still working: 64 inline bytes, then 5 SGEs */
	ibv_wr_start(qpx);
	qpx->wr_id = 4;
	qpx->wr_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	ibv_wr_rdma_write_imm(qpx, tgt->mr->rkey, (uintptr_t)t + 3 * 4096,
			      htobe32(4));
	ibv_wr_set_inline_data(qpx, src->addr, 64);
	qpx->wr_id = 5;
	qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write_imm(qpx, tgt->mr->rkey, (uintptr_t)t + 2 * 4096,
			      htobe32(5));
	ibv_wr_set_sge_list(qpx, 5, sg);
	rc = ibv_wr_complete(qpx);
	ASSERT_EQ(0, rc) TH_LOG("ibv_wr_complete: %d", rc);
	expect_send_ok(_metadata, &self->cli, 4, IBV_WC_RDMA_WRITE);
	expect_send_ok(_metadata, &self->cli, 5, IBV_WC_RDMA_WRITE);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(1, ru_poll_recv(&self->srv, &w, WAIT_MS))
			TH_LOG("%s", ru_errmsg());
		ru_wc_str(&w, buf, sizeof(buf));
		ASSERT_EQ(IBV_WC_SUCCESS, (int)w.status) TH_LOG("%s", buf);
		ASSERT_EQ((uint32_t)(4 + i), be32toh(w.imm)) TH_LOG("%s", buf);
		ASSERT_EQ(i ? 50u : 64u, w.byte_len) TH_LOG("%s", buf);
	}
	assert_cq_quiet(_metadata, &self->srv, 1, "receiver");
	assert_cq_quiet(_metadata, &self->cli, 0, "sender");
	ASSERT_EQ(0x5a, t[0]) TH_LOG("the refused batch placed data");
	ASSERT_EQ(0x5a, t[4096]) TH_LOG("the refused batch placed data");
	ASSERT_EQ(0, memcmp(t + 3 * 4096, src->addr, 64));
	for (i = 0; i < 5; i++)
		ASSERT_EQ(0, memcmp(t + 2 * 4096 + 10 * i, src->addr + 100 * i, 10));
}

/*
 * Every work request completes exactly once, also when the QP is flushed
 * while it is in flight: a write with immediate the receiver has no
 * receive for, then Writes and Reads posted one by one, so that the
 * Terminate meets them in every state (queued, being transmitted, Read
 * Request in the ORQ). Several rounds, a new connection each.
 */
#define FL_ROUNDS	12	/* default SIWX_IMM_FLUSH_ROUNDS */
#define FL_WRS		9

TEST_F_TIMEOUT(imm, flush_exactly_once, 300)
{
	int rounds = (int)ru_env_long("SIWX_IMM_FLUSH_ROUNDS", FL_ROUNDS);
	int round, i, dups = 0, missing = 0, bad_ok = 0, nref = 0;
	char buf[200];

	/*
	 * Patches 0013, 0014, 0016 and 0018 fixed the missing and
	 * duplicate completions this test found. It was opt-in while about
	 * one post in a hundred that libsiw reported as refused still
	 * completed as flushed: the doorbell failed with ENOTCONN while a
	 * state change held the QP's state lock, after libsiw had written
	 * the work request to the send queue; patch 0012 now has the
	 * doorbell wait (Documentation/testing.md).
	 */
	if (rounds <= 0)
		SKIP(return, "SIWX_IMM_FLUSH_ROUNDS=0");

	for (round = 0; round < rounds; round++) {
		struct ru_buf *src = &self->b[0], *tgt = &self->b[1];
		struct ru_caps cc, sc;
		int seen[FL_WRS + 1] = { 0 }, refused[FL_WRS + 1] = { 0 };
		int n = 0, first_err = 0, nr = 0;
		struct ru_wc w;
		uint64_t t0;

		cfg_client(&cc);
		cfg_server(&sc);
		RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
		RU_ASSERT_OK(ru_buf_alloc(src, self->cli.pd, 65536, IM_ACC));
		RU_ASSERT_OK(ru_buf_alloc(tgt, self->srv.pd, 65536, IM_ACC));
		for (i = 1; i <= FL_WRS; i++) {
			/* 1: the refused immediate; then Write, Read, Write, ... */
			enum ibv_wr_opcode op = i == 1 ? IBV_WR_RDMA_WRITE_WITH_IMM :
				i % 2 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE;
			struct ibv_sge sg = {
				.addr = (uintptr_t)src->addr + (i % 2 ? 32768 : 0),
				.length = i == 1 ? 0 : 4096 * (1 + round % 4),
				.lkey = src->mr->lkey,
			};

			/* the QP may be in error already: refusing is fine */
			refused[i] = ru_post_sge(self->cli.qp, op, &sg, 1,
					     (uintptr_t)tgt->addr, tgt->mr->rkey,
					     htobe32(i), IBV_SEND_SIGNALED, i);
			ASSERT_TRUE(i > 1 || !refused[i]) TH_LOG("%s", ru_errmsg());
			nr += !!refused[i];
		}
		nref += nr;
		t0 = ru_now_ms();
		while (ru_poll_send(&self->cli, &w, n >= FL_WRS - nr ? 1000 : 20000) == 1) {
			int k = w.wr_id >= 1 && w.wr_id <= FL_WRS ? (int)w.wr_id : 0;

			n++;
			if (refused[k]) {
				dups++;
				printf("# round %d: wr %d was refused at post time, "
				       "yet completed: %s\n", round, k,
				       ru_wc_str(&w, buf, sizeof(buf)));
			} else if (seen[k]++) {
				dups++;
				printf("# round %d: wr %d completed again: %s\n", round,
				       k, ru_wc_str(&w, buf, sizeof(buf)));
			}
			if (w.status != IBV_WC_SUCCESS && !first_err)
				first_err = k;
			else if (w.status == IBV_WC_SUCCESS && first_err) {
				bad_ok++;
				printf("# round %d: wr %d succeeded after wr %d failed\n",
				       round, k, first_err);
			}
		}
		for (i = 1; i <= FL_WRS; i++)
			if (!seen[i] && !refused[i]) {
				missing++;
				printf("# round %d: wr %d never completed (%llu ms)\n",
				       round, i, (unsigned long long)(ru_now_ms() - t0));
			}
		ru_buf_free(src);
		ru_buf_free(tgt);
		ru_ep_close(&self->cli);
		ru_ep_close(&self->srv);
	}
	printf("# %d rounds: %d duplicate, %d missing completions, %d successes "
	       "after an error; %d posts refused (QP already in error)\n",
	       rounds, dups, missing, bad_ok, nref);
	ASSERT_EQ(0, missing);
	ASSERT_EQ(0, dups);
	ASSERT_EQ(0, bad_ok);
}

/* ---- Immediate Data without a receive ----------------------------------------- */

FIXTURE(norecv) {
	struct ru_listener l;
	struct ru_ep cli, srv;
	struct ru_buf b[6];
	uint64_t seed, rng;
};

FIXTURE_VARIANT(norecv) {
	uint32_t len;	/* of the write with immediate */
	int srq;	/* receiver on an empty SRQ */
};

FIXTURE_VARIANT_ADD(norecv, zero_length) { .len = 0 };
FIXTURE_VARIANT_ADD(norecv, with_data) { .len = 4096 };
FIXTURE_VARIANT_ADD(norecv, zero_length_srq) { .len = 0, .srq = 1 };

FIXTURE_SETUP(norecv)
{
	self->seed = ru_random_seed();
	self->rng = self->seed;
	RU_ASSERT_OK(ru_listen(&self->l, ru_addr0(), 0, 4));
}

FIXTURE_TEARDOWN(norecv)
{
	int i;

	for (i = 0; i < 6; i++)
		ru_buf_free(&self->b[i]);
	ru_ep_close(&self->cli);
	ru_ep_close(&self->srv);
	ru_listener_close(&self->l);
}

/*
 * The client posts: [1] the write with immediate the receiver has no
 * receive for, [2] an unfenced RDMA Write, [3] an RDMA Read, then
 * fenced behind the Read [4] an RDMA Write, [5] a Send, [6] another
 * write with immediate. The receiver refuses [1] with a Terminate (DDP,
 * untagged, no buffer) and stops: per rfc7306.md the sender's [1] itself
 * completed ("sender's write completed"), the Read [3] cannot succeed
 * and everything behind it is flushed. [2] may already have been
 * transmitted (and so completed locally, as iWARP completes Writes on
 * transmission) before the Terminate came back: its status is only
 * reported, but its data must not be placed.
 */
TEST_F_TIMEOUT(norecv, terminate, 120)
{
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1], *rsrc = &self->b[2];
	struct ru_buf *sink = &self->b[3];
	struct ibv_context *ctx;
	struct ibv_async_event ev;
	struct ru_caps cc, sc;
	struct ru_wc w[6];
	uint64_t s_src = ru_rng(&self->rng), s_old = ru_rng(&self->rng);
	uint64_t s_r = ru_rng(&self->rng), t0;
	uint8_t *t;
	char buf[200];
	int i, rc, nev = 0, first_err = -1;

	cfg_client(&cc);
	cfg_server(&sc);
	sc.srq = variant->srq;
	sc.max_recv_wr = 16;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	ctx = self->srv.id->verbs;
	RU_ASSERT_OK(ru_async_nonblock(ctx));
	while (ru_get_async(ctx, &ev, 0) == 1)
		;
	RU_ASSERT_OK(ru_buf_alloc(src, self->cli.pd, 3 * 8192, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(sink, self->cli.pd, 4096, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(tgt, self->srv.pd, 4 * 8192, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(rsrc, self->srv.pd, 4096, IM_ACC));
	t = tgt->addr;
	ru_fill(src->addr, 3 * 8192, s_src);
	ru_fill(t, 4 * 8192 + RU_GUARD, s_old);
	ru_fill(rsrc->addr, 4096, s_r);
	memset(sink->addr, 0x5a, 4096);

	/*
	 * One list, one doorbell: every WR is in the send queue before the
	 * first message leaves (WRs posted after the QP went to error are
	 * posts_after_error's business).
	 */
	{
		static const struct {
			enum ibv_wr_opcode op;
			unsigned int flags;
		} l6[6] = {
			{ IBV_WR_RDMA_WRITE_WITH_IMM, 0 },
			{ IBV_WR_RDMA_WRITE, 0 },
			{ IBV_WR_RDMA_READ, 0 },
			{ IBV_WR_RDMA_WRITE, IBV_SEND_FENCE },
			{ IBV_WR_SEND, IBV_SEND_FENCE },
			{ IBV_WR_RDMA_WRITE_WITH_IMM, IBV_SEND_FENCE },
		};
		struct ibv_send_wr wr[6], *bad = NULL;
		struct ibv_sge sgl[6] = {
			{ (uintptr_t)src->addr, variant->len, src->mr->lkey },
			{ (uintptr_t)src->addr + 8192, 8192, src->mr->lkey },
			{ (uintptr_t)sink->addr, 4096, sink->mr->lkey },
			{ (uintptr_t)src->addr + 2 * 8192, 8192, src->mr->lkey },
			{ (uintptr_t)src->addr + 2 * 8192, 64, src->mr->lkey },
			{ (uintptr_t)src->addr + 2 * 8192, 64, src->mr->lkey },
		};
		const uint64_t ra[6] = {
			(uintptr_t)t, (uintptr_t)t + 8192, (uintptr_t)rsrc->addr,
			(uintptr_t)t + 2 * 8192, 0, (uintptr_t)t + 3 * 8192,
		};

		memset(wr, 0, sizeof(wr));
		for (i = 0; i < 6; i++) {
			wr[i].wr_id = i + 1;
			wr[i].opcode = l6[i].op;
			wr[i].send_flags = IBV_SEND_SIGNALED | l6[i].flags;
			wr[i].sg_list = &sgl[i];
			wr[i].num_sge = 1;
			wr[i].imm_data = htobe32(0xfeed0000 + i + 1);
			wr[i].wr.rdma.remote_addr = ra[i];
			wr[i].wr.rdma.rkey = i == 2 ? rsrc->mr->rkey : tgt->mr->rkey;
			wr[i].next = i < 5 ? &wr[i + 1] : NULL;
		}
		rc = ibv_post_send(self->cli.qp, wr, &bad);
		ASSERT_EQ(0, rc) TH_LOG("ibv_post_send of the list: %d, bad wr %llu",
					rc, bad ? (unsigned long long)bad->wr_id : 0ull);
	}
	t0 = ru_now_ms();

	/*
	 * The sender: every WR completes within a bound, once, in order.
	 * Everything is collected first (and a while longer, to catch a
	 * duplicate), so that the log shows the whole picture.
	 */
	{
		struct ru_wc all[12];
		int n = 0, seen[7] = { 0 }, dup = -1, order_bad = -1;

		while (n < 12) {
			int distinct = 0, k;

			for (k = 1; k <= 6; k++)
				distinct += seen[k] > 0;
			rc = ru_poll_send(&self->cli, &all[n],
					  distinct == 6 ? 500 : 30000);
			if (rc != 1)
				break;
			printf("# sender after %llu ms: %s\n",
			       (unsigned long long)(ru_now_ms() - t0),
			       ru_wc_str(&all[n], buf, sizeof(buf)));
			k = all[n].wr_id >= 1 && all[n].wr_id <= 6 ?
			    (int)all[n].wr_id : 0;
			if (k && seen[k]++ && dup < 0)
				dup = k;
			if (k && seen[k] == 1)
				w[k - 1] = all[n];
			if (n > 0 && all[n].wr_id < all[n - 1].wr_id && order_bad < 0)
				order_bad = n;
			n++;
		}
		for (i = 1; i <= 6; i++) {
			int done = seen[i] > 0;

			ASSERT_EQ(1, done)
				TH_LOG("sender: wr %d never completed (%d "
				       "completions in %llu ms)", i, n,
				       (unsigned long long)(ru_now_ms() - t0));
		}
		ASSERT_EQ(-1, dup) TH_LOG("sender: wr %d completed %d times",
					  dup, seen[dup]);
		ASSERT_EQ(-1, order_bad)
			TH_LOG("sender: completion %d out of posting order",
			       order_bad);
		for (i = 0; i < 6; i++) {
			enum ibv_wc_status st = w[i].status;

			if (st != IBV_WC_SUCCESS && first_err < 0)
				first_err = i;
			if (first_err >= 0)
				ASSERT_NE(IBV_WC_SUCCESS, (int)st)
					TH_LOG("wr %d succeeded after an error", i + 1);
		}
	}
	EXPECT_EQ(IBV_WC_SUCCESS, (int)w[0].status)
		TH_LOG("the write with immediate itself: rfc7306.md says the "
		       "sender's write completed");
	ASSERT_NE(IBV_WC_SUCCESS, (int)w[2].status) TH_LOG("the Read succeeded");
	EXPECT_TRUE(w[2].status == IBV_WC_REM_INV_REQ_ERR ||
		    w[2].status == IBV_WC_WR_FLUSH_ERR)
		TH_LOG("Read: %s", ibv_wc_status_str(w[2].status));
	for (i = 3; i < 6; i++) {
		enum ibv_wc_status st = w[i].status;

		EXPECT_EQ(IBV_WC_WR_FLUSH_ERR, (int)st)
			TH_LOG("wr %d behind the Read: %s", i + 1,
			       ibv_wc_status_str(st));
	}

	/* both QPs in error, both connections closed */
	RU_ASSERT_OK(ru_wait_qp_state(self->srv.qp, IBV_QPS_ERR, WAIT_MS));
	RU_ASSERT_OK(ru_wait_qp_state(self->cli.qp, IBV_QPS_ERR, WAIT_MS));
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->srv, WAIT_MS));
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->cli, WAIT_MS));
	while (ru_get_async(ctx, &ev, nev ? 0 : 1000) == 1) {
		nev++;
		printf("# async event %s (%s)\n", ibv_event_type_str(ev.event_type),
		       ev.element.qp == self->srv.qp ? "receiver QP" :
		       ev.element.qp == self->cli.qp ? "sender QP" : "other");
	}
	if (!nev)
		printf("# no async event (the QPs report ERR, rdma_cm DISCONNECTED)\n");

	/* the receiver: no successful completion, memory as the rules say */
	if (self->srv.rcq) {
		struct ru_wc rw;

		rc = ru_poll_recv(&self->srv, &rw, 500);
		if (rc == 1)
			ASSERT_NE(IBV_WC_SUCCESS, (int)rw.status)
				TH_LOG("receiver completed %s",
				       ru_wc_str(&rw, buf, sizeof(buf)));
	}
	if (variant->len)	/* the write itself is placed before the immediate */
		RU_ASSERT_PATTERN(t, variant->len, s_src, "data of the write");
	{
		uint8_t *ref = malloc(4 * 8192 + RU_GUARD);
		long at;

		ASSERT_NE(NULL, ref);
		ru_fill(ref, 4 * 8192 + RU_GUARD, s_old);
		at = ru_first_diff(t + variant->len, ref + variant->len,
				4 * 8192 + RU_GUARD - variant->len);
		free(ref);
		ASSERT_EQ(-1, at) TH_LOG("receiver memory changed at byte %ld, "
					 "target of wr %ld",
					 at + (long)variant->len,
					 (at + (long)variant->len) / 8192 == 0 ? 1 :
					 (at + (long)variant->len) / 8192 + 1 +
					 ((at + (long)variant->len) / 8192 > 1) * 2);
	}
	RU_ASSERT_PATTERN(rsrc->addr, 4096, s_r, "Read source");
	ASSERT_EQ(0x5a, sink->addr[0]) TH_LOG("the failed Read placed data");
}

/*
 * Work requests posted after the sender's QP went to error (the receiver
 * refused an Immediate Data message): refused at post time, or completed
 * in error (flushed) within a bound; never successful, never left without
 * a completion.
 */
TEST_F_TIMEOUT(norecv, posts_after_error, 120)
{
	struct ru_buf *src = &self->b[0], *tgt = &self->b[1];
	struct ru_caps cc, sc;
	struct ru_wc w;
	struct ibv_sge sg;
	uint64_t s_old = ru_rng(&self->rng);
	char buf[200];
	int i, rc;

	cfg_client(&cc);
	cfg_server(&sc);
	sc.srq = variant->srq;
	sc.max_recv_wr = 16;
	RU_ASSERT_OK(ru_pair_open_on(&self->l, &self->cli, &self->srv, &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(src, self->cli.pd, 8192, IM_ACC));
	RU_ASSERT_OK(ru_buf_alloc(tgt, self->srv.pd, 8192, IM_ACC));
	ru_fill(src->addr, 8192, self->seed);
	ru_fill(tgt->addr, 8192 + RU_GUARD, s_old);
	sg.addr = (uintptr_t)src->addr + 4096;
	sg.length = variant->len;
	sg.lkey = src->mr->lkey;
	RU_ASSERT_OK(ru_post_sge(self->cli.qp, IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1,
			     (uintptr_t)tgt->addr + 4096, tgt->mr->rkey,
			     htobe32(0xfeed0001), IBV_SEND_SIGNALED, 1));
	ASSERT_EQ(1, ru_poll_send(&self->cli, &w, WAIT_MS)) TH_LOG("%s", ru_errmsg());
	printf("# the write with immediate: %s\n", ru_wc_str(&w, buf, sizeof(buf)));
	RU_ASSERT_OK(ru_wait_qp_state(self->cli.qp, IBV_QPS_ERR, WAIT_MS));
	RU_ASSERT_OK(ru_wait_qp_state(self->srv.qp, IBV_QPS_ERR, WAIT_MS));
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->cli, WAIT_MS));
	while (ru_poll_send(&self->cli, &w, 300) == 1)
		printf("# before the late posts: %s\n", ru_wc_str(&w, buf, sizeof(buf)));

	for (i = 0; i < 3; i++) {
		static const enum ibv_wr_opcode lop[3] = {
			IBV_WR_SEND, IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM };
		static const char *const lname[3] = {
			"Send", "RDMA Write", "write with imm" };
		struct ru_wc lw;

		sg.addr = (uintptr_t)src->addr + 100;	/* other bytes */
		sg.length = 32;
		sg.lkey = src->mr->lkey;
		rc = ru_post_sge(self->cli.qp, lop[i], &sg, 1,
			     (uintptr_t)tgt->addr, tgt->mr->rkey,
			     htobe32(0xfeed0010 + i), IBV_SEND_SIGNALED, 10 + i);
		if (rc) {
			printf("# late %s: refused at post time: %s\n", lname[i],
			       strerror(-rc));
			continue;
		}
		rc = ru_poll_send(&self->cli, &lw, 10000);
		ASSERT_EQ(1, rc) TH_LOG("%s posted to the sender's QP in error "
					"(post returned 0): no completion within "
					"10 s", lname[i]);
		printf("# late %s: %s\n", lname[i], ru_wc_str(&lw, buf, sizeof(buf)));
		ASSERT_EQ((uint64_t)(10 + i), lw.wr_id);
		ASSERT_NE(IBV_WC_SUCCESS, (int)lw.status)
			TH_LOG("late %s succeeded on a QP in error", lname[i]);
	}
	RU_ASSERT_PATTERN(tgt->addr, 4096, s_old, "target of the late posts");
}

TEST_HARNESS_MAIN
