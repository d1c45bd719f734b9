// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: RDMA Flush and RDMA Atomic Write (draft-talpey-rdma-commit) for
 * siw.
 *
 * Requester: IB_WR_FLUSH and IB_WR_ATOMIC_WRITE (from struct
 * ib_atomic_wr), and SIW_OP_FLUSH / SIW_OP_ATOMIC_WRITE SQEs, become a
 * Flush Request (RDMAP opcode 0xC) or an Atomic Write Request (0x10) on
 * QN 1, sharing the MSN space of Read and Atomic Requests, and take an
 * ORQ entry like a Read Request. The Flush Response (0xD) or Atomic
 * Write Response (0x11) on QN 3 completes the oldest ORQ entry, which
 * must be of the same kind.
 *
 * Responder: a request is checked on receipt, queued in the IRQ behind
 * earlier Read and Atomic Responses, executed by the transmit path in
 * that order (checking its target again) just before its response is
 * sent. A refused request ends the stream with a Terminate carrying
 * its headers.
 *
 * The hooks calling into this file are in siw_qp_rx.c, siw_qp_tx.c,
 * siw_qp.c and siw_verbs.c; the prototypes are in siw.h.
 */

#include <linux/errno.h>
#include <linux/types.h>
#include <linux/highmem.h>
#include <linux/libnvdimm.h>
#include <linux/string.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siw_verbs.h"
#include "siw_mem.h"
#include "siwx.h"

/* Kernel-private SQE field of the responder: the Disposition Flags */
static inline u32 *siw_sqe_flush_disp(struct siw_sqe *sqe)
{
	return &sqe->sge[3].length;
}

static inline struct siw_sqe_flush *siw_sqe_flush(struct siw_sqe *sqe)
{
	return (struct siw_sqe_flush *)&sqe->sge[SIW_SGE_IDX_ATOMIC];
}

/* verbs placement type and selectivity -> Disposition Flags */
static u32 siw_flush_disp(u8 type, u8 level)
{
	u32 disp = 0;

	if (type & IB_FLUSH_PERSISTENT)
		disp |= RDMAP_FLUSH_DISP_P;
	if (type & IB_FLUSH_GLOBAL)
		disp |= RDMAP_FLUSH_DISP_G;
	if (level == IB_FLUSH_MR)
		disp |= RDMAP_FLUSH_SEL_MR << RDMAP_FLUSH_DISP_SEL_SHIFT;
	return disp;
}

static bool siw_flush_args_valid(u64 type, u64 level)
{
	return type && !(type & ~(u64)(IB_FLUSH_GLOBAL | IB_FLUSH_PERSISTENT)) &&
	       (level == IB_FLUSH_RANGE || level == IB_FLUSH_MR);
}

/*
 * siw_flush_wr_to_sqe()
 *
 * An IB_WR_FLUSH or IB_WR_ATOMIC_WRITE work request (siw_post_send()),
 * taken from struct ib_atomic_wr: remote_addr and rkey name the target;
 * Atomic Write: swap is the value; Flush: compare_add the length, swap
 * the placement type, swap_mask the selectivity.
 */
int siw_flush_wr_to_sqe(const struct ib_send_wr *wr, struct siw_sqe *sqe)
{
	const struct ib_atomic_wr *awr = atomic_wr(wr);

	if (unlikely(wr->num_sge ||
		     wr->send_flags & (IB_SEND_INLINE | IB_SEND_FENCE)))
		return -EINVAL;

	sqe->num_sge = 0;
	sqe->raddr = awr->remote_addr;
	sqe->rkey = awr->rkey;

	if (wr->opcode == IB_WR_ATOMIC_WRITE) {
		if (unlikely(awr->remote_addr & 7))
			return -EINVAL;
		memcpy(&sqe->sge[SIW_SGE_IDX_ATOMIC].laddr, &awr->swap,
		       sizeof(u64));
		sqe->opcode = SIW_OP_ATOMIC_WRITE;
	} else {
		struct siw_sqe_flush *f = siw_sqe_flush(sqe);

		if (unlikely(!siw_flush_args_valid(awr->swap, awr->swap_mask)))
			return -EINVAL;
		memset(f, 0, sizeof(*f));
		f->length = awr->compare_add;
		f->type = awr->swap;
		f->level = awr->swap_mask;
		sqe->opcode = SIW_OP_FLUSH;
	}
	return 0;
}

/*
 * siw_flush_sqe_valid()
 *
 * A Flush or Atomic Write SQE (siw_activate_tx_from_sq()): no gather
 * list, not inline; Flush: known placement type and selectivity, the
 * padding zero; Atomic Write: an 8-byte aligned target.
 */
bool siw_flush_sqe_valid(const struct siw_sqe *sqe)
{
	const struct siw_sqe_flush *f =
		(const struct siw_sqe_flush *)&sqe->sge[SIW_SGE_IDX_ATOMIC];

	if (sqe->num_sge || sqe->flags & SIW_WQE_INLINE)
		return false;
	if (sqe->opcode == SIW_OP_ATOMIC_WRITE)
		return !(sqe->raddr & 7);

	return siw_flush_args_valid(f->type, f->level) &&
	       !memchr_inv(f->pad, 0, sizeof(f->pad));
}

/*
 * siw_flush_check_target()
 *
 * Check the target of an inbound Flush (@is_aw false) or Atomic Write
 * Request. Flush: Disposition Flags with P and/or G and no reserved
 * bit, a valid STag (index and key) of the QP's PD granting
 * FLUSH_PERSISTENT / FLUSH_GLOBAL as requested, the range in bounds
 * unless the whole region is flushed. Atomic Write: Length 8, a 64-bit
 * aligned Tagged Offset, a valid STag of the QP's PD in bounds,
 * granting REMOTE_WRITE. On success, *@mem holds a reference to the
 * region. Returns 0, or -EINVAL with the Terminate's error type and
 * code set.
 */
static int siw_flush_check_target(struct siw_qp *qp, bool is_aw, u32 stag,
				  u64 to, u32 len, u32 disp,
				  struct siw_mem **mem, u8 *etype, u8 *ecode)
{
	struct siw_device *sdev = to_siw_dev(qp->pd->device);
	enum ib_access_flags perms = 0;
	struct siw_mem *m;
	u32 sel;
	int rv;

	*mem = NULL;
	*etype = RDMAP_ETYPE_REMOTE_OPERATION;
	*ecode = RDMAP_ECODE_CATASTROPHIC_STREAM;

	if (is_aw) {
		struct siw_sge sge = { .laddr = to, .length = 8, .lkey = stag };

		if (len != RDMAP_ATOMIC_WRITE_LEN || to & 7)
			return -EINVAL;
		rv = siw_check_sge(qp->pd, &sge, mem, IB_ACCESS_REMOTE_WRITE, 0,
				   8);
		if (rv) {
			*etype = RDMAP_ETYPE_REMOTE_PROTECTION;
			*ecode = siw_rdmap_error(-rv);
			return -EINVAL;
		}
		return 0;
	}
	sel = (disp & RDMAP_FLUSH_DISP_SEL_MASK) >> RDMAP_FLUSH_DISP_SEL_SHIFT;
	if (disp & RDMAP_FLUSH_DISP_RSVD ||
	    !(disp & (RDMAP_FLUSH_DISP_P | RDMAP_FLUSH_DISP_G)) ||
	    (sel != RDMAP_FLUSH_SEL_RANGE && sel != RDMAP_FLUSH_SEL_MR))
		return -EINVAL;

	if (disp & RDMAP_FLUSH_DISP_P)
		perms |= IB_ACCESS_FLUSH_PERSISTENT;
	if (disp & RDMAP_FLUSH_DISP_G)
		perms |= IB_ACCESS_FLUSH_GLOBAL;

	*etype = RDMAP_ETYPE_REMOTE_PROTECTION;
	m = siw_mem_id2obj(sdev, stag >> 8);
	if (!m) {
		*ecode = RDMAP_ECODE_INVALID_STAG;
		return -EINVAL;
	}
	if (m->stag != stag) {
		*ecode = RDMAP_ECODE_INVALID_STAG;
		goto fail;
	}
	/* STag state, PD and rights; the range is checked below */
	rv = siw_check_mem(qp->pd, m, m->va, perms, 0);
	if (rv) {
		*ecode = siw_rdmap_error(-rv);
		goto fail;
	}
	if (sel == RDMAP_FLUSH_SEL_RANGE &&
	    (to < m->va || len > m->len || to - m->va > m->len - len)) {
		*ecode = RDMAP_ECODE_BASE_BOUNDS;
		goto fail;
	}
	*mem = m;
	return 0;
fail:
	siw_mem_put(m);
	return -EINVAL;
}

/* the fields of the request an IRQ entry or rx header holds */
static int siw_flush_check_irqe(struct siw_qp *qp, struct siw_sqe *irqe,
				struct siw_mem **mem, u8 *etype, u8 *ecode)
{
	bool is_aw = irqe->opcode == SIW_OP_ATOMIC_WRITE_RESPONSE;

	return siw_flush_check_target(qp, is_aw, irqe->rkey, irqe->raddr,
				      is_aw ? RDMAP_ATOMIC_WRITE_LEN :
					      siw_sqe_flush(irqe)->length,
				      *siw_sqe_flush_disp(irqe), mem, etype,
				      ecode);
}

/*
 * siw_proc_flush_req:
 *
 * Check the untagged header of an inbound Flush or Atomic Write
 * Request (QN 1, in sequence, one segment without payload). The
 * request is checked and queued once the FPDU completed, see
 * siw_init_flush_resp().
 */
int siw_proc_flush_req(struct siw_qp *qp)
{
	return siw_check_untagged_hdr(qp, RDMAP_UNTAGGED_QN_RDMA_READ);
}

/*
 * siw_proc_flush_resp:
 *
 * Check an inbound Flush or Atomic Write Response (QN 3): it must
 * answer the oldest outstanding request, which must be of its kind.
 * The request is completed once the FPDU completed, see
 * siw_flush_resp_complete().
 */
int siw_proc_flush_resp(struct siw_qp *qp)
{
	u8 opcode = __rdmap_get_opcode(&qp->rx_stream.hdr.ctrl);
	u8 want = opcode == RDMAP_FLUSH_RESP ? SIW_OP_FLUSH :
					       SIW_OP_ATOMIC_WRITE;
	struct siw_sqe *orqe;
	int rv;

	rv = siw_check_untagged_hdr(qp, RDMAP_UNTAGGED_QN_ATOMIC_RESP);
	if (rv)
		return rv;

	/* make sure ORQ indices are current */
	smp_mb();

	orqe = qp->attrs.orq_size ? orq_get_current(qp) : NULL;
	if (unlikely(!orqe || !(READ_ONCE(orqe->flags) & SIW_WQE_VALID) ||
		     orqe->opcode != want)) {
		pr_warn_ratelimited("siw: [QP %u]: unexpected %s Response\n",
				    qp_id(qp), want == SIW_OP_FLUSH ?
				    "Flush" : "Atomic Write");
		siw_init_terminate(qp, TERM_ERROR_LAYER_DDP,
				   DDP_ETYPE_UNTAGGED_BUF,
				   DDP_ECODE_UT_INVALID_MSN_NOBUF, 0);
		return -EPROTO;
	}
	return 0;
}

/*
 * siw_init_flush_resp:
 *
 * Check an inbound Flush or Atomic Write Request and turn it into a
 * response WQE, executed and sent in order with Read and Atomic
 * Responses: as the current TX WQE if idle, else at the tail of the
 * IRQ. The requests consume IRD like Read Requests.
 */
int siw_init_flush_resp(struct siw_qp *qp, struct siw_rx_stream *srx)
{
	bool is_aw = __rdmap_get_opcode(&srx->hdr.ctrl) ==
		     RDMAP_ATOMIC_WRITE_REQ;
	struct iwarp_atomic_write_req *awreq = &srx->hdr.atomic_write_req;
	struct iwarp_flush_req *freq = &srx->hdr.flush_req;
	struct siw_wqe *tx_work = tx_wqe(qp);
	u32 stag, len, disp = 0;
	struct siw_sqe *resp;
	struct siw_mem *mem;
	unsigned long flags;
	int run_sq = 1, rv;
	u8 etype, ecode;
	u64 to;

	if (is_aw) {
		stag = be32_to_cpu(awreq->stag);
		len = be32_to_cpu(awreq->len);
		to = be64_to_cpu(awreq->to);
	} else {
		stag = be32_to_cpu(freq->stag);
		len = be32_to_cpu(freq->len);
		to = be64_to_cpu(freq->to);
		disp = be32_to_cpu(freq->disp);
	}
	/*
	 * Check the target on receipt, so that a refused request ends
	 * the stream before any later message is processed.
	 */
	rv = siw_flush_check_target(qp, is_aw, stag, to, len, disp, &mem,
				    &etype, &ecode);
	if (rv) {
		siw_dbg_qp(qp, "%s target refused: type %u, code %u\n",
			   is_aw ? "atomic write" : "flush", etype, ecode);
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP, etype, ecode, 0);
		return rv;
	}
	siw_mem_put(mem);

	spin_lock_irqsave(&qp->sq_lock, flags);

	if (unlikely(!qp->attrs.irq_size)) {
		resp = NULL;
		run_sq = 0;
	} else if (tx_work->wr_status == SIW_WR_IDLE) {
		tx_work->processed = 0;
		memset(tx_work->mem, 0, sizeof(tx_work->mem));
		tx_work->wr_status = SIW_WR_QUEUED;
		resp = &tx_work->sqe;
	} else {
		resp = irq_alloc_free(qp);
		run_sq = 0;
	}
	if (likely(resp)) {
		resp->opcode = is_aw ? SIW_OP_ATOMIC_WRITE_RESPONSE :
				       SIW_OP_FLUSH_RESPONSE;
		resp->num_sge = 0;
		resp->rkey = stag;
		resp->raddr = to;
		if (is_aw) {
			memcpy(&resp->sge[SIW_SGE_IDX_ATOMIC].laddr,
			       awreq->data, sizeof(awreq->data));
		} else {
			memset(siw_sqe_flush(resp), 0, sizeof(struct siw_sqe_flush));
			siw_sqe_flush(resp)->length = len;
		}
		*siw_sqe_flush_disp(resp) = disp;
		*siw_sqe_atomic_msn(resp) = be32_to_cpu(freq->ddp_msn);

		/* response now valid as current TX wqe or in IRQ */
		smp_store_mb(resp->flags, SIW_WQE_VALID);
	} else {
		pr_warn_ratelimited("siw: [QP %u]: IRQ exceeded or null, size %d\n",
				    qp_id(qp), qp->attrs.irq_size);
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP,
				   RDMAP_ETYPE_REMOTE_OPERATION,
				   RDMAP_ECODE_CATASTROPHIC_STREAM, 0);
		rv = -EPROTO;
	}
	spin_unlock_irqrestore(&qp->sq_lock, flags);

	if (run_sq)
		rv = siw_sq_start(qp);

	return rv;
}

/*
 * siw_flush_resp_complete:
 *
 * Complete the oldest ORQ entry, the Flush or Atomic Write Request the
 * response just received answers (checked by siw_proc_flush_resp()).
 * The caller then retires the entry and checks the TX fence.
 */
void siw_flush_resp_complete(struct siw_qp *qp)
{
	struct siw_sqe done = *orq_get_current(qp);

	if (done.flags & SIW_WQE_SIGNALLED)
		siw_sqe_complete(qp, &done, 0, SIW_WC_SUCCESS);
}

static void siw_init_untagged(struct iwarp_ctrl_untagged *hdr, u8 opcode,
			      u32 qn, u32 msn)
{
	memcpy(&hdr->ctrl, &iwarp_pktinfo[opcode].ctrl,
	       sizeof(struct iwarp_ctrl));
	hdr->rsvd = 0;
	hdr->ddp_qn = htonl(qn);
	hdr->ddp_msn = htonl(msn);
	hdr->ddp_mo = 0;
}

/*
 * Rebuild the request a peer sent from the IRQ entry it was turned
 * into (see siw_init_flush_resp()), for a Terminate reporting an
 * error found when executing it.
 */
static void siw_flush_req_from_irqe(union iwarp_hdr *hdr, struct siw_sqe *irqe)
{
	u32 msn = *siw_sqe_atomic_msn(irqe);

	if (irqe->opcode == SIW_OP_ATOMIC_WRITE_RESPONSE) {
		struct iwarp_atomic_write_req *req = &hdr->atomic_write_req;

		siw_init_untagged(&hdr->c_untagged, RDMAP_ATOMIC_WRITE_REQ,
				  RDMAP_UNTAGGED_QN_RDMA_READ, msn);
		req->stag = htonl(irqe->rkey);
		req->len = htonl(RDMAP_ATOMIC_WRITE_LEN);
		req->to = cpu_to_be64(irqe->raddr);
		memcpy(req->data, &irqe->sge[SIW_SGE_IDX_ATOMIC].laddr,
		       sizeof(req->data));
	} else {
		struct iwarp_flush_req *req = &hdr->flush_req;

		siw_init_untagged(&hdr->c_untagged, RDMAP_FLUSH_REQ,
				  RDMAP_UNTAGGED_QN_RDMA_READ, msn);
		req->stag = htonl(irqe->rkey);
		req->len = htonl(siw_sqe_flush(irqe)->length);
		req->to = cpu_to_be64(irqe->raddr);
		req->disp = htonl(*siw_sqe_flush_disp(irqe));
	}
}

/*
 * siw_flush_term_hdr()
 *
 * For a Terminate reporting an RDMAP error (not catastrophic) in an
 * inbound Flush or Atomic Write Request (siw_send_terminate()): the
 * request's headers to attach, or NULL if the error is not about one.
 * Refused when executing it, the request is rebuilt into @err_hdr;
 * refused on receipt, its header has been received completely.
 */
union iwarp_hdr *siw_flush_term_hdr(struct siw_qp *qp,
				    union iwarp_hdr *err_hdr)
{
	union iwarp_hdr *rx_hdr = &qp->rx_stream.hdr;
	u8 op;

	if (qp->term_info.in_tx) {
		if (!siw_op_is_flush_resp(tx_type(tx_wqe(qp))))
			return NULL;
		siw_flush_req_from_irqe(err_hdr, &tx_wqe(qp)->sqe);
		return err_hdr;
	}
	op = __rdmap_get_opcode(&rx_hdr->ctrl);
	if (qp->term_info.ecode != RDMAP_ECODE_VERSION &&
	    (op == RDMAP_FLUSH_REQ || op == RDMAP_ATOMIC_WRITE_REQ))
		return rx_hdr;

	return NULL;
}

/*
 * siw_activate_flush_resp()
 *
 * Make the Flush or Atomic Write Response IRQ entry @irqe the current
 * TX WQE, to be executed at transmit (siw_activate_tx()). Returns 1.
 */
int siw_activate_flush_resp(struct siw_qp *qp, struct siw_sqe *irqe)
{
	struct siw_wqe *wqe = tx_wqe(qp);

	memcpy(&wqe->sqe, irqe, sizeof(wqe->sqe));
	wqe->sqe.flags = 0;
	wqe->processed = 0;
	qp->irq_get++;

	/* mark current IRQ entry free */
	smp_store_mb(irqe->flags, 0);

	return 1;
}

/*
 * siw_prepare_flush()
 *
 * The header-only FPDU of a Flush or Atomic Write Request, or of their
 * responses. Returns where its CRC goes.
 */
char *siw_prepare_flush(struct siw_iwarp_tx *c_tx, struct siw_wqe *wqe)
{
	struct siw_sqe *sqe = &wqe->sqe;

	BUILD_BUG_ON(sizeof(struct iwarp_atomic_write_req) + MPA_CRC_SIZE >
		     sizeof(c_tx->pkt));
	BUILD_BUG_ON(sizeof(struct iwarp_flush_req) + MPA_CRC_SIZE >
		     sizeof(c_tx->pkt));

	switch (tx_type(wqe)) {
	case SIW_OP_FLUSH: {
		struct iwarp_flush_req *req = &c_tx->pkt.flush_req;
		struct siw_sqe_flush *f = siw_sqe_flush(sqe);
		u32 disp = siw_flush_disp(f->type, f->level);
		bool whole = f->level == IB_FLUSH_MR;

		siw_init_untagged(&c_tx->pkt.c_untagged, RDMAP_FLUSH_REQ,
				  RDMAP_UNTAGGED_QN_RDMA_READ,
				  ++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_RDMA_READ]);
		req->stag = htonl(sqe->rkey);
		/* the whole region: the range fields are sent as zero */
		req->len = whole ? 0 : htonl(f->length);
		req->to = whole ? 0 : cpu_to_be64(sqe->raddr);
		req->disp = htonl(disp);
		c_tx->ctrl_len = sizeof(*req);
		break;
	}
	case SIW_OP_ATOMIC_WRITE: {
		struct iwarp_atomic_write_req *req = &c_tx->pkt.atomic_write_req;

		siw_init_untagged(&c_tx->pkt.c_untagged, RDMAP_ATOMIC_WRITE_REQ,
				  RDMAP_UNTAGGED_QN_RDMA_READ,
				  ++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_RDMA_READ]);
		req->stag = htonl(sqe->rkey);
		req->len = htonl(RDMAP_ATOMIC_WRITE_LEN);
		req->to = cpu_to_be64(sqe->raddr);
		memcpy(req->data, &sqe->sge[SIW_SGE_IDX_ATOMIC].laddr,
		       sizeof(req->data));
		c_tx->ctrl_len = sizeof(*req);
		break;
	}
	default:
		siw_init_untagged(&c_tx->pkt.c_untagged,
				  tx_type(wqe) == SIW_OP_FLUSH_RESPONSE ?
				  RDMAP_FLUSH_RESP : RDMAP_ATOMIC_WRITE_RESP,
				  RDMAP_UNTAGGED_QN_ATOMIC_RESP,
				  ++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_ATOMIC_RESP]);
		c_tx->ctrl_len = sizeof(struct iwarp_ctrl_untagged);
		break;
	}
	return (char *)&c_tx->pkt.ctrl + c_tx->ctrl_len;
}

/*
 * siw_flush_map()
 *
 * Map the kernel view of at most @len bytes at @addr of @mem (checked
 * by the caller), not crossing a page or PBL buffer boundary; *@len
 * becomes the length mapped. Returns NULL if @addr is not mapped.
 * Release with siw_flush_unmap().
 */
static void *siw_flush_map(struct siw_mem *mem, u64 addr, u64 *len)
{
	struct page *p;

	if (!mem->mem_obj)
		return ib_virt_dma_to_ptr(addr);

	if (mem->is_pbl) {
		int buf_len;
		dma_addr_t buf = siw_pbl_get_buffer(mem->pbl, addr - mem->va,
						    &buf_len, NULL);

		if (!buf || buf_len <= 0)
			return NULL;
		*len = min_t(u64, *len, buf_len);
		return ib_virt_dma_to_ptr(buf);
	}
	p = siw_get_upage(mem->umem, addr);
	if (!p)
		return NULL;
	*len = min_t(u64, *len, PAGE_SIZE - offset_in_page(addr));
	return kmap_local_page(p) + offset_in_page(addr);
}

static void siw_flush_unmap(struct siw_mem *mem, void *kaddr)
{
	if (mem->mem_obj && !mem->is_pbl)
		kunmap_local(kaddr);
}

/* Write the CPU caches of @len bytes at @addr of @mem back to pmem */
static int siw_flush_wb_range(struct siw_mem *mem, u64 addr, u64 len)
{
	while (len) {
		u64 chunk = len;
		void *kaddr = siw_flush_map(mem, addr, &chunk);

		if (!kaddr)
			return -EFAULT;
		if (!mem->mem_obj)
			chunk = len;
		arch_wb_cache_pmem(kaddr, chunk);
		siw_flush_unmap(mem, kaddr);

		addr += chunk;
		len -= chunk;
	}
	return 0;
}

/*
 * siw_flush_do()
 *
 * Execute the checked request of the response WQE @wqe on @mem.
 * Flush: a persistent one writes the range (or the whole region) back
 * from the CPU caches, unless the region is written cache-bypassing;
 * then a write barrier. Atomic Write: one 64-bit store with release
 * ordering (written back too on a cache-bypassing region, which a
 * persistent Flush does not write back).
 */
static int siw_flush_do(struct siw_wqe *wqe, struct siw_mem *mem)
{
	struct siw_sqe *sqe = &wqe->sqe;
	u64 len = 8;
	void *p;
	u64 v;

	if (tx_type(wqe) == SIW_OP_ATOMIC_WRITE_RESPONSE) {
		p = siw_flush_map(mem, sqe->raddr, &len);
		if (!p || len < 8) {
			if (p)
				siw_flush_unmap(mem, p);
			return -EFAULT;
		}
		memcpy(&v, &sqe->sge[SIW_SGE_IDX_ATOMIC].laddr, sizeof(v));
		/* one store, ordered after every earlier placement */
		smp_store_release((u64 *)p, v);
		if (mem->pmem_nocache)
			arch_wb_cache_pmem(p, 8);
		siw_flush_unmap(mem, p);
		return 0;
	}
	if ((*siw_sqe_flush_disp(sqe) & RDMAP_FLUSH_DISP_P) &&
	    !mem->pmem_nocache) {
		u32 sel = (*siw_sqe_flush_disp(sqe) &
			   RDMAP_FLUSH_DISP_SEL_MASK) >>
			  RDMAP_FLUSH_DISP_SEL_SHIFT;
		int rv;

		if (sel == RDMAP_FLUSH_SEL_MR)
			rv = siw_flush_wb_range(mem, mem->va, mem->len);
		else
			rv = siw_flush_wb_range(mem, sqe->raddr,
						siw_sqe_flush(sqe)->length);
		if (rv)
			return rv;
	}
	/* earlier placements (and write-backs) before the response */
	wmb();

	return 0;
}

/*
 * siwx_flush_resp_within()
 *
 * Does executing the request of the response @irqe write back at most
 * @max bytes from the CPU caches? An Atomic Write stores 8 bytes; a
 * Flush that is not persistent only orders; a persistent one writes its
 * range back (a whole region, if it selects one, of unknown length
 * here). For the receive path, which may execute a cheap one.
 */
bool siwx_flush_resp_within(struct siw_sqe *irqe, u64 max)
{
	u32 disp = READ_ONCE(*siw_sqe_flush_disp(irqe));

	if (READ_ONCE(irqe->opcode) == SIW_OP_ATOMIC_WRITE_RESPONSE ||
	    !(disp & RDMAP_FLUSH_DISP_P))
		return true;
	if ((disp & RDMAP_FLUSH_DISP_SEL_MASK) >> RDMAP_FLUSH_DISP_SEL_SHIFT !=
	    RDMAP_FLUSH_SEL_RANGE)
		return false;

	return READ_ONCE(siw_sqe_flush(irqe)->length) <= max;
}

/*
 * siw_flush_execute()
 *
 * Execute the Flush or Atomic Write Request a peer sent (turned into
 * the response WQE @wqe by siw_init_flush_resp()) before its response
 * is sent (siw_qp_sq_proc_tx()), checking its target again: the region
 * may have changed since the request was received.
 *
 * Returns 0, or a negative value with a Terminate initiated.
 */
int siw_flush_execute(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_mem *mem;
	u8 etype, ecode;
	int rv;

	rv = siw_flush_check_irqe(qp, &wqe->sqe, &mem, &etype, &ecode);
	if (!rv) {
		rv = siw_flush_do(wqe, mem);
		siw_mem_put(mem);
		if (rv) {
			etype = RDMAP_ETYPE_REMOTE_OPERATION;
			ecode = RDMAP_ECODE_CATASTROPHIC_STREAM;
		}
	}
	if (rv) {
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP, etype, ecode, 1);
		return rv;
	}
	wqe->bytes = 0;

	return 0;
}
