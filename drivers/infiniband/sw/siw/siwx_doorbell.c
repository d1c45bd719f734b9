// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: a user send queue that streams is handed to siw_tx on another CPU.
 *
 * libsiw rings the doorbell (a post_send system call without work
 * requests) when it posts to a send queue whose last work request the
 * kernel has taken, and siw_post_send() then processes the queue in that
 * system call. For a single message that is the shortest path. An
 * application that streams small messages finds the queue idle at every
 * post, though, because its own system call has just drained it: one
 * system call, one sendmsg() and at least one TCP segment per message,
 * and nothing runs beside the application (on a veth pair, the peer's
 * receive processing runs in that system call too).
 *
 * A doorbell comes from such a stream if all of these hold:
 *  - it comes sooner after the send queue went idle than half of what
 *    processing the queue in the system call took on average (a moving
 *    average of the last passes);
 *  - the peer has sent the application no data since (a Send, an RDMA
 *    Write, Immediate Data, an Atomic Write): in a ping-pong the
 *    application posts the next message once the peer's arrived, often
 *    within that short time, because on a veth pair the peer's answer
 *    can arrive within the sender's own system call;
 *  - the application has not consumed the completion of its last work
 *    request: one that waits for each completion before it posts again
 *    does not stream either;
 *  - the first work request's FPDU can share a TCP segment with another
 *    (at most half of one) or its message fills several: a stream of
 *    messages of one FPDU each too large for that gains nothing from
 *    packing, and siw_tx then carries alone what the system call
 *    carried (measured: 1 KiB Writes and Sends at 0.67-0.98 of their
 *    rate without the handover).
 * Such a queue is handed to the siw_tx thread of another CPU and the
 * system call returns at once: the application posts on while siw_tx
 * sends, libsiw rings no doorbell while the queue is busy, and siw_tx
 * finds several work requests per pass, whose small FPDUs tx_pack packs
 * into full segments. Any other doorbell is processed in the system
 * call as before. Nothing changes on the wire.
 *
 * Module parameter tx_defer: 0 never hands over (upstream siw), 1 when
 * the queue streams (default), 2 always (experiments). A machine with
 * one CPU with a transmit thread never hands over.
 *
 * The hooks calling into this file are in siw_verbs.c (siw_post_send()),
 * siw_qp_tx.c (a work request sent, the end of a pass of siw_tx;
 * siw_sq_queue() there queues a QP to the transmit thread of a given
 * CPU, once), siw_qp.c (a completion written) and siw_qp_rx.c (a message
 * received), the prototypes in siw.h.
 */

#include <linux/cpumask.h>
#include <linux/moduleparam.h>
#include <linux/sched/clock.h>
#include <linux/smp.h>
#include <linux/tcp.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siwx.h"

enum {
	SIWX_TX_DEFER_NEVER,
	SIWX_TX_DEFER_STREAM,
	SIWX_TX_DEFER_ALWAYS,
};

static unsigned int siwx_tx_defer = SIWX_TX_DEFER_STREAM;

static int siwx_tx_defer_set(const char *val, const struct kernel_param *kp)
{
	unsigned int v;
	int rv = kstrtouint(val, 0, &v);

	if (rv)
		return rv;
	if (v > SIWX_TX_DEFER_ALWAYS)
		return -EINVAL;
	WRITE_ONCE(siwx_tx_defer, v);
	return 0;
}

static const struct kernel_param_ops siwx_tx_defer_ops = {
	.set = siwx_tx_defer_set,
	.get = param_get_uint,
};

module_param_cb(tx_defer, &siwx_tx_defer_ops, &siwx_tx_defer, 0644);
MODULE_PARM_DESC(tx_defer,
		 "Hand a streaming user send queue to siw_tx on another CPU: 0 never, 1 when it streams, 2 always (default: 1)");

/*
 * siwx_tx_defer_cpu()
 *
 * A CPU other than this one with a transmit thread, the QP's own if it
 * is one, or -1.
 */
static int siwx_tx_defer_cpu(struct siw_qp *qp)
{
	int me = raw_smp_processor_id(), cpu = qp->tx_cpu;

	if (cpu != me && cpu_online(cpu) && siw_tx_thread[cpu])
		return cpu;

	for_each_online_cpu(cpu)
		if (cpu != me && siw_tx_thread[cpu])
			return cpu;
	return -1;
}

/*
 * The clock of the rules: local_clock(), not ktime_get_ns(). A doorbell
 * reads it twice; the clocksource can be one whose every read is slow
 * (the HPET of a guest whose TSC the watchdog distrusted: an emulated
 * MMIO read under QEMU's lock, a few microseconds of every ping-pong
 * step), and the rules need no more than the scheduler's clock. Its
 * readings on two CPUs may be a little apart: a time that would come out
 * negative is 0.
 */
static u64 siwx_db_between(u64 then, u64 now)
{
	return now > then ? now - then : 0;
}

/*
 * siwx_db_packs()
 *
 * Could the message of the work request just activated gain from being
 * sent by siw_tx: its FPDU fits into half a segment, so that tx_pack can
 * put the next one beside it, or it fills several segments. Only a hint
 * (the work request is not checked yet); false for a message of one FPDU
 * of more than half a segment. siw_post_send() holds the QP's state lock
 * in RTS: its socket stays.
 */
static bool siwx_db_packs(struct siw_qp *qp)
{
	int payload = siwx_sqe_payload(&tx_wqe(qp)->sqe);
	struct socket *s = qp->attrs.sk;
	unsigned int mss, len;

	/* a request without payload, or a local operation */
	if (payload < 0 || !s || !s->sk)
		return true;
	mss = READ_ONCE(tcp_sk(s->sk)->mss_cache);
	len = payload + SIWX_FPDU_OVERHEAD;

	return len <= mss / 2 || len > mss;
}

/*
 * siwx_db_defer()
 *
 * siw_post_send(), a user QP's doorbell that found the send queue idle
 * and activated its first work request: true if the queue was handed to
 * siw_tx (nothing else to do), false if the caller processes it now.
 */
bool siwx_db_defer(struct siw_qp *qp)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	unsigned int mode = READ_ONCE(siwx_tx_defer);
	struct siw_cqe *cqe = READ_ONCE(c_tx->db_cqe);
	u64 pass = READ_ONCE(c_tx->db_pass_ns);
	bool rx = READ_ONCE(c_tx->db_rx);
	int cpu;

	/*
	 * The pass begins: what the peer sends during it counts against
	 * the next doorbell (on a veth pair the answer to the message it
	 * sends can arrive before it ends).
	 */
	WRITE_ONCE(c_tx->db_rx, false);

	if (mode == SIWX_TX_DEFER_NEVER)
		return false;
	if (mode == SIWX_TX_DEFER_STREAM) {
		/* the cheap tests first: a ping-pong fails one of them */
		if (!pass || rx)
			return false;
		/* it waited for the completion of its last work request */
		if (cqe && !(READ_ONCE(cqe->flags) & SIW_WQE_VALID))
			return false;
		if (siwx_db_between(READ_ONCE(c_tx->db_idle_ns),
				    local_clock()) >= pass / 2)
			return false;
		if (!siwx_db_packs(qp))
			return false;
	}
	cpu = siwx_tx_defer_cpu(qp);
	if (cpu < 0)
		return false;

	siw_sq_queue(qp, cpu);
	return true;
}

/*
 * siwx_db_pass()
 *
 * siw_post_send(), after processing the send queue in the system call
 * since @start: the moving average of such passes (weight 1/8), and when
 * the queue went idle.
 */
void siwx_db_pass(struct siw_qp *qp, u64 start)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	u64 now = local_clock(), avg = READ_ONCE(c_tx->db_pass_ns);
	u64 took = siwx_db_between(start, now);

	/* one pass the task was preempted in counts as twice the average */
	if (avg)
		avg = avg - avg / 8 + min(took, 2 * avg) / 8;
	else
		avg = took;
	WRITE_ONCE(c_tx->db_pass_ns, avg);
	WRITE_ONCE(c_tx->db_idle_ns, now);
}

/*
 * siwx_db_idle()
 *
 * siw_tx, after a pass over a user QP's send queue: when it went idle.
 */
void siwx_db_idle(struct siw_qp *qp)
{
	if (!rdma_is_kernel_res(&qp->base_qp.res))
		WRITE_ONCE(qp->tx_ctx.db_idle_ns, local_clock());
}

/*
 * siwx_db_rx()
 *
 * The receive path, the last FPDU of a message received: one that hands
 * the application data (a Send, an RDMA Write, Immediate Data, an Atomic
 * Write) may be what it waits for before it posts again, and the next
 * doorbell is then the next step of an exchange, not of a stream.
 * Responses to its own requests and requests the RNIC answers do not
 * count.
 */
void siwx_db_rx(struct siw_qp *qp, struct iwarp_ctrl *ctrl)
{
	switch (__rdmap_get_opcode(ctrl)) {
	case RDMAP_SEND:
	case RDMAP_SEND_INVAL:
	case RDMAP_SEND_SE:
	case RDMAP_SEND_SE_INVAL:
	case RDMAP_RDMA_WRITE:
	case RDMAP_IMM_DATA:
	case RDMAP_IMM_DATA_SE:
	case RDMAP_ATOMIC_WRITE_REQ:
		if (!READ_ONCE(qp->tx_ctx.db_rx))
			WRITE_ONCE(qp->tx_ctx.db_rx, true);
		break;
	default:
		break;
	}
}

/*
 * siwx_db_done()
 *
 * The send queue loop, before a work request is sent (or, for a local
 * one, done): its completion, if any, is yet to come. Before, not after:
 * on a veth pair the response to a Read arrives within the sendmsg() of
 * its request.
 */
void siwx_db_done(struct siw_qp *qp)
{
	WRITE_ONCE(qp->tx_ctx.db_cqe, NULL);
}

/*
 * siwx_db_cqe()
 *
 * siw_sqe_complete(), a work request's completion written to @cqe: an
 * application that consumed it before it posts again waits for each
 * one, and the next doorbell is processed in the system call.
 */
void siwx_db_cqe(struct siw_qp *qp, struct siw_cqe *cqe)
{
	if (!rdma_is_kernel_res(&qp->base_qp.res))
		WRITE_ONCE(qp->tx_ctx.db_cqe, cqe);
}
