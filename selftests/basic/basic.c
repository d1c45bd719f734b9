// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * basic - single-VM functional tests of siw through librdmacm.
 *
 * Both ends live in this process: the server listens on SIWX_ADDR0 (siw0),
 * the client binds SIWX_ADDR1 (siw1) and connects to it. One thread drives
 * both ends (rdma_cm is used asynchronously), every wait is bounded.
 *
 * Builds against rdma-core 56 and Debian's stock rdma-core 44 alike.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "siwx_test.h"

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ)

/* ---- environment ----------------------------------------------------- */

TEST(devices)
{
	const char *want[2] = { ru_env("SIWX_DEV0", "siw0"),
				ru_env("SIWX_DEV1", "siw1") };
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	struct ibv_device_attr da;
	int n = 0, i, j, found = 0;

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list) TH_LOG("ibv_get_device_list: %s",
				     strerror(errno));
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);

		printf("# device %s (transport %d)\n", name,
		       list[i]->transport_type);
		for (j = 0; j < 2; j++)
			if (!strcmp(name, want[j])) {
				found |= 1 << j;
				if (!ctx)
					ctx = ibv_open_device(list[i]);
			}
	}
	EXPECT_EQ(3, found) TH_LOG("expected devices %s and %s", want[0],
				   want[1]);
	ASSERT_NE(NULL, ctx) TH_LOG("cannot open %s: %s", want[0],
				    strerror(errno));
	ASSERT_EQ(0, ibv_query_device(ctx, &da));
	printf("# %s: fw %s max_qp_wr %d max_sge %d max_qp_rd_atom %d "
	       "max_qp_init_rd_atom %d max_mr_size %llu\n",
	       ibv_get_device_name(ctx->device), da.fw_ver, da.max_qp_wr,
	       da.max_sge, da.max_qp_rd_atom, da.max_qp_init_rd_atom,
	       (unsigned long long)da.max_mr_size);
	ru_print_lib_info(stdout);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
}

/* ---- one connection, simple traffic ----------------------------------- */

#define NBUF 8

FIXTURE(pair) {
	struct ru_pair p;
	struct ru_buf b[NBUF];
	uint64_t seed;
};

FIXTURE_SETUP(pair)
{
	self->seed = ru_random_seed();
	RU_ASSERT_OK(ru_pair_open(&self->p, NULL, NULL));
}

FIXTURE_TEARDOWN(pair)
{
	int i;

	for (i = 0; i < NBUF; i++)
		ru_buf_free(&self->b[i]);
	ru_pair_close(&self->p);
}

TEST_F(pair, connect_disconnect)
{
	printf("# client %s on %s, server %s on %s\n", ru_addr1(),
	       ibv_get_device_name(self->p.cli.id->verbs->device), ru_addr0(),
	       ibv_get_device_name(self->p.srv.id->verbs->device));
	/*
	 * With siw1 in a namespace of its own (SIWX_NETNS1) the ends are on
	 * two devices and the traffic crosses the veth pair; with both
	 * addresses in one namespace rdma_cm may put both on siw0.
	 */
	if (getenv("SIWX_NETNS1")) {
		ASSERT_STREQ(ru_env("SIWX_DEV1", "siw1"),
			     ibv_get_device_name(self->p.cli.id->verbs->device));
		ASSERT_STREQ(ru_env("SIWX_DEV0", "siw0"),
			     ibv_get_device_name(self->p.srv.id->verbs->device));
	}
	ASSERT_EQ(IBV_QPS_RTS, ru_qp_state(self->p.cli.qp));
	ASSERT_EQ(IBV_QPS_RTS, ru_qp_state(self->p.srv.qp));
	ASSERT_EQ(0, rdma_disconnect(self->p.cli.id));
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->p.cli, RU_TIMEOUT_MS));
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->p.srv, RU_TIMEOUT_MS));
	printf("# after disconnect: client QP %s, server QP %s\n",
	       ru_qp_state_str(ru_qp_state(self->p.cli.qp)),
	       ru_qp_state_str(ru_qp_state(self->p.srv.qp)));
}

/* Messages in both directions, several sizes, queued back to back. */
TEST_F(pair, send_recv_both_directions)
{
	static const size_t sizes[] = { 1, 17, 1000, 4096, 65536 };
	const int n = sizeof(sizes) / sizeof(sizes[0]);
	struct ru_ep *ep[2] = { &self->p.cli, &self->p.srv };
	size_t slot = 65536 + RU_GUARD;
	struct ibv_wc wc;
	int dir, i;

	for (dir = 0; dir < 2; dir++) {
		struct ru_ep *tx = ep[dir], *rx = ep[!dir];
		struct ru_buf *src = &self->b[2 * dir], *dst = &self->b[2 * dir + 1];

		RU_ASSERT_OK(ru_buf_alloc(src, tx->pd, n * slot, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(dst, rx->pd, n * slot, ACC_ALL));
		for (i = 0; i < n; i++) {
			ru_fill(src->addr + i * slot, sizes[i], self->seed + dir * 100 + i);
			RU_ASSERT_OK(ru_post_recv(rx, dst, i * slot, slot, i));
		}
		for (i = 0; i < n; i++)
			RU_ASSERT_OK(ru_post_send(tx, IBV_WR_SEND, src, i * slot,
						  sizes[i], 0, 0, 100 + i,
						  IBV_SEND_SIGNALED));
		for (i = 0; i < n; i++)
			RU_ASSERT_WC_OK(tx->scq, 100 + i, &wc);
		for (i = 0; i < n; i++) {
			RU_ASSERT_WC_OK(rx->rcq, i, &wc);
			ASSERT_EQ(IBV_WC_RECV, (int)wc.opcode);
			ASSERT_EQ(sizes[i], wc.byte_len);
			RU_ASSERT_PATTERN(dst->addr + i * slot, sizes[i],
					  self->seed + dir * 100 + i, "recv");
		}
	}
}

/* Inline sends (small payloads copied into the WQE). */
TEST_F(pair, send_inline)
{
	struct ru_caps cc, sc;
	struct ibv_wc wc;
	int i;

	ru_pair_close(&self->p);
	ru_caps_default(&cc);
	ru_caps_default(&sc);
	cc.max_inline = 64;
	RU_ASSERT_OK(ru_pair_open(&self->p, &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[0], self->p.cli.pd, 64, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[1], self->p.srv.pd, 8 * 128, ACC_ALL));
	for (i = 0; i < 8; i++)
		RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->b[1], i * 128, 128, i));
	for (i = 0; i < 8; i++) {
		ru_fill(self->b[0].addr, 64, self->seed + i);
		RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->b[0], 0,
					  1 + i * 9, 0, 0, i,
					  IBV_SEND_SIGNALED | IBV_SEND_INLINE));
		/* inline data is copied at post time: scribble right away */
		memset(self->b[0].addr, 0xee, 64);
	}
	for (i = 0; i < 8; i++)
		RU_ASSERT_WC_OK(self->p.cli.scq, i, &wc);
	for (i = 0; i < 8; i++) {
		RU_ASSERT_WC_OK(self->p.srv.rcq, i, &wc);
		ASSERT_EQ((uint32_t)(1 + i * 9), wc.byte_len);
		RU_ASSERT_PATTERN(self->b[1].addr + i * 128, 1 + i * 9,
				  self->seed + i, "inline recv");
	}
}

TEST_F(pair, write_both_directions)
{
	struct ru_ep *ep[2] = { &self->p.cli, &self->p.srv };
	const size_t len = 100000;
	struct ibv_wc wc;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		struct ru_ep *tx = ep[dir], *rx = ep[!dir];
		struct ru_buf *src = &self->b[3 * dir], *dst = &self->b[3 * dir + 1];
		struct ru_buf *note = &self->b[3 * dir + 2];
		uint64_t s_new = self->seed + dir, s_old = ~self->seed - dir;
		uint64_t s_guard = self->seed ^ 0x1234;

		RU_ASSERT_OK(ru_buf_alloc(src, tx->pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(dst, rx->pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(note, rx->pd, 64, ACC_ALL));
		ru_fill(src->addr, len, s_new);
		ru_fill(dst->addr, len, s_old);
		ru_fill(dst->addr + len, RU_GUARD, s_guard);
		RU_ASSERT_OK(ru_post_recv(rx, note, 0, 64, 7));
		/* Write, then a zero-length Send: its arrival implies placement */
		RU_ASSERT_OK(ru_post_send(tx, IBV_WR_RDMA_WRITE, src, 0, len,
					  (uintptr_t)dst->addr, dst->mr->rkey, 1,
					  IBV_SEND_SIGNALED));
		RU_ASSERT_OK(ru_post_send(tx, IBV_WR_SEND, src, 0, 0, 0, 0, 2,
					  IBV_SEND_SIGNALED));
		RU_ASSERT_WC_OK(tx->scq, 1, &wc);
		ASSERT_EQ(IBV_WC_RDMA_WRITE, (int)wc.opcode);
		RU_ASSERT_WC_OK(tx->scq, 2, &wc);
		RU_ASSERT_WC_OK(rx->rcq, 7, &wc);
		ASSERT_EQ(0u, wc.byte_len);
		RU_ASSERT_PATTERN(dst->addr, len, s_new, "written data");
		RU_ASSERT_PATTERN(dst->addr + len, RU_GUARD, s_guard,
				  "bytes after the write target");
	}
}

TEST_F(pair, read_both_directions)
{
	struct ru_ep *ep[2] = { &self->p.cli, &self->p.srv };
	const size_t len = 100000;
	struct ibv_wc wc;
	int dir;

	for (dir = 0; dir < 2; dir++) {
		struct ru_ep *rd = ep[dir], *peer = ep[!dir];
		struct ru_buf *sink = &self->b[2 * dir], *srcb = &self->b[2 * dir + 1];
		uint64_t s_src = self->seed * 3 + dir;

		RU_ASSERT_OK(ru_buf_alloc(sink, rd->pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(srcb, peer->pd, len, ACC_ALL));
		ru_fill(srcb->addr, len, s_src);
		ru_fill(sink->addr, len, ~s_src);
		RU_ASSERT_OK(ru_post_send(rd, IBV_WR_RDMA_READ, sink, 0, len,
					  (uintptr_t)srcb->addr, srcb->mr->rkey,
					  9, IBV_SEND_SIGNALED));
		RU_ASSERT_WC_OK(rd->scq, 9, &wc);
		ASSERT_EQ(IBV_WC_RDMA_READ, (int)wc.opcode);
		RU_ASSERT_PATTERN(sink->addr, len, s_src, "read data");
		/* the source must be unchanged by being read */
		RU_ASSERT_PATTERN(srcb->addr, len, s_src, "read source");
	}
}

/* Many unsignaled WRs with a signaled one at the end; ordering of Sends. */
TEST_F(pair, send_many_ordered)
{
	const int n = 48;
	const size_t sz = 2048;
	struct ibv_wc wc;
	int i;

	RU_ASSERT_OK(ru_buf_alloc(&self->b[0], self->p.cli.pd, n * sz, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->b[1], self->p.srv.pd, n * sz, ACC_ALL));
	for (i = 0; i < n; i++) {
		ru_fill(self->b[0].addr + i * sz, sz, self->seed + i);
		RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->b[1], i * sz, sz, i));
	}
	for (i = 0; i < n; i++)
		RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->b[0],
					  i * sz, sz, 0, 0, 1000 + i,
					  i == n - 1 ? IBV_SEND_SIGNALED : 0));
	RU_ASSERT_WC_OK(self->p.cli.scq, 1000 + n - 1, &wc);
	for (i = 0; i < n; i++) {
		RU_ASSERT_WC_OK(self->p.srv.rcq, i, &wc);
		ASSERT_EQ(sz, wc.byte_len);
		RU_ASSERT_PATTERN(self->b[1].addr + i * sz, sz, self->seed + i,
				  "ordered recv");
	}
}

/* ---- size matrix ------------------------------------------------------- */

FIXTURE(xfer) {
	struct ru_pair p;
	struct ru_buf cbuf, sbuf, note;
	uint64_t s_new, s_old, s_guard;
};

FIXTURE_VARIANT(xfer) {
	size_t len;
};

FIXTURE_VARIANT_ADD(xfer, len_0) { .len = 0 };
FIXTURE_VARIANT_ADD(xfer, len_1) { .len = 1 };
FIXTURE_VARIANT_ADD(xfer, len_2) { .len = 2 };
FIXTURE_VARIANT_ADD(xfer, len_3) { .len = 3 };
FIXTURE_VARIANT_ADD(xfer, len_4095) { .len = 4095 };
FIXTURE_VARIANT_ADD(xfer, len_4096) { .len = 4096 };
FIXTURE_VARIANT_ADD(xfer, len_4097) { .len = 4097 };
FIXTURE_VARIANT_ADD(xfer, len_65536) { .len = 65536 };
FIXTURE_VARIANT_ADD(xfer, len_1M) { .len = 1 << 20 };

FIXTURE_SETUP(xfer)
{
	uint64_t s = ru_random_seed();

	self->s_new = s;
	self->s_old = s ^ 0x5555555555555555ull;
	self->s_guard = s ^ 0xaaaaaaaaaaaaaaaaull;
	RU_ASSERT_OK(ru_pair_open(&self->p, NULL, NULL));
	RU_ASSERT_OK(ru_buf_alloc(&self->cbuf, self->p.cli.pd, variant->len, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->sbuf, self->p.srv.pd, variant->len, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->note, self->p.srv.pd, 64, ACC_ALL));
}

FIXTURE_TEARDOWN(xfer)
{
	ru_buf_free(&self->cbuf);
	ru_buf_free(&self->sbuf);
	ru_buf_free(&self->note);
	ru_pair_close(&self->p);
}

/* dst gets [0,len) = s_old and the guard = s_guard */
static void prep_dst(struct ru_buf *b, size_t len, uint64_t s_old,
		     uint64_t s_guard)
{
	ru_fill(b->addr, len, s_old);
	ru_fill(b->addr + len, RU_GUARD, s_guard);
}

TEST_F_TIMEOUT(xfer, send, 90)
{
	size_t len = variant->len;
	struct ibv_wc wc;

	ru_fill(self->cbuf.addr, len, self->s_new);
	prep_dst(&self->sbuf, len, self->s_old, self->s_guard);
	RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->sbuf, 0, len + RU_GUARD, 1));
	RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->cbuf, 0, len,
				  0, 0, 2, IBV_SEND_SIGNALED));
	RU_ASSERT_WC_OK(self->p.cli.scq, 2, &wc);
	ASSERT_EQ(IBV_WC_SEND, (int)wc.opcode);
	RU_ASSERT_WC_OK(self->p.srv.rcq, 1, &wc);
	ASSERT_EQ(IBV_WC_RECV, (int)wc.opcode);
	ASSERT_EQ(len, wc.byte_len);
	RU_ASSERT_PATTERN(self->sbuf.addr, len, self->s_new, "received data");
	RU_ASSERT_PATTERN(self->sbuf.addr + len, RU_GUARD, self->s_guard,
			  "bytes after the message");
}

TEST_F_TIMEOUT(xfer, write, 90)
{
	size_t len = variant->len;
	struct ibv_wc wc;

	ru_fill(self->cbuf.addr, len, self->s_new);
	prep_dst(&self->sbuf, len, self->s_old, self->s_guard);
	RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->note, 0, 64, 1));
	RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_RDMA_WRITE, &self->cbuf, 0,
				  len, (uintptr_t)self->sbuf.addr,
				  self->sbuf.mr->rkey, 2, IBV_SEND_SIGNALED));
	RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->cbuf, 0, 0,
				  0, 0, 3, IBV_SEND_SIGNALED));
	RU_ASSERT_WC_OK(self->p.cli.scq, 2, &wc);
	ASSERT_EQ(IBV_WC_RDMA_WRITE, (int)wc.opcode);
	RU_ASSERT_WC_OK(self->p.cli.scq, 3, &wc);
	RU_ASSERT_WC_OK(self->p.srv.rcq, 1, &wc);
	RU_ASSERT_PATTERN(self->sbuf.addr, len, self->s_new, "written data");
	RU_ASSERT_PATTERN(self->sbuf.addr + len, RU_GUARD, self->s_guard,
			  "bytes after the write target");
}

TEST_F_TIMEOUT(xfer, read, 90)
{
	size_t len = variant->len;
	struct ibv_wc wc;

	ru_fill(self->sbuf.addr, len, self->s_new);
	ru_fill(self->sbuf.addr + len, RU_GUARD, self->s_guard);
	prep_dst(&self->cbuf, len, self->s_old, self->s_guard ^ 1);
	RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_RDMA_READ, &self->cbuf, 0,
				  len, (uintptr_t)self->sbuf.addr,
				  self->sbuf.mr->rkey, 2, IBV_SEND_SIGNALED));
	RU_ASSERT_WC_OK(self->p.cli.scq, 2, &wc);
	ASSERT_EQ(IBV_WC_RDMA_READ, (int)wc.opcode);
	RU_ASSERT_PATTERN(self->cbuf.addr, len, self->s_new, "read data");
	RU_ASSERT_PATTERN(self->cbuf.addr + len, RU_GUARD, self->s_guard ^ 1,
			  "bytes after the read sink");
	RU_ASSERT_PATTERN(self->sbuf.addr, len, self->s_new, "read source");
}

/* ---- several QPs at once ----------------------------------------------- */

#define NQP 8

TEST_F_TIMEOUT(pair, concurrent_qps, 120)
{
	const size_t len = 32768;
	struct ru_ep cli[NQP], srv[NQP];
	struct ru_buf csrc[NQP], csink[NQP], srecv[NQP], swr[NQP], srd[NQP];
	struct ru_caps caps;
	struct ibv_wc wc;
	int i, k, seen, reordered = 0;

	memset(cli, 0, sizeof(cli));
	memset(srv, 0, sizeof(srv));
	ru_caps_default(&caps);
	/* one extra listener-wide backlog is enough: connect one by one */
	for (i = 0; i < NQP; i++)
		RU_ASSERT_OK(ru_pair_open_on(&self->p.l, &cli[i], &srv[i],
					     &caps, &caps));
	for (i = 0; i < NQP; i++) {
		uint64_t s = self->seed + 10 * i;

		RU_ASSERT_OK(ru_buf_alloc(&csrc[i], cli[i].pd, 2 * len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&csink[i], cli[i].pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&srecv[i], srv[i].pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&swr[i], srv[i].pd, len, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&srd[i], srv[i].pd, len, ACC_ALL));
		ru_fill(csrc[i].addr, len, s + 1);		/* send payload */
		ru_fill(csrc[i].addr + len, len, s + 2);	/* write payload */
		ru_fill(srd[i].addr, len, s + 3);		/* read source */
		ru_fill(csink[i].addr, len, ~s);
		ru_fill(swr[i].addr, len, ~s);
		RU_ASSERT_OK(ru_post_recv(&srv[i], &srecv[i], 0, len, 50 + i));
	}
	/* queue everything on all QPs before reaping anything */
	for (i = 0; i < NQP; i++) {
		RU_ASSERT_OK(ru_post_send(&cli[i], IBV_WR_RDMA_WRITE, &csrc[i], len,
					  len, (uintptr_t)swr[i].addr,
					  swr[i].mr->rkey, 1, IBV_SEND_SIGNALED));
		RU_ASSERT_OK(ru_post_send(&cli[i], IBV_WR_RDMA_READ, &csink[i], 0,
					  len, (uintptr_t)srd[i].addr,
					  srd[i].mr->rkey, 2, IBV_SEND_SIGNALED));
		RU_ASSERT_OK(ru_post_send(&cli[i], IBV_WR_SEND, &csrc[i], 0, len,
					  0, 0, 3, IBV_SEND_SIGNALED));
	}
	for (i = 0; i < NQP; i++) {
		uint64_t s = self->seed + 10 * i;

		/*
		 * Send-queue completions should come in posting order, but
		 * siw completes a Send before an earlier Read whose response
		 * is still outstanding: accept any order, require all three.
		 */
		seen = 0;
		for (k = 1; k <= 3; k++) {
			int rc = ru_poll(cli[i].scq, &wc, RU_TIMEOUT_MS);

			ASSERT_EQ(1, rc) TH_LOG("QP %d: %s", i, ru_errmsg());
			ASSERT_EQ(IBV_WC_SUCCESS, (int)wc.status)
				TH_LOG("QP %d wr %llu: %s", i,
				       (unsigned long long)wc.wr_id,
				       ibv_wc_status_str(wc.status));
			ASSERT_TRUE(wc.wr_id >= 1 && wc.wr_id <= 3);
			if (wc.wr_id != (uint64_t)k && !reordered) {
				printf("# note: QP %d completed wr %llu as #%d "
				       "(out of posting order)\n", i,
				       (unsigned long long)wc.wr_id, k);
				reordered = 1;
			}
			seen |= 1 << wc.wr_id;
		}
		ASSERT_EQ(0xe, seen);
		RU_ASSERT_WC_OK(srv[i].rcq, 50 + i, &wc);
		ASSERT_EQ(len, wc.byte_len);
		RU_ASSERT_PATTERN(srecv[i].addr, len, s + 1, "send payload");
		RU_ASSERT_PATTERN(swr[i].addr, len, s + 2, "write payload");
		RU_ASSERT_PATTERN(csink[i].addr, len, s + 3, "read payload");
	}
	for (i = 0; i < NQP; i++) {
		ru_buf_free(&csrc[i]);
		ru_buf_free(&csink[i]);
		ru_buf_free(&srecv[i]);
		ru_buf_free(&swr[i]);
		ru_buf_free(&srd[i]);
		ru_ep_close(&cli[i]);
		ru_ep_close(&srv[i]);
	}
}

/*
 * Tearing one connection down must not disturb the others: close them one
 * by one (alternating side and manner) and check traffic on the survivors
 * after each step.
 */
#define NISO 5

static void iso_traffic(struct __test_metadata *_metadata, struct ru_ep *c,
			struct ru_ep *s, struct ru_buf *cb, struct ru_buf *sb,
			uint64_t seed, int idx)
{
	struct ibv_wc wc;

	ru_fill(cb->addr, 4096, seed);
	RU_ASSERT_OK(ru_post_recv(s, sb, 0, 4096, 1));
	RU_ASSERT_OK(ru_post_send(c, IBV_WR_SEND, cb, 0, 4096, 0, 0, 2,
				  IBV_SEND_SIGNALED));
	RU_ASSERT_OK(ru_expect_success(c->scq, 2, &wc, RU_TIMEOUT_MS));
	RU_ASSERT_OK(ru_expect_success(s->rcq, 1, &wc, RU_TIMEOUT_MS));
	RU_ASSERT_PATTERN(sb->addr, 4096, seed, "survivor payload");
	/* and the other direction */
	ru_fill(sb->addr + 4096, 4096, ~seed);
	RU_ASSERT_OK(ru_post_recv(c, cb, 4096, 4096, 3));
	RU_ASSERT_OK(ru_post_send(s, IBV_WR_SEND, sb, 4096, 4096, 0, 0, 4,
				  IBV_SEND_SIGNALED));
	RU_ASSERT_OK(ru_expect_success(s->scq, 4, &wc, RU_TIMEOUT_MS));
	RU_ASSERT_OK(ru_expect_success(c->rcq, 3, &wc, RU_TIMEOUT_MS));
	RU_ASSERT_PATTERN(cb->addr + 4096, 4096, ~seed, "survivor payload back");
	(void)idx;
}

TEST_F_TIMEOUT(pair, close_one_of_many, 120)
{
	struct ru_ep cli[NISO], srv[NISO];
	struct ru_buf cb[NISO], sb[NISO];
	struct ru_listener ls[NISO];
	struct ru_caps caps;
	int i, k;

	memset(cli, 0, sizeof(cli));
	memset(srv, 0, sizeof(srv));
	ru_caps_default(&caps);
	/* one listener per connection, closed with it */
	for (i = 0; i < NISO; i++) {
		RU_ASSERT_OK(ru_listen(&ls[i], ru_addr0(), 0, 4));
		RU_ASSERT_OK(ru_pair_open_on(&ls[i], &cli[i], &srv[i], &caps,
					     &caps));
		RU_ASSERT_OK(ru_buf_alloc(&cb[i], cli[i].pd, 8192, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&sb[i], srv[i].pd, 8192, ACC_ALL));
		iso_traffic(_metadata, &cli[i], &srv[i], &cb[i], &sb[i],
			    self->seed + i, i);
	}
	for (k = 0; k < NISO - 1; k++) {
		/* close pair k: client/server side, disconnect/destroy */
		switch (k % 4) {
		case 0:
			ru_buf_free(&cb[k]);
			ru_ep_close(&cli[k]);
			break;
		case 1:
			ru_buf_free(&sb[k]);
			ru_ep_close(&srv[k]);
			ru_listener_close(&ls[k]);
			break;
		case 2:	/* listener first, its connection still up */
			ru_listener_close(&ls[k]);
			ru_ep_disconnect(&cli[k]);
			break;
		default:
			ru_ep_disconnect(&srv[k]);
			break;
		}
		for (i = k + 1; i < NISO; i++) {
			printf("# closed %d (%s), traffic on %d\n", k,
			       (const char *[]){ "client destroyed",
						 "server destroyed",
						 "client disconnected",
						 "server disconnected" }[k % 4], i);
			iso_traffic(_metadata, &cli[i], &srv[i], &cb[i], &sb[i],
				    self->seed + 100 * k + i, i);
		}
	}
	for (i = 0; i < NISO; i++) {
		ru_buf_free(&cb[i]);
		ru_buf_free(&sb[i]);
		ru_ep_close(&cli[i]);
		ru_ep_close(&srv[i]);
		ru_listener_close(&ls[i]);
	}
}

/* Connections one after another (reconnect, resource reuse). */
TEST_F_TIMEOUT(pair, reconnect_cycles, 120)
{
	struct ibv_wc wc;
	int round;

	for (round = 0; round < 5; round++) {
		struct ru_ep c, s;
		struct ru_buf cb, sb;
		struct ru_caps caps;

		ru_caps_default(&caps);
		RU_ASSERT_OK(ru_pair_open_on(&self->p.l, &c, &s, &caps, &caps));
		RU_ASSERT_OK(ru_buf_alloc(&cb, c.pd, 512, ACC_ALL));
		RU_ASSERT_OK(ru_buf_alloc(&sb, s.pd, 512, ACC_ALL));
		ru_fill(cb.addr, 512, self->seed + round);
		RU_ASSERT_OK(ru_post_recv(&s, &sb, 0, 512, 1));
		RU_ASSERT_OK(ru_post_send(&c, IBV_WR_SEND, &cb, 0, 512, 0, 0, 2,
					  IBV_SEND_SIGNALED));
		RU_ASSERT_WC_OK(c.scq, 2, &wc);
		RU_ASSERT_WC_OK(s.rcq, 1, &wc);
		RU_ASSERT_PATTERN(sb.addr, 512, self->seed + round, "payload");
		/* alternate which side disconnects */
		ru_ep_disconnect(round & 1 ? &s : &c);
		RU_ASSERT_OK(ru_ep_wait_disconnected(&c, RU_TIMEOUT_MS));
		RU_ASSERT_OK(ru_ep_wait_disconnected(&s, RU_TIMEOUT_MS));
		ru_buf_free(&cb);
		ru_buf_free(&sb);
		ru_ep_close(&c);
		ru_ep_close(&s);
	}
}

/* ---- the peer goes away mid-stream ------------------------------------ */

enum abort_how { ABORT_DISCONNECT, ABORT_DESTROY };

FIXTURE(abort) {
	struct ru_pair p;
	struct ru_buf csrc, crecv, srecv, ssrc, csink;
	uint64_t seed;
};

FIXTURE_VARIANT(abort) {
	enum abort_how how;
};

FIXTURE_VARIANT_ADD(abort, peer_disconnects) { .how = ABORT_DISCONNECT };
FIXTURE_VARIANT_ADD(abort, peer_destroys) { .how = ABORT_DESTROY };

#define AB_NSEND	32
#define AB_NSEXTRA	8	/* server receives no message will match */
#define AB_SZ		65536
#define AB_NCRECV	16
#define AB_NREAD	16
#define AB_RSZ		(256 * 1024)

FIXTURE_SETUP(abort)
{
	struct ru_caps cc, sc;

	self->seed = ru_random_seed();
	ru_caps_default(&cc);
	ru_caps_default(&sc);
	cc.max_send_wr = 64;
	cc.max_recv_wr = AB_NCRECV;
	sc.max_recv_wr = 64;
	RU_ASSERT_OK(ru_pair_open(&self->p, &cc, &sc));
	RU_ASSERT_OK(ru_buf_alloc(&self->csrc, self->p.cli.pd, AB_SZ, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->crecv, self->p.cli.pd, AB_NCRECV * 1024,
				  ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->srecv, self->p.srv.pd,
				  (AB_NSEND + AB_NSEXTRA) * AB_SZ, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->ssrc, self->p.srv.pd, AB_RSZ, ACC_ALL));
	RU_ASSERT_OK(ru_buf_alloc(&self->csink, self->p.cli.pd, AB_NREAD * AB_RSZ,
				  ACC_ALL));
	ru_fill(self->csrc.addr, AB_SZ, self->seed);
	ru_fill(self->ssrc.addr, AB_RSZ, self->seed + 1);
}

FIXTURE_TEARDOWN(abort)
{
	ru_buf_free(&self->csrc);
	ru_buf_free(&self->crecv);
	ru_buf_free(&self->srecv);
	ru_buf_free(&self->ssrc);
	ru_buf_free(&self->csink);
	ru_pair_close(&self->p);
}

static void abort_server(struct ru_pair *p, struct ru_buf *srecv,
			 struct ru_buf *ssrc, enum abort_how how)
{
	if (how == ABORT_DISCONNECT) {
		rdma_disconnect(p->srv.id);
		return;
	}
	/* destroy QP and id first (connection torn down), then memory */
	rdma_destroy_qp(p->srv.id);
	p->srv.qp = NULL;
	rdma_destroy_id(p->srv.id);
	p->srv.id = NULL;
	ru_buf_free(srecv);
	ru_buf_free(ssrc);
}

/* Check n completions: all present, none succeeds after an error. */
static int count_errors(struct ibv_wc *wc, int n, int *first_err)
{
	int i, errs = 0;

	*first_err = -1;
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			if (*first_err < 0)
				*first_err = i;
			errs++;
		} else if (*first_err >= 0) {
			return -1;	/* success after an error: bad order */
		}
	}
	return errs;
}

TEST_F_TIMEOUT(abort, sends_in_flight, 120)
{
	struct ibv_wc swc[AB_NSEND], rwc[AB_NCRECV], wc;
	int i, got, errs, first;

	for (i = 0; i < AB_NCRECV; i++)
		RU_ASSERT_OK(ru_post_recv(&self->p.cli, &self->crecv, i * 1024,
					  1024, 500 + i));
	for (i = 0; i < AB_NSEND + AB_NSEXTRA; i++)
		RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->srecv, i * AB_SZ,
					  AB_SZ, i));
	for (i = 0; i < AB_NSEND; i++)
		RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->csrc, 0,
					  AB_SZ, 0, 0, 100 + i, IBV_SEND_SIGNALED));
	/* the stream is running: first message arrived */
	RU_ASSERT_WC_OK(self->p.srv.rcq, 0, &wc);
	RU_ASSERT_PATTERN(self->srecv.addr, AB_SZ, self->seed, "first message");
	abort_server(&self->p, &self->srecv, &self->ssrc, variant->how);

	/* every send WR completes, successfully or not, in order */
	got = ru_poll_n(self->p.cli.scq, swc, AB_NSEND, 60000);
	ASSERT_EQ(AB_NSEND, got) TH_LOG("client sends: %s", ru_errmsg());
	for (i = 0; i < AB_NSEND; i++)
		ASSERT_EQ((uint64_t)(100 + i), swc[i].wr_id);
	errs = count_errors(swc, AB_NSEND, &first);
	ASSERT_GE(errs, 0) TH_LOG("a send succeeded after an error");
	printf("# client sends: %d ok, %d failed (first error: %s)\n",
	       AB_NSEND - errs, errs,
	       first >= 0 ? ibv_wc_status_str(swc[first].status) : "none");

	/* the client's receives were never matched: all flushed with error */
	got = ru_poll_n(self->p.cli.rcq, rwc, AB_NCRECV, 30000);
	ASSERT_EQ(AB_NCRECV, got) TH_LOG("client recvs: %s", ru_errmsg());
	for (i = 0; i < AB_NCRECV; i++) {
		EXPECT_NE(IBV_WC_SUCCESS, (int)rwc[i].status);
		if (rwc[i].status != IBV_WC_WR_FLUSH_ERR)
			printf("# client recv %llu: %s\n",
			       (unsigned long long)rwc[i].wr_id,
			       ibv_wc_status_str(rwc[i].status));
	}
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->p.cli, 30000));
	RU_ASSERT_OK(ru_wait_qp_state(self->p.cli.qp, IBV_QPS_ERR, 10000));

	if (variant->how == ABORT_DISCONNECT) {
		/*
		 * The side that disconnected: messages that made it before
		 * the cut are intact and in order. Its unmatched receives are
		 * only reported: after rdma_disconnect() an iWARP QP goes to
		 * SQD (librdmacm), and whether it ever reaches ERR and flushes
		 * is the local application's business (ibv_modify_qp).
		 */
		struct ibv_wc srwc[AB_NSEND + AB_NSEXTRA];
		int ok;

		got = ru_poll_n(self->p.srv.rcq, srwc, AB_NSEND + AB_NSEXTRA - 1,
				5000);
		ASSERT_GE(got, 0);
		errs = count_errors(srwc, got, &first);
		ASSERT_GE(errs, 0) TH_LOG("a recv succeeded after an error");
		ok = got - errs;
		for (i = 0; i < ok; i++) {
			ASSERT_EQ((uint64_t)(i + 1), srwc[i].wr_id);
			RU_ASSERT_PATTERN(self->srecv.addr + (i + 1) * AB_SZ, AB_SZ,
					  self->seed, "message before the cut");
		}
		printf("# disconnecting side: %d more messages received, %d "
		       "receives flushed, %d still posted; QP %s\n", ok, errs,
		       AB_NSEND + AB_NSEXTRA - 1 - got,
		       ru_qp_state_str(ru_qp_state(self->p.srv.qp)));
		RU_ASSERT_OK(ru_ep_wait_disconnected(&self->p.srv, 30000));
	}
}

TEST_F_TIMEOUT(abort, reads_in_flight, 120)
{
	struct ibv_wc swc[AB_NREAD], rwc[AB_NCRECV];
	int i, got, errs, first;

	for (i = 0; i < AB_NCRECV; i++)
		RU_ASSERT_OK(ru_post_recv(&self->p.cli, &self->crecv, i * 1024,
					  1024, 500 + i));
	for (i = 0; i < AB_NREAD; i++)
		RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_RDMA_READ,
					  &self->csink, i * AB_RSZ, AB_RSZ,
					  (uintptr_t)self->ssrc.addr,
					  self->ssrc.mr->rkey, 100 + i,
					  IBV_SEND_SIGNALED));
	/* wait until the first Read is done, then pull the plug */
	got = ru_poll_n(self->p.cli.scq, swc, 1, RU_TIMEOUT_MS);
	ASSERT_EQ(1, got) TH_LOG("first read: %s", ru_errmsg());
	ASSERT_EQ(IBV_WC_SUCCESS, (int)swc[0].status);
	abort_server(&self->p, &self->srecv, &self->ssrc, variant->how);

	got = ru_poll_n(self->p.cli.scq, swc + 1, AB_NREAD - 1, 60000);
	ASSERT_EQ(AB_NREAD - 1, got) TH_LOG("client reads: %s", ru_errmsg());
	errs = count_errors(swc, AB_NREAD, &first);
	ASSERT_GE(errs, 0) TH_LOG("a read succeeded after an error");
	for (i = 0; i < AB_NREAD; i++) {
		ASSERT_EQ((uint64_t)(100 + i), swc[i].wr_id);
		if (swc[i].status == IBV_WC_SUCCESS)
			RU_ASSERT_PATTERN(self->csink.addr + i * AB_RSZ, AB_RSZ,
					  self->seed + 1, "read before the cut");
	}
	printf("# client reads: %d ok, %d failed (first error: %s)\n",
	       AB_NREAD - errs, errs,
	       first >= 0 ? ibv_wc_status_str(swc[first].status) : "none");

	got = ru_poll_n(self->p.cli.rcq, rwc, AB_NCRECV, 30000);
	ASSERT_EQ(AB_NCRECV, got) TH_LOG("client recvs: %s", ru_errmsg());
	for (i = 0; i < AB_NCRECV; i++)
		EXPECT_NE(IBV_WC_SUCCESS, (int)rwc[i].status);
	RU_ASSERT_OK(ru_ep_wait_disconnected(&self->p.cli, 30000));
	RU_ASSERT_OK(ru_wait_qp_state(self->p.cli.qp, IBV_QPS_ERR, 10000));
}

TEST_HARNESS_MAIN
