// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flush_pair - RDMA Flush and RDMA Atomic Write between two VMs (pair
 * topology; the same binary in both, SIWX_ROLE a listens, b connects).
 * Without arguments it runs the fixture SIWX_PAIR_ORDER calls for:
 *
 *   siwx.*      both VMs run siwx (ours-ours)
 *     caps                both devices report FLUSH_GLOBAL, ATOMIC_WRITE
 *     write_flush_aw      b Writes a pattern into a's region, Flushes it
 *                         and Atomic-Writes a word of it, all completed
 *                         before b tells a: a finds exactly that in its
 *                         memory when the message arrives (20 rounds)
 *   upstream.*  VM b runs unmodified upstream siw (ours-upstream)
 *     flush_probe_refused     the siwx side's Flush of the upstream side's
 *                             memory ends in IBV_WC_REM_INV_REQ_ERR within
 *                             5 s, its QP in error; the upstream side is
 *                             terminated, its memory unchanged
 *     aw_probe_refused        the same with an Atomic Write
 *     post_refused_without_cap  on the upstream module our libsiw reports
 *                             no capability, refuses IBV_QP_EX_WITH_FLUSH
 *                             at create and ibv_wr_flush() /
 *                             ibv_wr_atomic_write() at post (EOPNOTSUPP)
 *
 * Ports SIWX_FLUSH_PAIR_PORT (47400) + 2 * test number. Kernel warnings on
 * either side fail the run through the VM harness.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "siwx_test.h"
#include "flush_common.h"

#if HAVE_FLUSH_API

#define PAGE		4096
#define TLEN		(4 * PAGE)
#define NSLOT		4
#define SLOTSZ		256
#define IO_MS		60000
#define ROUNDS		20

enum { M_INFO = 1, M_CHECK, M_RESULT };

#define BASIC_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ | \
		   IBV_QP_EX_WITH_SEND)

static int is_a(void)
{
	return ru_pair_role() == 'a';
}

static int local_kind(void) { return ru_pair_kind(is_a() ? 0 : 1); }
static int peer_kind(void) { return ru_pair_kind(is_a() ? 1 : 0); }

static int port_of(int n)
{
	return (int)ru_env_long("SIWX_FLUSH_PAIR_PORT", 47400) + 2 * n;
}

struct pconn {
	struct ru_ep ep;
	struct ru_chan ch;
};

static void caps_for(struct ru_caps *caps, struct pconn *c, uint64_t ops)
{
	ru_caps_default(caps);
	ru_chan_caps(caps, &c->ch, NSLOT, SLOTSZ, SLOTSZ,
		     IBV_ACCESS_LOCAL_WRITE);
	caps->send_ops = ops;
	caps->max_send_wr = 128;
}

/* a listens on port n, b connects; the QP with ops (ibv_qp_ex) */
static int pconn_open(struct ru_listener *l, struct pconn *c, int n,
		      uint64_t ops)
{
	struct ru_caps caps;
	int rc;

	memset(c, 0, sizeof(*c));
	caps_for(&caps, c, ops);
	if (!is_a())
		return ru_connect(&c->ep, ru_env("SIWX_LOCAL", "192.168.78.2"),
				  ru_env("SIWX_PEER", "192.168.78.1"),
				  (uint16_t)port_of(n), &caps, 200000);
	rc = ru_listen(l, ru_env("SIWX_LOCAL", "192.168.78.1"),
		       (uint16_t)port_of(n), 4);
	if (rc)
		return rc;
	rc = ru_accept_start(l, &c->ep, &caps, 200000);
	if (!rc)
		rc = ru_ep_wait_established(&c->ep, RU_TIMEOUT_MS);
	return rc;
}

static void pconn_close(struct pconn *c)
{
	if (c->ep.id && c->ep.established && !c->ep.disconnected &&
	    ru_qp_state(c->ep.qp) == IBV_QPS_RTS) {
		if (is_a())
			ru_ep_disconnect(&c->ep);
		ru_ep_wait_disconnected(&c->ep, 10000);
	}
	ru_chan_free(&c->ch);
	ru_ep_close(&c->ep);
}

/* ---- siwx on both sides ------------------------------------------------------ */

FIXTURE(siwx) {
	struct ru_listener l;
	struct pconn c;
	struct ibv_mr *mr;
	struct ru_buf src;
	uint8_t *region;
};

FIXTURE_SETUP(siwx)
{
	if (!ru_pair_role())
		SKIP(return, "SIWX_ROLE is not a or b (pair topology only)");
	if (local_kind() != 1 || peer_kind() != 1)
		SKIP(return, "needs siwx in both VMs (SIWX_PAIR_ORDER '%s')",
		     ru_env("SIWX_PAIR_ORDER", ""));
}

FIXTURE_TEARDOWN(siwx)
{
	pconn_close(&self->c);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	ru_buf_free(&self->src);
	ru_listener_close(&self->l);
	free(self->region);
}

TEST_F_TIMEOUT(siwx, caps, 120)
{
	struct ru_msg mine, peer;
	uint64_t f;

	RU_ASSERT_OK(pconn_open(&self->l, &self->c, 0, FL_SEND_OPS));
	f = fl_dev_caps(self->c.ep.id->verbs, "local");
	memset(&mine, 0, sizeof(mine));
	mine.type = M_INFO;
	mine.value = f;
	RU_ASSERT_OK(ru_msg_exchange(&self->c.ep, &self->c.ch, !is_a(), &mine,
				     &peer, IO_MS));
	printf("# peer's device_cap_flags_ex 0x%llx\n",
	       (unsigned long long)peer.value);
	EXPECT_TRUE(!!(f & DEV_FLUSH_GLOBAL));
	EXPECT_TRUE(!!(f & DEV_ATOMIC_WRITE));
	EXPECT_TRUE(!!(peer.value & DEV_FLUSH_GLOBAL));
	EXPECT_TRUE(!!(peer.value & DEV_ATOMIC_WRITE));
}

TEST_F_TIMEOUT(siwx, write_flush_aw, 300)
{
	struct ru_msg m, peer;
	uint64_t rng = ru_random_seed();
	void *p;
	int r, fails = 0;

	RU_ASSERT_OK(pconn_open(&self->l, &self->c, 1, FL_SEND_OPS));
	memset(&m, 0, sizeof(m));
	if (is_a()) {
		ASSERT_EQ(0, posix_memalign(&p, PAGE, TLEN));
		self->region = p;
		ru_fill(self->region, TLEN, rng);
		self->mr = ibv_reg_mr(self->c.ep.pd, self->region, TLEN,
				      ACC_TARGET);
		ASSERT_NE(NULL, self->mr) TH_LOG("%s", strerror(errno));
		m.addr = (uintptr_t)self->region;
		m.len = TLEN;
		m.rkey = self->mr->rkey;
	} else {
		RU_ASSERT_OK(ru_buf_alloc(&self->src, self->c.ep.pd, TLEN,
					  IBV_ACCESS_LOCAL_WRITE));
	}
	m.type = M_INFO;
	RU_ASSERT_OK(ru_msg_exchange(&self->c.ep, &self->c.ch, !is_a(), &m,
				     &peer, IO_MS));

	for (r = 0; r < ROUNDS; r++) {
		if (!is_a()) {
			/* b: Write, Flush, Atomic Write; then tell a */
			uint32_t len = 8 + 8 * ru_rand(&rng, TLEN / 16);
			uint64_t off = 8 * ru_rand(&rng, (TLEN - len) / 8 + 1);
			uint64_t seed = ru_rng(&rng), val = ru_rng(&rng);
			uint64_t woff = off + 8 * ru_rand(&rng, len / 8);
			struct fop ops[3];
			struct ru_msg res;

			ru_fill(self->src.addr, len, seed);
			memset(ops, 0, sizeof(ops));
			ops[0].kind = F_WRITE;
			ops[0].wr_id = 3 * r;
			ops[0].raddr = peer.addr + off;
			ops[0].rkey = peer.rkey;
			ops[0].laddr = (uintptr_t)self->src.addr;
			ops[0].lkey = self->src.mr->lkey;
			ops[0].len = len;
			ops[1].kind = F_FLUSH;
			ops[1].wr_id = 3 * r + 1;
			ops[1].flags = IBV_SEND_SIGNALED;
			ops[1].raddr = peer.addr + off;
			ops[1].rkey = peer.rkey;
			ops[1].len = len;
			ops[1].type = IBV_FLUSH_GLOBAL;
			ops[1].level = r % 2 ? IBV_FLUSH_MR : IBV_FLUSH_RANGE;
			ops[2].kind = F_AW;
			ops[2].wr_id = 3 * r + 2;
			ops[2].flags = IBV_SEND_SIGNALED;
			ops[2].raddr = peer.addr + woff;
			ops[2].rkey = peer.rkey;
			ops[2].a = val;
			ASSERT_EQ(0, fop_post(self->c.ep.qpx, ops, 3));
			for (int i = 1; i < 3; i++) {
				struct ru_wc w;
				char buf[200];

				ASSERT_EQ(1, ru_poll_send(&self->c.ep, &w, IO_MS))
					TH_LOG("round %d: %s", r, ru_errmsg());
				ASSERT_EQ((int)IBV_WC_SUCCESS, (int)w.status)
					TH_LOG("round %d: %s", r,
					       ru_wc_str(&w, buf, sizeof(buf)));
				ASSERT_EQ(ops[i].wr_id, w.wr_id);
				ASSERT_EQ((int)fop_wc_opcode(ops[i].kind),
					  (int)w.opcode);
				ASSERT_EQ(0u, w.byte_len);
			}
			/* before speaking: a waits for us, so it cannot close */
			EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.ep.qp))
				TH_LOG("round %d", r);
			memset(&m, 0, sizeof(m));
			m.type = M_CHECK;
			m.addr = off;
			m.len = len;
			m.seed = seed;
			m.addr2 = woff;
			m.value = val;
			RU_ASSERT_OK(ru_msg_send(&self->c.ep, &self->c.ch, &m,
						 IO_MS));
			/* not into peer: it holds a's region for the next round */
			RU_ASSERT_OK(ru_msg_recv(&self->c.ep, &self->c.ch,
						 M_RESULT, &res, IO_MS));
			EXPECT_EQ(0u, res.status)
				TH_LOG("round %d: a saw %u wrong bytes", r,
				       res.status);
			fails += res.status != 0;
		} else {
			/* a: the data must be here when the message is */
			struct ru_msg res;
			uint8_t *want;
			uint32_t bad = 0;
			long d;

			RU_ASSERT_OK(ru_msg_recv(&self->c.ep, &self->c.ch,
						 M_CHECK, &m, IO_MS));
			want = malloc(m.len);
			ASSERT_NE(NULL, want);
			ru_fill(want, m.len, m.seed);
			fl_st64(want + (m.addr2 - m.addr), m.value);
			d = ru_first_diff(self->region + m.addr, want, m.len);
			if (d >= 0) {
				for (uint64_t i = 0; i < m.len; i++)
					bad += self->region[m.addr + i] != want[i];
				TH_LOG("round %d: +%llu len %llu: first wrong "
				       "byte %ld, %u wrong", r,
				       (unsigned long long)m.addr,
				       (unsigned long long)m.len, d, bad);
			}
			free(want);
			EXPECT_EQ(0u, bad);
			fails += bad != 0;
			EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.ep.qp))
				TH_LOG("round %d", r);
			memset(&res, 0, sizeof(res));
			res.type = M_RESULT;
			res.status = bad;
			RU_ASSERT_OK(ru_msg_send(&self->c.ep, &self->c.ch, &res,
						 IO_MS));
		}
	}
	/*
	 * No QP state check here: after the last M_RESULT a may already have
	 * torn its side down, and b's QP then rightly goes to ERR.  Both
	 * sides checked theirs inside the loop, while the other one waited.
	 */
	printf("# %d rounds, %d failed\n", ROUNDS, fails);
}

/* ---- one side upstream --------------------------------------------------------- */

FIXTURE(upstream) {
	struct ru_listener l;
	struct pconn c;
	struct ibv_mr *mr;
	uint8_t *page;
};

FIXTURE_SETUP(upstream)
{
	if (!ru_pair_role())
		SKIP(return, "SIWX_ROLE is not a or b (pair topology only)");
	if (local_kind() < 0 || peer_kind() < 0 ||
	    local_kind() + peer_kind() != 1)
		SKIP(return, "needs siwx and upstream (SIWX_PAIR_ORDER '%s')",
		     ru_env("SIWX_PAIR_ORDER", ""));
}

FIXTURE_TEARDOWN(upstream)
{
	pconn_close(&self->c);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	ru_listener_close(&self->l);
	free(self->page);
}

/*
 * Connect on port n (the upstream side without the new send ops: our
 * libsiw refuses them there), register a page of pattern, exchange INFO.
 */
static void up_open(struct __test_metadata *_metadata,
		    FIXTURE_DATA(upstream) *self, int n, struct ru_msg *peer,
		    uint64_t *seed)
{
	struct ru_msg mine;
	void *p;

	RU_ASSERT_OK(pconn_open(&self->l, &self->c, n,
				local_kind() ? FL_SEND_OPS : BASIC_OPS));
	ASSERT_EQ(0, posix_memalign(&p, PAGE, PAGE));
	self->page = p;
	*seed = ru_random_seed();
	ru_fill(self->page, PAGE, *seed);
	/* plain remote access: "opcode unknown" is the only reason left */
	self->mr = ibv_reg_mr(self->c.ep.pd, self->page, PAGE,
			      IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ);
	ASSERT_NE(NULL, self->mr) TH_LOG("ibv_reg_mr: %s", strerror(errno));
	memset(&mine, 0, sizeof(mine));
	mine.type = M_INFO;
	mine.addr = (uintptr_t)self->page;
	mine.rkey = self->mr->rkey;
	mine.value = fl_dev_caps(self->c.ep.id->verbs,
				 local_kind() ? "siwx side" : "upstream side");
	RU_ASSERT_OK(ru_msg_exchange(&self->c.ep, &self->c.ch, !is_a(), &mine,
				     peer, IO_MS));
	if (local_kind()) {
		EXPECT_TRUE(!!(mine.value & DEV_FLUSH_GLOBAL));
		EXPECT_FALSE(!!(peer->value & (DEV_FLUSH_GLOBAL |
					       DEV_FLUSH_PERSISTENT |
					       DEV_ATOMIC_WRITE)));
	}
}

/* the siwx side probes with op; the upstream side must be terminated */
static void probe(struct __test_metadata *_metadata,
		  FIXTURE_DATA(upstream) *self, int n, enum fop_kind kind)
{
	struct ru_msg peer;
	struct fop op;
	struct ru_wc w;
	char buf[200];
	uint64_t seed, t0;
	int rc;

	up_open(_metadata, self, n, &peer, &seed);
	if (!local_kind()) {
		rc = ru_wait_qp_state(self->c.ep.qp, IBV_QPS_ERR, 30000);
		printf("# upstream side: QP %s\n",
		       ru_qp_state_str(ru_qp_state(self->c.ep.qp)));
		EXPECT_EQ(0, rc) TH_LOG("the connection was not terminated");
		RU_EXPECT_PATTERN(self->page, PAGE, seed, "upstream side page");
		return;
	}
	memset(&op, 0, sizeof(op));
	op.kind = kind;
	op.wr_id = 1;
	op.flags = IBV_SEND_SIGNALED;
	op.raddr = peer.addr + 64;
	op.rkey = peer.rkey;
	op.len = 64;
	op.type = IBV_FLUSH_GLOBAL;
	op.level = IBV_FLUSH_RANGE;
	op.a = 0x5a5a5a5a5a5a5a5aull;
	/*
	 * The upstream side's INFO Send, whose bytes we have, may still be
	 * in its transmit path: a probe arriving then meets upstream's bug
	 * that patch 0028 fixes (the Terminate dropped while an FPDU is in
	 * transmission; its Send then completes with a local QP error and
	 * our probe is flushed without a Terminate: CI of 2026-12-05, with
	 * the host loaded). Let that transmit path finish first.
	 */
	usleep(200 * 1000);
	t0 = ru_now_ms();
	rc = fop_post(self->c.ep.qpx, &op, 1);
	ASSERT_EQ(0, rc) TH_LOG("post %s: %s", fop_name(kind), strerror(rc));
	rc = ru_poll_send(&self->c.ep, &w, 5000);
	ASSERT_EQ(1, rc) TH_LOG("the %s probe did not complete within 5 s",
				fop_name(kind));
	printf("# probe %s: %s after %llu ms\n", fop_name(kind),
	       ru_wc_str(&w, buf, sizeof(buf)),
	       (unsigned long long)(ru_now_ms() - t0));
	EXPECT_EQ(1u, w.wr_id);
	EXPECT_EQ((int)IBV_WC_REM_INV_REQ_ERR, (int)w.status)
		TH_LOG("%s, want IBV_WC_REM_INV_REQ_ERR",
		       ibv_wc_status_str(w.status));
	EXPECT_EQ(0, ru_wait_qp_state(self->c.ep.qp, IBV_QPS_ERR, 5000));
}

TEST_F_TIMEOUT(upstream, flush_probe_refused, 300)
{
	probe(_metadata, self, 2, F_FLUSH);
}

TEST_F_TIMEOUT(upstream, aw_probe_refused, 300)
{
	probe(_metadata, self, 3, F_AW);
}

TEST_F_TIMEOUT(upstream, post_refused_without_cap, 300)
{
	struct ru_msg peer, m;
	uint64_t seed, v = 1;
	uint32_t fails = 0;
	struct ru_wc w;
	int rc;

	up_open(_metadata, self, 4, &peer, &seed);
	if (!local_kind()) {
		struct ibv_qp_init_attr_ex qa;
		struct ibv_qp *qp;
		struct ibv_qp_ex *qpx = self->c.ep.qpx;

		/* create: IBV_QP_EX_WITH_FLUSH is not there to ask for */
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = self->c.ep.scq;
		qa.recv_cq = self->c.ep.rcq;
		qa.cap.max_send_wr = 4;
		qa.cap.max_recv_wr = 4;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		qa.pd = self->c.ep.pd;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE |
				    IBV_QP_EX_WITH_FLUSH;
		errno = 0;
		qp = ibv_create_qp_ex(self->c.ep.id->verbs, &qa);
		printf("# upstream side: ibv_create_qp_ex(WITH_FLUSH): %s\n",
		       qp ? "created" : strerror(errno));
		EXPECT_EQ(NULL, qp);
		EXPECT_EQ(EOPNOTSUPP, errno);
		fails += qp != NULL;
		if (qp)
			ibv_destroy_qp(qp);
		qa.send_ops_flags = IBV_QP_EX_WITH_ATOMIC_WRITE;
		qp = ibv_create_qp_ex(self->c.ep.id->verbs, &qa);
		EXPECT_EQ(NULL, qp);
		fails += qp != NULL;
		if (qp)
			ibv_destroy_qp(qp);

		/* post on the connected QP: refused, nothing queued */
		ASSERT_NE(NULL, qpx);
		ibv_wr_start(qpx);
		qpx->wr_id = 1;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_flush(qpx, peer.rkey, peer.addr, 64, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_RANGE);
		rc = ibv_wr_complete(qpx);
		rc = rc < 0 ? -rc : rc;
		printf("# upstream side: ibv_wr_flush: %s\n", strerror(rc));
		EXPECT_EQ(EOPNOTSUPP, rc);
		fails += rc != EOPNOTSUPP;
		ibv_wr_start(qpx);
		qpx->wr_id = 2;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_atomic_write(qpx, peer.rkey, peer.addr, &v);
		rc = ibv_wr_complete(qpx);
		rc = rc < 0 ? -rc : rc;
		printf("# upstream side: ibv_wr_atomic_write: %s\n",
		       strerror(rc));
		EXPECT_EQ(EOPNOTSUPP, rc);
		fails += rc != EOPNOTSUPP;
		rc = ru_poll_send(&self->c.ep, &w, 1000);
		EXPECT_EQ(0, rc) TH_LOG("a refused post completed");
		fails += rc != 0;
		EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.ep.qp));
	}
	/* verdicts: b first, then a (b is the upstream side here or there) */
	memset(&m, 0, sizeof(m));
	m.type = M_RESULT;
	if (!is_a()) {
		m.status = fails;
		RU_ASSERT_OK(ru_msg_send(&self->c.ep, &self->c.ch, &m, IO_MS));
		RU_ASSERT_OK(ru_msg_recv(&self->c.ep, &self->c.ch, M_RESULT,
					 &peer, IO_MS));
	} else {
		RU_ASSERT_OK(ru_msg_recv(&self->c.ep, &self->c.ch, M_RESULT,
					 &peer, IO_MS));
	}
	if (local_kind()) {
		long d = ru_check(self->page, PAGE, seed);

		EXPECT_EQ(-1, d) TH_LOG("our page changed at %ld", d);
		fails += d != -1;
	}
	if (is_a()) {
		m.status = fails;
		RU_ASSERT_OK(ru_msg_send(&self->c.ep, &self->c.ch, &m, IO_MS));
	}
	EXPECT_EQ(0u, peer.status) TH_LOG("the peer saw %u problems",
					  peer.status);
}

int main(int argc, char **argv)
{
	char *nargv[4] = { argv[0], "-f", NULL, NULL };

	if (argc == 1 && ru_pair_kind(0) >= 0 && ru_pair_kind(1) >= 0) {
		nargv[2] = ru_pair_kind(0) && ru_pair_kind(1) ? "siwx" :
								"upstream";
		return test_harness_run(3, nargv);
	}
	return test_harness_run(argc, argv);
}

#else /* !HAVE_FLUSH_API */

int main(void)
{
	(void)test_harness_run;	/* no tests here */
	printf("TAP version 13\n1..0 # SKIP built against an rdma-core "
	       "without ibv_wr_flush() (Debian's 44)\n");
	return 4;	/* KSFT_SKIP */
}

#endif
