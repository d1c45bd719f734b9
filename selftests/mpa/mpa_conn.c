// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa_conn - an rdma_cm client/server that reports what the MPA (RFC 6581)
 * negotiation gave the ULP, for the suites that set the siw module
 * parameters (MPA revision, peer-to-peer, RTR types, IRD/ORD mode).
 *
 *   mpa_conn server --addr A --port P [--ird N] [--ord N] [--pdata STR]
 *            [--count N] [--hold-ms MS] [--hold-file PATH] [--hold-peer]
 *            [--no-traffic] [--reject] [--timeout-ms MS] [--sig-all]
 *   mpa_conn client --addr A --port P [--src A] [--ird N] [--ord N]
 *            [--pdata STR] [--hold-ms MS] [--hold-file PATH] [--hold-peer]
 *            [--no-traffic] [--timeout-ms MS] [--sig-all]
 *
 * After ESTABLISHED (and the traffic) the connection is held: until PATH
 * exists (--hold-file, at most --timeout-ms: a test takes its snapshot of
 * the live QP, then creates PATH), then --hold-ms; with --hold-peer the
 * hold ends as soon as the peer disconnects (the side that holds for a
 * snapshot decides when the connection ends, whatever the load).
 *
 * --ird/--ord (0..255, default 4) go unclamped into the responder_resources
 * (IRD) and initiator_depth (ORD) of rdma_connect()/rdma_accept(); 255 is
 * librdmacm's "device maximum". Port 0 lets the server pick one.
 *
 * stdout, one line per event, key=value, flushed at once (pdata is the
 * rest of the line: printable ASCII, other bytes as \xHH, "-" when empty):
 *   ROLE event=NAME status=S initiator_depth=X responder_resources=Y
 *        pdata_len=N pdata=TEXT          (NAME: rdma_event_str() without
 *                                         RDMA_CM_EVENT_; S: event status)
 *   ROLE event=NONE timeout              (no event within --timeout-ms)
 *   server listen addr=A port=P | server listen rc=-E reason=...
 *   server conn I                        (I = 0 .. count-1)
 *   server accept rc=R | server reject rc=R
 *   client resolve_addr|resolve_route|connect rc=-E
 *   ROLE disconnect rc=-E | ROLE get_cm_event rc=-E   (rare failures)
 *   ROLE dev=NAME                        (after ESTABLISHED: the device
 *   ROLE qpn=N                            and QP number, in that order)
 *   ROLE unexpected completion wr_id=.. opcode=NAME status=N byte_len=..
 *        cq=send|recv expected_wr_id=N|-     (status: enum ibv_wc_status)
 *   ROLE late completion ...             (same tokens: a final Send whose
 *        delivery the peer proved completed in error; tolerated, see the
 *        known siw behaviour in Documentation/testing.md)
 *   client traffic ok send=1 read=R|skip write=1 | server traffic ok
 *   ROLE traffic failed: REASON | ROLE setup failed: REASON
 *
 * Traffic (unless --no-traffic): the server exposes a 64 KiB MR in its
 * accept private data ("[PDATA ]rkey=0x.. addr=0x.."); the client sends a
 * 64-byte hello, the server answers 64 bytes, the client issues
 * min(ORD, 8) concurrent 4 KiB RDMA Reads (ORD: responder_resources of its
 * ESTABLISHED event, where iWARP reports the local ORD), one 4 KiB RDMA
 * Write to offset 32 KiB and a Send "done"; the server checks the written
 * bytes and answers "pass" or "fail". Every completion must be exactly the
 * next work request this program posted on that queue, so a completion
 * leaked by connection setup (an RTR) fails the traffic.
 *
 * Exit: 0 every connection established here (and traffic ok), or every
 * request rejected with --reject; 1 a connection did not establish; 2
 * usage; 3 timeout waiting for a CM event; 4 traffic failure. With several
 * connections, the first failure's code.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_util.h"

#define MR_LEN		(64 * 1024)
#define MSG_LEN		64
#define SLOT		256		/* receive slot: larger than any message */
#define NRECV		4
#define TX_OFF		(NRECV * SLOT)	/* send staging in the msg buffer */
#define CHUNK		4096
#define MAX_READS	8
#define WRITE_OFF	(32 * 1024)	/* Write target in the server's MR */
#define WSRC_OFF	(48 * 1024)	/* Write source in the client's buffer */
#define CQ_DEPTH	64
#define QP_WR		32
#define PDATA_MAX	255		/* private_data_len is a u8 */
#define KEYS_LEN	39		/* strlen("rkey=0x%08x addr=0x%016llx") */
#define FIRST_SEND_DELAY_US 500000	/* see interop.c: responder race */

/* wr_ids: receives 1..NRECV in posting order; send queue below */
#define WR_HELLO	101		/* client hello / server answer */
#define WR_VERDICT	102		/* server's "pass"/"fail" */
#define WR_READ		201		/* + i */
#define WR_WRITE	301
#define WR_DONE		302

enum { EX_OK, EX_NOCONN, EX_USAGE, EX_TIMEOUT, EX_TRAFFIC };
enum salt { S_MR = 1, S_CHELLO, S_SHELLO, S_WRITE };

static struct {
	int server;
	const char *addr, *src, *pdata;
	int port, ird, ord, count, hold_ms, timeout_ms;
	int traffic, reject, sig_all, hold_peer;
	const char *hold_file;
} opt;

static const char *role;
static char reason[512];

struct conn {
	struct ru_ep ep;
	struct ru_buf data;	/* server: exposed MR; client: Read sink/Write source */
	struct ru_buf msg;	/* NRECV receive slots, then the send staging */
	int step_failed;	/* an rdma_util step failed (and was printed) */
	int bad_event;		/* the last CM event was none a wait is for */
};

__attribute__((format(printf, 1, 2)))
static int fail(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(reason, sizeof(reason), fmt, ap);
	va_end(ap);
	return -1;
}

/* ---- data pattern ------------------------------------------------------- */

static uint8_t pat(enum salt s, size_t off)
{
	uint32_t x = (uint32_t)off * 2654435761u ^ (uint32_t)s * 0x9e3779b9u;

	x ^= x >> 15;
	x *= 0x85ebca6bu;
	x ^= x >> 13;
	return (uint8_t)x;
}

static void pat_fill(uint8_t *p, size_t n, enum salt s, size_t base)
{
	size_t i;

	for (i = 0; i < n; i++)
		p[i] = pat(s, base + i);
}

/* Index of the first byte not matching, or -1. */
static long pat_check(const uint8_t *p, size_t n, enum salt s, size_t base)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != pat(s, base + i))
			return (long)i;
	return -1;
}

/* ---- CM events (rdma_util's on_event and on_step) ---------------------- */

static void print_event(const struct rdma_cm_event *ev)
{
	const char *name = rdma_event_str(ev->event);
	const struct rdma_conn_param *p = &ev->param.conn;
	unsigned int i, plen = p->private_data ? p->private_data_len : 0;
	char txt[4 * PDATA_MAX + 2], unk[32];
	size_t n = 0;

	if (strncmp(name, "RDMA_CM_EVENT_", 14)) {
		snprintf(unk, sizeof(unk), "UNKNOWN_%d", (int)ev->event);
		name = unk;
	} else {
		name += 14;
	}
	for (i = 0; i < plen; i++) {
		unsigned char ch = ((const unsigned char *)p->private_data)[i];

		if (ch >= 0x20 && ch < 0x7f)
			txt[n++] = (char)ch;
		else
			n += (size_t)sprintf(txt + n, "\\x%02x", ch);
	}
	if (!n)
		txt[n++] = '-';
	txt[n] = 0;
	printf("%s event=%s status=%d initiator_depth=%u responder_resources=%u "
	       "pdata_len=%u pdata=%s\n", role, name, ev->status,
	       p->initiator_depth, p->responder_resources, plen, txt);
	fflush(stdout);
}

static void on_event(struct ru_ep *e, const struct rdma_cm_event *ev,
		     void *arg)
{
	struct conn *c = arg;

	print_event(ev);
	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
	case RDMA_CM_EVENT_CONNECT_REQUEST:
	case RDMA_CM_EVENT_ESTABLISHED:
	case RDMA_CM_EVENT_ADDR_CHANGE:
	case RDMA_CM_EVENT_TIMEWAIT_EXIT:
		c->bad_event = 0;
		break;
	default:	/* ends a wait: a failure event */
		c->bad_event = 1;
	}
}

static void on_step(struct ru_ep *e, const char *step, int rc, void *arg)
{
	struct conn *c = arg;
	int r;

	if (rc)
		c->step_failed = 1;
	if (!strcmp(step, "setup")) {
		if (rc)
			printf("%s setup failed: %s\n", role, ru_errmsg());
	} else if (opt.server) {	/* accept, reject */
		printf("server %s rc=%d\n", step, rc);
		if (rc && !strcmp(step, "accept")) {
			/* do not leave the initiator waiting for an answer */
			r = rdma_reject(e->id, NULL, 0) ? -errno : 0;
			printf("server reject rc=%d\n", r);
		}
	} else if (rc) {		/* resolve_addr, resolve_route, connect */
		printf("client %s rc=%d\n", step, rc);
	}
	fflush(stdout);
}

/*
 * The exit code of a failed rdma_util call: its step or failure event is
 * printed already; a wait that timed out or failed is printed here.
 */
static int conn_failed(struct conn *c, int rc)
{
	if (c->step_failed)
		return EX_NOCONN;
	if (rc == -ETIMEDOUT) {
		printf("%s event=NONE timeout\n", role);
		return EX_TIMEOUT;
	}
	if (!c->bad_event)
		printf("%s get_cm_event rc=%d\n", role, rc);
	return EX_NOCONN;
}

/* Print whatever CM events come within wait_ms. */
static void pump(struct conn *c, int wait_ms)
{
	ru_ep_pump_events_wait(&c->ep, wait_ms);
}

/* ---- completions -------------------------------------------------------- */

/* rdma_util's name of the opcode, its number where that has none */
static const char *wc_op_name(enum ibv_wc_opcode op, char *buf, size_t n)
{
	const char *name = ru_wc_opcode_str(op);

	if (strcmp(name, "other"))
		return name;
	snprintf(buf, n, "%d", (int)op);
	return buf;
}

static void print_wc(const char *what, const struct ibv_wc *wc,
		     const char *cq, long long expect)
{
	char op[16], ex[24] = "-";

	if (expect >= 0)
		snprintf(ex, sizeof(ex), "%lld", expect);
	printf("%s %s wr_id=%llu opcode=%s status=%d byte_len=%u cq=%s "
	       "expected_wr_id=%s\n", role, what,
	       (unsigned long long)wc->wr_id,
	       wc_op_name(wc->opcode, op, sizeof(op)), (int)wc->status,
	       wc->byte_len, cq, ex);
	fflush(stdout);
}

/*
 * The next completion on the send (rx == 0) or receive queue must be wr_id,
 * successful, with opcode op and (len >= 0) byte_len len. With late_ok a
 * failed status on the right wr_id is only reported (a final Send whose
 * delivery the peer has proven). 0 on match, -1 otherwise.
 */
static int expect_wc(struct conn *c, int rx, uint64_t wr_id,
		     enum ibv_wc_opcode op, int len, int late_ok)
{
	struct ibv_cq *cq = rx ? c->ep.rcq : c->ep.scq;
	const char *name = rx ? "recv" : "send";
	uint64_t deadline = ru_now_ms() + (uint64_t)opt.timeout_ms;
	unsigned int spins = 0;
	struct ibv_wc wc;
	int n;

	while ((n = ibv_poll_cq(cq, 1, &wc)) == 0) {
		if (ru_now_ms() >= deadline)
			return fail("no completion for wr_id %llu on the %s queue "
				    "within %d ms (QP %s)",
				    (unsigned long long)wr_id, name,
				    opt.timeout_ms,
				    ru_qp_state_str(ru_qp_state(c->ep.qp)));
		if (++spins > 64)
			pump(c, 1);	/* also the back-off */
	}
	if (n < 0)
		return fail("ibv_poll_cq: %d", n);
	if (late_ok && wc.wr_id == wr_id && wc.status != IBV_WC_SUCCESS) {
		print_wc("late completion", &wc, name, (long long)wr_id);
		return 0;
	}
	if (wc.status != IBV_WC_SUCCESS || wc.wr_id != wr_id ||
	    wc.opcode != op || (len >= 0 && wc.byte_len != (uint32_t)len)) {
		print_wc("unexpected completion", &wc, name, (long long)wr_id);
		return fail("unexpected completion on the %s queue (wanted "
			    "wr_id %llu)", name, (unsigned long long)wr_id);
	}
	return 0;
}

/* Completions nobody asked for (flushes only count when strict). */
static int check_stray(struct conn *c, int strict)
{
	struct ibv_wc wc;
	int i, n, bad = 0;

	for (i = 0; i < 2; i++)
		for (n = 0; n < CQ_DEPTH &&
		     ibv_poll_cq(i ? c->ep.rcq : c->ep.scq, 1, &wc) == 1; n++) {
			if (!strict && wc.status == IBV_WC_WR_FLUSH_ERR)
				continue;
			print_wc("unexpected completion", &wc,
				 i ? "recv" : "send", -1);
			bad++;
		}
	if (bad)
		fail("%d unexpected completion(s)", bad);
	return bad;
}

static int post(struct conn *c, enum ibv_wr_opcode op, struct ru_buf *b,
		size_t off, size_t len, uint64_t raddr, uint32_t rkey,
		uint64_t wr_id)
{
	if (ru_post_send(&c->ep, op, b, off, len, raddr, rkey, wr_id,
			 opt.sig_all ? 0 : IBV_SEND_SIGNALED))
		return fail("posting wr_id %llu: %s",
			    (unsigned long long)wr_id, ru_errmsg());
	return 0;
}

/* ---- traffic ------------------------------------------------------------ */

/* The last "rkey=0x.. addr=0x.." in the accept private data. */
static int parse_keys(const struct ru_conn_data *pd, uint32_t *rkey,
		      uint64_t *addr)
{
	char buf[RU_PDATA_MAX + 1];
	const char *p = buf, *last = NULL;
	unsigned long long a;
	unsigned int k;

	memcpy(buf, pd->data, pd->len);
	buf[pd->len] = 0;
	while ((p = strstr(p, "rkey=0x"))) {
		last = p;
		p++;
	}
	if (!last || sscanf(last, "rkey=0x%x addr=0x%llx", &k, &a) != 2)
		return -1;
	*rkey = k;
	*addr = a;
	return 0;
}

static int client_traffic(struct conn *c)
{
	unsigned int ord = c->ep.peer.responder_resources;
	unsigned int i, nr = ord < MAX_READS ? ord : MAX_READS;
	uint8_t *tx = c->msg.addr + TX_OFF;
	char rd[16] = "skip";
	uint64_t raddr;
	uint32_t rkey;
	long at;

	if (parse_keys(&c->ep.peer, &rkey, &raddr))
		return fail("no rkey=0x.. addr=0x.. in the accept private data");
	usleep(FIRST_SEND_DELAY_US);
	pat_fill(tx, MSG_LEN, S_CHELLO, 0);
	if (post(c, IBV_WR_SEND, &c->msg, TX_OFF, MSG_LEN, 0, 0, WR_HELLO) ||
	    expect_wc(c, 0, WR_HELLO, IBV_WC_SEND, -1, 0) ||
	    expect_wc(c, 1, 1, IBV_WC_RECV, MSG_LEN, 0))
		return -1;
	at = pat_check(c->msg.addr, MSG_LEN, S_SHELLO, 0);
	if (at >= 0)
		return fail("server answer differs at byte %ld", at);

	memset(c->data.addr, 0, MAX_READS * CHUNK);
	for (i = 0; i < nr; i++)
		if (post(c, IBV_WR_RDMA_READ, &c->data, i * CHUNK, CHUNK,
			 raddr + i * CHUNK, rkey, WR_READ + i))
			return -1;
	for (i = 0; i < nr; i++)
		if (expect_wc(c, 0, WR_READ + i, IBV_WC_RDMA_READ, -1, 0))
			return -1;
	at = pat_check(c->data.addr, nr * CHUNK, S_MR, 0);
	if (at >= 0)
		return fail("RDMA Read %ld data differs at byte %ld",
			    at / CHUNK, at % CHUNK);
	if (nr)
		snprintf(rd, sizeof(rd), "%u", nr);
	/* before "done": the server cannot have disconnected yet */
	if (check_stray(c, 1))
		return -1;

	pat_fill(c->data.addr + WSRC_OFF, CHUNK, S_WRITE, 0);
	memcpy(tx, "done", 4);
	if (post(c, IBV_WR_RDMA_WRITE, &c->data, WSRC_OFF, CHUNK,
		 raddr + WRITE_OFF, rkey, WR_WRITE) ||
	    post(c, IBV_WR_SEND, &c->msg, TX_OFF, 4, 0, 0, WR_DONE))
		return -1;
	/* the verdict proves Write and "done" arrived, so reap them after it */
	if (expect_wc(c, 1, 2, IBV_WC_RECV, 4, 0) ||
	    expect_wc(c, 0, WR_WRITE, IBV_WC_RDMA_WRITE, -1, 1) ||
	    expect_wc(c, 0, WR_DONE, IBV_WC_SEND, -1, 1))
		return -1;
	if (memcmp(c->msg.addr + SLOT, "pass", 4))
		return fail("the server found the RDMA Write data wrong");
	if (check_stray(c, 0))
		return -1;
	printf("client traffic ok send=1 read=%s write=1\n", rd);
	return 0;
}

static int server_traffic(struct conn *c)
{
	uint8_t *tx = c->msg.addr + TX_OFF, *d = c->data.addr;
	char bad[128] = "";
	long at;

	if (expect_wc(c, 1, 1, IBV_WC_RECV, MSG_LEN, 0))
		return -1;
	at = pat_check(c->msg.addr, MSG_LEN, S_CHELLO, 0);
	if (at >= 0)
		return fail("client hello differs at byte %ld", at);
	pat_fill(tx, MSG_LEN, S_SHELLO, 0);
	if (post(c, IBV_WR_SEND, &c->msg, TX_OFF, MSG_LEN, 0, 0, WR_HELLO) ||
	    expect_wc(c, 0, WR_HELLO, IBV_WC_SEND, -1, 0) ||
	    expect_wc(c, 1, 2, IBV_WC_RECV, 4, 0))
		return -1;
	if (memcmp(c->msg.addr + SLOT, "done", 4))
		return fail("second message is not \"done\"");
	if (check_stray(c, 1))
		return -1;

	at = pat_check(d + WRITE_OFF, CHUNK, S_WRITE, 0);
	if (at >= 0) {
		snprintf(bad, sizeof(bad), "RDMA Write data differs at byte %ld",
			 at);
	} else if (pat_check(d, WRITE_OFF, S_MR, 0) >= 0 ||
		   pat_check(d + WRITE_OFF + CHUNK, MR_LEN - WRITE_OFF - CHUNK,
			     S_MR, WRITE_OFF + CHUNK) >= 0) {
		snprintf(bad, sizeof(bad),
			 "MR changed outside the RDMA Write target");
	}
	memcpy(tx, bad[0] ? "fail" : "pass", 4);
	/* the client checks the verdict arrived; it may disconnect at once */
	if (post(c, IBV_WR_SEND, &c->msg, TX_OFF, 4, 0, 0, WR_VERDICT) ||
	    expect_wc(c, 0, WR_VERDICT, IBV_WC_SEND, -1, 1))
		return -1;
	if (bad[0])
		return fail("%s", bad);
	if (check_stray(c, 0))
		return -1;
	printf("server traffic ok\n");
	return 0;
}

/* ---- connection --------------------------------------------------------- */

/* on_qp: the buffers, the receives, and the server's keys in its pdata */
static int conn_qp(struct ru_ep *e, void *arg)
{
	struct conn *c = arg;
	int i, rc, acc = IBV_ACCESS_LOCAL_WRITE;
	char pd[PDATA_MAX + 1];
	size_t len = e->pdata_len;

	if (opt.server)
		acc |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE;
	rc = ru_buf_alloc(&c->data, e->pd, MR_LEN, acc);
	if (!rc)
		rc = ru_buf_alloc(&c->msg, e->pd, TX_OFF + SLOT,
				  IBV_ACCESS_LOCAL_WRITE);
	if (rc)
		return rc;
	if (opt.server)
		pat_fill(c->data.addr, MR_LEN, S_MR, 0);
	for (i = 0; i < NRECV; i++) {
		rc = ru_post_recv(e, &c->msg, (size_t)i * SLOT, SLOT, i + 1);
		if (rc)
			return rc;
	}
	if (opt.server && opt.traffic) {
		memcpy(pd, e->pdata, len);
		len += (size_t)snprintf(pd + len, sizeof(pd) - len,
					"%srkey=0x%08x addr=0x%016llx",
					len ? " " : "", c->data.mr->rkey,
					(unsigned long long)(uintptr_t)c->data.addr);
		memcpy(e->pdata, pd, len);
		e->pdata_len = (uint8_t)len;
	}
	return 0;
}

/* on_close: before the PD goes */
static void conn_free(struct ru_ep *e, void *arg)
{
	struct conn *c = arg;

	ru_buf_free(&c->data);
	ru_buf_free(&c->msg);
}

static void conn_caps(struct ru_caps *caps, struct conn *c)
{
	memset(c, 0, sizeof(*c));
	ru_caps_default(caps);
	caps->max_send_wr = QP_WR;
	caps->max_recv_wr = QP_WR;
	caps->cq_depth = CQ_DEPTH;
	/* unclamped: 255 is librdmacm's "device maximum" */
	caps->responder_resources = (uint8_t)opt.ird;
	caps->initiator_depth = (uint8_t)opt.ord;
	caps->sq_sig_all = opt.sig_all;
	caps->private_data = opt.pdata;
	caps->private_data_len = (uint8_t)strlen(opt.pdata);
	caps->reject = opt.reject;
	caps->on_qp = conn_qp;
	caps->on_qp_arg = c;
	caps->on_close = conn_free;
	caps->on_close_arg = c;
	caps->on_event = on_event;
	caps->on_event_arg = c;
	caps->on_step = on_step;
	caps->on_step_arg = c;
}

/* After ESTABLISHED: traffic, hold, disconnect. Returns the exit code. */
static int connected(struct conn *c)
{
	uint64_t end, now;
	int r, rc = EX_OK;

	printf("%s dev=%s\n", role, ibv_get_device_name(c->ep.id->verbs->device));
	printf("%s qpn=%u\n", role, c->ep.qp->qp_num);
	if (opt.traffic) {
		reason[0] = 0;
		if (opt.server ? server_traffic(c) : client_traffic(c)) {
			printf("%s traffic failed: %s\n", role, reason);
			rc = EX_TRAFFIC;
		}
	}
	if (opt.hold_file) {
		end = ru_now_ms() + (uint64_t)opt.timeout_ms;
		while (access(opt.hold_file, F_OK) &&
		       !(opt.hold_peer && c->ep.disconnected) &&
		       (now = ru_now_ms()) < end)
			pump(c, 100);
		if (access(opt.hold_file, F_OK))
			printf("%s hold-file %s not created\n", role,
			       opt.hold_file);
	}
	end = ru_now_ms() + (uint64_t)opt.hold_ms;
	while ((now = ru_now_ms()) < end &&
	       !(opt.hold_peer && c->ep.disconnected))
		pump(c, end - now > 100 ? 100 : (int)(end - now));
	if (!opt.traffic)
		check_stray(c, 0);	/* reported, not counted */

	if (!c->ep.disconnected && (r = ru_ep_disconnect(&c->ep)))
		printf("%s disconnect rc=%d\n", role, r);
	if (ru_ep_wait_disconnected(&c->ep, opt.timeout_ms)) {
		printf("%s event=NONE timeout\n", role);
		return rc ? rc : EX_TIMEOUT;
	}
	return rc;
}

/* A numeric address (rdma_util resolves it again). */
static int valid_addr(const char *s)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST };
	struct addrinfo *res;

	if (getaddrinfo(s, NULL, &hints, &res))
		return 0;
	freeaddrinfo(res);
	return 1;
}

static int run_client(void)
{
	struct ru_caps caps;
	struct conn c;
	int rc;

	if (!valid_addr(opt.addr) || (opt.src && !valid_addr(opt.src))) {
		fprintf(stderr, "mpa_conn: bad address\n");
		return EX_USAGE;
	}
	conn_caps(&caps, &c);
	/* no retries: the suites count on the first attempt's events */
	rc = ru_client_start(&c.ep, opt.src, opt.addr, (uint16_t)opt.port,
			     &caps, opt.timeout_ms);
	if (!rc)
		rc = ru_client_finish(&c.ep, opt.timeout_ms);
	rc = rc ? conn_failed(&c, rc) : connected(&c);
	ru_ep_close(&c.ep);
	return rc;
}

static int serve_one(struct ru_listener *l)
{
	struct ru_caps caps;
	struct conn c;
	int rc;

	conn_caps(&caps, &c);
	rc = ru_accept_start(l, &c.ep, &caps, opt.timeout_ms);
	if (!rc && !opt.reject)
		rc = ru_ep_wait_established(&c.ep, opt.timeout_ms);
	if (rc)
		rc = conn_failed(&c, rc);
	else if (!opt.reject)
		rc = connected(&c);
	ru_ep_close(&c.ep);
	return rc;
}

static int run_server(void)
{
	struct ru_listener l;
	int i, r, rc = EX_OK;

	r = ru_listen(&l, opt.addr, (uint16_t)opt.port, 8);
	if (r) {
		printf("server listen rc=%d reason=%s\n", r, ru_errmsg());
		ru_listener_close(&l);
		return EX_NOCONN;
	}
	printf("server listen addr=%s port=%u\n", opt.addr, l.port);
	for (i = 0; i < opt.count; i++) {
		printf("server conn %d\n", i);
		r = serve_one(&l);
		if (r && !rc)
			rc = r;
		if (r == EX_TIMEOUT)
			break;
	}
	ru_listener_close(&l);
	return rc;
}

/* ---- main --------------------------------------------------------------- */

static void usage(void)
{
	fprintf(stderr,
		"usage: mpa_conn server --addr A --port P [--ird N] [--ord N] "
		"[--pdata STR]\n"
		"                [--count N] [--hold-ms MS] [--hold-file PATH] "
		"[--hold-peer]\n"
		"                [--no-traffic] [--reject] [--timeout-ms MS] "
		"[--sig-all]\n"
		"       mpa_conn client --addr A --port P [--src A] [--ird N] "
		"[--ord N]\n"
		"                [--pdata STR] [--hold-ms MS] [--hold-file PATH] "
		"[--hold-peer]\n"
		"                [--no-traffic] [--timeout-ms MS] [--sig-all]\n");
	exit(EX_USAGE);
}

static int num(const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi) {
		fprintf(stderr, "mpa_conn: bad number '%s' (%ld..%ld)\n", s,
			lo, hi);
		usage();
	}
	return (int)v;
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "addr", required_argument, NULL, 'a' },
		{ "port", required_argument, NULL, 'p' },
		{ "src", required_argument, NULL, 's' },
		{ "ird", required_argument, NULL, 'i' },
		{ "ord", required_argument, NULL, 'o' },
		{ "pdata", required_argument, NULL, 'd' },
		{ "count", required_argument, NULL, 'c' },
		{ "hold-ms", required_argument, NULL, 'h' },
		{ "hold-file", required_argument, NULL, 'H' },
		{ "hold-peer", no_argument, NULL, 'P' },
		{ "timeout-ms", required_argument, NULL, 't' },
		{ "no-traffic", no_argument, NULL, 'n' },
		{ "reject", no_argument, NULL, 'r' },
		{ "sig-all", no_argument, NULL, 'S' },
		{ NULL, 0, NULL, 0 },
	};
	size_t need;
	int o;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "server"))
		opt.server = 1;
	else if (strcmp(argv[1], "client"))
		usage();
	role = opt.server ? "server" : "client";
	opt.port = -1;
	opt.ird = 4;
	opt.ord = 4;
	opt.count = 1;
	opt.timeout_ms = 15000;
	opt.traffic = 1;
	opt.pdata = "";
	while ((o = getopt_long(argc - 1, argv + 1, "", lo, NULL)) != -1) {
		switch (o) {
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = num(optarg, 0, 65535); break;
		case 's': opt.src = optarg; break;
		case 'i': opt.ird = num(optarg, 0, 255); break;
		case 'o': opt.ord = num(optarg, 0, 255); break;
		case 'd': opt.pdata = optarg; break;
		case 'c': opt.count = num(optarg, 1, 1000000); break;
		case 'h': opt.hold_ms = num(optarg, 0, 86400000); break;
		case 'H': opt.hold_file = optarg; break;
		case 'P': opt.hold_peer = 1; break;
		case 't': opt.timeout_ms = num(optarg, 1, 86400000); break;
		case 'n': opt.traffic = 0; break;
		case 'r': opt.reject = 1; break;
		case 'S': opt.sig_all = 1; break;
		default: usage();
		}
	}
	if (optind != argc - 1 || !opt.addr || opt.port < 0 ||
	    (!opt.server && (!opt.port || opt.count != 1 || opt.reject)) ||
	    (opt.server && opt.src))
		usage();
	/* the accept private data carries the keys after --pdata */
	need = strlen(opt.pdata);
	if (opt.server && opt.traffic && !opt.reject)
		need += (need ? 1 : 0) + KEYS_LEN;
	if (need > PDATA_MAX) {
		fprintf(stderr, "mpa_conn: private data of %zu bytes > %d\n",
			need, PDATA_MAX);
		usage();
	}
	return opt.server ? run_server() : run_client();
}
