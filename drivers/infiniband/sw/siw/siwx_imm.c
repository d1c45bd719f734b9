// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: RFC 7306 Immediate Data and RDMA Write with Immediate for siw.
 *
 * Requester: an RDMA Write with Immediate is one WQE sent as two
 * messages, the RDMA Write, then the Immediate Data message (RDMAP
 * opcode 0x8, 0x9 with Solicited Event; untagged, QN 0, exactly the
 * 8 bytes of Immediate Data), the latter as a short FPDU.
 *
 * Responder: the Immediate Data message takes a receive WQE, which
 * completes with the Immediate Data and the length of the RDMA Write
 * message received right before it.
 *
 * The hooks calling into this file are in siw_qp_rx.c, siw_qp_tx.c,
 * siw_qp.c and siw_verbs.c; the prototypes are in siw.h.
 */

#include <linux/errno.h>
#include <linux/types.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siw_verbs.h"
#include "siw_mem.h"

/*
 * siw_write_imm_wr_to_sqe()
 *
 * RDMA Write with Immediate (siw_post_send()): an RDMA Write followed
 * by an RFC 7306 Immediate Data message. The 64-bit Immediate Data in
 * the last SGE slot; the verbs 32-bit value is its low half.
 */
int siw_write_imm_wr_to_sqe(const struct ib_send_wr *wr, struct siw_sqe *sqe)
{
	if (wr->send_flags & IB_SEND_INLINE) {
		int i, bytes = 0;

		for (i = 0; i < wr->num_sge; i++)
			bytes += wr->sg_list[i].length;
		if (bytes > SIW_MAX_INLINE_IMM)
			return -EINVAL;
		if (siw_copy_inline_sgl(wr, sqe) < 0)
			return -EINVAL;
		sqe->flags |= SIW_WQE_INLINE;
		sqe->num_sge = 1;
	} else {
		if (wr->num_sge > SIW_MAX_SGE_IMM)
			return -EINVAL;
		siw_copy_sgl(wr->sg_list, &sqe->sge[0], wr->num_sge);
		sqe->num_sge = wr->num_sge;
	}
	if (wr->send_flags & IB_SEND_SOLICITED)
		sqe->flags |= SIW_WQE_SOLICITED;

	sqe->sge[SIW_SGE_IDX_IMM].laddr = be32_to_cpu(wr->ex.imm_data);
	sqe->raddr = rdma_wr(wr)->remote_addr;
	sqe->rkey = rdma_wr(wr)->rkey;
	sqe->opcode = SIW_OP_WRITE_WITH_IMM;

	return 0;
}

/*
 * siw_write_imm_sqe_valid()
 *
 * A write with immediate SQE (siw_activate_tx_from_sq()): the last
 * SGE slot holds the Immediate Data.
 */
bool siw_write_imm_sqe_valid(const struct siw_sqe *sqe)
{
	return sqe->flags & SIW_WQE_INLINE ?
	       sqe->sge[0].length <= SIW_MAX_INLINE_IMM :
	       sqe->num_sge <= SIW_MAX_SGE_IMM;
}

/*
 * siw_proc_imm_data:
 *
 * Check an inbound RFC 7306 Immediate Data message (QN 0, MSN of the
 * Send queue, exactly 8 bytes: the FPDU header length includes them)
 * and take the receive WQE it consumes. The receive completes with
 * the Immediate Data once the FPDU completed (siw_imm_data_complete()).
 */
int siw_proc_imm_data(struct siw_qp *qp)
{
	struct siw_wqe *wqe;
	int rv;

	rv = siw_check_untagged_hdr(qp, RDMAP_UNTAGGED_QN_SEND);
	if (rv)
		return rv;

	wqe = siw_rqe_get(qp);
	if (unlikely(!wqe)) {
		siw_init_terminate(qp, TERM_ERROR_LAYER_DDP,
				   DDP_ETYPE_UNTAGGED_BUF,
				   DDP_ECODE_UT_INVALID_MSN_NOBUF, 0);
		return -ENOENT;
	}
	wqe->rqe.flags = 0;

	return 0;
}

/*
 * siw_imm_track_write()
 *
 * On completion of every inbound message (siw_rdmap_complete()): an
 * Immediate Data message reports the length of the RDMA Write message
 * right before it, if no other inbound message came in between.
 */
void siw_imm_track_write(struct siw_rx_stream *srx, u8 opcode, int error)
{
	if (opcode == RDMAP_RDMA_WRITE) {
		srx->last_write_len = error ? 0 : srx->write_rcvd;
		srx->write_rcvd = 0;
	} else if (opcode != RDMAP_IMM_DATA && opcode != RDMAP_IMM_DATA_SE &&
		   opcode != RDMAP_RDMA_READ_RESP &&
		   opcode != RDMAP_ATOMIC_RESP) {
		srx->last_write_len = 0;
	}
}

/*
 * siw_imm_data_complete()
 *
 * Complete the receive WQE @wqe an inbound Immediate Data message
 * (@opcode RDMAP_IMM_DATA or RDMAP_IMM_DATA_SE) took, with the
 * Immediate Data (siw_rdmap_complete()).
 */
int siw_imm_data_complete(struct siw_qp *qp, struct siw_wqe *wqe, u8 opcode,
			  int error)
{
	struct siw_rx_stream *srx = &qp->rx_stream;
	enum siw_wc_status wc_status = wqe->wc_status;
	int rv;

	if (opcode == RDMAP_IMM_DATA_SE)
		wqe->rqe.flags |= SIW_WQE_SOLICITED;

	if (wqe->wr_status == SIW_WR_IDLE)
		return 0;

	srx->ddp_msn[RDMAP_UNTAGGED_QN_SEND]++;

	if (error != 0 && wc_status == SIW_WC_SUCCESS)
		wc_status = SIW_WC_GENERAL_ERR;

	rv = siw_rqe_complete_imm(qp, &wqe->rqe, srx->last_write_len, 0, true,
				  be64_to_cpu(srx->hdr.imm_data.imm),
				  wc_status);
	srx->last_write_len = 0;
	siw_wqe_put_mem(wqe, SIW_OP_RECEIVE);

	return rv;
}

/*
 * RFC 7306 Immediate Data message of an RDMA Write with Immediate:
 * untagged, QN 0, the 64-bit Immediate Data as the only payload.
 */
static void siw_prepare_imm_data(struct siw_iwarp_tx *c_tx,
				 struct siw_wqe *wqe)
{
	struct iwarp_imm_data *imm = &c_tx->pkt.imm_data;
	enum rdma_opcode op = tx_flags(wqe) & SIW_WQE_SOLICITED ?
		RDMAP_IMM_DATA_SE : RDMAP_IMM_DATA;

	memcpy(&imm->ctrl, &iwarp_pktinfo[op].ctrl, sizeof(struct iwarp_ctrl));
	imm->rsvd = 0;
	imm->ddp_qn = htonl(RDMAP_UNTAGGED_QN_SEND);
	imm->ddp_msn = htonl(++c_tx->ddp_msn[RDMAP_UNTAGGED_QN_SEND]);
	imm->ddp_mo = 0;
	imm->imm = cpu_to_be64(wqe->sqe.sge[SIW_SGE_IDX_IMM].laddr);

	c_tx->ctrl_len = sizeof(struct iwarp_imm_data);
}

/*
 * siw_prepare_write_imm()
 *
 * Start an RDMA Write with Immediate (siw_qp_prepare_tx()). Returns
 * true if it has zero length: its Immediate Data message, prepared
 * here, is all there is to send. Else the RDMA Write goes first, see
 * siw_tx_imm_follows().
 */
bool siw_prepare_write_imm(struct siw_iwarp_tx *c_tx, struct siw_wqe *wqe)
{
	if (!wqe->bytes) {
		c_tx->imm_phase = 1;
		siw_prepare_imm_data(c_tx, wqe);
		return true;
	}
	c_tx->imm_phase = 0;

	return false;
}

/*
 * siw_tx_imm_follows()
 *
 * After the RDMA Write part of an RDMA Write with Immediate went
 * out, prepare its Immediate Data message as a short FPDU.
 * Returns 1 if that message is to be sent, 0 if the WQE is done.
 */
int siw_tx_imm_follows(struct siw_iwarp_tx *c_tx, struct siw_wqe *wqe)
{
	__be32 *crc = &c_tx->pkt.imm_data_pkt.crc;

	if (tx_type(wqe) != SIW_OP_WRITE_WITH_IMM || c_tx->imm_phase)
		return 0;

	c_tx->imm_phase = 1;
	siw_prepare_imm_data(c_tx, wqe);

	*crc = 0;
	if (c_tx->mpa_crc_hd &&
	    crypto_shash_digest(c_tx->mpa_crc_hd, (u8 *)&c_tx->pkt,
				c_tx->ctrl_len, (u8 *)crc) != 0)
		return -EINVAL;

	c_tx->ctrl_len += MPA_CRC_SIZE;
	c_tx->ctrl_sent = 0;
	c_tx->state = SIW_SEND_SHORT_FPDU;

	return 1;
}
