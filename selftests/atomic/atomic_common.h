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
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netdb.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "rdma_util.h"

#if defined(__has_include)
#if __has_include(<infiniband/siwdv.h>)
#include <infiniband/siwdv.h>
#define HAVE_SIWDV 1
#endif
#endif
#ifndef HAVE_SIWDV
#define HAVE_SIWDV 0
#endif

/* MR access for atomic targets (REMOTE_ATOMIC needs LOCAL_WRITE) */
#define ACC_ATOMIC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		    IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
#define ACC_NOATOMIC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		      IBV_ACCESS_REMOTE_READ)

/* ---- error text of the last failing helper ------------------------------ */

static __thread char ax_err[512];

__attribute__((format(printf, 2, 3)))
static inline int ax_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ax_err, sizeof(ax_err), fmt, ap);
	va_end(ap);
	if (code < 0)
		code = -code;
	return code ? -code : -EIO;
}

static inline const char *ax_errmsg(void)
{
	return ax_err[0] ? ax_err : ru_errmsg();
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

/* ---- connections ----------------------------------------------------------- */

/* Wait for one specific CM event; anything else but benign ones fails. */
static inline int ax_wait(struct rdma_event_channel *ch,
			  enum rdma_cm_event_type want, int timeout_ms,
			  struct rdma_cm_id **id_out)
{
	int rc = ru_wait_cm_event(ch, want, timeout_ms, id_out);

	return rc ? ax_fail(rc, "%s", ru_errmsg()) : 0;
}

static inline int ax_parse(const char *s, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char pbuf[8];

	snprintf(pbuf, sizeof(pbuf), "%u", port);
	if (getaddrinfo(s, pbuf, &hints, &res))
		return ax_fail(EINVAL, "bad address %s", s);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

#define AX_SEND_OPS (IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |		\
		     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |		\
		     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_RDMA_WRITE |	\
		     IBV_QP_EX_WITH_SEND)

/*
 * PD (pd, or a new one when NULL), CQs and QP for e->id. With want_qpx
 * the QP is created through rdma_create_qp_ex() with ibv_qp_ex send
 * operations and *qpx is set.
 */
static inline int ax_create_qp(struct ru_ep *e, struct ibv_pd *pd,
			       const struct ru_caps *caps, int want_qpx,
			       struct ibv_qp_ex **qpx)
{
	int depth;

	e->pd = pd ? pd : ibv_alloc_pd(e->id->verbs);
	if (!e->pd)
		return ax_fail(errno, "ibv_alloc_pd: %s", strerror(errno));
	depth = caps->cq_depth ? caps->cq_depth : (int)caps->max_send_wr + 8;
	e->scq = ibv_create_cq(e->id->verbs, depth, NULL, NULL, 0);
	depth = caps->cq_depth ? caps->cq_depth : (int)caps->max_recv_wr + 8;
	e->rcq = ibv_create_cq(e->id->verbs, depth, NULL, NULL, 0);
	if (!e->scq || !e->rcq)
		return ax_fail(errno, "ibv_create_cq: %s", strerror(errno));
	if (want_qpx) {
		struct ibv_qp_init_attr_ex qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = e->scq;
		qa.recv_cq = e->rcq;
		qa.cap.max_send_wr = caps->max_send_wr;
		qa.cap.max_recv_wr = caps->max_recv_wr;
		qa.cap.max_send_sge = caps->max_send_sge;
		qa.cap.max_recv_sge = caps->max_recv_sge;
		qa.comp_mask = IBV_QP_INIT_ATTR_PD |
			       IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.pd = e->pd;
		qa.send_ops_flags = AX_SEND_OPS;
		if (rdma_create_qp_ex(e->id, &qa))
			return ax_fail(errno, "rdma_create_qp_ex(send_ops_flags "
				       "0x%llx): %s", (unsigned long long)AX_SEND_OPS,
				       strerror(errno));
		*qpx = ibv_qp_to_qp_ex(e->id->qp);
		if (!*qpx)
			return ax_fail(EOPNOTSUPP, "ibv_qp_to_qp_ex: NULL");
	} else {
		struct ibv_qp_init_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = e->scq;
		qa.recv_cq = e->rcq;
		qa.cap.max_send_wr = caps->max_send_wr;
		qa.cap.max_recv_wr = caps->max_recv_wr;
		qa.cap.max_send_sge = caps->max_send_sge;
		qa.cap.max_recv_sge = caps->max_recv_sge;
		if (rdma_create_qp(e->id, e->pd, &qa))
			return ax_fail(errno, "rdma_create_qp: %s",
				       strerror(errno));
	}
	e->qp = e->id->qp;
	if (caps->on_qp) {	/* e.g. post receives before connecting */
		int rc = caps->on_qp(e, caps->on_qp_arg);

		if (rc)
			return ax_fail(rc, "on_qp: %s", ru_errmsg());
	}
	return 0;
}

static inline void ax_conn_param(struct rdma_conn_param *p, const struct ru_caps *c)
{
	memset(p, 0, sizeof(*p));
	p->initiator_depth = c->initiator_depth;
	p->responder_resources = c->responder_resources;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* Client half 1 (like ru_client_start), optionally with an ibv_qp_ex. */
static inline int ax_client_start(struct ru_ep *c, const char *src,
				  const char *dst,
				  uint16_t port, const struct ru_caps *caps,
				  int want_qpx, struct ibv_qp_ex **qpx)
{
	struct sockaddr_storage sss, dss;
	struct rdma_conn_param cp;
	int rc;

	if (!want_qpx) {
		rc = ru_client_start(c, src, dst, port, caps, RU_TIMEOUT_MS);
		return rc ? ax_fail(rc, "%s", ru_errmsg()) : 0;
	}
	memset(c, 0, sizeof(*c));
	rc = ax_parse(src, 0, &sss);
	if (!rc)
		rc = ax_parse(dst, port, &dss);
	if (rc)
		return rc;
	c->ch = ru_new_channel();
	if (!c->ch)
		return ax_fail(errno, "rdma_create_event_channel");
	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP))
		return ax_fail(errno, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(c->id, (struct sockaddr *)&sss,
			      (struct sockaddr *)&dss, 5000))
		return ax_fail(errno, "rdma_resolve_addr: %s", strerror(errno));
	rc = ax_wait(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, 6000, NULL);
	if (rc)
		return rc;
	if (rdma_resolve_route(c->id, 5000))
		return ax_fail(errno, "rdma_resolve_route: %s", strerror(errno));
	rc = ax_wait(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, 6000, NULL);
	if (rc)
		return rc;
	rc = ax_create_qp(c, NULL, caps, 1, qpx);
	if (rc)
		return rc;
	ax_conn_param(&cp, caps);
	if (rdma_connect(c->id, &cp))
		return ax_fail(errno, "rdma_connect: %s", strerror(errno));
	return 0;
}

/*
 * Server half 1: take one connect request from l, create the QP in pd
 * (NULL: a new PD) and accept. Finish with ru_ep_wait_established().
 * A shared pd stays the caller's: clear e->pd before ru_ep_close().
 */
static inline int ax_accept_start(struct ru_listener *l, struct ru_ep *s,
				  const struct ru_caps *caps, struct ibv_pd *pd,
				  int timeout_ms)
{
	struct rdma_conn_param cp;
	struct rdma_cm_id *id = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	rc = ax_wait(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, timeout_ms, &id);
	if (rc)
		return rc;
	s->id = id;
	s->ch = ru_new_channel();
	if (!s->ch)
		return ax_fail(errno, "rdma_create_event_channel");
	if (rdma_migrate_id(id, s->ch))
		return ax_fail(errno, "rdma_migrate_id: %s", strerror(errno));
	rc = ax_create_qp(s, pd, caps, 0, NULL);
	if (rc) {
		rdma_reject(id, NULL, 0);
		return rc;
	}
	ax_conn_param(&cp, caps);
	if (rdma_accept(id, &cp))
		return ax_fail(errno, "rdma_accept: %s", strerror(errno));
	return 0;
}

/* Close an endpoint whose PD is shared (not owned). */
static inline void ax_ep_close_shared(struct ru_ep *e)
{
	e->pd = NULL;
	ru_ep_close(e);
}

#endif /* SIWX_ATOMIC_COMMON_H */
