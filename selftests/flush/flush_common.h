/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * flush_common.h - shared by the RDMA Flush / Atomic Write test programs
 * (flush, flush_pair): the work requests through ibv_qp_ex, one batch per
 * ibv_wr_start()/ibv_wr_complete(), and the model of their effect on the
 * target memory (Documentation/flush.md):
 *
 *   Write        the bytes, placed when they arrive (stream order)
 *   Flush        nothing changes; when it completes, every earlier Write
 *                of the stream is visible at the target
 *   Atomic Write the 8 bytes, as they are in the requester's memory,
 *                at an 8-aligned target, after every earlier Flush
 *   Read, FetchAdd, CmpSwap: as RFC 5040 / RFC 7306
 *
 * Requests on the Read queue (Read, atomics, Flush, Atomic Write) execute
 * in their order and complete in it; a Write after such a request to the
 * same bytes is not ordered behind it, so no test posts one.
 *
 * Needs rdma-core 56 (ibv_wr_flush()); each program checks HAVE_FLUSH_API
 * (our rdma-core has <infiniband/siwdv.h>, Debian's stock 44 neither).
 */
#ifndef SIWX_FLUSH_COMMON_H
#define SIWX_FLUSH_COMMON_H

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <infiniband/verbs.h>

#include "rdma_util.h"

#define HAVE_FLUSH_API HAVE_SIWDV

#if HAVE_FLUSH_API

/*
 * device_cap_flags_ex bits of ibv_query_device_ex(): libibverbs passes the
 * kernel's IB_UVERBS_DEVICE_* through (rdma-core 56
 * kernel-headers/rdma/ib_user_verbs.h), but installs no name for them.
 */
#define DEV_FLUSH_GLOBAL	(1ULL << 38)
#define DEV_FLUSH_PERSISTENT	(1ULL << 39)
#define DEV_ATOMIC_WRITE	(1ULL << 40)

/* what a QP of these tests posts through ibv_qp_ex */
#define FL_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |	\
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |	\
		     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |			\
		     IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE)

/* a target: everything remote but PERSISTENT (needs pmem) */
#define ACC_TARGET (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |	\
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |	\
		    IBV_ACCESS_FLUSH_GLOBAL)

enum fop_kind { F_WRITE, F_READ, F_FLUSH, F_AW, F_FA, F_CS };

struct fop {
	enum fop_kind kind;
	uint64_t wr_id;
	unsigned int flags;		/* IBV_SEND_SIGNALED, ... */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t laddr;			/* Write source, Read/atomic result */
	uint32_t lkey;
	uint32_t len;			/* Write, Read; Flush: the range */
	uint8_t type, level;		/* Flush */
	uint64_t a, b;			/* AW value; FA add; CS compare, swap */
	/* filled by fop_expect(): */
	uint64_t orig;			/* Read (8 bytes)/FA/CS: the result */
};

static inline uint64_t fl_ld64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static inline void fl_st64(void *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static inline const char *fop_name(enum fop_kind k)
{
	static const char *const n[] = { "Write", "Read", "Flush",
					 "AtomicWrite", "FetchAdd", "CmpSwap" };

	return n[k];
}

static inline enum ibv_wc_opcode fop_wc_opcode(enum fop_kind k)
{
	switch (k) {
	case F_WRITE: return IBV_WC_RDMA_WRITE;
	case F_READ: return IBV_WC_RDMA_READ;
	case F_FLUSH: return IBV_WC_FLUSH;
	case F_AW: return IBV_WC_ATOMIC_WRITE;
	case F_FA: return IBV_WC_FETCH_ADD;
	case F_CS: return IBV_WC_COMP_SWAP;
	}
	return IBV_WC_SEND;
}

/* the byte_len of a successful completion (Write/Read: their length) */
static inline uint32_t fop_byte_len(const struct fop *op)
{
	switch (op->kind) {
	case F_FLUSH:
	case F_AW:
		return 0;
	case F_FA:
	case F_CS:
		return 8;
	default:
		return op->len;
	}
}

/*
 * Apply op to the model image of the target (tgt the real target's
 * address, model the image): returns the result of Read (first 8 bytes),
 * FetchAdd, CmpSwap in op->orig. Write takes its bytes from src (the
 * source buffer as it was posted).
 */
static inline void fop_model(struct fop *op, uint8_t *model, uint64_t tgt,
			     const uint8_t *src)
{
	uint8_t *m = model + (op->raddr - tgt);
	uint64_t v;

	switch (op->kind) {
	case F_WRITE:
		if (src)
			memcpy(m, src, op->len);
		break;
	case F_READ:
		op->orig = op->len >= 8 ? fl_ld64(m) : 0;
		break;
	case F_FLUSH:
		break;
	case F_AW:
		fl_st64(m, op->a);
		break;
	case F_FA:
		v = fl_ld64(m);
		op->orig = v;
		fl_st64(m, v + op->a);
		break;
	case F_CS:
		v = fl_ld64(m);
		op->orig = v;
		if (v == op->a)
			fl_st64(m, op->b);
		break;
	}
}

/*
 * Post ops[0..n) as one batch through qpx. 0 or the positive errno of
 * ibv_wr_complete() (nothing was posted then).
 */
static inline int fop_post(struct ibv_qp_ex *qpx, const struct fop *ops, int n)
{
	int i, rc;

	ibv_wr_start(qpx);
	for (i = 0; i < n; i++) {
		const struct fop *op = &ops[i];
		uint64_t v = op->a;

		qpx->wr_id = op->wr_id;
		qpx->wr_flags = op->flags;
		switch (op->kind) {
		case F_WRITE:
			ibv_wr_rdma_write(qpx, op->rkey, op->raddr);
			ibv_wr_set_sge(qpx, op->lkey, op->laddr, op->len);
			break;
		case F_READ:
			ibv_wr_rdma_read(qpx, op->rkey, op->raddr);
			ibv_wr_set_sge(qpx, op->lkey, op->laddr, op->len);
			break;
		case F_FLUSH:
			ibv_wr_flush(qpx, op->rkey, op->raddr, op->len,
				     op->type, op->level);
			break;
		case F_AW:
			ibv_wr_atomic_write(qpx, op->rkey, op->raddr, &v);
			break;
		case F_FA:
			ibv_wr_atomic_fetch_add(qpx, op->rkey, op->raddr, op->a);
			ibv_wr_set_sge(qpx, op->lkey, op->laddr, 8);
			break;
		case F_CS:
			ibv_wr_atomic_cmp_swp(qpx, op->rkey, op->raddr, op->a,
					      op->b);
			ibv_wr_set_sge(qpx, op->lkey, op->laddr, 8);
			break;
		}
	}
	rc = ibv_wr_complete(qpx);
	return rc < 0 ? -rc : rc;
}

static inline void fop_str(const struct fop *op, char *buf, size_t n)
{
	snprintf(buf, n, "wr %llu %s raddr 0x%llx rkey 0x%x len %u type %u "
		 "level %u a 0x%llx", (unsigned long long)op->wr_id,
		 fop_name(op->kind), (unsigned long long)op->raddr, op->rkey,
		 op->len, op->type, op->level, (unsigned long long)op->a);
}

/* The device's device_cap_flags_ex, or 0 (printed as a TAP comment). */
static inline uint64_t fl_dev_caps(struct ibv_context *ctx, const char *who)
{
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	if (ibv_query_device_ex(ctx, NULL, &ax))
		return 0;
	printf("# %s (%s): device_cap_flags_ex 0x%llx: FLUSH_GLOBAL %d "
	       "FLUSH_PERSISTENT %d ATOMIC_WRITE %d\n", who,
	       ibv_get_device_name(ctx->device),
	       (unsigned long long)ax.device_cap_flags_ex,
	       !!(ax.device_cap_flags_ex & DEV_FLUSH_GLOBAL),
	       !!(ax.device_cap_flags_ex & DEV_FLUSH_PERSISTENT),
	       !!(ax.device_cap_flags_ex & DEV_ATOMIC_WRITE));
	return ax.device_cap_flags_ex;
}

#endif /* HAVE_FLUSH_API */
#endif /* SIWX_FLUSH_COMMON_H */
