/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * atomic_common.h - shared by the RFC 7306 atomic test programs (atomic,
 * atomic_peer, atomic_pair): the reference model of the operations, the
 * posting of atomic work requests through the three user APIs, and
 * connection helpers that rdma_util lacks (a QP created with
 * ibv_qp_ex send operations, server QPs sharing one PD).
 *
 * Everything is static: each program includes this header once.
 *
 * Reference model (RFC 7306 section 5.2, the siw ABI in siw-abi.h):
 *   CmpSwap:  if ((mem & cmask) == (cmp & cmask))
 *                     mem = (mem & ~smask) | (swap & smask);
 *   FetchAdd: mem = mem + add, where a set bit i of the boundary mask m
 *             stops the carry out of bit i (field boundary).
 *   Both return the original value. The unmasked opcodes are the masked
 *   ones with cmask = smask = ~0 and m = 0.
 * The 64-bit target is a native (host order) integer in the responder's
 * memory, and the original value lands in host order in the requester's
 * 8-byte result buffer, as with every other verbs provider.
 *
 * Masked operations go through the siw direct-verbs header
 * <infiniband/siwdv.h>. When it is not available at build time,
 * HAVE_SIWDV is 0 and every masked post fails with ENOSYS, so that the
 * masked tests fail instead of silently passing.
 */
#ifndef SIWX_ATOMIC_COMMON_H
#define SIWX_ATOMIC_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "rdma_util.h"

/* MR access for atomic targets (REMOTE_ATOMIC needs LOCAL_WRITE) */
#define ACC_ATOMIC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define ACC_NOATOMIC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ)

/* ---- operands ------------------------------------------------------------ */

/* A 64-bit target or result: a native (host order) integer in memory. */
static inline uint64_t ld64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline void st64(void *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

/* qsort() order of returned values */
static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* ---- reference model ----------------------------------------------------- */

/* FetchAdd, bit by bit: a set bit i of m drops the carry out of bit i. */
static inline uint64_t model_fetch_add(uint64_t mem, uint64_t add, uint64_t m)
{
	uint64_t r = 0;
	unsigned int c = 0, i;

	for (i = 0; i < 64; i++) {
		unsigned int a = (mem >> i) & 1, b = (add >> i) & 1;
		unsigned int co = (a & b) | (a & c) | (b & c);

		r |= (uint64_t)(a ^ b ^ c) << i;
		c = ((m >> i) & 1) ? 0 : co;
	}
	return r;
}

static inline uint64_t model_cmp_swap(uint64_t mem, uint64_t cmp, uint64_t cmask,
				      uint64_t swap, uint64_t smask)
{
	if ((mem & cmask) == (cmp & cmask))
		return (mem & ~smask) | (swap & smask);
	return mem;
}

enum aop_kind { AOP_FA, AOP_CS };

/* How an atomic is posted. */
enum aop_api {
	API_POST,	/* ibv_post_send(), unmasked */
	API_WR,		/* ibv_wr_atomic_*() on an ibv_qp_ex, unmasked */
	API_DV,		/* siwdv_wr_masked_atomic_*() on an ibv_qp_ex */
};

static inline const char *api_name(enum aop_api a)
{
	return a == API_POST ? "ibv_post_send" :
	       a == API_WR ? "ibv_wr_*" : "siwdv masked";
}

struct aop {
	enum aop_kind kind;
	int masked;		/* posted with a masked opcode (API_DV) */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t add, fmask;	/* FetchAdd: Add Data, boundary mask */
	uint64_t cmp, cmask;	/* CmpSwap: Compare Data, Compare Mask */
	uint64_t swap, smask;	/* CmpSwap: Swap Data, Swap Mask */
};

/* The new memory value after op on mem. */
static inline uint64_t aop_apply(const struct aop *op, uint64_t mem)
{
	if (op->kind == AOP_FA)
		return model_fetch_add(mem, op->add, op->masked ? op->fmask : 0);
	return model_cmp_swap(mem, op->cmp, op->masked ? op->cmask : ~0ull,
			      op->swap, op->masked ? op->smask : ~0ull);
}

static inline void aop_str(const struct aop *op, char *buf, size_t n)
{
	if (op->kind == AOP_FA)
		snprintf(buf, n, "%sFetchAdd add 0x%016llx%s%016llx",
			 op->masked ? "masked " : "",
			 (unsigned long long)op->add,
			 op->masked ? " boundary 0x" : "",
			 op->masked ? (unsigned long long)op->fmask : 0ull);
	else
		snprintf(buf, n, "%sCmpSwap cmp 0x%016llx/0x%016llx swap 0x%016llx/0x%016llx",
			 op->masked ? "masked " : "",
			 (unsigned long long)op->cmp,
			 (unsigned long long)(op->masked ? op->cmask : ~0ull),
			 (unsigned long long)op->swap,
			 (unsigned long long)(op->masked ? op->smask : ~0ull));
}

static inline enum ibv_wc_opcode aop_wc_opcode(const struct aop *op)
{
	/* libibverbs has no masked completion opcodes */
	return op->kind == AOP_FA ? IBV_WC_FETCH_ADD : IBV_WC_COMP_SWAP;
}

/* ---- posting -------------------------------------------------------------- */

/*
 * The masked operations of <infiniband/siwdv.h>. Kept in one place: the
 * only code that depends on the direct-verbs prototypes.
 */
static inline int dv_post_masked(struct ibv_qp_ex *qpx, const struct aop *op)
{
#if HAVE_SIWDV
	if (op->kind == AOP_FA)
		siwdv_wr_masked_atomic_fetch_add(qpx, op->rkey, op->raddr,
						 op->add, op->fmask);
	else
		siwdv_wr_masked_atomic_cmp_swp(qpx, op->rkey, op->raddr,
					       op->cmp, op->cmask, op->swap,
					       op->smask);
	return 0;
#else
	(void)qpx;
	(void)op;
	return ENOSYS;
#endif
}

/*
 * Post one atomic with the result buffer (laddr, 8 bytes, lkey). Returns 0
 * or a positive errno (whatever sign the provider used).
 */
static inline int post_atomic(struct ibv_qp *qp, struct ibv_qp_ex *qpx,
			      enum aop_api api, const struct aop *op, uint64_t laddr,
			      uint32_t lkey, uint64_t wr_id, unsigned int flags)
{
	int rc;

	if (api == API_POST) {
		struct ibv_send_wr wr, *bad = NULL;
		struct ibv_sge sge = { .addr = laddr, .length = 8,
				       .lkey = lkey };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = wr_id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.send_flags = flags;
		wr.opcode = op->kind == AOP_FA ? IBV_WR_ATOMIC_FETCH_AND_ADD :
						 IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = op->raddr;
		wr.wr.atomic.rkey = op->rkey;
		wr.wr.atomic.compare_add = op->kind == AOP_FA ? op->add : op->cmp;
		wr.wr.atomic.swap = op->swap;
		rc = ibv_post_send(qp, &wr, &bad);
		return rc < 0 ? -rc : rc;
	}
	if (!qpx)
		return EOPNOTSUPP;
	ibv_wr_start(qpx);
	qpx->wr_id = wr_id;
	qpx->wr_flags = flags;
	if (api == API_WR) {
		if (op->kind == AOP_FA)
			ibv_wr_atomic_fetch_add(qpx, op->rkey, op->raddr,
						op->add);
		else
			ibv_wr_atomic_cmp_swp(qpx, op->rkey, op->raddr, op->cmp,
					      op->swap);
	} else {
		rc = dv_post_masked(qpx, op);
		if (rc) {
			ibv_wr_abort(qpx);
			return rc;
		}
	}
	ibv_wr_set_sge(qpx, lkey, laddr, 8);
	rc = ibv_wr_complete(qpx);
	return rc < 0 ? -rc : rc;
}

/* ru_caps.send_ops of the QPs that post through ibv_qp_ex */
#define AX_SEND_OPS (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		\
		     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |		\
		     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE |	\
		     IBV_QP_EX_WITH_SEND)

#endif /* SIWX_ATOMIC_COMMON_H */
