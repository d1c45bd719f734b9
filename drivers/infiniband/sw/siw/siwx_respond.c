// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: Read and Atomic Responses sent from the receive path.
 *
 * siw answers an inbound RDMA Read Request or Atomic Request from its
 * transmit thread: the receive path (TCP's data_ready callback) queues
 * the response and wakes siw_tx, which sends it. On a busy or virtual
 * machine that wake-up (a context switch, often an IPI) is most of a
 * small Read's or atomic's round trip.
 *
 * TCP calls data_ready with the socket locked for the softirq
 * (bh_lock_sock()). When no process owns the socket, nobody else can be
 * inside tcp_sendmsg() for it until the callback returns, and TCP's own
 * receive path transmits from there too. So, at the end of such a
 * callback, if its segments asked for responses and no other context
 * processes the QP's send queue (its SIW_SQ_BUSY token is free), the
 * responses are sent right there: tcp_sendmsg_locked(), MSG_DONTWAIT,
 * atomic allocations, and the socket's own page fragment for what TCP
 * copies (not the interrupted task's: see siwx_rx_respond_now()). Only
 * Read Responses of up to rx_respond_max bytes, Atomic Responses, and
 * Flush and Atomic Write Responses whose request writes back at most
 * rx_respond_max bytes of CPU caches (executed just before the response
 * is sent, so here too), at most SIWX_RESPOND_BUDGET bytes per callback.
 *
 * A response the callback received can also free the ORQ entry a Read,
 * Atomic, Flush or Atomic Write Request of the send queue waits for: such
 * a request (one FPDU without payload) is sent from here as well (module
 * parameter rx_request, default Y). The rest, a Send or Write of the send
 * queue, and whatever TCP does not take at once are left to siw_tx as
 * before. Nothing changes on the wire.
 *
 * The hooks calling into this file are in siw_qp.c (data_ready),
 * siw_qp_tx.c (siw_sq_start(), the send queue loop, the sendmsg()
 * calls), the prototypes in siw.h. Module parameter rx_respond (default
 * Y) turns it all off.
 */

#include <linux/net.h>
#include <linux/percpu.h>
#include <linux/sizes.h>
#include <linux/tcp.h>
#include <net/sock.h>
#include <net/tcp.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siwx.h"

static bool siwx_rx_respond = true;
module_param_named(rx_respond, siwx_rx_respond, bool, 0644);
MODULE_PARM_DESC(rx_respond,
		 "Send small Read, Atomic, Flush and Atomic Write Responses from the receive path, without waking siw_tx (default: Y)");

static unsigned int siwx_rx_respond_max = SZ_4K;
module_param_named(rx_respond_max, siwx_rx_respond_max, uint, 0644);
MODULE_PARM_DESC(rx_respond_max,
		 "Largest Read Response (and Flush write-back) sent from the receive path, bytes (default: 4096)");

static bool siwx_rx_request = true;
module_param_named(rx_request, siwx_rx_request, bool, 0644);
MODULE_PARM_DESC(rx_request,
		 "With rx_respond: also send Read, Atomic, Flush and Atomic Write Requests from the receive path (default: Y)");

/* response bytes one callback sends at most */
#define SIWX_RESPOND_BUDGET SZ_64K

/*
 * The QP whose receive callback runs on this CPU and may answer at its
 * end. Set and cleared in that callback, which runs with bottom halves
 * disabled: nothing else on this CPU sees it set but what the callback
 * calls.
 */
static DEFINE_PER_CPU(struct siw_qp *, siwx_rx_qp);
static DEFINE_PER_CPU(bool, siwx_rx_kick);

/*
 * siwx_rx_respond_begin()
 *
 * siw_qp_llp_data_ready(), before it reads the socket: if the callback
 * runs with the socket locked for it (softirq, no owner), a start of
 * the send queue is noted instead of waking siw_tx, and
 * siwx_rx_respond_end() sends what it can.
 */
bool siwx_rx_respond_begin(struct siw_qp *qp, struct sock *sk)
{
	if (!READ_ONCE(siwx_rx_respond) || !in_softirq() ||
	    sock_owned_by_user_nocheck(sk))
		return false;

	this_cpu_write(siwx_rx_qp, qp);
	this_cpu_write(siwx_rx_kick, false);

	return true;
}

/*
 * siwx_respond_defer()
 *
 * siw_sq_start(): true if called from the receive callback of @qp
 * between siwx_rx_respond_begin() and siwx_rx_respond_end(), which then
 * starts the send queue.
 */
bool siwx_respond_defer(struct siw_qp *qp)
{
	if (this_cpu_read(siwx_rx_qp) != qp)
		return false;

	this_cpu_write(siwx_rx_kick, true);

	return true;
}

/*
 * siwx_respond_wqe()
 *
 * The send queue loop, sending from the receive path: may @wqe be sent
 * here? Counts it against the callback's budget if so.
 */
bool siwx_respond_wqe(struct siw_qp *qp, struct siw_wqe *wqe)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	u32 max = READ_ONCE(siwx_rx_respond_max);
	u32 len = SIWX_FPDU_OVERHEAD;

	switch (tx_type(wqe)) {
	case SIW_OP_READ_RESPONSE:
		len = wqe->sqe.sge[0].length;
		if (len > max)
			goto left;
		break;
	case SIW_OP_ATOMIC_RESPONSE:
		break;
	case SIW_OP_FLUSH_RESPONSE:
	case SIW_OP_ATOMIC_WRITE_RESPONSE:
		/* executed before it is sent: a bounded write-back only */
		if (!siwx_flush_resp_within(&wqe->sqe, max))
			goto left;
		break;
	default:
		/*
		 * A request of one FPDU without payload (an Atomic Write's
		 * 8 bytes are in its header), its ORQ entry taken: the
		 * response that freed an ORQ entry resumes the send queue
		 * here instead of waking siw_tx.
		 */
		if (!siw_op_uses_orq(tx_type(wqe)) ||
		    !READ_ONCE(siwx_rx_request))
			goto left;
		break;
	}
	if (c_tx->rx_sent + len > SIWX_RESPOND_BUDGET)
		goto left;
	c_tx->rx_sent += len;

	return true;
left:
	/* for siw_tx, which siwx_rx_respond_now() starts */
	c_tx->rx_left = 1;
	return false;
}

/*
 * siwx_sendmsg()
 *
 * sock_sendmsg() for the transmit path. From the receive path the socket
 * is locked for us already: tcp_sendmsg_locked(), never waiting.
 */
int siwx_sendmsg(struct siw_iwarp_tx *c_tx, struct socket *s,
		 struct msghdr *msg)
{
	if (!c_tx->in_rx)
		return sock_sendmsg(s, msg);

	msg->msg_flags |= MSG_DONTWAIT;

	return tcp_sendmsg_locked(s->sk, msg, msg_data_left(msg));
}

/*
 * Send the responses the callback's segments asked for. Returns false
 * if nothing could be done here (siw_tx is to start the send queue).
 */
static bool siwx_rx_respond_now(struct siw_qp *qp, struct sock *sk)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	unsigned long *run = &c_tx->sq_run;
	bool task_frag;
	gfp_t gfp;
	int rv;

	if (sk->sk_state != TCP_ESTABLISHED || !sk_stream_memory_free(sk) ||
	    qp->attrs.state != SIW_QP_STATE_RTS || c_tx->tx_suspend ||
	    tx_wqe(qp)->wr_status == SIW_WR_IDLE)
		return false;

	if (test_and_set_bit(SIW_SQ_BUSY, run))
		/* the context processing it goes on once more */
		return false;
	clear_bit(SIW_SQ_AGAIN, run);

	/* an FPDU waiting in TCP for the next one: siw_tx ends it */
	if (c_tx->pack_open || c_tx->pack_more) {
		c_tx->rx_left = 1;
		rv = 0;
		goto out;
	}
	/*
	 * TCP copies headers (and payload it cannot splice) into
	 * sk_page_frag(): current->task_frag while sk_use_task_frag is
	 * set, as it is for siw's sockets. Here current is whatever task
	 * the softirq interrupted, possibly in the middle of filling that
	 * same fragment for a send of its own (siw_tx batching another
	 * QP's FPDUs, any socket writer): both streams would carry the
	 * other's bytes. Use the socket's fragment, and atomic
	 * allocations, for the call; the socket is locked for us, so no
	 * sender of its own looks at either meanwhile.
	 */
	task_frag = sk->sk_use_task_frag;
	sk->sk_use_task_frag = false;
	gfp = sk->sk_allocation;
	sk->sk_allocation = GFP_ATOMIC;
	c_tx->in_rx = 1;
	c_tx->rx_sent = 0;
	c_tx->rx_left = 0;

	rv = __siw_qp_sq_process(qp);

	c_tx->in_rx = 0;
	sk->sk_allocation = gfp;
	sk->sk_use_task_frag = task_frag;
out:
	clear_bit_unlock(SIW_SQ_BUSY, run);
	/* order the clear before the tests below, as siw_qp_sq_process() */
	smp_mb__after_atomic();

	if (rv < 0) {
		if (!c_tx->tx_suspend)
			siw_qp_cm_drop(qp, 1);
		return true;
	}
	/*
	 * Left for siw_tx: a work request that was not for here, or a
	 * start by another context while we held the send queue. Not what
	 * TCP did not take (its write space callback resumes that), nor a
	 * Read or Atomic Request waiting for an ORQ entry (a response
	 * resumes it): siw_tx would send that one at once.
	 */
	return !c_tx->rx_left && !test_bit(SIW_SQ_AGAIN, run);
}

/*
 * siwx_rx_respond_end()
 *
 * siw_qp_llp_data_ready(), after reading the socket, if
 * siwx_rx_respond_begin() returned true. Called with the QP state lock
 * held for reading.
 */
void siwx_rx_respond_end(struct siw_qp *qp, struct sock *sk)
{
	bool kick = this_cpu_read(siwx_rx_kick);

	this_cpu_write(siwx_rx_qp, NULL);

	if (kick && !siwx_rx_respond_now(qp, sk))
		siw_sq_start(qp);
}
