// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * atomic - RFC 7306 atomic operations (FetchAdd, CmpSwap, masked), single VM.
 *
 * The responder (server, SIWX_ADDR0) and the requester (client, bound to
 * SIWX_ADDR1) connect through rdma_cm; the server's memory is this
 * process's memory, so every operation is checked against the reference
 * model of atomic_common.h: the completion (status, opcode, byte_len), the
 * original value in the requester's result buffer, the responder's memory
 * afterwards (the whole registered buffer, byte for byte) and the bytes
 * around every result slot.
 *
 *   model.*        the reference model against hand-computed values
 *   device.*       atomic_cap, IRD/ORD limits, ibv_query_device_ex
 *   semantics.*    random and edge-value operations through ibv_post_send,
 *                  ibv_wr_* (ibv_qp_ex) and siwdv masked operations;
 *                  ordering of atomics and RDMA Reads beyond the ORD
 *   atomicity.*    several QPs in two processes hammering one word
 *                  (FetchAdd totals, a CmpSwap spin lock guarding a
 *                  counter, two MRs and two processes' MRs on one page)
 *   invalid.*      responder-side validation: misaligned target, bad
 *                  STags, foreign PD, out of bounds, missing
 *                  REMOTE_ATOMIC; status, untouched memory
 *   invalid_stream.* the WRs behind a refused atomic: flushed in order,
 *                  not delivered, the responder's QP in error
 *   post_error.*   malformed atomic WRs refused at post time
 *
 * Environment: SIWX_ADDR0/1, SIWX_DEV0/1, SIWX_SEED (fixed patterns and
 * operands), SIWX_ATOMIC_OPS (random operations per API, 3000),
 * SIWX_ATOMIC_ITERS (FetchAdds per QP in atomicity.*, 1000),
 * SIWX_ATOMIC_LOCK_ITERS (lock rounds per QP, 60).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "siwx_test.h"
#include "atomic_common.h"

#define WAIT_MS		15000	/* any single completion */
#define PAGE		4096

/* ---- model ----------------------------------------------------------------- */

/*
 * Hand-computed cases: they check the model itself, and semantics.edges
 * runs them against the module. unmasked: expressible without masks.
 */
struct edge {
	const char *what;
	int unmasked;
	enum aop_kind kind;
	uint64_t mem, a, am, b, bm;	/* FA: a=add am=boundary; CS: a/am cmp, b/bm swap */
	uint64_t want;
};

#define ONES 0xffffffffffffffffull

static const struct edge edges[] = {
	{ "fa 0+0", 1, AOP_FA, 0, 0, 0, 0, 0, 0 },
	{ "fa wrap ~0+1", 1, AOP_FA, ONES, 1, 0, 0, 0, 0 },
	{ "fa 0x7fff..+1", 1, AOP_FA, 0x7fffffffffffffffull, 1, 0, 0, 0,
	  0x8000000000000000ull },
	{ "fa carry into bit 32", 1, AOP_FA, 0x00000000ffffffffull, 1, 0, 0, 0,
	  0x0000000100000000ull },
	{ "fa 2^63+2^63", 1, AOP_FA, 0x8000000000000000ull,
	  0x8000000000000000ull, 0, 0, 0, 0 },
	{ "fa sum 2^64", 1, AOP_FA, 0x0123456789abcdefull,
	  0xfedcba9876543211ull, 0, 0, 0, 0 },
	{ "fa 5+(-1)", 1, AOP_FA, 5, ONES, 0, 0, 0, 4 },
	{ "cs 0==0 -> ~0", 1, AOP_CS, 0, 0, ONES, ONES, ONES, ONES },
	{ "cs ~0==~0 -> 0", 1, AOP_CS, ONES, ONES, ONES, 0, ONES, 0 },
	{ "cs bit 63 differs", 1, AOP_CS, 0x8000000000000000ull, 0, ONES, 1,
	  ONES, 0x8000000000000000ull },
	{ "cs bit 0 differs", 1, AOP_CS, 1, 0, ONES, 0x5555, ONES, 1 },
	{ "cs swap same value", 1, AOP_CS, 0x0123456789abcdefull,
	  0x0123456789abcdefull, ONES, 0x0123456789abcdefull, ONES,
	  0x0123456789abcdefull },
	{ "mfa m=~0 (carry-less)", 0, AOP_FA, 0x00ff00ff00ff00ffull,
	  0x0f0f0f0f0f0f0f0full, ONES, 0, 0, 0x0ff00ff00ff00ff0ull },
	{ "mfa m=~0 ~0+~0", 0, AOP_FA, ONES, ONES, ONES, 0, 0, 0 },
	{ "mfa 8-bit fields", 0, AOP_FA, 0x01ff01ff01ff01ffull,
	  0x0101010101010101ull, 0x8080808080808080ull, 0, 0,
	  0x0200020002000200ull },
	{ "mfa 32-bit fields", 0, AOP_FA, 0x00000001ffffffffull,
	  0x0000000100000001ull, 0x8000000080000000ull, 0, 0,
	  0x0000000200000000ull },
	{ "mfa m=bit63 == unmasked", 0, AOP_FA, ONES, 1,
	  0x8000000000000000ull, 0, 0, 0 },
	{ "mfa boundary after bit 0", 0, AOP_FA, 3, 1, 1, 0, 0, 2 },
	{ "mfa boundary after bit 32", 0, AOP_FA, 0x00000001ffffffffull, 1,
	  0x0000000100000000ull, 0, 0, 0 },
	{ "mfa m=0 == unmasked", 0, AOP_FA, 0x00000000ffffffffull, 1, 0, 0, 0,
	  0x0000000100000000ull },
	{ "mcs masked compare+swap", 0, AOP_CS, 0x1122334455667788ull,
	  0xffff334455667788ull, 0x0000ffffffffffffull, 0xaaaaaaaabbbbbbbbull,
	  0x00000000ffffffffull, 0x11223344bbbbbbbbull },
	{ "mcs cmask 0 always swaps", 0, AOP_CS, 0x1122334455667788ull,
	  0x5555, 0, 0xeeddccbbaa998877ull, 0xff00000000000000ull,
	  0xee22334455667788ull },
	{ "mcs smask 0 changes nothing", 0, AOP_CS, 0x1122334455667788ull,
	  0x1122334455667788ull, ONES, 0xeeddccbbaa998877ull, 0,
	  0x1122334455667788ull },
	{ "mcs mismatch in bit 0 under mask", 0, AOP_CS, 0x1122334455667788ull,
	  0x1122334455667789ull, 1, 0, ONES, 0x1122334455667788ull },
	{ "mcs difference outside mask", 0, AOP_CS, 0x1122334455667788ull,
	  0x0022334455667788ull, 0x00ffffffffffffffull, 0, ONES, 0 },
	{ "mcs full masks == unmasked", 0, AOP_CS, 0x8000000000000001ull,
	  0x8000000000000001ull, ONES, 0x7ffffffffffffffeull, ONES,
	  0x7ffffffffffffffeull },
};

#define NEDGES (int)(sizeof(edges) / sizeof(edges[0]))

static void edge_op(const struct edge *e, int masked, struct aop *op)
{
	memset(op, 0, sizeof(*op));
	op->kind = e->kind;
	op->masked = masked;
	if (e->kind == AOP_FA) {
		op->add = e->a;
		op->fmask = e->am;
	} else {
		op->cmp = e->a;
		op->cmask = e->am;
		op->swap = e->b;
		op->smask = e->bm;
	}
}

TEST(model_self_check)
{
	struct aop op;
	int i;

	for (i = 0; i < NEDGES; i++) {
		uint64_t got;

		edge_op(&edges[i], 1, &op);
		got = aop_apply(&op, edges[i].mem);
		EXPECT_EQ(edges[i].want, got)
			TH_LOG("%s: model 0x%016llx", edges[i].what,
			       (unsigned long long)got);
		if (edges[i].unmasked) {
			edge_op(&edges[i], 0, &op);
			EXPECT_EQ(edges[i].want, aop_apply(&op, edges[i].mem))
				TH_LOG("%s (unmasked)", edges[i].what);
		}
	}
	/* random: masked with neutral masks == unmasked == plain C */
	uint64_t s = 42;

	for (i = 0; i < 20000; i++) {
		uint64_t m = ru_rng(&s), a = ru_rng(&s), f;

		ASSERT_EQ(m + a, model_fetch_add(m, a, 0));
		/* boundary after every 16-bit field == four 16-bit adds */
		f = 0;
		for (int k = 0; k < 4; k++)
			f |= (uint64_t)(uint16_t)((m >> (16 * k)) +
						  (a >> (16 * k))) << (16 * k);
		ASSERT_EQ(f, model_fetch_add(m, a, 0x8000800080008000ull));
		ASSERT_EQ(m ^ a, model_fetch_add(m, a, ONES));
	}
}

/* ---- device attributes -------------------------------------------------- */

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
		struct ibv_device_attr_ex ax;
		struct ibv_device_attr da;
		struct ibv_context *ctx;

		for (j = 0; j < 2; j++)
			if (!strcmp(name, want[j]))
				break;
		if (j == 2)
			continue;
		seen |= 1 << j;
		ctx = ibv_open_device(list[i]);
		ASSERT_NE(NULL, ctx) TH_LOG("open %s: %s", name, strerror(errno));
		ASSERT_EQ(0, ibv_query_device(ctx, &da));
		printf("# %s: atomic_cap %d max_qp_rd_atom %d max_qp_init_rd_atom %d "
		       "max_res_rd_atom %d\n", name, da.atomic_cap,
		       da.max_qp_rd_atom, da.max_qp_init_rd_atom,
		       da.max_res_rd_atom);
		EXPECT_EQ((int)IBV_ATOMIC_HCA, (int)da.atomic_cap)
			TH_LOG("%s: atomic_cap %d, want IBV_ATOMIC_HCA", name,
			       da.atomic_cap);
		EXPECT_EQ(128, da.max_qp_rd_atom);
		EXPECT_EQ(128, da.max_qp_init_rd_atom);
		memset(&ax, 0, sizeof(ax));
		ASSERT_EQ(0, ibv_query_device_ex(ctx, NULL, &ax));
		EXPECT_EQ((int)IBV_ATOMIC_HCA, (int)ax.orig_attr.atomic_cap);
		printf("# %s: ibv_query_device_ex: device_cap_flags_ex 0x%llx "
		       "pci_atomic_caps fetch_add 0x%x swap 0x%x cas 0x%x; "
		       "libibverbs has no masked_atomic_cap field\n", name,
		       (unsigned long long)ax.device_cap_flags_ex,
		       ax.pci_atomic_caps.fetch_add, ax.pci_atomic_caps.swap,
		       ax.pci_atomic_caps.compare_swap);
#if HAVE_SIWDV
		{
			struct siwdv_device_attr sa;

			memset(&sa, 0, sizeof(sa));
			ASSERT_EQ(0, siwdv_query_device(ctx, &sa, sizeof(sa)));
			printf("# %s: siwdv device_caps 0x%llx\n", name,
			       (unsigned long long)sa.device_caps);
			EXPECT_TRUE(!!(sa.device_caps & SIWDV_DEVICE_CAP_ATOMIC));
			EXPECT_TRUE(!!(sa.device_caps &
				       SIWDV_DEVICE_CAP_MASKED_ATOMIC));
		}
#endif
		ibv_close_device(ctx);
	}
	ibv_free_device_list(list);
	EXPECT_EQ(3, seen) TH_LOG("devices %s and %s expected", want[0], want[1]);
	printf("# <infiniband/siwdv.h> at build time: %s\n",
	       HAVE_SIWDV ? "yes" : "NO (masked tests fail)");
}

/* ---- connections ----------------------------------------------------------- */

/* Both ends in this process; with want_qpx the client has an ibv_qp_ex. */
static int aconn_open(struct ru_pair *c, int want_qpx, const struct ru_caps *cc,
		      const struct ru_caps *sc)
{
	struct ru_caps ccaps;

	if (cc)
		ccaps = *cc;
	else
		ru_caps_default(&ccaps);
	ccaps.send_ops = want_qpx ? AX_SEND_OPS : 0;
	return ru_pair_open(c, &ccaps, sc);
}

/* ---- semantics ------------------------------------------------------------ */

/*
 * Target: a registered buffer of TLEN (+ RU_GUARD) bytes on the server,
 * filled with a pattern; the model keeps the expected image of the whole
 * allocation. Results: slots of 32 bytes in a client buffer, the 8 result
 * bytes at offset 8 of a slot; the model keeps its expected image too.
 */
#define TLEN		PAGE
#define NSLOTS		64
#define SLOT		32
#define MAXBATCH	8

static const size_t target_offs[] = {
	0, 8, 16, 24, 64, 1024, 2056, TLEN - 8, TLEN, TLEN + RU_GUARD - 8,
};
#define NTARGETS (int)(sizeof(target_offs) / sizeof(target_offs[0]))

FIXTURE(semantics) {
	struct ru_pair c;
	struct ru_buf tgt, res;
	uint8_t *tmodel, *rmodel;
	uint64_t seed;
};

FIXTURE_VARIANT(semantics) {
	enum aop_api api;
};

FIXTURE_VARIANT_ADD(semantics, post_send) { .api = API_POST };
FIXTURE_VARIANT_ADD(semantics, wr_api) { .api = API_WR };
FIXTURE_VARIANT_ADD(semantics, siwdv_masked) { .api = API_DV };

FIXTURE_SETUP(semantics)
{
	if (variant->api == API_DV)
		ASSERT_TRUE(HAVE_SIWDV)
			TH_LOG("<infiniband/siwdv.h> missing at build time: "
			       "masked atomics cannot be posted");
	self->seed = ru_random_seed();
	printf("# API %s, seed 0x%llx\n", api_name(variant->api),
	       (unsigned long long)self->seed);
	RU_ASSERT_OK(aconn_open(&self->c, variant->api != API_POST, NULL,
				NULL));
	RU_ASSERT_OK(ru_buf_alloc(&self->tgt, self->c.srv.pd, TLEN, ACC_ATOMIC));
	RU_ASSERT_OK(ru_buf_alloc(&self->res, self->c.cli.pd, NSLOTS * SLOT,
				  IBV_ACCESS_LOCAL_WRITE));
	ru_fill(self->tgt.addr, self->tgt.alloc, self->seed);
	ru_fill(self->res.addr, self->res.alloc, ~self->seed);
	self->tmodel = malloc(self->tgt.alloc);
	self->rmodel = malloc(self->res.alloc);
	ASSERT_NE(NULL, self->tmodel);
	ASSERT_NE(NULL, self->rmodel);
	memcpy(self->tmodel, self->tgt.addr, self->tgt.alloc);
	memcpy(self->rmodel, self->res.addr, self->res.alloc);
}

FIXTURE_TEARDOWN(semantics)
{
	ru_buf_free(&self->tgt);
	ru_buf_free(&self->res);
	ru_pair_close(&self->c);
	free(self->tmodel);
	free(self->rmodel);
}

/*
 * Post ops[0..n) (slots 0..n), wait for their completions (in order) and
 * check everything against the models, which already hold the expected
 * state (exp_orig[i] = expected original value of op i).
 */
static void run_batch(struct __test_metadata *_metadata,
		      FIXTURE_DATA(semantics) *self, enum aop_api api,
		      const struct aop *ops, const uint64_t *exp_orig, int n,
		      uint64_t id0)
{
	struct ibv_wc wc;
	char d[200];
	long at;
	int i, rc;

	for (i = 0; i < n; i++) {
		uint8_t *slot = self->res.addr + (size_t)i * SLOT + 8;

		rc = post_atomic(self->c.cli.qp, self->c.cli.qpx, api, &ops[i],
				 (uintptr_t)slot, self->res.mr->lkey, id0 + i,
				 IBV_SEND_SIGNALED);
		aop_str(&ops[i], d, sizeof(d));
		ASSERT_EQ(0, rc) TH_LOG("post %s: %s", d, strerror(rc));
	}
	for (i = 0; i < n; i++) {
		aop_str(&ops[i], d, sizeof(d));
		rc = ru_poll(self->c.cli.scq, &wc, WAIT_MS);
		ASSERT_EQ(1, rc) TH_LOG("no completion for op %d of %d (%s): %s",
					i, n, d, ru_errmsg());
		ASSERT_EQ((int)IBV_WC_SUCCESS, (int)wc.status)
			TH_LOG("wr %llu (%s): %s, vendor_err 0x%x",
			       (unsigned long long)wc.wr_id, d,
			       ibv_wc_status_str(wc.status), wc.vendor_err);
		ASSERT_EQ(id0 + i, wc.wr_id)
			TH_LOG("completion out of order: got wr %llu, want %llu",
			       (unsigned long long)wc.wr_id,
			       (unsigned long long)(id0 + i));
		ASSERT_EQ((int)aop_wc_opcode(&ops[i]), (int)wc.opcode)
			TH_LOG("%s: completion opcode %d", d, wc.opcode);
		ASSERT_EQ(8u, wc.byte_len) TH_LOG("%s: byte_len %u", d,
						  wc.byte_len);
	}
	for (i = 0; i < n; i++) {
		uint64_t got = ld64(self->res.addr + (size_t)i * SLOT + 8);

		aop_str(&ops[i], d, sizeof(d));
		ASSERT_EQ(exp_orig[i], got)
			TH_LOG("op %d (%s) at 0x%llx: original value 0x%016llx, "
			       "model 0x%016llx", i, d,
			       (unsigned long long)ops[i].raddr,
			       (unsigned long long)got,
			       (unsigned long long)exp_orig[i]);
	}
	at = ru_first_diff(self->res.addr, self->rmodel, self->res.alloc);
	ASSERT_EQ(-1, at) TH_LOG("requester buffer: byte %ld (slot %ld, byte %ld) "
				 "differs from the model", at, at / SLOT,
				 at % SLOT);
	at = ru_first_diff(self->tgt.addr, self->tmodel, self->tgt.alloc);
	if (at >= 0) {
		long w = at & ~7l;

		TH_LOG("responder memory: byte %ld differs: word at +%ld is "
		       "0x%016llx, model 0x%016llx", at, w,
		       (unsigned long long)ld64(self->tgt.addr + w),
		       (unsigned long long)ld64(self->tmodel + w));
	}
	ASSERT_EQ(-1, at);
}

/* An operand with a good chance of hitting an edge. */
static uint64_t rnd_val(uint64_t *s, uint64_t cur)
{
	uint64_t r = ru_rng(s);

	switch (ru_rng(s) % 12) {
	case 0: return 0;
	case 1: return ONES;
	case 2: return 1;
	case 3: return 0x8000000000000000ull;
	case 4: return 0x7fffffffffffffffull;
	case 5: return r % 16;
	case 6: return -cur;		/* wraps the sum to 0 */
	case 7: return ~cur;
	case 8: return 1ull << (r % 64);
	case 9: return 0x00000000ffffffffull;
	default: return r;
	}
}

static uint64_t rnd_mask(uint64_t *s)
{
	uint64_t r = ru_rng(s), r2 = ru_rng(s);

	switch (ru_rng(s) % 12) {
	case 0: return 0;
	case 1: return ONES;
	case 2: return 0x8080808080808080ull;
	case 3: return 0x8000800080008000ull;
	case 4: return 0x8000000080000000ull;
	case 5: return 0x0101010101010101ull;
	case 6: return 1ull << (r % 64);
	case 7: return r & r2 & ru_rng(s);	/* sparse */
	case 8: return r | r2;			/* dense */
	case 9: return 0x00000000ffffffffull;
	default: return r;
	}
}

static void rnd_op(uint64_t *s, enum aop_api api, uint64_t cur, struct aop *op)
{
	memset(op, 0, sizeof(*op));
	op->masked = api == API_DV;
	op->kind = ru_rng(s) & 1 ? AOP_CS : AOP_FA;
	if (op->kind == AOP_FA) {
		op->add = rnd_val(s, cur);
		op->fmask = rnd_mask(s);
		return;
	}
	op->cmask = op->masked ? rnd_mask(s) : ONES;
	op->smask = rnd_mask(s);
	op->swap = rnd_val(s, cur);
	switch (ru_rng(s) % 4) {
	case 0:
	case 1:	/* equal under the compare mask */
		op->cmp = cur ^ (ru_rng(s) & ~op->cmask);
		break;
	case 2:	/* one bit differs under the mask (if any) */
		op->cmp = cur ^ (op->cmask ? (op->cmask & -op->cmask) : 0);
		break;
	default:
		op->cmp = rnd_val(s, cur);
		break;
	}
}

/*
 * Thousands of random operations in batches of 1..MAXBATCH (several may
 * hit the same word: the responder must execute them in order).
 */
TEST_F_TIMEOUT(semantics, random, 300)
{
	long total = ru_env_long("SIWX_ATOMIC_OPS", 3000), done = 0;
	uint64_t s = self->seed ^ 0xa70a70a7ull, id = 1;
	struct aop ops[MAXBATCH];
	uint64_t orig[MAXBATCH];
	uint64_t t0 = ru_now_ms();
	int nfa = 0, ncs = 0, nswapped = 0;

	while (done < total) {
		int n = 1 + (int)(ru_rng(&s) % MAXBATCH), i;

		if (n > total - done)
			n = (int)(total - done);
		for (i = 0; i < n; i++) {
			size_t off = target_offs[ru_rng(&s) % NTARGETS];
			uint64_t cur = ld64(self->tmodel + off), nv;

			rnd_op(&s, variant->api, cur, &ops[i]);
			ops[i].raddr = (uintptr_t)(self->tgt.addr + off);
			ops[i].rkey = self->tgt.mr->rkey;
			nv = aop_apply(&ops[i], cur);
			orig[i] = cur;
			st64(self->tmodel + off, nv);
			st64(self->rmodel + (size_t)i * SLOT + 8, cur);
			if (ops[i].kind == AOP_FA)
				nfa++;
			else
				ncs++, nswapped += nv != cur;
		}
		run_batch(_metadata, self, variant->api, ops, orig, n, id);
		if (_metadata->exit_code)
			return;
		id += n;
		done += n;
	}
	printf("# %ld operations (%d FetchAdd, %d CmpSwap of which %d changed "
	       "memory) in %.1f s\n", done, nfa, ncs, nswapped,
	       (ru_now_ms() - t0) / 1000.0);
}

/* The hand-computed cases, one at a time, at the first and last words. */
TEST_F_TIMEOUT(semantics, edges, 120)
{
	int i, k, ran = 0;

	for (i = 0; i < NEDGES; i++) {
		const struct edge *e = &edges[i];

		if (!e->unmasked && variant->api != API_DV)
			continue;
		for (k = 0; k < 2; k++) {
			size_t off = k ? TLEN + RU_GUARD - 8 : 0;
			struct aop op;
			uint64_t got;

			edge_op(e, variant->api == API_DV, &op);
			op.raddr = (uintptr_t)(self->tgt.addr + off);
			op.rkey = self->tgt.mr->rkey;
			st64(self->tgt.addr + off, e->mem);
			st64(self->tmodel + off, e->want);
			st64(self->rmodel + 8, e->mem);
			run_batch(_metadata, self, variant->api, &op, &e->mem, 1,
				  1000 + i * 2 + k);
			if (_metadata->exit_code) {
				TH_LOG("edge case '%s'", e->what);
				return;
			}
			got = ld64(self->tgt.addr + off);
			ASSERT_EQ(e->want, got) TH_LOG("%s", e->what);
			ran++;
		}
	}
	printf("# %d edge operations\n", ran);
}

/*
 * Atomics and RDMA Reads share the ORD/IRD: with ORD = IRD = 2, 48
 * FetchAdd(1) interleaved with 16 Reads of the same word are all posted at
 * once; the requester must hold them back to the ORD, the responder
 * execute them in order: FetchAdd i returns init + i, a Read posted after
 * k FetchAdds returns init + k.
 */
TEST_F_TIMEOUT(semantics, ord_limited_pipeline, 120)
{
	const int nfa = 48, every = 3;
	uint64_t init = 0x00000000fffffff0ull;
	struct ibv_wc wc;
	int i, k = 0, posted = 0, rc;
	uint64_t want_rd[32];
	uint8_t *word;
	struct aop op;

	/* a fresh connection with ORD/IRD 2 */
	ru_pair_close(&self->c);
	{
		struct ru_caps cc, sc;

		ru_caps_default(&cc);
		ru_caps_default(&sc);
		cc.initiator_depth = 2;
		cc.responder_resources = 2;
		sc.initiator_depth = 2;
		sc.responder_resources = 2;
		cc.max_send_wr = 128;
		RU_ASSERT_OK(aconn_open(&self->c, variant->api != API_POST, &cc,
					&sc));
	}
	ru_buf_free(&self->tgt);
	ru_buf_free(&self->res);
	RU_ASSERT_OK(ru_buf_alloc(&self->tgt, self->c.srv.pd, TLEN, ACC_ATOMIC));
	RU_ASSERT_OK(ru_buf_alloc(&self->res, self->c.cli.pd, 2 * PAGE,
				  IBV_ACCESS_LOCAL_WRITE));
	word = self->tgt.addr + 64;
	st64(word, init);
	memset(self->res.addr, 0xee, 2 * PAGE);
	memset(&op, 0, sizeof(op));
	op.kind = AOP_FA;
	op.add = 1;
	op.masked = variant->api == API_DV;	/* boundary 0: plain add */
	op.raddr = (uintptr_t)word;
	op.rkey = self->tgt.mr->rkey;
	for (i = 0; i < nfa; i++) {
		rc = post_atomic(self->c.cli.qp, self->c.cli.qpx, variant->api, &op,
				 (uintptr_t)(self->res.addr + 8 * i),
				 self->res.mr->lkey, posted++, IBV_SEND_SIGNALED);
		ASSERT_EQ(0, rc) TH_LOG("post FetchAdd %d: %s", i, strerror(rc));
		if (i % every == every - 1) {
			/* an RDMA Read of the word, always via ibv_post_send */
			RU_ASSERT_OK(ru_post_send(&self->c.cli, IBV_WR_RDMA_READ,
						  &self->res, PAGE + 8 * k, 8,
						  (uintptr_t)word,
						  self->tgt.mr->rkey, posted++,
						  IBV_SEND_SIGNALED));
			want_rd[k++] = init + i + 1;
		}
	}
	for (i = 0; i < posted; i++) {
		rc = ru_poll(self->c.cli.scq, &wc, WAIT_MS);
		ASSERT_EQ(1, rc) TH_LOG("%d of %d completions: %s", i, posted,
					ru_errmsg());
		ASSERT_EQ((int)IBV_WC_SUCCESS, (int)wc.status)
			TH_LOG("wr %llu: %s", (unsigned long long)wc.wr_id,
			       ibv_wc_status_str(wc.status));
		ASSERT_EQ((uint64_t)i, wc.wr_id) TH_LOG("out of order");
	}
	for (i = 0; i < nfa; i++)
		ASSERT_EQ(init + i, ld64(self->res.addr + 8 * i))
			TH_LOG("FetchAdd %d returned 0x%llx", i,
			       (unsigned long long)ld64(self->res.addr + 8 * i));
	for (i = 0; i < k; i++)
		ASSERT_EQ(want_rd[i], ld64(self->res.addr + PAGE + 8 * i))
			TH_LOG("Read %d returned 0x%llx, want 0x%llx", i,
			       (unsigned long long)ld64(self->res.addr + PAGE + 8 * i),
			       (unsigned long long)want_rd[i]);
	ASSERT_EQ(init + nfa, ld64(word));
	ASSERT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
}

/* ---- atomicity ----------------------------------------------------------- */

enum hammer_mode {
	HM_FA,		/* FetchAdd(1) */
	HM_MFA,		/* masked FetchAdd, four 16-bit fields (siwdv) */
	HM_LOCK,	/* CmpSwap spin lock around Read/+1/Write */
};

#define QPS_PER_PROC	2
#define NQP		(2 * QPS_PER_PROC)
#define FA_WINDOW	8
#define MFA_ADD		0x0001000100010001ull
#define MFA_MASK	0x8000800080008000ull

/* Shared between the test process (P) and its child (C). */
struct hshared {
	volatile int ready;		/* P: target and listener published */
	volatile int c_ready, p_ready;	/* connections up */
	volatile int go;
	volatile int c_done, p_done;
	volatile int c_failed;
	uint16_t port[2];		/* P's listener, C's (two_responders) */
	uint64_t raddr;
	uint32_t rkey[2];
	char c_err[512];
	uint64_t vals[];		/* NQP * iters returned values */
};

struct hcfg {
	enum hammer_mode mode;
	int two_mrs;		/* QPs alternate between two MRs of one page */
	int two_responders;	/* C registers the shared page itself */
	int iters;
};

struct worker {
	struct ru_ep *ep;
	struct ibv_qp_ex *qpx;
	struct ru_buf buf;
	const struct hcfg *cfg;
	int id;			/* 1..NQP, also the lock owner id */
	uint64_t raddr;		/* FA word / lock word */
	uint64_t ctr;		/* counter (HM_LOCK) */
	uint32_t rkey;
	uint64_t *vals;
	int spins;
	char err[300];
};

static int wfail(struct worker *w, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static int wfail(struct worker *w, const char *fmt, ...)
{
	va_list ap;
	int n;

	n = snprintf(w->err, sizeof(w->err), "QP %d: ", w->id);
	va_start(ap, fmt);
	vsnprintf(w->err + n, sizeof(w->err) - n, fmt, ap);
	va_end(ap);
	return -1;
}

/* Poll one completion of w, require success and wr_id. */
static int wpoll(struct worker *w, uint64_t wr_id, enum ibv_wc_opcode opc)
{
	struct ibv_wc wc;
	int rc = ru_poll(w->ep->scq, &wc, WAIT_MS);

	if (rc != 1)
		return wfail(w, "no completion for wr %llu: %s",
			     (unsigned long long)wr_id, ru_errmsg());
	if (wc.status != IBV_WC_SUCCESS)
		return wfail(w, "wr %llu: %s", (unsigned long long)wc.wr_id,
			     ibv_wc_status_str(wc.status));
	if (wc.wr_id != wr_id)
		return wfail(w, "completion of wr %llu, expected %llu",
			     (unsigned long long)wc.wr_id,
			     (unsigned long long)wr_id);
	if (wc.opcode != opc)
		return wfail(w, "wr %llu: opcode %d, expected %d",
			     (unsigned long long)wr_id, wc.opcode, opc);
	return 0;
}

static void *fa_worker(void *arg)
{
	struct worker *w = arg;
	int masked = w->cfg->mode == HM_MFA;
	struct aop op;
	int posted = 0, done = 0, n = w->cfg->iters;

	memset(&op, 0, sizeof(op));
	op.kind = AOP_FA;
	op.masked = masked;
	op.add = masked ? MFA_ADD : 1;
	op.fmask = masked ? MFA_MASK : 0;
	op.raddr = w->raddr;
	op.rkey = w->rkey;
	while (done < n) {
		while (posted < n && posted - done < FA_WINDOW) {
			int rc = post_atomic(w->ep->qp, w->qpx,
					     masked ? API_DV : API_POST, &op,
					     (uintptr_t)(w->buf.addr +
							 8 * (posted % FA_WINDOW)),
					     w->buf.mr->lkey, posted,
					     IBV_SEND_SIGNALED);
			if (rc) {
				wfail(w, "post %d: %s", posted, strerror(rc));
				return NULL;
			}
			posted++;
		}
		if (wpoll(w, done, IBV_WC_FETCH_ADD))
			return NULL;
		w->vals[done] = ld64(w->buf.addr + 8 * (done % FA_WINDOW));
		done++;
	}
	return NULL;
}

/* One atomic of w, waiting for its completion; *orig gets the value. */
static int w_atomic(struct worker *w, const struct aop *op, uint64_t wr_id,
		    uint64_t *orig)
{
	int rc = post_atomic(w->ep->qp, NULL, API_POST, op,
			     (uintptr_t)w->buf.addr, w->buf.mr->lkey, wr_id,
			     IBV_SEND_SIGNALED);

	if (rc)
		return wfail(w, "post: %s", strerror(rc));
	if (wpoll(w, wr_id, aop_wc_opcode(op)))
		return -1;
	*orig = ld64(w->buf.addr);
	return 0;
}

static void *lock_worker(void *arg)
{
	struct worker *w = arg;
	uint64_t id = 1, got, c, deadline;
	struct aop acq, rel;
	int i;

	memset(&acq, 0, sizeof(acq));
	acq.kind = AOP_CS;
	acq.raddr = w->raddr;
	acq.rkey = w->rkey;
	acq.cmp = 0;
	acq.swap = (uint64_t)w->id;
	rel = acq;
	rel.cmp = (uint64_t)w->id;
	rel.swap = 0;
	for (i = 0; i < w->cfg->iters; i++) {
		deadline = ru_now_ms() + 60000;
		for (;;) {	/* acquire */
			if (w_atomic(w, &acq, id++, &got))
				return NULL;
			if (got == 0)
				break;
			if (got == (uint64_t)w->id)
				return wfail(w, "lock already held by us at "
					     "round %d", i), NULL;
			if (got > NQP)
				return wfail(w, "lock word holds 0x%llx",
					     (unsigned long long)got), NULL;
			w->spins++;
			if (ru_now_ms() > deadline)
				return wfail(w, "lock not acquired within 60 s "
					     "(held by %llu)",
					     (unsigned long long)got), NULL;
		}
		/* critical section: Read, +1, Write (not atomic) */
		if (ru_post_send(w->ep, IBV_WR_RDMA_READ, &w->buf, 8, 8, w->ctr,
				 w->rkey, id, IBV_SEND_SIGNALED))
			return wfail(w, "post read: %s", ru_errmsg()), NULL;
		if (wpoll(w, id++, IBV_WC_RDMA_READ))
			return NULL;
		c = ld64(w->buf.addr + 8);
		st64(w->buf.addr + 16, c + 1);
		if (ru_post_send(w->ep, IBV_WR_RDMA_WRITE, &w->buf, 16, 8,
				 w->ctr, w->rkey, id, IBV_SEND_SIGNALED))
			return wfail(w, "post write: %s", ru_errmsg()), NULL;
		if (wpoll(w, id++, IBV_WC_RDMA_WRITE))
			return NULL;
		/* release: must find our own id */
		if (w_atomic(w, &rel, id++, &got))
			return NULL;
		if (got != (uint64_t)w->id)
			return wfail(w, "release at round %d found 0x%llx, not "
				     "our id %d: the lock was broken", i,
				     (unsigned long long)got, w->id), NULL;
		w->vals[i] = c;
	}
	return NULL;
}

/*
 * Connect nc clients (ep[]) to addr0:port, and (when l is given) accept
 * nacc connections on l into srv[] with PD pd. Clients of other processes
 * may be among those accepted.
 */
static int hconnect(struct ru_listener *l, struct ibv_pd *pd, int nacc,
		    struct ru_ep *srv, uint16_t port, int nc, struct ru_ep *cli,
		    int want_qpx)
{
	struct ru_caps ccaps, scaps;
	int i, rc;

	ru_caps_default(&ccaps);
	ccaps.send_ops = want_qpx ? AX_SEND_OPS : 0;
	ru_caps_default(&scaps);
	scaps.shared_pd = pd;
	for (i = 0; i < nc; i++) {
		rc = ru_client_start(&cli[i], ru_addr1(), ru_addr0(), port,
				     &ccaps, RU_TIMEOUT_MS);
		if (rc)
			return rc;
	}
	for (i = 0; i < nacc; i++) {
		rc = ru_accept_start(l, &srv[i], &scaps, 30000);
		if (rc)
			return rc;
	}
	for (i = 0; i < nacc; i++) {
		rc = ru_ep_wait_established(&srv[i], RU_TIMEOUT_MS);
		if (rc)
			return ru_fail(rc, "server %d: %s", i, ru_errmsg());
	}
	for (i = 0; i < nc; i++) {
		rc = ru_client_finish(&cli[i], RU_TIMEOUT_MS);
		if (rc)
			return ru_fail(rc, "client %d: %s", i, ru_errmsg());
	}
	return 0;
}

/* Wait (bounded) until *flag is set; 0 when it was. */
static int wait_flag(volatile int *flag, int ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)ms;

	while (!*flag) {
		if (ru_now_ms() > deadline)
			return -1;
		usleep(1000);
	}
	return 0;
}

/*
 * One side's part of the hammer: responder (when l), QPS_PER_PROC client
 * QPs, workers. first_id: the workers' ids start there (1 or 3).
 * Returns 0, or -1 with the reason in err.
 */
struct hside {
	struct ru_listener l;
	struct ibv_pd *pd;
	struct ibv_mr *mr[2];
	struct ru_ep srv[NQP];
	int nsrv;
	struct ru_ep cli[QPS_PER_PROC];
	struct worker w[QPS_PER_PROC];
};

static void hside_close(struct hside *h)
{
	int i;

	for (i = 0; i < QPS_PER_PROC; i++) {
		ru_buf_free(&h->w[i].buf);
		ru_ep_close(&h->cli[i]);
	}
	for (i = 0; i < h->nsrv; i++)
		ru_ep_close(&h->srv[i]);	/* not h->pd */
	for (i = 0; i < 2; i++)
		if (h->mr[i])
			ibv_dereg_mr(h->mr[i]);
	if (h->pd)
		ibv_dealloc_pd(h->pd);
	ru_listener_close(&h->l);
}

/* Listener, PD and MR(s) on page for a responder side. */
static int hside_responder(struct hside *h, uint8_t *page, int nmr)
{
	int i, rc;

	rc = ru_listen(&h->l, ru_addr0(), 0, 16);
	if (rc)
		return rc;
	h->pd = ibv_alloc_pd(h->l.id->verbs);
	if (!h->pd)
		return ru_fail(errno, "ibv_alloc_pd: %s", strerror(errno));
	for (i = 0; i < nmr; i++) {
		h->mr[i] = ibv_reg_mr(h->pd, page, PAGE, ACC_ATOMIC);
		if (!h->mr[i])
			return ru_fail(errno, "ibv_reg_mr: %s", strerror(errno));
	}
	return 0;
}

static int hside_run(struct hside *h, const struct hcfg *cfg, int first_id,
		     uint64_t raddr, uint64_t ctr, const uint32_t *rkey,
		     uint64_t *vals)
{
	pthread_t th[QPS_PER_PROC];
	int i;

	for (i = 0; i < QPS_PER_PROC; i++) {
		struct worker *w = &h->w[i];

		w->ep = &h->cli[i];
		w->qpx = h->cli[i].qpx;
		w->cfg = cfg;
		w->id = first_id + i;
		w->raddr = raddr;
		w->ctr = ctr;
		/* two MRs: odd ids use the second one */
		w->rkey = rkey[cfg->two_mrs ? (w->id & 1) : 0];
		w->vals = vals + (size_t)(w->id - 1) * cfg->iters;
		if (ru_buf_alloc(&w->buf, h->cli[i].pd, 64, IBV_ACCESS_LOCAL_WRITE))
			return -ENOMEM;
	}
	for (i = 0; i < QPS_PER_PROC; i++)
		if (pthread_create(&th[i], NULL, cfg->mode == HM_LOCK ?
				   lock_worker : fa_worker, &h->w[i]))
			return ru_fail(EAGAIN, "pthread_create");
	for (i = 0; i < QPS_PER_PROC; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < QPS_PER_PROC; i++)
		if (h->w[i].err[0])
			return ru_fail(EIO, "%s", h->w[i].err);
	return 0;
}

#define LOCK_OFF	0	/* lock word in the target page */
#define CTR_OFF		512	/* counter (HM_LOCK) */
#define WORD_OFF	2048	/* FetchAdd word */

/* The child process: QPS_PER_PROC requesters (and maybe a responder). */
static void hammer_child(struct hshared *sh, uint8_t *shpage,
			 const struct hcfg *cfg)
{
	struct hside h;
	uint32_t rkey[2];
	uint64_t raddr;
	uint16_t port;
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	memset(&h, 0, sizeof(h));
	if (wait_flag(&sh->ready, 60000)) {
		snprintf(sh->c_err, sizeof(sh->c_err), "parent never ready");
		goto out;
	}
	if (cfg->two_responders) {
		/* own registration of the shared page, own responder */
		rc = hside_responder(&h, shpage, 1);
		if (rc)
			goto fail;
		sh->port[1] = h.l.port;
		port = h.l.port;
		raddr = (uintptr_t)shpage;
		rkey[0] = rkey[1] = h.mr[0]->rkey;
		rc = hconnect(&h.l, h.pd, QPS_PER_PROC, h.srv, port,
			      QPS_PER_PROC, h.cli, cfg->mode == HM_MFA);
		h.nsrv = QPS_PER_PROC;
	} else {
		port = sh->port[0];
		raddr = sh->raddr;
		rkey[0] = sh->rkey[0];
		rkey[1] = sh->rkey[1];
		rc = hconnect(NULL, NULL, 0, NULL, port, QPS_PER_PROC, h.cli,
			      cfg->mode == HM_MFA);
	}
	if (rc)
		goto fail;
	sh->c_ready = 1;
	if (wait_flag(&sh->go, 60000)) {
		snprintf(sh->c_err, sizeof(sh->c_err), "no go from the parent");
		goto out;
	}
	rc = hside_run(&h, cfg, QPS_PER_PROC + 1,
		       raddr + (cfg->mode == HM_LOCK ? LOCK_OFF : WORD_OFF),
		       raddr + CTR_OFF, rkey, sh->vals);
	if (rc)
		goto fail;
	sh->c_failed = 0;
	sh->c_done = 1;
	wait_flag(&sh->p_done, 120000);
	hside_close(&h);
	_exit(0);
fail:
	snprintf(sh->c_err, sizeof(sh->c_err), "child: %.480s", ru_errmsg());
out:
	sh->c_failed = 1;
	sh->c_done = 1;
	wait_flag(&sh->p_done, 120000);
	hside_close(&h);
	_exit(1);
}

static void hammer(struct __test_metadata *_metadata, const struct hcfg *cfg)
{
	size_t nvals = (size_t)NQP * cfg->iters;
	size_t shsz = sizeof(struct hshared) + nvals * 8;
	uint64_t seed = ru_random_seed(), init = 0, t0;
	struct hshared *sh;
	uint8_t *page, *before;
	struct hside h;
	pid_t pid;
	int rc, i, status = 0, nacc;

	sh = mmap(NULL, shsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		  -1, 0);
	ASSERT_NE(MAP_FAILED, sh);
	page = mmap(NULL, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
		    -1, 0);
	ASSERT_NE(MAP_FAILED, page);
	memset(sh, 0, shsz);
	/* fork before any verbs use: the child has its own everything */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		hammer_child(sh, page, cfg);

	memset(&h, 0, sizeof(h));
	before = malloc(PAGE);
	ASSERT_NE(NULL, before);
	ru_fill(page, PAGE, seed);
	switch (cfg->mode) {
	case HM_FA:	/* the values cross 2^32 */
		init = 0x00000000ffffffffull - (uint64_t)nvals / 2;
		break;
	case HM_MFA:	/* fields near their wrap, the top one too */
		init = 0xfff0fffe7ffc0000ull + (seed & 0x3);
		break;
	case HM_LOCK:
		st64(page + LOCK_OFF, 0);
		init = 0x0123456700000000ull;
		st64(page + CTR_OFF, init);
		break;
	}
	if (cfg->mode != HM_LOCK)
		st64(page + WORD_OFF, init);
	memcpy(before, page, PAGE);

	rc = hside_responder(&h, page, cfg->two_mrs ? 2 : 1);
	if (!rc) {
		sh->port[0] = h.l.port;
		sh->raddr = (uintptr_t)page;
		sh->rkey[0] = h.mr[0]->rkey;
		sh->rkey[1] = h.mr[cfg->two_mrs ? 1 : 0]->rkey;
		sh->ready = 1;
		nacc = cfg->two_responders ? QPS_PER_PROC : NQP;
		rc = hconnect(&h.l, h.pd, nacc, h.srv, h.l.port, QPS_PER_PROC,
			      h.cli, cfg->mode == HM_MFA);
		h.nsrv = nacc;
	}
	if (rc) {
		TH_LOG("setup: %s", ru_errmsg());
		sh->p_done = 1;
		goto out;
	}
	if (wait_flag(&sh->c_ready, 60000) && !sh->c_done) {
		TH_LOG("the child did not connect");
		rc = -1;
		sh->p_done = 1;
		goto out;
	}
	printf("# %d QPs in 2 processes%s%s, %d %s each\n", NQP,
	       cfg->two_mrs ? ", two MRs on one page" : "",
	       cfg->two_responders ? ", each process registers the shared "
				     "page on its own responder" : "",
	       cfg->iters, cfg->mode == HM_LOCK ? "lock rounds" : "FetchAdds");
	t0 = ru_now_ms();
	sh->go = 1;
	rc = hside_run(&h, cfg, 1,
		       (uintptr_t)page + (cfg->mode == HM_LOCK ? LOCK_OFF : WORD_OFF),
		       (uintptr_t)page + CTR_OFF, sh->rkey, sh->vals);
	if (rc)
		TH_LOG("parent: %s", ru_errmsg());
	if (wait_flag(&sh->c_done, 180000))
		TH_LOG("the child did not finish");
	else if (sh->c_failed)
		TH_LOG("%s", sh->c_err);
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0, sh->c_failed);
	EXPECT_EQ(1, sh->c_done);
	printf("# %.1f s\n", (ru_now_ms() - t0) / 1000.0);
	if (!rc && sh->c_done && !sh->c_failed) {
		uint64_t *v = malloc(nvals * 8), fin;
		long bad = -1;
		size_t k;

		ASSERT_NE(NULL, v);
		memcpy(v, sh->vals, nvals * 8);
		if (cfg->mode == HM_LOCK) {
			fin = ld64(page + CTR_OFF);
			printf("# counter 0x%llx -> 0x%llx (want +%zu), lock word "
			       "%llu, spins %d/%d\n", (unsigned long long)init,
			       (unsigned long long)fin, nvals,
			       (unsigned long long)ld64(page + LOCK_OFF),
			       h.w[0].spins, h.w[1].spins);
			EXPECT_EQ(init + nvals, fin);
			EXPECT_EQ(0u, ld64(page + LOCK_OFF));
			st64(before + CTR_OFF, fin);
		} else if (cfg->mode == HM_FA) {
			fin = ld64(page + WORD_OFF);
			printf("# word 0x%llx -> 0x%llx (want +%zu)\n",
			       (unsigned long long)init, (unsigned long long)fin,
			       nvals);
			EXPECT_EQ(init + nvals, fin);
			st64(before + WORD_OFF, init + nvals);
		} else {
			fin = ld64(page + WORD_OFF);
			/* the model applied nvals times: each field + nvals mod 2^16 */
			uint64_t want = init;

			for (k = 0; k < nvals; k++)
				want = model_fetch_add(want, MFA_ADD, MFA_MASK);
			printf("# word 0x%016llx -> 0x%016llx (model 0x%016llx)\n",
			       (unsigned long long)init, (unsigned long long)fin,
			       (unsigned long long)want);
			EXPECT_EQ(want, fin);
			st64(before + WORD_OFF, want);
		}
		/*
		 * Every value returned (read) exactly once: they are a
		 * permutation of the values the word (counter) took.
		 */
		qsort(v, nvals, 8, cmp_u64);
		if (cfg->mode == HM_MFA) {
			uint64_t *want = malloc(nvals * 8), x = init;

			ASSERT_NE(NULL, want);
			for (k = 0; k < nvals; k++) {
				want[k] = x;
				x = model_fetch_add(x, MFA_ADD, MFA_MASK);
			}
			qsort(want, nvals, 8, cmp_u64);
			for (k = 0; k < nvals && bad < 0; k++)
				if (v[k] != want[k])
					bad = (long)k;
			free(want);
		} else {
			for (k = 0; k < nvals && bad < 0; k++)
				if (v[k] != init + k)
					bad = (long)k;
		}
		EXPECT_EQ(-1, bad)
			TH_LOG("returned values are not each value once: sorted "
			       "value %ld is 0x%llx", bad,
			       (unsigned long long)(bad >= 0 ? v[bad] : 0));
		/* and nothing else on the page changed */
		EXPECT_EQ(-1, ru_first_diff(page, before, PAGE));
		free(v);
	}
out:
	sh->p_done = 1;
	for (i = 0; i < 300; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
		usleep(100000);
	}
	if (i == 300) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	hside_close(&h);
	free(before);
	munmap(page, PAGE);
	munmap(sh, shsz);
	ASSERT_EQ(0, rc);
}

static int iters(void)
{
	return (int)ru_env_long("SIWX_ATOMIC_ITERS", 1000);
}

/* Each test forks its second process itself: no setup here. */
FIXTURE(atomicity) {
	int unused;
};

FIXTURE_SETUP(atomicity)
{
}

FIXTURE_TEARDOWN(atomicity)
{
}

TEST_F_TIMEOUT(atomicity, fetch_add, 300)
{
	struct hcfg c = { .mode = HM_FA, .iters = iters() };

	hammer(_metadata, &c);
}

TEST_F_TIMEOUT(atomicity, fetch_add_two_mrs, 300)
{
	struct hcfg c = { .mode = HM_FA, .two_mrs = 1, .iters = iters() };

	hammer(_metadata, &c);
}

TEST_F_TIMEOUT(atomicity, fetch_add_two_responders, 300)
{
	struct hcfg c = { .mode = HM_FA, .two_responders = 1, .iters = iters() };

	hammer(_metadata, &c);
}

TEST_F_TIMEOUT(atomicity, masked_fetch_add_fields, 300)
{
	struct hcfg c = { .mode = HM_MFA, .iters = iters() / 2 };

	ASSERT_TRUE(HAVE_SIWDV) TH_LOG("<infiniband/siwdv.h> missing at build time");
	hammer(_metadata, &c);
}

TEST_F_TIMEOUT(atomicity, cmpswap_lock, 300)
{
	struct hcfg c = { .mode = HM_LOCK,
			  .iters = (int)ru_env_long("SIWX_ATOMIC_LOCK_ITERS", 60) };

	hammer(_metadata, &c);
}

/* ---- responder-side validation --------------------------------------------- */

enum inv_kind {
	INV_MISALIGNED,		/* target not 8-byte aligned */
	INV_BAD_KEY,		/* right index, wrong key byte */
	INV_BAD_INDEX,		/* STag naming no MR */
	INV_FOREIGN_PD,		/* MR of another PD on the same device */
	INV_OOB_STRADDLE,	/* last 8 bytes straddle the end of the MR */
	INV_OOB_AFTER,		/* first word after the MR */
	INV_OOB_BEFORE,		/* word before the MR */
	INV_OOB_WRAP,		/* TO + 8 wraps past 2^64 */
	INV_NO_REMOTE_ATOMIC,	/* MR without IBV_ACCESS_REMOTE_ATOMIC */
	INV_DEREGISTERED,	/* MR deregistered */
};

/* 3 pages: page 0 a good MR, page 1 the MR under test, page 2 foreign PD */
#define AREA		(3 * PAGE)
#define MR_OFF		(PAGE + 128)
#define MR_LEN		1020	/* ends 4 bytes into a word */
#define OK_OFF		256	/* the valid target on page 0 */
#define INV_WAIT_MS	10000

/*
 * One scenario on a fresh connection: the bad atomic (wr 1), a valid
 * FetchAdd behind it (wr 2) and a Send (wr 3), all signaled. What
 * happened is collected here; the tests assert parts of it.
 */
struct inv_ctx {
	struct ru_pair c;
	uint8_t *area, *snap;
	struct ibv_mr *ok_mr, *mr, *mr2;
	struct ibv_pd *pd2;
	struct ru_buf res, rx;
	uint64_t raddr;
	enum ibv_wc_status want;
	struct ibv_wc wc[8];
	int posted;		/* WRs posted (separate posts may fail) */
	int ncomp;		/* completions seen within INV_WAIT_MS */
	long mem_diff;		/* first changed byte of the area, or -1 */
	int res_written;	/* first changed byte of the results, or -1 */
	int cli_err;		/* client QP reached ERR */
	int srv_err;		/* server QP reached ERR */
	int rx_rc;		/* server receive: 1 completed, 0 none */
	struct ibv_wc rx_wc;
};

static int inv_setup(struct inv_ctx *x, enum inv_kind kind)
{
	void *p;
	int rc;

	memset(x, 0, sizeof(*x));
	rc = aconn_open(&x->c, 0, NULL, NULL);
	if (rc)
		return rc;
	if (posix_memalign(&p, PAGE, AREA))
		return -ENOMEM;
	x->area = p;
	x->snap = malloc(AREA);
	if (!x->snap)
		return -ENOMEM;
	ru_fill(x->area, AREA, ru_random_seed());
	x->ok_mr = ibv_reg_mr(x->c.srv.pd, x->area, PAGE, ACC_ATOMIC);
	x->mr = ibv_reg_mr(x->c.srv.pd, x->area + MR_OFF, MR_LEN,
			   kind == INV_NO_REMOTE_ATOMIC ? ACC_NOATOMIC : ACC_ATOMIC);
	x->pd2 = ibv_alloc_pd(x->c.srv.id->verbs);
	if (!x->ok_mr || !x->mr || !x->pd2)
		return ru_fail(errno, "MR/PD: %s", strerror(errno));
	x->mr2 = ibv_reg_mr(x->pd2, x->area + 2 * PAGE, PAGE, ACC_ATOMIC);
	if (!x->mr2)
		return ru_fail(errno, "MR in PD 2: %s", strerror(errno));
	if (ru_buf_alloc(&x->res, x->c.cli.pd, 256, IBV_ACCESS_LOCAL_WRITE) ||
	    ru_buf_alloc(&x->rx, x->c.srv.pd, 64, IBV_ACCESS_LOCAL_WRITE))
		return -ENOMEM;
	return 0;
}

static void inv_teardown(struct inv_ctx *x)
{
	if (x->mr)
		ibv_dereg_mr(x->mr);
	if (x->ok_mr)
		ibv_dereg_mr(x->ok_mr);
	if (x->mr2)
		ibv_dereg_mr(x->mr2);
	if (x->pd2)
		ibv_dealloc_pd(x->pd2);
	ru_buf_free(&x->res);
	ru_buf_free(&x->rx);
	ru_pair_close(&x->c);
	free(x->area);
	free(x->snap);
}

static int inv_run(struct inv_ctx *x, enum inv_kind kind, enum aop_kind opk,
		   int separate)
{
	uint64_t base = (uintptr_t)(x->area + MR_OFF);
	uint32_t rkey = x->mr->rkey;
	struct aop op, ok;
	int rc, i;

	x->raddr = base + 64;
	x->want = IBV_WC_REM_ACCESS_ERR;
	switch (kind) {
	case INV_MISALIGNED:
		x->raddr = base + 64 + 4;
		x->want = IBV_WC_REM_INV_REQ_ERR;
		break;
	case INV_BAD_KEY:
		rkey ^= 0x5a;
		break;
	case INV_BAD_INDEX:
		rkey ^= 0x00abcd00;
		break;
	case INV_FOREIGN_PD:
		rkey = x->mr2->rkey;
		x->raddr = (uintptr_t)(x->area + 2 * PAGE + 64);
		break;
	case INV_OOB_STRADDLE:
		x->raddr = base + (MR_LEN & ~7);	/* 4 bytes in, 4 out */
		break;
	case INV_OOB_AFTER:
		x->raddr = base + ((MR_LEN + 7) & ~7);
		break;
	case INV_OOB_BEFORE:
		x->raddr = base - 8;
		break;
	case INV_OOB_WRAP:
		x->raddr = UINT64_MAX - 7;
		break;
	case INV_NO_REMOTE_ATOMIC:
		break;
	case INV_DEREGISTERED:
		if (ibv_dereg_mr(x->mr))
			return ru_fail(errno, "ibv_dereg_mr");
		x->mr = NULL;
		break;
	}
	memset(&op, 0, sizeof(op));
	op.kind = opk;
	op.raddr = x->raddr;
	op.rkey = rkey;
	op.add = 0x0101010101010101ull;
	/* CmpSwap: compare with what is there, so that a swap would happen */
	op.cmp = ld64(x->area + (x->raddr - (uintptr_t)x->area) % (AREA - 8));
	op.swap = 0x5a5a5a5a5a5a5a5aull;
	memset(&ok, 0, sizeof(ok));
	ok.kind = AOP_FA;
	ok.add = 1;
	ok.raddr = (uintptr_t)(x->area + OK_OFF);
	ok.rkey = x->ok_mr->rkey;
	printf("# %s at 0x%llx rkey 0x%08x (MR 0x%llx+%d), expecting %s\n",
	       opk == AOP_FA ? "FetchAdd" : "CmpSwap",
	       (unsigned long long)x->raddr, rkey, (unsigned long long)base,
	       MR_LEN, ibv_wc_status_str(x->want));

	memcpy(x->snap, x->area, AREA);
	memset(x->res.addr, 0xc3, 256);
	rc = ru_post_recv(&x->c.srv, &x->rx, 0, 64, 77);
	if (rc)
		return rc;
	/*
	 * Normally one ibv_post_send() with the three WRs chained: the
	 * Terminate can arrive before a later post, and posting to a QP in
	 * error fails at the doorbell. With separate, one post each; a
	 * post that fails (the QP already in error) ends the posting.
	 */
	{
		struct ibv_send_wr wr[3], *bad = NULL;
		struct ibv_sge sge[3];
		const struct aop *ops[2] = { &op, &ok };

		memset(wr, 0, sizeof(wr));
		for (i = 0; i < 3; i++) {
			sge[i].addr = (uintptr_t)x->res.addr + 64 * i;
			sge[i].length = 8;
			sge[i].lkey = x->res.mr->lkey;
			wr[i].wr_id = i + 1;
			wr[i].sg_list = &sge[i];
			wr[i].num_sge = 1;
			wr[i].send_flags = IBV_SEND_SIGNALED;
			wr[i].next = i < 2 && !separate ? &wr[i + 1] : NULL;
			if (i == 2) {
				wr[i].opcode = IBV_WR_SEND;
				continue;
			}
			wr[i].opcode = ops[i]->kind == AOP_FA ?
				       IBV_WR_ATOMIC_FETCH_AND_ADD :
				       IBV_WR_ATOMIC_CMP_AND_SWP;
			wr[i].wr.atomic.remote_addr = ops[i]->raddr;
			wr[i].wr.atomic.rkey = ops[i]->rkey;
			wr[i].wr.atomic.compare_add = ops[i]->kind == AOP_FA ?
						      ops[i]->add : ops[i]->cmp;
			wr[i].wr.atomic.swap = ops[i]->swap;
		}
		x->posted = 0;
		for (i = 0; i < 3; i++) {
			rc = ibv_post_send(x->c.cli.qp, &wr[i], &bad);
			if (rc && (!separate || i == 0))
				return ru_fail(rc, "ibv_post_send: %d (%s)",
					       rc, strerror(rc < 0 ? -rc : rc));
			if (rc) {
				printf("# post of wr %d: %d (%s): the QP is "
				       "in error already\n", i + 1, rc,
				       strerror(rc < 0 ? -rc : rc));
				break;
			}
			x->posted = separate ? i + 1 : 3;
			if (!separate)
				break;
		}
	}

	/* everything that completes within the bound (and duplicates) */
	x->ncomp = ru_poll_n(x->c.cli.scq, x->wc, x->posted, INV_WAIT_MS);
	if (x->ncomp < 0)
		return x->ncomp;
	if (x->ncomp == x->posted)	/* duplicates, strays */
		while (x->ncomp < 8 &&
		       ru_poll(x->c.cli.scq, &x->wc[x->ncomp], 500) == 1)
			x->ncomp++;
	for (i = 0; i < x->ncomp; i++)
		printf("# completion %d: wr %llu %s (%d), opcode %d\n", i + 1,
		       (unsigned long long)x->wc[i].wr_id,
		       ibv_wc_status_str(x->wc[i].status), x->wc[i].status,
		       x->wc[i].opcode);
	x->mem_diff = ru_first_diff(x->area, x->snap, AREA);
	x->res_written = -1;
	for (i = 0; i < 128; i++)
		if (x->res.addr[i] != 0xc3) {
			x->res_written = i;
			break;
		}
	x->cli_err = !ru_wait_qp_state(x->c.cli.qp, IBV_QPS_ERR, 5000);
	printf("# client QP %s\n", ru_qp_state_str(ru_qp_state(x->c.cli.qp)));
	return 0;
}

/* The responder's side after the scenario (bounded waits). */
static void inv_observe_responder(struct inv_ctx *x)
{
	x->srv_err = !ru_wait_qp_state(x->c.srv.qp, IBV_QPS_ERR, 5000);
	x->rx_rc = ru_poll(x->c.srv.rcq, &x->rx_wc, 1000);
	printf("# server QP %s, server receive: %s\n",
	       ru_qp_state_str(ru_qp_state(x->c.srv.qp)),
	       x->rx_rc == 1 ? ibv_wc_status_str(x->rx_wc.status) : "none");
}

/* The completion of wr id, or NULL; *count: how many it had. */
static struct ibv_wc *inv_wc(struct inv_ctx *x, uint64_t id, int *count)
{
	struct ibv_wc *w = NULL;
	int i;

	*count = 0;
	for (i = 0; i < x->ncomp; i++)
		if (x->wc[i].wr_id == id) {
			if (!w)
				w = &x->wc[i];
			(*count)++;
		}
	return w;
}

FIXTURE(invalid) {
	struct inv_ctx x;
};

FIXTURE_VARIANT(invalid) {
	enum inv_kind kind;
	enum aop_kind op;
};

#define INV(name, k) \
	FIXTURE_VARIANT_ADD(invalid, fa_##name) { .kind = k, .op = AOP_FA }; \
	FIXTURE_VARIANT_ADD(invalid, cs_##name) { .kind = k, .op = AOP_CS }

INV(misaligned, INV_MISALIGNED);
INV(bad_key, INV_BAD_KEY);
INV(bad_index, INV_BAD_INDEX);
INV(foreign_pd, INV_FOREIGN_PD);
INV(oob_straddle_end, INV_OOB_STRADDLE);
INV(oob_after_end, INV_OOB_AFTER);
INV(oob_before_start, INV_OOB_BEFORE);
INV(oob_wrap, INV_OOB_WRAP);
INV(no_remote_atomic, INV_NO_REMOTE_ATOMIC);
INV(deregistered, INV_DEREGISTERED);

FIXTURE_SETUP(invalid)
{
	RU_ASSERT_OK(inv_setup(&self->x, variant->kind));
}

FIXTURE_TEARDOWN(invalid)
{
	inv_teardown(&self->x);
}

/*
 * The responder refuses the bad atomic without touching its memory (the
 * whole 3-page area is compared byte for byte) and terminates: the bad
 * atomic completes with the documented status (protection errors
 * IBV_WC_REM_ACCESS_ERR, misalignment IBV_WC_REM_INV_REQ_ERR) within the
 * bound, no result is written, the requester's QP goes to error.
 */
TEST_F_TIMEOUT(invalid, refused, 60)
{
	struct inv_ctx *x = &self->x;
	struct ibv_wc *w;
	int n;

	RU_ASSERT_OK(inv_run(x, variant->kind, variant->op, 0));
	if (x->mem_diff >= 0)
		TH_LOG("responder memory changed at area+%ld (target area+%lld)",
		       x->mem_diff,
		       (long long)(x->raddr - (uintptr_t)x->area));
	EXPECT_EQ(-1, x->mem_diff);
	w = inv_wc(x, 1, &n);
	ASSERT_NE(NULL, w) TH_LOG("the bad atomic did not complete within %d ms",
				  INV_WAIT_MS);
	EXPECT_EQ((int)x->want, (int)w->status)
		TH_LOG("bad atomic: %s, want %s", ibv_wc_status_str(w->status),
		       ibv_wc_status_str(x->want));
	EXPECT_EQ(-1, x->res_written)
		TH_LOG("a result was written at res+%d", x->res_written);
	EXPECT_EQ(1, x->cli_err) TH_LOG("client QP not in ERR");
}

/*
 * What follows the bad atomic on the stream: nothing behind it is
 * executed or delivered. Every WR completes exactly once, in posting
 * order; the valid FetchAdd and the Send behind the bad atomic are
 * flushed (IBV_WC_WR_FLUSH_ERR); the Send never reaches the responder's
 * receive queue; the responder, having terminated the stream, has its
 * QP in error too. One variant per detection point is enough: target
 * checks (misaligned, bounds, access) and STag lookup.
 */
FIXTURE(invalid_stream) {
	struct inv_ctx x;
};

FIXTURE_VARIANT(invalid_stream) {
	enum inv_kind kind;
	enum aop_kind op;
	int separate;	/* one ibv_post_send() per WR */
};

FIXTURE_VARIANT_ADD(invalid_stream, fa_misaligned) {
	.kind = INV_MISALIGNED, .op = AOP_FA };
FIXTURE_VARIANT_ADD(invalid_stream, cs_bad_key) {
	.kind = INV_BAD_KEY, .op = AOP_CS };
FIXTURE_VARIANT_ADD(invalid_stream, cs_no_remote_atomic) {
	.kind = INV_NO_REMOTE_ATOMIC, .op = AOP_CS };
FIXTURE_VARIANT_ADD(invalid_stream, fa_oob_straddle_end_separate_posts) {
	.kind = INV_OOB_STRADDLE, .op = AOP_FA, .separate = 1 };
FIXTURE_VARIANT_ADD(invalid_stream, fa_bad_key_separate_posts) {
	.kind = INV_BAD_KEY, .op = AOP_FA, .separate = 1 };

FIXTURE_SETUP(invalid_stream)
{
	RU_ASSERT_OK(inv_setup(&self->x, variant->kind));
}

FIXTURE_TEARDOWN(invalid_stream)
{
	inv_teardown(&self->x);
}

TEST_F_TIMEOUT(invalid_stream, ends_stream, 60)
{
	struct inv_ctx *x = &self->x;
	struct ibv_wc *w;
	uint64_t id;
	int n, i;

	RU_ASSERT_OK(inv_run(x, variant->kind, variant->op, variant->separate));
	inv_observe_responder(x);
	for (id = 1; id <= 3; id++) {
		w = inv_wc(x, id, &n);
		/* a WR whose post failed must not complete */
		EXPECT_EQ(id <= (uint64_t)x->posted ? 1 : 0, n)
			TH_LOG("wr %llu (%s) completed %d times",
			       (unsigned long long)id,
			       id <= (uint64_t)x->posted ? "posted" :
			       "post failed", n);
		/*
		 * wr 2, the atomic behind the bad one, is flushed. wr 3 is
		 * a Send: siw completes a Send once TCP has it, which may
		 * be before the Terminate for wr 1 arrives (as upstream siw
		 * does behind RDMA Reads; Documentation/rfc7306.md,
		 * "Completion order at the requester"), so it may also
		 * have succeeded -- but the responder must not deliver it
		 * (checked below).
		 */
		if (w && id == 2)
			EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)w->status)
				TH_LOG("wr %llu behind the bad atomic: %s",
				       (unsigned long long)id,
				       ibv_wc_status_str(w->status));
		if (w && id == 3 && w->status != IBV_WC_SUCCESS)
			EXPECT_EQ((int)IBV_WC_WR_FLUSH_ERR, (int)w->status)
				TH_LOG("the Send behind the bad atomic: %s",
				       ibv_wc_status_str(w->status));
	}
	{
		/* the atomics (wr 1, 2) complete in the order posted */
		char seq[64] = "";
		int in_order = 1, len = 0;
		uint64_t last = 0;

		for (i = 0; i < x->ncomp; i++) {
			len += snprintf(seq + len, sizeof(seq) - len, " %llu",
					(unsigned long long)x->wc[i].wr_id);
			if (x->wc[i].wr_id > 2)
				continue;
			if (x->wc[i].wr_id != last + 1)
				in_order = 0;
			last = x->wc[i].wr_id;
		}
		EXPECT_EQ(1, in_order)
			TH_LOG("atomic completions in the order of wr%s", seq);
	}
	EXPECT_EQ(x->posted, x->ncomp)
		TH_LOG("%d completions for %d WRs", x->ncomp, x->posted);
	if (x->rx_rc == 1)
		EXPECT_NE((int)IBV_WC_SUCCESS, (int)x->rx_wc.status)
			TH_LOG("the Send behind the bad atomic was delivered");
	EXPECT_EQ(1, x->srv_err)
		TH_LOG("server QP still %s 5 s after it sent the Terminate",
		       ru_qp_state_str(ru_qp_state(x->c.srv.qp)));
	EXPECT_EQ(-1, x->mem_diff);
}

/* ---- malformed work requests at post time --------------------------------- */

/*
 * The result buffer of an atomic is exactly one 8-byte SGE (siw-abi.h:
 * num_sge 1). libsiw refuses anything else at post time with EINVAL:
 * ibv_post_send() returns it (sign ignored: libsiw returns negative
 * errnos) with bad_wr pointing at the WR, ibv_wr_complete() returns it
 * for ibv_wr_*() and siwdv operations. Nothing completes for it, the
 * target is untouched and the QP keeps working.
 */
FIXTURE(post_error) {
	struct ru_pair c;
	struct ru_buf tgt, res;
};

FIXTURE_VARIANT(post_error) {
	enum aop_api api;
	enum aop_kind op;
	int num_sge;
	uint32_t len;
};

#define PE(name, a, o, n, l) \
	FIXTURE_VARIANT_ADD(post_error, name) { .api = a, .op = o, \
						.num_sge = n, .len = l }

PE(fa_num_sge_0, API_POST, AOP_FA, 0, 8);
PE(fa_num_sge_2, API_POST, AOP_FA, 2, 8);
PE(fa_len_0, API_POST, AOP_FA, 1, 0);
PE(fa_len_4, API_POST, AOP_FA, 1, 4);
PE(fa_len_16, API_POST, AOP_FA, 1, 16);
PE(cs_num_sge_0, API_POST, AOP_CS, 0, 8);
PE(cs_num_sge_2, API_POST, AOP_CS, 2, 8);
PE(cs_len_0, API_POST, AOP_CS, 1, 0);
PE(cs_len_4, API_POST, AOP_CS, 1, 4);
PE(cs_len_16, API_POST, AOP_CS, 1, 16);
PE(wr_fa_no_sge, API_WR, AOP_FA, 0, 8);
PE(wr_fa_num_sge_2, API_WR, AOP_FA, 2, 8);
PE(wr_fa_len_4, API_WR, AOP_FA, 1, 4);
PE(wr_cs_len_16, API_WR, AOP_CS, 1, 16);
PE(dv_mfa_len_0, API_DV, AOP_FA, 1, 0);
PE(dv_mcs_num_sge_2, API_DV, AOP_CS, 2, 8);

FIXTURE_SETUP(post_error)
{
	if (variant->api == API_DV)
		ASSERT_TRUE(HAVE_SIWDV)
			TH_LOG("<infiniband/siwdv.h> missing at build time");
	RU_ASSERT_OK(aconn_open(&self->c, variant->api != API_POST, NULL,
				NULL));
	RU_ASSERT_OK(ru_buf_alloc(&self->tgt, self->c.srv.pd, 64, ACC_ATOMIC));
	RU_ASSERT_OK(ru_buf_alloc(&self->res, self->c.cli.pd, 64,
				  IBV_ACCESS_LOCAL_WRITE));
}

FIXTURE_TEARDOWN(post_error)
{
	ru_buf_free(&self->tgt);
	ru_buf_free(&self->res);
	ru_pair_close(&self->c);
}

TEST_F(post_error, refused)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge[2];
	struct ibv_wc wc;
	struct aop op;
	int rc;

	st64(self->tgt.addr, 0x1000);
	memset(self->res.addr, 0xc3, 64);
	sge[0].addr = (uintptr_t)self->res.addr;
	sge[0].length = variant->len;
	sge[0].lkey = self->res.mr->lkey;
	sge[1] = sge[0];
	sge[1].addr += 32;
	memset(&op, 0, sizeof(op));
	op.kind = variant->op;
	op.masked = variant->api == API_DV;
	op.raddr = (uintptr_t)self->tgt.addr;
	op.rkey = self->tgt.mr->rkey;
	op.add = 1;
	op.cmp = 0x1000;
	op.cmask = ONES;
	op.swap = 0x2000;
	op.smask = ONES;
	if (variant->api == API_POST) {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 1;
		wr.sg_list = variant->num_sge ? sge : NULL;
		wr.num_sge = variant->num_sge;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.opcode = variant->op == AOP_FA ? IBV_WR_ATOMIC_FETCH_AND_ADD :
						   IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = op.raddr;
		wr.wr.atomic.rkey = op.rkey;
		wr.wr.atomic.compare_add = variant->op == AOP_FA ? op.add : op.cmp;
		wr.wr.atomic.swap = op.swap;
		rc = ibv_post_send(self->c.cli.qp, &wr, &bad);
		EXPECT_EQ(&wr, bad);
	} else {
		struct ibv_qp_ex *q = self->c.cli.qpx;

		ibv_wr_start(q);
		q->wr_id = 1;
		q->wr_flags = IBV_SEND_SIGNALED;
		if (variant->api == API_WR && variant->op == AOP_FA)
			ibv_wr_atomic_fetch_add(q, op.rkey, op.raddr, op.add);
		else if (variant->api == API_WR)
			ibv_wr_atomic_cmp_swp(q, op.rkey, op.raddr, op.cmp,
					      op.swap);
		else
			ASSERT_EQ(0, dv_post_masked(q, &op));
		if (variant->num_sge == 1)
			ibv_wr_set_sge(q, sge[0].lkey, sge[0].addr, sge[0].length);
		else if (variant->num_sge)
			ibv_wr_set_sge_list(q, variant->num_sge, sge);
		rc = ibv_wr_complete(q);
	}
	printf("# %s: %s with num_sge %d, length %u: %d (%s)\n",
	       api_name(variant->api), variant->op == AOP_FA ? "FetchAdd" :
	       "CmpSwap", variant->num_sge, variant->len, rc,
	       strerror(rc < 0 ? -rc : rc));
	EXPECT_EQ(EINVAL, rc < 0 ? -rc : rc);
	rc = ru_poll(self->c.cli.scq, &wc, 1000);
	if (rc == 1)
		TH_LOG("completion for the refused WR: wr %llu %s",
		       (unsigned long long)wc.wr_id, ibv_wc_status_str(wc.status));
	EXPECT_EQ(0, rc);
	EXPECT_EQ(0x1000u, ld64(self->tgt.addr));
	for (rc = 0; rc < 64; rc++)
		if (self->res.addr[rc] != 0xc3)
			break;
	EXPECT_EQ(64, rc) TH_LOG("result buffer written at byte %d", rc);
	/* the QP still works, through the same API */
	op.kind = AOP_FA;
	op.add = 5;
	op.fmask = 0;
	rc = post_atomic(self->c.cli.qp, self->c.cli.qpx, variant->api, &op,
			 (uintptr_t)self->res.addr + 40, self->res.mr->lkey, 2,
			 IBV_SEND_SIGNALED);
	ASSERT_EQ(0, rc) TH_LOG("valid post after: %s", strerror(rc));
	RU_ASSERT_WC_OK(self->c.cli.scq, 2, &wc);
	EXPECT_EQ(0x1000u, ld64(self->res.addr + 40));
	EXPECT_EQ(0x1005u, ld64(self->tgt.addr));
	EXPECT_EQ(IBV_QPS_RTS, ru_qp_state(self->c.cli.qp));
}

TEST_HARNESS_MAIN
