// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: RFC 7306 Atomic Operations for siw.
 *
 * Requester: an atomic work request becomes an Atomic Request (RDMAP
 * opcode 0xA, QN 1, sharing the MSN space of Read Requests) which takes
 * an ORQ entry like a Read Request; the Atomic Response (0xB, QN 3)
 * places the original value into the 8-byte local buffer.
 *
 * Responder: an Atomic Request is checked on receipt, queued in the
 * IRQ behind earlier Read Responses, executed by the transmit path
 * (checking its target again) and answered with an Atomic Response.
 *
 * The hooks calling into this file are in siw_qp_rx.c, siw_qp_tx.c,
 * siw_qp.c and siw_verbs.c; the prototypes are in siw.h.
 */

#include <linux/errno.h>
#include <linux/types.h>
#include <linux/highmem.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siw_verbs.h"
#include "siw_mem.h"

/*
 * siw_mem_kmap()
 *
 * Map the kernel view of @len bytes at @addr of @mem, not crossing
 * a page or PBL buffer boundary. The caller has checked the interval
 * with siw_check_mem(). Returns NULL if the interval is not
 * contiguous in kernel memory. Release with siw_mem_kunmap().
 */
static void *siw_mem_kmap(struct siw_mem *mem, u64 addr, int len)
{
	struct page *p;

	if (!mem->mem_obj)
		return ib_virt_dma_to_ptr(addr);

	if (mem->is_pbl) {
		int buf_len;
		dma_addr_t buf = siw_pbl_get_buffer(mem->pbl, addr - mem->va,
						    &buf_len, NULL);

		if (!buf || buf_len < len)
			return NULL;
		return ib_virt_dma_to_ptr(buf);
	}
	p = siw_get_upage(mem->umem, addr);
	if (!p || offset_in_page(addr) + len > PAGE_SIZE)
		return NULL;
	return kmap_local_page(p) + offset_in_page(addr);
}

static void siw_mem_kunmap(struct siw_mem *mem, void *kaddr)
{
	if (mem->mem_obj && !mem->is_pbl)
		kunmap_local(kaddr);
}

/*
 * siw_mem_write()
 *
 * Copy @len bytes from @buf to @addr of @mem, which the caller has
 * checked with siw_check_mem().
 */
static int siw_mem_write(struct siw_mem *mem, u64 addr, const void *buf,
			 int len)
{
	while (len) {
		int chunk = min_t(int, len, PAGE_SIZE - offset_in_page(addr));
		void *dst;

		if (mem->mem_obj && mem->is_pbl) {
			int buf_len;

			siw_pbl_get_buffer(mem->pbl, addr - mem->va, &buf_len,
					   NULL);
			chunk = min(chunk, buf_len);
		}
		dst = chunk > 0 ? siw_mem_kmap(mem, addr, chunk) : NULL;
		if (!dst)
			return -EFAULT;
		memcpy(dst, buf, chunk);
		siw_mem_kunmap(mem, dst);

		buf += chunk;
		addr += chunk;
		len -= chunk;
	}
	return 0;
}

/*
 * siw_atomic_check_target()
 *
 * Check the target of an inbound Atomic Request: 64-bit aligned, named
 * by a valid STag (index and key) of the QP's PD, in bounds, granting
 * REMOTE_ATOMIC. On success, *@mem holds a reference to the region.
 * Returns 0, or -EINVAL with the Terminate's error type and code set.
 */
static int siw_atomic_check_target(struct siw_qp *qp, u32 stag, u64 addr,
				   struct siw_mem **mem, u8 *etype, u8 *ecode)
{
	struct siw_sge sge = { .laddr = addr, .length = 8, .lkey = stag };
	int rv;

	*mem = NULL;
	if (addr & 7) {
		*etype = RDMAP_ETYPE_REMOTE_OPERATION;
		*ecode = RDMAP_ECODE_CATASTROPHIC_STREAM;
		return -EINVAL;
	}
	rv = siw_check_sge(qp->pd, &sge, mem, IB_ACCESS_REMOTE_ATOMIC, 0, 8);
	if (rv) {
		*etype = RDMAP_ETYPE_REMOTE_PROTECTION;
		*ecode = siw_rdmap_error(-rv);
		return -EINVAL;
	}
	return 0;
}

/*
 * siw_atomic_wr_to_sqe()
 *
 * An RFC 7306 atomic work request (siw_post_send()): the 8-byte local
 * buffer receiving the original value in sge[0], the operands
 * overlaying sge[1..2].
 */
int siw_atomic_wr_to_sqe(const struct ib_send_wr *wr, struct siw_sqe *sqe)
{
	const struct ib_atomic_wr *awr = atomic_wr(wr);
	struct siw_sqe_atomic *op = siw_sqe_atomic(sqe);

	if (unlikely(wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
		     wr->send_flags & (IB_SEND_INLINE | IB_SEND_FENCE)))
		return -EINVAL;

	siw_copy_sgl(wr->sg_list, &sqe->sge[0], 1);
	sqe->num_sge = 1;
	sqe->raddr = awr->remote_addr;
	sqe->rkey = awr->rkey;

	op->compare_add = awr->compare_add;
	op->swap = awr->swap;
	op->compare_add_mask = awr->compare_add_mask;
	op->swap_mask = awr->swap_mask;

	switch (wr->opcode) {
	case IB_WR_ATOMIC_CMP_AND_SWP:
		sqe->opcode = SIW_OP_COMP_AND_SWAP;
		break;
	case IB_WR_ATOMIC_FETCH_AND_ADD:
		sqe->opcode = SIW_OP_FETCH_AND_ADD;
		break;
	case IB_WR_MASKED_ATOMIC_CMP_AND_SWP:
		sqe->opcode = SIW_OP_MASKED_COMP_AND_SWAP;
		break;
	default:
		sqe->opcode = SIW_OP_MASKED_FETCH_AND_ADD;
		break;
	}
	return 0;
}

/*
 * siw_atomic_sqe_valid()
 *
 * An atomic SQE (siw_activate_tx_from_sq()): one 8-byte local buffer
 * receives the original value.
 */
bool siw_atomic_sqe_valid(const struct siw_sqe *sqe)
{
	return sqe->num_sge == 1 && sqe->sge[0].length == 8 &&
	       !(sqe->flags & SIW_WQE_INLINE);
}

/*
 * siw_proc_atomic_req:
 *
 * Check an inbound RFC 7306 Atomic Request (QN 1, sharing the MSN
 * space of Read Requests). It is queued for execution once the FPDU
 * completed, see siw_init_atomic_resp().
 */
int siw_proc_atomic_req(struct siw_qp *qp)
{
	struct iwarp_atomic_req *req = &qp->rx_stream.hdr.atomic_req;
	u32 aop = be32_to_cpu(req->aopcode) & RDMAP_MASK_AOPCODE;
	int rv;

	rv = siw_check_untagged_hdr(qp, RDMAP_UNTAGGED_QN_RDMA_READ);
	if (rv)
		return rv;

	if (unlikely(aop != RDMAP_AOPCODE_FETCH_ADD &&
		     aop != RDMAP_AOPCODE_CMP_SWAP)) {
		pr_warn_ratelimited("siw: [QP %u]: unknown AOpCode %u\n",
				    qp_id(qp), aop);
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP,
				   RDMAP_ETYPE_REMOTE_OPERATION,
				   RDMAP_ECODE_OPCODE, 0);
		return -EPROTO;
	}
	return 0;
}

/*
 * siw_proc_atomic_resp:
 *
 * Check an inbound RFC 7306 Atomic Response (QN 3): it must answer
 * the oldest outstanding request, which must be an Atomic Request
 * with the same Request Identifier. The original value is placed
 * once the FPDU completed, see siw_atomic_resp_complete().
 */
int siw_proc_atomic_resp(struct siw_qp *qp)
{
	struct iwarp_atomic_resp *resp = &qp->rx_stream.hdr.atomic_resp;
	struct siw_sqe *orqe;
	int rv;

	rv = siw_check_untagged_hdr(qp, RDMAP_UNTAGGED_QN_ATOMIC_RESP);
	if (rv)
		return rv;

	/* make sure ORQ indices are current */
	smp_mb();

	orqe = qp->attrs.orq_size ? orq_get_current(qp) : NULL;
	if (unlikely(!orqe || !(READ_ONCE(orqe->flags) & SIW_WQE_VALID) ||
		     !siw_op_is_atomic(orqe->opcode))) {
		pr_warn_ratelimited("siw: [QP %u]: unexpected Atomic Response\n",
				    qp_id(qp));
		siw_init_terminate(qp, TERM_ERROR_LAYER_DDP,
				   DDP_ETYPE_UNTAGGED_BUF,
				   DDP_ECODE_UT_INVALID_MSN_NOBUF, 0);
		return -EPROTO;
	}
	if (unlikely(*siw_sqe_atomic_req_id(orqe) !=
		     be32_to_cpu(resp->req_id))) {
		pr_warn_ratelimited("siw: [QP %u]: Atomic Response for id %u, expected %u\n",
				    qp_id(qp), be32_to_cpu(resp->req_id),
				    *siw_sqe_atomic_req_id(orqe));
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP,
				   RDMAP_ETYPE_REMOTE_OPERATION,
				   RDMAP_ECODE_CATASTROPHIC_STREAM, 0);
		return -EPROTO;
	}
	return 0;
}

/*
 * siw_init_atomic_resp:
 *
 * Turn a checked inbound Atomic Request into an Atomic Response WQE,
 * executed and sent in order with Read Responses: as the current TX
 * WQE if idle, else at the tail of the IRQ. Atomic Requests consume
 * IRD like Read Requests. The IRQ entry keeps the request's fields
 * as on the wire: swap/swap_mask hold Add or Swap Data/Mask,
 * compare_add/compare_add_mask hold Compare Data/Mask.
 */
int siw_init_atomic_resp(struct siw_qp *qp, struct siw_rx_stream *srx)
{
	struct iwarp_atomic_req *req = &srx->hdr.atomic_req;
	struct siw_wqe *tx_work = tx_wqe(qp);
	struct siw_sqe_atomic *op;
	struct siw_sqe *resp;
	struct siw_mem *mem;
	unsigned long flags;
	int run_sq = 1, rv = 0;
	u8 etype, ecode;

	/*
	 * Check the target on receipt, so that a refused request ends
	 * the stream before any later message is processed.
	 */
	rv = siw_atomic_check_target(qp, be32_to_cpu(req->stag),
				     be64_to_cpu(req->to), &mem, &etype,
				     &ecode);
	if (rv) {
		siw_dbg_qp(qp, "atomic target refused: type %u, code %u\n",
			   etype, ecode);
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
		resp->opcode = SIW_OP_ATOMIC_RESPONSE;
		resp->num_sge = 0;
		resp->rkey = be32_to_cpu(req->stag);
		resp->raddr = be64_to_cpu(req->to);

		op = siw_sqe_atomic(resp);
		op->swap = be64_to_cpu(req->add_swap);
		op->swap_mask = be64_to_cpu(req->add_swap_mask);
		op->compare_add = be64_to_cpu(req->compare);
		op->compare_add_mask = be64_to_cpu(req->compare_mask);

		*siw_sqe_atomic_aopcode(resp) =
			be32_to_cpu(req->aopcode) & RDMAP_MASK_AOPCODE;
		*siw_sqe_atomic_req_id(resp) = be32_to_cpu(req->req_id);
		*siw_sqe_atomic_msn(resp) = be32_to_cpu(req->ddp_msn);

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
 * siw_atomic_resp_complete:
 *
 * Place the original value the Atomic Response just received returned
 * into the 8-byte local buffer of the oldest ORQ entry and complete it.
 * Returns 0, the caller then checks the TX fence, or -EINVAL with the
 * entry retired: the QP goes to error, the rest is flushed.
 */
int siw_atomic_resp_complete(struct siw_qp *qp)
{
	u64 orig = be64_to_cpu(qp->rx_stream.hdr.atomic_resp.orig_value);
	struct siw_sqe *orqe = orq_get_current(qp);
	struct siw_mem *mem = NULL;
	enum siw_wc_status status = SIW_WC_SUCCESS;
	struct siw_sqe done;
	unsigned long flags;
	int rv;

	rv = siw_check_sge(qp->pd, &orqe->sge[0], &mem, IB_ACCESS_LOCAL_WRITE,
			   0, 8);
	if (!rv) {
		rv = siw_mem_write(mem, orqe->sge[0].laddr, &orig, 8);
		siw_mem_put(mem);
	}
	if (rv) {
		siw_dbg_qp(qp, "atomic result buffer: %d\n", rv);
		status = SIW_WC_LOC_PROT_ERR;
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP,
				   RDMAP_ETYPE_CATASTROPHIC,
				   RDMAP_ECODE_UNSPECIFIED, 0);
	}
	done = *orqe;

	if ((done.flags & SIW_WQE_SIGNALLED) || status != SIW_WC_SUCCESS)
		siw_sqe_complete(qp, &done, 8, status);

	if (status == SIW_WC_SUCCESS)
		return 0;

	/* Retire the entry: the QP goes to error, the rest is flushed */
	spin_lock_irqsave(&qp->orq_lock, flags);
	WRITE_ONCE(orqe->flags, 0);
	qp->orq_get++;
	spin_unlock_irqrestore(&qp->orq_lock, flags);

	return -EINVAL;
}

/*
 * siw_term_rx_status()
 *
 * Work completion status for the oldest outstanding Read or Atomic
 * Request, from a Terminate the peer sent (siw_proc_terminate()).
 */
void siw_term_rx_status(struct siw_qp *qp, struct iwarp_terminate *term)
{
	u8 layer = __rdmap_term_layer(term), etype = __rdmap_term_etype(term);

	/*
	 * Remote Protection errors are access errors; every other error
	 * the peer found in our request or stream (Remote Operation, DDP,
	 * LLP) is an invalid request. The latter includes the 'invalid
	 * opcode' Terminate of upstream siw, whose control field reads
	 * as an LLP error (see Documentation/wire.md).
	 */
	if (layer == TERM_ERROR_LAYER_RDMAP &&
	    etype == RDMAP_ETYPE_REMOTE_PROTECTION)
		qp->term_rx_status = SIW_WC_REM_ACCESS_ERR;
	else
		qp->term_rx_status = SIW_WC_REM_INV_REQ_ERR;
}

/*
 * Rebuild the Atomic Request a peer sent from the IRQ entry it was
 * turned into (see siw_init_atomic_resp()), for a Terminate reporting
 * an error found when executing it.
 */
static void siw_atomic_req_from_irqe(struct iwarp_atomic_req *req,
				     struct siw_sqe *irqe)
{
	struct siw_sqe_atomic *op = siw_sqe_atomic(irqe);

	memcpy(&req->ctrl, &iwarp_pktinfo[RDMAP_ATOMIC_REQ].ctrl,
	       sizeof(struct iwarp_ctrl));
	req->rsvd = 0;
	req->ddp_qn = htonl(RDMAP_UNTAGGED_QN_RDMA_READ);
	req->ddp_msn = htonl(*siw_sqe_atomic_msn(irqe));
	req->ddp_mo = 0;
	req->aopcode = htonl(*siw_sqe_atomic_aopcode(irqe));
	req->req_id = htonl(*siw_sqe_atomic_req_id(irqe));
	req->stag = htonl(irqe->rkey);
	req->to = cpu_to_be64(irqe->raddr);
	req->add_swap = cpu_to_be64(op->swap);
	req->add_swap_mask = cpu_to_be64(op->swap_mask);
	req->compare = cpu_to_be64(op->compare_add);
	req->compare_mask = cpu_to_be64(op->compare_add_mask);
}

/*
 * siw_atomic_term_hdr()
 *
 * For a Terminate reporting an RDMAP error (not catastrophic) in an
 * inbound Atomic Request (siw_send_terminate()): the request's headers
 * to attach, or NULL if the error is not about an Atomic Request.
 * Refused when executing it, the request is rebuilt into @err_hdr;
 * refused on receipt, its header has been received completely.
 */
union iwarp_hdr *siw_atomic_term_hdr(struct siw_qp *qp,
				     union iwarp_hdr *err_hdr)
{
	union iwarp_hdr *rx_hdr = &qp->rx_stream.hdr;

	if (qp->term_info.in_tx &&
	    tx_type(tx_wqe(qp)) == SIW_OP_ATOMIC_RESPONSE) {
		siw_atomic_req_from_irqe(&err_hdr->atomic_req,
					 &tx_wqe(qp)->sqe);
		return err_hdr;
	}
	if (!qp->term_info.in_tx &&
	    qp->term_info.ecode != RDMAP_ECODE_VERSION &&
	    __rdmap_get_opcode(&rx_hdr->ctrl) == RDMAP_ATOMIC_REQ)
		return rx_hdr;

	return NULL;
}

/*
 * siw_activate_atomic_resp()
 *
 * Make the Atomic Response IRQ entry @irqe the current TX WQE, to be
 * executed at transmit (siw_activate_tx()). Returns 1.
 */
int siw_activate_atomic_resp(struct siw_qp *qp, struct siw_sqe *irqe)
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
 * siw_prepare_atomic_req()
 *
 * Atomic Operation Request (RFC 7306, section 5.2.1). The unmasked
 * verbs operations are the masked ones with the masks that make
 * them plain 64-bit operations.
 */
void siw_prepare_atomic_req(struct siw_iwarp_tx *c_tx, struct siw_wqe *wqe)
{
	struct iwarp_atomic_req *req = &c_tx->pkt.atomic_req;
	struct siw_sqe_atomic *op = siw_sqe_atomic(&wqe->sqe);
	u8 opcode = tx_type(wqe);

	memcpy(&req->ctrl, &iwarp_pktinfo[RDMAP_ATOMIC_REQ].ctrl,
	       sizeof(struct iwarp_ctrl));
	req->rsvd = 0;
	req->ddp_qn = htonl(RDMAP_UNTAGGED_QN_RDMA_READ);
	req->ddp_msn = htonl(++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_RDMA_READ]);
	req->ddp_mo = 0;
	req->req_id = htonl(*siw_sqe_atomic_req_id(&wqe->sqe));
	req->stag = htonl(wqe->sqe.rkey);
	req->to = cpu_to_be64(wqe->sqe.raddr);

	if (opcode == SIW_OP_FETCH_AND_ADD ||
	    opcode == SIW_OP_MASKED_FETCH_AND_ADD) {
		req->aopcode = htonl(RDMAP_AOPCODE_FETCH_ADD);
		req->add_swap = cpu_to_be64(op->compare_add);
		req->add_swap_mask = opcode == SIW_OP_FETCH_AND_ADD ?
			0 : cpu_to_be64(op->compare_add_mask);
		req->compare = 0;
		req->compare_mask = 0;
	} else {
		bool masked = opcode == SIW_OP_MASKED_COMP_AND_SWAP;

		req->aopcode = htonl(RDMAP_AOPCODE_CMP_SWAP);
		req->add_swap = cpu_to_be64(op->swap);
		req->add_swap_mask = masked ? cpu_to_be64(op->swap_mask) :
					      cpu_to_be64(~0ULL);
		req->compare = cpu_to_be64(op->compare_add);
		req->compare_mask = masked ?
			cpu_to_be64(op->compare_add_mask) : cpu_to_be64(~0ULL);
	}
	c_tx->ctrl_len = sizeof(struct iwarp_atomic_req);
}

/*
 * siw_prepare_atomic_resp()
 *
 * Atomic Operation Response (RFC 7306, section 5.2.2) carrying the
 * original value siw_atomic_execute() kept.
 */
void siw_prepare_atomic_resp(struct siw_iwarp_tx *c_tx, struct siw_wqe *wqe)
{
	struct iwarp_atomic_resp *resp = &c_tx->pkt.atomic_resp;

	memcpy(&c_tx->pkt.ctrl, &iwarp_pktinfo[RDMAP_ATOMIC_RESP].ctrl,
	       sizeof(struct iwarp_ctrl));

	resp->rsvd = 0;
	resp->ddp_qn = htonl(RDMAP_UNTAGGED_QN_ATOMIC_RESP);
	resp->ddp_msn = htonl(++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_ATOMIC_RESP]);
	resp->ddp_mo = 0;
	resp->req_id = htonl(*siw_sqe_atomic_req_id(&wqe->sqe));
	/* original value, as kept by siw_atomic_execute() */
	resp->orig_value = cpu_to_be64(wqe->sqe.sge[0].laddr);

	c_tx->ctrl_len = sizeof(struct iwarp_atomic_resp);
}

/*
 * Add @b to @a, the carry out of each bit set in @boundary cut:
 * the RFC 7306 FetchAdd Add Mask.
 */
static u64 siw_masked_add(u64 a, u64 b, u64 boundary)
{
	u64 sum = a ^ b, carry = a & b & ~boundary;

	while (carry) {
		u64 cin = carry << 1;

		carry = sum & cin & ~boundary;
		sum ^= cin;
	}
	return sum;
}

/*
 * siw_atomic_rmw()
 *
 * The read-modify-write of the Atomic Request in @wqe: a
 * compare-and-exchange loop on the word, atomic against every other
 * QP of the device (and any other writer using atomic instructions),
 * whatever memory region maps the page. Nothing is written unless all
 * checks pass. Keeps the original value in sge[0].laddr.
 *
 * Returns 0, or a negative value with the Terminate's error type and
 * code set.
 */
static int siw_atomic_rmw(struct siw_qp *qp, struct siw_wqe *wqe,
			  u8 *etype, u8 *ecode)
{
	struct siw_sqe_atomic *op = siw_sqe_atomic(&wqe->sqe);
	struct siw_mem *mem = NULL;
	u64 *p, old, new;
	int rv;

	/* Checked on receipt already; the region may have changed since */
	rv = siw_atomic_check_target(qp, wqe->sqe.rkey, wqe->sqe.raddr, &mem,
				     etype, ecode);
	if (rv)
		return rv;

	p = siw_mem_kmap(mem, wqe->sqe.raddr, 8);
	if (!p) {
		siw_mem_put(mem);
		*etype = RDMAP_ETYPE_REMOTE_OPERATION;
		*ecode = RDMAP_ECODE_CATASTROPHIC_STREAM;
		return -EFAULT;
	}
	old = READ_ONCE(*p);

	if (*siw_sqe_atomic_aopcode(&wqe->sqe) == RDMAP_AOPCODE_FETCH_ADD) {
		do {
			new = siw_masked_add(old, op->swap, op->swap_mask);
		} while (!try_cmpxchg64(p, &old, new));
	} else {
		do {
			if ((old & op->compare_add_mask) !=
			    (op->compare_add & op->compare_add_mask))
				break;
			new = (old & ~op->swap_mask) |
			      (op->swap & op->swap_mask);
		} while (!try_cmpxchg64(p, &old, new));
	}
	siw_mem_kunmap(mem, p);
	siw_mem_put(mem);

	wqe->sqe.sge[0].laddr = old;

	return 0;
}

/*
 * siw_atomic_execute()
 *
 * Execute the Atomic Request a peer sent (turned into the Atomic
 * Response WQE @wqe by siw_init_atomic_resp()) before its response is
 * sent (siw_qp_sq_proc_tx()). The target must be 64-bit aligned, named
 * by a valid STag of the QP's PD, in bounds, and grant REMOTE_ATOMIC.
 *
 * Returns 0, or a negative value with a Terminate initiated.
 */
int siw_atomic_execute(struct siw_qp *qp, struct siw_wqe *wqe)
{
	u8 etype, ecode;
	int rv;

	rv = siw_atomic_rmw(qp, wqe, &etype, &ecode);
	if (rv) {
		siw_init_terminate(qp, TERM_ERROR_LAYER_RDMAP, etype, ecode, 1);
		return rv;
	}
	wqe->bytes = 0;

	return 0;
}
