// SPDX-License-Identifier: GPL-2.0
/*
 * flush_bench: RDMA Flush and RDMA Atomic Write latency, and the
 * persistent-memory commit pipeline, against the operations they replace,
 * on one rdma_cm connection, side by side (Documentation/performance.md,
 * Documentation/flush.md).  perftest has no Flush or Atomic Write test.
 *
 *   flush_bench -s [-a ADDR] [-p PORT] [-P DEVDAX]                  server
 *   flush_bench -c ADDR [-p PORT] [-n ITERS] [-r ROUNDS] [-w WARMUP]
 *               [-x TESTS]                                          client
 *
 * The server registers a 1 MiB target region (on the devdax device -P, e.g.
 * /dev/dax0.0, when given: then with IBV_ACCESS_FLUSH_PERSISTENT too), tells
 * the client where it is and waits; the client measures, one sample being the
 * time from posting the first work request to the completion of the last
 * (a whole round trip, not halved):
 *   read8_lat        an 8-byte RDMA Read (one round trip)
 *   write8_lat       an 8-byte RDMA Write (its completion; on siw local)
 *   write_read_lat   an 8-byte Write, then an 8-byte Read: the Write is placed
 *   flush_g_lat      a Flush, global visibility, of a 4 KiB range
 *   flush_p_lat      a Flush, persistence, of a 4 KiB range (needs -P)
 *   atomic_write_lat an 8-byte Atomic Write
 *   pipe_g_lat       the seed's commit: Write 4 KiB, Flush, Atomic Write of
 *                    the 8-byte pointer, Flush (global), only the last
 *                    signaled
 *   pipe_p_lat       the same with persistent Flushes (needs -P)
 *   pipe_g_waited_lat, pipe_p_waited_lat
 *                    the same four operations, each signaled and waited for
 *   pipe_emul_lat    what librpma does without native Flush: Write 4 KiB,
 *                    Read 8 bytes, the pointer as an 8-byte Write fenced
 *                    behind that Read, Read 8 bytes; only the last signaled
 * Every test is split into -r rounds (default 4) in which the tests take
 * turns, the order reversed every other round; -n samples per test (default
 * 200) after -w warm-up samples per round (default 4).
 *
 * Checks (exit status 1 on any): every completion's status and opcode; after
 * each pipeline round the client reads the record and the pointer back and
 * compares them with what it wrote last; at the end the server compares its
 * own memory (the target, a devdax mapping with -P) with the client's last
 * record and pointer.
 *
 * Operations the provider or device refuses (at QP creation, at post time,
 * or not reported in ibv_query_device_ex: upstream siw has neither) are
 * reported "na test=T size=S reason=...", the others still run; without -P
 * on the server the persistent tests are n/a.  Output (client, stdout):
 *   result test=T size=S iters=N lat_typical_us=.. lat_avg_us=.. lat_min_us=..
 *          lat_p99_us=..
 *   na test=T size=S reason=...
 *   ratio lat a/b=X   (medians)
 * size is the bytes the test moves (8, 4096; pipelines 4104).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "rdma_util.h"

/*
 * ibv_query_device_ex()'s device_cap_flags_ex bits for Flush and Atomic
 * Write: IB_UVERBS_DEVICE_FLUSH_GLOBAL/_PERSISTENT/_ATOMIC_WRITE of the
 * kernel's uapi <rdma/ib_user_verbs.h>, which rdma-core does not install
 * (and Debian 12's linux-libc-dev predates).
 */
#define DEV_FLUSH_GLOBAL	(1ULL << 38)
#define DEV_FLUSH_PERSISTENT	(1ULL << 39)
#define DEV_ATOMIC_WRITE	(1ULL << 40)

#define REGION		(1u << 20)	/* the target region */
#define REC_LEN		4096		/* the record of a pipeline */
#define PTR_OFF		REC_LEN		/* the 8-byte pointer after it */
#define CTL_LEN		256
#define CTL_MAGIC	0x464c5342u	/* "FLSB" */
#define WAIT_MS		30000
#define DEPTH		16		/* ORD and IRD asked for */

enum ctl_type { CTL_HELLO = 1, CTL_QUIT };

struct ctl {
	uint32_t magic;
	uint32_t type;
	uint64_t addr;		/* HELLO: the region */
	uint64_t len;
	uint32_t rkey;
	uint32_t flags;		/* HELLO: F_* */
	uint64_t seq;		/* QUIT: the last pipeline's sequence number */
	uint32_t pipes;		/* QUIT: pipelines run (0: nothing to check) */
	char why[CTL_LEN - 44];	/* HELLO: why a flag is missing */
};

#define F_GLOBAL	1	/* the region may be flushed (global) */
#define F_PERSIST	2	/* ... to persistence */

enum test {
	T_READ8, T_WRITE8, T_WRITE_READ, T_FLUSH_G, T_FLUSH_P, T_AWRITE,
	T_PIPE_G, T_PIPE_P, T_PIPE_G_W, T_PIPE_P_W, T_PIPE_EMUL, T_NUM
};

static const struct {
	const char *name;
	uint32_t size;
	unsigned int need;	/* N_* */
} tests[T_NUM] = {
	[T_READ8] = { "read8_lat", 8, 0 },
	[T_WRITE8] = { "write8_lat", 8, 0 },
	[T_WRITE_READ] = { "write_read_lat", 8, 0 },
	[T_FLUSH_G] = { "flush_g_lat", REC_LEN, 1 },
	[T_FLUSH_P] = { "flush_p_lat", REC_LEN, 1 | 4 },
	[T_AWRITE] = { "atomic_write_lat", 8, 2 },
	[T_PIPE_G] = { "pipe_g_lat", REC_LEN + 8, 1 | 2 },
	[T_PIPE_P] = { "pipe_p_lat", REC_LEN + 8, 1 | 2 | 4 },
	[T_PIPE_G_W] = { "pipe_g_waited_lat", REC_LEN + 8, 1 | 2 },
	[T_PIPE_P_W] = { "pipe_p_waited_lat", REC_LEN + 8, 1 | 2 | 4 },
	[T_PIPE_EMUL] = { "pipe_emul_lat", REC_LEN + 8, 0 },
};
#define N_FLUSH		1
#define N_AWRITE	2
#define N_PERSIST	4

static const char *prog = "flush_bench";

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

struct ep {
	struct ru_listener l;
	struct ru_ep c;
	struct ibv_mr *mr;	/* region (server) or local buffers (client) */
	struct ibv_mr *cmr;	/* control messages */
	uint8_t *buf;
	size_t buflen;
	struct ctl *rx, *tx;	/* 4 receive slots, 1 send slot */
	const char *pmem;	/* server: devdax path */
	uint32_t flags;		/* server: F_* granted */
	char why[CTL_LEN];
	/* client */
	uint64_t raddr;
	uint32_t rkey;
	uint64_t wr_seq;
};

static void post_recv(struct ep *e, int slot)
{
	struct ibv_sge sge = { .addr = (uintptr_t)&e->rx[slot], .length = sizeof(struct ctl),
			       .lkey = e->cmr->lkey };
	struct ibv_recv_wr wr = { .wr_id = (uint64_t)slot, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int rc = ibv_post_recv(e->c.qp, &wr, &bad);

	if (rc)
		die("ibv_post_recv: %s", strerror(rc));
}

static uint64_t dev_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_device_ex(ctx, NULL, &a))
		return 0;
	return a.device_cap_flags_ex;
}

/* the server's region: devdax mapping or anonymous memory */
static uint8_t *region_alloc(struct ep *e)
{
	void *p;
	int fd;

	if (!e->pmem) {
		if (posix_memalign(&p, 4096, REGION))
			die("out of memory");
		memset(p, 0, REGION);
		return p;
	}
	fd = open(e->pmem, O_RDWR);
	if (fd < 0)
		die("open %s: %s", e->pmem, strerror(errno));
	/* devdax: 2 MiB alignment; map 2 MiB, use the first REGION bytes */
	p = mmap(NULL, 2u << 20, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED)
		die("mmap %s: %s", e->pmem, strerror(errno));
	close(fd);
	memset(p, 0, REGION);
	return p;
}

/* caps.on_qp, server: the region, its MR, the control slots */
static int server_setup(struct ru_ep *c, void *arg)
{
	struct ep *e = arg;
	uint64_t caps = dev_caps(c->id->verbs);
	int base = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		   IBV_ACCESS_REMOTE_READ;
	int acc = base, i;

	e->buf = region_alloc(e);
	e->buflen = REGION;
	e->why[0] = 0;
	if (caps & DEV_FLUSH_GLOBAL)
		acc |= IBV_ACCESS_FLUSH_GLOBAL;
	else
		snprintf(e->why, sizeof(e->why),
			 "device does not report IB_UVERBS_DEVICE_FLUSH_GLOBAL");
	if (e->pmem && (caps & DEV_FLUSH_PERSISTENT))
		acc |= IBV_ACCESS_FLUSH_PERSISTENT;
	else if (!e->why[0])
		snprintf(e->why, sizeof(e->why), "%s",
			 e->pmem ? "device does not report IB_UVERBS_DEVICE_FLUSH_PERSISTENT" :
				   "no persistent memory on the server (no -P)");
	e->mr = ibv_reg_mr(c->pd, e->buf, e->buflen, acc);
	if (!e->mr && acc != base) {
		snprintf(e->why, sizeof(e->why),
			 "ibv_reg_mr with the flush access flags 0x%x: %s", acc, strerror(errno));
		acc = base;
		e->mr = ibv_reg_mr(c->pd, e->buf, e->buflen, acc);
	}
	if (!e->mr)
		die("ibv_reg_mr(region): %s", strerror(errno));
	e->flags = (acc & IBV_ACCESS_FLUSH_GLOBAL ? F_GLOBAL : 0) |
		   (acc & IBV_ACCESS_FLUSH_PERSISTENT ? F_PERSIST : 0);
	if (posix_memalign((void **)&e->rx, 64, 5 * sizeof(struct ctl)))
		die("out of memory");
	e->tx = e->rx + 4;
	e->cmr = ibv_reg_mr(c->pd, e->rx, 5 * sizeof(struct ctl), IBV_ACCESS_LOCAL_WRITE);
	if (!e->cmr)
		die("ibv_reg_mr(control): %s", strerror(errno));
	for (i = 0; i < 4; i++)
		post_recv(e, i);
	return 0;
}

/* caps.on_qp, client: record, pointer and read-back buffers, control slots */
static int client_setup(struct ru_ep *c, void *arg)
{
	struct ep *e = arg;
	int i;

	e->buflen = 4 * REC_LEN;
	if (posix_memalign((void **)&e->buf, 4096, e->buflen))
		die("out of memory");
	memset(e->buf, 0, e->buflen);
	e->mr = ibv_reg_mr(c->pd, e->buf, e->buflen, IBV_ACCESS_LOCAL_WRITE);
	if (!e->mr)
		die("ibv_reg_mr(client): %s", strerror(errno));
	if (posix_memalign((void **)&e->rx, 64, 5 * sizeof(struct ctl)))
		die("out of memory");
	e->tx = e->rx + 4;
	e->cmr = ibv_reg_mr(c->pd, e->rx, 5 * sizeof(struct ctl), IBV_ACCESS_LOCAL_WRITE);
	if (!e->cmr)
		die("ibv_reg_mr(control): %s", strerror(errno));
	for (i = 0; i < 4; i++)
		post_recv(e, i);
	return 0;
}

static void caps_for(struct ru_caps *caps, struct ep *e, int server, uint64_t ops)
{
	ru_caps_default(caps);
	caps->max_send_wr = 64;
	caps->max_recv_wr = 8;
	caps->initiator_depth = DEPTH;
	caps->responder_resources = DEPTH;
	caps->clamp_to_device = 1;
	caps->send_ops = ops;
	caps->on_qp = server ? server_setup : client_setup;
	caps->on_qp_arg = e;
}

/* one completion of the send CQ (all our sends are waited for in order) */
static void wait_send(struct ep *e, uint64_t wr_id, enum ibv_wc_opcode op, const char *what)
{
	uint64_t end = ru_now_ms() + WAIT_MS;
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = ibv_poll_cq(e->c.scq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq(send): %d", n);
		if (n)
			break;
		if (ru_now_ms() > end)
			die("timed out waiting for the completion of %s", what);
	}
	if (wc.status != IBV_WC_SUCCESS)
		die("%s: completion status %s (vendor_err 0x%x)", what,
		    ibv_wc_status_str(wc.status), wc.vendor_err);
	if (wc.wr_id != wr_id || wc.opcode != op)
		die("%s: completion wr_id %" PRIu64 " opcode %d, expected %" PRIu64 " opcode %d",
		    what, wc.wr_id, wc.opcode, wr_id, op);
}

/*
 * Wait for a control message, polling every nap_us: the client's waits are
 * short; the server, waiting for the end while the client measures, naps
 * long, so that its polling does not take the CPU the responder needs.
 */
static void get_ctl(struct ep *e, struct ctl *out, uint32_t type, int wait_ms,
		    unsigned int nap_us)
{
	uint64_t end = ru_now_ms() + (uint64_t)wait_ms;
	struct ibv_wc wc;
	int n;

	for (;;) {
		n = ibv_poll_cq(e->c.rcq, 1, &wc);
		if (n < 0)
			die("ibv_poll_cq(recv): %d", n);
		if (n)
			break;
		if (ru_now_ms() > end)
			die("timed out waiting for control message %u", type);
		usleep(nap_us);
	}
	if (wc.status != IBV_WC_SUCCESS || wc.byte_len != sizeof(struct ctl))
		die("control receive: %s, %u bytes", ibv_wc_status_str(wc.status), wc.byte_len);
	*out = e->rx[wc.wr_id];
	post_recv(e, (int)wc.wr_id);
	if (out->magic != CTL_MAGIC || out->type != type)
		die("expected control message %u, got %u", type, out->type);
}

/* a control Send through plain ibv_post_send (works on every provider) */
static void send_ctl(struct ep *e, const struct ctl *c)
{
	struct ibv_sge sge = { .addr = (uintptr_t)e->tx, .length = sizeof(struct ctl),
			       .lkey = e->cmr->lkey };
	struct ibv_send_wr wr = { .wr_id = ++e->wr_seq, .sg_list = &sge, .num_sge = 1,
				  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_send_wr *bad;
	int rc;

	*e->tx = *c;
	e->tx->magic = CTL_MAGIC;
	rc = ibv_post_send(e->c.qp, &wr, &bad);
	if (rc)
		die("ibv_post_send(control): %s", strerror(rc));
	wait_send(e, wr.wr_id, IBV_WC_SEND, "a control Send");
}

/* ---------------------------------------------------------------- server */

static int run_server(const char *addr, int port, const char *pmem)
{
	static struct ep e;
	struct ru_caps caps;
	struct ctl c;
	uint64_t ptr;
	uint32_t i;

	e.pmem = pmem;
	if (ru_listen(&e.l, addr, (uint16_t)port, 1))
		die("listen on %s:%d: %s", addr, port, ru_errmsg());
	caps_for(&caps, &e, 1, 0);
	if (ru_accept(&e.l, &e.c, &caps, 300 * 1000))
		die("accept on %s:%d: %s", addr, port, ru_errmsg());
	memset(&c, 0, sizeof(c));
	c.type = CTL_HELLO;
	c.addr = (uintptr_t)e.buf;
	c.len = e.buflen;
	c.rkey = e.mr->rkey;
	c.flags = e.flags;
	snprintf(c.why, sizeof(c.why), "%.200s", e.why);
	send_ctl(&e, &c);
	fprintf(stderr, "%s: region %s, flags 0x%x%s%s\n", prog, pmem ? pmem : "anonymous",
		e.flags, e.why[0] ? ": " : "", e.why);
	get_ctl(&e, &c, CTL_QUIT, 3600 * 1000, 50000);
	/* the target's own view of the last commit */
	if (c.pipes) {
		for (i = 0; i < REC_LEN; i++)
			if (e.buf[i] != (uint8_t)(c.seq + i))
				die("target check: record byte %u is 0x%02x, expected 0x%02x "
				    "(sequence %" PRIu64 ")", i, e.buf[i], (uint8_t)(c.seq + i), c.seq);
		memcpy(&ptr, e.buf + PTR_OFF, 8);
		if (ptr != c.seq)
			die("target check: pointer %" PRIu64 ", expected %" PRIu64, ptr, c.seq);
		printf("target check: record and pointer of commit %" PRIu64 " in place\n", c.seq);
	}
	ru_ep_disconnect(&e.c);
	return 0;
}

/* ---------------------------------------------------------------- client */

struct client {
	const char *host;
	int port;
	uint32_t iters, warmup;
	int rounds;
	int want[T_NUM];
	char na[T_NUM][CTL_LEN];
	double *s[T_NUM];
	uint32_t n[T_NUM];
	uint64_t seq;		/* last pipeline commit */
	uint32_t pipes;
};

/* buffers of the client: record at 0, pointer at REC_LEN, read-back at 2*REC_LEN */
#define L_REC(e)	((e)->buf)
#define L_PTR(e)	((e)->buf + REC_LEN)
#define L_BACK(e)	((e)->buf + 2 * REC_LEN)

static void wr_begin(struct ep *e, int signaled)
{
	struct ibv_qp_ex *q = e->c.qpx;

	q->wr_id = ++e->wr_seq;
	q->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
}

static void op_write(struct ep *e, uint64_t off, void *src, uint32_t len, int sig, int fence)
{
	wr_begin(e, sig);
	if (fence)
		e->c.qpx->wr_flags |= IBV_SEND_FENCE;
	ibv_wr_rdma_write(e->c.qpx, e->rkey, e->raddr + off);
	ibv_wr_set_sge(e->c.qpx, e->mr->lkey, (uintptr_t)src, len);
}

static void op_read(struct ep *e, uint64_t off, void *dst, uint32_t len, int sig)
{
	wr_begin(e, sig);
	ibv_wr_rdma_read(e->c.qpx, e->rkey, e->raddr + off);
	ibv_wr_set_sge(e->c.qpx, e->mr->lkey, (uintptr_t)dst, len);
}

static void op_flush(struct ep *e, uint64_t off, uint32_t len, int persist, int sig)
{
	wr_begin(e, sig);
	ibv_wr_flush(e->c.qpx, e->rkey, e->raddr + off, len,
		     persist ? IBV_FLUSH_PERSISTENT : IBV_FLUSH_GLOBAL, IBV_FLUSH_RANGE);
}

static void op_awrite(struct ep *e, uint64_t off, const void *val, int sig)
{
	wr_begin(e, sig);
	ibv_wr_atomic_write(e->c.qpx, e->rkey, e->raddr + off, val);
}

/* post what was built since ibv_wr_start(); returns the provider's error */
static int post(struct ep *e)
{
	return ibv_wr_complete(e->c.qpx);
}

/* the commit of sequence number seq: the record and the pointer it writes */
static void fill_commit(struct ep *e, uint64_t seq)
{
	uint32_t i;

	for (i = 0; i < REC_LEN; i++)
		L_REC(e)[i] = (uint8_t)(seq + i);
	memcpy(L_PTR(e), &seq, 8);
}

/* read the record and pointer back and compare with commit seq */
static void check_commit(struct ep *e, uint64_t seq, const char *test)
{
	uint64_t ptr;

	memset(L_BACK(e), 0, REC_LEN + 8);
	ibv_wr_start(e->c.qpx);
	op_read(e, 0, L_BACK(e), REC_LEN + 8, 1);
	if (post(e))
		die("%s: read-back: post failed", test);
	wait_send(e, e->wr_seq, IBV_WC_RDMA_READ, "the read-back");
	memcpy(&ptr, L_BACK(e) + REC_LEN, 8);
	if (memcmp(L_BACK(e), L_REC(e), REC_LEN) || ptr != seq)
		die("%s: the target does not hold commit %" PRIu64 " (pointer %" PRIu64 ")",
		    test, seq, ptr);
}

/*
 * One sample of test t: post, wait for the last completion; returns the
 * time in us, or -1 with the reason in cl->na[t] when the provider refused
 * the post (only the first sample may be refused).
 */
static double sample(struct client *cl, struct ep *e, enum test t)
{
	uint64_t seq = cl->seq + 1, zero = 0;
	enum ibv_wc_opcode last = IBV_WC_RDMA_READ;
	int persist = t == T_FLUSH_P || t == T_PIPE_P || t == T_PIPE_P_W;
	int rc = 0, k;
	double t0;

	if (t >= T_PIPE_G)
		fill_commit(e, seq);
	t0 = now_us();
	switch (t) {
	case T_READ8:
		ibv_wr_start(e->c.qpx);
		op_read(e, PTR_OFF + 64, L_BACK(e), 8, 1);
		rc = post(e);
		break;
	case T_WRITE8:
		ibv_wr_start(e->c.qpx);
		op_write(e, PTR_OFF + 64, L_BACK(e) + REC_LEN + 256, 8, 1, 0);
		last = IBV_WC_RDMA_WRITE;
		rc = post(e);
		break;
	case T_WRITE_READ:
		ibv_wr_start(e->c.qpx);
		op_write(e, PTR_OFF + 64, L_PTR(e), 8, 0, 0);
		op_read(e, PTR_OFF + 64, L_BACK(e), 8, 1);
		rc = post(e);
		break;
	case T_FLUSH_G:
	case T_FLUSH_P:
		ibv_wr_start(e->c.qpx);
		op_flush(e, 0, REC_LEN, persist, 1);
		last = IBV_WC_FLUSH;
		rc = post(e);
		break;
	case T_AWRITE:
		ibv_wr_start(e->c.qpx);
		op_awrite(e, PTR_OFF + 128, &zero, 1);
		last = IBV_WC_ATOMIC_WRITE;
		rc = post(e);
		break;
	case T_PIPE_G:
	case T_PIPE_P:
		ibv_wr_start(e->c.qpx);
		op_write(e, 0, L_REC(e), REC_LEN, 0, 0);
		op_flush(e, 0, REC_LEN, persist, 0);
		op_awrite(e, PTR_OFF, L_PTR(e), 0);
		op_flush(e, PTR_OFF, 8, persist, 1);
		last = IBV_WC_FLUSH;
		rc = post(e);
		break;
	case T_PIPE_G_W:
	case T_PIPE_P_W:
		for (k = 0; k < 4 && !rc; k++) {
			static const enum ibv_wc_opcode op[4] = {
				IBV_WC_RDMA_WRITE, IBV_WC_FLUSH, IBV_WC_ATOMIC_WRITE, IBV_WC_FLUSH };

			ibv_wr_start(e->c.qpx);
			if (k == 0)
				op_write(e, 0, L_REC(e), REC_LEN, 1, 0);
			else if (k == 1)
				op_flush(e, 0, REC_LEN, persist, 1);
			else if (k == 2)
				op_awrite(e, PTR_OFF, L_PTR(e), 1);
			else
				op_flush(e, PTR_OFF, 8, persist, 1);
			rc = post(e);
			if (!rc)
				wait_send(e, e->wr_seq, op[k], tests[t].name);
		}
		if (rc)
			break;
		cl->seq = seq;
		return now_us() - t0;
	case T_PIPE_EMUL:
		ibv_wr_start(e->c.qpx);
		op_write(e, 0, L_REC(e), REC_LEN, 0, 0);
		op_read(e, 0, L_BACK(e) + REC_LEN + 64, 8, 0);
		op_write(e, PTR_OFF, L_PTR(e), 8, 0, 1);
		op_read(e, PTR_OFF, L_BACK(e) + REC_LEN + 128, 8, 1);
		rc = post(e);
		break;
	default:
		die("test %d", t);
	}
	if (rc) {
		snprintf(cl->na[t], sizeof(cl->na[t]), "ibv_wr_complete() fails: %s",
			 strerror(rc));
		return -1;
	}
	wait_send(e, e->wr_seq, last, tests[t].name);
	if (t >= T_PIPE_G)
		cl->seq = seq;
	return now_us() - t0;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static double report_point(struct client *cl, enum test t)
{
	double *v = cl->s[t], sum = 0, med;
	uint32_t n = cl->n[t], j;

	if (!cl->want[t])
		return 0;
	if (cl->na[t][0]) {
		printf("na test=%s size=%u reason=%s\n", tests[t].name, tests[t].size, cl->na[t]);
		return 0;
	}
	if (!n)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	for (j = 0; j < n; j++)
		sum += v[j];
	med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	j = (uint32_t)(0.99 * n + 0.999999);
	printf("result test=%s size=%u iters=%u lat_typical_us=%.2f lat_avg_us=%.2f "
	       "lat_min_us=%.2f lat_p99_us=%.2f\n", tests[t].name, tests[t].size, n, med,
	       sum / n, v[0], v[j ? j - 1 : 0]);
	printf("dist test=%s size=%u us: p10=%.1f p25=%.1f p50=%.1f p75=%.1f p90=%.1f\n",
	       tests[t].name, tests[t].size, v[n / 10], v[n / 4], med, v[n * 3 / 4],
	       v[n * 9 / 10]);
	return med;
}

static void ratio(const double *m, enum test a, enum test b)
{
	if (m[a] > 0 && m[b] > 0)
		printf("ratio lat %s/%s=%.3f\n", tests[a].name, tests[b].name, m[a] / m[b]);
}

static void run_client(struct client *cl)
{
	static struct ep e;
	uint64_t ops = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_READ |
		       IBV_QP_EX_WITH_SEND;
	uint64_t fops = IBV_QP_EX_WITH_FLUSH | IBV_QP_EX_WITH_ATOMIC_WRITE;
	char qp_why[CTL_LEN] = "";
	struct ru_caps caps;
	struct ctl c;
	double m[T_NUM] = { 0 };
	int r, k, i;
	enum test t;

	/* a provider may refuse the new send ops at QP creation */
	caps_for(&caps, &e, 0, ops | fops);
	if (ru_client_start(&e.c, NULL, cl->host, (uint16_t)cl->port, &caps, 5000)) {
		snprintf(qp_why, sizeof(qp_why), "QP with IBV_QP_EX_WITH_FLUSH|ATOMIC_WRITE: %s",
			 ru_errmsg());
		fprintf(stderr, "%s: %s; again without them\n", prog, qp_why);
		ru_ep_close(&e.c);
		memset(&e, 0, sizeof(e));
		caps_for(&caps, &e, 0, ops);
		if (ru_client_start(&e.c, NULL, cl->host, (uint16_t)cl->port, &caps, 5000))
			die("connect to %s:%d: %s", cl->host, cl->port, ru_errmsg());
	}
	if (ru_client_finish(&e.c, WAIT_MS))
		die("connect to %s:%d: %s", cl->host, cl->port, ru_errmsg());
	get_ctl(&e, &c, CTL_HELLO, WAIT_MS, 100);
	e.raddr = c.addr;
	e.rkey = c.rkey;
	if (c.len < REGION)
		die("the server's region has %" PRIu64 " bytes", c.len);
	c.why[sizeof(c.why) - 1] = 0;

	{
		uint64_t dc = dev_caps(e.c.id->verbs);
		const char *dev_why = !(dc & DEV_FLUSH_GLOBAL) ?
			"device does not report IB_UVERBS_DEVICE_FLUSH_GLOBAL" : NULL;
		const char *aw_why = !(dc & DEV_ATOMIC_WRITE) ?
			"device does not report IB_UVERBS_DEVICE_ATOMIC_WRITE" : NULL;

		for (t = 0; t < T_NUM; t++) {
			unsigned int need = tests[t].need;

			if (!cl->want[t])
				continue;
			if (need && qp_why[0])
				snprintf(cl->na[t], CTL_LEN, "%s", qp_why);
			else if ((need & N_FLUSH) && dev_why)
				snprintf(cl->na[t], CTL_LEN, "%s", dev_why);
			else if ((need & N_AWRITE) && aw_why)
				snprintf(cl->na[t], CTL_LEN, "%s", aw_why);
			else if ((need & N_FLUSH) && !(c.flags & F_GLOBAL))
				snprintf(cl->na[t], CTL_LEN, "server: %.200s", c.why);
			else if ((need & N_PERSIST) && !(c.flags & F_PERSIST))
				snprintf(cl->na[t], CTL_LEN, "server: %.200s", c.why);
			cl->s[t] = calloc(cl->iters + cl->rounds, sizeof(double));
			if (!cl->s[t])
				die("out of memory");
		}
	}

	for (r = 0; r < cl->rounds; r++) {
		uint32_t n = cl->iters / cl->rounds + (r < (int)(cl->iters % cl->rounds));

		for (k = 0; k < T_NUM; k++) {
			double us;

			t = r % 2 ? (enum test)(T_NUM - 1 - k) : (enum test)k;
			if (!cl->want[t] || cl->na[t][0])
				continue;
			for (i = 0; i < (int)(cl->warmup + n); i++) {
				us = sample(cl, &e, t);
				if (us < 0) {
					if (i)
						die("%s: %s after %d samples", tests[t].name,
						    cl->na[t], i);
					break;
				}
				if (i >= (int)cl->warmup)
					cl->s[t][cl->n[t]++] = us;
			}
			if (t >= T_PIPE_G && !cl->na[t][0]) {
				check_commit(&e, cl->seq, tests[t].name);
				cl->pipes++;
			}
		}
	}
	for (t = 0; t < T_NUM; t++)
		m[t] = report_point(cl, t);
	ratio(m, T_PIPE_G, T_READ8);
	ratio(m, T_PIPE_P, T_READ8);
	ratio(m, T_PIPE_G_W, T_PIPE_G);
	ratio(m, T_PIPE_P_W, T_PIPE_P);
	ratio(m, T_PIPE_EMUL, T_PIPE_P);
	ratio(m, T_PIPE_EMUL, T_PIPE_G);
	ratio(m, T_FLUSH_G, T_READ8);
	ratio(m, T_FLUSH_P, T_READ8);
	ratio(m, T_AWRITE, T_WRITE8);
	ratio(m, T_AWRITE, T_WRITE_READ);
	fflush(stdout);

	memset(&c, 0, sizeof(c));
	c.type = CTL_QUIT;
	c.seq = cl->seq;
	c.pipes = cl->pipes;
	send_ctl(&e, &c);
	/* the server checks its memory and disconnects */
	ru_ep_disconnect(&e.c);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: %s -s [-a ADDR] [-p PORT] [-P DEVDAX]\n"
		"       %s -c ADDR [-p PORT] [-n ITERS] [-r ROUNDS] [-w WARMUP] [-x TESTS]\n"
		"(see the comment at the top of tools/bench/flush_bench.c)\n", prog, prog);
	exit(2);
}

int main(int argc, char **argv)
{
	const char *host = NULL, *baddr = "0.0.0.0", *pmem = NULL, *only = NULL;
	unsigned long iters = 200, warmup = 4;
	int server = 0, port = 18516, rounds = 4, o;
	static struct client cl;
	int t;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((o = getopt(argc, argv, "sa:c:p:P:n:r:w:x:h")) != -1) {
		switch (o) {
		case 's': server = 1; break;
		case 'c': host = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'a': baddr = optarg; break;
		case 'P': pmem = optarg; break;
		case 'n': iters = strtoul(optarg, NULL, 0); break;
		case 'r': rounds = atoi(optarg); break;
		case 'w': warmup = strtoul(optarg, NULL, 0); break;
		case 'x': only = optarg; break;
		default: usage();
		}
	}
	if (server == !!host || optind != argc)
		usage();
	if (server)
		return run_server(baddr, port, pmem);
	if (rounds < 1 || rounds > 100 || iters < (unsigned long)rounds || iters > 1000000 ||
	    warmup > 1000)
		usage();
	cl.host = host;
	cl.port = port;
	cl.iters = (uint32_t)iters;
	cl.warmup = (uint32_t)warmup;
	cl.rounds = rounds;
	for (t = 0; t < T_NUM; t++)
		cl.want[t] = !only || strstr(only, tests[t].name) != NULL;
	run_client(&cl);
	return 0;
}
