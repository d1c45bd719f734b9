// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * fuzz_target - the verbs side of the receive-path fuzzer (tools/fuzz).
 *
 *   fuzz_target --port P --ctl C [--addr A] [--seed S] [--mr-len N]
 *               [--recv N] [--recv-len N] [--ird N]
 *
 * One process serves every connection the fuzzer makes, one after the
 * other, lock-step over a plain TCP control connection on A:C:
 *
 *   fuzzer -> target   "a N [rd=..]"  accept connection N on the rdma_cm
 *                                 listener A:P (the fuzzer is the MPA
 *                                 initiator)
 *                      "c N HOST PORT REV P2P RTR CRC [rd=..]"
 *                                 connect to the fuzzer at HOST:PORT (the
 *                                 fuzzer is the MPA responder), with siw's
 *                                 module parameters mpa_rev, mpa_p2p,
 *                                 mpa_rtr_offer, mpa_crc set first
 *                                 (skipped when the module has none)
 *                      "q"        quit
 *                      rd=STAG:TO:FILL:LEN@OFF[,LEN@OFF..]  (at most
 *                                 RD_MAX): once the connection is up, the
 *                                 target posts one RDMA Read per LEN@OFF
 *                                 from the fuzzer's STAG at TO+OFF into
 *                                 region s at OFF (the fuzzer answers
 *                                 them: siw as the Read requester)
 *   target -> fuzzer   "v N ok|bad|hang|noconn|refused DETAIL"   per
 *                                 connection; refused: the connection
 *                                 failed with an error status (the
 *                                 fuzzer's Reply or its first frames),
 *                                 noconn: it timed out (a hang)
 *
 * Memory: seven regions of --mr-len bytes (default 8192), one guard page
 * before, between and after them, all filled with a pseudo-random pattern
 * and registered once (one PD; region 5 in a second PD):
 *
 *   0 x  local write, remote write/read/atomic, flush global
 *   1 w  local write, remote write
 *   2 r  local write, remote read
 *   3 a  local write, remote atomic
 *   4 n  local write only
 *   5 p  everything, in the other PD
 *   6 i  everything; registered anew for every connection (a Send with
 *        Invalidate may end it)
 *   7 s  local write only: the sink of the target's own RDMA Reads
 *
 * The private data of every accept or connect is text the fuzzer (and
 * tools/mpa-peer) turn into variables:
 *   "fz=N b=ADDR st=STRIDE ml=LEN rl=RECVLEN rn=RECVS k0=RKEY .. k6=RKEY"
 * (region i starts at b + i * st; k7 is region s's lkey, the sink STag
 * of the target's Read Requests).
 *
 * Receives: --recv (default 512, more than a stream of the fuzzer's
 * --max-steps default sends) slots of 2 x --recv-len (default 256)
 * bytes, each posted with its first half (two slots in three as two or
 * three adjacent SGEs, some with an empty one); a completed receive is
 * posted again at once, so the fuzzer's Sends find buffers. Connections
 * with an odd number post them to an SRQ of their own instead of the
 * QP's RQ, with its limit armed.
 *
 * After each connection (DISCONNECTED, or 60 s: "hang") the QP is
 * destroyed and the memory checked against the pattern: the guard pages,
 * regions 2 (r), 4 (n) and 5 (p) -- no valid request can change them --
 * and of every receive slot the second half and what lies beyond the
 * length its completion reported. A difference is "bad" with its
 * location; the pattern is then restored so the next connection starts
 * clean. Writable regions (x, w, a, i) are not compared. Region s is
 * compared outside the ranges of the target's Reads; the range of a Read
 * that completed successfully must hold FILL + its index (the fuzzer's
 * Read Response payload) in every byte. The verdict line then says
 * "reads=OK/POSTED".
 *
 * Exit: 0 every verdict ok, 1 some verdict was not, 3 setup failure,
 * 2 usage.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <unistd.h>

#include "rdma_util.h"

#define PAGE		4096
#define NREG		8
#define REG_P		5	/* in the second PD */
#define REG_I		6	/* registered anew per connection */
#define REG_S		7	/* the sink of our own Reads */
#define RD_MAX		4
#define RECV_SGE_MAX	3	/* SGEs of one receive */
#define RD_WRID		0x52440000u	/* + the Read's index */
#define CONN_MS		60000	/* bound of one connection */

/*
 * IB_UVERBS_ACCESS_FLUSH_GLOBAL by number (rdma-core 44 lacks it); not
 * _PERSISTENT: siw refuses it for memory that is not persistent
 */
#define FT_ACCESS_FLUSH	(1 << 8)

static const struct {
	const char *name;
	int access;
	int checked;	/* no valid request can change it */
} regs[NREG] = {
	{ "x", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
	       FT_ACCESS_FLUSH, 0 },
	{ "w", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, 0 },
	{ "r", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ, 1 },
	{ "a", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC, 0 },
	{ "n", IBV_ACCESS_LOCAL_WRITE, 1 },
	{ "p", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, 1 },
	{ "i", IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	       IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC, 0 },
	{ "s", IBV_ACCESS_LOCAL_WRITE, 0 },	/* checked by check_reads() */
};

/* the RDMA Reads the fuzzer asked for on one connection */
struct reads {
	unsigned int n, ok;
	uint32_t stag, fill;
	uint64_t to;
	uint32_t len[RD_MAX], off[RD_MAX];
	int status[RD_MAX];	/* the completion's, -1: none */
};

struct target {
	const char *addr;
	uint16_t port, ctl_port;
	size_t ml, rl;
	unsigned int rn, ird;
	uint64_t seed;
	struct ibv_context *ctx;
	struct ibv_pd *pd, *pd2;
	uint8_t *mem, *ref;	/* regions and guards; the pattern */
	size_t memlen, stride;
	struct ibv_mr *mr[NREG];
	uint8_t *rmem, *rref;	/* receive slots; the pattern */
	struct ibv_mr *rmr;
	uint8_t *posted;	/* per slot: a receive is posted */
	int nbad, nconn;
	char pdata[RU_PDATA_MAX];
	struct reads rd;
};

static void usage(void)
{
	fprintf(stderr,
		"usage: fuzz_target --port P --ctl C [--addr A] [--seed S] [--mr-len N]\n"
		"       [--recv N] [--recv-len N] [--ird N]\n");
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

static uint8_t *region(struct target *t, int i)
{
	return t->mem + PAGE + (size_t)i * t->stride;
}

static int reg_mr(struct target *t, int i)
{
	struct ibv_pd *pd = i == REG_P ? t->pd2 : t->pd;

	t->mr[i] = ibv_reg_mr(pd, region(t, i), t->ml, regs[i].access);
	if (!t->mr[i] && (regs[i].access & FT_ACCESS_FLUSH)) {
		/* a module without Flush (upstream siw): region x without it */
		printf("target note: region %s without FLUSH_GLOBAL: %s\n",
		       regs[i].name, strerror(errno));
		t->mr[i] = ibv_reg_mr(pd, region(t, i), t->ml,
				      regs[i].access & ~FT_ACCESS_FLUSH);
	}
	if (!t->mr[i]) {
		fprintf(stderr, "fuzz_target: ibv_reg_mr %s: %s\n",
			regs[i].name, strerror(errno));
		return -1;
	}
	return 0;
}

static int setup_memory(struct target *t)
{
	int i;

	t->stride = t->ml + PAGE;
	t->memlen = PAGE + NREG * t->stride;
	t->mem = mmap(NULL, t->memlen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t->rmem = mmap(NULL, t->rn * 2 * t->rl, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	t->ref = malloc(t->memlen);
	t->rref = malloc(t->rn * 2 * t->rl);
	t->posted = calloc(t->rn, 1);
	if (t->mem == MAP_FAILED || t->rmem == MAP_FAILED || !t->ref ||
	    !t->rref || !t->posted)
		return -1;
	ru_fill(t->ref, t->memlen, t->seed);
	memcpy(t->mem, t->ref, t->memlen);
	ru_fill(t->rref, t->rn * 2 * t->rl, t->seed ^ 0x5a5a);
	memcpy(t->rmem, t->rref, t->rn * 2 * t->rl);
	t->pd = ibv_alloc_pd(t->ctx);
	t->pd2 = ibv_alloc_pd(t->ctx);
	if (!t->pd || !t->pd2)
		return -1;
	for (i = 0; i < NREG; i++)
		if (reg_mr(t, i))
			return -1;
	t->rmr = ibv_reg_mr(t->pd, t->rmem, t->rn * 2 * t->rl,
			    IBV_ACCESS_LOCAL_WRITE);
	return t->rmr ? 0 : -1;
}

/* the private data for connection n */
static void make_pdata(struct target *t, unsigned long n)
{
	size_t o;
	int i;

	o = snprintf(t->pdata, sizeof(t->pdata),
		     "fz=%lu b=0x%" PRIxPTR " st=0x%zx ml=%zu rl=%zu rn=%u", n,
		     (uintptr_t)region(t, 0), t->stride, t->ml, t->rl, t->rn);
	for (i = 0; i < NREG && o < sizeof(t->pdata); i++)
		o += snprintf(t->pdata + o, sizeof(t->pdata) - o, " k%d=0x%x",
			      i, i == REG_S ? t->mr[i]->lkey : t->mr[i]->rkey);
}

/*
 * Post slot s: its first half, as one SGE, or (two slots in three) as
 * RECV_SGE_MAX or fewer adjacent SGEs of varying sizes, so that siw places
 * a message across SGE boundaries; the slot's bytes are the same either
 * way, and so are the checks.
 */
static int post_slot(struct target *t, struct ru_ep *e, unsigned int s)
{
	struct ibv_sge sge[RECV_SGE_MAX];
	struct ibv_recv_wr wr = { .wr_id = s, .sg_list = sge }, *bad;
	uint8_t *p = t->rmem + s * 2 * t->rl;
	unsigned int k = 1 + (s + t->nconn) % RECV_SGE_MAX, i;
	size_t left = t->rl;
	int rc;

	for (i = 0; i < k; i++) {
		/*
		 * the first k - 1 SGEs 1..rl/k bytes long (of three, the middle
		 * one empty in every fifth slot: siw skips it), the last the rest
		 */
		size_t len = i + 1 < k ? 1 + (s * 37 + i * 11) % (t->rl / k) : left;

		if (k == 3 && i == 1 && s % 5 == 0)
			len = 0;

		sge[i].addr = (uintptr_t)p;
		sge[i].length = len;
		sge[i].lkey = t->rmr->lkey;
		p += len;
		left -= len;
	}
	wr.num_sge = k;
	rc = e->srq ? ibv_post_srq_recv(e->srq, &wr, &bad) :
		      ibv_post_recv(e->qp, &wr, &bad);
	t->posted[s] = !rc;
	return rc;
}

static int on_qp(struct ru_ep *e, void *arg)
{
	struct target *t = arg;
	unsigned int s;
	int rc;

	for (s = 0; s < t->rn; s++) {
		rc = post_slot(t, e, s);
		if (rc) {
			fprintf(stderr, "fuzz_target: posting receive slot %u: %s\n",
				s, strerror(rc));
			return rc;
		}
	}
	if (e->srq) {
		/*
		 * armed so near the ring's size that the first receive the
		 * target has not posted again yet raises SRQ_LIMIT_REACHED
		 * (siw's limit check; the event itself is not consumed)
		 */
		struct ibv_srq_attr a = { .srq_limit = t->rn - 1 };

		rc = ibv_modify_srq(e->srq, &a, IBV_SRQ_LIMIT);
		if (rc)
			fprintf(stderr, "fuzz_target: arming the SRQ limit: %s\n",
				strerror(rc));
		return rc;
	}
	return 0;
}

/* first difference of [off, off+len) of mem against ref, -1 none */
static long diff(const uint8_t *mem, const uint8_t *ref, size_t off,
		 size_t len)
{
	long d = ru_first_diff(mem + off, ref + off, len);

	return d < 0 ? -1 : (long)off + d;
}

/* what no valid request could change; "" when all is as it must be */
static void check_memory(struct target *t, char *why, size_t n)
{
	size_t s;
	long d;
	int i;

	why[0] = 0;
	for (i = 0; i <= NREG; i++) {	/* the guard pages */
		d = diff(t->mem, t->ref, (size_t)i * t->stride, PAGE);
		if (d >= 0) {
			snprintf(why, n, "guard page %d changed at +%ld "
				 "(0x%02x, pattern 0x%02x)", i,
				 d - (long)(i * t->stride), t->mem[d],
				 t->ref[d]);
			return;
		}
	}
	for (i = 0; i < NREG; i++) {
		if (!regs[i].checked)
			continue;
		d = diff(t->mem, t->ref, PAGE + (size_t)i * t->stride, t->ml);
		if (d >= 0) {
			snprintf(why, n, "region %s (no remote write) changed "
				 "at +%ld (0x%02x, pattern 0x%02x)",
				 regs[i].name,
				 d - (long)(PAGE + i * t->stride), t->mem[d],
				 t->ref[d]);
			return;
		}
	}
	for (s = 0; s < t->rn; s++) {
		/* a posted receive may hold what a failed message placed */
		size_t from = t->posted[s] ? t->rl : 0;

		d = diff(t->rmem, t->rref, s * 2 * t->rl + from,
			 2 * t->rl - from);
		if (d >= 0) {
			snprintf(why, n, "receive slot %zu changed at +%ld "
				 "(%s)", s, d - (long)(s * 2 * t->rl),
				 t->posted[s] ? "beyond the posted length" :
				 "not posted");
			return;
		}
	}
}

static void restore_memory(struct target *t)
{
	memcpy(t->mem, t->ref, t->memlen);
	memcpy(t->rmem, t->rref, t->rn * 2 * t->rl);
}

/*
 * Serve an established connection until it is disconnected: post every
 * completed receive again, after checking that its message left the
 * slot alone beyond the length it reported (else *why says where).
 * Returns 0, or -ETIMEDOUT after CONN_MS.
 */
static int serve(struct target *t, struct ru_ep *e, unsigned int *recvs,
		 char *why, size_t whylen)
{
	uint64_t deadline = ru_now_ms() + CONN_MS;
	struct ibv_wc wc[16];
	int n, i;

	while (!e->disconnected) {
		if (ru_now_ms() >= deadline)
			return -ETIMEDOUT;
		n = ibv_poll_cq(e->rcq, 16, wc);
		for (i = 0; i < n; i++) {
			unsigned int s = (unsigned int)wc[i].wr_id;

			size_t got, off;
			long d;

			if (s >= t->rn)
				continue;
			if (wc[i].status != IBV_WC_SUCCESS)
				continue;	/* stays "posted": up to rl undefined */
			(*recvs)++;
			t->posted[s] = 0;
			/*
			 * RFC 7306 Immediate Data completes as "RDMA Write with
			 * immediate": byte_len is the Write's, nothing is placed
			 */
			got = wc[i].opcode == IBV_WC_RECV_RDMA_WITH_IMM ? 0 :
			      wc[i].byte_len;
			off = s * 2 * t->rl;
			d = diff(t->rmem, t->rref, off + (got < t->rl ? got : t->rl),
				 2 * t->rl - (got < t->rl ? got : t->rl));
			if ((got > t->rl || d >= 0) && !why[0])
				snprintf(why, whylen, "receive slot %u: completion "
					 "opcode %d byte_len %zu of %zu posted, "
					 "first change beyond it at +%ld", s,
					 wc[i].opcode, got, t->rl,
					 d < 0 ? -1 : d - (long)off);
			/* the next message may be shorter: compare from here */
			memcpy(t->rref + off, t->rmem + off,
			       got > t->rl ? t->rl : got);
			post_slot(t, e, s);
		}
		while ((i = ibv_poll_cq(e->scq, 16, wc)) > 0)
			while (i-- > 0) {
				uint64_t k = wc[i].wr_id - RD_WRID;

				if (wc[i].wr_id >= RD_WRID && k < t->rd.n)
					t->rd.status[k] = wc[i].status;
			}
		if (n <= 0)
			ru_ep_pump_events_wait(e, 2);
		else
			ru_ep_pump_events(e);
	}
	return 0;
}

/*
 * " rd=STAG:TO:FILL:LEN@OFF[,LEN@OFF..]" of a control line into t->rd
 * (none without it). A Read outside region s, or more than RD_MAX, makes
 * the line bad: -1.
 */
static int parse_reads(struct target *t, const char *line)
{
	const char *p = strstr(line, " rd=");
	struct reads *r = &t->rd;
	unsigned long long to;
	unsigned int fill;
	int used;

	memset(r, 0, sizeof(*r));
	if (!p)
		return 0;
	if (sscanf(p, " rd=%" SCNx32 ":%llx:%u:%n", &r->stag, &to, &fill,
		   &used) != 3)
		return -1;
	r->to = to;
	r->fill = fill;
	p += used;
	while (*p && *p != ' ') {
		uint32_t len, off;

		if (r->n == RD_MAX ||
		    sscanf(p, "%" SCNu32 "@%" SCNu32 "%n", &len, &off, &used) != 2 ||
		    !len || off > t->ml || len > t->ml - off)
			return -1;
		r->len[r->n] = len;
		r->off[r->n] = off;
		r->status[r->n++] = -1;
		p += used;
		if (*p == ',')
			p++;
	}
	return 0;
}

/* post the Reads of t->rd (signaled, one by one): 0 or an errno */
static int post_reads(struct target *t, struct ru_ep *e)
{
	unsigned int k;

	for (k = 0; k < t->rd.n; k++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)region(t, REG_S) + t->rd.off[k],
			.length = t->rd.len[k],
			.lkey = t->mr[REG_S]->lkey,
		};
		struct ibv_send_wr wr = {
			.wr_id = RD_WRID + k,
			.sg_list = &sge,
			.num_sge = 1,
			.opcode = IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.wr.rdma.remote_addr = t->rd.to + t->rd.off[k],
			.wr.rdma.rkey = t->rd.stag,
		}, *bad;
		int rc = ibv_post_send(e->qp, &wr, &bad);

		if (rc)
			return rc;
	}
	return 0;
}

/*
 * Region s after the connection: unchanged outside the Reads' ranges; the
 * range of a Read that completed successfully holds its payload (FILL +
 * index in every byte), the others anything (a response may have placed
 * part of it before it failed). Counts the good Reads in t->rd.ok.
 */
static void check_reads(struct target *t, char *why, size_t n)
{
	const uint8_t *m = region(t, REG_S);
	const uint8_t *r = t->ref + (m - t->mem);
	size_t i;
	unsigned int k;

	t->rd.ok = 0;
	for (i = 0; i < t->ml; i++) {
		int in = -1;

		for (k = 0; k < t->rd.n && in < 0; k++)
			if (i >= t->rd.off[k] && i - t->rd.off[k] < t->rd.len[k])
				in = (int)k;
		if (in < 0 && m[i] != r[i]) {
			if (!why[0])
				snprintf(why, n, "region s changed outside the "
					 "Reads at +%zu (0x%02x, pattern 0x%02x)",
					 i, m[i], r[i]);
			return;
		}
		if (in >= 0 && t->rd.status[in] == IBV_WC_SUCCESS &&
		    m[i] != (uint8_t)(t->rd.fill + in)) {
			if (!why[0])
				snprintf(why, n, "Read %d completed but region s "
					 "+%zu holds 0x%02x, not 0x%02x", in, i,
					 m[i], (uint8_t)(t->rd.fill + in));
			return;
		}
	}
	for (k = 0; k < t->rd.n; k++)
		t->rd.ok += t->rd.status[k] == IBV_WC_SUCCESS;
}

/* the MPA settings of siw's initiator (skipped when the module has none) */
static void set_param(const char *name, const char *val)
{
	char path[128];
	FILE *f;

	snprintf(path, sizeof(path), "/sys/module/siw/parameters/%s", name);
	f = fopen(path, "w");
	if (!f)
		return;
	fputs(val, f);
	fclose(f);
}

static void say(int ctl, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n > (int)sizeof(buf) - 2)
		n = sizeof(buf) - 2;
	buf[n++] = '\n';
	fwrite(buf, 1, n, stdout);
	fflush(stdout);
	if (write(ctl, buf, n) != n)
		fprintf(stderr, "fuzz_target: control write failed\n");
}

/* one connection: accept (listener l) or connect (host given) */
static void one(struct target *t, int ctl, struct ru_listener *l,
		unsigned long n, const char *host, uint16_t port)
{
	struct ru_caps caps;
	struct ru_ep e;
	unsigned int recvs = 0;
	char why[256], why2[256];
	int rc;

	t->nconn++;
	/* region i: registered anew (a Send with Invalidate may have ended it) */
	if (ibv_dereg_mr(t->mr[REG_I]) || reg_mr(t, REG_I)) {
		say(ctl, "v %lu bad re-registering region i failed", n);
		t->nbad++;
		return;
	}
	make_pdata(t, n);
	ru_caps_default(&caps);
	caps.max_recv_wr = t->rn;
	caps.max_recv_sge = RECV_SGE_MAX;
	/* odd connections receive through an SRQ of their own */
	caps.srq = n & 1;
	caps.max_send_wr = 16;
	caps.shared_pd = t->pd;
	caps.on_qp = on_qp;
	caps.on_qp_arg = t;
	caps.responder_resources = t->ird;
	caps.initiator_depth = t->ird;
	caps.private_data = t->pdata;
	caps.private_data_len = strlen(t->pdata) + 1;
	memset(&e, 0, sizeof(e));
	if (host) {
		/* once: a retry would reach the fuzzer as its next connection */
		rc = ru_client_start(&e, t->addr, host, port, &caps, 5000);
		if (!rc)
			rc = ru_client_finish(&e, 15000);
	} else {
		rc = ru_accept(l, &e, &caps, 20000);
	}
	if (rc && rc != -ETIMEDOUT && rc != -EHOSTUNREACH) {
		/* refused: the fuzzer's Reply or first frames were bad */
		say(ctl, "v %lu refused %s", n, ru_errmsg());
		ru_ep_close(&e);
		return;
	}
	if (rc) {
		say(ctl, "v %lu noconn %s", n, ru_errmsg());
		ru_ep_close(&e);
		t->nbad++;
		return;
	}
	why2[0] = 0;
	rc = post_reads(t, &e);
	if (rc)
		snprintf(why2, sizeof(why2), "posting %u RDMA Reads: %s",
			 t->rd.n, strerror(rc));
	rc = serve(t, &e, &recvs, why2, sizeof(why2));
	ru_ep_close(&e);
	check_memory(t, why, sizeof(why));
	check_reads(t, why, sizeof(why));
	if (why2[0] && !why[0])
		snprintf(why, sizeof(why), "%s", why2);
	if (rc) {
		say(ctl, "v %lu hang no DISCONNECTED within %d ms (recvs=%u)",
		    n, CONN_MS, recvs);
		t->nbad++;
	} else if (why[0]) {
		say(ctl, "v %lu bad %s (recvs=%u)", n, why, recvs);
		t->nbad++;
	} else {
		say(ctl, "v %lu ok recvs=%u reads=%u/%u", n, recvs, t->rd.ok,
		    t->rd.n);
	}
	restore_memory(t);
}

static int ctl_accept(const char *addr, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(port) };
	int one_ = 1, fd, c;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1)
		return -1;
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return -1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one_, sizeof(one_));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1))
		return -1;
	printf("target control listening %s:%u\n", addr, port);
	fflush(stdout);
	c = accept(fd, NULL, NULL);
	close(fd);
	if (c >= 0)
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one_, sizeof(one_));
	return c;
}

/* one control line into buf (no newline); -1 closed */
static int ctl_line(int ctl, char *buf, size_t n)
{
	size_t o = 0;
	char c;

	while (o + 1 < n) {
		ssize_t r = read(ctl, &c, 1);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (c == '\n')
			break;
		buf[o++] = c;
	}
	buf[o] = 0;
	return 0;
}

int main(int argc, char **argv)
{
	struct target t = { .ml = 8192, .rl = 256, .rn = 512, .ird = 16 };
	struct ru_listener l = { 0 };
	char line[512];
	int i, ctl;

	t.addr = ru_addr0();
	t.seed = ru_random_seed();
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;

		if (!a)
			usage();
		i++;
		if (!strcmp(o, "--port"))
			t.port = num(a);
		else if (!strcmp(o, "--ctl"))
			t.ctl_port = num(a);
		else if (!strcmp(o, "--addr"))
			t.addr = a;
		else if (!strcmp(o, "--seed"))
			t.seed = num(a);
		else if (!strcmp(o, "--mr-len"))
			t.ml = num(a);
		else if (!strcmp(o, "--recv"))
			t.rn = num(a);
		else if (!strcmp(o, "--recv-len"))
			t.rl = num(a);
		else if (!strcmp(o, "--ird"))
			t.ird = num(a);
		else
			usage();
	}
	if (!t.port || !t.ctl_port || !t.ml || t.ml % 8 || !t.rn ||
	    t.rl < RECV_SGE_MAX || t.rn < 2)
		usage();
	if (ru_listen(&l, t.addr, t.port, 16)) {
		fprintf(stderr, "fuzz_target: %s\n", ru_errmsg());
		return 3;
	}
	t.ctx = l.id->verbs;
	if (!t.ctx || setup_memory(&t)) {
		fprintf(stderr, "fuzz_target: memory setup failed: %s\n",
			strerror(errno));
		return 3;
	}
	printf("target listening %s:%u seed=0x%" PRIx64 " mr_len=%zu\n",
	       t.addr, t.port, t.seed, t.ml);
	fflush(stdout);
	ctl = ctl_accept(t.addr, t.ctl_port);
	if (ctl < 0) {
		fprintf(stderr, "fuzz_target: control: %s\n", strerror(errno));
		return 3;
	}
	while (!ctl_line(ctl, line, sizeof(line))) {
		char host[64], rev[8], p2p[8], rtr[32], crc[8];
		unsigned long n;
		unsigned int port;

		if (!strcmp(line, "q"))
			break;
		if (parse_reads(&t, line)) {
			fprintf(stderr, "fuzz_target: bad rd= in '%s'\n", line);
			break;
		}
		if (sscanf(line, "a %lu", &n) == 1) {
			one(&t, ctl, &l, n, NULL, 0);
		} else if (sscanf(line, "c %lu %63s %u %7s %7s %31s %7s", &n,
				  host, &port, rev, p2p, rtr, crc) == 7) {
			set_param("mpa_rev", rev);
			set_param("mpa_p2p", p2p);
			set_param("mpa_rtr_offer", rtr);
			set_param("mpa_crc", crc);
			one(&t, ctl, NULL, n, host, port);
		} else {
			fprintf(stderr, "fuzz_target: bad control line '%s'\n",
				line);
			break;
		}
	}
	printf("target done connections=%d bad=%d\n", t.nconn, t.nbad);
	for (i = 0; i < NREG; i++)
		ibv_dereg_mr(t.mr[i]);
	ibv_dereg_mr(t.rmr);
	ibv_dealloc_pd(t.pd);
	ibv_dealloc_pd(t.pd2);
	ru_listener_close(&l);
	return t.nbad ? 1 : 0;
}
