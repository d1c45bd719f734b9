// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * flush - RDMA Flush and RDMA Atomic Write (draft-talpey-rdma-commit over
 * iWARP, Documentation/flush.md), single VM, through the ibv_qp_ex API.
 *
 * The responder (server, SIWX_ADDR0) and the requester (client, bound to
 * SIWX_ADDR1) connect through rdma_cm; the target is this process's
 * memory, so every batch is checked against the model of flush_common.h:
 * completions (status, opcode, byte_len, order), results of Reads and
 * atomics, and the whole target (with its guard bytes) byte for byte.
 *
 *   device_caps        device_cap_flags_ex, QP creation with the new ops
 *   reg.*              IBV_ACCESS_FLUSH_* at registration
 *   write_flush.*      Writes then a signaled Flush: when it completes the
 *                      data is at the target (global RANGE and MR, plain
 *                      and extended CQ; persistent on --pmem)
 *   selectivity.*      RANGE inside the region; MR ignores the range
 *   aw_pipeline.*      Write, Flush, Atomic Write triples, only the last
 *                      WR signaled: exactly the 8 bytes, after the Write
 *   interleave.*       Flush/Atomic Write among Reads and RFC 7306
 *                      atomics, ORD/IRD 4, 96 outstanding
 *   refused.*          responder-side refusals: status, both QPs in
 *                      error, target memory unchanged
 *   post_error.*       refused at post time (EINVAL / EOPNOTSUPP),
 *                      nothing written to the queue, the QP still usable
 *
 * Usage: flush [--pmem DEVDAX] [kselftest harness options]
 *   --pmem PATH  (or SIWX_FLUSH_PMEM=PATH, else SIWX_PMEM_DEV, which a
 *                pmem= boot sets) a device-dax device (e.g.
 *                /dev/dax0.0): the target of the *_pmem variants is a
 *                2 MiB MAP_SHARED mapping of it, registered with
 *                IBV_ACCESS_FLUSH_PERSISTENT; without it they skip.
 * Environment: SIWX_ADDR0/1, SIWX_SEED, SIWX_FLUSH_ROUNDS (write_flush,
 * aw_pipeline rounds, 200).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "siwx_test.h"
#include "flush_common.h"

#if HAVE_FLUSH_API

#define WAIT_MS		15000
#define PAGE		4096
#define TLEN		(16 * PAGE)	/* target region */
#define PMEM_MAP	(2u << 20)	/* devdax: its alignment (2 MiB) */
#define SRCLEN		(2 * PAGE)	/* largest Write */

static const char *pmem_path;

static int rounds(void)
{
	return (int)ru_env_long("SIWX_FLUSH_ROUNDS", 200);
}

/* ---- target memory ------------------------------------------------------ */

/*
 * The target: len bytes (+ RU_GUARD) of ordinary memory, or of a devdax
 * mapping with pmem; registered in pd with acc. model: its image.
 */
struct target {
	uint8_t *addr;
	size_t len, alloc;
	int pmem;
	struct ibv_mr *mr;
	uint8_t *model;
};

static int target_alloc(struct target *t, struct ibv_pd *pd, size_t len,
			int acc, int pmem, uint64_t seed)
{
	memset(t, 0, sizeof(*t));
	t->len = len;
	t->alloc = len + RU_GUARD;
	t->pmem = pmem;
	if (pmem) {
		int fd = open(pmem_path, O_RDWR);

		if (fd < 0)
			return ru_fail(errno, "open %s: %s", pmem_path,
				       strerror(errno));
		t->addr = mmap(NULL, PMEM_MAP, PROT_READ | PROT_WRITE,
			       MAP_SHARED, fd, 0);
		close(fd);
		if (t->addr == MAP_FAILED) {
			t->addr = NULL;
			return ru_fail(errno, "mmap %s (%u bytes): %s",
				       pmem_path, PMEM_MAP, strerror(errno));
		}
		if (t->alloc > PMEM_MAP)
			return ru_fail(EINVAL, "target larger than the mapping");
	} else {
		void *p;

		if (posix_memalign(&p, PAGE, t->alloc))
			return ru_fail(ENOMEM, "posix_memalign");
		t->addr = p;
	}
	t->model = malloc(t->alloc);
	if (!t->model)
		return ru_fail(ENOMEM, "malloc");
	ru_fill(t->addr, t->alloc, seed);
	memcpy(t->model, t->addr, t->alloc);
	t->mr = ibv_reg_mr(pd, t->addr, len, acc);
	if (!t->mr)
		return ru_fail(errno, "ibv_reg_mr(%s, 0x%x): %s",
			       pmem ? pmem_path : "memory", acc,
			       strerror(errno));
	return 0;
}

static void target_free(struct target *t)
{
	if (t->mr)
		ibv_dereg_mr(t->mr);
	if (t->addr && t->pmem)
		munmap(t->addr, PMEM_MAP);
	else
		free(t->addr);
	free(t->model);
	memset(t, 0, sizeof(*t));
}

/* first byte where target and model differ, or -1 */
static long target_diff(const struct target *t)
{
	return ru_first_diff(t->addr, t->model, t->alloc);
}

/* ---- connections ---------------------------------------------------------- */

/* Both ends here; the client posts through ibv_qp_ex. */
static int fconn_open(struct ru_pair *c, int ird_ord, int scq_ex,
		      uint64_t send_ops)
{
	struct ru_caps cc, sc;

	ru_caps_default(&cc);
	ru_caps_default(&sc);
	cc.max_send_wr = 256;
	cc.send_ops = send_ops;
	cc.scq_ex = scq_ex;
	if (ird_ord) {
		cc.initiator_depth = (uint8_t)ird_ord;
		cc.responder_resources = (uint8_t)ird_ord;
		sc.initiator_depth = (uint8_t)ird_ord;
		sc.responder_resources = (uint8_t)ird_ord;
	}
	return ru_pair_open(c, &cc, &sc);
}

/*
 * Collect the completions of the signaled ops of ops[0..n) in order and
 * check them (success, wr_id, opcode, byte_len). 0 or -1 (logged).
 */
static int expect_completions(struct __test_metadata *_metadata,
			      struct ru_ep *e, const struct fop *ops, int n)
{
	struct ru_wc w;
	char buf[200];
	int i, rc;

	for (i = 0; i < n; i++) {
		if (!(ops[i].flags & IBV_SEND_SIGNALED))
			continue;
		rc = ru_poll_send(e, &w, WAIT_MS);
		fop_str(&ops[i], buf, sizeof(buf));
		if (rc != 1) {
			TH_LOG("no completion for %s: %s", buf, ru_errmsg());
			return -1;
		}
		if (w.status != IBV_WC_SUCCESS || w.wr_id != ops[i].wr_id ||
		    w.opcode != fop_wc_opcode(ops[i].kind) ||
		    w.byte_len != fop_byte_len(&ops[i])) {
			char wb[200];

			TH_LOG("expected %s: success, opcode %d, byte_len %u; "
			       "got %s", buf, fop_wc_opcode(ops[i].kind),
			       fop_byte_len(&ops[i]),
			       ru_wc_str(&w, wb, sizeof(wb)));
			return -1;
		}
	}
	/* and nothing more */
	rc = ru_poll_send(e, &w, 0);
	if (rc != 0) {
		TH_LOG("a completion too many: %s",
		       rc == 1 ? ru_wc_str(&w, buf, sizeof(buf)) : ru_errmsg());
		return -1;
	}
	return 0;
}

/* ---- device --------------------------------------------------------------- */

TEST(device_caps)
{
	const char *want[2] = { ru_env("SIWX_DEV0", "siw0"),
				ru_env("SIWX_DEV1", "siw1") };
	struct ibv_device **list;
	int n = 0, i, j, seen = 0;

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	for (i = 0; i < n; i++) {
		const char *name = ibv_get_device_name(list[i]);
		struct ibv_context *ctx;
		uint64_t f;

		for (j = 0; j < 2; j++)
			if (!strcmp(name, want[j]))
				break;
		if (j == 2)
			continue;
		seen |= 1 << j;
		ctx = ibv_open_device(list[i]);
		ASSERT_NE(NULL, ctx) TH_LOG("open %s: %s", name, strerror(errno));
		f = fl_dev_caps(ctx, "device");
		EXPECT_TRUE(!!(f & DEV_FLUSH_GLOBAL)) TH_LOG("%s", name);
		EXPECT_TRUE(!!(f & DEV_ATOMIC_WRITE)) TH_LOG("%s", name);
#ifdef __x86_64__
		/* x86-64 has the pmem API (CONFIG_ARCH_HAS_PMEM_API) */
		EXPECT_TRUE(!!(f & DEV_FLUSH_PERSISTENT)) TH_LOG("%s", name);
#endif
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	EXPECT_EQ(3, seen) TH_LOG("devices %s and %s expected", want[0], want[1]);

	/* a connected QP with both operations */
	{
		struct ru_pair c;

		memset(&c, 0, sizeof(c));
		RU_EXPECT_OK(fconn_open(&c, 0, 0, FL_SEND_OPS));
		EXPECT_NE(NULL, c.cli.qpx);
		ru_pair_close(&c);
	}
}

/* ---- registration --------------------------------------------------------- */

FIXTURE(reg) {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *mem;
};

FIXTURE_SETUP(reg)
{
	struct ibv_device **list;
	int n = 0, i;

	list = ibv_get_device_list(&n);
	ASSERT_NE(NULL, list);
	for (i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]),
			    ru_env("SIWX_DEV0", "siw0")))
			self->ctx = ibv_open_device(list[i]);
	ibv_free_device_list(list);
	ASSERT_NE(NULL, self->ctx);
	self->pd = ibv_alloc_pd(self->ctx);
	ASSERT_NE(NULL, self->pd);
	ASSERT_EQ(0, posix_memalign(&self->mem, PAGE, 4 * PAGE));
}

FIXTURE_TEARDOWN(reg)
{
	if (self->pd)
		ibv_dealloc_pd(self->pd);
	if (self->ctx)
		ibv_close_device(self->ctx);
	free(self->mem);
}

/* FLUSH_PERSISTENT needs pmem: refused with EINVAL on ordinary memory */
TEST_F(reg, persistent_on_ordinary_memory)
{
	static const int accs[] = {
		IBV_ACCESS_FLUSH_PERSISTENT,
		IBV_ACCESS_FLUSH_PERSISTENT | IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_WRITE,
		IBV_ACCESS_FLUSH_PERSISTENT | IBV_ACCESS_FLUSH_GLOBAL |
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ,
	};
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < sizeof(accs) / sizeof(accs[0]); i++) {
		errno = 0;
		mr = ibv_reg_mr(self->pd, self->mem, 4 * PAGE, accs[i]);
		printf("# ibv_reg_mr(access 0x%x): %s\n", accs[i],
		       mr ? "registered" : strerror(errno));
		EXPECT_EQ(NULL, mr);
		if (mr)
			ibv_dereg_mr(mr);
		else
			EXPECT_EQ(EINVAL, errno);
	}
}

/* FLUSH_GLOBAL is fine anywhere, with or without remote access */
TEST_F(reg, global_on_ordinary_memory)
{
	static const int accs[] = {
		IBV_ACCESS_FLUSH_GLOBAL,
		IBV_ACCESS_FLUSH_GLOBAL | IBV_ACCESS_LOCAL_WRITE,
		ACC_TARGET,
	};
	struct ibv_mr *mr;
	unsigned int i;

	for (i = 0; i < sizeof(accs) / sizeof(accs[0]); i++) {
		mr = ibv_reg_mr(self->pd, self->mem, 4 * PAGE, accs[i]);
		EXPECT_NE(NULL, mr) TH_LOG("access 0x%x: %s", accs[i],
					   strerror(errno));
		if (mr)
			ibv_dereg_mr(mr);
	}
}

TEST_F(reg, persistent_on_pmem)
{
	struct target t;

	if (!pmem_path)
		SKIP(return, "no --pmem device");
	RU_ASSERT_OK(target_alloc(&t, self->pd, PAGE,
				  ACC_TARGET | IBV_ACCESS_FLUSH_PERSISTENT, 1,
				  1));
	target_free(&t);
}

/* ---- the common fixture: a connection and a target -------------------------- */

FIXTURE(fl) {
	struct ru_pair c;
	struct target t;
	struct ru_buf src, res;
	uint64_t seed, rng;
};

FIXTURE_VARIANT(fl) {
	uint8_t type, level;
	int cq_ex;
	int pmem;
};

#define G IBV_FLUSH_GLOBAL
#define P IBV_FLUSH_PERSISTENT
FIXTURE_VARIANT_ADD(fl, global_range) { .type = G, .level = IBV_FLUSH_RANGE };
FIXTURE_VARIANT_ADD(fl, global_mr) { .type = G, .level = IBV_FLUSH_MR };
FIXTURE_VARIANT_ADD(fl, global_range_cq_ex) {
	.type = G, .level = IBV_FLUSH_RANGE, .cq_ex = 1 };
FIXTURE_VARIANT_ADD(fl, global_mr_cq_ex) {
	.type = G, .level = IBV_FLUSH_MR, .cq_ex = 1 };
FIXTURE_VARIANT_ADD(fl, persistent_range_pmem) {
	.type = P, .level = IBV_FLUSH_RANGE, .pmem = 1 };
FIXTURE_VARIANT_ADD(fl, persistent_mr_pmem) {
	.type = P, .level = IBV_FLUSH_MR, .pmem = 1 };
FIXTURE_VARIANT_ADD(fl, both_range_pmem) {
	.type = G | P, .level = IBV_FLUSH_RANGE, .pmem = 1, .cq_ex = 1 };

static int fl_open(struct __test_metadata *_metadata, FIXTURE_DATA(fl) *self,
		    const FIXTURE_VARIANT(fl) *variant, int ird_ord)
{
	int acc = ACC_TARGET;

	if (variant->pmem)
		acc |= IBV_ACCESS_FLUSH_PERSISTENT;
	RU_ASSERT_OK(fconn_open(&self->c, ird_ord, variant->cq_ex,
				FL_SEND_OPS));
	RU_ASSERT_OK(target_alloc(&self->t, self->c.srv.pd, TLEN, acc,
				  variant->pmem, self->seed));
	RU_ASSERT_OK(ru_buf_alloc(&self->src, self->c.cli.pd, SRCLEN,
				  IBV_ACCESS_LOCAL_WRITE));
	RU_ASSERT_OK(ru_buf_alloc(&self->res, self->c.cli.pd, 2 * PAGE,
				  IBV_ACCESS_LOCAL_WRITE));
	return 0;
}

FIXTURE_SETUP(fl)
{
	if (variant->pmem && !pmem_path)
		SKIP(return, "no --pmem device (persistent placement needs pmem)");
	self->seed = ru_random_seed();
	self->rng = self->seed;
	printf("# type %u level %u %s CQ%s, seed 0x%llx\n", variant->type,
	       variant->level, variant->cq_ex ? "extended" : "plain",
	       variant->pmem ? ", target on pmem" : "",
	       (unsigned long long)self->seed);
	fl_open(_metadata, self, variant, 0);
}

FIXTURE_TEARDOWN(fl)
{
	target_free(&self->t);
	ru_buf_free(&self->src);
	ru_buf_free(&self->res);
	ru_pair_close(&self->c);
}

static void check_target(struct __test_metadata *_metadata,
			 FIXTURE_DATA(fl) *self, const char *when)
{
	long d = target_diff(&self->t);

	if (d >= 0)
		TH_LOG("%s: target byte %ld is 0x%02x, model 0x%02x", when, d,
		       self->t.addr[d], self->t.model[d]);
	ASSERT_EQ(-1, d);
}

static uint64_t tgt_base(FIXTURE_DATA(fl) *self)
{
	return (uintptr_t)self->t.addr;
}

/* a Flush op of the variant covering [off, off + len) of the target */
static void flush_op(FIXTURE_DATA(fl) *self, const FIXTURE_VARIANT(fl) *variant,
		     struct fop *op, size_t off, size_t len, uint64_t wr_id,
		     unsigned int flags)
{
	memset(op, 0, sizeof(*op));
	op->kind = F_FLUSH;
	op->wr_id = wr_id;
	op->flags = flags;
	op->rkey = self->t.mr->rkey;
	op->type = variant->type;
	op->level = variant->level;
	op->raddr = tgt_base(self) + off;
	op->len = (uint32_t)len;
}

/*
 * 1-4 Writes (random offsets and lengths, the last signaled or not), then
 * one signaled Flush of the range they span (or the MR): when the Flush
 * completes, the target must equal the model, with no further wait.
 */
TEST_F_TIMEOUT(fl, write_flush, 300)
{
	int r, i, n = rounds();

	for (r = 0; r < n; r++) {
		struct fop ops[5];
		size_t lo = TLEN, hi = 0;
		int nw = 1 + (int)ru_rand(&self->rng, 4);
		size_t soff = 0;

		for (i = 0; i < nw; i++) {
			size_t len = 1 + ru_rand(&self->rng, SRCLEN / 4);
			size_t off = ru_rand(&self->rng, (uint32_t)(TLEN - len + 1));

			ru_fill(self->src.addr + soff, len, ru_rng(&self->rng));
			memset(&ops[i], 0, sizeof(ops[i]));
			ops[i].kind = F_WRITE;
			ops[i].wr_id = (uint64_t)r * 8 + i;
			ops[i].flags = ru_rand(&self->rng, 2) ? IBV_SEND_SIGNALED : 0;
			ops[i].raddr = tgt_base(self) + off;
			ops[i].rkey = self->t.mr->rkey;
			ops[i].laddr = (uintptr_t)(self->src.addr + soff);
			ops[i].lkey = self->src.mr->lkey;
			ops[i].len = (uint32_t)len;
			fop_model(&ops[i], self->t.model, tgt_base(self),
				  self->src.addr + soff);
			soff += len;
			if (off < lo)
				lo = off;
			if (off + len > hi)
				hi = off + len;
		}
		flush_op(self, variant, &ops[nw], lo, hi - lo,
			 (uint64_t)r * 8 + nw, IBV_SEND_SIGNALED);
		ASSERT_EQ(0, fop_post(self->c.cli.qpx, ops, nw + 1))
			TH_LOG("round %d", r);
		ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, ops,
						nw + 1)) TH_LOG("round %d", r);
		check_target(_metadata, self, "after the Flush completed");
	}
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.srv.qp));
}

/*
 * Selectivity: RANGE of one byte, of the whole region, of its last byte;
 * MR with a range that names nothing of the region (raddr 0, length ~0):
 * the range fields are ignored then. All complete successfully.
 */
TEST_F_TIMEOUT(fl, selectivity, 120)
{
	struct fop ops[4];
	int n = 0;

	if (variant->level == IBV_FLUSH_RANGE) {
		flush_op(self, variant, &ops[n], 100, 1, n, IBV_SEND_SIGNALED);
		n++;
		flush_op(self, variant, &ops[n], 0, TLEN, n, IBV_SEND_SIGNALED);
		n++;
		flush_op(self, variant, &ops[n], TLEN - 1, 1, n,
			 IBV_SEND_SIGNALED);
		n++;
	} else {
		flush_op(self, variant, &ops[n], 0, 0, n, IBV_SEND_SIGNALED);
		ops[n].raddr = 0;
		ops[n].len = UINT32_MAX;
		n++;
		flush_op(self, variant, &ops[n], 0, TLEN, n, IBV_SEND_SIGNALED);
		ops[n].raddr = tgt_base(self) + TLEN + PAGE;
		n++;
	}
	ASSERT_EQ(0, fop_post(self->c.cli.qpx, ops, n));
	ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, ops, n));
	check_target(_metadata, self, "after the Flushes");
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
}

/*
 * Pipelines of K (Write, Flush, Atomic Write) triples, one 256-byte slot
 * each: the Write covers the slot, the Atomic Write replaces one of its
 * words; only the last WR of the batch is signaled. When it completes,
 * every slot holds the Write with exactly the Atomic Write's 8 bytes in
 * it: an Atomic Write executed before the Write was placed (or before the
 * Flush) would be overwritten, one placed elsewhere or wider shows too.
 */
#define SLOT	256
#define KTRI	16

TEST_F_TIMEOUT(fl, aw_pipeline, 300)
{
	int r, k, n = rounds() / 4 + 1;

	for (r = 0; r < n; r++) {
		struct fop ops[3 * KTRI];
		int nops = 0;
		size_t base = ru_rand(&self->rng,
				      (uint32_t)((TLEN - KTRI * SLOT) / SLOT + 1)) * SLOT;

		for (k = 0; k < KTRI; k++) {
			size_t slot = base + (size_t)k * SLOT;
			uint8_t *s = self->src.addr + (size_t)k * SLOT;
			struct fop *w = &ops[nops++], *f, *a;

			ru_fill(s, SLOT, ru_rng(&self->rng));
			memset(w, 0, sizeof(*w));
			w->kind = F_WRITE;
			w->wr_id = nops;
			w->raddr = tgt_base(self) + slot;
			w->rkey = self->t.mr->rkey;
			w->laddr = (uintptr_t)s;
			w->lkey = self->src.mr->lkey;
			w->len = SLOT;
			fop_model(w, self->t.model, tgt_base(self), s);
			f = &ops[nops++];
			flush_op(self, variant, f, slot, SLOT, nops, 0);
			a = &ops[nops++];
			memset(a, 0, sizeof(*a));
			a->kind = F_AW;
			a->wr_id = nops;
			a->rkey = self->t.mr->rkey;
			a->raddr = tgt_base(self) + slot +
				   8 * ru_rand(&self->rng, SLOT / 8);
			a->a = ru_rng(&self->rng);
			fop_model(a, self->t.model, tgt_base(self), NULL);
		}
		ops[nops - 1].flags = IBV_SEND_SIGNALED;
		ASSERT_EQ(0, fop_post(self->c.cli.qpx, ops, nops))
			TH_LOG("round %d", r);
		ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, ops,
						nops)) TH_LOG("round %d", r);
		check_target(_metadata, self, "after the last Atomic Write");
	}
	/* signaled Atomic Writes alone: each IBV_WC_ATOMIC_WRITE, byte_len 0 */
	{
		struct fop ops[8];

		for (k = 0; k < 8; k++) {
			memset(&ops[k], 0, sizeof(ops[k]));
			ops[k].kind = F_AW;
			ops[k].wr_id = 1000 + k;
			ops[k].flags = IBV_SEND_SIGNALED;
			ops[k].rkey = self->t.mr->rkey;
			/* the same word twice: the later one wins */
			ops[k].raddr = tgt_base(self) + 8 * (k / 2) + TLEN - 64;
			ops[k].a = ru_rng(&self->rng);
			fop_model(&ops[k], self->t.model, tgt_base(self), NULL);
		}
		ASSERT_EQ(0, fop_post(self->c.cli.qpx, ops, 8));
		ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, ops, 8));
		check_target(_metadata, self, "after signaled Atomic Writes");
	}
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
}

/*
 * Under ORD/IRD 4: rounds of 96 signaled requests of the Read queue -
 * Reads, FetchAdd, CmpSwap, Flush, Atomic Write - on 16 words, posted at
 * once (the requester holds back what exceeds the ORD). They execute in
 * order: every result is the model's at its place in the sequence, every
 * completion in order.
 */
#define NWORDS	16
#define NIL	96

TEST_F_TIMEOUT(fl, interleave, 300)
{
	int r, i;

	/* a connection with ORD/IRD 4 */
	target_free(&self->t);
	ru_buf_free(&self->src);
	ru_buf_free(&self->res);
	ru_pair_close(&self->c);
	memset(&self->c, 0, sizeof(self->c));
	fl_open(_metadata, self, variant, 4);
	printf("# IRD/ORD: client %u/%u, server %u/%u\n",
	       self->c.cli.peer.responder_resources,
	       self->c.cli.peer.initiator_depth,
	       self->c.srv.peer.responder_resources,
	       self->c.srv.peer.initiator_depth);

	for (r = 0; r < 4; r++) {
		struct fop ops[NIL];
		uint64_t words = tgt_base(self) + 512;

		memset(self->res.addr, 0xa5, 8 * NIL);
		for (i = 0; i < NIL; i++) {
			struct fop *op = &ops[i];
			uint64_t cur;

			memset(op, 0, sizeof(*op));
			op->kind = (enum fop_kind)(F_READ + ru_rand(&self->rng, 5));
			op->wr_id = i;
			op->flags = IBV_SEND_SIGNALED;
			op->rkey = self->t.mr->rkey;
			op->raddr = words + 8 * ru_rand(&self->rng, NWORDS);
			op->laddr = (uintptr_t)(self->res.addr + 8 * i);
			op->lkey = self->res.mr->lkey;
			cur = fl_ld64(self->t.model + (op->raddr - tgt_base(self)));
			switch (op->kind) {
			case F_READ:
				op->len = 8;
				break;
			case F_FLUSH:
				flush_op(self, variant, op, 512, 8 * NWORDS, i,
					 IBV_SEND_SIGNALED);
				break;
			case F_AW:
			case F_FA:
				op->a = ru_rng(&self->rng);
				break;
			case F_CS:
				/* half of them match */
				op->a = ru_rand(&self->rng, 2) ? cur :
							       ru_rng(&self->rng);
				op->b = ru_rng(&self->rng);
				break;
			default:
				break;
			}
			fop_model(op, self->t.model, tgt_base(self), NULL);
		}
		ASSERT_EQ(0, fop_post(self->c.cli.qpx, ops, NIL))
			TH_LOG("round %d", r);
		ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, ops,
						NIL)) TH_LOG("round %d", r);
		for (i = 0; i < NIL; i++) {
			uint64_t got = fl_ld64(self->res.addr + 8 * i);

			if (ops[i].kind != F_READ && ops[i].kind != F_FA &&
			    ops[i].kind != F_CS) {
				/* nothing lands in the result slot */
				ASSERT_EQ(0xa5a5a5a5a5a5a5a5ull, got)
					TH_LOG("round %d op %d (%s)", r, i,
					       fop_name(ops[i].kind));
				continue;
			}
			ASSERT_EQ(ops[i].orig, got)
				TH_LOG("round %d op %d (%s at +%llu)", r, i,
				       fop_name(ops[i].kind),
				       (unsigned long long)(ops[i].raddr - words));
		}
		check_target(_metadata, self, "after the interleaved requests");
	}
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.srv.qp));
}

/* ---- refusals at the responder -------------------------------------------- */

enum rkind {
	R_FLUSH_NO_ACCESS,	/* MR without FLUSH_GLOBAL, Flush GLOBAL */
	R_FLUSH_MR_NO_ACCESS,	/* the same, selectivity MR */
	R_FLUSH_PERSIST_ON_GLOBAL, /* FLUSH_GLOBAL-only MR, Flush PERSISTENT */
	R_FLUSH_OOB,		/* range past the end of the MR */
	R_FLUSH_BEFORE,		/* range starting before the MR */
	R_FLUSH_BAD_KEY,	/* STag key byte wrong */
	R_AW_NO_REMOTE_WRITE,	/* MR without REMOTE_WRITE */
	R_AW_OOB,		/* word straddling the end of the MR */
	R_AW_BAD_KEY,
	R_AW_BAD_INDEX,		/* no such STag */
};

/* 3 pages: page 0 a good MR, page 1 the MR under test */
#define AREA		(3 * PAGE)
#define MR_OFF		(PAGE + 128)
#define MR_LEN		1020
#define OK_OFF		256

FIXTURE(refused) {
	struct ru_pair c;
	uint8_t *area, *snap;
	struct ibv_mr *ok_mr, *mr;
};

FIXTURE_VARIANT(refused) {
	enum rkind kind;
};

FIXTURE_VARIANT_ADD(refused, flush_no_flush_access) { R_FLUSH_NO_ACCESS };
FIXTURE_VARIANT_ADD(refused, flush_mr_no_flush_access) { R_FLUSH_MR_NO_ACCESS };
FIXTURE_VARIANT_ADD(refused, flush_persistent_on_global_mr) {
	R_FLUSH_PERSIST_ON_GLOBAL };
FIXTURE_VARIANT_ADD(refused, flush_out_of_bounds) { R_FLUSH_OOB };
FIXTURE_VARIANT_ADD(refused, flush_before_region) { R_FLUSH_BEFORE };
FIXTURE_VARIANT_ADD(refused, flush_bad_rkey) { R_FLUSH_BAD_KEY };
FIXTURE_VARIANT_ADD(refused, aw_no_remote_write) { R_AW_NO_REMOTE_WRITE };
FIXTURE_VARIANT_ADD(refused, aw_out_of_bounds) { R_AW_OOB };
FIXTURE_VARIANT_ADD(refused, aw_bad_rkey) { R_AW_BAD_KEY };
FIXTURE_VARIANT_ADD(refused, aw_bad_stag_index) { R_AW_BAD_INDEX };

FIXTURE_SETUP(refused)
{
	int acc = ACC_TARGET;
	void *p;

	if (variant->kind == R_FLUSH_NO_ACCESS ||
	    variant->kind == R_FLUSH_MR_NO_ACCESS)
		acc &= ~IBV_ACCESS_FLUSH_GLOBAL;
	if (variant->kind == R_AW_NO_REMOTE_WRITE)
		acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ |
		      IBV_ACCESS_FLUSH_GLOBAL;
	RU_ASSERT_OK(fconn_open(&self->c, 0, 0, FL_SEND_OPS));
	ASSERT_EQ(0, posix_memalign(&p, PAGE, AREA));
	self->area = p;
	self->snap = malloc(AREA);
	ASSERT_NE(NULL, self->snap);
	ru_fill(self->area, AREA, ru_random_seed());
	self->ok_mr = ibv_reg_mr(self->c.srv.pd, self->area, PAGE, ACC_TARGET);
	ASSERT_NE(NULL, self->ok_mr) TH_LOG("%s", strerror(errno));
	self->mr = ibv_reg_mr(self->c.srv.pd, self->area + MR_OFF, MR_LEN, acc);
	ASSERT_NE(NULL, self->mr) TH_LOG("access 0x%x: %s", acc,
					 strerror(errno));
}

FIXTURE_TEARDOWN(refused)
{
	if (self->mr)
		ibv_dereg_mr(self->mr);
	if (self->ok_mr)
		ibv_dereg_mr(self->ok_mr);
	ru_pair_close(&self->c);
	free(self->area);
	free(self->snap);
}

/*
 * The bad request (wr 1, signaled) and a valid Atomic Write to the good
 * MR behind it (wr 2, signaled, same batch): wr 1 completes with the
 * error, wr 2 never succeeds (it is behind in the Read queue: flushed or
 * not completed), both QPs end in error (the Terminate), and not a byte
 * of the area changed.
 */
TEST_F_TIMEOUT(refused, terminated, 60)
{
	uint64_t base = (uintptr_t)(self->area + MR_OFF);
	enum ibv_wc_status want = IBV_WC_REM_ACCESS_ERR;
	struct fop ops[2];
	struct ru_wc w[4];
	char buf[200];
	int n = 0, rc, i;

	memset(ops, 0, sizeof(ops));
	ops[0].wr_id = 1;
	ops[0].flags = IBV_SEND_SIGNALED;
	ops[0].rkey = self->mr->rkey;
	ops[0].raddr = base + 64;
	ops[0].len = 64;
	ops[0].type = IBV_FLUSH_GLOBAL;
	ops[0].level = IBV_FLUSH_RANGE;
	ops[0].kind = F_FLUSH;
	switch (variant->kind) {
	case R_FLUSH_NO_ACCESS:
		break;
	case R_FLUSH_MR_NO_ACCESS:
		ops[0].level = IBV_FLUSH_MR;
		break;
	case R_FLUSH_PERSIST_ON_GLOBAL:
		ops[0].type = IBV_FLUSH_PERSISTENT;
		break;
	case R_FLUSH_OOB:
		ops[0].raddr = base + 512;
		ops[0].len = MR_LEN - 512 + 1;
		break;
	case R_FLUSH_BEFORE:
		ops[0].raddr = base - 1;
		ops[0].len = 16;
		break;
	case R_FLUSH_BAD_KEY:
		ops[0].rkey ^= 0x5a;
		break;
	case R_AW_NO_REMOTE_WRITE:
	case R_AW_OOB:
	case R_AW_BAD_KEY:
	case R_AW_BAD_INDEX:
		ops[0].kind = F_AW;
		ops[0].len = 0;
		ops[0].a = 0x5a5a5a5a5a5a5a5aull;
		if (variant->kind == R_AW_OOB)
			ops[0].raddr = base + (MR_LEN & ~7);	/* 4 in, 4 out */
		if (variant->kind == R_AW_BAD_KEY)
			ops[0].rkey ^= 0x5a;
		if (variant->kind == R_AW_BAD_INDEX)
			ops[0].rkey ^= 0x00abcd00;
		break;
	}
	ops[1].kind = F_AW;
	ops[1].wr_id = 2;
	ops[1].flags = IBV_SEND_SIGNALED;
	ops[1].rkey = self->ok_mr->rkey;
	ops[1].raddr = (uintptr_t)(self->area + OK_OFF);
	ops[1].a = 0x1122334455667788ull;
	fop_str(&ops[0], buf, sizeof(buf));
	printf("# %s (MR 0x%llx+%d), expecting %s\n", buf,
	       (unsigned long long)base, MR_LEN, ibv_wc_status_str(want));

	memcpy(self->snap, self->area, AREA);
	rc = fop_post(self->c.cli.qpx, ops, 2);
	ASSERT_EQ(0, rc) TH_LOG("post: %s", strerror(rc));
	while (n < 4 && ru_poll_send(&self->c.cli, &w[n],
				     n < 2 ? 10000 : 500) == 1)
		n++;
	for (i = 0; i < n; i++)
		printf("# completion %d: %s\n", i + 1,
		       ru_wc_str(&w[i], buf, sizeof(buf)));
	ASSERT_GE(n, 1) TH_LOG("the refused request did not complete");
	EXPECT_EQ(1u, w[0].wr_id);
	EXPECT_EQ((int)want, (int)w[0].status)
		TH_LOG("got %s", ibv_wc_status_str(w[0].status));
	for (i = 1; i < n; i++) {
		EXPECT_EQ(2u, w[i].wr_id) TH_LOG("completion %d", i + 1);
		EXPECT_NE((int)IBV_WC_SUCCESS, (int)w[i].status)
			TH_LOG("the Atomic Write behind the refused request "
			       "succeeded");
	}
	EXPECT_LE(n, 2) TH_LOG("more completions than requests");
	EXPECT_EQ(-1, ru_first_diff(self->area, self->snap, AREA))
		TH_LOG("target memory changed at byte %ld",
		       ru_first_diff(self->area, self->snap, AREA));
	EXPECT_EQ(0, ru_wait_qp_state(self->c.cli.qp, IBV_QPS_ERR, 5000))
		TH_LOG("client QP %s",
		       ru_qp_state_str(ru_qp_state(self->c.cli.qp)));
	EXPECT_EQ(0, ru_wait_qp_state(self->c.srv.qp, IBV_QPS_ERR, 5000))
		TH_LOG("server QP %s",
		       ru_qp_state_str(ru_qp_state(self->c.srv.qp)));
	/* a late write of the area? */
	usleep(200000);
	EXPECT_EQ(-1, ru_first_diff(self->area, self->snap, AREA));
}

/* ---- refusals at post time -------------------------------------------------- */

enum pkind {
	P_FLUSH_TYPE_0,
	P_FLUSH_TYPE_4,
	P_FLUSH_TYPE_GLOBAL_4,
	P_FLUSH_LEVEL_2,
	P_FLUSH_WITH_SGE,
	P_AW_MISALIGNED,
	P_AW_MISALIGNED_AFTER_WRITE,	/* the whole batch is refused */
	P_AW_WITH_INLINE,
	P_FLUSH_NOT_ASKED,	/* QP without IBV_QP_EX_WITH_FLUSH */
	P_AW_NOT_ASKED,		/* QP without IBV_QP_EX_WITH_ATOMIC_WRITE */
	P_FLUSH_POST_SEND,	/* IBV_WR_FLUSH through ibv_post_send() */
	P_AW_POST_SEND,
};

FIXTURE(post_error) {
	struct ru_pair c;
	struct ru_buf tgt, src;
};

FIXTURE_VARIANT(post_error) {
	enum pkind kind;
	int want;
};

FIXTURE_VARIANT_ADD(post_error, flush_type_0) { P_FLUSH_TYPE_0, EINVAL };
FIXTURE_VARIANT_ADD(post_error, flush_type_4) { P_FLUSH_TYPE_4, EINVAL };
FIXTURE_VARIANT_ADD(post_error, flush_type_global_4) {
	P_FLUSH_TYPE_GLOBAL_4, EINVAL };
FIXTURE_VARIANT_ADD(post_error, flush_level_2) { P_FLUSH_LEVEL_2, EINVAL };
FIXTURE_VARIANT_ADD(post_error, flush_with_sge) { P_FLUSH_WITH_SGE, EINVAL };
FIXTURE_VARIANT_ADD(post_error, aw_misaligned) { P_AW_MISALIGNED, EINVAL };
FIXTURE_VARIANT_ADD(post_error, aw_misaligned_after_write) {
	P_AW_MISALIGNED_AFTER_WRITE, EINVAL };
FIXTURE_VARIANT_ADD(post_error, aw_with_inline) { P_AW_WITH_INLINE, EINVAL };
FIXTURE_VARIANT_ADD(post_error, flush_not_asked) {
	P_FLUSH_NOT_ASKED, EOPNOTSUPP };
FIXTURE_VARIANT_ADD(post_error, aw_not_asked) { P_AW_NOT_ASKED, EOPNOTSUPP };
FIXTURE_VARIANT_ADD(post_error, flush_post_send) {
	P_FLUSH_POST_SEND, EOPNOTSUPP };
FIXTURE_VARIANT_ADD(post_error, aw_post_send) { P_AW_POST_SEND, EOPNOTSUPP };

FIXTURE_SETUP(post_error)
{
	uint64_t ops = FL_SEND_OPS;

	if (variant->kind == P_FLUSH_NOT_ASKED)
		ops &= ~(uint64_t)IBV_QP_EX_WITH_FLUSH;
	if (variant->kind == P_AW_NOT_ASKED)
		ops &= ~(uint64_t)IBV_QP_EX_WITH_ATOMIC_WRITE;
	RU_ASSERT_OK(fconn_open(&self->c, 0, 0, ops));
	RU_ASSERT_OK(ru_buf_alloc(&self->tgt, self->c.srv.pd, PAGE, ACC_TARGET));
	RU_ASSERT_OK(ru_buf_alloc(&self->src, self->c.cli.pd, PAGE,
				  IBV_ACCESS_LOCAL_WRITE));
	ru_fill(self->tgt.addr, self->tgt.alloc, 7);
	ru_fill(self->src.addr, self->src.alloc, 8);
}

FIXTURE_TEARDOWN(post_error)
{
	ru_buf_free(&self->tgt);
	ru_buf_free(&self->src);
	ru_pair_close(&self->c);
}

TEST_F_TIMEOUT(post_error, refused, 60)
{
	struct ibv_qp_ex *qpx = self->c.cli.qpx;
	uint64_t t = (uintptr_t)self->tgt.addr;
	uint32_t rkey = self->tgt.mr->rkey;
	uint64_t v = 0x0102030405060708ull;
	uint8_t *snap;
	struct fop ok;
	struct ru_wc w;
	char buf[200];
	int rc = 0;

	ASSERT_NE(NULL, qpx);
	snap = malloc(self->tgt.alloc);
	ASSERT_NE(NULL, snap);
	memcpy(snap, self->tgt.addr, self->tgt.alloc);

	if (variant->kind == P_FLUSH_POST_SEND ||
	    variant->kind == P_AW_POST_SEND) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1;
		wr.opcode = variant->kind == P_FLUSH_POST_SEND ?
			    IBV_WR_FLUSH : IBV_WR_ATOMIC_WRITE;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.rdma.remote_addr = t + 64;
		wr.wr.rdma.rkey = rkey;
		rc = ibv_post_send(self->c.cli.qp, &wr, &bad);
		rc = rc < 0 ? -rc : rc;
	} else {
		ibv_wr_start(qpx);
		qpx->wr_id = 1;
		qpx->wr_flags = IBV_SEND_SIGNALED;
		switch (variant->kind) {
		case P_FLUSH_TYPE_0:
			ibv_wr_flush(qpx, rkey, t, 64, 0, IBV_FLUSH_RANGE);
			break;
		case P_FLUSH_TYPE_4:
			ibv_wr_flush(qpx, rkey, t, 64, 4, IBV_FLUSH_RANGE);
			break;
		case P_FLUSH_TYPE_GLOBAL_4:
			ibv_wr_flush(qpx, rkey, t, 64, IBV_FLUSH_GLOBAL | 4,
				     IBV_FLUSH_RANGE);
			break;
		case P_FLUSH_LEVEL_2:
			ibv_wr_flush(qpx, rkey, t, 64, IBV_FLUSH_GLOBAL, 2);
			break;
		case P_FLUSH_WITH_SGE:
		case P_FLUSH_NOT_ASKED:
			ibv_wr_flush(qpx, rkey, t, 64, IBV_FLUSH_GLOBAL,
				     IBV_FLUSH_RANGE);
			if (variant->kind == P_FLUSH_WITH_SGE)
				ibv_wr_set_sge(qpx, self->src.mr->lkey,
					       (uintptr_t)self->src.addr, 8);
			break;
		case P_AW_MISALIGNED_AFTER_WRITE:
			ibv_wr_rdma_write(qpx, rkey, t + 128);
			ibv_wr_set_sge(qpx, self->src.mr->lkey,
				       (uintptr_t)self->src.addr, 256);
			qpx->wr_id = 2;
			ibv_wr_atomic_write(qpx, rkey, t + 64 + 4, &v);
			break;
		case P_AW_MISALIGNED:
			ibv_wr_atomic_write(qpx, rkey, t + 64 + 4, &v);
			break;
		case P_AW_WITH_INLINE:
			ibv_wr_atomic_write(qpx, rkey, t + 64, &v);
			ibv_wr_set_inline_data(qpx, self->src.addr, 8);
			break;
		case P_AW_NOT_ASKED:
			ibv_wr_atomic_write(qpx, rkey, t + 64, &v);
			break;
		default:
			break;
		}
		rc = ibv_wr_complete(qpx);
		rc = rc < 0 ? -rc : rc;
	}
	printf("# post: %d (%s), want %s\n", rc, strerror(rc),
	       strerror(variant->want));
	EXPECT_EQ(variant->want, rc);
	/* nothing was queued: no completion, the QP as it was */
	rc = ru_poll_send(&self->c.cli, &w, 500);
	EXPECT_EQ(0, rc) TH_LOG("a refused post completed: %s",
				ru_wc_str(&w, buf, sizeof(buf)));
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
	EXPECT_EQ(-1, ru_first_diff(self->tgt.addr, snap, self->tgt.alloc));

	/* and the QP still works: a Write of 8 bytes, checked */
	memset(&ok, 0, sizeof(ok));
	ok.kind = F_WRITE;
	ok.wr_id = 9;
	ok.flags = IBV_SEND_SIGNALED;
	ok.raddr = t + 256;
	ok.rkey = rkey;
	ok.laddr = (uintptr_t)self->src.addr;
	ok.lkey = self->src.mr->lkey;
	ok.len = 8;
	fop_model(&ok, snap, t, self->src.addr);
	ASSERT_EQ(0, fop_post(qpx, &ok, 1));
	ASSERT_EQ(0, expect_completions(_metadata, &self->c.cli, &ok, 1));
	EXPECT_EQ(-1, ru_first_diff(self->tgt.addr, snap, self->tgt.alloc));
	free(snap);
}

/* ---- main ------------------------------------------------------------------ */

static void usage(FILE *f, const char *prog)
{
	fprintf(f,
		"usage: %s [--pmem DEVDAX] [kselftest harness options]\n"
		"  --pmem PATH  a device-dax device (e.g. /dev/dax0.0) mapped\n"
		"               (2 MiB, MAP_SHARED) as the target of the *_pmem\n"
		"               variants (FLUSH_PERSISTENT); default\n"
		"               $SIWX_FLUSH_PMEM, else $SIWX_PMEM_DEV (a pmem= boot);\n"
		"               without it they skip\n"
		"  -h           this, then the harness's options\n", prog);
}

int main(int argc, char **argv)
{
	char **nargv = calloc((size_t)argc + 1, sizeof(*nargv));
	int i, n = 0;

	if (!nargv)
		return 1;
	/* the NVDIMM of a pmem= boot (tools/vm/run --pmem), unless told */
	pmem_path = getenv("SIWX_FLUSH_PMEM");
	if (!pmem_path)
		pmem_path = getenv("SIWX_PMEM_DEV");
	if (pmem_path && !*pmem_path)
		pmem_path = NULL;
	for (i = 0; i < argc; i++) {
		if (!strcmp(argv[i], "--pmem") && i + 1 < argc) {
			pmem_path = argv[++i];
			continue;
		}
		if (!strncmp(argv[i], "--pmem=", 7)) {
			pmem_path = argv[i] + 7;
			continue;
		}
		if (!strcmp(argv[i], "--pmem")) {
			usage(stderr, argv[0]);
			return 2;
		}
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			usage(stdout, argv[0]);
		nargv[n++] = argv[i];
	}
	return test_harness_run(n, nargv);
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
