// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * raw_server - the verbs side of the rawpeer suite.
 *
 *   raw_server --port P [options]
 *   raw_server --caps [--dev NAME]
 *
 * Listens with rdma_cm on SIWX_ADDR0 (siw0), registers one memory region
 * with the access flags asked for, fills it and a guard page on each side
 * with a pseudo-random pattern, accepts the first connection with private
 * data "rkey=0x.. addr=0x.. len=N" (text: tools/mpa-peer turns it into
 * variables), then records everything the QP reports -- CM events, async
 * events, completions, the QP state -- until the QP leaves RTS or the
 * time is up. At the end it compares the whole area (guards included)
 * with what it must hold and prints one "server mem ..." verdict.
 *
 * The connection is rdma_util's (ru_listen, ru_accept_start): its on_qp
 * hook makes the memory and sets the private data, its on_close hook
 * frees them.
 *
 * Output: one "server WHAT key=value..." line per observation, flushed.
 * Exit: 0 memory as expected, 1 memory differs, 3 setup failure (no
 * connection, verbs error), 2 usage.
 *
 * Options:
 *   --addr A           listen address (default SIWX_ADDR0)
 *   --port P           listen port (required)
 *   --len N            MR length (default 4096)
 *   --access LIST      lw,rw,rr,ra (local write, remote write/read/atomic),
 *                      fg,fp (flush global / persistent), or none
 *                      (default lw,rw,rr,ra)
 *   --pd2              register the MR in a second PD (not the QP's)
 *   --recv N           receives posted before accept (default 4)
 *   --recv-len N       bytes per receive (default 256)
 *   --ird N --ord N    responder_resources/initiator_depth to accept with
 *                      (default 16/16)
 *   --timeout MS       connect request + wait for the QP to leave RTS
 *                      (default 20000)
 *   --linger MS        keep collecting after that (default 700)
 *   --set-u64 OFF=V    initial host-order u64 at MR offset OFF (repeatable)
 *   --expect-u64 OFF=V expected final u64 at MR offset OFF (repeatable)
 *   --expect-hex OFF=HEX  expected final bytes at MR offset OFF
 *   --seed S           pattern seed (default random, SIWX_SEED)
 *   --post-fadd ADD    once established (+ --post-delay MS, default 300),
 *   --post-cswap CMP:SWAP  post one FetchAdd / CmpSwap to the peer's
 *                      rkey 0x1234, address 0x1000 (--post-rkey/--post-raddr)
 *                      with an 8-byte result buffer, printed at the end
 *   --post-read N      the same, N (1-8) RDMA Reads of 8 bytes at once,
 *                      wr_id 1..N, all into the result buffer
 *   --accept-delay MS  wait this long between the connect request and
 *                      rdma_accept() (what the peer sends meanwhile sits
 *                      in the socket until the QP takes it over)
 *   --ready-fd N       write "listening" to file descriptor N and close it
 *                      once rdma_listen() returned (a connection made
 *                      earlier may never be accepted by siw)
 *   --caps             print the device's capabilities and exit: verbs
 *                      attributes and the caps word of siw's ALLOC_CTX
 *                      response (SIW_CAP_ATOMIC 1, SIW_CAP_IMM_DATA 2)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rdma/siw-abi.h>	/* of the module under test (SIW_CAP_*) */

#include "rdma_util.h"

#define MAX_EXP		16
#define PAGE		4096

/*
 * IBV_ACCESS_FLUSH_GLOBAL / _PERSISTENT: the uverbs ABI values
 * (IB_UVERBS_ACCESS_FLUSH_*), by number because the stock build's
 * rdma-core 44 does not name them.
 */
#define RS_ACCESS_FLUSH_GLOBAL		(1 << 8)
#define RS_ACCESS_FLUSH_PERSISTENT	(1 << 9)

static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("server ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: raw_server --port P [--addr A] [--len N] [--access lw,rw,rr,ra,fg,fp|none]\n"
		"       [--pd2] [--recv N] [--recv-len N] [--ird N] [--ord N]\n"
		"       [--timeout MS] [--linger MS] [--set-u64 OFF=V]...\n"
		"       [--expect-u64 OFF=V]... [--expect-hex OFF=HEX]... [--seed S]\n"
		"       [--post-fadd ADD | --post-cswap CMP:SWAP | --post-read N]\n"
		"       [--post-delay MS]\n"
		"       [--post-rkey K] [--post-raddr A] [--ready-fd N] [--accept-delay MS]\n"
		"       raw_server --caps [--dev NAME]\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

/* "OFF=VALUE": split */
static void offval(const char *s, uint64_t *off, const char **val)
{
	const char *eq = strchr(s, '=');
	char tmp[32];

	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(tmp))
		usage();
	memcpy(tmp, s, eq - s);
	tmp[eq - s] = 0;
	*off = num(tmp);
	*val = eq + 1;
}

static int hexbytes(const char *s, uint8_t *b, size_t max)
{
	size_t n = 0;

	if (s[0] == '0' && s[1] == 'x')
		s += 2;
	while (s[0] && s[1]) {
		unsigned int v;

		if (n == max || sscanf(s, "%2x", &v) != 1)
			return -1;
		b[n++] = v;
		s += 2;
	}
	return *s ? -1 : (int)n;
}

static const char *access_str(int a, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s%s%s", a & IBV_ACCESS_LOCAL_WRITE ? "lw," : "",
		 a & IBV_ACCESS_REMOTE_WRITE ? "rw," : "",
		 a & IBV_ACCESS_REMOTE_READ ? "rr," : "",
		 a & IBV_ACCESS_REMOTE_ATOMIC ? "ra," : "",
		 a & RS_ACCESS_FLUSH_GLOBAL ? "fg," : "",
		 a & RS_ACCESS_FLUSH_PERSISTENT ? "fp," : "", a ? "" : "none");
	if (buf[0] && buf[strlen(buf) - 1] == ',')
		buf[strlen(buf) - 1] = 0;
	return buf;
}

/* ---------------------------------------------------------------- caps */

/* legacy write() ABI of GET_CONTEXT (include/uapi/rdma/ib_user_verbs.h) */
struct uv_hdr {
	uint32_t command;
	uint16_t in_words;
	uint16_t out_words;
};

struct uv_get_context {
	uint64_t response;
};

struct uv_get_context_resp {
	uint32_t async_fd;
	uint32_t num_comp_vectors;
	/* siw_uresp_alloc_ctx */
	uint32_t dev_id;
	uint32_t caps;		/* "pad" upstream: 0 */
};

static int print_caps(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	int i, fd, rc = 3;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev) {
		say("caps error=no-device dev=%s", name);
		goto out;
	}
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_device(ctx, &attr)) {
		say("caps error=query dev=%s errno=%d", name, errno);
		goto out;
	}
	say("caps dev=%s atomic_cap=%d max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_sge=%d",
	    name, attr.atomic_cap, attr.max_qp_rd_atom,
	    attr.max_qp_init_rd_atom, attr.max_sge);
	ibv_close_device(ctx);

	/* what the kernel itself reports to a new user context */
	{
		char path[128];
		struct {
			struct uv_hdr h;
			struct uv_get_context c;
		} cmd;
		struct uv_get_context_resp resp;

		snprintf(path, sizeof(path), "/dev/infiniband/%s", dev->dev_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			say("caps error=open path=%s errno=%d", path, errno);
			goto out;
		}
		memset(&cmd, 0, sizeof(cmd));
		memset(&resp, 0xff, sizeof(resp));
		cmd.h.command = 0;	/* IB_USER_VERBS_CMD_GET_CONTEXT */
		cmd.h.in_words = sizeof(cmd) / 4;
		cmd.h.out_words = sizeof(resp) / 4;
		cmd.c.response = (uintptr_t)&resp;
		if (write(fd, &cmd, sizeof(cmd)) != sizeof(cmd)) {
			say("caps error=get_context path=%s errno=%d", path, errno);
			close(fd);
			goto out;
		}
		close((int)resp.async_fd);
		close(fd);
		say("caps dev=%s uverbs=%s dev_id=0x%x kernel_caps=0x%x atomic=%d imm_data=%d",
		    name, dev->dev_name, resp.dev_id, resp.caps,
		    !!(resp.caps & SIW_CAP_ATOMIC),
		    !!(resp.caps & SIW_CAP_IMM_DATA));
	}
	rc = 0;
out:
	if (list)
		ibv_free_device_list(list);
	return rc;
}

/* ---------------------------------------------------------------- main */

struct expect {
	uint64_t off;
	uint8_t bytes[64];
	int n;
};

/* the command line */
struct opts {
	const char *addr, *dev;
	int port, pd2, caps_only, nrecv;
	size_t len, recv_len;
	int access;
	unsigned int ird, ord;
	uint64_t timeout, linger, seed;
	int have_seed;
	struct expect sets[MAX_EXP], exps[MAX_EXP];
	int nsets, nexps;
	int post_op, ready_fd;
	uint64_t post_a, post_b, post_delay, post_raddr, accept_delay;
	uint32_t post_rkey;
};

/* the connection, its resources and what was observed on it */
struct server {
	const struct opts *o;
	struct ru_listener l;
	struct ru_ep ep;
	struct ibv_pd *pdm;		/* the MR's: ep.pd, or with --pd2 its own */
	struct ibv_mr *mr;
	struct ru_buf rbuf, res;	/* receives; the posted atomic's result */
	uint8_t *area, *want, *mrp;
	size_t area_len;
	char pdata[200];		/* accept's private data */
	int said;			/* a setup failure is reported */
	uint64_t t0, est_at;
	int n_async, n_cqe, qp_err, posted;
};

static void parse_opts(struct opts *o, int argc, char **argv)
{
	int i;

	for (i = 1; i < argc; i++) {
		const char *op = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(op, "--caps")) {
			o->caps_only = 1;
			continue;
		}
		if (!strcmp(op, "--pd2")) {
			o->pd2 = 1;
			continue;
		}
		if (!a)
			usage();
		i++;
		if (!strcmp(op, "--addr")) {
			o->addr = a;
		} else if (!strcmp(op, "--dev")) {
			o->dev = a;
		} else if (!strcmp(op, "--port")) {
			o->port = (int)num(a);
		} else if (!strcmp(op, "--len")) {
			o->len = num(a);
		} else if (!strcmp(op, "--access")) {
			o->access = 0;
			if (strstr(a, "lw"))
				o->access |= IBV_ACCESS_LOCAL_WRITE;
			if (strstr(a, "rw"))
				o->access |= IBV_ACCESS_REMOTE_WRITE;
			if (strstr(a, "rr"))
				o->access |= IBV_ACCESS_REMOTE_READ;
			if (strstr(a, "ra"))
				o->access |= IBV_ACCESS_REMOTE_ATOMIC;
			if (strstr(a, "fg"))
				o->access |= RS_ACCESS_FLUSH_GLOBAL;
			if (strstr(a, "fp"))
				o->access |= RS_ACCESS_FLUSH_PERSISTENT;
		} else if (!strcmp(op, "--recv")) {
			o->nrecv = (int)num(a);
		} else if (!strcmp(op, "--recv-len")) {
			o->recv_len = num(a);
		} else if (!strcmp(op, "--ird")) {
			o->ird = num(a);
		} else if (!strcmp(op, "--ord")) {
			o->ord = num(a);
		} else if (!strcmp(op, "--timeout")) {
			o->timeout = num(a);
		} else if (!strcmp(op, "--linger")) {
			o->linger = num(a);
		} else if (!strcmp(op, "--seed")) {
			o->seed = num(a);
			o->have_seed = 1;
		} else if (!strcmp(op, "--set-u64") || !strcmp(op, "--expect-u64")) {
			struct expect *e = op[2] == 's' ? &o->sets[o->nsets++] :
							  &o->exps[o->nexps++];
			const char *v;
			uint64_t x;

			if (o->nsets > MAX_EXP || o->nexps > MAX_EXP)
				usage();
			offval(a, &e->off, &v);
			x = num(v);
			memcpy(e->bytes, &x, 8);
			e->n = 8;
		} else if (!strcmp(op, "--post-fadd")) {
			o->post_op = IBV_WR_ATOMIC_FETCH_AND_ADD;
			o->post_a = num(a);
		} else if (!strcmp(op, "--post-read")) {
			o->post_op = IBV_WR_RDMA_READ;
			o->post_a = num(a);
			if (o->post_a < 1 || o->post_a > 8)
				usage();
		} else if (!strcmp(op, "--post-cswap")) {
			char tmp[64], *c;

			snprintf(tmp, sizeof(tmp), "%s", a);
			c = strchr(tmp, ':');
			if (!c)
				usage();
			*c = 0;
			o->post_op = IBV_WR_ATOMIC_CMP_AND_SWP;
			o->post_a = num(tmp);
			o->post_b = num(c + 1);
		} else if (!strcmp(op, "--ready-fd")) {
			o->ready_fd = (int)num(a);
		} else if (!strcmp(op, "--post-delay")) {
			o->post_delay = num(a);
		} else if (!strcmp(op, "--accept-delay")) {
			o->accept_delay = num(a);
		} else if (!strcmp(op, "--post-rkey")) {
			o->post_rkey = num(a);
		} else if (!strcmp(op, "--post-raddr")) {
			o->post_raddr = num(a);
		} else if (!strcmp(op, "--expect-hex")) {
			struct expect *e = &o->exps[o->nexps++];
			const char *v;

			if (o->nexps > MAX_EXP)
				usage();
			offval(a, &e->off, &v);
			e->n = hexbytes(v, e->bytes, sizeof(e->bytes));
			if (e->n < 0)
				usage();
		} else {
			usage();
		}
	}
}

/* the values the server's own checks need; usage() on nonsense */
static void check_opts(struct opts *o)
{
	struct in_addr sin;
	int i;

	if (o->port < 0 || !o->len || o->nrecv < 0)
		usage();
	for (i = 0; i < o->nsets; i++)
		if (o->sets[i].off + 8 > o->len)
			usage();
	for (i = 0; i < o->nexps; i++)
		if (o->exps[i].off + o->exps[i].n > o->len)
			usage();
	if (inet_pton(AF_INET, o->addr, &sin) != 1)
		usage();
	if (!o->have_seed)
		o->seed = ru_random_seed();
}

static int do_listen(struct server *s)
{
	const struct opts *o = s->o;
	struct ibv_context *ctx;
	int rc;

	rc = ru_listen(&s->l, o->addr, (uint16_t)o->port, 4);
	if (rc) {
		say("error step=listen addr=%s port=%d errno=%d (%s)", o->addr,
		    o->port, -rc, ru_errmsg());
		return 3;
	}
	ctx = s->l.id->verbs;
	say("listening addr=%s port=%d dev=%s seed=0x%" PRIx64, o->addr, o->port,
	    ctx ? ibv_get_device_name(ctx->device) : "?", o->seed);
	if (o->ready_fd >= 0) {
		if (write(o->ready_fd, "listening\n", 10) != 10)
			say("warning ready-fd=%d errno=%d", o->ready_fd, errno);
		close(o->ready_fd);
	}
	return 0;
}

/* The MR between two guard pages, all of it patterned, and the image of
 * what it must hold at the end. */
static int setup_memory(struct server *s)
{
	const struct opts *o = s->o;
	char abuf[32];
	int i;

	s->area_len = PAGE + ((o->len + PAGE - 1) & ~(size_t)(PAGE - 1)) + PAGE;
	s->area = mmap(NULL, s->area_len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	s->want = malloc(s->area_len);
	if (s->area == MAP_FAILED || !s->want) {
		say("error step=alloc");
		return -ENOMEM;
	}
	s->mrp = s->area + PAGE;
	ru_fill(s->area, s->area_len, o->seed);
	for (i = 0; i < o->nsets; i++)
		memcpy(s->mrp + o->sets[i].off, o->sets[i].bytes, 8);
	memcpy(s->want, s->area, s->area_len);
	for (i = 0; i < o->nexps; i++)
		memcpy(s->want + PAGE + o->exps[i].off, o->exps[i].bytes,
		       o->exps[i].n);
	s->mr = ibv_reg_mr(s->pdm, s->mrp, o->len, o->access);
	if (!s->mr) {
		int err = errno;

		say("error step=reg_mr access=%s errno=%d (%s)",
		    access_str(o->access, abuf, sizeof(abuf)), err,
		    strerror(err));
		return -err;
	}
	say("mr rkey=0x%08x addr=0x%" PRIx64 " len=%zu access=%s pd=%s", s->mr->rkey,
	    (uint64_t)(uintptr_t)s->mrp, o->len,
	    access_str(o->access, abuf, sizeof(abuf)), o->pd2 ? "other" : "qp");
	for (i = 0; i < o->nsets; i++) {
		uint64_t v;

		memcpy(&v, o->sets[i].bytes, 8);
		say("set off=%" PRIu64 " u64=0x%016" PRIx64, o->sets[i].off, v);
	}
	return 0;
}

static int post_receives(struct server *s, struct ru_ep *e)
{
	const struct opts *o = s->o;
	int i, rc;

	rc = ru_buf_alloc(&s->rbuf, e->pd, o->nrecv * o->recv_len,
			  IBV_ACCESS_LOCAL_WRITE);
	if (rc) {
		say("error step=recv_mr errno=%d", -rc);
		return rc;
	}
	for (i = 0; i < o->nrecv; i++) {
		rc = ru_post_recv(e, &s->rbuf, i * o->recv_len, o->recv_len,
				  100 + i);
		if (rc) {
			say("error step=post_recv errno=%d", -rc);
			return rc;
		}
	}
	return 0;
}

/*
 * caps.on_qp: the connect request is in (e->peer), the QP made. Report
 * the request, make the memory, post the receives; accept's private
 * data is the MR's coordinates as text.
 */
static int setup_resources(struct ru_ep *e, void *arg)
{
	struct server *s = arg;
	const struct opts *o = s->o;
	char hex[2 * 64 + 1] = "-";
	int k, rc;

	for (k = 0; k < e->peer.len && k < 64; k++)
		sprintf(hex + 2 * k, "%02x", e->peer.data[k]);
	say("connect-request pd_len=%d responder_resources=%u initiator_depth=%u pdata=%s",
	    e->peer.len, e->peer.responder_resources,
	    e->peer.initiator_depth, hex);
	s->said = 1;	/* each failure below says what it was */
	s->pdm = o->pd2 ? ibv_alloc_pd(e->id->verbs) : e->pd;	/* a foreign PD */
	if (!s->pdm) {
		say("error step=pd_cq errno=%d", errno);
		return -ENOMEM;
	}
	rc = setup_memory(s);
	if (rc)
		return rc;
	if (o->nrecv) {
		rc = post_receives(s, e);
		if (rc)
			return rc;
	}
	say("qp qpn=%u recv_posted=%d recv_len=%zu", e->qp->qp_num, o->nrecv,
	    o->recv_len);
	if (o->post_op >= 0) {
		rc = ru_buf_alloc(&s->res, e->pd, 64, IBV_ACCESS_LOCAL_WRITE);
		if (rc) {
			say("error step=result_mr errno=%d", -rc);
			return rc;
		}
		*(uint64_t *)s->res.addr = 0x5a5a5a5a5a5a5a5aull;
	}
	snprintf(s->pdata, sizeof(s->pdata), "rkey=0x%08x addr=0x%" PRIx64 " len=%zu",
		 s->mr->rkey, (uint64_t)(uintptr_t)s->mrp, o->len);
	e->pdata_len = (uint8_t)(strlen(s->pdata) + 1);
	memcpy(e->pdata, s->pdata, e->pdata_len);
	s->said = 0;
	if (o->accept_delay) {
		usleep(o->accept_delay * 1000);
		say("accept-delay ms=%" PRIu64, o->accept_delay);
	}
	return 0;
}

/* caps.on_close: what setup_resources() registered */
static void release_resources(struct ru_ep *e, void *arg)
{
	struct server *s = arg;

	if (s->mr)
		ibv_dereg_mr(s->mr);
	s->mr = NULL;
	if (s->pdm && s->pdm != e->pd)
		ibv_dealloc_pd(s->pdm);
	s->pdm = NULL;
	ru_buf_free(&s->rbuf);
	ru_buf_free(&s->res);
}

/* the first connect request: the QP and memory, accept */
static int do_accept(struct server *s)
{
	const struct opts *o = s->o;
	struct ru_caps caps;
	int rc;

	ru_caps_default(&caps);
	caps.max_send_wr = 16;
	caps.max_recv_wr = o->nrecv > 0 ? o->nrecv : 1;
	caps.cq_depth = 64;
	caps.responder_resources = o->ird;
	caps.initiator_depth = o->ord;
	caps.on_qp = setup_resources;
	caps.on_qp_arg = s;
	caps.on_close = release_resources;
	caps.on_close_arg = s;
	s->t0 = ru_now_ms();
	rc = ru_accept_start(&s->l, &s->ep, &caps, (int)o->timeout);
	if (rc && !s->ep.id) {
		if (rc == -ETIMEDOUT) {
			say("error step=connect_request timeout_ms=%" PRIu64, o->timeout);
			say("end result=no-connection");
		} else {
			say("error step=connect_request errno=%d (%s)", -rc,
			    ru_errmsg());
		}
		return 3;
	}
	if (rc) {
		if (!s->said)
			say("error step=%s errno=%d (%s)",
			    s->mr ? "accept" : "setup", -rc, ru_errmsg());
		return 3;
	}
	say("accepted ird=%u ord=%u pdata=\"%s\"", o->ird, o->ord, s->pdata);
	return 0;
}

static void drain_events(struct server *s)
{
	struct ibv_async_event ae;
	enum rdma_cm_event_type t;
	int st;

	while (!ibv_get_async_event(s->ep.id->verbs, &ae)) {
		s->n_async++;
		say("async event=%s", ibv_event_type_str(ae.event_type));
		ibv_ack_async_event(&ae);
	}
	while (!ru_get_cm_event(s->ep.ch, 0, &t, &st, NULL)) {
		say("cm-event event=%s status=%d", rdma_event_str(t), st);
		if (t == RDMA_CM_EVENT_ESTABLISHED) {
			s->ep.established = 1;
			s->est_at = ru_now_ms();
		}
		if (t == RDMA_CM_EVENT_DISCONNECTED)
			s->ep.disconnected = 1;
	}
}

static void drain_cqs(struct server *s)
{
	const struct opts *o = s->o;
	struct ibv_wc wc;

	for (int q = 0; q < 2; q++) {
		struct ibv_cq *cq = q ? s->ep.scq : s->ep.rcq;

		while (ibv_poll_cq(cq, 1, &wc) == 1) {
			char hex[2 * 32 + 1] = "-";

			s->n_cqe++;
			if (!q && wc.status == IBV_WC_SUCCESS &&
			    wc.wr_id >= 100 &&
			    wc.wr_id < 100 + (uint64_t)o->nrecv) {
				uint8_t *b = s->rbuf.addr + (wc.wr_id - 100) * o->recv_len;
				unsigned int k;

				for (k = 0; k < wc.byte_len && k < 32; k++)
					sprintf(hex + 2 * k, "%02x", b[k]);
			}
			say("cqe cq=%s wr_id=%" PRIu64 " status=%s opcode=%d byte_len=%u wc_flags=0x%x with_imm=%d imm=0x%08x data=%s",
			    q ? "send" : "recv", wc.wr_id,
			    ibv_wc_status_str(wc.status), wc.opcode,
			    wc.byte_len, wc.wc_flags,
			    !!(wc.wc_flags & IBV_WC_WITH_IMM),
			    ntohl(wc.imm_data), hex);
		}
	}
}

/* --post-read N: N RDMA Reads to the peer, one post (its rc) */
static void post_reads(struct server *s)
{
	const struct opts *o = s->o;
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->res.addr, .length = 8,
		.lkey = s->res.mr->lkey,
	};
	struct ibv_send_wr wr[8], *badwr;
	int prc;

	memset(wr, 0, sizeof(wr));
	for (unsigned int i = 0; i < o->post_a; i++) {
		wr[i].wr_id = i + 1;
		wr[i].sg_list = &sge;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_RDMA_READ;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].wr.rdma.remote_addr = o->post_raddr;
		wr[i].wr.rdma.rkey = o->post_rkey;
		wr[i].next = i + 1 < o->post_a ? &wr[i + 1] : NULL;
	}
	prc = ibv_post_send(s->ep.qp, wr, &badwr);
	s->posted = 1;
	say("post op=read n=%" PRIu64 " rc=%d%s%s rkey=0x%x raddr=0x%" PRIx64,
	    o->post_a, prc, prc ? " err=" : "",
	    prc ? strerror(prc < 0 ? -prc : prc) : "",
	    o->post_rkey, o->post_raddr);
}

/* --post-fadd / --post-cswap: one atomic to the peer (the raw post's rc) */
static void post_atomic(struct server *s)
{
	const struct opts *o = s->o;
	struct ibv_sge sge = {
		.addr = (uintptr_t)s->res.addr, .length = 8,
		.lkey = s->res.mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = 1, .sg_list = &sge, .num_sge = 1,
		.opcode = o->post_op,
		.send_flags = IBV_SEND_SIGNALED,
	}, *badwr;
	int prc;

	wr.wr.atomic.remote_addr = o->post_raddr;
	wr.wr.atomic.rkey = o->post_rkey;
	wr.wr.atomic.compare_add = o->post_a;
	wr.wr.atomic.swap = o->post_b;
	prc = ibv_post_send(s->ep.qp, &wr, &badwr);
	s->posted = 1;
	say("post op=%s rc=%d%s%s rkey=0x%x raddr=0x%" PRIx64,
	    o->post_op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
	    "fadd" : "cswap", prc, prc ? " err=" : "",
	    prc ? strerror(prc < 0 ? -prc : prc) : "",
	    o->post_rkey, o->post_raddr);
}

/* Record everything until the QP leaves RTS (plus --linger) or the time
 * is up. */
static void watch(struct server *s)
{
	const struct opts *o = s->o;
	uint64_t end = ru_now_ms() + o->timeout, stop = 0;

	ru_async_nonblock(s->ep.id->verbs);	/* the CM channel already is */
	for (;;) {
		struct pollfd p[2] = {
			{ .fd = s->ep.id->verbs->async_fd, .events = POLLIN },
			{ .fd = s->ep.ch->fd, .events = POLLIN },
		};
		uint64_t now = ru_now_ms();
		int st;

		drain_events(s);
		drain_cqs(s);
		if (o->post_op >= 0 && !s->posted && s->ep.established &&
		    now >= s->est_at + o->post_delay) {
			if (o->post_op == IBV_WR_RDMA_READ)
				post_reads(s);
			else
				post_atomic(s);
		}
		st = ru_qp_state(s->ep.qp);
		if (!s->qp_err && st == IBV_QPS_ERR) {
			s->qp_err = 1;
			say("qp-state state=ERR after_ms=%" PRIu64, now - s->t0);
		}
		if (!stop && (s->qp_err || s->ep.disconnected))
			stop = now + o->linger;
		if (stop && now >= stop)
			break;
		if (!stop && now >= end) {
			say("timeout qp_state=%s after_ms=%" PRIu64,
			    ru_qp_state_str(st), now - s->t0);
			break;
		}
		poll(p, 2, 50);
	}
}

static int verdict(struct server *s)
{
	const struct opts *o = s->o;
	size_t k, first = (size_t)-1, ndiff = 0;
	int i;

	for (k = 0; k < s->area_len; k++)
		if (s->area[k] != s->want[k]) {
			if (first == (size_t)-1)
				first = k;
			ndiff++;
		}
	for (i = 0; i < o->nexps; i++) {
		uint64_t v = 0;

		memcpy(&v, s->mrp + o->exps[i].off,
		       o->exps[i].n < 8 ? o->exps[i].n : 8);
		say("value off=%" PRIu64 " u64=0x%016" PRIx64,
		    o->exps[i].off, v);
	}
	if (!ndiff) {
		say("mem ok bytes=%zu expected_changes=%d", s->area_len, o->nexps);
	} else {
		long off = (long)first - PAGE;
		const char *where = off < 0 ? "guard-before" :
			(size_t)off >= o->len ? "guard-after" : "mr";
		char g[33] = "", w[33] = "";

		for (k = 0; k < 16 && first + k < s->area_len; k++) {
			sprintf(g + 2 * k, "%02x", s->area[first + k]);
			sprintf(w + 2 * k, "%02x", s->want[first + k]);
		}
		say("mem changed ndiff=%zu first_mr_off=%ld where=%s got=%s want=%s",
		    ndiff, off, where, g, w);
	}
	return ndiff != 0;
}

static void teardown(struct server *s)
{
	ru_ep_disconnect(&s->ep);
	ru_ep_close(&s->ep);	/* release_resources() first */
	ru_listener_close(&s->l);
	munmap(s->area, s->area_len);
	free(s->want);
}

int main(int argc, char **argv)
{
	static struct opts o = {
		.port = -1, .nrecv = 4, .len = 4096, .recv_len = 256,
		.access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		.ird = 16, .ord = 16, .timeout = 20000, .linger = 700,
		.post_op = -1, .ready_fd = -1, .post_delay = 300,
		.post_raddr = 0x1000, .post_rkey = 0x1234,
	};
	static struct server s = { .o = &o };
	int mem_bad, rc;

	o.addr = ru_addr0();
	o.dev = ru_env("SIWX_DEV0", "siw0");
	setvbuf(stdout, NULL, _IOLBF, 0);
	parse_opts(&o, argc, argv);
	if (o.caps_only)
		return print_caps(o.dev);
	check_opts(&o);

	rc = do_listen(&s);
	if (!rc)
		rc = do_accept(&s);
	if (rc)
		return rc;
	watch(&s);
	mem_bad = verdict(&s);
	if (s.res.addr)
		say("result u64=0x%016" PRIx64, *(uint64_t *)s.res.addr);
	say("end established=%d disconnected=%d qp_err=%d qp_state=%s async=%d cqes=%d result=%s",
	    s.ep.established, s.ep.disconnected, s.qp_err,
	    ru_qp_state_str(ru_qp_state(s.ep.qp)), s.n_async, s.n_cqe,
	    mem_bad ? "mem-changed" : "mem-ok");
	teardown(&s);
	return mem_bad ? 1 : 0;
}
