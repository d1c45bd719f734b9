// SPDX-License-Identifier: GPL-2.0
/*
 * imm_bench: RDMA Write with Immediate against plain RDMA Write (and against
 * RDMA Write followed by a Send), on one rdma_cm connection, side by side.
 * perftest 4.5 has no write-with-immediate test; this is the tools/bench
 * substitute (Documentation/performance.md).
 *
 *   imm_bench -s [-a ADDR] [-p PORT]                      server
 *   imm_bench -c ADDR [-p PORT] [-l SIZES] [-n ITERS] [-b SIZES]
 *             [-B BYTES] [-m MIN] [-M MAX] [-r ROUNDS] [-w WARMUP]
 *             [-I INLINE] [-x MODES]                      client
 *
 * Three ways of moving SIZE bytes and telling the other side about them:
 *   write  RDMA Write; the receiver busy-polls the last byte of its buffer
 *          (what ib_write_lat does)
 *   imm    RDMA Write with Immediate; the receiver busy-polls its receive
 *          CQ for the IBV_WC_RECV_RDMA_WITH_IMM completion
 *   send   RDMA Write, then an 8-byte Send (one post, two work requests);
 *          the receiver polls its receive CQ for the Send
 * measured as
 *   latency   ping-pong: the client writes, the server answers the same way
 *             as soon as it sees the message, and so on; one sample is a
 *             round trip, reported halved (one-way, like ib_write_lat).
 *             Sizes -l (default 8,64,1024), -n round trips per size and mode
 *             (default 200) after -w warm-up round trips per chunk.
 *   bandwidth the client streams messages (at most 128 work requests
 *             outstanding, every 16th signalled); the time runs from the
 *             first post until the server has seen the last message and
 *             said so (one Send back): delivered bytes per second.
 *             Sizes -b (default 64,65536), iterations: -B bytes (default
 *             8 MiB) per size and mode, bounded to -m..-M (16..1000).
 * Each (size, mode) point is split into -r rounds (default 4) and the modes
 * take turns within a round (write imm send, then send imm write, ...), so
 * that drift hits all of them alike.  Messages up to -I bytes (default 64;
 * 0: never) are posted inline, in every mode.
 *
 * Checks (a mismatch is an error, exit status 1): the immediate value and
 * byte_len of every write-with-immediate completion, the payload of every
 * Send, that the written data is in place when the notification arrives
 * (latency: the last byte), and the status of every completion.
 *
 * If the provider refuses RDMA Write with Immediate at post time (upstream
 * siw: EOPNOTSUPP), the imm tests are reported as unsupported and the
 * others still run.  Output (client, stdout), one line per point:
 *
 *   result test=write_imm_lat size=64 iters=200 lat_typical_us=.. lat_avg_us=..
 *          lat_min_us=.. lat_p99_us=..
 *   result test=write_imm_bw size=64 iters=1000 bw_avg_MiBps=.. msg_rate_Mpps=..
 *          snd_MiBps=..
 *   na test=write_imm_lat size=64 reason=...
 * test names: write_poll_lat write_imm_lat write_send_lat (latency),
 * write_plain_bw write_imm_bw write_send_bw (bandwidth); MiB = 2^20 bytes,
 * Mpps = 10^6 messages/s.  lat_typical_us is the median.  snd_MiBps is
 * what the sender saw (last send completion; ib_write_bw's view).
 * Then, for people, "dist ..." lines (latency deciles) and "ratio ..." lines
 * (imm/write, imm/send).
 *
 * Control messages are 64-byte Sends in host byte order (both ends run on
 * the same machine).  The client's largest size travels in the connection
 * request's private data, so that the server registers a large enough
 * buffer.  The server serves one connection and exits.  The connection is
 * the selftests' rdma_util (selftests/lib/rdma_util.c, linked in): its
 * on_qp hook sets up the buffers and posts the receives; the data path
 * below is the bench's own.  ADDR is numeric.
 */
#define _GNU_SOURCE
#include <endian.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma_util.h"

#define MAX_SIZES	16
#define CTL_SLOT	64		/* receive buffer per receive WQE */
#define RQ_WANT		4096
#define SQ_DEPTH	256
#define BW_WINDOW	128		/* outstanding send WQEs, bandwidth */
#define SIGNAL_EVERY	16
#define WAIT_SECS	30		/* any single wait ... */
#define STREAM_SECS	300		/* ... but a whole stream (bandwidth, write) */
#define CTL_MAGIC	0x424d4d49u	/* "IMMB" */
#define PROBE_IMM	0x1d1d1d1du
#define DEFAULT_MAXSIZE	(1u << 20)	/* server, without private data */

struct conn_pdata {
	uint32_t magic;
	uint32_t maxsize;
};

enum mode { M_WRITE, M_IMM, M_SEND, M_NUM };
static const char *const mode_name[M_NUM] = { "write", "imm", "send" };
static const char *const lat_test[M_NUM] = {
	"write_poll_lat", "write_imm_lat", "write_send_lat" };
static const char *const bw_test[M_NUM] = {
	"write_plain_bw", "write_imm_bw", "write_send_bw" };

enum ctl_type { CTL_HELLO = 1, CTL_NOIMM, CTL_PHASE, CTL_READY, CTL_DONE, CTL_QUIT };

struct ctl {			/* exactly CTL_SLOT bytes */
	uint32_t magic;
	uint32_t type;
	uint64_t addr;		/* HELLO: the sender's receive area */
	uint64_t len;
	uint32_t rkey;
	uint32_t mode;		/* PHASE */
	uint32_t bw;		/* PHASE: 0 latency, 1 bandwidth */
	uint32_t size;
	uint32_t iters;
	uint32_t warmup;
	uint32_t tag;		/* PHASE, bandwidth/write: last-byte marker */
	uint8_t pad[CTL_SLOT - 52];
};

struct ep {
	struct ru_listener l;	/* server */
	struct ru_ep c;		/* the connection */
	struct ibv_cq *scq, *rcq;	/* c's, for the data path */
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	size_t maxsize, buflen;
	uint8_t *dst;		/* the peer writes here */
	uint8_t *src_a, *src_b;	/* we write from here */
	uint8_t *rbuf;		/* receive slots */
	uint8_t *sbuf;		/* control / 8-byte Send payloads, a ring */
	unsigned int sslot;
	uint64_t raddr;		/* peer's dst */
	uint32_t rkey;
	uint32_t rq_depth;
	uint32_t max_inline, inline_max;
	uint32_t window;
	uint64_t posted, retired, since_signal;
	int wait_secs;		/* get_recv()'s limit */
};

static const char *prog = "imm_bench";

__attribute__((format(printf, 1, 2), noreturn))
static void die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", prog);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

/* deadline helper for busy loops: checks the clock every 4096 calls */
struct spin {
	double end;
	unsigned int n;
};

static void spin_start(struct spin *s, int secs)
{
	s->end = now_us() + secs * 1e6;
	s->n = 0;
}

static int spin_expired(struct spin *s)
{
	return (++s->n & 4095) == 0 && now_us() > s->end;
}

/* ---------------------------------------------------------------- setup */

static void post_recv(struct ep *e, uint64_t slot)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)(e->rbuf + slot * CTL_SLOT),
		.length = CTL_SLOT,
		.lkey = e->mr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(e->qp, &wr, &bad);

	if (rc)
		die("ibv_post_recv: %s", strerror(rc));
}

static void post_all_recvs(struct ep *e)
{
	uint32_t i;

	for (i = 0; i < e->rq_depth; i++)
		post_recv(e, i);
}

/*
 * caps.on_qp: the QP is there (the server has the client's connect
 * request in c->peer): the buffers, their MR, all receives posted.
 */
static int setup_buffers(struct ru_ep *c, void *arg)
{
	struct ep *e = arg;
	size_t i, maxsize;

	e->qp = c->qp;
	e->scq = c->scq;
	e->rcq = c->rcq;
	e->rq_depth = c->cap.max_recv_wr;	/* RQ_WANT, or the device's limit */
	e->window = SQ_DEPTH / 2;
	e->max_inline = c->cap.max_inline_data;
	if (e->inline_max > e->max_inline)
		e->inline_max = e->max_inline;
	if (c->passive) {
		struct conn_pdata pd;

		e->maxsize = DEFAULT_MAXSIZE;
		if (c->peer.len >= sizeof(pd)) {
			memcpy(&pd, c->peer.data, sizeof(pd));
			if (pd.magic == CTL_MAGIC && pd.maxsize >= 8)
				e->maxsize = pd.maxsize;
		}
	}
	maxsize = e->maxsize;
	/* dst, src_a, src_b, receive slots, 16 send slots; page aligned */
	e->buflen = 3 * maxsize + (size_t)e->rq_depth * CTL_SLOT + 16 * CTL_SLOT;
	if (posix_memalign((void **)&e->buf, 4096, e->buflen))
		die("out of memory");
	memset(e->buf, 0, e->buflen);
	e->dst = e->buf;
	e->src_a = e->buf + maxsize;
	e->src_b = e->buf + 2 * maxsize;
	e->rbuf = e->buf + 3 * maxsize;
	e->sbuf = e->rbuf + (size_t)e->rq_depth * CTL_SLOT;
	for (i = 0; i < maxsize; i++)
		e->src_a[i] = e->src_b[i] = (uint8_t)(i * 7 + 3);
	e->mr = ibv_reg_mr(c->pd, e->buf, e->buflen,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	if (!e->mr)
		die("ibv_reg_mr(%zu bytes): %s", e->buflen, strerror(errno));
	post_all_recvs(e);
	return 0;
}

/* The connection's QP: SQ_DEPTH sends, RQ_WANT receives, inline if it can. */
static void bench_caps(struct ru_caps *caps, struct ep *e)
{
	ru_caps_default(caps);
	caps->max_send_wr = SQ_DEPTH;
	caps->max_recv_wr = RQ_WANT;
	caps->max_inline = 64;
	caps->inline_fallback = 1;
	caps->clamp_to_device = 1;
	caps->initiator_depth = 0;	/* no RDMA Reads */
	caps->responder_resources = 0;
	caps->on_qp = setup_buffers;
	caps->on_qp_arg = e;
}

/* ------------------------------------------------------- send accounting */

/* Reap send completions; block: until at least one arrived. */
static void reap_send(struct ep *e, int block)
{
	struct ibv_wc wc[16];
	struct spin sp;
	int n, i;

	spin_start(&sp, WAIT_SECS);
	for (;;) {
		n = ibv_poll_cq(e->scq, 16, wc);
		if (n < 0)
			die("ibv_poll_cq(send): %d", n);
		for (i = 0; i < n; i++) {
			if (wc[i].status != IBV_WC_SUCCESS)
				die("send completion: %s (opcode %d, vendor_err 0x%x)",
				    ibv_wc_status_str(wc[i].status), wc[i].opcode,
				    wc[i].vendor_err);
			e->retired = wc[i].wr_id;
		}
		if (n || !block)
			return;
		if (spin_expired(&sp))
			die("timed out waiting for a send completion");
	}
}

static void drain_send(struct ep *e)
{
	while (e->retired < e->posted)
		reap_send(e, 1);
}

/*
 * Post a chain of n work requests (last = its last one), keeping at most
 * e->window of them outstanding; signals every SIGNAL_EVERY-th and, with
 * force, the last.  Returns 0 or the provider's error (not fatal: the
 * caller decides).
 */
static int post_chain(struct ep *e, struct ibv_send_wr *first,
		      struct ibv_send_wr *last, unsigned int n, int force)
{
	struct ibv_send_wr *bad;
	int rc;

	while (e->posted - e->retired + n > e->window)
		reap_send(e, 1);
	if (force || e->since_signal + n >= SIGNAL_EVERY) {
		last->send_flags |= IBV_SEND_SIGNALED;
		last->wr_id = e->posted + n;
		e->since_signal = 0;
	} else {
		e->since_signal += n;
	}
	rc = ibv_post_send(e->qp, first, &bad);
	if (rc)
		return rc < 0 ? -rc : rc;	/* some providers return -errno */
	e->posted += n;
	return 0;
}

static void send_ctl(struct ep *e, struct ctl *c)
{
	uint8_t *p = e->sbuf + (e->sslot++ % 16) * CTL_SLOT;
	struct ibv_sge sge = { .addr = (uintptr_t)p, .length = CTL_SLOT, .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = IBV_WR_SEND,
	};
	int rc;

	c->magic = CTL_MAGIC;
	memcpy(p, c, CTL_SLOT);
	rc = post_chain(e, &wr, &wr, 1, 1);
	if (rc)
		die("ibv_post_send(control): %s", strerror(rc));
	drain_send(e);	/* the slot ring can be reused */
}

/*
 * Wait for one receive completion, check its status, copy up to CTL_SLOT
 * bytes of payload to out, repost the receive.
 */
static void get_recv(struct ep *e, struct ibv_wc *wc, void *out, const char *what)
{
	struct spin sp;
	int n;

	spin_start(&sp, e->wait_secs ? e->wait_secs : WAIT_SECS);
	for (;;) {
		n = ibv_poll_cq(e->rcq, 1, wc);
		if (n > 0)
			break;
		if (n < 0)
			die("ibv_poll_cq(recv): %d", n);
		if (spin_expired(&sp))
			die("timed out waiting for %s", what);
	}
	if (wc->status != IBV_WC_SUCCESS)
		die("receive completion (waiting for %s): %s (vendor_err 0x%x)", what,
		    ibv_wc_status_str(wc->status), wc->vendor_err);
	if (out && wc->opcode == IBV_WC_RECV)
		memcpy(out, e->rbuf + wc->wr_id * CTL_SLOT,
		       wc->byte_len < CTL_SLOT ? wc->byte_len : CTL_SLOT);
	post_recv(e, wc->wr_id);
}

static void get_ctl(struct ep *e, struct ctl *c, uint32_t type, const char *what)
{
	struct ibv_wc wc;

	memset(c, 0, sizeof(*c));
	get_recv(e, &wc, c, what);
	if (wc.opcode != IBV_WC_RECV || wc.byte_len != CTL_SLOT || c->magic != CTL_MAGIC)
		die("expected a control message (%s), got opcode %d, %u bytes", what,
		    wc.opcode, wc.byte_len);
	if (type && c->type != type)
		die("expected control message %u (%s), got %u", type, what, c->type);
}

/* --------------------------------------------------------------- messages */

/* Post one message of mode m: size bytes from src; seq is its number. */
static int post_msg(struct ep *e, enum mode m, const uint8_t *src, uint32_t size,
		    uint32_t seq, int force)
{
	struct ibv_sge sge = { .addr = (uintptr_t)src, .length = size, .lkey = e->mr->lkey };
	struct ibv_sge sge2;
	struct ibv_send_wr wr, wr2;
	uint64_t *p;

	memset(&wr, 0, sizeof(wr));
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = m == M_IMM ? IBV_WR_RDMA_WRITE_WITH_IMM : IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = e->raddr;
	wr.wr.rdma.rkey = e->rkey;
	if (size <= e->inline_max)
		wr.send_flags = IBV_SEND_INLINE;
	if (m == M_IMM)
		wr.imm_data = htobe32(seq);
	if (m != M_SEND)
		return post_chain(e, &wr, &wr, 1, force);
	/* Write + 8-byte Send carrying seq */
	p = (uint64_t *)(e->sbuf + (e->sslot++ % 16) * CTL_SLOT);
	*p = seq;
	sge2.addr = (uintptr_t)p;
	sge2.length = 8;
	sge2.lkey = e->mr->lkey;
	memset(&wr2, 0, sizeof(wr2));
	wr2.sg_list = &sge2;
	wr2.num_sge = 1;
	wr2.opcode = IBV_WR_SEND;
	if (e->inline_max >= 8)
		wr2.send_flags = IBV_SEND_INLINE;
	wr.next = &wr2;
	return post_chain(e, &wr, &wr2, 2, force);
}

/*
 * Wait for message seq of mode m (size bytes); lastbyte: what the last
 * written byte must be once the notification is in (-1: do not check).
 * secs: how long a plain write may take to show up.
 */
static void wait_msg(struct ep *e, enum mode m, uint32_t size, uint32_t seq, int lastbyte,
		     int secs)
{
	volatile uint8_t *lb = e->dst + size - 1;
	struct ibv_wc wc;
	struct spin sp;
	uint64_t v = 0;

	if (m == M_WRITE) {
		spin_start(&sp, secs);
		while (*lb != (uint8_t)lastbyte)
			if (spin_expired(&sp))
				die("timed out polling for write %u (size %u)", seq, size);
		return;
	}
	get_recv(e, &wc, &v, m == M_IMM ? "a write with immediate" : "a send");
	if (m == M_IMM) {
		if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM || !(wc.wc_flags & IBV_WC_WITH_IMM))
			die("write with immediate %u: completion opcode %d, wc_flags 0x%x",
			    seq, wc.opcode, wc.wc_flags);
		if (be32toh(wc.imm_data) != seq)
			die("write with immediate %u: immediate data %u", seq,
			    be32toh(wc.imm_data));
		if (wc.byte_len != size)
			die("write with immediate %u: byte_len %u, expected %u", seq,
			    wc.byte_len, size);
	} else {
		if (wc.opcode != IBV_WC_RECV || wc.byte_len != 8 || v != seq)
			die("send %u: opcode %d, %u bytes, payload %" PRIu64, seq,
			    wc.opcode, wc.byte_len, v);
	}
	if (lastbyte >= 0 && *lb != (uint8_t)lastbyte)
		die("%s %u: the written data is not in place at the notification "
		    "(last byte 0x%02x, expected 0x%02x)", mode_name[m], seq, *lb, lastbyte);
}

/* ---------------------------------------------------------------- phases */

static void die_post(enum mode m, int rc)
{
	die("ibv_post_send(%s): %s", mode_name[m], strerror(rc));
}

/* Latency ping-pong; the initiator records round trips into rtt. */
static void lat_phase(struct ep *e, enum mode m, uint32_t size, uint32_t iters,
		      uint32_t warmup, int initiator, double *rtt)
{
	uint32_t i, total = warmup + iters;
	double t0 = 0;
	int rc;

	e->window = SQ_DEPTH / 2;
	for (i = 0; i < total; i++) {
		uint8_t tag = (uint8_t)(i % 255 + 1);

		if (!initiator)
			wait_msg(e, m, size, i, tag, WAIT_SECS);
		e->src_a[size - 1] = tag;
		if (initiator)
			t0 = now_us();
		rc = post_msg(e, m, e->src_a, size, i, i == total - 1);
		if (rc)
			die_post(m, rc);
		if (initiator) {
			wait_msg(e, m, size, i, tag, WAIT_SECS);
			if (i >= warmup)
				rtt[i - warmup] = now_us() - t0;
		}
		if ((i & 7) == 7)
			reap_send(e, 0);
	}
	drain_send(e);
}

/* Bandwidth, sender side: returns the sender's own time (to the last send completion). */
static double bw_send(struct ep *e, enum mode m, uint32_t size, uint32_t iters)
{
	double t0 = now_us();
	uint32_t i;
	int rc;

	e->window = BW_WINDOW;
	for (i = 0; i < iters; i++) {
		int last = i == iters - 1;

		rc = post_msg(e, m, last && m == M_WRITE ? e->src_b : e->src_a, size, i, last);
		if (rc)
			die_post(m, rc);
	}
	drain_send(e);
	return now_us() - t0;
}

static void bw_recv(struct ep *e, enum mode m, uint32_t size, uint32_t iters, uint8_t tag)
{
	uint32_t i;

	if (m == M_WRITE) {
		wait_msg(e, m, size, iters - 1, tag, STREAM_SECS);
		return;
	}
	for (i = 0; i < iters; i++)
		wait_msg(e, m, size, i, -1, WAIT_SECS);
}

/* ---------------------------------------------------------------- server */

static int run_server(const char *addr, int port)
{
	static struct ep e = { .inline_max = 64 };
	struct ru_caps caps;
	struct ctl c, r;
	struct ibv_wc wc;

	if (ru_listen(&e.l, addr, (uint16_t)port, 1))
		die("listen on %s:%d: %s", addr, port, ru_errmsg());
	/* the buffer for the client's largest size (its private data) */
	bench_caps(&caps, &e);
	if (ru_accept(&e.l, &e.c, &caps, STREAM_SECS * 1000))
		die("accept on %s:%d: %s", addr, port, ru_errmsg());

	get_ctl(&e, &c, CTL_HELLO, "HELLO");
	e.raddr = c.addr;
	e.rkey = c.rkey;
	if (c.len > e.maxsize)
		die("client wants %" PRIu64 " bytes, server has %zu", c.len, e.maxsize);
	memset(&r, 0, sizeof(r));
	r.type = CTL_HELLO;
	r.addr = (uintptr_t)e.dst;
	r.len = e.maxsize;
	r.rkey = e.mr->rkey;
	send_ctl(&e, &r);

	for (;;) {
		memset(&c, 0, sizeof(c));
		get_recv(&e, &wc, &c, "a control message");
		if (wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
			/* the client's probe: write with immediate works */
			if (be32toh(wc.imm_data) != PROBE_IMM)
				die("probe: immediate data 0x%x", be32toh(wc.imm_data));
			continue;
		}
		if (wc.opcode != IBV_WC_RECV || wc.byte_len != CTL_SLOT || c.magic != CTL_MAGIC)
			die("expected a control message, got opcode %d, %u bytes",
			    wc.opcode, wc.byte_len);
		switch (c.type) {
		case CTL_NOIMM:
			continue;
		case CTL_QUIT:
			ru_ep_disconnect(&e.c);
			return 0;
		case CTL_PHASE:
			break;
		default:
			die("unexpected control message %u", c.type);
		}
		if (c.mode >= M_NUM || c.size == 0 || c.size > e.maxsize)
			die("bad phase: mode %u size %u", c.mode, c.size);
		e.dst[c.size - 1] = 0;
		memset(&r, 0, sizeof(r));
		r.type = CTL_READY;
		send_ctl(&e, &r);
		if (c.bw) {
			bw_recv(&e, c.mode, c.size, c.iters, (uint8_t)c.tag);
			r.type = CTL_DONE;
			send_ctl(&e, &r);
		} else {
			lat_phase(&e, c.mode, c.size, c.iters, c.warmup, 0, NULL);
		}
	}
}

/* ---------------------------------------------------------------- client */

struct point {
	double *rtt;		/* latency samples, us */
	uint32_t n;
	double bytes, msgs, secs, snd_secs;
};

static int parse_sizes(const char *s, uint32_t *v)
{
	char *end;
	int n = 0;

	while (*s) {
		unsigned long x = strtoul(s, &end, 0);

		if (end == s || x == 0 || x > (1u << 30) || n == MAX_SIZES)
			die("bad size list '%s'", s);
		v[n++] = (uint32_t)x;
		s = end;
		if (*s == ',' || *s == ' ')
			s++;
	}
	return n;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double median_of(double *v, uint32_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* order of the modes in round r */
static enum mode mode_at(int r, int k)
{
	return r % 2 ? (enum mode)(M_NUM - 1 - k) : (enum mode)k;
}

/* What the client measures (the command line) and what it found. */
struct client {
	const char *host;
	int port;
	uint32_t *lsz, *bsz;	/* latency and bandwidth sizes */
	int nl, nb;
	uint32_t lat_iters, warmup, bw_min, bw_max;
	uint64_t bw_bytes;
	int rounds;
	int want[M_NUM];
	uint32_t maxsize;	/* the largest message */
	int imm_ok;
	char imm_why[200];
	struct point lat[MAX_SIZES][M_NUM], bw[MAX_SIZES][M_NUM];
};

/* Connect to the server with our buffer size in the private data. */
static void client_connect(struct client *cl, struct ep *e)
{
	struct conn_pdata pdata = { .magic = CTL_MAGIC, .maxsize = cl->maxsize };
	struct ru_caps caps;

	bench_caps(&caps, e);
	caps.private_data = &pdata;
	caps.private_data_len = sizeof(pdata);
	e->maxsize = cl->maxsize;
	/* one attempt: the caller starts the client once the server listens */
	if (ru_client_start(&e->c, NULL, cl->host, (uint16_t)cl->port, &caps,
			    5000) ||
	    ru_client_finish(&e->c, WAIT_SECS * 1000))
		die("connect to %s:%d: %s", cl->host, cl->port, ru_errmsg());
}

/* HELLO: our buffer, and how large a one we need from the server */
static void client_hello(struct client *cl, struct ep *e)
{
	struct ctl c;

	memset(&c, 0, sizeof(c));
	c.type = CTL_HELLO;
	c.addr = (uintptr_t)e->dst;
	c.len = cl->maxsize;
	c.rkey = e->mr->rkey;
	send_ctl(e, &c);
	get_ctl(e, &c, CTL_HELLO, "the server's HELLO");
	e->raddr = c.addr;
	e->rkey = c.rkey;
	if (c.len < cl->maxsize)
		die("the server's buffer holds %" PRIu64 " bytes, need %u", c.len,
		    cl->maxsize);
}

/* Probe: is RDMA Write with Immediate supported by this provider? */
static void probe_imm(struct client *cl, struct ep *e)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->src_a, .length = 8,
			       .lkey = e->mr->lkey };
	struct ibv_send_wr wr = {
		.sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.imm_data = htobe32(PROBE_IMM),
	};
	struct ctl c;
	int rc;

	wr.wr.rdma.remote_addr = e->raddr;
	wr.wr.rdma.rkey = e->rkey;
	e->window = SQ_DEPTH / 2;
	rc = post_chain(e, &wr, &wr, 1, 1);
	if (rc) {
		snprintf(cl->imm_why, sizeof(cl->imm_why),
			 "ibv_post_send(IBV_WR_RDMA_WRITE_WITH_IMM) fails: %s",
			 strerror(rc));
		memset(&c, 0, sizeof(c));
		c.type = CTL_NOIMM;
		send_ctl(e, &c);
	} else {
		drain_send(e);
		cl->imm_ok = 1;
	}
	fprintf(stderr, "%s: RDMA Write with Immediate: %s\n", prog,
		cl->imm_ok ? "supported" : cl->imm_why);
}

/* mode m is measured in this run */
static int client_runs(const struct client *cl, enum mode m)
{
	return cl->want[m] && (m != M_IMM || cl->imm_ok);
}

/* Tell the server what comes next and wait until it is ready. */
static void start_phase(struct ep *e, struct ctl *c)
{
	c->type = CTL_PHASE;
	send_ctl(e, c);
	get_ctl(e, c, CTL_READY, "READY");
}

static void run_latency(struct client *cl, struct ep *e)
{
	struct ctl c;
	int i, k, r;

	for (i = 0; i < cl->nl; i++)
		for (k = 0; k < M_NUM; k++) {
			cl->lat[i][k].rtt = calloc(cl->lat_iters + cl->rounds, sizeof(double));
			if (!cl->lat[i][k].rtt)
				die("out of memory");
		}
	for (r = 0; r < cl->rounds; r++) {
		for (i = 0; i < cl->nl; i++) {
			/* this round's share of the iterations */
			uint32_t n = cl->lat_iters / cl->rounds +
				     (r < (int)(cl->lat_iters % cl->rounds));

			for (k = 0; k < M_NUM; k++) {
				enum mode m = mode_at(r + i, k);
				struct point *p = &cl->lat[i][m];

				if (!client_runs(cl, m) || n == 0)
					continue;
				e->dst[cl->lsz[i] - 1] = 0;
				memset(&c, 0, sizeof(c));
				c.mode = m;
				c.size = cl->lsz[i];
				c.iters = n;
				c.warmup = cl->warmup;
				start_phase(e, &c);
				lat_phase(e, m, cl->lsz[i], n, cl->warmup, 1, p->rtt + p->n);
				p->n += n;
			}
		}
	}
}

/* iterations of a bandwidth point of size bytes, over all rounds */
static uint32_t bw_iters(const struct client *cl, const struct ep *e, uint32_t size)
{
	uint64_t it = cl->bw_bytes / size;

	if (it < cl->bw_min)
		it = cl->bw_min;
	if (it > cl->bw_max)
		it = cl->bw_max;
	if (it > e->rq_depth - 64)
		it = e->rq_depth - 64;
	return (uint32_t)it;
}

static void run_bandwidth(struct client *cl, struct ep *e)
{
	uint8_t tag = 0;
	struct ctl c;
	int i, k, r;

	for (r = 0; r < cl->rounds; r++) {
		for (i = 0; i < cl->nb; i++) {
			uint32_t size = cl->bsz[i], it = bw_iters(cl, e, size);
			uint32_t n = it / cl->rounds + (r < (int)(it % cl->rounds));
			double t0, snd;

			for (k = 0; k < M_NUM; k++) {
				enum mode m = mode_at(r + i, k);
				struct point *p = &cl->bw[i][m];

				if (!client_runs(cl, m) || n == 0)
					continue;
				tag = (uint8_t)(tag % 255 + 1);
				e->src_a[size - 1] = (uint8_t)~tag;
				e->src_b[size - 1] = tag;
				memset(&c, 0, sizeof(c));
				c.mode = m;
				c.bw = 1;
				c.size = size;
				c.iters = n;
				c.tag = tag;
				start_phase(e, &c);
				t0 = now_us();
				snd = bw_send(e, m, size, n);
				e->wait_secs = STREAM_SECS;	/* the receiver may lag */
				get_ctl(e, &c, CTL_DONE, "DONE");
				e->wait_secs = 0;
				p->secs += (now_us() - t0) / 1e6;
				p->snd_secs += snd / 1e6;
				p->bytes += (double)n * size;
				p->msgs += n;
			}
		}
	}
}

/* one latency result line and its distribution; returns the median one-way */
static double report_lat_point(struct point *p, const char *test, uint32_t size)
{
	double sum = 0, med, p99;
	uint32_t j;

	for (j = 0; j < p->n; j++)
		sum += p->rtt[j];
	med = median_of(p->rtt, p->n);	/* sorts */
	j = (uint32_t)(0.99 * p->n + 0.999999);
	p99 = p->rtt[j ? j - 1 : 0];
	printf("result test=%s size=%u iters=%u lat_typical_us=%.2f lat_avg_us=%.2f "
	       "lat_min_us=%.2f lat_p99_us=%.2f\n", test, size, p->n,
	       med / 2, sum / p->n / 2, p->rtt[0] / 2, p99 / 2);
	/* the distribution, for people: scheduling noise makes it bimodal */
	printf("dist test=%s size=%u one-way us: p10=%.1f p25=%.1f p50=%.1f "
	       "p75=%.1f p90=%.1f\n", test, size, p->rtt[p->n / 10] / 2,
	       p->rtt[p->n / 4] / 2, med / 2, p->rtt[p->n * 3 / 4] / 2,
	       p->rtt[p->n * 9 / 10] / 2);
	return med / 2;
}

/* the imm/write and imm/send ratios of one size */
static void report_ratios(const char *what, uint32_t size, const double *v)
{
	if (v[M_IMM] && v[M_WRITE])
		printf("ratio %s size=%u imm/write=%.3f\n", what, size,
		       v[M_IMM] / v[M_WRITE]);
	if (v[M_IMM] && v[M_SEND])
		printf("ratio %s size=%u imm/send=%.3f\n", what, size,
		       v[M_IMM] / v[M_SEND]);
}

static void report(struct client *cl)
{
	int i, k;

	for (i = 0; i < cl->nl; i++) {
		double lm[M_NUM] = { 0 };

		for (k = 0; k < M_NUM; k++) {
			if (!cl->want[k])
				continue;
			if (k == M_IMM && !cl->imm_ok) {
				printf("na test=%s size=%u reason=%s\n", lat_test[k],
				       cl->lsz[i], cl->imm_why);
				continue;
			}
			lm[k] = report_lat_point(&cl->lat[i][k], lat_test[k], cl->lsz[i]);
		}
		report_ratios("lat", cl->lsz[i], lm);
	}
	for (i = 0; i < cl->nb; i++) {
		double bm[M_NUM] = { 0 };

		for (k = 0; k < M_NUM; k++) {
			struct point *p = &cl->bw[i][k];

			if (!cl->want[k])
				continue;
			if (k == M_IMM && !cl->imm_ok) {
				printf("na test=%s size=%u reason=%s\n", bw_test[k],
				       cl->bsz[i], cl->imm_why);
				continue;
			}
			bm[k] = p->bytes / p->secs / 1048576;
			printf("result test=%s size=%u iters=%.0f bw_avg_MiBps=%.3f "
			       "msg_rate_Mpps=%.6f snd_MiBps=%.3f\n", bw_test[k],
			       cl->bsz[i], p->msgs, bm[k], p->msgs / p->secs / 1e6,
			       p->bytes / p->snd_secs / 1048576);
		}
		report_ratios("bw", cl->bsz[i], bm);
	}
	fflush(stdout);
}

static int run_client(struct client *cl, uint32_t inline_max, const char *modes)
{
	static struct ep e;
	struct ctl c;
	int i, k;

	e.inline_max = inline_max;
	for (k = 0; k < M_NUM; k++)
		cl->want[k] = strstr(modes, mode_name[k]) != NULL;
	cl->maxsize = 8;
	for (i = 0; i < cl->nl; i++)
		cl->maxsize = cl->lsz[i] > cl->maxsize ? cl->lsz[i] : cl->maxsize;
	for (i = 0; i < cl->nb; i++)
		cl->maxsize = cl->bsz[i] > cl->maxsize ? cl->bsz[i] : cl->maxsize;

	client_connect(cl, &e);
	client_hello(cl, &e);
	if (cl->want[M_IMM])
		probe_imm(cl, &e);
	if (e.max_inline < inline_max)
		fprintf(stderr, "%s: max_inline_data %u: inline up to %u bytes\n", prog,
			e.max_inline, e.inline_max);
	run_latency(cl, &e);
	run_bandwidth(cl, &e);
	memset(&c, 0, sizeof(c));
	c.type = CTL_QUIT;
	send_ctl(&e, &c);
	report(cl);
	ru_ep_disconnect(&e.c);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s -s [-a ADDR] [-p PORT]\n"
		"       %s -c ADDR [-p PORT] [-l SIZES] [-n ITERS] [-b SIZES] [-B BYTES]\n"
		"          [-m MIN] [-M MAX] [-r ROUNDS] [-w WARMUP] [-I INLINE] [-x MODES]\n"
		"(see the comment at the top of tools/bench/imm_bench.c)\n", prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = NULL, *baddr = "0.0.0.0", *bsizes = "64,65536";
	const char *lsizes = "8,64,1024", *modes = "write,imm,send";
	uint32_t lsz[MAX_SIZES], bsz[MAX_SIZES];
	unsigned long lat_iters = 200, warmup = 8, bw_min = 16, bw_max = 1000;
	unsigned long long bw_bytes = 8ull << 20;
	int server = 0, port = 18515, rounds = 4, o;
	unsigned long inl = 64;
	static struct client cl;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt(argc, argv, "sa:c:p:b:l:n:B:m:M:r:w:I:x:h")) != -1) {
		switch (o) {
		case 's': server = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'a': baddr = optarg; break;
		case 'b': bsizes = optarg; break;
		case 'l': lsizes = optarg; break;
		case 'n': lat_iters = strtoul(optarg, NULL, 0); break;
		case 'B': bw_bytes = strtoull(optarg, NULL, 0); break;
		case 'm': bw_min = strtoul(optarg, NULL, 0); break;
		case 'M': bw_max = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': warmup = strtoul(optarg, NULL, 0); break;
		case 'I': inl = strtoul(optarg, NULL, 0); break;
		case 'x': modes = optarg; break;
		default: usage();
		}
	}
	if (server == !!host || optind != argc)
		usage();
	if (server)
		return run_server(baddr, port);
	cl.host = host;
	cl.port = port;
	cl.lsz = lsz;
	cl.bsz = bsz;
	cl.nl = parse_sizes(lsizes, lsz);
	cl.nb = parse_sizes(bsizes, bsz);
	if (rounds < 1 || rounds > 100 || lat_iters < (unsigned long)rounds || lat_iters > 1000000 ||
	    bw_min < 1 || bw_max < bw_min)
		usage();
	cl.lat_iters = (uint32_t)lat_iters;
	cl.warmup = (uint32_t)warmup;
	cl.bw_bytes = bw_bytes;
	cl.bw_min = (uint32_t)bw_min;
	cl.bw_max = (uint32_t)bw_max;
	cl.rounds = rounds;
	return run_client(&cl, (uint32_t)inl, modes);
}
