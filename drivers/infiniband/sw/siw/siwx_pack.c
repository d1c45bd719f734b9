// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: the small FPDUs of back-to-back messages packed into one TCP
 * segment.
 *
 * siw hands each message's last FPDU to TCP without MSG_MORE (and with
 * MSG_EOR): with TCP_NODELAY, every small message is a packet of its own,
 * also when the next work request or Read Response is already queued and
 * goes out right behind it. When another one follows at once, the FPDU
 * is sent with MSG_MORE instead, so that TCP puts the small FPDUs of
 * several messages into one segment (RFC 5044, section 8: a segment holds
 * one or more complete FPDUs), if the first FPDU of the next message fits
 * into the rest of the segment (a large one would push it at once). An
 * FPDU that would not fit into the rest of the segment being packed
 * pushes that segment first, so every
 * segment still starts with an FPDU; when the send queue stops (empty,
 * ORQ full, fenced, out of burst credit), whatever is packed is pushed.
 * Latency is not affected: an FPDU waits only for the one that is sent
 * right behind it.
 *
 * The hooks calling into this file are in siw_qp_tx.c, the prototypes
 * in siw.h. Module parameter tx_pack (default Y) turns it off.
 */

#include <linux/net.h>
#include <linux/sizes.h>
#include <linux/tcp.h>
#include <net/tcp.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siwx.h"

static bool siw_tx_pack = true;
module_param_named(tx_pack, siw_tx_pack, bool, 0644);
MODULE_PARM_DESC(tx_pack,
		 "Pack the small FPDUs of back-to-back messages into one TCP segment (default: Y)");

/* bytes on the wire of the FPDU prepared in @c_tx */
static unsigned int siwx_fpdu_len(struct siw_iwarp_tx *c_tx)
{
	return ALIGN(MPA_HDR_SIZE + be16_to_cpu(c_tx->pkt.ctrl.mpa_len), 4) +
	       MPA_CRC_SIZE;
}

/*
 * siwx_sqe_payload()
 *
 * The payload bytes of @sqe (at most 1 GiB) if it is a Send or an RDMA
 * Write, with or without Immediate Data, or -1 for any other work
 * request: a request without payload, a local operation. Only a hint:
 * a user may rewrite its send queue entry meanwhile.
 */
int siwx_sqe_payload(const struct siw_sqe *sqe)
{
	unsigned int i, n = 1;
	u64 len = 0;

	switch (READ_ONCE(sqe->opcode)) {
	case SIW_OP_SEND:
	case SIW_OP_SEND_WITH_IMM:
	case SIW_OP_SEND_REMOTE_INV:
	case SIW_OP_WRITE:
	case SIW_OP_WRITE_WITH_IMM:
		break;
	default:
		return -1;
	}
	if (!(READ_ONCE(sqe->flags) & SIW_WQE_INLINE))
		n = min_t(unsigned int, READ_ONCE(sqe->num_sge), SIW_MAX_SGE);
	for (i = 0; i < n; i++)
		len += READ_ONCE(sqe->sge[i].length);

	return min_t(u64, len, SZ_1G);
}

/*
 * The payload bytes of the first FPDU of what is sent next, if a work
 * request or response is ready (the inbound read queue first, as
 * siw_activate_tx() takes it), or -1. Only a hint for the decision to
 * pack: a user may rewrite its send queue entry meanwhile.
 */
static int siwx_tx_next_len(struct siw_qp *qp)
{
	struct siw_sqe *sqe;

	if (qp->attrs.irq_size) {
		sqe = &qp->irq[qp->irq_get % qp->attrs.irq_size];
		if (READ_ONCE(sqe->flags) & SIW_WQE_VALID) {
			if (READ_ONCE(sqe->opcode) != SIW_OP_READ_RESPONSE)
				return 0;	/* an atomic or Flush response */
			return min_t(u64, READ_ONCE(sqe->sge[0].length),
				     SZ_1G);
		}
	}
	if (siw_sq_empty(qp))
		return -1;
	/* a request or a local operation: no payload */
	return max(siwx_sqe_payload(&qp->sendq[qp->sq_get %
						qp->attrs.sq_size]), 0);
}

static void siwx_tx_push(struct siw_qp *qp)
{
	struct socket *s = qp->attrs.sk;

	if (s && s->sk)
		tcp_sock_set_nodelay(s->sk);
	qp->tx_ctx.pack_off = 0;
	qp->tx_ctx.pack_more = 0;
}

/*
 * siwx_tx_pack()
 *
 * The FPDU prepared in the transmit context is about to be sent, none of
 * it yet. Pushes the segment being packed if the FPDU does not fit into
 * it, and decides whether it is sent with MSG_MORE (pack_more) to share
 * its segment with the FPDU that follows it.
 */
void siwx_tx_pack(struct siw_qp *qp, struct socket *s, int burst_len)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	struct siw_wqe *wqe = &c_tx->wqe_active;
	unsigned int mss = tcp_sk(s->sk)->mss_cache, len;

	c_tx->pack_open = 1;
	/* the FPDU before went without MSG_MORE: its segment is closed */
	if (!c_tx->pack_more)
		c_tx->pack_off = 0;
	c_tx->pack_more = 0;
	if (!mss)
		return;

	len = siwx_fpdu_len(c_tx);
	if (c_tx->pack_off && c_tx->pack_off + len > mss)
		siwx_tx_push(qp);
	if (!READ_ONCE(siw_tx_pack) || siw_tcp_nagle)
		return;
	c_tx->pack_off = (c_tx->pack_off + len) % mss;
	if (!c_tx->pack_off)
		return;	/* fills the segment, which TCP sends */

	if (tx_type(wqe) == SIW_OP_WRITE_WITH_IMM && !c_tx->imm_phase)
		/* its Immediate Data message follows; siw sends MSG_MORE */
		c_tx->pack_more = 1;
	else if ((c_tx->state == SIW_SEND_SHORT_FPDU ||
		  c_tx->pkt.ctrl.ddp_rdmap_ctrl & DDP_FLAG_LAST) &&
		 burst_len > 1) {
		/* only if the next one fits: else it would push this one */
		unsigned int room = mss - c_tx->pack_off;
		int next = siwx_tx_next_len(qp);

		if (next >= 0 && room > SIWX_FPDU_OVERHEAD &&
		    next <= room - SIWX_FPDU_OVERHEAD)
			c_tx->pack_more = 1;
	}
}

/*
 * siwx_tx_pack_done()
 *
 * The send queue stops being processed: if the last FPDU sent waits in
 * TCP for one that did not come, push it.
 */
void siwx_tx_pack_done(struct siw_qp *qp)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;

	if (c_tx->pack_more && !c_tx->pack_open)
		siwx_tx_push(qp);
}
