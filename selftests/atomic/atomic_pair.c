// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * atomic_pair - RFC 7306 atomics between two VMs (pair topology).
 *
 * The same binary runs in both VMs (SIWX_ROLE a listens on SIWX_LOCAL, b
 * connects to SIWX_PEER, retrying while a boots). SIWX_PAIR_ORDER
 * (set by run.sh: ours-ours, ours-upstream, upstream-ours; VM a's module
 * first) says which module runs where; without arguments the program
 * runs the fixture that fits:
 *
 *   siwx.*      both VMs run siwx
 *     fetch_add_0_probe   each side probes the other with FetchAdd(0): it
 *                         succeeds, returns the peer's value, changes
 *                         nothing
 *     fetch_add_total     VM a's word is hammered with FetchAdd(1) by two
 *                         local QPs (loopback) and two QPs of VM b: the
 *                         total is exact and every value is returned once
 *   upstream.*  one side runs unmodified upstream siw
 *     fetch_add_0_probe_refused  the siwx side probes the upstream side
 *                         with FetchAdd(0): it must end in
 *                         IBV_WC_REM_INV_REQ_ERR within 5 s (upstream
 *                         answers an unknown opcode with a Terminate),
 *                         the upstream side's memory unchanged
 *     post_refused_without_cap   on the upstream side our libsiw reports
 *                         atomic_cap NONE and refuses to post an atomic
 *
 * Each test uses its own connections (port SIWX_ATOMIC_PAIR_PORT, 47300,
 * + 2 * test number) and the sides exchange verdicts where the connection
 * survives, so a problem seen by one side fails the test on both. Kernel
 * warnings on either side fail the run through the VM harness.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "siwx_test.h"
#include "atomic_common.h"

#define PAGE		4096
#define WORD_OFF	2048
#define NSLOT		4
#define SLOTSZ		256
#define NREMOTE		2	/* VM b's QPs in fetch_add_total */
#define NLOCAL		2	/* VM a's own QPs */
#define WINDOW		8
#define IO_MS		60000

/*
 * Messages (struct ru_msg): INFO addr/rkey the target word, value its
 * value, cap the sender's device atomic_cap; in fetch_add_total also
 * addr2/rkey2 where b writes its returned values and count the
 * iterations. RESULT and DONE: status, the failures the sender saw.
 */
enum { M_HELLO = 1, M_INFO, M_GO, M_DONE, M_RESULT };

/* ---- environment ---------------------------------------------------------- */

static int is_a(void)
{
	return ru_pair_role() == 'a';
}

static int local_kind(void) { return ru_pair_kind(is_a() ? 0 : 1); }
static int peer_kind(void) { return ru_pair_kind(is_a() ? 1 : 0); }

static int port_of(int n)
{
	return (int)ru_env_long("SIWX_ATOMIC_PAIR_PORT", 47300) + n;
}

static int dev_atomic_cap(struct ibv_context *ctx)
{
	struct ibv_device_attr da;

	if (ibv_query_device(ctx, &da))
		return -1;
	return da.atomic_cap;
}

/* ---- connections with a message channel ----------------------------------- */

struct pconn {
	struct ru_ep ep;
	struct ru_chan ch;
};

static void caps_for(struct ru_caps *caps, struct pconn *c)
{
	ru_caps_default(caps);
	ru_chan_caps(caps, &c->ch, NSLOT, SLOTSZ, SLOTSZ,
		     IBV_ACCESS_LOCAL_WRITE);
}

/* b: connect to the peer, retrying for retry_ms */
static int pconn_connect(struct pconn *c, int port, int retry_ms)
{
	struct ru_caps caps;

	memset(c, 0, sizeof(*c));
	caps_for(&caps, c);
	return ru_connect(&c->ep, ru_env("SIWX_LOCAL", "192.168.78.2"),
			  ru_env("SIWX_PEER", "192.168.78.1"), (uint16_t)port,
			  &caps, retry_ms);
}

/* a: accept one connection on l into c, QP in pd (NULL: own PD) */
static int pconn_accept(struct ru_listener *l, struct pconn *c,
			struct ibv_pd *pd, int wait_ms)
{
	struct ru_caps caps;
	int rc;

	memset(c, 0, sizeof(*c));
	caps_for(&caps, c);
	caps.shared_pd = pd;
	rc = ru_accept_start(l, &c->ep, &caps, wait_ms);
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

static int send_msg(struct pconn *c, const struct ru_msg *m)
{
	return ru_msg_send(&c->ep, &c->ch, m, IO_MS);
}

static int recv_msg(struct pconn *c, uint32_t type, struct ru_msg *m, int ms)
{
	return ru_msg_recv(&c->ep, &c->ch, type, m, ms);
}

/* INFO exchange: b (the MPA initiator) speaks first */
static int exchange_info(struct pconn *c, const struct ru_msg *mine,
			 struct ru_msg *peer)
{
	return ru_msg_exchange(&c->ep, &c->ch, !is_a(), mine, peer, IO_MS);
}

/*
 * The probe: FetchAdd(0) (wr_id 1) of the peer's word into rb, whose 8
 * result bytes are 0xc3 before. 0 or a positive errno (post_atomic).
 */
static int post_probe(struct ru_ep *ep, struct ru_buf *rb,
		      const struct ru_msg *peer)
{
	struct aop op;

	memset(rb->addr, 0xc3, 64);
	memset(&op, 0, sizeof(op));
	op.kind = AOP_FA;
	op.add = 0;
	op.raddr = peer->addr;
	op.rkey = peer->rkey;
	return post_atomic(ep->qp, NULL, API_POST, &op, (uintptr_t)rb->addr,
			   rb->mr->lkey, 1, IBV_SEND_SIGNALED);
}

/* ---- siwx on both sides ------------------------------------------------------ */

FIXTURE(siwx) {
	struct ru_listener l, l2;
	struct pconn c[NREMOTE];
	struct ibv_pd *pd;
	struct ibv_mr *mr, *log_mr;
	uint8_t *page;
	uint64_t *log;
	int nconn;
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
	int i;

	for (i = 0; i < self->nconn; i++)
		pconn_close(&self->c[i]);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->log_mr)
		ibv_dereg_mr(self->log_mr);
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	ru_listener_close(&self->l);
	ru_listener_close(&self->l2);
	free(self->page);
	free(self->log);
}

/* Each side probes the other's word with FetchAdd(0). */
TEST_F_TIMEOUT(siwx, fetch_add_0_probe, 300)
{
	struct pconn *c = &self->c[0];
	struct ru_msg mine, peer, res;
	uint64_t val = ru_random_seed(), got;
	struct ru_buf rb = {};
	struct ibv_wc wc;
	int rc, fails = 0;
	void *p;

	ASSERT_EQ(0, posix_memalign(&p, PAGE, PAGE));
	self->page = p;
	ru_fill(self->page, PAGE, val);
	memcpy(self->page + WORD_OFF, &val, 8);
	if (is_a()) {
		RU_ASSERT_OK(ru_listen(&self->l, ru_env("SIWX_LOCAL", "192.168.78.1"),
				       (uint16_t)port_of(0), 4));
		RU_ASSERT_OK(pconn_accept(&self->l, c, NULL, 200000));
	} else {
		RU_ASSERT_OK(pconn_connect(c, port_of(0), 200000));
	}
	self->nconn = 1;
	self->mr = ibv_reg_mr(c->ep.pd, self->page, PAGE, ACC_ATOMIC);
	ASSERT_NE(NULL, self->mr) TH_LOG("ibv_reg_mr: %s", strerror(errno));
	RU_ASSERT_OK(ru_buf_alloc(&rb, c->ep.pd, 64, IBV_ACCESS_LOCAL_WRITE));
	memset(&mine, 0, sizeof(mine));
	mine.type = M_INFO;
	mine.addr = (uintptr_t)(self->page + WORD_OFF);
	mine.rkey = self->mr->rkey;
	mine.value = val;
	mine.cap = (uint32_t)dev_atomic_cap(c->ep.id->verbs);
	RU_ASSERT_OK(exchange_info(c, &mine, &peer));
	printf("# atomic_cap: mine %u, peer's %u\n", mine.cap, peer.cap);
	EXPECT_EQ((uint32_t)IBV_ATOMIC_HCA, mine.cap);
	EXPECT_EQ((uint32_t)IBV_ATOMIC_HCA, peer.cap);

	rc = post_probe(&c->ep, &rb, &peer);
	ASSERT_EQ(0, rc) TH_LOG("post: %s", strerror(rc));
	rc = ru_poll(c->ep.scq, &wc, 5000);
	ASSERT_EQ(1, rc) TH_LOG("FetchAdd(0) did not complete within 5 s");
	EXPECT_EQ((int)IBV_WC_SUCCESS, (int)wc.status)
		TH_LOG("FetchAdd(0): %s", ibv_wc_status_str(wc.status));
	if (wc.status != IBV_WC_SUCCESS)
		fails++;
	memcpy(&got, rb.addr, 8);
	printf("# FetchAdd(0) returned 0x%016llx, the peer's word is 0x%016llx\n",
	       (unsigned long long)got, (unsigned long long)peer.value);
	if (got != peer.value)
		fails++;
	EXPECT_EQ(peer.value, got);

	/* verdicts: b first; our word must be unchanged by the peer's probe */
	memset(&res, 0, sizeof(res));
	res.type = M_RESULT;
	if (is_a()) {
		RU_ASSERT_OK(recv_msg(c, M_RESULT, &peer, IO_MS));
		if (ld64(self->page + WORD_OFF) != val)
			fails++;
		res.status = (uint32_t)fails;
		RU_ASSERT_OK(send_msg(c, &res));
	} else {
		/* a's probe of our word happened before a's verdict */
		res.status = (uint32_t)fails;
		RU_ASSERT_OK(send_msg(c, &res));
		RU_ASSERT_OK(recv_msg(c, M_RESULT, &peer, IO_MS));
		if (ld64(self->page + WORD_OFF) != val)
			fails++;
	}
	EXPECT_EQ(val, ld64(self->page + WORD_OFF))
		TH_LOG("our word changed under the peer's FetchAdd(0)");
	EXPECT_EQ(0u, peer.status) TH_LOG("the peer saw %u problems", peer.status);
	ru_buf_free(&rb);
}

struct pworker {
	struct ru_ep *ep;
	struct ru_buf buf;	/* WINDOW result slots, then the values */
	uint64_t raddr;
	uint32_t rkey;
	int iters;
	uint64_t *vals;
	char err[256];
};

static void *pworker_run(void *arg)
{
	struct pworker *w = arg;
	int posted = 0, done = 0, rc;
	struct ibv_wc wc;
	struct aop op;

	memset(&op, 0, sizeof(op));
	op.kind = AOP_FA;
	op.add = 1;
	op.raddr = w->raddr;
	op.rkey = w->rkey;
	while (done < w->iters) {
		while (posted < w->iters && posted - done < WINDOW) {
			rc = post_atomic(w->ep->qp, NULL, API_POST, &op,
					 (uintptr_t)(w->buf.addr +
						     8 * (posted % WINDOW)),
					 w->buf.mr->lkey, posted,
					 IBV_SEND_SIGNALED);
			if (rc) {
				snprintf(w->err, sizeof(w->err), "post: %s",
					 strerror(rc));
				return NULL;
			}
			posted++;
		}
		rc = ru_poll(w->ep->scq, &wc, IO_MS);
		if (rc != 1 || wc.status != IBV_WC_SUCCESS ||
		    wc.wr_id != (uint64_t)done || wc.opcode != IBV_WC_FETCH_ADD) {
			snprintf(w->err, sizeof(w->err),
				 "FetchAdd %d: %s (wr %llu, opcode %d)", done,
				 rc == 1 ? ibv_wc_status_str(wc.status) :
				 "no completion", (unsigned long long)wc.wr_id,
				 wc.opcode);
			return NULL;
		}
		memcpy(&w->vals[done], w->buf.addr + 8 * (done % WINDOW), 8);
		done++;
	}
	return NULL;
}

static int run_workers(struct pworker *w, int n)
{
	pthread_t th[NLOCAL > NREMOTE ? NLOCAL : NREMOTE];
	int i, bad = 0;

	for (i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, pworker_run, &w[i]))
			return -1;
	for (i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < n; i++)
		if (w[i].err[0]) {
			printf("# QP %d: %s\n", i, w[i].err);
			bad++;
		}
	return bad;
}

/*
 * VM a's word, FetchAdd(1) from NLOCAL QPs of a (loopback connections)
 * and NREMOTE QPs of b, WINDOW outstanding each.
 */
TEST_F_TIMEOUT(siwx, fetch_add_total, 400)
{
	int iters = (int)ru_env_long("SIWX_ATOMIC_PAIR_ITERS", 500);
	size_t total = (size_t)(NLOCAL + NREMOTE) * iters, k;
	struct pworker w[NLOCAL > NREMOTE ? NLOCAL : NREMOTE];
	struct ru_msg m, info, rinfo[NREMOTE];
	uint64_t init, t0;
	int i, rc, fails = 0;

	memset(w, 0, sizeof(w));
	if (is_a()) {
		const char *local = ru_env("SIWX_LOCAL", "192.168.78.1");
		struct ru_ep lc[NLOCAL], ls[NLOCAL];
		struct ru_caps caps;
		uint8_t *before;
		uint64_t *all;
		void *p;

		memset(lc, 0, sizeof(lc));
		memset(ls, 0, sizeof(ls));
		ASSERT_EQ(0, posix_memalign(&p, PAGE, PAGE));
		self->page = p;
		ru_fill(self->page, PAGE, ru_random_seed());
		init = 0x00000000ffffffffull - total / 2;
		memcpy(self->page + WORD_OFF, &init, 8);
		before = malloc(PAGE);
		self->log = calloc((size_t)NREMOTE * iters, 8);
		all = calloc(total, 8);
		ASSERT_TRUE(before && self->log && all);
		memcpy(before, self->page, PAGE);

		RU_ASSERT_OK(ru_listen(&self->l, local, (uint16_t)port_of(2), 8));
		RU_ASSERT_OK(ru_listen(&self->l2, local, (uint16_t)port_of(3), 8));
		self->pd = ibv_alloc_pd(self->l.id->verbs);
		ASSERT_NE(NULL, self->pd);
		self->mr = ibv_reg_mr(self->pd, self->page, PAGE, ACC_ATOMIC);
		self->log_mr = ibv_reg_mr(self->pd, self->log,
					  (size_t)NREMOTE * iters * 8,
					  IBV_ACCESS_LOCAL_WRITE |
					  IBV_ACCESS_REMOTE_WRITE);
		ASSERT_TRUE(self->mr && self->log_mr);

		/* own loopback QPs first (listener l2) */
		ru_caps_default(&caps);
		for (i = 0; i < NLOCAL; i++)
			RU_ASSERT_OK(ru_client_start(&lc[i], local, local,
						     (uint16_t)port_of(3), &caps,
						     RU_TIMEOUT_MS));
		caps.shared_pd = self->pd;
		for (i = 0; i < NLOCAL; i++) {
			RU_ASSERT_OK(ru_accept_start(&self->l2, &ls[i], &caps,
						     30000));
			RU_ASSERT_OK(ru_ep_wait_established(&ls[i], 30000));
		}
		for (i = 0; i < NLOCAL; i++)
			RU_ASSERT_OK(ru_client_finish(&lc[i], 30000));
		/* b's QPs (b may still be booting) */
		for (i = 0; i < NREMOTE; i++) {
			RU_ASSERT_OK(pconn_accept(&self->l, &self->c[i], self->pd,
						 200000));
			self->nconn = i + 1;
		}
		for (i = 0; i < NREMOTE; i++) {
			RU_ASSERT_OK(recv_msg(&self->c[i], M_HELLO, &m, IO_MS));
			memset(&info, 0, sizeof(info));
			info.type = M_INFO;
			info.addr = (uintptr_t)(self->page + WORD_OFF);
			info.rkey = self->mr->rkey;
			info.value = init;
			info.addr2 = (uintptr_t)(self->log + (size_t)i * iters);
			info.rkey2 = self->log_mr->rkey;
			info.count = (uint32_t)iters;
			info.cap = (uint32_t)dev_atomic_cap(self->pd->context);
			RU_ASSERT_OK(send_msg(&self->c[i], &info));
		}
		for (i = 0; i < NLOCAL; i++) {
			w[i].ep = &lc[i];
			w[i].raddr = info.addr;
			w[i].rkey = info.rkey;
			w[i].iters = iters;
			w[i].vals = all + (size_t)(NREMOTE + i) * iters;
			RU_ASSERT_OK(ru_buf_alloc(&w[i].buf, lc[i].pd, 64,
						  IBV_ACCESS_LOCAL_WRITE));
		}
		memset(&m, 0, sizeof(m));
		m.type = M_GO;
		for (i = 0; i < NREMOTE; i++)
			RU_ASSERT_OK(send_msg(&self->c[i], &m));
		t0 = ru_now_ms();
		fails += run_workers(w, NLOCAL);
		for (i = 0; i < NREMOTE; i++) {
			rc = recv_msg(&self->c[i], M_DONE, &m, 300000);
			if (rc) {
				printf("# b's QP %d: %s\n", i, ru_errmsg());
				fails++;
			} else if (m.status) {
				printf("# b's QP %d reports %u problems\n", i,
				       m.status);
				fails++;
			}
		}
		printf("# %d QPs x %d FetchAdds in %.1f s\n", NLOCAL + NREMOTE,
		       iters, (ru_now_ms() - t0) / 1000.0);
		uint64_t fin;

		memcpy(&fin, self->page + WORD_OFF, 8);
		printf("# word 0x%016llx -> 0x%016llx (want +%zu)\n",
		       (unsigned long long)init, (unsigned long long)fin, total);
		if (!fails) {
			EXPECT_EQ(init + total, fin);
			fails += fin != init + total;
			memcpy(all, self->log, (size_t)NREMOTE * iters * 8);
			qsort(all, total, 8, cmp_u64);
			for (k = 0; k < total; k++)
				if (all[k] != init + k)
					break;
			EXPECT_EQ(total, k)
				TH_LOG("returned values are not each value once: "
				       "sorted value %zu is 0x%llx", k,
				       (unsigned long long)all[k < total ? k : 0]);
			fails += k != total;
			memcpy(before + WORD_OFF, &fin, 8);
			EXPECT_EQ(0, memcmp(before, self->page, PAGE))
				TH_LOG("other bytes of the page changed");
		}
		memset(&m, 0, sizeof(m));
		m.type = M_RESULT;
		m.status = (uint32_t)fails;
		for (i = 0; i < NREMOTE; i++)
			send_msg(&self->c[i], &m);
		for (i = 0; i < NLOCAL; i++) {
			ru_buf_free(&w[i].buf);
			ru_ep_close(&lc[i]);
			ru_ep_close(&ls[i]);	/* not self->pd */
		}
		free(before);
		free(all);
		EXPECT_EQ(0, fails);
		return;
	}

	/* b */
	for (i = 0; i < NREMOTE; i++) {
		RU_ASSERT_OK(pconn_connect(&self->c[i], port_of(2),
					  i ? 60000 : 200000));
		self->nconn = i + 1;
	}
	usleep(RU_FIRST_SEND_DELAY_US);
	memset(&m, 0, sizeof(m));
	m.type = M_HELLO;
	for (i = 0; i < NREMOTE; i++)
		RU_ASSERT_OK(send_msg(&self->c[i], &m));
	for (i = 0; i < NREMOTE; i++) {
		RU_ASSERT_OK(recv_msg(&self->c[i], M_INFO, &rinfo[i], IO_MS));
		EXPECT_EQ((uint32_t)IBV_ATOMIC_HCA, rinfo[i].cap);
		w[i].ep = &self->c[i].ep;
		w[i].raddr = rinfo[i].addr;
		w[i].rkey = rinfo[i].rkey;
		w[i].iters = (int)rinfo[i].count;
		/* WINDOW result slots, then the values returned */
		RU_ASSERT_OK(ru_buf_alloc(&w[i].buf, self->c[i].ep.pd,
					  8 * WINDOW + (size_t)w[i].iters * 8,
					  IBV_ACCESS_LOCAL_WRITE));
		w[i].vals = (uint64_t *)(w[i].buf.addr + 8 * WINDOW);
	}
	for (i = 0; i < NREMOTE; i++)
		RU_ASSERT_OK(recv_msg(&self->c[i], M_GO, &m, IO_MS));
	fails += run_workers(w, NREMOTE);
	for (i = 0; i < NREMOTE; i++) {
		struct ru_msg *in = &rinfo[i];
		struct ibv_wc wc;

		/* per QP the values rise: the responder executes in order */
		for (k = 1; k < (size_t)w[i].iters; k++)
			if (w[i].vals[k] <= w[i].vals[k - 1])
				break;
		if (!w[i].err[0] && k != (size_t)w[i].iters) {
			printf("# QP %d: value %zu (0x%llx) not above the one "
			       "before\n", i, k, (unsigned long long)w[i].vals[k]);
			fails++;
		}
		memset(&m, 0, sizeof(m));
		m.type = M_DONE;
		m.status = w[i].err[0] ? 1 : 0;
		if (!w[i].err[0]) {
			rc = ru_post_send(&self->c[i].ep, IBV_WR_RDMA_WRITE,
					  &w[i].buf, 8 * WINDOW,
					  (size_t)w[i].iters * 8,
					  in->addr2, in->rkey2, 77,
					  IBV_SEND_SIGNALED);
			if (!rc)
				rc = ru_expect_success(self->c[i].ep.scq, 77, &wc,
						       IO_MS);
			if (rc) {
				printf("# QP %d: writing the values: %s\n", i,
				       ru_errmsg());
				m.status = 1;
			}
		}
		RU_ASSERT_OK(send_msg(&self->c[i], &m));
	}
	for (i = 0; i < NREMOTE; i++) {
		RU_ASSERT_OK(recv_msg(&self->c[i], M_RESULT, &m, 400000));
		EXPECT_EQ(0u, m.status) TH_LOG("VM a saw %u problems", m.status);
		ru_buf_free(&w[i].buf);
	}
	EXPECT_EQ(0, fails);
}

/* ---- one side upstream ------------------------------------------------------- */

FIXTURE(upstream) {
	struct ru_listener l;
	struct pconn c;
	struct ibv_mr *mr;
	uint8_t *page;
	int nconn;
};

FIXTURE_SETUP(upstream)
{
	if (!ru_pair_role())
		SKIP(return, "SIWX_ROLE is not a or b (pair topology only)");
	if (local_kind() < 0 || peer_kind() < 0 ||
	    local_kind() + peer_kind() != 1)
		SKIP(return, "needs siwx in one VM and upstream in the other "
		     "(SIWX_PAIR_ORDER '%s')", ru_env("SIWX_PAIR_ORDER", ""));
}

FIXTURE_TEARDOWN(upstream)
{
	if (self->nconn)
		pconn_close(&self->c);
	if (self->mr)
		ibv_dereg_mr(self->mr);
	ru_listener_close(&self->l);
	free(self->page);
}

/* Connect on port n, register a page with a known word, exchange INFO. */
static void up_open(struct __test_metadata *_metadata,
		    FIXTURE_DATA(upstream) *self, int n, struct ru_msg *peer,
		    uint64_t *val)
{
	struct ru_msg mine;
	void *p;

	ASSERT_EQ(0, posix_memalign(&p, PAGE, PAGE));
	self->page = p;
	*val = ru_random_seed();
	ru_fill(self->page, PAGE, *val);
	memcpy(self->page + WORD_OFF, val, 8);
	if (is_a()) {
		RU_ASSERT_OK(ru_listen(&self->l, ru_env("SIWX_LOCAL", "192.168.78.1"),
				       (uint16_t)port_of(n), 4));
		RU_ASSERT_OK(pconn_accept(&self->l, &self->c, NULL, 200000));
	} else {
		RU_ASSERT_OK(pconn_connect(&self->c, port_of(n), 200000));
	}
	self->nconn = 1;
	/* REMOTE_ATOMIC: a pure "opcode unknown" case for the upstream side */
	self->mr = ibv_reg_mr(self->c.ep.pd, self->page, PAGE, ACC_ATOMIC);
	if (!self->mr) {
		printf("# ibv_reg_mr with REMOTE_ATOMIC: %s; registering "
		       "without\n", strerror(errno));
		self->mr = ibv_reg_mr(self->c.ep.pd, self->page, PAGE,
				      ACC_NOATOMIC);
	}
	ASSERT_NE(NULL, self->mr) TH_LOG("ibv_reg_mr: %s", strerror(errno));
	memset(&mine, 0, sizeof(mine));
	mine.type = M_INFO;
	mine.addr = (uintptr_t)(self->page + WORD_OFF);
	mine.rkey = self->mr->rkey;
	mine.value = *val;
	mine.cap = (uint32_t)dev_atomic_cap(self->c.ep.id->verbs);
	RU_ASSERT_OK(exchange_info(&self->c, &mine, peer));
	printf("# %s side (%s): atomic_cap mine %u, peer's %u\n",
	       local_kind() ? "siwx" : "upstream", is_a() ? "a" : "b",
	       mine.cap, peer->cap);
	if (local_kind()) {
		EXPECT_EQ((uint32_t)IBV_ATOMIC_HCA, mine.cap);
		EXPECT_EQ((uint32_t)IBV_ATOMIC_NONE, peer->cap);
	} else {
		EXPECT_EQ((uint32_t)IBV_ATOMIC_NONE, mine.cap);
		EXPECT_EQ((uint32_t)IBV_ATOMIC_HCA, peer->cap);
	}
}

/*
 * RFC 7306: a FetchAdd with Add Data 0 probes whether the peer supports
 * atomics. The siwx side sends it; upstream siw answers the unknown
 * opcode 0xA with a Terminate. The probe must end in
 * IBV_WC_REM_INV_REQ_ERR within 5 s without a result; the upstream
 * side's memory stays as it was and its QP goes to error.
 */
TEST_F_TIMEOUT(upstream, fetch_add_0_probe_refused, 300)
{
	struct ru_msg peer;
	struct ru_buf rb = {};
	struct ibv_wc wc;
	uint64_t val, t0;
	int rc, i;

	up_open(_metadata, self, 4, &peer, &val);
	if (_metadata->exit_code)
		return;
	if (!local_kind()) {
		/* upstream side: wait for the Terminate to tear it down */
		rc = ru_wait_qp_state(self->c.ep.qp, IBV_QPS_ERR, 30000);
		printf("# upstream side: QP %s\n",
		       ru_qp_state_str(ru_qp_state(self->c.ep.qp)));
		EXPECT_EQ(0, rc) TH_LOG("the connection was not terminated");
		EXPECT_EQ(val, ld64(self->page + WORD_OFF));
		return;
	}
	RU_ASSERT_OK(ru_buf_alloc(&rb, self->c.ep.pd, 64, IBV_ACCESS_LOCAL_WRITE));
	t0 = ru_now_ms();
	rc = post_probe(&self->c.ep, &rb, &peer);
	ASSERT_EQ(0, rc) TH_LOG("post FetchAdd(0): %s", strerror(rc));
	rc = ru_poll(self->c.ep.scq, &wc, 5000);
	ASSERT_EQ(1, rc) TH_LOG("the probe did not complete within 5 s");
	printf("# probe: %s after %llu ms\n", ibv_wc_status_str(wc.status),
	       (unsigned long long)(ru_now_ms() - t0));
	EXPECT_EQ(1u, wc.wr_id);
	EXPECT_EQ((int)IBV_WC_REM_INV_REQ_ERR, (int)wc.status)
		TH_LOG("probe: %s, want IBV_WC_REM_INV_REQ_ERR",
		       ibv_wc_status_str(wc.status));
	for (i = 0; i < 8; i++)
		if (rb.addr[i] != 0xc3)
			break;
	EXPECT_EQ(8, i) TH_LOG("a result was written for the refused probe");
	EXPECT_EQ(0, ru_wait_qp_state(self->c.ep.qp, IBV_QPS_ERR, 5000));
	ru_buf_free(&rb);
}

/*
 * Our libsiw on the upstream module: the device reports no atomics and
 * an atomic work request is refused at post time (the upstream kernel
 * would not know the opcode). The siwx side checks that its word stays.
 */
TEST_F_TIMEOUT(upstream, post_refused_without_cap, 300)
{
	struct ru_msg peer, m;
	struct ru_buf rb = {};
	struct ibv_wc wc;
	uint64_t val;
	struct aop op;
	int rc, fails = 0;

	up_open(_metadata, self, 6, &peer, &val);
	if (_metadata->exit_code)
		return;
	if (!local_kind()) {
		RU_ASSERT_OK(ru_buf_alloc(&rb, self->c.ep.pd, 64,
					  IBV_ACCESS_LOCAL_WRITE));
		memset(&op, 0, sizeof(op));
		op.kind = AOP_FA;
		op.add = 1;
		op.raddr = peer.addr;
		op.rkey = peer.rkey;
		rc = post_atomic(self->c.ep.qp, NULL, API_POST, &op,
				 (uintptr_t)rb.addr, rb.mr->lkey, 1,
				 IBV_SEND_SIGNALED);
		printf("# upstream side: ibv_post_send(FetchAdd) = %d (%s)\n",
		       rc, strerror(rc));
		EXPECT_NE(0, rc);
		fails += rc == 0;
		rc = ru_poll(self->c.ep.scq, &wc, 1000);
		if (rc == 1)
			printf("# completion: %s\n", ibv_wc_status_str(wc.status));
		EXPECT_EQ(0, rc) TH_LOG("the refused atomic completed");
		fails += rc != 0;
		EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.ep.qp));
		ru_buf_free(&rb);
	}
	/*
	 * Verdicts, b first and a last (see interop.c): the upstream side
	 * has tried its post before it speaks, so the siwx side checks its
	 * word after hearing from it.
	 */
	memset(&m, 0, sizeof(m));
	m.type = M_RESULT;
	if (!is_a()) {
		m.status = (uint32_t)fails;
		RU_ASSERT_OK(send_msg(&self->c, &m));
		RU_ASSERT_OK(recv_msg(&self->c, M_RESULT, &peer, IO_MS));
	} else {
		RU_ASSERT_OK(recv_msg(&self->c, M_RESULT, &peer, IO_MS));
	}
	if (local_kind()) {
		EXPECT_EQ(val, ld64(self->page + WORD_OFF))
			TH_LOG("our word changed");
		fails += val != ld64(self->page + WORD_OFF);
	}
	if (is_a()) {
		m.status = (uint32_t)fails;
		RU_ASSERT_OK(send_msg(&self->c, &m));
	}
	EXPECT_EQ(0u, peer.status) TH_LOG("the peer saw %u problems", peer.status);
}

/*
 * Without arguments, run the fixture that fits SIWX_PAIR_ORDER: siwx.*
 * for ours-ours, upstream.* when one side is upstream.
 */
int main(int argc, char **argv)
{
	char *nargv[4] = { argv[0], "-f", NULL, NULL };

	if (argc == 1 && ru_pair_kind(0) >= 0 && ru_pair_kind(1) >= 0) {
		nargv[2] = ru_pair_kind(0) && ru_pair_kind(1) ? "siwx" : "upstream";
		return test_harness_run(3, nargv);
	}
	return test_harness_run(argc, argv);
}
