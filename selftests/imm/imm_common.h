/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * imm_common.h - shared by the RFC 7306 Immediate Data test programs
 * (imm, imm_peer, imm_probe): connection set-up that rdma_util lacks
 * (receive queue on an SRQ, a receive CQ with a completion channel or
 * from ibv_create_cq_ex, a QP with ibv_qp_ex send operations) and the
 * posting/polling of RDMA Write with Immediate.
 *
 * Everything is static: each program includes this header once.
 *
 * The verbs immediate value is opaque 32 bits in network byte order
 * (struct ibv_send_wr.imm_data, struct ibv_wc.imm_data): the tests keep it
 * as the raw __be32 they post and compare it bit for bit with what the
 * receiver reports. On the wire (Documentation/rfc7306.md) the Immediate
 * Data message carries 64 bits: 32 zero bits, then those 4 bytes as they
 * are in memory.
 *
 * The 64-bit immediate of siwx goes through the direct-verbs header
 * <infiniband/siwdv.h>. When it is not available at build time,
 * HAVE_SIWDV is 0 and the 64-bit tests fail (they must not pass silently).
 */
#ifndef SIWX_IMM_COMMON_H
#define SIWX_IMM_COMMON_H

#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <netdb.h>
#include <unistd.h>
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

#define IM_ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ)

/* siwx limits of an RDMA Write with Immediate (siw-abi.h) */
#define IM_MAX_SGE_IMM		5
#define IM_MAX_INLINE_IMM	64

/* ---- error text of the last failing helper ------------------------------ */

static __thread char im_err[512];

__attribute__((format(printf, 2, 3)))
static inline int im_fail(int code, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(im_err, sizeof(im_err), fmt, ap);
	va_end(ap);
	if (code < 0)
		code = -code;
	return code ? -code : -EIO;
}

static inline const char *im_errmsg(void)
{
	return im_err[0] ? im_err : ru_errmsg();
}

/* ---- random numbers --------------------------------------------------------- */

static inline uint64_t im_rng(uint64_t *s)
{
	uint64_t x = (*s += 0x9e3779b97f4a7c15ull);

	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* uniform in [0, n) (n > 0) */
static inline uint32_t im_rand(uint64_t *s, uint32_t n)
{
	return (uint32_t)(im_rng(s) % n);
}

/* A random 32-bit immediate, with the edge values now and then. */
static inline __be32 im_rand_imm(uint64_t *s)
{
	static const uint32_t edge[] = { 0, 0xffffffffu, 0x80000000u, 1,
					 0x01020304u };
	uint32_t r = (uint32_t)im_rng(s);

	if (im_rand(s, 8) == 0)
		r = edge[im_rand(s, sizeof(edge) / sizeof(edge[0]))];
	return htobe32(r);
}

/* ---- connection ----------------------------------------------------------- */

struct im_cfg {
	struct ru_caps caps;	/* WR/SGE/inline limits, depths, on_qp */
	int qpx;		/* create with ibv_qp_ex send operations */
	uint64_t send_ops;	/* with qpx: send_ops_flags (0: IM_SEND_OPS) */
	int srq;		/* receive queue: an SRQ (own, or shared_srq) */
	struct ibv_srq *shared_srq;
	struct ibv_pd *shared_pd;	/* PD to use (with shared_srq: its PD) */
	int rcq_channel;	/* receive CQ with a completion channel */
	int rcq_ex;		/* receive CQ from ibv_create_cq_ex */
	uint64_t rcq_wc_flags;	/* with rcq_ex (0: IM_CQX_FLAGS) */
};

#define IM_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE |			\
		     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |		\
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ)

#define IM_CQX_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM |	\
		      IBV_WC_EX_WITH_QP_NUM)

struct im_ep {
	struct ru_ep e;		/* ch, id, pd, scq, rcq, qp */
	struct ibv_qp_ex *qpx;
	struct ibv_srq *srq;
	int own_srq, own_pd;
	struct ibv_comp_channel *cc;
	struct ibv_cq_ex *rcqx;
};

static inline void im_cfg_default(struct im_cfg *c)
{
	memset(c, 0, sizeof(*c));
	ru_caps_default(&c->caps);
}

/* Wait for one specific CM event; anything else but benign ones fails. */
static inline int im_wait(struct rdma_event_channel *ch,
			  enum rdma_cm_event_type want, int timeout_ms,
			  struct rdma_cm_id **id_out)
{
	int rc = ru_wait_cm_event(ch, want, timeout_ms, id_out);

	return rc ? im_fail(rc, "%s", ru_errmsg()) : 0;
}

static inline int im_parse(const char *s, uint16_t port,
			   struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char pbuf[8];

	snprintf(pbuf, sizeof(pbuf), "%u", port);
	if (getaddrinfo(s, pbuf, &hints, &res))
		return im_fail(EINVAL, "bad address %s", s);
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* PD, CQs, optional SRQ and the QP for m->e.id, as cfg says. */
static inline int im_create(struct im_ep *m, const struct im_cfg *cfg)
{
	struct ibv_context *ctx = m->e.id->verbs;
	const struct ru_caps *caps = &cfg->caps;
	struct ibv_qp_init_attr_ex qa;
	int depth;

	if (cfg->shared_pd) {
		m->e.pd = cfg->shared_pd;
	} else {
		m->e.pd = ibv_alloc_pd(ctx);
		if (!m->e.pd)
			return im_fail(errno, "ibv_alloc_pd: %s", strerror(errno));
		m->own_pd = 1;
	}
	depth = caps->cq_depth ? caps->cq_depth : (int)caps->max_send_wr + 8;
	m->e.scq = ibv_create_cq(ctx, depth, NULL, NULL, 0);
	if (!m->e.scq)
		return im_fail(errno, "ibv_create_cq(%d): %s", depth,
			       strerror(errno));
	depth = caps->cq_depth ? caps->cq_depth : (int)caps->max_recv_wr + 8;
	if (cfg->rcq_channel) {
		int fl;

		m->cc = ibv_create_comp_channel(ctx);
		if (!m->cc)
			return im_fail(errno, "ibv_create_comp_channel: %s",
				       strerror(errno));
		fl = fcntl(m->cc->fd, F_GETFL);
		if (fl < 0 || fcntl(m->cc->fd, F_SETFL, fl | O_NONBLOCK) < 0)
			return im_fail(errno, "O_NONBLOCK on the channel: %s",
				       strerror(errno));
	}
	if (cfg->rcq_ex) {
		struct ibv_cq_init_attr_ex ca;

		memset(&ca, 0, sizeof(ca));
		ca.cqe = (uint32_t)depth;
		ca.channel = m->cc;
		ca.wc_flags = cfg->rcq_wc_flags ? cfg->rcq_wc_flags :
						   IM_CQX_FLAGS;
		m->rcqx = ibv_create_cq_ex(ctx, &ca);
		if (!m->rcqx) {
			int err = errno;

			return im_fail(err ? err : EIO,
				       "ibv_create_cq_ex(wc_flags 0x%llx): %s",
				       (unsigned long long)ca.wc_flags,
				       strerror(err));
		}
		m->e.rcq = ibv_cq_ex_to_cq(m->rcqx);
	} else {
		m->e.rcq = ibv_create_cq(ctx, depth, NULL, m->cc, 0);
		if (!m->e.rcq)
			return im_fail(errno, "ibv_create_cq(%d): %s", depth,
				       strerror(errno));
	}
	if (cfg->shared_srq) {
		m->srq = cfg->shared_srq;
	} else if (cfg->srq) {
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = caps->max_recv_wr;
		sa.attr.max_sge = caps->max_recv_sge;
		m->srq = ibv_create_srq(m->e.pd, &sa);
		if (!m->srq)
			return im_fail(errno, "ibv_create_srq(%u): %s",
				       caps->max_recv_wr, strerror(errno));
		m->own_srq = 1;
	}

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = m->e.scq;
	qa.recv_cq = m->e.rcq;
	qa.srq = m->srq;
	qa.cap.max_send_wr = caps->max_send_wr;
	qa.cap.max_recv_wr = m->srq ? 0 : caps->max_recv_wr;
	qa.cap.max_send_sge = caps->max_send_sge;
	qa.cap.max_recv_sge = m->srq ? 0 : caps->max_recv_sge;
	qa.cap.max_inline_data = caps->max_inline;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = m->e.pd;
	if (cfg->qpx) {
		qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.send_ops_flags = cfg->send_ops ? cfg->send_ops : IM_SEND_OPS;
	}
	if (rdma_create_qp_ex(m->e.id, &qa))
		return im_fail(errno, "rdma_create_qp_ex(send %u/%u sge, recv "
			       "%u, inline %u, srq %s, send_ops 0x%llx): %s",
			       caps->max_send_wr, caps->max_send_sge,
			       caps->max_recv_wr, caps->max_inline,
			       m->srq ? "yes" : "no",
			       (unsigned long long)qa.send_ops_flags,
			       strerror(errno));
	m->e.qp = m->e.id->qp;
	if (cfg->qpx) {
		m->qpx = ibv_qp_to_qp_ex(m->e.qp);
		if (!m->qpx)
			return im_fail(EOPNOTSUPP, "ibv_qp_to_qp_ex: NULL");
	}
	if (caps->on_qp) {	/* e.g. post receives before connecting */
		int rc = caps->on_qp(&m->e, caps->on_qp_arg);

		if (rc)
			return im_fail(rc, "on_qp: %s", im_errmsg());
	}
	return 0;
}

static inline void im_conn_param(struct rdma_conn_param *p,
				 const struct ru_caps *c)
{
	memset(p, 0, sizeof(*p));
	p->initiator_depth = c->initiator_depth;
	p->responder_resources = c->responder_resources;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* Client half 1: resolve, create, rdma_connect(). */
static inline int im_client_start(struct im_ep *m, const char *src,
				  const char *dst, uint16_t port,
				  const struct im_cfg *cfg, int timeout_ms)
{
	struct sockaddr_storage sss, dss;
	struct rdma_conn_param cp;
	int rc;

	memset(m, 0, sizeof(*m));
	rc = im_parse(src, 0, &sss);
	if (!rc)
		rc = im_parse(dst, port, &dss);
	if (rc)
		return rc;
	m->e.ch = ru_new_channel();
	if (!m->e.ch)
		return im_fail(errno, "rdma_create_event_channel");
	if (rdma_create_id(m->e.ch, &m->e.id, NULL, RDMA_PS_TCP))
		return im_fail(errno, "rdma_create_id: %s", strerror(errno));
	if (rdma_resolve_addr(m->e.id, (struct sockaddr *)&sss,
			      (struct sockaddr *)&dss, timeout_ms))
		return im_fail(errno, "rdma_resolve_addr(%s -> %s:%u): %s", src,
			       dst, port, strerror(errno));
	rc = im_wait(m->e.ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms + 1000,
		     NULL);
	if (rc)
		return rc;
	if (rdma_resolve_route(m->e.id, timeout_ms))
		return im_fail(errno, "rdma_resolve_route: %s", strerror(errno));
	rc = im_wait(m->e.ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms + 1000,
		     NULL);
	if (rc)
		return rc;
	rc = im_create(m, cfg);
	if (rc)
		return rc;
	im_conn_param(&cp, &cfg->caps);
	if (rdma_connect(m->e.id, &cp))
		return im_fail(errno, "rdma_connect(%s:%u): %s", dst, port,
			       strerror(errno));
	return 0;
}

/* Server half 1: take a connect request from l, create, rdma_accept(). */
static inline int im_accept_start(struct ru_listener *l, struct im_ep *m,
				  const struct im_cfg *cfg, int timeout_ms)
{
	struct rdma_conn_param cp;
	struct rdma_cm_id *id = NULL;
	int rc;

	memset(m, 0, sizeof(*m));
	rc = im_wait(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, timeout_ms, &id);
	if (rc)
		return rc;
	m->e.id = id;
	m->e.ch = ru_new_channel();
	if (!m->e.ch)
		return im_fail(errno, "rdma_create_event_channel");
	if (rdma_migrate_id(id, m->e.ch))
		return im_fail(errno, "rdma_migrate_id: %s", strerror(errno));
	rc = im_create(m, cfg);
	if (rc) {
		rdma_reject(id, NULL, 0);
		return rc;
	}
	im_conn_param(&cp, &cfg->caps);
	if (rdma_accept(id, &cp))
		return im_fail(errno, "rdma_accept: %s", strerror(errno));
	return 0;
}

static inline int im_wait_established(struct im_ep *m, int timeout_ms)
{
	int rc;

	if (m->e.established)
		return 0;
	rc = im_wait(m->e.ch, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, NULL);
	if (!rc)
		m->e.established = 1;
	return rc;
}

/* Both ends in this process: client from SIWX_ADDR1 to l (SIWX_ADDR0). */
static inline int im_pair_open(struct ru_listener *l, struct im_ep *cli,
			       struct im_ep *srv, const struct im_cfg *ccfg,
			       const struct im_cfg *scfg)
{
	int rc;

	rc = im_client_start(cli, ru_addr1(), ru_addr0(), l->port, ccfg,
			     RU_TIMEOUT_MS);
	if (rc)
		return rc;
	rc = im_accept_start(l, srv, scfg, RU_TIMEOUT_MS);
	if (rc)
		return rc;
	rc = im_wait_established(srv, RU_TIMEOUT_MS);
	if (rc)
		return rc;
	return im_wait_established(cli, RU_TIMEOUT_MS);
}

/* Wait (bounded) for DISCONNECTED on m; 0 when seen. */
static inline int im_wait_disconnected(struct im_ep *m, int timeout_ms)
{
	int rc = ru_ep_wait_disconnected(&m->e, timeout_ms);

	return rc ? im_fail(rc, "%s", ru_errmsg()) : 0;
}

static inline void im_close(struct im_ep *m)
{
	if (m->e.id && m->e.qp)
		rdma_destroy_qp(m->e.id);
	m->e.qp = NULL;
	if (m->srq && m->own_srq)
		ibv_destroy_srq(m->srq);
	m->srq = NULL;
	if (m->e.scq)
		ibv_destroy_cq(m->e.scq);
	m->e.scq = NULL;
	if (m->e.rcq)
		ibv_destroy_cq(m->e.rcq);
	m->e.rcq = NULL;
	if (m->cc)
		ibv_destroy_comp_channel(m->cc);
	m->cc = NULL;
	if (!m->own_pd)
		m->e.pd = NULL;
	ru_ep_close(&m->e);	/* pd, id, channel */
	memset(m, 0, sizeof(*m));
}

/* ---- work requests ---------------------------------------------------------- */

/*
 * Post one send-queue WR through ibv_post_send() with the n SGEs sg
 * (n may be 0). imm is the raw network-order immediate (only used with
 * the *_WITH_IMM opcodes). Returns 0 or a positive errno, whatever sign
 * the provider used.
 */
static inline int im_post(struct ibv_qp *qp, enum ibv_wr_opcode op,
			  struct ibv_sge *sg, int n, uint64_t raddr,
			  uint32_t rkey, __be32 imm, unsigned int flags,
			  uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = n ? sg : NULL;
	wr.num_sge = n;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = imm;
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	rc = ibv_post_send(qp, &wr, &bad);
	if (rc < 0)
		rc = -rc;
	if (rc)
		im_fail(rc, "ibv_post_send(opcode %d, %d SGEs, flags 0x%x): %d (%s)",
			op, n, flags, rc, strerror(rc));
	return rc;
}

/* A single-SGE write with immediate from [addr, addr+len) of mr. */
static inline int im_post_wimm(struct ibv_qp *qp, struct ibv_mr *mr,
			       void *addr, uint32_t len, uint64_t raddr,
			       uint32_t rkey, __be32 imm, unsigned int flags,
			       uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };

	return im_post(qp, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 1, raddr, rkey,
		       imm, flags, wr_id);
}

static inline int im_post_recv_sge(struct ibv_qp *qp, struct ibv_srq *srq,
				   struct ibv_mr *mr, void *addr, uint32_t len,
				   uint64_t wr_id)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		   ibv_post_recv(qp, &wr, &bad);
	if (rc < 0)
		rc = -rc;
	if (rc)
		im_fail(rc, "ibv_post_%srecv(len %u): %d (%s)", srq ? "srq_" : "",
			len, rc, strerror(rc));
	return rc;
}

/* ---- completions -------------------------------------------------------------- */

/* What the tests look at in a completion, from either CQ kind. */
struct im_wc {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;
	uint32_t byte_len;
	__be32 imm;
	unsigned int wc_flags;
	uint32_t qp_num;
	uint32_t vendor_err;
};

static inline void im_from_wc(struct im_wc *w, const struct ibv_wc *wc)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = wc->wr_id;
	w->status = wc->status;
	w->opcode = wc->opcode;
	w->byte_len = wc->byte_len;
	w->imm = wc->imm_data;
	w->wc_flags = wc->wc_flags;
	w->qp_num = wc->qp_num;
	w->vendor_err = wc->vendor_err;
}

/*
 * Poll one completion from an ibv_cq_ex (created with IM_CQX_FLAGS):
 * 1 got one, 0 timed out, <0 error.
 */
static inline int im_poll_ex(struct ibv_cq_ex *cq, struct im_wc *w,
			     int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	int rc;

	for (;;) {
		rc = ibv_start_poll(cq, &pa);
		if (rc == 0)
			break;
		if (rc != ENOENT)
			return im_fail(rc, "ibv_start_poll: %d", rc);
		if (ru_now_ms() >= deadline) {
			im_fail(ETIMEDOUT, "no completion within %d ms",
				timeout_ms);
			return 0;
		}
		usleep(200);
	}
	memset(w, 0, sizeof(*w));
	w->wr_id = cq->wr_id;
	w->status = cq->status;
	w->opcode = ibv_wc_read_opcode(cq);
	w->vendor_err = ibv_wc_read_vendor_err(cq);
	w->wc_flags = ibv_wc_read_wc_flags(cq);
	w->byte_len = ibv_wc_read_byte_len(cq);
	w->qp_num = ibv_wc_read_qp_num(cq);
	if (w->wc_flags & IBV_WC_WITH_IMM)
		w->imm = ibv_wc_read_imm_data(cq);
	ibv_end_poll(cq);
	return 1;
}

/* Poll one completion of m's receive CQ, whichever kind. */
static inline int im_poll_recv(struct im_ep *m, struct im_wc *w, int timeout_ms)
{
	struct ibv_wc wc;
	int rc;

	if (m->rcqx)
		return im_poll_ex(m->rcqx, w, timeout_ms);
	rc = ru_poll(m->e.rcq, &wc, timeout_ms);
	if (rc == 1)
		im_from_wc(w, &wc);
	else if (rc == 0)
		im_fail(ETIMEDOUT, "no receive completion within %d ms",
			timeout_ms);
	return rc;
}

static inline int im_poll_send(struct im_ep *m, struct im_wc *w, int timeout_ms)
{
	struct ibv_wc wc;
	int rc = ru_poll(m->e.scq, &wc, timeout_ms);

	if (rc == 1)
		im_from_wc(w, &wc);
	else if (rc == 0)
		im_fail(ETIMEDOUT, "no send completion within %d ms",
			timeout_ms);
	return rc;
}

static inline const char *im_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "other";
	}
}

/* "wr 5 RECV_RDMA_WITH_IMM success len 12 flags 0x2 imm 0x01020304" */
static inline const char *im_wc_str(const struct im_wc *w, char *buf, size_t n)
{
	snprintf(buf, n, "wr %llu %s(%d) %s len %u flags 0x%x imm 0x%08x qp %u vendor_err 0x%x",
		 (unsigned long long)w->wr_id, im_wc_opcode_str(w->opcode),
		 (int)w->opcode, ibv_wc_status_str(w->status), w->byte_len,
		 w->wc_flags, be32toh(w->imm), w->qp_num, w->vendor_err);
	return buf;
}

/* ---- async events ------------------------------------------------------------- */

static inline int im_async_nonblock(struct ibv_context *ctx)
{
	int fl = fcntl(ctx->async_fd, F_GETFL);

	if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return im_fail(errno, "O_NONBLOCK on async_fd: %s",
			       strerror(errno));
	return 0;
}

/*
 * Wait up to timeout_ms for one async event (async_fd non-blocking).
 * 1 with *ev filled (already acked, element kept), 0 none.
 */
static inline int im_get_async(struct ibv_context *ctx,
			       struct ibv_async_event *ev, int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	struct ibv_async_event e;

	for (;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		uint64_t now;

		if (ibv_get_async_event(ctx, &e) == 0) {
			*ev = e;
			ibv_ack_async_event(&e);
			return 1;
		}
		now = ru_now_ms();
		if (now >= deadline)
			return 0;
		poll(&pfd, 1, (int)(deadline - now));
	}
}

#endif /* SIWX_IMM_COMMON_H */
