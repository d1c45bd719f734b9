// SPDX-License-Identifier: GPL-2.0
/*
 * siwx_ktest - drive siw(x) from a kernel ULP through rdma_cm.
 *
 * Modelled on the kernel's lib/test_*.ko modules: all work happens in
 * module_init, which prints TAP lines ("siwx_ktest: ok N - name") and
 * returns 0 when every case passed and -EIO otherwise, so that a failing
 * run never stays loaded.
 *
 * A listener on server_addr and a client bound to client_addr connect
 * through rdma_cm; each group of cases gets a connection of its own:
 *
 *   basic   Send/Receive both ways, RDMA Write and RDMA Read against a
 *           fast-registered MR (works on any siw, upstream included)
 *   imm     RDMA Write with Immediate (RFC 7306) of random lengths,
 *           interleaved with Sends, solicited events, and Send with
 *           Immediate refused at post time with -EOPNOTSUPP
 *   atomic  random FetchAdd/CmpSwap, masked and unmasked, against a
 *           reference model, a pipelined chain, and a misaligned target
 *           as the last case (it terminates the connection)
 *   flush   RDMA Flush and Atomic Write (Documentation/flush.md, "Kernel
 *           ULPs"): the device caps, a REG_MR with IB_ACCESS_FLUSH_GLOBAL,
 *           random Writes each followed by a Flush whose completion
 *           proves them placed, selectivity MR, random Atomic Writes, the
 *           Write-Flush-Atomic Write-Flush pipeline, post-time refusals,
 *           a Flush of a region without flush access (error completion,
 *           last), and on connections of their own a misaligned Atomic
 *           Write and FLUSH_PERSISTENT on memory that is not pmem
 *   zread   (only when asked for) zero-length RDMA Reads, each followed
 *           by a non-empty one: reproduces a siw Read Response mismatch
 *
 * A group the device does not support is reported as skipped. Every wait
 * is bounded by timeout_ms, and everything is torn down before
 * module_init returns.
 */

#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/kernel.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/inet.h>
#include <linux/in.h>
#include <linux/scatterlist.h>
#include <linux/prandom.h>
#include <linux/random.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/bitmap.h>
#include <linux/wait.h>
#include <linux/jiffies.h>
#include <linux/ktime.h>
#include <linux/math64.h>
#include <linux/sched/signal.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

static char *server_addr = "192.168.77.1";
module_param(server_addr, charp, 0444);
MODULE_PARM_DESC(server_addr, "IPv4 address to listen on (192.168.77.1)");

static char *client_addr = "192.168.77.2";
module_param(client_addr, charp, 0444);
MODULE_PARM_DESC(client_addr, "IPv4 address the client binds to (192.168.77.2)");

static ushort port = 18990;
module_param(port, ushort, 0444);
MODULE_PARM_DESC(port, "TCP port of the listener (18990)");

static uint iterations = 2000;
module_param(iterations, uint, 0444);
MODULE_PARM_DESC(iterations, "random atomic cases (2000)");

static ulong seed;
module_param(seed, ulong, 0444);
MODULE_PARM_DESC(seed, "pseudo-random seed, 0: pick one (printed)");

static char *groups = "basic,imm,atomic,flush";
module_param(groups, charp, 0444);
MODULE_PARM_DESC(groups, "groups to run: basic,imm,atomic,flush (all), zread");

static uint timeout_ms = 10000;
module_param(timeout_ms, uint, 0444);
MODULE_PARM_DESC(timeout_ms, "bound of every single wait, ms (10000)");

#define KT_QP_DEPTH	64
#define KT_CQ_DEPTH	128
#define KT_NSLOT	16		/* send/receive slots per endpoint */
#define KT_SLOT		4096		/* receive length of a slot */
#define KT_GUARD	64		/* checked bytes after a slot */
#define KT_STRIDE	(KT_SLOT + KT_GUARD)
#define KT_BUFLEN	(KT_NSLOT * KT_STRIDE)
#define KT_REGION	16384		/* server MR of basic and imm */
#define KT_AREGION	4096		/* server MR of atomic */
#define KT_CHAIN	32		/* pipelined atomics, > the ORD of 16 */
#define KT_MAX_BUFS	8
#define KT_MAX_MRS	2

/* wr_id values; the low byte carries an index */
#define KT_WRID_REG	0x100
#define KT_WRID_SEND	0x200
#define KT_WRID_RECV	0x300
#define KT_WRID_WRITE	0x400
#define KT_WRID_READ	0x500
#define KT_WRID_ATOMIC	0x600
#define KT_WRID_WIMM	0x700
#define KT_WRID_FLUSH	0x800
#define KT_WRID_AWRITE	0x900

/* ------------------------------------------------------------------ TAP */

static int kt_num;
static int kt_fails;
static int kt_skips;
static int kt_budget;	/* value-mismatch diagnostics left for a test */

#define kt_diag(fmt, ...) pr_info("# " fmt "\n", ##__VA_ARGS__)
#define kt_fdiag(fmt, ...)					\
	do {							\
		if (kt_budget-- > 0)				\
			kt_diag(fmt, ##__VA_ARGS__);		\
	} while (0)

static void kt_result(bool ok, const char *name)
{
	kt_num++;
	if (ok) {
		pr_info("ok %d - %s\n", kt_num, name);
	} else {
		kt_fails++;
		pr_info("not ok %d - %s\n", kt_num, name);
	}
	kt_budget = 8;
}

static __printf(2, 3) void kt_skip(const char *name, const char *fmt, ...)
{
	struct va_format vaf;
	va_list args;

	va_start(args, fmt);
	vaf.fmt = fmt;
	vaf.va = &args;
	kt_num++;
	kt_skips++;
	pr_info("ok %d - %s # SKIP %pV\n", kt_num, name, &vaf);
	va_end(args);
	kt_budget = 8;
}

/* --------------------------------------------------------------- random */

static struct rnd_state kt_rnd;

static u32 kt_r32(void)
{
	return prandom_u32_state(&kt_rnd);
}

static u64 kt_r64(void)
{
	u64 hi = kt_r32();

	return hi << 32 | kt_r32();
}

static u32 kt_below(u32 n)
{
	return n ? kt_r32() % n : 0;
}

static void kt_fill(void *buf, size_t len)
{
	prandom_bytes_state(&kt_rnd, buf, len);
}

/* a random length in [0, max], with the edges often */
static u32 kt_len(u32 max)
{
	switch (kt_below(6)) {
	case 0:
		return 0;
	case 1:
		return 1;
	case 2:
		return max;
	case 3:
		return kt_below(16);
	default:
		return kt_below(max + 1);
	}
}

/* ------------------------------------------------------------ endpoints */

struct kt_ep {
	const char *name;
	struct rdma_cm_id *id;
	struct ib_device *dev;
	struct ib_pd *pd;
	struct ib_cq *scq;
	struct ib_cq *rcq;
	struct ib_qp *qp;
	wait_queue_head_t wq;
	unsigned long events;	/* BIT(rdma_cm_event_type) seen */
	int ev_status;
	u8 ev_resp_res;		/* conn param of the last connect event */
	u8 ev_init_depth;
	atomic_t rcq_notify;	/* completion handler calls, receive CQ */
	atomic_t qp_events;
};

struct kt_buf {
	struct kt_ep *ep;
	void *va;
	u64 dma;
	size_t len;
};

struct kt_mr {
	struct kt_ep *ep;
	void *va;
	size_t len;
	struct scatterlist sg;
	bool mapped;
	struct ib_mr *mr;
	u64 iova;
	u32 rkey;
};

struct kt_conn {
	struct kt_ep srv;
	struct kt_ep cli;
	bool established;
	int nbufs;
	struct kt_buf *bufs[KT_MAX_BUFS];
	int nmrs;
	struct kt_mr *mrs[KT_MAX_MRS];
};

static struct {
	struct rdma_cm_id *id;
	spinlock_t lock;		/* protects want */
	struct kt_ep *want;		/* takes the next connection request */
} kt_listener;

static struct sockaddr_in kt_srv_sin;
static struct sockaddr_in kt_cli_sin;

#define KT_CM_ERRORS (BIT(RDMA_CM_EVENT_ADDR_ERROR) |		\
		      BIT(RDMA_CM_EVENT_ROUTE_ERROR) |		\
		      BIT(RDMA_CM_EVENT_CONNECT_ERROR) |	\
		      BIT(RDMA_CM_EVENT_UNREACHABLE) |		\
		      BIT(RDMA_CM_EVENT_REJECTED) |		\
		      BIT(RDMA_CM_EVENT_DISCONNECTED) |		\
		      BIT(RDMA_CM_EVENT_DEVICE_REMOVAL))

static int kt_cm_handler(struct rdma_cm_id *id, struct rdma_cm_event *ev)
{
	struct kt_ep *ep = id->context;

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
		/* id is the new connection's id; its context is inherited */
		spin_lock(&kt_listener.lock);
		ep = kt_listener.want;
		kt_listener.want = NULL;
		if (ep) {
			ep->id = id;
			id->context = ep;
		}
		spin_unlock(&kt_listener.lock);
		if (!ep) {
			kt_diag("listener: unexpected connection request refused");
			return -ECONNREFUSED;	/* rdma_cm destroys the id */
		}
	} else if (id->context == &kt_listener) {
		kt_diag("listener: %s, status %d",
			rdma_event_msg(ev->event), ev->status);
		return 0;
	}

	if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
	    ev->event == RDMA_CM_EVENT_ESTABLISHED) {
		ep->ev_resp_res = ev->param.conn.responder_resources;
		ep->ev_init_depth = ev->param.conn.initiator_depth;
	}
	if (BIT(ev->event) & KT_CM_ERRORS)
		WRITE_ONCE(ep->ev_status, ev->status ? ev->status : -ECONNABORTED);
	kt_diag("%s: %s, status %d", ep->name, rdma_event_msg(ev->event),
		ev->status);
	/* ev_status and the resources must be visible with the bit */
	smp_mb__before_atomic();
	set_bit(ev->event, &ep->events);
	wake_up(&ep->wq);
	return 0;
}

static int kt_wait_cm_ms(struct kt_ep *ep, enum rdma_cm_event_type want,
			 unsigned int ms)
{
	unsigned long mask = BIT(want) | (KT_CM_ERRORS & ~BIT(want));
	long left;

	left = wait_event_timeout(ep->wq, READ_ONCE(ep->events) & mask,
				  msecs_to_jiffies(ms));
	if (test_bit(want, &ep->events))
		return 0;
	if (!left) {
		kt_diag("%s: no %s within %u ms", ep->name,
			rdma_event_msg(want), ms);
		return -ETIMEDOUT;
	}
	kt_diag("%s: waited for %s, got an error event", ep->name,
		rdma_event_msg(want));
	return READ_ONCE(ep->ev_status) ? READ_ONCE(ep->ev_status) : -ECONNABORTED;
}

static int kt_wait_cm(struct kt_ep *ep, enum rdma_cm_event_type want)
{
	return kt_wait_cm_ms(ep, want, timeout_ms);
}

static void kt_cq_comp(struct ib_cq *cq, void *ctx)
{
	struct kt_ep *ep = ctx;

	if (cq == ep->rcq)
		atomic_inc(&ep->rcq_notify);
	wake_up(&ep->wq);
}

static void kt_cq_event(struct ib_event *ev, void *ctx)
{
	struct kt_ep *ep = ctx;

	kt_diag("%s: CQ event %s", ep->name, ib_event_msg(ev->event));
}

static void kt_qp_event(struct ib_event *ev, void *ctx)
{
	struct kt_ep *ep = ctx;

	atomic_inc(&ep->qp_events);
	kt_diag("%s: QP event %s", ep->name, ib_event_msg(ev->event));
}

static void kt_ep_init(struct kt_ep *ep, const char *name)
{
	ep->name = name;
	init_waitqueue_head(&ep->wq);
	atomic_set(&ep->rcq_notify, 0);
	atomic_set(&ep->qp_events, 0);
}

static int kt_ep_setup(struct kt_ep *ep)
{
	struct ib_cq_init_attr cqa = { .cqe = KT_CQ_DEPTH };
	struct ib_qp_init_attr qpa = {};
	int rv;

	ep->dev = ep->id->device;
	ep->pd = ib_alloc_pd(ep->dev, 0);
	if (IS_ERR(ep->pd)) {
		rv = PTR_ERR(ep->pd);
		ep->pd = NULL;
		kt_diag("%s: ib_alloc_pd: %d", ep->name, rv);
		return rv;
	}
	ep->scq = ib_create_cq(ep->dev, kt_cq_comp, kt_cq_event, ep, &cqa);
	if (IS_ERR(ep->scq)) {
		rv = PTR_ERR(ep->scq);
		ep->scq = NULL;
		kt_diag("%s: ib_create_cq: %d", ep->name, rv);
		return rv;
	}
	ep->rcq = ib_create_cq(ep->dev, kt_cq_comp, kt_cq_event, ep, &cqa);
	if (IS_ERR(ep->rcq)) {
		rv = PTR_ERR(ep->rcq);
		ep->rcq = NULL;
		kt_diag("%s: ib_create_cq: %d", ep->name, rv);
		return rv;
	}
	qpa.event_handler = kt_qp_event;
	qpa.qp_context = ep;
	qpa.send_cq = ep->scq;
	qpa.recv_cq = ep->rcq;
	qpa.cap.max_send_wr = KT_QP_DEPTH;
	qpa.cap.max_recv_wr = KT_QP_DEPTH;
	qpa.cap.max_send_sge = 2;
	qpa.cap.max_recv_sge = 1;
	qpa.sq_sig_type = IB_SIGNAL_REQ_WR;
	qpa.qp_type = IB_QPT_RC;
	rv = rdma_create_qp(ep->id, ep->pd, &qpa);
	if (rv) {
		kt_diag("%s: rdma_create_qp: %d", ep->name, rv);
		return rv;
	}
	ep->qp = ep->id->qp;
	return 0;
}

/* reads and atomics outstanding we ask for (and grant) */
static u8 kt_rd_atom(struct ib_device *dev)
{
	return min3(dev->attrs.max_qp_rd_atom, dev->attrs.max_qp_init_rd_atom,
		    16);
}

static void kt_print_dev(const char *role, struct ib_device *dev)
{
	kt_diag("%s device %s: atomic_cap %d, masked_atomic_cap %d, max_qp_rd_atom %d, max_qp_init_rd_atom %d, max_send_sge %d",
		role, dev->name, dev->attrs.atomic_cap,
		dev->attrs.masked_atomic_cap, dev->attrs.max_qp_rd_atom,
		dev->attrs.max_qp_init_rd_atom, dev->attrs.max_send_sge);
}

/*
 * Address resolution, retried with a fresh id: when the neighbour entry
 * of the server address is not valid yet, rdma_cm's resolver may sleep
 * until its timeout although ARP answers at once (seen in the test VM on
 * the first connection), so each try is short.
 */
static int kt_resolve(struct kt_ep *cli)
{
	unsigned long end = jiffies + msecs_to_jiffies(timeout_ms);
	unsigned int try_ms = clamp(timeout_ms / 4, 500U, 2000U);
	int rv, tries = 0;

	for (;;) {
		tries++;
		cli->id = rdma_create_id(&init_net, kt_cm_handler, cli,
					 RDMA_PS_TCP, IB_QPT_RC);
		if (IS_ERR(cli->id)) {
			rv = PTR_ERR(cli->id);
			cli->id = NULL;
			kt_diag("client: rdma_create_id: %d", rv);
			return rv;
		}
		rv = rdma_resolve_addr(cli->id, (struct sockaddr *)&kt_cli_sin,
				       (struct sockaddr *)&kt_srv_sin, try_ms);
		if (rv)
			kt_diag("client: rdma_resolve_addr: %d", rv);
		else
			rv = kt_wait_cm_ms(cli, RDMA_CM_EVENT_ADDR_RESOLVED,
					   try_ms + 1000);
		if (!rv) {
			if (tries > 1)
				kt_diag("client: address resolved at try %d",
					tries);
			return 0;
		}
		/* no callbacks after this: the events can be reset */
		rdma_destroy_id(cli->id);
		cli->id = NULL;
		cli->events = 0;
		cli->ev_status = 0;
		if (time_after(jiffies, end) || fatal_signal_pending(current)) {
			kt_diag("client: address not resolved in %d tries",
				tries);
			return rv;
		}
		msleep(200);
	}
}

static int kt_connect(struct kt_conn *c)
{
	struct rdma_conn_param cp = {};
	struct kt_ep *srv = &c->srv, *cli = &c->cli;
	int rv;

	kt_ep_init(srv, "server");
	kt_ep_init(cli, "client");
	spin_lock(&kt_listener.lock);
	kt_listener.want = srv;
	spin_unlock(&kt_listener.lock);

	rv = kt_resolve(cli);
	if (rv)
		goto out;
	rv = rdma_resolve_route(cli->id, timeout_ms);
	if (rv) {
		kt_diag("client: rdma_resolve_route: %d", rv);
		goto out;
	}
	rv = kt_wait_cm(cli, RDMA_CM_EVENT_ROUTE_RESOLVED);
	if (rv)
		goto out;
	rv = kt_ep_setup(cli);
	if (rv)
		goto out;

	cp.initiator_depth = kt_rd_atom(cli->dev);
	cp.responder_resources = kt_rd_atom(cli->dev);
	cp.retry_count = 7;
	cp.rnr_retry_count = 7;
	rv = rdma_connect(cli->id, &cp);
	if (rv) {
		kt_diag("client: rdma_connect: %d", rv);
		goto out;
	}
	rv = kt_wait_cm(srv, RDMA_CM_EVENT_CONNECT_REQUEST);
	if (rv)
		goto out;
	rv = kt_ep_setup(srv);
	if (rv)
		goto out;

	memset(&cp, 0, sizeof(cp));
	cp.responder_resources = min(srv->ev_resp_res, kt_rd_atom(srv->dev));
	cp.initiator_depth = min(srv->ev_init_depth, kt_rd_atom(srv->dev));
	rdma_lock_handler(srv->id);
	rv = rdma_accept(srv->id, &cp);
	rdma_unlock_handler(srv->id);
	if (rv) {
		kt_diag("server: rdma_accept: %d", rv);
		goto out;
	}
	/*
	 * Wait for both sides: the responder must not send before the
	 * initiator is established, and an FPDU reaching the responder
	 * before siw_accept() handed it the socket may not be processed.
	 */
	rv = kt_wait_cm(cli, RDMA_CM_EVENT_ESTABLISHED);
	if (!rv)
		rv = kt_wait_cm(srv, RDMA_CM_EVENT_ESTABLISHED);
	if (!rv) {
		c->established = true;
		kt_diag("connected: client on %s, server on %s; server granted responder_resources %u, initiator_depth %u",
			cli->dev->name, srv->dev->name, cp.responder_resources,
			cp.initiator_depth);
	}
out:
	spin_lock(&kt_listener.lock);
	kt_listener.want = NULL;
	spin_unlock(&kt_listener.lock);
	return rv;
}

static void kt_teardown(struct kt_conn *c)
{
	struct kt_ep *eps[] = { &c->srv, &c->cli };
	int i;

	/* no more DMA before the memory goes */
	for (i = 0; i < ARRAY_SIZE(eps); i++) {
		if (eps[i]->qp) {
			rdma_destroy_qp(eps[i]->id);
			eps[i]->qp = NULL;
		}
	}
	for (i = 0; i < c->nmrs; i++) {
		struct kt_mr *m = c->mrs[i];

		if (m->mr)
			ib_dereg_mr(m->mr);
		if (m->mapped)
			ib_dma_unmap_sg(m->ep->dev, &m->sg, 1,
					DMA_BIDIRECTIONAL);
		kfree(m->va);
		kfree(m);
	}
	c->nmrs = 0;
	for (i = 0; i < c->nbufs; i++) {
		struct kt_buf *b = c->bufs[i];

		ib_dma_unmap_single(b->ep->dev, b->dma, b->len,
				    DMA_BIDIRECTIONAL);
		kfree(b->va);
		kfree(b);
	}
	c->nbufs = 0;
	for (i = 0; i < ARRAY_SIZE(eps); i++) {
		struct kt_ep *ep = eps[i];

		if (ep->rcq)
			ib_destroy_cq(ep->rcq);
		if (ep->scq)
			ib_destroy_cq(ep->scq);
		if (ep->pd)
			ib_dealloc_pd(ep->pd);
		if (ep->id)
			rdma_destroy_id(ep->id);
		ep->rcq = NULL;
		ep->scq = NULL;
		ep->pd = NULL;
		ep->id = NULL;
	}
}

/* disconnect (client side) and tear down; true if both sides saw it */
static bool kt_disconnect(struct kt_conn *c)
{
	bool ok = true;
	int rv;

	if (c->established) {
		rv = rdma_disconnect(c->cli.id);
		if (rv && !test_bit(RDMA_CM_EVENT_DISCONNECTED, &c->cli.events))
			kt_diag("client: rdma_disconnect: %d", rv);
		if (kt_wait_cm(&c->cli, RDMA_CM_EVENT_DISCONNECTED))
			ok = false;
		if (kt_wait_cm(&c->srv, RDMA_CM_EVENT_DISCONNECTED))
			ok = false;
	}
	kt_teardown(c);
	return ok;
}

/* ------------------------------------------------------- memory helpers */

static struct kt_buf *kt_buf_new(struct kt_conn *c, struct kt_ep *ep,
				 size_t len)
{
	struct kt_buf *b;

	if (c->nbufs == KT_MAX_BUFS)
		return NULL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return NULL;
	b->va = kzalloc(len, GFP_KERNEL);
	if (!b->va) {
		kfree(b);
		return NULL;
	}
	b->dma = ib_dma_map_single(ep->dev, b->va, len, DMA_BIDIRECTIONAL);
	if (ib_dma_mapping_error(ep->dev, b->dma)) {
		kfree(b->va);
		kfree(b);
		return NULL;
	}
	b->ep = ep;
	b->len = len;
	c->bufs[c->nbufs++] = b;
	return b;
}

static void kt_sge(struct ib_sge *sge, struct kt_buf *b, size_t off, u32 len)
{
	sge->addr = b->dma + off;
	sge->length = len;
	sge->lkey = b->ep->pd->local_dma_lkey;
}

static int kt_post_send(struct kt_ep *ep, const struct ib_send_wr *wr)
{
	const struct ib_send_wr *bad = NULL;
	int rv = ib_post_send(ep->qp, wr, &bad);

	if (rv)
		kt_diag("%s: ib_post_send (opcode %d): %d", ep->name,
			bad ? bad->opcode : -1, rv);
	return rv;
}

static int kt_post_recv(struct kt_ep *ep, struct kt_buf *b, int slot)
{
	const struct ib_recv_wr *bad = NULL;
	struct ib_recv_wr wr = {};
	struct ib_sge sge;
	int rv;

	kt_sge(&sge, b, slot * KT_STRIDE, KT_SLOT);
	wr.wr_id = KT_WRID_RECV + slot;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	rv = ib_post_recv(ep->qp, &wr, &bad);
	if (rv)
		kt_diag("%s: ib_post_recv: %d", ep->name, rv);
	return rv;
}

static int kt_poll(struct ib_cq *cq, struct ib_wc *wc, unsigned int ms)
{
	unsigned long end = jiffies + msecs_to_jiffies(ms);
	int n;

	for (;;) {
		n = ib_poll_cq(cq, 1, wc);
		if (n > 0)
			return 0;
		if (n < 0)
			return n;
		if (time_after(jiffies, end))
			return -ETIMEDOUT;
		if (fatal_signal_pending(current))
			return -EINTR;
		usleep_range(20, 100);
	}
}

static void kt_wc_diag(const char *what, const struct ib_wc *wc)
{
	kt_diag("%s: completion wr_id 0x%llx, status %s (%d), opcode %d, byte_len %u, wc_flags 0x%x",
		what, wc->wr_id, ib_wc_status_msg(wc->status), wc->status,
		wc->opcode, wc->byte_len, wc->wc_flags);
}

/* the next completion of cq must be wr_id with status (and opcode) */
static int kt_expect(struct ib_cq *cq, u64 wr_id, enum ib_wc_opcode opcode,
		     enum ib_wc_status status, struct ib_wc *wc,
		     const char *what)
{
	int rv = kt_poll(cq, wc, timeout_ms);

	if (rv) {
		kt_diag("%s: no completion within %u ms (%d)", what,
			timeout_ms, rv);
		return rv;
	}
	if (wc->wr_id != wr_id || wc->status != status ||
	    (status == IB_WC_SUCCESS && wc->opcode != opcode)) {
		kt_wc_diag(what, wc);
		kt_diag("%s: expected wr_id 0x%llx, status %s, opcode %d",
			what, wr_id, ib_wc_status_msg(status), opcode);
		return -EIO;
	}
	return 0;
}

/* no completion may be left over once a test has seen all it expects */
static bool kt_no_strays(struct kt_conn *c)
{
	struct ib_cq *cqs[] = { c->cli.scq, c->cli.rcq, c->srv.scq,
				c->srv.rcq };
	bool ok = true;
	struct ib_wc wc;
	int i;

	for (i = 0; i < ARRAY_SIZE(cqs); i++) {
		while (cqs[i] && ib_poll_cq(cqs[i], 1, &wc) > 0) {
			kt_wc_diag("unexpected completion", &wc);
			ok = false;
		}
	}
	return ok;
}

static bool kt_same(const void *got, const void *want, size_t len,
		    const char *what)
{
	const u8 *g = got, *w = want;
	size_t i;

	for (i = 0; i < len; i++) {
		if (g[i] != w[i]) {
			kt_fdiag("%s: byte %zu of %zu is 0x%02x, expected 0x%02x",
				 what, i, len, g[i], w[i]);
			return false;
		}
	}
	return true;
}

/* a mapped, not yet registered fast-registration MR of len bytes */
static struct kt_mr *kt_mr_alloc(struct kt_conn *c, struct kt_ep *ep,
				 size_t len)
{
	struct kt_mr *m;
	int n;

	if (c->nmrs == KT_MAX_MRS)
		return NULL;
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return NULL;
	c->mrs[c->nmrs++] = m;
	m->ep = ep;
	m->len = len;
	/* power-of-two kmalloc sizes are naturally aligned: whole pages */
	m->va = kzalloc(len, GFP_KERNEL);
	if (!m->va)
		return NULL;
	sg_init_one(&m->sg, m->va, len);
	if (ib_dma_map_sg(ep->dev, &m->sg, 1, DMA_BIDIRECTIONAL) != 1) {
		kt_diag("%s: ib_dma_map_sg failed", ep->name);
		return NULL;
	}
	m->mapped = true;
	m->mr = ib_alloc_mr(ep->pd, IB_MR_TYPE_MEM_REG,
			    DIV_ROUND_UP(len, PAGE_SIZE));
	if (IS_ERR(m->mr)) {
		kt_diag("%s: ib_alloc_mr: %ld", ep->name, PTR_ERR(m->mr));
		m->mr = NULL;
		return NULL;
	}
	n = ib_map_mr_sg(m->mr, &m->sg, 1, NULL, PAGE_SIZE);
	if (n != 1) {
		kt_diag("%s: ib_map_mr_sg: %d", ep->name, n);
		return NULL;
	}
	ib_update_fast_reg_key(m->mr, ib_inc_rkey(m->mr->rkey));
	return m;
}

static struct kt_mr *kt_mr_new(struct kt_conn *c, struct kt_ep *ep,
			       size_t len, int access)
{
	struct kt_mr *m = kt_mr_alloc(c, ep, len);
	struct ib_reg_wr rwr = {};
	struct ib_wc wc;

	if (!m)
		return NULL;
	rwr.wr.opcode = IB_WR_REG_MR;
	rwr.wr.wr_id = KT_WRID_REG;
	rwr.wr.send_flags = IB_SEND_SIGNALED;
	rwr.mr = m->mr;
	rwr.key = m->mr->rkey;
	rwr.access = access;
	if (kt_post_send(ep, &rwr.wr))
		return NULL;
	if (kt_expect(ep->scq, KT_WRID_REG, IB_WC_REG_MR, IB_WC_SUCCESS, &wc,
		      "REG_MR"))
		return NULL;
	m->iova = m->mr->iova;
	m->rkey = m->mr->rkey;
	kt_diag("%s: fast-registered %zu bytes, rkey 0x%x, access 0x%x",
		ep->name, len, m->rkey, access);
	return m;
}

static void kt_rdma_wr(struct ib_rdma_wr *w, enum ib_wr_opcode opcode,
		       u64 wr_id, struct ib_sge *sge, int num_sge,
		       struct kt_mr *m, size_t off)
{
	memset(w, 0, sizeof(*w));
	w->wr.opcode = opcode;
	w->wr.wr_id = wr_id;
	w->wr.sg_list = sge;
	w->wr.num_sge = num_sge;
	w->wr.send_flags = IB_SEND_SIGNALED;
	if (m) {
		w->remote_addr = m->iova + off;
		w->rkey = m->rkey;
	}
}

/* --------------------------------------------------------- basic group */

/* n Sends from tx to rx, lengths with edges, each checked byte by byte */
static bool kt_sendrecv(struct kt_conn *c, struct kt_ep *tx,
			struct kt_buf *txb, struct kt_ep *rx,
			struct kt_buf *rxb, u8 *snap, int n)
{
	static const u32 lens[] = { 0, 1, 7, 64, 1000, 4095, 4096 };
	u32 len[KT_NSLOT];
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok = true;
	int i;

	kt_fill(rxb->va, KT_BUFLEN);
	memcpy(snap, rxb->va, KT_BUFLEN);
	for (i = 0; i < n; i++)
		if (kt_post_recv(rx, rxb, i))
			return false;
	kt_fill(txb->va, KT_BUFLEN);
	for (i = 0; i < n; i++) {
		len[i] = i < ARRAY_SIZE(lens) ? lens[i] : kt_len(KT_SLOT);
		kt_sge(&sge, txb, i * KT_STRIDE, len[i]);
		kt_rdma_wr(&w, IB_WR_SEND, KT_WRID_SEND + i, &sge,
			   (len[i] || (i & 1)) ? 1 : 0, NULL, 0);
		if (kt_post_send(tx, &w.wr))
			return false;
	}
	for (i = 0; i < n; i++)
		if (kt_expect(tx->scq, KT_WRID_SEND + i, IB_WC_SEND,
			      IB_WC_SUCCESS, &wc, "send"))
			return false;
	for (i = 0; i < n; i++) {
		u8 *slot = rxb->va + i * KT_STRIDE;

		if (kt_expect(rx->rcq, KT_WRID_RECV + i, IB_WC_RECV,
			      IB_WC_SUCCESS, &wc, "receive"))
			return false;
		if (wc.byte_len != len[i] || (wc.wc_flags & IB_WC_WITH_IMM)) {
			kt_fdiag("receive %d: byte_len %u (sent %u), wc_flags 0x%x",
				 i, wc.byte_len, len[i], wc.wc_flags);
			ok = false;
		}
		if (!kt_same(slot, txb->va + i * KT_STRIDE, len[i],
			     "received data") ||
		    !kt_same(slot + len[i], snap + i * KT_STRIDE + len[i],
			     KT_STRIDE - len[i], "receive slot past the data"))
			ok = false;
	}
	return kt_no_strays(c) && ok;
}

/* RDMA Writes into the server MR; a Send behind each proves placement */
static bool kt_rdma_write(struct kt_conn *c, struct kt_mr *mr,
			  struct kt_buf *txb, struct kt_buf *srx, u8 *shadow)
{
	static const u32 lens[] = { 0, 1, 8, 4095, 4096, 4097, KT_REGION };
	struct ib_rdma_wr w, s;
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok = true;
	int i;

	for (i = 0; i < 12; i++) {
		u32 len = i < ARRAY_SIZE(lens) ? lens[i] : kt_len(KT_REGION);
		u32 off = kt_below(KT_REGION - len + 1);

		kt_fill(mr->va, KT_REGION);
		memcpy(shadow, mr->va, KT_REGION);
		kt_fill(txb->va, len);
		if (kt_post_recv(&c->srv, srx, 0))
			return false;
		kt_sge(&sge, txb, 0, len);
		kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_WRITE, &sge,
			   len ? 1 : 0, mr, off);
		kt_rdma_wr(&s, IB_WR_SEND, KT_WRID_SEND, NULL, 0, NULL, 0);
		w.wr.next = &s.wr;
		if (kt_post_send(&c->cli, &w.wr))
			return false;
		if (kt_expect(c->cli.scq, KT_WRID_WRITE, IB_WC_RDMA_WRITE,
			      IB_WC_SUCCESS, &wc, "write") ||
		    kt_expect(c->cli.scq, KT_WRID_SEND, IB_WC_SEND,
			      IB_WC_SUCCESS, &wc, "send after write") ||
		    kt_expect(c->srv.rcq, KT_WRID_RECV, IB_WC_RECV,
			      IB_WC_SUCCESS, &wc, "receive after write"))
			return false;
		memcpy(shadow + off, txb->va, len);
		if (!kt_same(mr->va, shadow, KT_REGION, "server MR after write")) {
			kt_fdiag("write %d: %u bytes at offset %u", i, len, off);
			ok = false;
		}
	}
	return kt_no_strays(c) && ok;
}

/*
 * RDMA Reads from the server MR, one at a time. With zero, every other
 * Read has length 0: in siw, the Read after a zero-length one is
 * sometimes matched against the zero-length Read's ORQ entry ("rresp
 * len: N != 0", QP fatal), so the basic group leaves them out and group
 * zread exercises them.
 */
static bool kt_rdma_read(struct kt_conn *c, struct kt_mr *mr,
			 struct kt_buf *sink, u8 *snap, int n, bool zero)
{
	static const u32 lens[] = { 1, 8, 4095, 4096, 4097, KT_REGION };
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		u32 len = i < ARRAY_SIZE(lens) ? lens[i] :
			  max(kt_len(KT_REGION), 1U);
		u32 off;

		if (zero)
			len = i & 1 ? max(kt_len(KT_SLOT), 1U) : 0;
		off = kt_below(KT_REGION - len + 1);

		kt_fill(mr->va, KT_REGION);
		kt_fill(sink->va, len + KT_GUARD);
		memcpy(snap, sink->va, len + KT_GUARD);
		kt_sge(&sge, sink, 0, len);
		kt_rdma_wr(&w, IB_WR_RDMA_READ, KT_WRID_READ, &sge, 1, mr, off);
		if (kt_post_send(&c->cli, &w.wr))
			return false;
		if (kt_expect(c->cli.scq, KT_WRID_READ, IB_WC_RDMA_READ,
			      IB_WC_SUCCESS, &wc, "read")) {
			kt_diag("read %d of %d: %u bytes at offset %u", i, n,
				len, off);
			return false;
		}
		if (!kt_same(sink->va, mr->va + off, len, "read data") ||
		    !kt_same(sink->va + len, snap + len, KT_GUARD,
			     "read sink past the data")) {
			kt_fdiag("read %d: %u bytes at offset %u", i, len, off);
			ok = false;
		}
	}
	if (zero && !ok)
		kt_diag("%d reads alternating zero-length and not", n);
	return kt_no_strays(c) && ok;
}

/*
 * A Send posted right after the client's QP was moved to IB_QPS_SQD
 * (siw's CLOSING, as iw_cm's graceful disconnect does; TERMINATE is the
 * same case): it must be accepted and complete as flushed, as in ERROR.
 * siw failed it with -ENOTCONN, and nvme-rdma failed the I/O (kernel
 * patch 0042). The close runs in a CM work after the peer answered, so
 * the post comes while the QP is still CLOSING.
 */
static bool kt_post_while_closing(struct kt_conn *c, struct kt_buf *txb)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_SQD };
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	int rv;

	rv = ib_modify_qp(c->cli.qp, &attr, IB_QP_STATE);
	if (rv) {
		kt_diag("client: ib_modify_qp(IB_QPS_SQD): %d", rv);
		return false;
	}
	kt_sge(&sge, txb, 0, 64);
	kt_rdma_wr(&w, IB_WR_SEND, KT_WRID_SEND, &sge, 1, NULL, 0);
	if (kt_post_send(&c->cli, &w.wr))
		return false;
	return !kt_expect(c->cli.scq, KT_WRID_SEND, IB_WC_SEND,
			  IB_WC_WR_FLUSH_ERR, &wc, "Send posted while closing");
}

/*
 * Posts while another thread holds the QP's state lock for writing.
 * A kernel ULP posts without waiting for that lock (it may post in
 * atomic context), and siw failed such a post with -ENOTCONN although
 * the QP stayed in RTS (kernel patch 0047): nvme-rdma fails the I/O
 * then. kt_modifier runs beside the traffic: ib_modify_qp() of the
 * access flags in a loop (a legal change in RTS that takes the lock
 * for writing), alternating between two QPs, or one move to ERROR.
 */
#define KT_RACE_SENDS	4000	/* Sends of post_during_modify */
#define KT_RACE_DEPTH	16	/* in flight; receives posted */
#define KT_RACE_LEN	64
#define KT_RACE_MIN_MODS 200	/* fewer did not race the posts enough */
#define KT_ERR_ROUNDS	8	/* connections of post_racing_error */
#define KT_ERR_WRITES	1024	/* Writes posted at most per round */
#define KT_WRID_RACE	0x10000	/* + number of the Write */

struct kt_modifier {
	struct ib_qp *qp[2];
	bool to_error;		/* qp[0] to ERROR once, after delay_us */
	unsigned int delay_us;
	atomic_t stop;
	unsigned long modifies;
	int err;
	struct completion done;
};

static int kt_modifier_fn(void *arg)
{
	struct kt_modifier *m = arg;
	struct ib_qp_attr attr = {};
	int rv;

	if (m->to_error) {
		usleep_range(m->delay_us, m->delay_us + 20);
		attr.qp_state = IB_QPS_ERR;
		m->err = ib_modify_qp(m->qp[0], &attr, IB_QP_STATE);
		m->modifies = 1;
	} else {
		/* what rdma_cm gave an iWARP QP: no change, the lock taken */
		attr.qp_access_flags = IB_ACCESS_REMOTE_WRITE |
				       IB_ACCESS_REMOTE_READ;
		while (!atomic_read(&m->stop)) {
			rv = ib_modify_qp(m->qp[m->modifies & 1], &attr,
					  IB_QP_ACCESS_FLAGS);
			if (rv && !m->err)
				m->err = rv;
			m->modifies++;
			cond_resched();
		}
	}
	kthread_complete_and_exit(&m->done, 0);
}

/*
 * A turn of a polling loop that saw no completion: -ETIMEDOUT once
 * nothing progressed for timeout_ms since last, -EINTR on SIGKILL,
 * otherwise 0 after a short sleep.
 */
static int kt_idle(unsigned long last)
{
	if (time_after(jiffies, last + msecs_to_jiffies(timeout_ms)))
		return -ETIMEDOUT;
	if (fatal_signal_pending(current))
		return -EINTR;
	usleep_range(10, 30);
	return 0;
}

static bool kt_modifier_start(struct kt_modifier *m)
{
	struct task_struct *t;

	init_completion(&m->done);
	atomic_set(&m->stop, 0);
	t = kthread_run(kt_modifier_fn, m, "siwx_ktest_mod");
	if (IS_ERR(t)) {
		kt_diag("kthread_run: %ld", PTR_ERR(t));
		return false;
	}
	return true;
}

/* stop it; false (and a diagnostic naming what) if a modify failed */
static bool kt_modifier_stop(struct kt_modifier *m, const char *what)
{
	atomic_set(&m->stop, 1);
	wait_for_completion(&m->done);
	if (m->err)
		kt_diag("%s: %d", what, m->err);
	return !m->err;
}

/*
 * KT_RACE_SENDS Sends from the client, each carrying its number, at
 * most KT_RACE_DEPTH in flight, the server reposting each receive, while
 * both QPs' access flags are modified in a loop: every post succeeds,
 * every Send and receive completes successfully, in order, as sent.
 */
static bool kt_post_during_modify(struct kt_conn *c, struct kt_buf *txb,
				  struct kt_buf *rxb)
{
	u32 posted = 0, sent = 0, recvd = 0, slot;
	struct kt_modifier *m;
	unsigned long last;
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok = true;
	int i;

	m = kzalloc(sizeof(*m), GFP_KERNEL);
	if (!m)
		return false;
	m->qp[0] = c->cli.qp;
	m->qp[1] = c->srv.qp;
	for (i = 0; i < KT_RACE_DEPTH; i++) {
		if (kt_post_recv(&c->srv, rxb, i)) {
			kfree(m);
			return false;
		}
	}
	if (!kt_modifier_start(m)) {
		kfree(m);
		return false;
	}
	last = jiffies;
	while (ok && recvd < KT_RACE_SENDS) {
		bool progress = false;

		while (posted < KT_RACE_SENDS &&
		       posted - sent < KT_RACE_DEPTH &&
		       posted - recvd < KT_RACE_DEPTH) {
			u8 *buf;

			slot = posted % KT_RACE_DEPTH;
			buf = txb->va + slot * KT_STRIDE;
			memset(buf, posted & 0xff, KT_RACE_LEN);
			memcpy(buf, &posted, sizeof(posted));
			kt_sge(&sge, txb, slot * KT_STRIDE, KT_RACE_LEN);
			kt_rdma_wr(&w, IB_WR_SEND, KT_WRID_SEND + slot, &sge,
				   1, NULL, 0);
			if (kt_post_send(&c->cli, &w.wr)) {
				kt_diag("Send %u of %u refused", posted,
					KT_RACE_SENDS);
				ok = false;
				break;
			}
			posted++;
		}
		if (ib_poll_cq(c->cli.scq, 1, &wc) > 0) {
			if (wc.status != IB_WC_SUCCESS ||
			    wc.wr_id != KT_WRID_SEND + sent % KT_RACE_DEPTH) {
				kt_wc_diag("Send during modify", &wc);
				ok = false;
			}
			sent++;
			progress = true;
		}
		if (ib_poll_cq(c->srv.rcq, 1, &wc) > 0) {
			u8 *got, want[KT_RACE_LEN];

			slot = recvd % KT_RACE_DEPTH;
			got = rxb->va + slot * KT_STRIDE;
			memset(want, recvd & 0xff, KT_RACE_LEN);
			memcpy(want, &recvd, sizeof(recvd));
			if (wc.status != IB_WC_SUCCESS ||
			    wc.wr_id != KT_WRID_RECV + slot ||
			    wc.byte_len != KT_RACE_LEN) {
				kt_wc_diag("receive during modify", &wc);
				ok = false;
			} else if (!kt_same(got, want, KT_RACE_LEN,
					    "received Send")) {
				ok = false;
			} else if (recvd + KT_RACE_DEPTH < KT_RACE_SENDS &&
				   kt_post_recv(&c->srv, rxb, slot)) {
				kt_diag("receive %u refused",
					recvd + KT_RACE_DEPTH);
				ok = false;
			}
			recvd++;
			progress = true;
		}
		if (progress) {
			last = jiffies;
		} else if (kt_idle(last)) {
			kt_diag("no progress for %u ms (or killed): %u posted, %u sent, %u received",
				timeout_ms, posted, sent, recvd);
			ok = false;
		}
	}
	if (!kt_modifier_stop(m, "ib_modify_qp(IB_QP_ACCESS_FLAGS)"))
		ok = false;
	kt_diag("post_during_modify: %u Sends posted, %u received, %lu modifies of the access flags beside them",
		posted, recvd, m->modifies);
	if (ok && m->modifies < KT_RACE_MIN_MODS) {
		kt_diag("only %lu modifies: the posts were not raced",
			m->modifies);
		ok = false;
	}
	while (ok && sent < posted) {
		if (kt_expect(c->cli.scq, KT_WRID_SEND + sent % KT_RACE_DEPTH,
			      IB_WC_SEND, IB_WC_SUCCESS, &wc, "last Sends"))
			ok = false;
		sent++;
	}
	kfree(m);
	return ok && kt_no_strays(c);
}

/*
 * One round of post_racing_error, on a connection of its own: 64-byte
 * RDMA Writes posted back to back while another thread moves the
 * client's QP to ERROR. Every post succeeds, and every Write posted
 * completes exactly once: successfully before the QP went to ERROR,
 * as flushed after. Work posted while the modify held the state lock
 * is queued and must be flushed, not forgotten.
 */
static bool kt_post_racing_error_round(unsigned int delay_us,
				       u32 *flushed_out)
{
	u32 posted = 0, done = 0, flushed = 0, after = 0;
	unsigned long *seen = NULL, last;
	struct kt_modifier *m = NULL;
	struct kt_conn *c;
	struct kt_buf *b;
	struct kt_mr *mr;
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	bool ok;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	m = kzalloc(sizeof(*m), GFP_KERNEL);
	seen = bitmap_zalloc(KT_ERR_WRITES, GFP_KERNEL);
	ok = c && m && seen && !kt_connect(c);
	mr = ok ? kt_mr_new(c, &c->srv, KT_REGION, IB_ACCESS_LOCAL_WRITE |
			    IB_ACCESS_REMOTE_WRITE) : NULL;
	b = ok ? kt_buf_new(c, &c->cli, KT_BUFLEN) : NULL;
	if (!mr || !b) {
		ok = false;
		goto out;
	}
	m->qp[0] = c->cli.qp;
	m->to_error = true;
	m->delay_us = delay_us;
	if (!kt_modifier_start(m)) {
		ok = false;
		goto out;
	}
	kt_sge(&sge, b, 0, KT_RACE_LEN);
	last = jiffies;
	while (ok && done < KT_ERR_WRITES) {
		bool progress = false;

		/* until the end, or 64 more after the first flushed one */
		while (posted < KT_ERR_WRITES && after < 64 &&
		       posted - done < KT_RACE_DEPTH * 2) {
			kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_RACE + posted,
				   &sge, 1, mr, (posted % 64) * KT_RACE_LEN);
			if (kt_post_send(&c->cli, &w.wr)) {
				kt_diag("Write %u refused", posted);
				ok = false;
				break;
			}
			posted++;
			if (flushed)
				after++;
		}
		if (done == posted && (posted == KT_ERR_WRITES || after >= 64))
			break;
		if (ib_poll_cq(c->cli.scq, 1, &wc) > 0) {
			u64 n = wc.wr_id - KT_WRID_RACE;

			if (wc.wr_id < KT_WRID_RACE || n >= posted ||
			    test_and_set_bit(n, seen) ||
			    (wc.status != IB_WC_SUCCESS &&
			     wc.status != IB_WC_WR_FLUSH_ERR)) {
				kt_wc_diag("Write racing ERROR", &wc);
				ok = false;
			}
			if (wc.status == IB_WC_WR_FLUSH_ERR)
				flushed++;
			done++;
			progress = true;
		}
		if (progress) {
			last = jiffies;
		} else if (kt_idle(last)) {
			kt_diag("no completion for %u ms (or killed): %u Writes posted, %u completed (%u flushed)",
				timeout_ms, posted, done, flushed);
			ok = false;
		}
	}
	if (!kt_modifier_stop(m, "ib_modify_qp(IB_QPS_ERR)"))
		ok = false;
	if (ok && !flushed) {
		kt_diag("all %u Writes completed before the QP went to ERROR",
			posted);
	}
	*flushed_out = flushed;
	if (ok)
		kt_diag("post_racing_error: ERROR after %u us, %u Writes posted, %u completed, %u of them flushed",
			delay_us, posted, done, flushed);
	ok = kt_no_strays(c) && ok;
out:
	if (c)
		kt_disconnect(c);
	bitmap_free(seen);
	kfree(m);
	kfree(c);
	return ok;
}

static bool kt_post_racing_error(void)
{
	u32 flushed, rounds_flushed = 0;
	bool ok = true;
	int i;

	for (i = 0; i < KT_ERR_ROUNDS && ok; i++) {
		ok = kt_post_racing_error_round(200 + kt_below(3000), &flushed);
		if (flushed)
			rounds_flushed++;
	}
	/* a round whose Writes all completed first raced nothing */
	if (ok && rounds_flushed < KT_ERR_ROUNDS / 2) {
		kt_diag("only %u of %d rounds saw the QP go to ERROR under traffic",
			rounds_flushed, KT_ERR_ROUNDS);
		ok = false;
	}
	return ok;
}

static void kt_group_basic(void)
{
	struct kt_buf *ctx, *crx, *stx, *srx;
	struct kt_conn *c;
	struct kt_mr *mr;
	u8 *scratch;
	bool ok;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	scratch = kmalloc(KT_BUFLEN, GFP_KERNEL);
	if (!c || !scratch) {
		kt_result(false, "basic.connect");
		goto free;
	}
	ok = !kt_connect(c);
	kt_result(ok, "basic.connect");
	if (!ok) {
		kt_teardown(c);
		goto free;
	}
	mr = kt_mr_new(c, &c->srv, KT_REGION, IB_ACCESS_LOCAL_WRITE |
		       IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ);
	ctx = kt_buf_new(c, &c->cli, KT_BUFLEN);
	crx = kt_buf_new(c, &c->cli, KT_BUFLEN);
	stx = kt_buf_new(c, &c->srv, KT_BUFLEN);
	srx = kt_buf_new(c, &c->srv, KT_BUFLEN);
	ok = mr && ctx && crx && stx && srx;
	kt_result(ok, "basic.reg_mr");
	if (ok) {
		kt_result(kt_sendrecv(c, &c->cli, ctx, &c->srv, srx, scratch,
				      KT_NSLOT), "basic.send_recv");
		kt_result(kt_sendrecv(c, &c->srv, stx, &c->cli, crx, scratch,
				      8), "basic.send_recv_reverse");
		kt_result(kt_rdma_write(c, mr, ctx, srx, scratch),
			  "basic.rdma_write");
		kt_result(kt_rdma_read(c, mr, crx, scratch, 12, false),
			  "basic.rdma_read");
		kt_result(kt_post_during_modify(c, ctx, srx),
			  "basic.post_during_modify");
		kt_result(kt_post_while_closing(c, ctx),
			  "basic.post_while_closing");
	}
	kt_result(kt_disconnect(c), "basic.disconnect");
	kt_result(kt_post_racing_error(), "basic.post_racing_error");
free:
	kfree(scratch);
	kfree(c);
}

/*
 * Group zread (not run by default): zero-length RDMA Reads, each
 * followed by a non-empty one.
 */
static void kt_group_zread(void)
{
	struct kt_conn *c;
	struct kt_buf *crx;
	struct kt_mr *mr;
	u8 *scratch;
	bool ok;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	scratch = kmalloc(KT_BUFLEN, GFP_KERNEL);
	if (!c || !scratch) {
		kt_result(false, "zread.connect");
		goto free;
	}
	ok = !kt_connect(c);
	kt_result(ok, "zread.connect");
	if (!ok) {
		kt_teardown(c);
		goto free;
	}
	mr = kt_mr_new(c, &c->srv, KT_REGION, IB_ACCESS_LOCAL_WRITE |
		       IB_ACCESS_REMOTE_READ);
	crx = kt_buf_new(c, &c->cli, KT_BUFLEN);
	ok = mr && crx;
	kt_result(ok, "zread.reg_mr");
	if (ok)
		kt_result(kt_rdma_read(c, mr, crx, scratch, 200, true),
			  "zread.read_after_zero_length_read");
	kt_result(kt_disconnect(c), "zread.disconnect");
free:
	kfree(scratch);
	kfree(c);
}

/* ----------------------------------------------------------- imm group */

static __be32 kt_imm(void)
{
	static const u32 edges[] = { 0, 1, 0x80000000, 0xffffffff };

	if (!kt_below(4))
		return cpu_to_be32(edges[kt_below(ARRAY_SIZE(edges))]);
	return cpu_to_be32(kt_r32());
}

/*
 * Check the receive completion of a Write with Immediate: opcode, flags,
 * immediate, length; the receive buffer must stay untouched.
 */
static bool kt_check_wimm(const struct ib_wc *wc, __be32 imm, u32 len,
			  const u8 *slot, const u8 *slot_snap, int i)
{
	bool ok = true;

	if (wc->opcode != IB_WC_RECV_RDMA_WITH_IMM ||
	    !(wc->wc_flags & IB_WC_WITH_IMM) || wc->ex.imm_data != imm ||
	    wc->byte_len != len) {
		kt_fdiag("write_imm %d: opcode %d (want %d), wc_flags 0x%x, imm 0x%08x (want 0x%08x), byte_len %u (want %u)",
			 i, wc->opcode, IB_WC_RECV_RDMA_WITH_IMM, wc->wc_flags,
			 be32_to_cpu(wc->ex.imm_data), be32_to_cpu(imm),
			 wc->byte_len, len);
		ok = false;
	}
	if (!kt_same(slot, slot_snap, KT_STRIDE,
		     "receive buffer consumed by a Write with Immediate"))
		ok = false;
	return ok;
}

/* one Write with Immediate at a time, random length, offset, SGEs */
static bool kt_write_imm(struct kt_conn *c, struct kt_mr *mr,
			 struct kt_buf *txb, struct kt_buf *srx, u8 *shadow,
			 u8 *snap, int n)
{
	struct ib_rdma_wr w;
	struct ib_sge sge[2];
	struct ib_wc wc;
	bool ok = true;
	int i;

	for (i = 0; i < n; i++) {
		u32 len = kt_len(KT_REGION);
		u32 off = kt_below(KT_REGION - len + 1);
		int slot = i % KT_NSLOT, nsge;
		__be32 imm = kt_imm();
		u8 *sv = srx->va + slot * KT_STRIDE;

		kt_fill(mr->va, KT_REGION);
		memcpy(shadow, mr->va, KT_REGION);
		kt_fill(sv, KT_STRIDE);
		memcpy(snap, sv, KT_STRIDE);
		kt_fill(txb->va, len);
		if (kt_post_recv(&c->srv, srx, slot))
			return false;
		/* 0 bytes: no SGE or an empty one; else one or two SGEs */
		if (!len) {
			nsge = kt_below(2);
			kt_sge(&sge[0], txb, 0, 0);
		} else if (len > 1 && kt_below(2)) {
			u32 a = 1 + kt_below(len - 1);

			nsge = 2;
			kt_sge(&sge[0], txb, 0, a);
			kt_sge(&sge[1], txb, a, len - a);
		} else {
			nsge = 1;
			kt_sge(&sge[0], txb, 0, len);
		}
		kt_rdma_wr(&w, IB_WR_RDMA_WRITE_WITH_IMM, KT_WRID_WIMM, sge,
			   nsge, mr, off);
		w.wr.ex.imm_data = imm;
		if (kt_post_send(&c->cli, &w.wr))
			return false;
		if (kt_expect(c->cli.scq, KT_WRID_WIMM, IB_WC_RDMA_WRITE,
			      IB_WC_SUCCESS, &wc, "write_imm (requester)") ||
		    kt_expect(c->srv.rcq, KT_WRID_RECV + slot,
			      IB_WC_RECV_RDMA_WITH_IMM, IB_WC_SUCCESS, &wc,
			      "write_imm (responder)"))
			return false;
		if (!kt_check_wimm(&wc, imm, len, sv, snap, i))
			ok = false;
		memcpy(shadow + off, txb->va, len);
		if (!kt_same(mr->va, shadow, KT_REGION,
			     "server MR after write_imm")) {
			kt_fdiag("write_imm %d: %u bytes at %u, %d SGEs", i, len,
				 off, nsge);
			ok = false;
		}
	}
	return kt_no_strays(c) && ok;
}

struct kt_ilv {			/* one interleaved batch */
	struct ib_rdma_wr w[KT_NSLOT];
	struct ib_sge sge[KT_NSLOT];
	bool wimm[KT_NSLOT];
	u32 len[KT_NSLOT];
	u32 off[KT_NSLOT];
};

/*
 * Batches of Sends and Writes with Immediate in one chain: the receives
 * must complete in order, each as what was sent.
 */
static bool kt_interleaved(struct kt_conn *c, struct kt_mr *mr,
			   struct kt_buf *txb, struct kt_buf *srx, u8 *shadow,
			   u8 *snap, struct kt_ilv *b, int batches)
{
	const u32 chunk = KT_REGION / KT_NSLOT;
	struct ib_wc wc;
	bool ok = true;
	int r, i;

	for (r = 0; r < batches; r++) {
		kt_fill(mr->va, KT_REGION);
		memcpy(shadow, mr->va, KT_REGION);
		kt_fill(srx->va, KT_BUFLEN);
		memcpy(snap, srx->va, KT_BUFLEN);
		kt_fill(txb->va, KT_BUFLEN);
		for (i = 0; i < KT_NSLOT; i++) {
			if (kt_post_recv(&c->srv, srx, i))
				return false;
			/* both kinds in every batch */
			b->wimm[i] = i < 2 ? i : kt_below(2);
			if (b->wimm[i]) {
				b->len[i] = kt_len(chunk);
				b->off[i] = i * chunk +
					    kt_below(chunk - b->len[i] + 1);
			} else {
				b->len[i] = kt_len(KT_SLOT);
				b->off[i] = 0;
			}
			kt_sge(&b->sge[i], txb, i * KT_STRIDE, b->len[i]);
			kt_rdma_wr(&b->w[i], b->wimm[i] ?
				   IB_WR_RDMA_WRITE_WITH_IMM : IB_WR_SEND,
				   KT_WRID_SEND + i, &b->sge[i], 1,
				   b->wimm[i] ? mr : NULL, b->off[i]);
			b->w[i].wr.ex.imm_data = kt_imm();
			if (i)
				b->w[i - 1].wr.next = &b->w[i].wr;
		}
		if (kt_post_send(&c->cli, &b->w[0].wr))
			return false;
		for (i = 0; i < KT_NSLOT; i++)
			if (kt_expect(c->cli.scq, KT_WRID_SEND + i,
				      b->wimm[i] ? IB_WC_RDMA_WRITE : IB_WC_SEND,
				      IB_WC_SUCCESS, &wc, "interleaved (requester)"))
				return false;
		for (i = 0; i < KT_NSLOT; i++) {
			u8 *sv = srx->va + i * KT_STRIDE;
			u8 *ss = snap + i * KT_STRIDE;
			u8 *src = txb->va + i * KT_STRIDE;

			if (kt_expect(c->srv.rcq, KT_WRID_RECV + i,
				      b->wimm[i] ? IB_WC_RECV_RDMA_WITH_IMM :
				      IB_WC_RECV, IB_WC_SUCCESS, &wc,
				      "interleaved (responder, in order)"))
				return false;
			if (b->wimm[i]) {
				if (!kt_check_wimm(&wc, b->w[i].wr.ex.imm_data,
						   b->len[i], sv, ss, i))
					ok = false;
				memcpy(shadow + b->off[i], src, b->len[i]);
				continue;
			}
			if (wc.byte_len != b->len[i] ||
			    (wc.wc_flags & IB_WC_WITH_IMM)) {
				kt_fdiag("send %d: byte_len %u (sent %u), wc_flags 0x%x",
					 i, wc.byte_len, b->len[i], wc.wc_flags);
				ok = false;
			}
			if (!kt_same(sv, src, b->len[i], "received data") ||
			    !kt_same(sv + b->len[i], ss + b->len[i],
				     KT_STRIDE - b->len[i],
				     "receive slot past the data"))
				ok = false;
		}
		if (!kt_same(mr->va, shadow, KT_REGION,
			     "server MR after interleaved batch"))
			ok = false;
	}
	return kt_no_strays(c) && ok;
}

/*
 * Send with Immediate has no RFC 7306 encoding: ib_post_send must refuse
 * it with -EOPNOTSUPP and bad_wr pointing at it, the WR before it in the
 * chain must go out, none after it, and the send queue must stay usable.
 */
static bool kt_send_imm_refused(struct kt_conn *c, struct kt_buf *txb,
				struct kt_buf *srx)
{
	const struct ib_send_wr *bad = NULL;
	struct ib_rdma_wr w[3];
	struct ib_sge sge[3];
	struct ib_wc wc;
	bool ok = true;
	int i, rv;

	for (i = 0; i < 3; i++) {
		if (kt_post_recv(&c->srv, srx, i))
			return false;
		kt_sge(&sge[i], txb, i * KT_STRIDE, 8);
		kt_rdma_wr(&w[i], IB_WR_SEND, KT_WRID_SEND + i, &sge[i], 1,
			   NULL, 0);
	}
	/* alone */
	w[1].wr.opcode = IB_WR_SEND_WITH_IMM;
	w[1].wr.ex.imm_data = kt_imm();
	rv = ib_post_send(c->cli.qp, &w[1].wr, &bad);
	if (rv != -EOPNOTSUPP || bad != &w[1].wr) {
		kt_diag("SEND_WITH_IMM alone: ib_post_send %d (want %d), bad_wr %s",
			rv, -EOPNOTSUPP, bad == &w[1].wr ? "ok" : "wrong");
		ok = false;
		if (!rv)
			return false;	/* it went out: nothing more to learn */
	}
	/* in the middle of a chain */
	w[0].wr.next = &w[1].wr;
	w[1].wr.next = &w[2].wr;
	bad = NULL;
	rv = ib_post_send(c->cli.qp, &w[0].wr, &bad);
	if (rv != -EOPNOTSUPP || bad != &w[1].wr) {
		kt_diag("SEND, SEND_WITH_IMM, SEND chain: ib_post_send %d (want %d), bad_wr %s",
			rv, -EOPNOTSUPP, bad == &w[1].wr ? "ok" : "wrong");
		ok = false;
		if (!rv)
			return false;
	}
	if (kt_expect(c->cli.scq, KT_WRID_SEND, IB_WC_SEND, IB_WC_SUCCESS,
		      &wc, "send before the refused WR") ||
	    kt_expect(c->srv.rcq, KT_WRID_RECV, IB_WC_RECV, IB_WC_SUCCESS,
		      &wc, "receive of the send before the refused WR"))
		return false;
	/* the send queue still works; the third WR was never posted */
	w[2].wr.next = NULL;
	if (kt_post_send(&c->cli, &w[2].wr))
		return false;
	if (kt_expect(c->cli.scq, KT_WRID_SEND + 2, IB_WC_SEND, IB_WC_SUCCESS,
		      &wc, "send after the refused WR") ||
	    kt_expect(c->srv.rcq, KT_WRID_RECV + 1, IB_WC_RECV, IB_WC_SUCCESS,
		      &wc, "receive of the send after the refused WR"))
		return false;
	if (wc.byte_len != 8 || (wc.wc_flags & IB_WC_WITH_IMM)) {
		kt_diag("send after the refused WR: byte_len %u, wc_flags 0x%x",
			wc.byte_len, wc.wc_flags);
		ok = false;
	}
	/* one receive left over: consume it */
	w[2].wr.wr_id = KT_WRID_SEND + 3;
	if (kt_post_send(&c->cli, &w[2].wr) ||
	    kt_expect(c->cli.scq, KT_WRID_SEND + 3, IB_WC_SEND, IB_WC_SUCCESS,
		      &wc, "last send") ||
	    kt_expect(c->srv.rcq, KT_WRID_RECV + 2, IB_WC_RECV, IB_WC_SUCCESS,
		      &wc, "last receive"))
		return false;
	return kt_no_strays(c) && ok;
}

/*
 * Solicited events: with the server's receive CQ armed for solicited
 * completions only, an unsolicited message must not call the completion
 * handler and a solicited one must.
 */
static bool kt_solicited(struct kt_conn *c, struct kt_mr *mr,
			 struct kt_buf *txb, struct kt_buf *srx, bool wimm)
{
	struct kt_ep *srv = &c->srv;
	struct ib_rdma_wr w;
	struct ib_sge sge;
	struct ib_wc wc;
	int base, i, rv;
	bool ok = true;

	for (i = 0; i < 2; i++) {
		if (kt_post_recv(srv, srx, i))
			return false;
	}
	base = atomic_read(&srv->rcq_notify);
	rv = ib_req_notify_cq(srv->rcq, IB_CQ_SOLICITED);
	if (rv < 0) {
		kt_diag("ib_req_notify_cq(IB_CQ_SOLICITED): %d", rv);
		return false;
	}
	for (i = 0; i < 2; i++) {
		bool se = i == 1;

		kt_sge(&sge, txb, 0, 16);
		kt_rdma_wr(&w, wimm ? IB_WR_RDMA_WRITE_WITH_IMM : IB_WR_SEND,
			   KT_WRID_SEND + i, &sge, 1, wimm ? mr : NULL, 64);
		w.wr.ex.imm_data = kt_imm();
		if (se)
			w.wr.send_flags |= IB_SEND_SOLICITED;
		if (kt_post_send(&c->cli, &w.wr) ||
		    kt_expect(c->cli.scq, KT_WRID_SEND + i,
			      wimm ? IB_WC_RDMA_WRITE : IB_WC_SEND,
			      IB_WC_SUCCESS, &wc, "solicited test (requester)"))
			return false;
		if (se) {
			wait_event_timeout(srv->wq,
					   atomic_read(&srv->rcq_notify) != base,
					   msecs_to_jiffies(timeout_ms));
			if (atomic_read(&srv->rcq_notify) == base) {
				kt_diag("no completion event for the solicited %s within %u ms",
					wimm ? "Write with Immediate" : "Send",
					timeout_ms);
				ok = false;
			}
		}
		if (kt_expect(srv->rcq, KT_WRID_RECV + i,
			      wimm ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV,
			      IB_WC_SUCCESS, &wc, "solicited test (responder)"))
			return false;
		if (wimm && wc.ex.imm_data != w.wr.ex.imm_data) {
			kt_diag("solicited test: imm 0x%08x, want 0x%08x",
				be32_to_cpu(wc.ex.imm_data),
				be32_to_cpu(w.wr.ex.imm_data));
			ok = false;
		}
		if (!se) {
			/* the handler runs right after the CQE is written */
			msleep(50);
			if (atomic_read(&srv->rcq_notify) != base) {
				kt_diag("completion event for an unsolicited %s",
					wimm ? "Write with Immediate" : "Send");
				ok = false;
				/* re-arm for the solicited one */
				base = atomic_read(&srv->rcq_notify);
				ib_req_notify_cq(srv->rcq, IB_CQ_SOLICITED);
			}
		}
	}
	return kt_no_strays(c) && ok;
}

static void kt_group_imm(void)
{
	const struct ib_send_wr *bad = NULL;
	struct kt_buf *ctx, *srx;
	struct kt_ilv *ilv;
	struct kt_conn *c;
	struct kt_mr *mr;
	struct ib_rdma_wr w;
	struct ib_wc wc;
	u8 *shadow, *snap;
	__be32 imm;
	bool ok;
	int rv;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	ilv = kzalloc(sizeof(*ilv), GFP_KERNEL);
	shadow = kmalloc(KT_REGION, GFP_KERNEL);
	snap = kmalloc(KT_BUFLEN, GFP_KERNEL);
	if (!c || !ilv || !shadow || !snap) {
		kt_result(false, "imm.connect");
		goto free;
	}
	ok = !kt_connect(c);
	kt_result(ok, "imm.connect");
	if (!ok) {
		kt_teardown(c);
		goto free;
	}
	mr = kt_mr_new(c, &c->srv, KT_REGION,
		       IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE);
	ctx = kt_buf_new(c, &c->cli, KT_BUFLEN);
	srx = kt_buf_new(c, &c->srv, KT_BUFLEN);
	ok = mr && ctx && srx;
	kt_result(ok, "imm.reg_mr");
	if (!ok)
		goto disconnect;

	/*
	 * Probe: a zero-length Write with Immediate, unsignalled (upstream
	 * siw leaves a signalled WR it refuses in the send queue slot).
	 */
	if (kt_post_recv(&c->srv, srx, 0)) {
		kt_result(false, "imm.supported");
		goto disconnect;
	}
	kt_fill(srx->va, KT_STRIDE);
	memcpy(snap, srx->va, KT_STRIDE);
	imm = kt_imm();
	kt_rdma_wr(&w, IB_WR_RDMA_WRITE_WITH_IMM, KT_WRID_WIMM, NULL, 0, mr,
		   0);
	w.wr.send_flags = 0;
	w.wr.ex.imm_data = imm;
	rv = ib_post_send(c->cli.qp, &w.wr, &bad);
	if (rv == -EINVAL || rv == -EOPNOTSUPP) {
		if (c->srv.dev->attrs.atomic_cap == IB_ATOMIC_NONE &&
		    c->cli.dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
			kt_skip("imm", "%s refuses IB_WR_RDMA_WRITE_WITH_IMM at post time (%d): no RFC 7306 immediate data",
				c->cli.dev->name, rv);
		} else {
			kt_diag("the device reports RFC 7306 atomics but refuses IB_WR_RDMA_WRITE_WITH_IMM (%d)",
				rv);
			kt_result(false, "imm.supported");
		}
		goto disconnect;
	}
	if (rv) {
		kt_diag("ib_post_send(RDMA_WRITE_WITH_IMM): %d", rv);
		kt_result(false, "imm.supported");
		goto disconnect;
	}
	ok = !kt_expect(c->srv.rcq, KT_WRID_RECV, IB_WC_RECV_RDMA_WITH_IMM,
			IB_WC_SUCCESS, &wc, "probe write_imm (responder)") &&
	     kt_check_wimm(&wc, imm, 0, srx->va, snap, 0) && kt_no_strays(c);
	kt_result(ok, "imm.supported");
	if (!ok)
		goto disconnect;

	kt_result(kt_write_imm(c, mr, ctx, srx, shadow, snap, 64),
		  "imm.write_imm");
	kt_result(kt_interleaved(c, mr, ctx, srx, shadow, snap, ilv, 4),
		  "imm.interleaved_send");
	kt_result(kt_solicited(c, mr, ctx, srx, true),
		  "imm.solicited_write_imm");
	kt_result(kt_solicited(c, mr, ctx, srx, false), "imm.solicited_send");
	/* last: a refused WR that is not cleaned up blocks the send queue */
	kt_result(kt_send_imm_refused(c, ctx, srx), "imm.send_with_imm_refused");
disconnect:
	kt_result(kt_disconnect(c), "imm.disconnect");
free:
	kfree(snap);
	kfree(shadow);
	kfree(ilv);
	kfree(c);
}

/* -------------------------------------------------------- atomic group */

enum kt_aop { KT_FADD, KT_CSWAP, KT_MFADD, KT_MCSWAP, KT_NAOPS };

static const struct {
	const char *name;
	enum ib_wr_opcode wr;
	enum ib_wc_opcode wc;
	bool masked;
} kt_aops[KT_NAOPS] = {
	[KT_FADD] = { "atomic.fetch_add", IB_WR_ATOMIC_FETCH_AND_ADD,
		      IB_WC_FETCH_ADD, false },
	[KT_CSWAP] = { "atomic.cmp_swap", IB_WR_ATOMIC_CMP_AND_SWP,
		       IB_WC_COMP_SWAP, false },
	[KT_MFADD] = { "atomic.masked_fetch_add",
		       IB_WR_MASKED_ATOMIC_FETCH_AND_ADD,
		       IB_WC_MASKED_FETCH_ADD, true },
	[KT_MCSWAP] = { "atomic.masked_cmp_swap",
			IB_WR_MASKED_ATOMIC_CMP_AND_SWP,
			IB_WC_MASKED_COMP_SWAP, true },
};

struct kt_acase {
	enum kt_aop op;
	u64 mem;		/* target before */
	u64 cmp_add;		/* compare or add operand */
	u64 swap;
	u64 cmp_add_mask;	/* compare mask or field boundaries */
	u64 swap_mask;
};

static const u64 kt_edges[] = {
	0, ~0ULL, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0xffffffffULL,
	0x100000000ULL, 0x7fffffffffffffffULL, 0x8000000000000000ULL,
	0xfffffffffffffffeULL, 0x0101010101010101ULL, 0x7f7f7f7f7f7f7f7fULL,
	0x8080808080808080ULL, 0x00ff00ff00ff00ffULL, 0xff00ff00ff00ff00ULL,
	0x0001000100010001ULL, 0x0123456789abcdefULL, 0xfedcba9876543210ULL,
};

static u64 kt_val(void)
{
	switch (kt_below(8)) {
	case 0:
	case 1:
	case 2:
		return kt_edges[kt_below(ARRAY_SIZE(kt_edges))];
	case 3:
		return BIT_ULL(kt_below(64));
	case 4:
		return BIT_ULL(kt_below(64)) - 1;
	case 5:
		return ~(BIT_ULL(kt_below(64)) - 1);
	default:
		return kt_r64();
	}
}

/* field boundaries of a masked FetchAdd */
static u64 kt_boundaries(void)
{
	switch (kt_below(9)) {
	case 0:
		return 0;
	case 1:
		return ~0ULL;
	case 2:
		return 0x8080808080808080ULL;
	case 3:
		return 0x8000800080008000ULL;
	case 4:
		return 0x8000000080000000ULL;
	case 5:
		return BIT_ULL(kt_below(64));
	case 6:
		return kt_r64() & kt_r64();
	default:
		return kt_r64();
	}
}

/* compare and swap masks */
static u64 kt_field_mask(void)
{
	switch (kt_below(9)) {
	case 0:
		return 0;
	case 1:
		return ~0ULL;
	case 2:
		return 0xffffffffULL;
	case 3:
		return 0xffffffff00000000ULL;
	case 4:
		return 0x00ff00ff00ff00ffULL;
	case 5:
		return BIT_ULL(kt_below(64));
	case 6:
		return kt_r64() | kt_r64();
	default:
		return kt_r64();
	}
}

/* a compare value: equal under cmask, one bit off, or anything */
static u64 kt_compare(u64 mem, u64 cmask)
{
	u32 r = kt_below(10);
	int bit;

	if (r < 4)
		return mem ^ (kt_r64() & ~cmask);
	if (r < 7 && cmask) {
		do {
			bit = kt_below(64);
		} while (!(cmask & BIT_ULL(bit)));
		return mem ^ BIT_ULL(bit) ^ (kt_r64() & ~cmask);
	}
	return kt_val();
}

/* reference model: addition whose carry stops at every boundary bit */
static u64 kt_masked_add(u64 a, u64 b, u64 boundary)
{
	u64 sum = 0, carry = 0;
	int i;

	for (i = 0; i < 64; i++) {
		u64 x = (a >> i) & 1, y = (b >> i) & 1;

		sum |= (x ^ y ^ carry) << i;
		carry = (x & y) | (x & carry) | (y & carry);
		if (boundary & BIT_ULL(i))
			carry = 0;
	}
	return sum;
}

static bool kt_cswap_hit(const struct kt_acase *a)
{
	u64 m = a->op == KT_MCSWAP ? a->cmp_add_mask : ~0ULL;

	return (a->mem & m) == (a->cmp_add & m);
}

/* reference model: the target after the operation */
static u64 kt_amodel(const struct kt_acase *a)
{
	switch (a->op) {
	case KT_FADD:
		return a->mem + a->cmp_add;
	case KT_MFADD:
		return kt_masked_add(a->mem, a->cmp_add, a->cmp_add_mask);
	case KT_CSWAP:
		return kt_cswap_hit(a) ? a->swap : a->mem;
	case KT_MCSWAP:
		if (!kt_cswap_hit(a))
			return a->mem;
		return (a->mem & ~a->swap_mask) | (a->swap & a->swap_mask);
	default:
		return a->mem;
	}
}

static void kt_agen(struct kt_acase *a, enum kt_aop op, u64 mem)
{
	a->op = op;
	a->mem = mem;
	/* unmasked operations must ignore the masks (and FetchAdd swap) */
	a->swap = kt_val();
	a->cmp_add_mask = kt_r64();
	a->swap_mask = kt_r64();
	switch (op) {
	case KT_FADD:
		a->cmp_add = kt_val();
		break;
	case KT_MFADD:
		a->cmp_add = kt_val();
		a->cmp_add_mask = kt_boundaries();
		break;
	case KT_CSWAP:
		a->cmp_add = kt_compare(mem, ~0ULL);
		break;
	default:
		a->cmp_add_mask = kt_field_mask();
		a->swap_mask = kt_field_mask();
		a->cmp_add = kt_compare(mem, a->cmp_add_mask);
		break;
	}
}

static void kt_awr(struct ib_atomic_wr *w, const struct kt_acase *a,
		   u64 wr_id, struct ib_sge *sge, struct kt_mr *mr, u32 off)
{
	memset(w, 0, sizeof(*w));
	w->wr.opcode = kt_aops[a->op].wr;
	w->wr.wr_id = wr_id;
	w->wr.sg_list = sge;
	w->wr.num_sge = 1;
	w->wr.send_flags = IB_SEND_SIGNALED;
	w->remote_addr = mr->iova + off;
	w->rkey = mr->rkey;
	w->compare_add = a->cmp_add;
	w->swap = a->swap;
	w->compare_add_mask = a->cmp_add_mask;
	w->swap_mask = a->swap_mask;
}

static void kt_adiag(const char *what, const struct kt_acase *a, u32 off)
{
	kt_fdiag("%s: %s at +%u: mem 0x%016llx cmp_add 0x%016llx swap 0x%016llx cmp_add_mask 0x%016llx swap_mask 0x%016llx",
		 what, kt_aops[a->op].name, off, a->mem, a->cmp_add, a->swap,
		 a->cmp_add_mask, a->swap_mask);
}

#define KT_RES_OFF	16	/* result word in the result buffer */
#define KT_RES_LEN	(KT_RES_OFF + KT_CHAIN * 8 + KT_GUARD)

struct kt_actx {
	struct kt_conn *c;
	struct kt_mr *mr;	/* server: the target page */
	struct kt_buf *res;	/* client: original values */
	struct kt_buf *src;	/* client: RDMA Write source */
	struct kt_buf *sink;	/* client: RDMA Read sink */
	u8 *shadow;		/* what the target page must hold */
	u8 *snap;
	bool aborted;
};

struct kt_astat {
	u32 cases, fails, by_write, by_read, hit, miss;
	u64 ns, max_ns;		/* post to completion */
};

/* the whole target page against the shadow; resync after a mismatch */
static bool kt_page_ok(struct kt_actx *x, const char *what)
{
	u64 *got = x->mr->va, *want = (u64 *)x->shadow;
	int i;

	for (i = 0; i < KT_AREGION / 8; i++) {
		if (READ_ONCE(got[i]) != want[i]) {
			kt_fdiag("%s: target page word at +%d is 0x%016llx, expected 0x%016llx",
				 what, i * 8, got[i], want[i]);
			memcpy(x->shadow, x->mr->va, KT_AREGION);
			return false;
		}
	}
	return true;
}

/*
 * One atomic case. Returns <0 when the connection is unusable (no or a
 * failed completion), otherwise 0, and *bad for a wrong value.
 */
static int kt_atomic_one(struct kt_actx *x, const struct kt_acase *a, u32 off,
			 bool by_write, bool by_read, bool *bad, u64 *ns)
{
	u64 want = kt_amodel(a), got;
	u8 *res = x->res->va;
	struct ib_atomic_wr aw;
	struct ib_rdma_wr w;
	struct ib_sge asge, wsge;
	struct ib_wc wc;
	int i, n, seen = 0;
	ktime_t t0;

	*bad = false;
	*ns = 0;
	kt_fill(res, KT_RES_LEN);
	*(u64 *)(res + KT_RES_OFF) = ~a->mem;
	memcpy(x->snap, res, KT_RES_LEN);
	if (by_write)
		*(u64 *)x->src->va = a->mem;
	else
		WRITE_ONCE(*(u64 *)(x->mr->va + off), a->mem);
	*(u64 *)(x->shadow + off) = a->mem;

	kt_sge(&asge, x->res, KT_RES_OFF, 8);
	kt_awr(&aw, a, KT_WRID_ATOMIC, &asge, x->mr, off);
	if (by_write) {
		kt_sge(&wsge, x->src, 0, 8);
		kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_WRITE, &wsge, 1, x->mr,
			   off);
		w.wr.next = &aw.wr;
	}
	t0 = ktime_get();
	if (kt_post_send(&x->c->cli, by_write ? &w.wr : &aw.wr))
		return -EIO;
	n = by_write ? 2 : 1;
	for (i = 0; i < n; i++) {
		if (kt_poll(x->c->cli.scq, &wc, timeout_ms)) {
			kt_diag("no atomic completion within %u ms", timeout_ms);
			kt_adiag("case", a, off);
			return -ETIMEDOUT;
		}
		if (wc.status == IB_WC_SUCCESS) {
			if (wc.wr_id == KT_WRID_ATOMIC && !(seen & 1) &&
			    wc.opcode == kt_aops[a->op].wc) {
				seen |= 1;
				continue;
			}
			if (by_write && wc.wr_id == KT_WRID_WRITE &&
			    !(seen & 2) && wc.opcode == IB_WC_RDMA_WRITE) {
				seen |= 2;
				continue;
			}
		}
		kt_wc_diag("atomic case", &wc);
		kt_diag("expected opcode %d (wr_id 0x%x)", kt_aops[a->op].wc,
			KT_WRID_ATOMIC);
		kt_budget = 1;
		kt_adiag("case", a, off);
		return -EIO;
	}
	*ns = ktime_to_ns(ktime_sub(ktime_get(), t0));
	got = READ_ONCE(*(u64 *)(res + KT_RES_OFF));
	if (got != a->mem) {
		kt_adiag("wrong original value", a, off);
		kt_fdiag("returned 0x%016llx, expected 0x%016llx", got, a->mem);
		*bad = true;
	}
	if (!kt_same(res, x->snap, KT_RES_OFF, "result buffer before the word") ||
	    !kt_same(res + KT_RES_OFF + 8, x->snap + KT_RES_OFF + 8,
		     KT_RES_LEN - KT_RES_OFF - 8, "result buffer after the word"))
		*bad = true;
	*(u64 *)(x->shadow + off) = want;
	if (by_read) {
		kt_fill(x->sink->va, 16);
		kt_sge(&wsge, x->sink, 0, 8);
		kt_rdma_wr(&w, IB_WR_RDMA_READ, KT_WRID_READ, &wsge, 1, x->mr,
			   off);
		if (kt_post_send(&x->c->cli, &w.wr) ||
		    kt_expect(x->c->cli.scq, KT_WRID_READ, IB_WC_RDMA_READ,
			      IB_WC_SUCCESS, &wc, "read back after atomic"))
			return -EIO;
		got = *(u64 *)x->sink->va;
		if (got != want) {
			kt_adiag("target read back wrong", a, off);
			kt_fdiag("read 0x%016llx, expected 0x%016llx", got, want);
			*bad = true;
		}
	}
	got = READ_ONCE(*(u64 *)(x->mr->va + off));
	if (got != want) {
		kt_adiag("wrong target value", a, off);
		kt_fdiag("target 0x%016llx, expected 0x%016llx", got, want);
		*(u64 *)(x->shadow + off) = got;
		*bad = true;
	}
	if (!kt_page_ok(x, "after atomic"))
		*bad = true;
	return 0;
}

static void kt_atomic_random(struct kt_actx *x, int nops,
			     const enum kt_aop *ops)
{
	struct kt_astat st[KT_NAOPS] = {};
	struct kt_acase a;
	u32 i, abort_at = 0;
	bool bad;
	u64 ns;
	int k;

	for (i = 0; i < iterations && !x->aborted; i++) {
		enum kt_aop op = ops[kt_below(nops)];
		u32 off = 8 * kt_below(KT_AREGION / 8);
		bool by_write = !kt_below(4), by_read = !kt_below(8);

		kt_agen(&a, op, kt_val());
		st[op].cases++;
		st[op].by_write += by_write;
		st[op].by_read += by_read;
		if (op == KT_CSWAP || op == KT_MCSWAP) {
			if (kt_cswap_hit(&a))
				st[op].hit++;
			else
				st[op].miss++;
		}
		if (kt_atomic_one(x, &a, off, by_write, by_read, &bad,
				  &ns) < 0) {
			x->aborted = true;
			abort_at = i;
			st[op].fails++;
		} else if (bad) {
			st[op].fails++;
		}
		st[op].ns += ns;
		st[op].max_ns = max(st[op].max_ns, ns);
	}
	for (k = 0; k < nops; k++) {
		struct kt_astat *s = &st[ops[k]];
		u64 mean_us = 0;

		if (s->cases)
			mean_us = div_u64(s->ns, s->cases) / 1000;

		if (s->hit || s->miss)
			kt_diag("%s: compare matched in %u cases, not in %u",
				kt_aops[ops[k]].name, s->hit, s->miss);
		kt_diag("%s: %u cases (%u set by RDMA Write, %u read back by RDMA Read): %u failed; post to completion mean %llu us, max %llu us",
			kt_aops[ops[k]].name, s->cases, s->by_write, s->by_read,
			s->fails, mean_us, div_u64(s->max_ns, 1000));
		if (x->aborted)
			kt_diag("%s: aborted at case %u of %u: the connection is unusable",
				kt_aops[ops[k]].name, abort_at, iterations);
		kt_result(!s->fails && !x->aborted, kt_aops[ops[k]].name);
	}
}

/*
 * KT_CHAIN random atomics on one word, posted as one chain: more than the
 * ORD, so the requester has to hold some back until responses arrive.
 */
static bool kt_atomic_chain(struct kt_actx *x, int nops,
			    const enum kt_aop *ops, int rounds)
{
	struct ib_atomic_wr *aw;
	struct kt_acase *a;
	struct ib_sge *sge;
	struct ib_wc wc;
	bool ok = true;
	int r, i;

	aw = kcalloc(KT_CHAIN, sizeof(*aw), GFP_KERNEL);
	a = kcalloc(KT_CHAIN, sizeof(*a), GFP_KERNEL);
	sge = kcalloc(KT_CHAIN, sizeof(*sge), GFP_KERNEL);
	if (!aw || !a || !sge) {
		ok = false;
		goto out;
	}
	for (r = 0; r < rounds && ok; r++) {
		u32 off = 8 * kt_below(KT_AREGION / 8);
		u64 mem = kt_val(), got;
		u32 seen = 0;

		kt_fill(x->res->va, KT_RES_LEN);
		memcpy(x->snap, x->res->va, KT_RES_LEN);
		WRITE_ONCE(*(u64 *)(x->mr->va + off), mem);
		for (i = 0; i < KT_CHAIN; i++) {
			kt_agen(&a[i], ops[kt_below(nops)], mem);
			mem = kt_amodel(&a[i]);
			kt_sge(&sge[i], x->res, KT_RES_OFF + 8 * i, 8);
			kt_awr(&aw[i], &a[i], KT_WRID_ATOMIC + i, &sge[i],
			       x->mr, off);
			if (i)
				aw[i - 1].wr.next = &aw[i].wr;
		}
		*(u64 *)(x->shadow + off) = mem;
		if (kt_post_send(&x->c->cli, &aw[0].wr)) {
			ok = false;
			break;
		}
		for (i = 0; i < KT_CHAIN; i++) {
			int j;

			if (kt_poll(x->c->cli.scq, &wc, timeout_ms)) {
				kt_diag("chain: %d of %d completions within %u ms",
					i, KT_CHAIN, timeout_ms);
				ok = false;
				x->aborted = true;
				break;
			}
			j = wc.wr_id - KT_WRID_ATOMIC;
			if (wc.status != IB_WC_SUCCESS || j < 0 ||
			    j >= KT_CHAIN || (seen & BIT(j)) ||
			    wc.opcode != kt_aops[a[j].op].wc) {
				kt_wc_diag("chain", &wc);
				ok = false;
				if (wc.status != IB_WC_SUCCESS)
					x->aborted = true;
				break;
			}
			seen |= BIT(j);
		}
		if (!ok)
			break;
		for (i = 0; i < KT_CHAIN; i++) {
			got = *(u64 *)(x->res->va + KT_RES_OFF + 8 * i);
			if (got != a[i].mem) {
				kt_adiag("chain: wrong original value", &a[i],
					 off);
				kt_fdiag("chain element %d returned 0x%016llx, expected 0x%016llx",
					 i, got, a[i].mem);
				ok = false;
			}
		}
		if (!kt_same(x->res->va, x->snap, KT_RES_OFF,
			     "chain result buffer before the words") ||
		    !kt_same(x->res->va + KT_RES_OFF + 8 * KT_CHAIN,
			     x->snap + KT_RES_OFF + 8 * KT_CHAIN, KT_GUARD,
			     "chain result buffer after the words"))
			ok = false;
		if (!kt_page_ok(x, "after chain"))
			ok = false;
	}
out:
	kfree(sge);
	kfree(a);
	kfree(aw);
	return ok && kt_no_strays(x->c);
}

/*
 * A misaligned target: the responder must refuse it with a Terminate
 * (RDMAP, Remote Operation), the requester complete it with
 * IB_WC_REM_INV_REQ_ERR, and the memory stay untouched. Kills the QP.
 */
static bool kt_atomic_misaligned(struct kt_actx *x)
{
	u32 off = 8 * kt_below(KT_AREGION / 8 - 1) + 4;
	struct ib_wc wc = {};
	struct ib_atomic_wr aw;
	struct kt_acase a;
	struct ib_sge sge;
	bool ok = true;

	kt_agen(&a, KT_FADD, 0);
	a.cmp_add = 1;
	kt_fill(x->res->va, KT_RES_LEN);
	memcpy(x->snap, x->res->va, KT_RES_LEN);
	kt_sge(&sge, x->res, KT_RES_OFF, 8);
	kt_awr(&aw, &a, KT_WRID_ATOMIC, &sge, x->mr, off);
	if (kt_post_send(&x->c->cli, &aw.wr))
		return false;
	if (kt_expect(x->c->cli.scq, KT_WRID_ATOMIC, IB_WC_FETCH_ADD,
		      IB_WC_REM_INV_REQ_ERR, &wc, "misaligned FetchAdd"))
		ok = false;
	/* give a wrongly executed operation time to land */
	msleep(100);
	if (!kt_page_ok(x, "after misaligned FetchAdd"))
		ok = false;
	if (!kt_same(x->res->va, x->snap, KT_RES_LEN,
		     "result buffer of the misaligned FetchAdd"))
		ok = false;
	kt_diag("misaligned FetchAdd at +%u: status %s; QP events: client %d, server %d",
		off, ib_wc_status_msg(wc.status),
		atomic_read(&x->c->cli.qp_events),
		atomic_read(&x->c->srv.qp_events));
	return ok;
}

static void kt_group_atomic(void)
{
	struct ib_device *dev = kt_listener.id->device;
	enum kt_aop ops[KT_NAOPS];
	struct kt_actx x = {};
	struct kt_conn *c;
	int nops = 0, k;
	bool ok, masked;

	if (!dev || dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
		kt_skip("atomic", "%s: atomic_cap IB_ATOMIC_NONE (no RFC 7306 atomics)",
			dev ? dev->name : "listener without device");
		return;
	}
	c = kzalloc(sizeof(*c), GFP_KERNEL);
	x.shadow = kmalloc(KT_AREGION, GFP_KERNEL);
	x.snap = kmalloc(KT_RES_LEN, GFP_KERNEL);
	x.c = c;
	if (!c || !x.shadow || !x.snap) {
		kt_result(false, "atomic.connect");
		goto free;
	}
	ok = !kt_connect(c);
	kt_result(ok, "atomic.connect");
	if (!ok) {
		kt_teardown(c);
		goto free;
	}
	if (c->cli.dev->attrs.atomic_cap == IB_ATOMIC_NONE) {
		kt_skip("atomic.ops", "client device %s: atomic_cap IB_ATOMIC_NONE",
			c->cli.dev->name);
		goto disconnect;
	}
	x.mr = kt_mr_new(c, &c->srv, KT_AREGION, IB_ACCESS_LOCAL_WRITE |
			 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
			 IB_ACCESS_REMOTE_ATOMIC);
	x.res = kt_buf_new(c, &c->cli, KT_RES_LEN);
	x.src = kt_buf_new(c, &c->cli, 64);
	x.sink = kt_buf_new(c, &c->cli, 64);
	ok = x.mr && x.res && x.src && x.sink;
	kt_result(ok, "atomic.reg_mr");
	if (!ok)
		goto disconnect;
	kt_fill(x.mr->va, KT_AREGION);
	memcpy(x.shadow, x.mr->va, KT_AREGION);

	masked = c->srv.dev->attrs.masked_atomic_cap != IB_ATOMIC_NONE &&
		 c->cli.dev->attrs.masked_atomic_cap != IB_ATOMIC_NONE;
	ops[nops++] = KT_FADD;
	ops[nops++] = KT_CSWAP;
	if (masked) {
		ops[nops++] = KT_MFADD;
		ops[nops++] = KT_MCSWAP;
	}
	kt_atomic_random(&x, nops, ops);
	for (k = 0; k < KT_NAOPS; k++)
		if (kt_aops[k].masked && !masked)
			kt_skip(kt_aops[k].name, "masked_atomic_cap IB_ATOMIC_NONE");

	if (x.aborted) {
		kt_result(false, "atomic.chain");
		kt_result(false, "atomic.misaligned");
		goto disconnect;
	}
	kt_result(kt_atomic_chain(&x, nops, ops, 8), "atomic.chain");
	if (x.aborted) {
		kt_result(false, "atomic.misaligned");
		goto disconnect;
	}
	/* last: it terminates the connection */
	kt_result(kt_atomic_misaligned(&x), "atomic.misaligned");
disconnect:
	kt_result(kt_disconnect(c), "atomic.disconnect");
free:
	kfree(x.snap);
	kfree(x.shadow);
	kfree(c);
}

/* ---------------------------------------------------------- flush group */

/*
 * RDMA Flush and Atomic Write (Documentation/flush.md, "Kernel ULPs"):
 * both are posted as struct ib_atomic_wr, num_sge 0. IB_WR_FLUSH:
 * compare_add the length, swap the placement type bits (IB_FLUSH_GLOBAL,
 * IB_FLUSH_PERSISTENT), swap_mask the selectivity (IB_FLUSH_RANGE,
 * IB_FLUSH_MR). IB_WR_ATOMIC_WRITE: swap the value, stored as the u64 is
 * in memory.
 */
#define KT_FREGION	8192		/* server MR of flush */
#define KT_FITER	64		/* Write+Flush and Atomic Write rounds */

struct kt_fctx {
	struct kt_conn *c;
	struct kt_mr *mr;
	struct kt_buf *src;
	u8 *shadow;			/* what the MR must hold */
};

static void kt_flush_wr(struct ib_atomic_wr *w, u64 wr_id, struct kt_mr *m,
			size_t off, u64 len, u64 type, u64 level,
			bool signaled)
{
	memset(w, 0, sizeof(*w));
	w->wr.opcode = IB_WR_FLUSH;
	w->wr.wr_id = wr_id;
	w->wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
	w->remote_addr = m->iova + off;
	w->rkey = m->rkey;
	w->compare_add = len;
	w->swap = type;
	w->swap_mask = level;
}

static void kt_awrite_wr(struct ib_atomic_wr *w, u64 wr_id, struct kt_mr *m,
			 size_t off, u64 val, bool signaled)
{
	memset(w, 0, sizeof(*w));
	w->wr.opcode = IB_WR_ATOMIC_WRITE;
	w->wr.wr_id = wr_id;
	w->wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
	w->remote_addr = m->iova + off;
	w->rkey = m->rkey;
	w->swap = val;
}

/* a successful Flush or Atomic Write completion: opcode, byte_len 0 */
static bool kt_fexpect(struct kt_conn *c, u64 wr_id, enum ib_wc_opcode op,
		       const char *what)
{
	struct ib_wc wc;

	if (kt_expect(c->cli.scq, wr_id, op, IB_WC_SUCCESS, &wc, what))
		return false;
	if (wc.byte_len) {
		kt_wc_diag(what, &wc);
		kt_diag("%s: byte_len %u, expected 0", what, wc.byte_len);
		return false;
	}
	return true;
}

static bool kt_flush_caps(struct kt_conn *c)
{
	struct ib_device *devs[] = { c->cli.dev, c->srv.dev };
	bool ok = true;
	int i;

	for (i = 0; i < ARRAY_SIZE(devs); i++) {
		u64 f = devs[i]->attrs.device_cap_flags;
		bool pers = !!(f & IB_DEVICE_FLUSH_PERSISTENT);

		kt_diag("%s: FLUSH_GLOBAL %d, FLUSH_PERSISTENT %d, ATOMIC_WRITE %d",
			devs[i]->name, !!(f & IB_DEVICE_FLUSH_GLOBAL), pers,
			!!(f & IB_DEVICE_ATOMIC_WRITE));
		if (!(f & IB_DEVICE_FLUSH_GLOBAL) ||
		    !(f & IB_DEVICE_ATOMIC_WRITE))
			ok = false;
		/* persistence exactly where the kernel has the pmem API */
		if (pers != IS_ENABLED(CONFIG_ARCH_HAS_PMEM_API))
			ok = false;
	}
	return ok;
}

/*
 * n rounds: an unsignaled RDMA Write of random bytes, then a signaled
 * global Flush of its range. When the Flush completes, the Write must be
 * placed (the Flush Response follows the placement), and nothing else in
 * the region may have changed.
 */
static bool kt_flush_after_writes(struct kt_fctx *x, int n)
{
	struct ib_atomic_wr f;
	struct ib_rdma_wr w;
	struct ib_sge sge;
	int i;

	for (i = 0; i < n; i++) {
		u32 off = kt_below(KT_FREGION);
		u32 len = 1 + kt_below(min_t(u32, KT_FREGION - off, 2048));

		kt_fill(x->src->va, len);
		kt_sge(&sge, x->src, 0, len);
		kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_WRITE, &sge, 1, x->mr,
			   off);
		w.wr.send_flags = 0;
		kt_flush_wr(&f, KT_WRID_FLUSH + i, x->mr, off, len,
			    IB_FLUSH_GLOBAL, IB_FLUSH_RANGE, true);
		w.wr.next = &f.wr;
		if (kt_post_send(&x->c->cli, &w.wr))
			return false;
		if (!kt_fexpect(x->c, KT_WRID_FLUSH + i, IB_WC_FLUSH, "Flush"))
			return false;
		/* no wait: the completion itself says it is placed */
		if (!kt_same(x->mr->va + off, x->src->va, len,
			     "bytes written before the Flush")) {
			kt_diag("round %d: Write of %u bytes at +%u", i, len, off);
			return false;
		}
		memcpy(x->shadow + off, x->src->va, len);
	}
	return kt_same(x->mr->va, x->shadow, KT_FREGION, "flush region");
}

/* selectivity MR: the whole region, the range fields ignored */
static bool kt_flush_mr_level(struct kt_fctx *x)
{
	struct ib_atomic_wr f;
	struct ib_rdma_wr w;
	struct ib_sge sge;

	kt_fill(x->src->va, 64);
	kt_sge(&sge, x->src, 0, 64);
	kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_WRITE, &sge, 1, x->mr,
		   KT_FREGION - 64);
	w.wr.send_flags = 0;
	kt_flush_wr(&f, KT_WRID_FLUSH, x->mr, 0, 0, IB_FLUSH_GLOBAL,
		    IB_FLUSH_MR, true);
	w.wr.next = &f.wr;
	if (kt_post_send(&x->c->cli, &w.wr) ||
	    !kt_fexpect(x->c, KT_WRID_FLUSH, IB_WC_FLUSH, "Flush (MR)"))
		return false;
	memcpy(x->shadow + KT_FREGION - 64, x->src->va, 64);
	return kt_same(x->mr->va, x->shadow, KT_FREGION, "flush region");
}

/* n Atomic Writes of random values at random aligned offsets */
static bool kt_awrite_random(struct kt_fctx *x, int n)
{
	struct ib_atomic_wr a;
	int i;

	for (i = 0; i < n; i++) {
		u32 off = 8 * kt_below(KT_FREGION / 8);
		u64 v = kt_r64();

		kt_awrite_wr(&a, KT_WRID_AWRITE + i, x->mr, off, v, true);
		if (kt_post_send(&x->c->cli, &a.wr))
			return false;
		if (!kt_fexpect(x->c, KT_WRID_AWRITE + i, IB_WC_ATOMIC_WRITE,
				"Atomic Write"))
			return false;
		memcpy(x->shadow + off, &v, 8);
		if (!kt_same(x->mr->va, x->shadow, KT_FREGION,
			     "region after an Atomic Write")) {
			kt_diag("round %d: 0x%016llx at +%u", i, v, off);
			return false;
		}
	}
	return true;
}

/*
 * The persistent-memory pipeline: Write 4 KiB, Flush, Atomic Write of the
 * "pointer", Flush, only the last signaled. Its completion means all of
 * it is placed.
 */
static bool kt_flush_pipeline(struct kt_fctx *x)
{
	struct ib_atomic_wr f1, aw, f2;
	struct ib_rdma_wr w;
	struct ib_sge sge;
	u64 ptr = kt_r64();

	kt_fill(x->src->va, 4096);
	kt_sge(&sge, x->src, 0, 4096);
	kt_rdma_wr(&w, IB_WR_RDMA_WRITE, KT_WRID_WRITE, &sge, 1, x->mr, 0);
	w.wr.send_flags = 0;
	kt_flush_wr(&f1, KT_WRID_FLUSH, x->mr, 0, 4096, IB_FLUSH_GLOBAL,
		    IB_FLUSH_RANGE, false);
	kt_awrite_wr(&aw, KT_WRID_AWRITE, x->mr, 4096, ptr, false);
	kt_flush_wr(&f2, KT_WRID_FLUSH + 1, x->mr, 4096, 8, IB_FLUSH_GLOBAL,
		    IB_FLUSH_RANGE, true);
	w.wr.next = &f1.wr;
	f1.wr.next = &aw.wr;
	aw.wr.next = &f2.wr;
	if (kt_post_send(&x->c->cli, &w.wr) ||
	    !kt_fexpect(x->c, KT_WRID_FLUSH + 1, IB_WC_FLUSH, "pipeline"))
		return false;
	memcpy(x->shadow, x->src->va, 4096);
	memcpy(x->shadow + 4096, &ptr, 8);
	return kt_same(x->mr->va, x->shadow, KT_FREGION, "pipeline region");
}

/* work requests flush.md refuses at post time; nothing may complete */
static bool kt_flush_post_refused(struct kt_fctx *x)
{
	static const struct {
		u64 type, level;
	} bad[] = {
		{ 0, IB_FLUSH_RANGE },			/* no placement type */
		{ IB_FLUSH_GLOBAL | 4, IB_FLUSH_RANGE },	/* unknown type bit */
		{ IB_FLUSH_GLOBAL, IB_FLUSH_MR + 1 },	/* unknown level */
	};
	struct ib_atomic_wr f;
	struct ib_wc wc;
	bool ok = true;
	int i, rv;

	for (i = 0; i < ARRAY_SIZE(bad); i++) {
		const struct ib_send_wr *badwr = NULL;

		kt_flush_wr(&f, KT_WRID_FLUSH + i, x->mr, 0, 8, bad[i].type,
			    bad[i].level, true);
		rv = ib_post_send(x->c->cli.qp, &f.wr, &badwr);
		if (!rv) {
			kt_diag("Flush type 0x%llx level %llu: posted, expected a refusal",
				bad[i].type, bad[i].level);
			ok = false;
		}
	}
	msleep(100);
	while (ib_poll_cq(x->c->cli.scq, 1, &wc) > 0) {
		kt_wc_diag("refused Flush", &wc);
		ok = false;
	}
	return ok;
}

/*
 * Last on its connection (it terminates it): a Flush of a region without
 * flush access completes with a remote access error, nothing changes.
 */
static bool kt_flush_refused(struct kt_fctx *x)
{
	struct kt_mr *m = kt_mr_new(x->c, &x->c->srv, 4096,
				    IB_ACCESS_LOCAL_WRITE |
				    IB_ACCESS_REMOTE_WRITE |
				    IB_ACCESS_REMOTE_READ);
	struct ib_atomic_wr f;
	struct ib_wc wc;
	u8 *snap;
	bool ok;

	if (!m)
		return false;
	snap = kmalloc(4096, GFP_KERNEL);
	if (!snap)
		return false;
	kt_fill(m->va, 4096);
	memcpy(snap, m->va, 4096);
	kt_flush_wr(&f, KT_WRID_FLUSH, m, 0, 4096, IB_FLUSH_GLOBAL,
		    IB_FLUSH_RANGE, true);
	ok = !kt_post_send(&x->c->cli, &f.wr) &&
	     !kt_expect(x->c->cli.scq, KT_WRID_FLUSH, IB_WC_FLUSH,
			IB_WC_REM_ACCESS_ERR, &wc, "Flush without flush access");
	msleep(100);
	ok &= kt_same(m->va, snap, 4096, "region without flush access");
	ok &= kt_same(x->mr->va, x->shadow, KT_FREGION, "flush region");
	kfree(snap);
	return ok;
}

/*
 * On a connection of its own: a misaligned Atomic Write is refused,
 * at post time or with an error completion; memory unchanged.
 */
static bool kt_awrite_misaligned(struct kt_conn *c, struct kt_mr *m)
{
	const struct ib_send_wr *badwr = NULL;
	struct ib_atomic_wr a;
	struct ib_wc wc;
	u8 *snap;
	bool ok = true;
	int rv;

	snap = kmalloc(KT_FREGION, GFP_KERNEL);
	if (!snap)
		return false;
	kt_fill(m->va, KT_FREGION);
	memcpy(snap, m->va, KT_FREGION);
	kt_awrite_wr(&a, KT_WRID_AWRITE, m, 8 * kt_below(KT_FREGION / 8 - 1) + 4,
		     kt_r64(), true);
	rv = ib_post_send(c->cli.qp, &a.wr, &badwr);
	if (rv) {
		kt_diag("misaligned Atomic Write refused at post: %d", rv);
	} else if (kt_expect(c->cli.scq, KT_WRID_AWRITE, IB_WC_ATOMIC_WRITE,
			     IB_WC_REM_INV_REQ_ERR, &wc,
			     "misaligned Atomic Write")) {
		ok = false;
	}
	msleep(100);
	ok &= kt_same(m->va, snap, KT_FREGION, "region after a misaligned Atomic Write");
	kfree(snap);
	return ok;
}

/*
 * On a connection of its own: FLUSH_PERSISTENT on memory that is not
 * pmem (kmalloc) is refused (flush.md, as rxe): the REG_MR fails, at
 * post or with an error completion.
 */
static bool kt_reg_persistent_refused(struct kt_conn *c)
{
	const struct ib_send_wr *badwr = NULL;
	struct ib_reg_wr rwr = {};
	struct kt_mr *m;
	struct ib_wc wc;
	int rv;

	m = kt_mr_alloc(c, &c->srv, 4096);
	if (!m)
		return false;
	rwr.wr.opcode = IB_WR_REG_MR;
	rwr.wr.wr_id = KT_WRID_REG;
	rwr.wr.send_flags = IB_SEND_SIGNALED;
	rwr.mr = m->mr;
	rwr.key = m->mr->rkey;
	rwr.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE |
		     IB_ACCESS_FLUSH_PERSISTENT;
	rv = ib_post_send(c->srv.qp, &rwr.wr, &badwr);
	if (rv) {
		kt_diag("REG_MR FLUSH_PERSISTENT refused at post: %d", rv);
		return true;
	}
	rv = kt_poll(c->srv.scq, &wc, timeout_ms);
	if (rv) {
		kt_diag("REG_MR FLUSH_PERSISTENT: no completion (%d)", rv);
		return false;
	}
	kt_wc_diag("REG_MR FLUSH_PERSISTENT of kmalloc memory", &wc);
	return wc.wr_id == KT_WRID_REG && wc.status != IB_WC_SUCCESS;
}

/* a connection for one refusal: connect, MR, case, disconnect */
static void kt_flush_alone(const char *name, int which)
{
	struct kt_conn *c = kzalloc(sizeof(*c), GFP_KERNEL);
	struct kt_mr *m = NULL;
	bool ok;

	if (!c || kt_connect(c)) {
		kt_diag("%s: no connection", name);
		kt_result(false, name);
		if (c)
			kt_teardown(c);
		kfree(c);
		return;
	}
	if (which == 0) {
		m = kt_mr_new(c, &c->srv, KT_FREGION, IB_ACCESS_LOCAL_WRITE |
			      IB_ACCESS_REMOTE_WRITE | IB_ACCESS_FLUSH_GLOBAL);
		ok = m && kt_awrite_misaligned(c, m);
	} else {
		ok = kt_reg_persistent_refused(c);
	}
	kt_result(ok, name);
	kt_disconnect(c);
	kfree(c);
}

static void kt_group_flush(void)
{
	struct kt_fctx x = {};
	struct kt_conn *c;
	bool ok;

	c = kzalloc(sizeof(*c), GFP_KERNEL);
	x.shadow = kmalloc(KT_FREGION, GFP_KERNEL);
	x.c = c;
	if (!c || !x.shadow) {
		kt_result(false, "flush.connect");
		goto free;
	}
	ok = !kt_connect(c);
	kt_result(ok, "flush.connect");
	if (!ok) {
		kt_teardown(c);
		goto free;
	}
	kt_result(kt_flush_caps(c), "flush.device_caps");
	x.mr = kt_mr_new(c, &c->srv, KT_FREGION, IB_ACCESS_LOCAL_WRITE |
			 IB_ACCESS_REMOTE_WRITE | IB_ACCESS_FLUSH_GLOBAL);
	x.src = kt_buf_new(c, &c->cli, KT_FREGION);
	ok = x.mr && x.src;
	kt_result(ok, "flush.reg_mr_flush_global");
	if (!ok)
		goto disconnect;
	kt_fill(x.mr->va, KT_FREGION);
	memcpy(x.shadow, x.mr->va, KT_FREGION);

	ok = kt_flush_after_writes(&x, KT_FITER);
	kt_result(ok, "flush.write_then_flush_global");
	if (ok)
		ok = kt_flush_mr_level(&x);
	kt_result(ok, "flush.selectivity_mr");
	if (ok)
		ok = kt_awrite_random(&x, KT_FITER);
	kt_result(ok, "flush.atomic_write");
	if (ok)
		ok = kt_flush_pipeline(&x);
	kt_result(ok, "flush.pipeline");
	if (ok)
		ok = kt_flush_post_refused(&x);
	kt_result(ok, "flush.post_refused");
	kt_result(ok && kt_no_strays(c), "flush.no_stray_completions");
	/* last: it terminates the connection */
	kt_result(ok && kt_flush_refused(&x), "flush.refused_no_flush_access");
disconnect:
	kt_result(kt_disconnect(c), "flush.disconnect");
	kt_flush_alone("flush.atomic_write_misaligned", 0);
	kt_flush_alone("flush.reg_mr_persistent_not_pmem", 1);
free:
	kfree(x.shadow);
	kfree(c);
}

/* ---------------------------------------------------------------- init */

static bool kt_want_basic, kt_want_imm, kt_want_atomic, kt_want_zread;
static bool kt_want_flush;

static int kt_parse_groups(void)
{
	char *s, *p, *tok;
	int rv = 0;

	s = kstrdup(groups, GFP_KERNEL);
	if (!s)
		return -ENOMEM;
	p = s;
	while ((tok = strsep(&p, ",+ ")) != NULL) {
		if (!*tok)
			continue;
		if (!strcmp(tok, "basic")) {
			kt_want_basic = true;
		} else if (!strcmp(tok, "imm")) {
			kt_want_imm = true;
		} else if (!strcmp(tok, "atomic")) {
			kt_want_atomic = true;
		} else if (!strcmp(tok, "zread")) {
			kt_want_zread = true;
		} else if (!strcmp(tok, "flush")) {
			kt_want_flush = true;
		} else if (!strcmp(tok, "all")) {
			kt_want_basic = true;
			kt_want_imm = true;
			kt_want_atomic = true;
			kt_want_flush = true;
		} else {
			pr_err("unknown group '%s' (basic, imm, atomic, flush, zread, all)\n",
			       tok);
			rv = -EINVAL;
		}
	}
	kfree(s);
	return rv;
}

static int kt_parse_addr(const char *str, struct sockaddr_in *sin, u16 p)
{
	const char *end;

	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons(p);
	if (!str || !in4_pton(str, -1, (u8 *)&sin->sin_addr.s_addr, -1, &end) ||
	    *end) {
		pr_err("invalid IPv4 address '%s'\n", str ? str : "");
		return -EINVAL;
	}
	return 0;
}

static int kt_listen(void)
{
	struct rdma_cm_id *id;
	int rv;

	id = rdma_create_id(&init_net, kt_cm_handler, &kt_listener,
			    RDMA_PS_TCP, IB_QPT_RC);
	if (IS_ERR(id)) {
		kt_diag("listener: rdma_create_id: %ld", PTR_ERR(id));
		return PTR_ERR(id);
	}
	rv = rdma_bind_addr(id, (struct sockaddr *)&kt_srv_sin);
	if (rv) {
		kt_diag("listener: rdma_bind_addr(%pI4): %d",
			&kt_srv_sin.sin_addr.s_addr, rv);
		goto err;
	}
	rv = rdma_listen(id, 8);
	if (rv) {
		kt_diag("listener: rdma_listen: %d", rv);
		goto err;
	}
	if (!id->device) {
		kt_diag("listener: %pI4 is not an RDMA device's address",
			&kt_srv_sin.sin_addr.s_addr);
		rv = -ENODEV;
		goto err;
	}
	kt_listener.id = id;
	return 0;
err:
	rdma_destroy_id(id);
	return rv;
}

static int __init siwx_ktest_init(void)
{
	u64 s = seed;

	kt_num = 0;
	kt_fails = 0;
	kt_skips = 0;
	kt_budget = 8;
	kt_want_basic = false;
	kt_want_imm = false;
	kt_want_atomic = false;
	kt_want_zread = false;
	kt_want_flush = false;
	spin_lock_init(&kt_listener.lock);
	kt_listener.want = NULL;
	kt_listener.id = NULL;

	if (kt_parse_addr(server_addr, &kt_srv_sin, port) ||
	    kt_parse_addr(client_addr, &kt_cli_sin, 0) ||
	    kt_parse_groups() || !timeout_ms) {
		pr_info("Bail out! invalid module parameters\n");
		return -EINVAL;
	}
	while (!s)
		s = get_random_u32();
	prandom_seed_state(&kt_rnd, s);

	pr_info("TAP version 13\n");
	kt_diag("server %pI4:%u, client %pI4, groups:%s%s%s%s%s, iterations %u, seed %llu, timeout %u ms",
		&kt_srv_sin.sin_addr.s_addr, port, &kt_cli_sin.sin_addr.s_addr,
		kt_want_basic ? " basic" : "", kt_want_imm ? " imm" : "",
		kt_want_atomic ? " atomic" : "", kt_want_flush ? " flush" : "",
		kt_want_zread ? " zread" : "",
		iterations, s, timeout_ms);

	if (kt_listen()) {
		kt_result(false, "setup.listen");
	} else {
		kt_print_dev("listener", kt_listener.id->device);
		kt_result(true, "setup.listen");
		if (kt_want_basic)
			kt_group_basic();
		if (kt_want_imm)
			kt_group_imm();
		if (kt_want_atomic)
			kt_group_atomic();
		if (kt_want_flush)
			kt_group_flush();
		if (kt_want_zread)
			kt_group_zread();
		rdma_destroy_id(kt_listener.id);
		kt_listener.id = NULL;
	}
	pr_info("1..%d\n", kt_num);
	kt_diag("%d passed, %d failed, %d skipped (seed %llu)",
		kt_num - kt_fails - kt_skips, kt_fails, kt_skips, s);
	return kt_fails ? -EIO : 0;
}

static void __exit siwx_ktest_exit(void)
{
}

module_init(siwx_ktest_init);
module_exit(siwx_ktest_exit);

MODULE_DESCRIPTION("siwx kernel ULP test: RDMA Write/Read, Send, Write with Immediate, atomics, Flush and Atomic Write through rdma_cm");
MODULE_AUTHOR("siwx project");
MODULE_LICENSE("GPL");
