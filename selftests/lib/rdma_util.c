// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * rdma_util - helper library for the siwx selftests. See rdma_util.h.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <netdb.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include "rdma_util.h"

static __thread char ru_err[512];

const char *ru_errmsg(void)
{
	return ru_err[0] ? ru_err : "no error recorded";
}

int ru_fail(int code, const char *fmt, ...)
{
	char msg[sizeof(ru_err)];	/* the arguments may point at ru_err */
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	memcpy(ru_err, msg, sizeof(ru_err));
	if (code > 0)
		code = -code;
	return code ? code : -EIO;
}

const char *ru_env(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return (v && *v) ? v : dflt;
}

const char *ru_addr0(void)
{
	return ru_env("SIWX_ADDR0", RU_DEFAULT_ADDR0);
}

const char *ru_addr1(void)
{
	return ru_env("SIWX_ADDR1", RU_DEFAULT_ADDR1);
}

/* the namespace's fd: the thread's own ns to return to is saved per call */
int ru_ns_enter(const char *addr)
{
	const char *ns = ru_env("SIWX_NETNS1", NULL);
	char path[256];
	int self, fd;

	if (!ns || !addr || strcmp(addr, ru_addr1()))
		return 0;
	self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	if (self < 0)
		return ru_fail(errno, "open /proc/thread-self/ns/net: %s",
			       strerror(errno));
	snprintf(path, sizeof(path), "/run/netns/%s", ns);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || setns(fd, CLONE_NEWNET)) {
		int e = errno;

		if (fd >= 0)
			close(fd);
		close(self);
		return ru_fail(e, "network namespace %s (SIWX_NETNS1): %s", ns,
			       strerror(e));
	}
	close(fd);
	return self + 1;
}

void ru_ns_leave(int token)
{
	if (token <= 0)
		return;
	if (setns(token - 1, CLONE_NEWNET)) {
		/* cannot go on in the wrong namespace */
		fprintf(stderr, "rdma_util: setns back: %s\n", strerror(errno));
		abort();
	}
	close(token - 1);
}

long ru_env_long(const char *name, long dflt)
{
	const char *v = getenv(name);
	char *end;
	long r;

	if (!v || !*v)
		return dflt;
	errno = 0;
	r = strtol(v, &end, 0);
	if (errno || *end)
		return dflt;
	return r;
}

static int lib_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	FILE *out = data;
	const char *n = info->dlpi_name;

	(void)size;
	if (n && (strstr(n, "libibverbs") || strstr(n, "librdmacm") ||
		  strstr(n, "libsiw")))
		fprintf(out, "# loaded: %s\n", n);
	return 0;
}

void ru_print_lib_info(FILE *out)
{
	dl_iterate_phdr(lib_cb, out);
	fflush(out);
}

uint64_t ru_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void ru_sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- patterns ----------------------------------------------------------- */

static inline uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

static inline uint8_t pattern_byte(uint64_t seed, size_t i)
{
	uint64_t w = splitmix64(seed ^ ((uint64_t)(i / 8) * 0xd1342543de82ef95ull));

	return (uint8_t)(w >> ((i % 8) * 8));
}

uint64_t ru_random_seed(void)
{
	const char *s = getenv("SIWX_SEED");
	uint64_t seed;

	if (s && *s)
		return strtoull(s, NULL, 0);
	if (getrandom(&seed, sizeof(seed), 0) != sizeof(seed))
		seed = ru_now_ms() ^ ((uint64_t)getpid() << 32);
	return seed;
}

void ru_fill(void *p, size_t n, uint64_t seed)
{
	uint8_t *b = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = splitmix64(seed ^ ((uint64_t)(i / 8) *
						0xd1342543de82ef95ull));
		memcpy(b + i, &w, 8);	/* little-endian == pattern_byte() */
	}
	for (; i < n; i++)
		b[i] = pattern_byte(seed, i);
}

long ru_check(const void *p, size_t n, uint64_t seed)
{
	const uint8_t *b = p;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w = splitmix64(seed ^ ((uint64_t)(i / 8) *
						0xd1342543de82ef95ull));
		if (memcmp(b + i, &w, 8))
			break;
	}
	for (; i < n; i++)
		if (b[i] != pattern_byte(seed, i))
			return (long)i;
	return -1;
}

long ru_first_diff(const void *a, const void *b, size_t n)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < n; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

uint64_t ru_rng(uint64_t *s)
{
	uint64_t x = *s;

	*s += 0x9e3779b97f4a7c15ull;
	return splitmix64(x);
}

uint32_t ru_rand(uint64_t *s, uint32_t n)
{
	return (uint32_t)(ru_rng(s) % n);
}

/* ---- CM events ---------------------------------------------------------- */

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

struct rdma_event_channel *ru_new_channel(void)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();

	if (!ch)
		return NULL;
	if (set_nonblock(ch->fd)) {
		rdma_destroy_event_channel(ch);
		return NULL;
	}
	return ch;
}

/* The private data and IRD/ORD of a connect request or an ESTABLISHED. */
static void conn_data(struct ru_conn_data *cd, const struct rdma_cm_event *ev)
{
	const struct rdma_conn_param *p = &ev->param.conn;
	size_t n = p->private_data ? p->private_data_len : 0;

	memset(cd, 0, sizeof(*cd));
	if (n > sizeof(cd->data))
		n = sizeof(cd->data);
	if (n)
		memcpy(cd->data, p->private_data, n);
	cd->len = (uint8_t)n;
	cd->responder_resources = p->responder_resources;
	cd->initiator_depth = p->initiator_depth;
}

/*
 * ru_get_cm_event(); with e, the peer's connection data of a connect
 * request (passive e) or an ESTABLISHED (active e) go to e->peer, and
 * e->on_event sees the event.
 */
static int get_event(struct rdma_event_channel *ch, int timeout_ms,
		     enum rdma_cm_event_type *type, int *status,
		     struct rdma_cm_id **id_out, struct ru_ep *e)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	struct rdma_cm_event *ev;

	for (;;) {
		if (rdma_get_cm_event(ch, &ev) == 0) {
			*type = ev->event;
			if (status)
				*status = ev->status;
			if (id_out)
				*id_out = ev->id;
			if (e && (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST ||
				  (ev->event == RDMA_CM_EVENT_ESTABLISHED &&
				   !e->passive)))
				conn_data(&e->peer, ev);
			if (e && e->on_event)
				e->on_event(e, ev, e->on_event_arg);
			rdma_ack_cm_event(ev);
			return 0;
		}
		if (errno != EAGAIN && errno != EWOULDBLOCK)
			return ru_fail(errno, "rdma_get_cm_event: %s",
				       strerror(errno));
		uint64_t now = ru_now_ms();

		if (now >= deadline)
			return ru_fail(ETIMEDOUT,
				       "no CM event within %d ms", timeout_ms);

		struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };
		int left = (int)(deadline - now);

		if (poll(&pfd, 1, left) < 0 && errno != EINTR)
			return ru_fail(errno, "poll: %s", strerror(errno));
	}
}

int ru_get_cm_event(struct rdma_event_channel *ch, int timeout_ms,
		    enum rdma_cm_event_type *type, int *status,
		    struct rdma_cm_id **id_out)
{
	return get_event(ch, timeout_ms, type, status, id_out, NULL);
}

/*
 * Wait for one specific CM event (see ru_wait_cm_event); with e, note
 * ESTABLISHED and DISCONNECTED in its flags and the peer's connection
 * data in e->peer.
 */
static int wait_event(struct rdma_event_channel *ch,
		      enum rdma_cm_event_type want, int timeout_ms,
		      struct rdma_cm_id **id_out, struct ru_ep *e)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	enum rdma_cm_event_type t;
	int st, rc;

	for (;;) {
		uint64_t now = ru_now_ms();
		int left = now >= deadline ? 0 : (int)(deadline - now);

		rc = get_event(ch, left, &t, &st, id_out, e);
		if (rc) {
			if (rc == -ETIMEDOUT)
				return ru_fail(ETIMEDOUT,
					       "timed out (%d ms) waiting for %s",
					       timeout_ms, rdma_event_str(want));
			return ru_fail(rc, "waiting for %s: %s",
				       rdma_event_str(want), ru_errmsg());
		}
		if (t == want) {
			if (e && want == RDMA_CM_EVENT_ESTABLISHED)
				e->established = 1;
			return 0;
		}
		if (e && t == RDMA_CM_EVENT_DISCONNECTED)
			e->disconnected = 1;
		switch (t) {
		case RDMA_CM_EVENT_ADDR_CHANGE:
		case RDMA_CM_EVENT_TIMEWAIT_EXIT:
			break;		/* keep waiting */
		case RDMA_CM_EVENT_REJECTED:
			return ru_fail(ECONNREFUSED, "%s (status %d) waiting for %s",
				       rdma_event_str(t), st, rdma_event_str(want));
		case RDMA_CM_EVENT_UNREACHABLE:
			return ru_fail(EHOSTUNREACH, "%s (status %d) waiting for %s",
				       rdma_event_str(t), st, rdma_event_str(want));
		case RDMA_CM_EVENT_ADDR_ERROR:
		case RDMA_CM_EVENT_ROUTE_ERROR:
			return ru_fail(EADDRNOTAVAIL, "%s (status %d) waiting for %s",
				       rdma_event_str(t), st, rdma_event_str(want));
		default:
			return ru_fail(ECONNABORTED, "%s (status %d) waiting for %s",
				       rdma_event_str(t), st, rdma_event_str(want));
		}
	}
}

int ru_wait_cm_event(struct rdma_event_channel *ch,
		     enum rdma_cm_event_type want, int timeout_ms,
		     struct rdma_cm_id **id_out)
{
	return wait_event(ch, want, timeout_ms, id_out, NULL);
}

void ru_ep_pump_events_wait(struct ru_ep *e, int timeout_ms)
{
	struct pollfd pfd;

	if (!e->ch)
		return;
	pfd.fd = e->ch->fd;
	pfd.events = POLLIN;
	if (timeout_ms > 0)
		poll(&pfd, 1, timeout_ms);
	ru_ep_pump_events(e);
}

void ru_ep_pump_events(struct ru_ep *e)
{
	enum rdma_cm_event_type t;

	if (!e->ch)
		return;
	while (get_event(e->ch, 0, &t, NULL, NULL, e) == 0) {
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			e->disconnected = 1;
		if (t == RDMA_CM_EVENT_ESTABLISHED)
			e->established = 1;
	}
}

/* ---- resources ---------------------------------------------------------- */

void ru_caps_default(struct ru_caps *c)
{
	memset(c, 0, sizeof(*c));
	c->max_send_wr = 64;
	c->max_recv_wr = 64;
	c->max_send_sge = 1;
	c->max_recv_sge = 1;
	c->max_inline = 0;
	c->initiator_depth = 16;
	c->responder_resources = 16;
}

static int parse_addr(const char *s, uint16_t port, struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char pbuf[8];
	int rc;

	snprintf(pbuf, sizeof(pbuf), "%u", port);
	rc = getaddrinfo(s, pbuf, &hints, &res);
	if (rc)
		return ru_fail(EINVAL, "bad address '%s': %s", s,
			       gai_strerror(rc));
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int set_nonblock_fd(int fd, const char *what)
{
	int rc = set_nonblock(fd);

	return rc ? ru_fail(rc, "O_NONBLOCK on %s: %s", what, strerror(-rc)) : 0;
}

/* The receive CQ of depth entries that caps asks for. */
static int ep_create_rcq(struct ru_ep *e, const struct ru_caps *caps,
			 int depth)
{
	struct ibv_context *ctx = e->id->verbs;
	int rc;

	if (caps->rcq_channel) {
		e->cc = ibv_create_comp_channel(ctx);
		if (!e->cc)
			return ru_fail(errno, "ibv_create_comp_channel: %s",
				       strerror(errno));
		rc = set_nonblock_fd(e->cc->fd, "the completion channel");
		if (rc)
			return rc;
	}
	if (caps->rcq_ex) {
		struct ibv_cq_init_attr_ex ca;

		memset(&ca, 0, sizeof(ca));
		ca.cqe = (uint32_t)depth;
		ca.channel = e->cc;
		ca.wc_flags = caps->rcq_wc_flags ? caps->rcq_wc_flags :
						    RU_CQX_FLAGS;
		e->rcqx = ibv_create_cq_ex(ctx, &ca);
		if (!e->rcqx) {
			int err = errno;

			return ru_fail(err ? err : EIO,
				       "ibv_create_cq_ex(wc_flags 0x%llx): %s",
				       (unsigned long long)ca.wc_flags,
				       strerror(err));
		}
		e->rcq = ibv_cq_ex_to_cq(e->rcqx);
		return 0;
	}
	e->rcq = ibv_create_cq(ctx, depth, NULL, e->cc, 0);
	if (!e->rcq)
		return ru_fail(errno, "ibv_create_cq(%d): %s", depth,
			       strerror(errno));
	return 0;
}

static uint32_t min_u32(uint32_t a, int b)
{
	return b > 0 && a > (uint32_t)b ? (uint32_t)b : a;
}

/* PD, CQs, optional SRQ and the QP for e->id, as caps says. */
static int ep_create_qp(struct ru_ep *e, const struct ru_caps *caps)
{
	struct ibv_context *ctx = e->id->verbs;
	struct ibv_qp_init_attr_ex qa;
	struct ibv_device_attr da;
	int scq_depth, rcq_depth, rc;

	/* from here on ru_ep_close() calls it, whatever fails */
	e->on_close = caps->on_close;
	e->on_close_arg = caps->on_close_arg;
	e->pdata_len = caps->private_data ? caps->private_data_len : 0;
	if (e->pdata_len)
		memcpy(e->pdata, caps->private_data, e->pdata_len);
	e->cap.max_send_wr = caps->max_send_wr;
	e->cap.max_recv_wr = caps->max_recv_wr;
	e->cap.max_send_sge = caps->max_send_sge;
	e->cap.max_recv_sge = caps->max_recv_sge;
	e->cap.max_inline_data = caps->max_inline;
	memset(&da, 0, sizeof(da));
	if (caps->clamp_to_device) {
		rc = ibv_query_device(ctx, &da);
		if (rc)
			return ru_fail(rc, "ibv_query_device: %s", strerror(rc));
		e->cap.max_send_wr = min_u32(e->cap.max_send_wr, da.max_qp_wr);
		e->cap.max_recv_wr = min_u32(e->cap.max_recv_wr, da.max_qp_wr);
	}
	scq_depth = caps->cq_depth ? caps->cq_depth : (int)e->cap.max_send_wr + 8;
	rcq_depth = caps->cq_depth ? caps->cq_depth : (int)e->cap.max_recv_wr + 8;
	scq_depth = (int)min_u32((uint32_t)scq_depth, da.max_cqe);
	rcq_depth = (int)min_u32((uint32_t)rcq_depth, da.max_cqe);

	if (caps->shared_pd) {
		e->pd = caps->shared_pd;
		e->pd_shared = 1;
	} else {
		e->pd = ibv_alloc_pd(ctx);
		if (!e->pd)
			return ru_fail(errno, "ibv_alloc_pd: %s", strerror(errno));
	}
	if (caps->scq_ex) {
		struct ibv_cq_init_attr_ex ca;

		memset(&ca, 0, sizeof(ca));
		ca.cqe = (uint32_t)scq_depth;
		ca.wc_flags = RU_CQX_FLAGS;
		e->scqx = ibv_create_cq_ex(ctx, &ca);
		if (!e->scqx)
			return ru_fail(errno ? errno : EIO,
				       "ibv_create_cq_ex(%d): %s", scq_depth,
				       strerror(errno));
		e->scq = ibv_cq_ex_to_cq(e->scqx);
	} else {
		e->scq = ibv_create_cq(ctx, scq_depth, NULL, NULL, 0);
		if (!e->scq)
			return ru_fail(errno, "ibv_create_cq(%d): %s",
				       scq_depth, strerror(errno));
	}
	rc = ep_create_rcq(e, caps, rcq_depth);
	if (rc)
		return rc;
	if (caps->shared_srq) {
		e->srq = caps->shared_srq;
		e->srq_shared = 1;
	} else if (caps->srq) {
		struct ibv_srq_init_attr sa;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = e->cap.max_recv_wr;
		sa.attr.max_sge = caps->max_recv_sge;
		e->srq = ibv_create_srq(e->pd, &sa);
		if (!e->srq)
			return ru_fail(errno, "ibv_create_srq(%u): %s",
				       e->cap.max_recv_wr, strerror(errno));
	}

	memset(&qa, 0, sizeof(qa));
	qa.qp_type = IBV_QPT_RC;
	qa.send_cq = e->scq;
	qa.recv_cq = e->rcq;
	qa.srq = e->srq;
	qa.cap.max_send_wr = e->cap.max_send_wr;
	qa.cap.max_recv_wr = e->srq ? 0 : e->cap.max_recv_wr;
	qa.cap.max_send_sge = caps->max_send_sge;
	qa.cap.max_recv_sge = e->srq ? 0 : caps->max_recv_sge;
	qa.cap.max_inline_data = caps->max_inline;
	qa.sq_sig_all = caps->sq_sig_all;
	qa.comp_mask = IBV_QP_INIT_ATTR_PD;
	qa.pd = e->pd;
	if (caps->send_ops) {
		qa.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		qa.send_ops_flags = caps->send_ops;
	}
	rc = rdma_create_qp_ex(e->id, &qa);
	if (rc && caps->inline_fallback && caps->max_inline) {
		qa.cap.max_inline_data = 0;
		rc = rdma_create_qp_ex(e->id, &qa);
	}
	if (rc) {
		int err = errno;

		return ru_fail(err, "rdma_create_qp_ex(max_send_wr=%u max_recv_wr=%u "
			       "max_send_sge=%u max_recv_sge=%u max_inline=%u "
			       "srq %s send_ops 0x%llx): %s",
			       e->cap.max_send_wr, e->cap.max_recv_wr,
			       caps->max_send_sge, caps->max_recv_sge,
			       caps->max_inline, e->srq ? "yes" : "no",
			       (unsigned long long)caps->send_ops,
			       strerror(err));
	}
	e->cap.max_inline_data = qa.cap.max_inline_data;	/* as granted */
	e->qp = e->id->qp;
	if (caps->send_ops) {
		e->qpx = ibv_qp_to_qp_ex(e->qp);
		if (!e->qpx)
			return ru_fail(EOPNOTSUPP, "ibv_qp_to_qp_ex: NULL");
	}
	if (caps->on_qp) {	/* e.g. post receives before connecting */
		rc = caps->on_qp(e, caps->on_qp_arg);
		if (rc)
			return ru_fail(rc, "on_qp: %s", ru_errmsg());
	}
	return 0;
}

static void conn_param(struct rdma_conn_param *p, const struct ru_ep *e,
		       const struct ru_caps *caps)
{
	memset(p, 0, sizeof(*p));
	if (e->pdata_len) {
		p->private_data = e->pdata;
		p->private_data_len = e->pdata_len;
	}
	p->initiator_depth = caps->initiator_depth;
	p->responder_resources = caps->responder_resources;
	p->retry_count = 7;
	p->rnr_retry_count = 7;
}

/* Report a step's result to caps->on_step; returns rc. */
static int step(struct ru_ep *e, const struct ru_caps *caps, const char *name,
		int rc)
{
	if (caps->on_step)
		caps->on_step(e, name, rc, caps->on_step_arg);
	return rc;
}

int ru_listen(struct ru_listener *l, const char *addr, uint16_t port,
	      int backlog)
{
	struct sockaddr_storage ss;
	int rc, ns;

	memset(l, 0, sizeof(*l));
	rc = parse_addr(addr, port, &ss);
	if (rc)
		return rc;
	l->ch = ru_new_channel();
	if (!l->ch)
		return ru_fail(errno, "rdma_create_event_channel: %s",
			       strerror(errno));
	ns = ru_ns_enter(addr);
	if (ns < 0)
		return ns;
	/*
	 * Port 0: the RDMA CM picks a free port of its own port space,
	 * which knows nothing of TCP's. siw listens with a TCP socket on
	 * it, and a TCP socket may hold that port (a connection of any
	 * application, a TIME_WAIT of one without SO_REUSEADDR): the
	 * listen fails with EADDRINUSE (CI, 2026-12-07, fixes' first test
	 * after 40 plain TCP connections). An application asking for any
	 * port would take another one; so do we, and say so. Only iwpmd's
	 * port mapping (siw's port_map) avoids it in the kernel.
	 */
	for (int tries = 0;; tries++) {
		rc = 0;
		if (rdma_create_id(l->ch, &l->id, NULL, RDMA_PS_TCP)) {
			rc = ru_fail(errno, "rdma_create_id: %s",
				     strerror(errno));
			break;
		}
		if (rdma_bind_addr(l->id, (struct sockaddr *)&ss)) {
			rc = ru_fail(errno, "rdma_bind_addr(%s:%u): %s", addr,
				     port, strerror(errno));
			break;
		}
		if (!rdma_listen(l->id, backlog))
			break;
		rc = ru_fail(errno, "rdma_listen(%s:%u): %s", addr, port,
			     strerror(errno));
		if (port || errno != EADDRINUSE || tries == 3)
			break;
		printf("# rdma_listen(%s): the RDMA CM's port %u is held by a "
		       "TCP socket (EADDRINUSE); another port\n", addr,
		       ntohs(rdma_get_src_port(l->id)));
		rdma_destroy_id(l->id);
		l->id = NULL;
	}
	ru_ns_leave(ns);
	if (rc)
		return rc;
	l->port = ntohs(rdma_get_src_port(l->id));
	return 0;
}

void ru_listener_close(struct ru_listener *l)
{
	if (l->id)
		rdma_destroy_id(l->id);
	if (l->ch)
		rdma_destroy_event_channel(l->ch);
	memset(l, 0, sizeof(*l));
}

static int client_start(struct ru_ep *c, const char *src, const char *dst,
			uint16_t port, const struct ru_caps *caps,
			int timeout_ms)
{
	struct sockaddr_storage sss, dss;
	struct rdma_conn_param cp;
	int rc;

	memset(c, 0, sizeof(*c));
	if (src) {
		rc = parse_addr(src, 0, &sss);
		if (rc)
			return rc;
	}
	rc = parse_addr(dst, port, &dss);
	if (rc)
		return rc;
	c->port = port;
	c->on_event = caps->on_event;
	c->on_event_arg = caps->on_event_arg;
	c->ch = ru_new_channel();
	if (!c->ch)
		return step(c, caps, "setup",
			    ru_fail(errno, "rdma_create_event_channel: %s",
				    strerror(errno)));
	if (rdma_create_id(c->ch, &c->id, NULL, RDMA_PS_TCP))
		return step(c, caps, "setup",
			    ru_fail(errno, "rdma_create_id: %s",
				    strerror(errno)));
	if (rdma_resolve_addr(c->id, src ? (struct sockaddr *)&sss : NULL,
			      (struct sockaddr *)&dss, timeout_ms))
		return step(c, caps, "resolve_addr",
			    ru_fail(errno, "rdma_resolve_addr(%s -> %s:%u): %s",
				    src ? src : "*", dst, port,
				    strerror(errno)));
	step(c, caps, "resolve_addr", 0);
	rc = wait_event(c->ch, RDMA_CM_EVENT_ADDR_RESOLVED, timeout_ms + 1000,
			NULL, c);
	if (rc)
		return rc;
	if (rdma_resolve_route(c->id, timeout_ms))
		return step(c, caps, "resolve_route",
			    ru_fail(errno, "rdma_resolve_route: %s",
				    strerror(errno)));
	step(c, caps, "resolve_route", 0);
	rc = wait_event(c->ch, RDMA_CM_EVENT_ROUTE_RESOLVED, timeout_ms + 1000,
			NULL, c);
	if (rc)
		return rc;
	rc = step(c, caps, "setup", ep_create_qp(c, caps));
	if (rc)
		return rc;
	conn_param(&cp, c, caps);
	if (rdma_connect(c->id, &cp))
		return step(c, caps, "connect",
			    ru_fail(errno, "rdma_connect(%s:%u): %s", dst, port,
				    strerror(errno)));
	return step(c, caps, "connect", 0);
}

/* in the namespace of src from rdma_create_id to rdma_connect */
int ru_client_start(struct ru_ep *c, const char *src, const char *dst,
		    uint16_t port, const struct ru_caps *caps, int timeout_ms)
{
	int ns = ru_ns_enter(src), rc;

	if (ns < 0) {
		memset(c, 0, sizeof(*c));
		return step(c, caps, "setup", ns);
	}
	rc = client_start(c, src, dst, port, caps, timeout_ms);
	ru_ns_leave(ns);
	return rc;
}

int ru_client_finish(struct ru_ep *c, int timeout_ms)
{
	return ru_ep_wait_established(c, timeout_ms);
}

int ru_ep_wait_established(struct ru_ep *e, int timeout_ms)
{
	if (e->established)
		return 0;
	return wait_event(e->ch, RDMA_CM_EVENT_ESTABLISHED, timeout_ms, NULL, e);
}

int ru_connect(struct ru_ep *c, const char *src, const char *dst,
	       uint16_t port, const struct ru_caps *caps, int retry_ms)
{
	uint64_t t0 = ru_now_ms(), deadline = t0 + (uint64_t)retry_ms;
	char hist[sizeof(ru_err)] = "";
	size_t hl = 0;
	int rc, tries = 0;

	for (;;) {
		tries++;
		rc = ru_client_start(c, src, dst, port, caps, 5000);
		if (!rc)
			rc = ru_client_finish(c, RU_TIMEOUT_MS);
		if (!rc)
			return 0;
		ru_ep_close(c);
		/* keep the first attempts' reasons: "[+0.0s] reason" */
		if (hl < sizeof(hist) - 80)
			hl += snprintf(hist + hl, sizeof(hist) - hl,
				       "%s[+%.1fs] %.120s", hl ? "; " : "",
				       (ru_now_ms() - t0) / 1000.0, ru_err);
		if (rc != -ECONNREFUSED && rc != -EHOSTUNREACH &&
		    rc != -EADDRNOTAVAIL && rc != -ECONNABORTED &&
		    rc != -ETIMEDOUT && rc != -ENODEV && rc != -ENETUNREACH)
			return rc;
		if (ru_now_ms() >= deadline) {
			char last[sizeof(ru_err)];

			snprintf(last, sizeof(last), "%s", ru_err);
			return ru_fail(rc, "gave up after %d tries in %.1fs; last: "
				       "%.160s; history: %s", tries,
				       (ru_now_ms() - t0) / 1000.0, last, hist);
		}
		ru_sleep_us(500000);
	}
}

int ru_accept_start(struct ru_listener *l, struct ru_ep *s,
		    const struct ru_caps *caps, int timeout_ms)
{
	struct rdma_conn_param cp;
	struct rdma_cm_id *id = NULL;
	int rc;

	memset(s, 0, sizeof(*s));
	s->passive = 1;
	s->on_event = caps->on_event;
	s->on_event_arg = caps->on_event_arg;
	rc = wait_event(l->ch, RDMA_CM_EVENT_CONNECT_REQUEST, timeout_ms, &id,
			s);
	if (rc)
		return rc;
	s->port = l->port;
	if (caps->reject) {
		const void *pd = caps->private_data_len ? caps->private_data
							: NULL;

		rc = rdma_reject(id, pd, caps->private_data_len) ?
		     ru_fail(errno, "rdma_reject: %s", strerror(errno)) : 0;
		rdma_destroy_id(id);
		return step(s, caps, "reject", rc);
	}
	s->id = id;
	s->ch = ru_new_channel();
	if (!s->ch)
		rc = ru_fail(errno, "rdma_create_event_channel: %s",
			     strerror(errno));
	else if (rdma_migrate_id(id, s->ch))
		rc = ru_fail(errno, "rdma_migrate_id: %s", strerror(errno));
	else
		rc = ep_create_qp(s, caps);
	if (rc) {
		char why[sizeof(ru_err)];

		step(s, caps, "setup", rc);
		memcpy(why, ru_err, sizeof(why));
		step(s, caps, "reject", rdma_reject(id, NULL, 0) ?
		     ru_fail(errno, "rdma_reject: %s", strerror(errno)) : 0);
		return ru_fail(rc, "%s", why);
	}
	conn_param(&cp, s, caps);
	if (rdma_accept(id, &cp))
		return step(s, caps, "accept",
			    ru_fail(errno, "rdma_accept: %s", strerror(errno)));
	return step(s, caps, "accept", 0);
}

int ru_accept(struct ru_listener *l, struct ru_ep *s,
	      const struct ru_caps *caps, int timeout_ms)
{
	int rc = ru_accept_start(l, s, caps, timeout_ms);

	if (rc || caps->reject)
		return rc;
	return ru_ep_wait_established(s, timeout_ms);
}

int ru_ep_disconnect(struct ru_ep *e)
{
	if (e->id && rdma_disconnect(e->id))
		return ru_fail(errno, "rdma_disconnect: %s", strerror(errno));
	return 0;
}

int ru_ep_wait_disconnected(struct ru_ep *e, int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	enum rdma_cm_event_type t;

	while (!e->disconnected) {
		uint64_t now = ru_now_ms();

		if (now >= deadline)
			return ru_fail(ETIMEDOUT,
				       "no DISCONNECTED event within %d ms",
				       timeout_ms);
		if (get_event(e->ch, (int)(deadline - now), &t, NULL, NULL, e))
			continue;
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			e->disconnected = 1;
	}
	return 0;
}

void ru_ep_close(struct ru_ep *e)
{
	if (e->on_close)	/* e.g. the MRs in e->pd */
		e->on_close(e, e->on_close_arg);
	if (e->id && e->qp)
		rdma_destroy_qp(e->id);
	e->qp = NULL;
	if (e->srq && !e->srq_shared)
		ibv_destroy_srq(e->srq);
	if (e->scq)
		ibv_destroy_cq(e->scq);
	if (e->rcq)
		ibv_destroy_cq(e->rcq);
	if (e->cc)
		ibv_destroy_comp_channel(e->cc);
	if (e->pd && !e->pd_shared)
		ibv_dealloc_pd(e->pd);
	if (e->id)
		rdma_destroy_id(e->id);
	if (e->ch)
		rdma_destroy_event_channel(e->ch);
	memset(e, 0, sizeof(*e));
}

int ru_pair_open_on(struct ru_listener *l, struct ru_ep *cli,
		    struct ru_ep *srv, const struct ru_caps *ccaps,
		    const struct ru_caps *scaps)
{
	int rc;

	rc = ru_client_start(cli, ru_addr1(), ru_addr0(), l->port, ccaps,
			     RU_TIMEOUT_MS);
	if (rc)
		return rc;
	rc = ru_accept(l, srv, scaps, RU_TIMEOUT_MS);
	if (rc)
		return rc;
	return ru_client_finish(cli, RU_TIMEOUT_MS);
}

int ru_pair_open(struct ru_pair *p, const struct ru_caps *ccaps,
		 const struct ru_caps *scaps)
{
	struct ru_caps def;
	int rc;

	memset(p, 0, sizeof(*p));
	ru_caps_default(&def);
	rc = ru_listen(&p->l, ru_addr0(), 0, 16);
	if (rc)
		return rc;
	return ru_pair_open_on(&p->l, &p->cli, &p->srv, ccaps ? ccaps : &def,
			       scaps ? scaps : &def);
}

void ru_pair_close(struct ru_pair *p)
{
	ru_ep_close(&p->cli);
	ru_ep_close(&p->srv);
	ru_listener_close(&p->l);
}

/* ---- memory ------------------------------------------------------------- */

int ru_buf_alloc(struct ru_buf *b, struct ibv_pd *pd, size_t len, int access)
{
	long pg = sysconf(_SC_PAGESIZE);
	size_t alloc = (len + RU_GUARD + (size_t)pg - 1) & ~((size_t)pg - 1);
	void *p;

	memset(b, 0, sizeof(*b));
	if (posix_memalign(&p, (size_t)pg, alloc))
		return ru_fail(ENOMEM, "posix_memalign(%zu) failed", alloc);
	memset(p, 0, alloc);
	b->addr = p;
	b->len = len;
	b->alloc = alloc;
	b->mr = ibv_reg_mr(pd, p, len + RU_GUARD, access);
	if (!b->mr) {
		int err = errno;

		free(p);
		b->addr = NULL;
		return ru_fail(err, "ibv_reg_mr(%zu, access 0x%x): %s",
			       len + RU_GUARD, access, strerror(err));
	}
	return 0;
}

void ru_buf_free(struct ru_buf *b)
{
	if (b->mr)
		ibv_dereg_mr(b->mr);
	free(b->addr);
	memset(b, 0, sizeof(*b));
}

/* ---- work requests ------------------------------------------------------ */

/* Build and post one send WR; what ibv_post_send() returned, unchanged. */
static int post_wr(struct ibv_qp *qp, enum ibv_wr_opcode op,
		   const struct ibv_sge *sg, int n, uint64_t raddr,
		   uint32_t rkey, __be32 imm, unsigned int flags,
		   uint64_t wr_id)
{
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = n ? (struct ibv_sge *)sg : NULL;
	wr.num_sge = n;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.imm_data = imm;
	if (op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM ||
	    op == IBV_WR_RDMA_READ) {
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
	}
	return ibv_post_send(qp, &wr, &bad);
}

int ru_post_send_raw(struct ru_ep *e, enum ibv_wr_opcode op,
		     const struct ru_buf *b, size_t off, size_t len,
		     uint64_t raddr, uint32_t rkey, uint64_t wr_id, int flags)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(b->addr + off),
		.length = (uint32_t)len,
		.lkey = b->mr->lkey,
	};

	return post_wr(e->qp, op, &sge, 1, raddr, rkey, 0,
		       (unsigned int)flags, wr_id);
}

/* 0, or the provider's errno (either sign) negated with a message. */
static int post_result(int rc, const char *what, int op, int n, size_t len,
		       unsigned int flags)
{
	if (rc < 0)
		rc = -rc;
	if (!rc)
		return 0;
	return ru_fail(rc, "%s(opcode %d, %d SGEs, len %zu, flags 0x%x): %d (%s)",
		       what, op, n, len, flags, rc, strerror(rc));
}

int ru_post_send(struct ru_ep *e, enum ibv_wr_opcode op,
		 const struct ru_buf *b, size_t off, size_t len,
		 uint64_t raddr, uint32_t rkey, uint64_t wr_id, int flags)
{
	int rc = ru_post_send_raw(e, op, b, off, len, raddr, rkey, wr_id,
				  flags);

	return post_result(rc, "ibv_post_send", op, 1, len, (unsigned int)flags);
}

int ru_post_sge(struct ibv_qp *qp, enum ibv_wr_opcode op,
		const struct ibv_sge *sg, int n, uint64_t raddr, uint32_t rkey,
		__be32 imm, unsigned int flags, uint64_t wr_id)
{
	size_t len = 0;
	int i;

	for (i = 0; i < n; i++)
		len += sg[i].length;
	return post_result(post_wr(qp, op, sg, n, raddr, rkey, imm, flags,
				   wr_id), "ibv_post_send", op, n, len, flags);
}

int ru_post_recv_mr(struct ibv_qp *qp, struct ibv_srq *srq,
		    const struct ibv_mr *mr, void *addr, uint32_t len,
		    uint64_t wr_id)
{
	struct ibv_recv_wr wr, *bad = NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };
	int rc;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;	/* libsiw rejects num_sge == 0 on receives */
	rc = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		   ibv_post_recv(qp, &wr, &bad);
	if (rc < 0)
		rc = -rc;
	if (rc)
		return ru_fail(rc, "ibv_post_%srecv(len %u): %d (%s)",
			       srq ? "srq_" : "", len, rc, strerror(rc));
	return 0;
}

int ru_post_recv(struct ru_ep *e, const struct ru_buf *b, size_t off,
		 size_t len, uint64_t wr_id)
{
	return ru_post_recv_mr(e->qp, e->srq, b->mr, b->addr + off,
			       (uint32_t)len, wr_id);
}

/*
 * One round of a bounded completion wait: -ETIMEDOUT (recorded) once
 * deadline has passed, else 0, sleeping a little after the first rounds.
 */
static int spin_wait(uint64_t deadline, unsigned int *spins, int timeout_ms)
{
	if (ru_now_ms() >= deadline)
		return ru_fail(ETIMEDOUT, "no completion within %d ms",
			       timeout_ms);
	if (++*spins > 64)
		ru_sleep_us(200);
	return 0;
}

int ru_poll(struct ibv_cq *cq, struct ibv_wc *wc, int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	unsigned int spins = 0;

	for (;;) {
		int n = ibv_poll_cq(cq, 1, wc);

		if (n < 0)
			return ru_fail(EIO, "ibv_poll_cq: %d", n);
		if (n == 1)
			return 1;
		if (spin_wait(deadline, &spins, timeout_ms))
			return 0;
	}
}

int ru_poll_n(struct ibv_cq *cq, struct ibv_wc *wcs, int n, int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	int got = 0;

	while (got < n) {
		uint64_t now = ru_now_ms();
		int rc;

		if (now >= deadline)
			break;
		rc = ru_poll(cq, &wcs[got], (int)(deadline - now));
		if (rc < 0)
			return rc;
		if (rc == 0)
			break;
		got++;
	}
	if (got < n)
		ru_fail(ETIMEDOUT, "only %d of %d completions within %d ms",
			got, n, timeout_ms);
	return got;
}

int ru_expect_success(struct ibv_cq *cq, uint64_t wr_id, struct ibv_wc *wc,
		      int timeout_ms)
{
	struct ibv_wc tmp;
	long scale;
	int rc;

	if (!wc)
		wc = &tmp;
	/*
	 * A completion that must come: its bound grows with the run's
	 * SIWX_SUITE_TIMEOUT_SCALE (make check KERNEL=debug: 6), where
	 * every operation is slower; the waits for what must not come keep
	 * theirs.
	 */
	scale = ru_env_long("SIWX_SUITE_TIMEOUT_SCALE", 1);
	if (scale > 1 && scale < 100)
		timeout_ms *= (int)scale;
	rc = ru_poll(cq, wc, timeout_ms);
	if (rc < 0)
		return rc;
	if (rc == 0)
		return ru_fail(ETIMEDOUT, "no completion within %d ms",
			       timeout_ms);
	if (wc->status != IBV_WC_SUCCESS)
		return ru_fail(EIO, "wr_id %llu completed with status %d (%s), "
			       "vendor_err 0x%x",
			       (unsigned long long)wc->wr_id, wc->status,
			       ibv_wc_status_str(wc->status), wc->vendor_err);
	if (wc->wr_id != wr_id)
		return ru_fail(EPROTO, "expected wr_id %llu, got %llu",
			       (unsigned long long)wr_id,
			       (unsigned long long)wc->wr_id);
	return 0;
}

void ru_wc_from(struct ru_wc *w, const struct ibv_wc *wc)
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

void ru_wc_from_ex(struct ru_wc *w, struct ibv_cq_ex *cq)
{
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
}

int ru_poll_ex(struct ibv_cq_ex *cq, struct ru_wc *w, int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
	unsigned int spins = 0;
	int rc;

	for (;;) {
		rc = ibv_start_poll(cq, &pa);
		if (rc == 0)
			break;
		if (rc != ENOENT)
			return ru_fail(rc, "ibv_start_poll: %d", rc);
		if (spin_wait(deadline, &spins, timeout_ms))
			return 0;
	}
	ru_wc_from_ex(w, cq);
	ibv_end_poll(cq);
	return 1;
}

static int poll_wc(struct ibv_cq *cq, struct ru_wc *w, int timeout_ms,
		   const char *which)
{
	struct ibv_wc wc;
	int rc = ru_poll(cq, &wc, timeout_ms);

	if (rc == 1)
		ru_wc_from(w, &wc);
	else if (rc == 0)
		ru_fail(ETIMEDOUT, "no %s completion within %d ms", which,
			timeout_ms);
	return rc;
}

int ru_poll_recv(struct ru_ep *e, struct ru_wc *w, int timeout_ms)
{
	if (e->rcqx)
		return ru_poll_ex(e->rcqx, w, timeout_ms);
	return poll_wc(e->rcq, w, timeout_ms, "receive");
}

int ru_poll_send(struct ru_ep *e, struct ru_wc *w, int timeout_ms)
{
	if (e->scqx)
		return ru_poll_ex(e->scqx, w, timeout_ms);
	return poll_wc(e->scq, w, timeout_ms, "send");
}

const char *ru_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "other";
	}
}

const char *ru_wc_str(const struct ru_wc *w, char *buf, size_t n)
{
	snprintf(buf, n, "wr %llu %s(%d) %s len %u flags 0x%x imm 0x%08x qp %u vendor_err 0x%x",
		 (unsigned long long)w->wr_id, ru_wc_opcode_str(w->opcode),
		 (int)w->opcode, ibv_wc_status_str(w->status), w->byte_len,
		 w->wc_flags, be32toh(w->imm), w->qp_num, w->vendor_err);
	return buf;
}

/* ---- async events ------------------------------------------------------- */

int ru_async_nonblock(struct ibv_context *ctx)
{
	return set_nonblock_fd(ctx->async_fd, "async_fd");
}

int ru_get_async(struct ibv_context *ctx, struct ibv_async_event *ev,
		 int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
		uint64_t now;

		if (ibv_get_async_event(ctx, ev) == 0) {
			ibv_ack_async_event(ev);
			return 1;
		}
		now = ru_now_ms();
		if (now >= deadline)
			return 0;
		poll(&pfd, 1, (int)(deadline - now));
	}
}

/* ---- QP state ----------------------------------------------------------- */

int ru_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;
	int rc;

	memset(&a, 0, sizeof(a));
	rc = ibv_query_qp(qp, &a, IBV_QP_STATE, &ia);
	if (rc)
		return ru_fail(rc, "ibv_query_qp: %d", rc);
	return a.qp_state;
}

int ru_wait_qp_state(struct ibv_qp *qp, enum ibv_qp_state state,
		     int timeout_ms)
{
	uint64_t deadline = ru_now_ms() + (uint64_t)timeout_ms;
	int s;

	for (;;) {
		s = ru_qp_state(qp);
		if (s == (int)state)
			return 0;
		if (ru_now_ms() >= deadline)
			return ru_fail(ETIMEDOUT,
				       "QP state %s, not %s after %d ms",
				       ru_qp_state_str(s),
				       ru_qp_state_str(state), timeout_ms);
		ru_sleep_us(5000);
	}
}

const char *ru_qp_state_str(int s)
{
	switch (s) {
	case IBV_QPS_RESET: return "RESET";
	case IBV_QPS_INIT: return "INIT";
	case IBV_QPS_RTR: return "RTR";
	case IBV_QPS_RTS: return "RTS";
	case IBV_QPS_SQD: return "SQD";
	case IBV_QPS_SQE: return "SQE";
	case IBV_QPS_ERR: return "ERR";
	default: return s < 0 ? "query-failed" : "unknown";
	}
}

/* ---- the pair topology -------------------------------------------------- */

int ru_pair_role(void)
{
	const char *r = ru_env("SIWX_ROLE", "");

	return !strcmp(r, "a") ? 'a' : !strcmp(r, "b") ? 'b' : 0;
}

int ru_pair_kind(int vm)
{
	const char *o = ru_env("SIWX_PAIR_ORDER", "");
	const char *dash = strchr(o, '-');
	char part[32];

	if (!dash)
		return -1;
	if (vm == 0)
		snprintf(part, sizeof(part), "%.*s", (int)(dash - o), o);
	else
		snprintf(part, sizeof(part), "%s", dash + 1);
	if (!strcmp(part, "ours"))
		return 1;
	if (!strcmp(part, "upstream"))
		return 0;
	return -1;
}

/* ---- control messages --------------------------------------------------- */

static void chan_close(struct ru_ep *e, void *chan)
{
	(void)e;
	ru_chan_free(chan);
}

void ru_chan_caps(struct ru_caps *caps, struct ru_chan *ch, int nslot,
		  size_t slot, size_t txlen, int access)
{
	memset(ch, 0, sizeof(*ch));
	ch->nslot = nslot;
	ch->slot = slot;
	ch->txlen = txlen;
	ch->access = access;
	ch->next_id = 1000;
	caps->max_recv_wr = (uint32_t)nslot + 2;
	caps->on_qp = ru_chan_prepost;
	caps->on_qp_arg = ch;
	caps->on_close = chan_close;
	caps->on_close_arg = ch;
}

int ru_chan_prepost(struct ru_ep *e, void *chan)
{
	struct ru_chan *ch = chan;
	int i, rc;

	ru_chan_free(ch);	/* what an earlier attempt (ru_connect) left */
	rc = ru_buf_alloc(&ch->rx, e->pd, (size_t)ch->nslot * ch->slot,
			  ch->access);
	if (!rc)
		rc = ru_buf_alloc(&ch->tx, e->pd, ch->txlen, ch->access);
	for (i = 0; !rc && i < ch->nslot; i++)
		rc = ru_post_recv(e, &ch->rx, (size_t)i * ch->slot, ch->slot,
				  (uint64_t)i);
	return rc;
}

void ru_chan_free(struct ru_chan *ch)
{
	ru_buf_free(&ch->rx);
	ru_buf_free(&ch->tx);
}

int ru_chan_send_tx(struct ru_ep *e, struct ru_chan *ch, size_t len,
		    int timeout_ms)
{
	uint64_t id = ++ch->next_id;
	struct ibv_wc wc;
	int rc;

	rc = ru_post_send(e, IBV_WR_SEND, &ch->tx, 0, len, 0, 0, id,
			  IBV_SEND_SIGNALED);
	if (!rc)
		rc = ru_expect_success(e->scq, id, &wc, timeout_ms);
	if (rc)
		return ru_fail(rc, "port %u: Send of %zu bytes: %s", e->port,
			       len, ru_errmsg());
	return 0;
}

int ru_chan_next(struct ru_ep *e, struct ru_chan *ch, struct ibv_wc *wc,
		 uint8_t **slot, int timeout_ms)
{
	int rc = ru_poll(e->rcq, wc, timeout_ms);

	if (rc < 0)
		return rc;
	if (rc == 0)
		return ru_fail(ETIMEDOUT, "port %u: no message from the peer "
			       "within %d ms; QP %s", e->port, timeout_ms,
			       ru_qp_state_str(ru_qp_state(e->qp)));
	if (wc->status != IBV_WC_SUCCESS)
		return ru_fail(EIO, "port %u: receive failed: %s", e->port,
			       ibv_wc_status_str(wc->status));
	if (wc->wr_id >= (uint64_t)ch->nslot)
		return ru_fail(EPROTO, "port %u: receive wr_id %llu is no slot",
			       e->port, (unsigned long long)wc->wr_id);
	*slot = ch->rx.addr + wc->wr_id * ch->slot;
	return 0;
}

int ru_chan_release(struct ru_ep *e, struct ru_chan *ch, uint64_t slot)
{
	return ru_post_recv(e, &ch->rx, slot * ch->slot, ch->slot, slot);
}

int ru_msg_send(struct ru_ep *e, struct ru_chan *ch, const struct ru_msg *m,
		int timeout_ms)
{
	memcpy(ch->tx.addr, m, sizeof(*m));
	((struct ru_msg *)ch->tx.addr)->magic = RU_MSG_MAGIC;
	return ru_chan_send_tx(e, ch, sizeof(*m), timeout_ms);
}

int ru_msg_recv(struct ru_ep *e, struct ru_chan *ch, uint32_t type,
		struct ru_msg *m, int timeout_ms)
{
	struct ibv_wc wc;
	uint8_t *p;
	int rc;

	rc = ru_chan_next(e, ch, &wc, &p, timeout_ms);
	if (rc)
		return ru_fail(rc, "waiting for message type %u: %s", type,
			       ru_errmsg());
	memset(m, 0, sizeof(*m));
	memcpy(m, p, wc.byte_len < sizeof(*m) ? wc.byte_len : sizeof(*m));
	rc = ru_chan_release(e, ch, wc.wr_id);
	if (rc)
		return rc;
	if (wc.byte_len != sizeof(*m) || m->magic != RU_MSG_MAGIC ||
	    m->type != type)
		return ru_fail(EPROTO, "port %u: got %u bytes, magic 0x%x, type "
			       "%u; want a message (%zu bytes) of type %u",
			       e->port, wc.byte_len, m->magic, m->type,
			       sizeof(*m), type);
	return 0;
}

int ru_msg_exchange(struct ru_ep *e, struct ru_chan *ch, int initiator,
		    const struct ru_msg *mine, struct ru_msg *peer,
		    int timeout_ms)
{
	int rc;

	if (initiator) {
		ru_sleep_us(RU_FIRST_SEND_DELAY_US);
		rc = ru_msg_send(e, ch, mine, timeout_ms);
		if (!rc)
			rc = ru_msg_recv(e, ch, mine->type, peer, timeout_ms);
		return rc;
	}
	rc = ru_msg_recv(e, ch, mine->type, peer, timeout_ms);
	if (!rc)
		rc = ru_msg_send(e, ch, mine, timeout_ms);
	return rc;
}
