// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * faults_traffic - sustained mixed traffic with every result verified, for
 * the suite faults (network faults, resets, a peer killed or unloaded).
 *
 *   faults_traffic -s [-a ADDR] [-p PORT] [-t SECS] [-n CONNS] [-B MS]
 *   faults_traffic -c ADDR [-b SRC] [-p PORT] [-t SECS] [-w WINDOW] [-r]
 *                  [-R RETRY_MS] [-B MS] [-k] [-E] [-Q]
 *
 * The server (-s) listens on ADDR:PORT (default SIWX_ADDR0, 7471) and
 * serves connections one after another until SIGTERM/SIGINT, -n
 * connections or -t seconds. It hands its memory to the client in the
 * accept's private data: a Write area (NWSLOT slots of WSLOT bytes), a
 * Write-with-immediate area (NCRED slots of ISLOT bytes), Atomic Write
 * words, the atomic counter (only the client changes it) and the credit
 * word (how many receive-consuming messages the server has checked,
 * which the client reads by RDMA Read to never overrun the receive queue:
 * iWARP has no RNR retry). The memory stays across the connections of
 * one server run (a random instance id in the private data tells the
 * client when it talks to a new run, whose counter starts at 0).
 *
 * The client (-c) keeps WINDOW (32) work requests outstanding, all
 * signaled, all posted through ibv_qp_ex, cycling through:
 *   Send (consumes a receive; the payload carries the connection's
 *     message number, checked by the server in arrival order: every one
 *     must arrive, in order, with its pattern; siw refuses Send with
 *     immediate, EOPNOTSUPP, suite imm);
 *   RDMA Write of a Write slot, then an RDMA Read of it (compared);
 *   RDMA Write, RDMA Flush (global, range) of it, RDMA Read (compared);
 *   Write with immediate to the slot of its message number (the server
 *     checks the slot when the immediate arrives);
 *   FetchAdd, CmpSwap (a matching and a failing compare) on the counter:
 *     the value returned must be the model's (atomics execute in order);
 *   Atomic Write of a word, then an RDMA Read of it (compared);
 *   RDMA Read of the credit word.
 * Patterns: every 8-byte word of a Write slot, a Send or an Atomic Write
 * is (seq, hash(seq, slot, word)), seq the WR's sequence number (0 is
 * the initial all-zero memory), so any word tells which write it is of.
 *
 * On a connection error (a completion in error or a DISCONNECTED event)
 * the client and the server wait for every outstanding WR to complete
 * (flushed with an error) within -B MS (default 60000) and print the time
 * from the first error to the last completion and from the last good
 * completion to it; an outstanding WR not flushed within the bound is an
 * "unflushed" failure. The client reconnects with -r (retrying for -R
 * ms, default 60000) while time remains, resynchronising the counter
 * model by a Read (the value must be one that a prefix of the atomics in
 * flight leaves). A successfully completed Read, atomic or received
 * message that is not what was written is a verify error, whatever
 * happened to the connection.
 *
 * The server checks its memory after each connection ended: every word
 * of the Write, Write-with-immediate and Atomic Write areas must be a
 * word some write of the client wrote (its hash matches its sequence
 * number) or, where a Write in flight was cut at a byte, a byte-wise mix
 * of the two neighbouring words' writes: a corrupted FPDU that was
 * placed is neither ("placed_corrupt", the MPA CRC must be checked
 * before placement). After the first connection of a run ended (its QP in
 * ERR, every receive flushed) it posts one more receive, which must
 * complete as flushed within 2 s (late_posted, late_unflushed).
 *
 * Output: "# " lines, and at the end one line
 *   RESULT role=... key=value ...
 * With -E (suite failinject) a connect that fails in any step (an
 * injected allocation failure may fail the CQ, the QP, the MR, the
 * connection itself) is retried too, for RETRY_MS, and counted
 * (connect_errors).
 *
 * With -Q (the silent-peer case of suite faults) the client posts only
 * RDMA Reads of whole Write slots, which must read back zero (a server
 * run that only served -Q clients never had its Write area written):
 * once its Read Requests are acknowledged it has nothing in flight: it
 * only waits for the server, and TCP alone never notices it went silent.
 *
 * Exit 0: no verify error, no placed corruption, nothing unflushed (the
 * late receive is only counted); with
 * -k (client) connection errors are failures too (the netem cases).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rdma_util.h"
#include "../flush/flush_common.h"

#if !HAVE_FLUSH_API
int main(void)
{
	printf("# faults_traffic needs rdma-core with ibv_wr_flush (siwx's)\n");
	return 4;
}
#else

#define NWSLOT		32		/* Write slots */
#define WSLOT		4096
#define NCRED		16		/* receives / Write-with-imm slots */
#define ISLOT		1024
#define NAW		16		/* Atomic Write words */
#define MAXMSG		2048		/* largest Send */

/* the server's memory, offsets */
#define OFF_W		0
#define OFF_I		(OFF_W + NWSLOT * WSLOT)
#define OFF_AW		(OFF_I + NCRED * ISLOT)
#define OFF_CNT		(OFF_AW + NAW * 8)
#define OFF_CRED	(OFF_CNT + 8)
#define MEMLEN		(OFF_CRED + 64)
/* pattern slot ids (Write slots are 0..NWSLOT-1) */
#define SL_IMM(i)	(0x100 + (i))
#define SL_AW(i)	(0x200 + (i))
#define SL_SEND		0x300

#define ACC_SRV (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |	\
		 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |	\
		 IBV_ACCESS_FLUSH_GLOBAL)
#define ACC_CLI (IBV_ACCESS_LOCAL_WRITE)

struct info {			/* the accept's private data */
	uint32_t magic;
	uint32_t rkey;
	uint64_t addr;
	uint64_t flush_ok;	/* the device has Flush and Atomic Write */
	uint64_t instance;	/* the server run's (its memory's) random id */
};
#define INFO_MAGIC	0x66617531u

static volatile sig_atomic_t stop;
static void on_signal(int sig) { stop = 1; }

static uint64_t bound_ms = 60000;

/* ---- patterns ------------------------------------------------------- */

static uint32_t hash32(uint64_t seq, uint32_t slot, uint32_t idx)
{
	uint64_t z = seq * 0x9e3779b97f4a7c15ull + ((uint64_t)slot << 32 | idx);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return (uint32_t)(z ^ (z >> 31));
}

/* the word idx of slot written by seq (seq 0: the initial zero) */
static uint64_t pword(uint32_t seq, uint32_t slot, uint32_t idx)
{
	if (!seq)
		return 0;
	return (uint64_t)seq | (uint64_t)hash32(seq, slot, idx) << 32;
}

static void pfill(void *p, size_t len, uint32_t seq, uint32_t slot)
{
	size_t i;

	for (i = 0; i < len / 8; i++)
		fl_st64((uint8_t *)p + 8 * i, pword(seq, slot, (uint32_t)i));
}

/* first word of p[0, len) that is not seq's, or -1 */
static long pcheck(const void *p, size_t len, uint32_t seq, uint32_t slot)
{
	size_t i;

	for (i = 0; i < len / 8; i++)
		if (fl_ld64((const uint8_t *)p + 8 * i) != pword(seq, slot, (uint32_t)i))
			return (long)i;
	return -1;
}

static int word_valid(uint64_t w, uint32_t slot, uint32_t idx)
{
	return w == pword((uint32_t)w, slot, idx);
}

/* w a byte-wise mix of the words of seqs a and b */
static int word_mix(uint64_t w, uint32_t a, uint32_t b, uint32_t slot,
		    uint32_t idx)
{
	uint64_t wa = pword(a, slot, idx), wb = pword(b, slot, idx);
	int k;

	for (k = 0; k < 8; k++) {
		uint8_t x = (uint8_t)(w >> 8 * k);

		if (x != (uint8_t)(wa >> 8 * k) && x != (uint8_t)(wb >> 8 * k))
			return 0;
	}
	return 1;
}

/*
 * The never-placed check of an area of nslot slots of len bytes: every
 * word valid, or a mix of its valid neighbours' writes. Returns the
 * number of bad words (the first few printed).
 */
static long check_area(const uint8_t *base, int nslot, size_t len,
		       uint32_t slot0, const char *what)
{
	long bad = 0;
	int s;

	for (s = 0; s < nslot; s++) {
		const uint8_t *p = base + (size_t)s * len;
		uint32_t n = (uint32_t)(len / 8), i, slot = slot0 + (uint32_t)s;

		for (i = 0; i < n; i++) {
			uint64_t w = fl_ld64(p + 8 * i);
			uint32_t a = 0, b = 0, j;

			if (word_valid(w, slot, i))
				continue;
			for (j = i; j-- > 0;)
				if (word_valid(fl_ld64(p + 8 * j), slot, j)) {
					a = (uint32_t)fl_ld64(p + 8 * j);
					break;
				}
			for (j = i + 1; j < n; j++)
				if (word_valid(fl_ld64(p + 8 * j), slot, j)) {
					b = (uint32_t)fl_ld64(p + 8 * j);
					break;
				}
			if (word_mix(w, a, b, slot, i))
				continue;
			if (bad++ < 5)
				printf("# placed_corrupt: %s slot %d word %u = 0x%016llx: "
				       "no write's (neighbours' seqs %u, %u)\n",
				       what, s, i, (unsigned long long)w, a, b);
		}
	}
	return bad;
}

static const char *st(enum ibv_wc_status s) { return ibv_wc_status_str(s); }

/* ---- server --------------------------------------------------------- */

struct srv {
	uint8_t *mem;			/* MEMLEN, lives across connections */
	struct ibv_mr *mr;
	struct ru_buf rx;		/* NCRED receives of MAXMSG */
	int flush_ok;
	uint64_t instance;
	/* totals */
	long conns, msgs, verify_errors, placed_corrupt, unflushed, errors;
	long late_posted, late_unflushed;
	/* receives reposted while the QP already was in ERR (a race) */
	long race_posted, race_unflushed;
	uint64_t max_flush_ms;
};

static int srv_on_qp(struct ru_ep *e, void *arg)
{
	struct srv *S = arg;
	struct info in = { .magic = INFO_MAGIC };
	int i, rc;

	S->mr = ibv_reg_mr(e->pd, S->mem, MEMLEN, ACC_SRV);
	if (!S->mr && errno == EINVAL) {	/* no Flush: upstream siw */
		S->flush_ok = 0;
		S->mr = ibv_reg_mr(e->pd, S->mem, MEMLEN,
				   ACC_SRV & ~IBV_ACCESS_FLUSH_GLOBAL);
	}
	if (!S->mr)
		return ru_fail(errno, "ibv_reg_mr: %s", strerror(errno));
	rc = ru_buf_alloc(&S->rx, e->pd, NCRED * MAXMSG, ACC_CLI);
	if (rc)
		return rc;
	for (i = 0; i < NCRED; i++) {
		rc = ru_post_recv(e, &S->rx, (size_t)i * MAXMSG, MAXMSG, i);
		if (rc)
			return rc;
	}
	in.rkey = S->mr->rkey;
	in.addr = (uintptr_t)S->mem;
	in.flush_ok = S->flush_ok;
	in.instance = S->instance;
	memcpy(e->pdata, &in, sizeof(in));
	return 0;
}

static void srv_on_close(struct ru_ep *e, void *arg)
{
	struct srv *S = arg;

	if (S->mr)
		ibv_dereg_mr(S->mr);
	S->mr = NULL;
	ru_buf_free(&S->rx);
}

static volatile uint64_t *cred_word(struct srv *S)
{
	return (volatile uint64_t *)(S->mem + OFF_CRED);
}

/* one received message, number sn expected: 0 good, else a verify error */
static int srv_check_msg(struct srv *S, const struct ibv_wc *wc, uint32_t sn)
{
	const uint8_t *buf = S->rx.addr + wc->wr_id * MAXMSG;
	long at;

	if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
		uint32_t imm = ntohl(wc->imm_data);

		if (!(wc->wc_flags & IBV_WC_WITH_IMM) || imm != (0x80000000u | sn)) {
			printf("# verify: Write with immediate 0x%x, expected 0x%x\n",
			       imm, 0x80000000u | sn);
			return 1;
		}
		at = pcheck(S->mem + OFF_I + (size_t)(sn % NCRED) * ISLOT, ISLOT,
			    sn, SL_IMM(sn % NCRED));
		if (at >= 0) {
			printf("# verify: Write with immediate %u: slot word %ld wrong\n",
			       sn, at);
			return 1;
		}
		return 0;
	}
	if (wc->opcode != IBV_WC_RECV) {
		printf("# verify: receive opcode %d\n", wc->opcode);
		return 1;
	}
	if (wc->byte_len < 8 || wc->byte_len % 8 || wc->byte_len > MAXMSG) {
		printf("# verify: Send %u of %u bytes\n", sn, wc->byte_len);
		return 1;
	}
	if ((uint32_t)fl_ld64(buf) != sn) {
		printf("# verify: Send number %u arrived, expected %u\n",
		       (uint32_t)fl_ld64(buf), sn);
		return 1;
	}
	at = pcheck(buf, wc->byte_len, sn, SL_SEND);
	if (at >= 0) {
		printf("# verify: Send %u: word %ld wrong\n", sn, at);
		return 1;
	}
	if (wc->wc_flags & IBV_WC_WITH_IMM && ntohl(wc->imm_data) != sn) {
		printf("# verify: Send %u with immediate 0x%x\n", sn,
		       ntohl(wc->imm_data));
		return 1;
	}
	return 0;
}

/*
 * A receive posted to the QP once it is in the error state (every earlier
 * receive flushed): it must complete with "flushed" too (IB spec: a WR
 * posted to a QP in Error completes with a flush error). Counted in
 * late_posted / late_unflushed; after the first connection of a run.
 */
static void late_recv(struct srv *S, struct ru_ep *e)
{
	struct ibv_wc wc;
	int st = ru_wait_qp_state(e->qp, IBV_QPS_ERR, 2000), rc;

	if (st) {
		printf("# server: QP in state %s, not ERR, after the connection ended\n",
		       ru_qp_state_str(ru_qp_state(e->qp)));
		return;
	}
	S->late_posted++;
	rc = ru_post_recv(e, &S->rx, 0, MAXMSG, 999);
	if (rc) {
		/* refused is not flushed: the IB semantics is a flush completion */
		S->late_unflushed++;
		printf("# server: a receive posted in ERR refused: %s\n", ru_errmsg());
		return;
	}
	rc = ru_poll(e->rcq, &wc, 2000);
	if (rc != 1) {
		S->late_unflushed++;
		printf("# server: a receive posted to the QP in ERR never completed (2000 ms)\n");
	} else if (wc.status == IBV_WC_SUCCESS) {
		printf("# server: a receive posted to the QP in ERR completed successfully\n");
		S->late_unflushed++;
	}
}

static int server(const char *addr, uint16_t port, long maxconns,
		  long secs)
{
	struct srv S = { .flush_ok = 1 };
	struct ru_listener l = { 0 };
	uint64_t t_end = secs ? ru_now_ms() + 1000ull * secs : 0;
	int rc;

	S.instance = (ru_random_seed() ^ ru_now_ms() ^ (uint64_t)getpid() << 32) | 1;
	if (posix_memalign((void **)&S.mem, 4096, MEMLEN))
		return 1;
	memset(S.mem, 0, MEMLEN);
	rc = ru_listen(&l, addr, port, 4);
	if (rc) {
		printf("# listen on %s:%u: %s\n", addr, port, ru_errmsg());
		return 1;
	}
	printf("# server listening on %s:%u\n", addr, l.port);
	while (!stop && (!maxconns || S.conns < maxconns) &&
	       (!t_end || ru_now_ms() < t_end)) {
		struct ru_ep e = { 0 };
		struct ru_caps caps;
		struct info zero = { 0 };
		uint32_t sn = 1;
		long msgs = 0, flushed = 0, bad;
		int outstanding = NCRED, err = 0;
		uint64_t t0, t_err = 0, t_ok = 0, t_last = 0;
		uint64_t posted_ms[NCRED];	/* 0: completed */
		/* posted when the QP already reported ERR (see below) */
		char posted_in_err[NCRED];
		enum ibv_wc_status first = IBV_WC_SUCCESS;

		ru_caps_default(&caps);
		caps.max_recv_wr = NCRED + 2;
		caps.initiator_depth = 16;
		caps.responder_resources = 16;
		caps.on_qp = srv_on_qp;
		caps.on_qp_arg = &S;
		caps.on_close = srv_on_close;
		caps.on_close_arg = &S;
		caps.private_data = &zero;
		caps.private_data_len = sizeof(zero);
		*cred_word(&S) = 0;
		rc = ru_accept(&l, &e, &caps, 1000);
		if (rc) {
			if (e.id)
				printf("# accept failed: %s\n", ru_errmsg());
			ru_ep_close(&e);
			continue;
		}
		S.conns++;
		t0 = t_ok = ru_now_ms();
		for (int k = 0; k < NCRED; k++) {
			posted_ms[k] = t0;
			posted_in_err[k] = 0;
		}
		printf("# server: connection %ld established\n", S.conns);
		while (outstanding > 0) {
			struct ibv_wc wc;
			int n = ibv_poll_cq(e.rcq, 1, &wc);
			uint64_t now = ru_now_ms();

			if (n < 0) {
				printf("# server: ibv_poll_cq %d\n", n);
				break;
			}
			if (n == 0) {
				if (!err) {
					ru_ep_pump_events(&e);
					if (e.disconnected || stop) {
						err = 1;
						t_err = now;
						if (stop)
							ru_ep_disconnect(&e);
					}
				} else if (now - t_err > bound_ms) {
					printf("# server: %d receives not flushed %llu ms after the connection ended\n",
					       outstanding,
					       (unsigned long long)(now - t_err));
					for (int k = 0; k < NCRED; k++) {
						if (!posted_ms[k])
							continue;
						printf("# server: receive %d, never completed, "
						       "was posted %lld ms before the server saw the error, "
						       "the QP %s\n",
						       k, (long long)(t_err - posted_ms[k]),
						       posted_in_err[k] ?
						       "already in ERR then (siw had flushed the queue: a late receive)" :
						       "not in ERR then");
						/* both are failures (kernel patch 0033) */
						S.race_unflushed += posted_in_err[k];
						S.unflushed++;
					}
					break;
				}
				usleep(50);
				continue;
			}
			if (wc.wr_id < NCRED)
				posted_ms[wc.wr_id] = 0;
			if (wc.status != IBV_WC_SUCCESS) {
				outstanding--;
				flushed++;
				t_last = now;
				if (!err) {
					err = 1;
					t_err = now;
					first = wc.status;
				} else if (first == IBV_WC_SUCCESS)
					first = wc.status;
				continue;
			}
			t_ok = now;
			if (err) {
				/* a completion that succeeded after the error: still checked */
				printf("# server: receive succeeded after the connection error\n");
			}
			msgs++;
			if (srv_check_msg(&S, &wc, sn))
				S.verify_errors++;
			sn++;
			outstanding--;
			if (!err && !ru_post_recv(&e, &S.rx, wc.wr_id * MAXMSG,
						  MAXMSG, wc.wr_id)) {
				outstanding++;
				posted_ms[wc.wr_id] = ru_now_ms();
				/*
				 * Asked after the post: a QP not in ERR yet
				 * flushes this receive when it gets there; one
				 * already in ERR has flushed its queue, and
				 * before kernel patch 0033 siw never completed
				 * a receive posted then (race_posted,
				 * race_unflushed: told apart in the report).
				 */
				posted_in_err[wc.wr_id] =
					ru_qp_state(e.qp) == IBV_QPS_ERR;
				S.race_posted += posted_in_err[wc.wr_id];
			}
			*cred_word(&S) = sn - 1;
		}
		if (!t_last)
			t_last = ru_now_ms();
		ru_ep_pump_events(&e);
		if (!e.disconnected)
			ru_ep_disconnect(&e);
		if (!outstanding && !S.late_posted)	/* once a server run */
			late_recv(&S, &e);
		ru_ep_close(&e);
		bad = check_area(S.mem + OFF_W, NWSLOT, WSLOT, 0, "Write area") +
		      check_area(S.mem + OFF_I, NCRED, ISLOT, SL_IMM(0),
				 "Write-with-immediate area") +
		      check_area(S.mem + OFF_AW, NAW, 8, SL_AW(0),
				 "Atomic Write words");
		S.placed_corrupt += bad;
		S.msgs += msgs;
		if (first != IBV_WC_SUCCESS && first != IBV_WC_WR_FLUSH_ERR)
			S.errors++;
		if (t_last - t_err > S.max_flush_ms && t_err)
			S.max_flush_ms = t_last - t_err;
		printf("# server: connection %ld ended after %llu ms: %ld messages checked, "
		       "%ld receives completed in error (first %s) %llu ms after the end "
		       "(%llu ms after the last good one), memory %s\n",
		       S.conns, (unsigned long long)(t_err - t0), msgs, flushed,
		       st(first), (unsigned long long)(t_last - t_err),
		       (unsigned long long)(t_last - t_ok),
		       bad ? "CORRUPT" : "clean");
	}
	ru_listener_close(&l);
	printf("RESULT role=server conns=%ld msgs=%ld verify_errors=%ld "
	       "placed_corrupt=%ld unflushed=%ld max_flush_ms=%llu "
	       "late_posted=%ld late_unflushed=%ld race_posted=%ld race_unflushed=%ld\n",
	       S.conns, S.msgs, S.verify_errors, S.placed_corrupt, S.unflushed,
	       (unsigned long long)S.max_flush_ms, S.late_posted,
	       S.late_unflushed, S.race_posted, S.race_unflushed);
	free(S.mem);
	return S.verify_errors || S.placed_corrupt || S.unflushed ? 1 : 0;
}

/* ---- client --------------------------------------------------------- */

enum kind { K_SEND, K_WRITE, K_WRITEIMM, K_READ, K_FLUSH,
	    K_FA, K_CS, K_AW, K_CRED, K_BULK, NKIND };
static const char *const kname[NKIND] = {
	"send", "write", "write_imm", "read", "flush",
	"fetch_add", "cmp_swap", "atomic_write", "credit_read", "bulk_read" };

/* -Q: the client posts only Reads (K_BULK) */
static int reads_only;

struct rec {			/* an outstanding WR */
	int used;
	enum kind kind;
	uint32_t seq, slot;	/* Read: what it must return */
	uint32_t len;
	uint64_t expect;	/* FA/CS: the value returned */
	uint64_t after;		/* FA/CS: the counter after it */
	int wslot;		/* Write slot it holds (-1) */
};

#define MAXWIN	64

struct cli {
	struct ru_ep e;
	struct ru_buf loc;	/* MAXWIN regions of WSLOT */
	struct info in;
	struct rec rec[MAXWIN];
	int nout;
	uint64_t next_wr;
	uint32_t seq;		/* global, across connections */
	uint32_t sn;		/* messages of this connection */
	uint64_t credit;	/* the server's credit word, last read */
	int cred_pending;
	uint64_t counter;	/* the model of the counter */
	uint64_t cand[2 * MAXWIN + 1];	/* after an error: what it may be */
	int ncand;
	uint64_t instance;	/* the server's the candidates are of */
	int wbusy[NWSLOT];
	uint64_t rng;
	int step;
	/* totals */
	long cnt[NKIND], verify_errors, conn_errors, unflushed, bytes;
	uint64_t max_flush_ms, max_stall_ms;
};

static struct ibv_qp_ex *QX(struct cli *C) { return C->e.qpx; }

static int free_rec(struct cli *C)
{
	int i;

	for (i = 0; i < MAXWIN; i++)
		if (!C->rec[i].used)
			return i;
	return -1;
}

static uint8_t *lbuf(struct cli *C, int r)
{
	return C->loc.addr + (size_t)r * WSLOT;
}

static uint64_t raddr(struct cli *C, size_t off)
{
	return C->in.addr + off;
}

/* post one WR for record r (filled); 0 or an errno */
static int post_one(struct cli *C, int r, enum kind k, uint64_t a,
		    uint64_t b, size_t roff, uint32_t len)
{
	struct ibv_qp_ex *q = QX(C);
	uint32_t lkey = C->loc.mr->lkey, rkey = C->in.rkey;
	uint64_t la = (uintptr_t)lbuf(C, r);
	int rc;

	ibv_wr_start(q);
	q->wr_id = (uint64_t)r;
	q->wr_flags = IBV_SEND_SIGNALED;
	switch (k) {
	case K_SEND:
		ibv_wr_send(q);
		ibv_wr_set_sge(q, lkey, la, len);
		break;
	case K_WRITE:
		ibv_wr_rdma_write(q, rkey, raddr(C, roff));
		ibv_wr_set_sge(q, lkey, la, len);
		break;
	case K_WRITEIMM:
		ibv_wr_rdma_write_imm(q, rkey, raddr(C, roff), htonl((uint32_t)a));
		ibv_wr_set_sge(q, lkey, la, len);
		break;
	case K_READ:
	case K_CRED:
	case K_BULK:
		ibv_wr_rdma_read(q, rkey, raddr(C, roff));
		ibv_wr_set_sge(q, lkey, la, len);
		break;
	case K_FLUSH:
		ibv_wr_flush(q, rkey, raddr(C, roff), len, IBV_FLUSH_GLOBAL,
			     IBV_FLUSH_RANGE);
		break;
	case K_FA:
		ibv_wr_atomic_fetch_add(q, rkey, raddr(C, roff), a);
		ibv_wr_set_sge(q, lkey, la, 8);
		break;
	case K_CS:
		ibv_wr_atomic_cmp_swp(q, rkey, raddr(C, roff), a, b);
		ibv_wr_set_sge(q, lkey, la, 8);
		break;
	case K_AW:
		ibv_wr_atomic_write(q, rkey, raddr(C, roff), &a);
		break;
	default:
		break;
	}
	rc = ibv_wr_complete(q);
	rc = rc < 0 ? -rc : rc;
	if (rc) {
		printf("# client: posting %s failed: %s\n", kname[k], strerror(rc));
		return rc;
	}
	C->rec[r].used = 1;
	C->rec[r].kind = k;
	C->nout++;
	C->next_wr++;
	return 0;
}

/*
 * Post the next group of WRs if the window has room for it; returns the
 * number posted (0: no room or waiting for credit), <0 on a post error.
 */
static int post_group(struct cli *C, int window)
{
	int room = window - C->nout, r, r2, r3, ws, rc;
	uint32_t len, seq;
	int g = C->step % 10;

	if (room < 3)
		return 0;
	if (reads_only) {
		/*
		 * A whole Write slot of a server that only -Q clients used:
		 * never written, so zero; the sink is 0xff until placed
		 */
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		memset(lbuf(C, r), 0xff, WSLOT);
		ws = C->step++ % NWSLOT;
		rc = post_one(C, r, K_BULK, 0, 0, OFF_W + (size_t)ws * WSLOT,
			      WSLOT);
		C->bytes += WSLOT;
		return rc ? -rc : 1;
	}
	/* receive-consuming messages: only with credit */
	if ((g == 0 || g == 1 || g == 3) &&
	    C->sn - C->credit >= NCRED) {
		if (C->cred_pending)
			return 0;
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		rc = post_one(C, r, K_CRED, 0, 0, OFF_CRED, 8);
		if (!rc)
			C->cred_pending = 1;
		return rc ? -rc : 1;
	}
	C->step++;
	switch (g) {
	case 0:		/* Send */
	case 1:		/* Send (siw has no Send with immediate) */
		r = free_rec(C);
		seq = ++C->sn;
		len = 8 * (1 + ru_rand(&C->rng, MAXMSG / 8));
		pfill(lbuf(C, r), len, seq, SL_SEND);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		rc = post_one(C, r, K_SEND, seq, 0, 0, len);
		C->bytes += len;
		return rc ? -rc : 1;
	case 3:		/* Write with immediate */
		r = free_rec(C);
		seq = ++C->sn;
		pfill(lbuf(C, r), ISLOT, seq, SL_IMM(seq % NCRED));
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		rc = post_one(C, r, K_WRITEIMM, 0x80000000u | seq, 0,
			      OFF_I + (size_t)(seq % NCRED) * ISLOT, ISLOT);
		C->bytes += ISLOT;
		return rc ? -rc : 1;
	case 2:		/* Write, Read */
	case 5:		/* Write, Flush, Read */
	case 7:		/* Write, Read */
		for (ws = 0; ws < NWSLOT && C->wbusy[ws]; ws++)
			;
		if (ws == NWSLOT || (g == 5 && !C->in.flush_ok))
			return 0;
		seq = ++C->seq;
		len = 8 * (1 + ru_rand(&C->rng, WSLOT / 8));
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		pfill(lbuf(C, r), len, seq, (uint32_t)ws);
		rc = post_one(C, r, K_WRITE, 0, 0, OFF_W + (size_t)ws * WSLOT, len);
		if (rc)
			return -rc;
		C->bytes += len;
		if (g == 5) {
			r3 = free_rec(C);
			memset(&C->rec[r3], 0, sizeof(C->rec[r3]));
			rc = post_one(C, r3, K_FLUSH, 0, 0,
				      OFF_W + (size_t)ws * WSLOT, len);
			if (rc)
				return -rc;
		}
		r2 = free_rec(C);
		memset(&C->rec[r2], 0, sizeof(C->rec[r2]));
		C->rec[r2].seq = seq;
		C->rec[r2].slot = (uint32_t)ws;
		C->rec[r2].len = len;
		C->rec[r2].wslot = ws + 1;
		memset(lbuf(C, r2), 0xa5, len);
		rc = post_one(C, r2, K_READ, 0, 0, OFF_W + (size_t)ws * WSLOT, len);
		if (rc)
			return -rc;
		C->wbusy[ws] = 1;
		C->bytes += len;
		return 2;
	case 4:		/* FetchAdd */
	case 6:		/* CmpSwap, matching or not */
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		C->rec[r].expect = C->counter;
		if (g == 4) {
			uint64_t add = 1 + ru_rand(&C->rng, 1000);

			C->counter += add;
			C->rec[r].after = C->counter;
			fl_st64(lbuf(C, r), ~0ull);
			rc = post_one(C, r, K_FA, add, 0, OFF_CNT, 8);
		} else {
			int match = ru_rand(&C->rng, 2);
			uint64_t cmp = match ? C->counter : C->counter + 1;
			uint64_t swp = C->counter + 1 + ru_rand(&C->rng, 1000);

			if (match)
				C->counter = swp;
			C->rec[r].after = C->counter;
			fl_st64(lbuf(C, r), ~0ull);
			rc = post_one(C, r, K_CS, cmp, swp, OFF_CNT, 8);
		}
		C->rec[r].kind = g == 4 ? K_FA : K_CS;
		return rc ? -rc : 1;
	case 8:		/* Atomic Write, Read */
		if (!C->in.flush_ok)
			return 0;
		seq = ++C->seq;
		ws = (int)(seq % NAW);
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		rc = post_one(C, r, K_AW, pword(seq, SL_AW(ws), 0), 0,
			      OFF_AW + (size_t)ws * 8, 8);
		if (rc)
			return -rc;
		r2 = free_rec(C);
		memset(&C->rec[r2], 0, sizeof(C->rec[r2]));
		C->rec[r2].seq = seq;
		C->rec[r2].slot = SL_AW(ws);
		C->rec[r2].len = 8;
		fl_st64(lbuf(C, r2), ~0ull);
		rc = post_one(C, r2, K_READ, 0, 0, OFF_AW + (size_t)ws * 8, 8);
		return rc ? -rc : 2;
	default:	/* 9: a Read of the credit word */
		if (C->cred_pending)
			return 0;
		r = free_rec(C);
		memset(&C->rec[r], 0, sizeof(C->rec[r]));
		rc = post_one(C, r, K_CRED, 0, 0, OFF_CRED, 8);
		if (!rc)
			C->cred_pending = 1;
		return rc ? -rc : 1;
	}
}

/* account one successful completion of record r; verify */
static void complete_ok(struct cli *C, int r, const struct ru_wc *w)
{
	struct rec *R = &C->rec[r];
	uint64_t v;

	C->cnt[R->kind]++;
	switch (R->kind) {
	case K_READ:
		if (R->slot >= SL_AW(0)) {
			/* the Atomic Write's word: the Read is ordered after it */
			v = fl_ld64(lbuf(C, r));
			if (v != pword(R->seq, R->slot, 0)) {
				C->verify_errors++;
				printf("# verify: Read of Atomic Write %u: 0x%llx\n",
				       R->seq, (unsigned long long)v);
			}
		} else {
			long at = pcheck(lbuf(C, r), R->len, R->seq, R->slot);

			if (at >= 0) {
				C->verify_errors++;
				printf("# verify: Read back of Write %u (slot %u, %u bytes): word %ld is 0x%016llx\n",
				       R->seq, R->slot, R->len, at,
				       (unsigned long long)fl_ld64(lbuf(C, r) + 8 * at));
			}
		}
		break;
	case K_FA:
	case K_CS:
		v = fl_ld64(lbuf(C, r));
		if (v != R->expect) {
			C->verify_errors++;
			printf("# verify: %s returned %llu, expected %llu\n",
			       kname[R->kind], (unsigned long long)v,
			       (unsigned long long)R->expect);
		}
		break;
	case K_BULK: {
		const uint8_t *b = lbuf(C, r);
		size_t at;

		for (at = 0; at < WSLOT && !b[at]; at++)
			;
		if (at < WSLOT) {
			C->verify_errors++;
			printf("# verify: bulk Read: byte %zu is 0x%02x, not 0\n",
			       at, b[at]);
		}
		break;
	}
	case K_CRED:
		v = fl_ld64(lbuf(C, r));
		if (v > C->sn) {
			C->verify_errors++;
			printf("# verify: credit %llu beyond %u messages sent\n",
			       (unsigned long long)v, C->sn);
		} else if (v > C->credit)
			C->credit = v;
		break;
	default:
		break;
	}
	(void)w;
}

static void release(struct cli *C, int r)
{
	struct rec *R = &C->rec[r];

	if (R->kind == K_READ && R->wslot)
		C->wbusy[R->wslot - 1] = 0;
	if (R->kind == K_CRED)
		C->cred_pending = 0;
	R->used = 0;
	C->nout--;
}

static int cli_on_qp(struct ru_ep *e, void *arg)
{
	struct cli *C = arg;

	ru_buf_free(&C->loc);
	return ru_buf_alloc(&C->loc, e->pd, MAXWIN * WSLOT, ACC_CLI);
}

static void cli_on_close(struct ru_ep *e, void *arg)
{
	ru_buf_free(&((struct cli *)arg)->loc);
}

/* one Read of the counter at the start of a connection */
static int resync(struct cli *C)
{
	struct ru_wc w;
	int rc, i, r = 0, good = 0;

	memset(&C->rec[r], 0, sizeof(C->rec[r]));
	rc = post_one(C, r, K_CRED, 0, 0, OFF_CNT, 8);	/* a plain Read */
	if (rc)
		return ru_fail(rc, "posting the counter Read");
	rc = ru_poll_send(&C->e, &w, (int)bound_ms);
	C->rec[r].used = 0;
	C->nout = 0;
	if (rc != 1 || w.status != IBV_WC_SUCCESS)
		return ru_fail(EIO, "counter Read: %s",
			       rc == 1 ? st(w.status) : "no completion");
	C->counter = fl_ld64(lbuf(C, 0));
	for (i = 0; i < C->ncand; i++)
		good |= C->cand[i] == C->counter;
	if (!good) {
		C->verify_errors++;
		printf("# verify: counter is %llu after the reconnect; "
		       "no prefix of the %d atomics in flight leaves that\n",
		       (unsigned long long)C->counter, C->ncand - 1);
	}
	return 0;
}

/* -E: any failed connect is retried (suite failinject) */
static int retry_any;
static long connect_errors;

static int client(const char *dst, const char *src, uint16_t port, long secs,
		  int window, int reconnect, long retry_ms, int keep)
{
	struct cli C = { 0 };
	/* the time counts from the first connection (a boot's first takes seconds) */
	uint64_t t_start = ru_now_ms(), t_end = UINT64_MAX;
	long conns = 0;
	int rc = 0, fatal = 0;

	C.rng = ru_random_seed();
	if (window > MAXWIN - 4)
		window = MAXWIN - 4;
	while (!stop && ru_now_ms() < t_end && !fatal) {
		struct ru_caps caps;
		uint64_t t0, t_ok, t_err = 0, t_last = 0, now;
		long c0[NKIND], b0 = C.bytes;
		int err = 0, i, k, done = 0, nfail = 0, late_ok = 0;
		uint64_t failed[2 * MAXWIN];
		enum ibv_wc_status first = IBV_WC_SUCCESS;
		const char *why = "";
		struct timespec rt;

		ru_caps_default(&caps);
		caps.max_send_wr = MAXWIN + 8;
		caps.initiator_depth = 16;
		caps.responder_resources = 16;
		caps.send_ops = FL_SEND_OPS | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		caps.on_qp = cli_on_qp;
		caps.on_qp_arg = &C;
		caps.on_close = cli_on_close;
		caps.on_close_arg = &C;
		memset(&C.e, 0, sizeof(C.e));
		rc = ru_connect(&C.e, src, dst, port, &caps, (int)retry_ms);
		t0 = ru_now_ms();
		while (rc && retry_any && !stop && ru_now_ms() - t0 < (uint64_t)retry_ms) {
			printf("# client: connect to %s:%u: %s (retried)\n", dst,
			       port, ru_errmsg());
			connect_errors++;
			ru_ep_close(&C.e);
			memset(&C.e, 0, sizeof(C.e));
			usleep(100 * 1000);
			rc = ru_connect(&C.e, src, dst, port, &caps,
					(int)retry_ms);
		}
		if (rc) {
			printf("# client: connect to %s:%u: %s\n", dst, port,
			       ru_errmsg());
			ru_ep_close(&C.e);
			fatal = 1;
			break;
		}
		conns++;
		if (t_end == UINT64_MAX)
			t_end = ru_now_ms() + 1000ull * secs;
		memcpy(&C.in, C.e.peer.data, sizeof(C.in));
		if (C.e.peer.len < sizeof(C.in) || C.in.magic != INFO_MAGIC) {
			printf("# client: no server info in the accept\n");
			ru_ep_close(&C.e);
			fatal = 1;
			break;
		}
		if (C.in.instance != C.instance) {
			/* a server run of its own memory: the counter is 0 */
			if (C.instance)
				printf("# client: a new server run: its counter starts at 0\n");
			C.instance = C.in.instance;
			C.ncand = 1;
			C.cand[0] = 0;
		}
		C.sn = 0;
		C.credit = 0;
		C.cred_pending = 0;
		C.nout = 0;
		memset(C.rec, 0, sizeof(C.rec));
		memset(C.wbusy, 0, sizeof(C.wbusy));
		rc = resync(&C);
		if (rc) {
			printf("# client: connection %ld: %s\n", conns, ru_errmsg());
			ru_ep_close(&C.e);
			C.conn_errors++;
			if (!reconnect)
				break;
			continue;
		}
		memcpy(c0, C.cnt, sizeof(c0));
		t0 = t_ok = ru_now_ms();
		printf("# client: connection %ld established (flush/atomic write %s)\n",
		       conns, C.in.flush_ok ? "on" : "off");
		for (;;) {
			struct ru_wc w;
			int n;

			now = ru_now_ms();
			if (!err && !done && (stop || now >= t_end)) {
				done = 1;	/* drain, then disconnect */
				/* stopped early: the drain's bound from now */
				if (t_end > now)
					t_end = now;
			}
			if (!err && !done) {
				for (k = 0; k < 4; k++) {
					n = post_group(&C, window);
					if (n < 0) {
						err = 1;
						t_err = now;
						why = "a post failed";
						break;
					}
					if (!n)
						break;
				}
			}
			/*
			 * Nothing outstanding: the end once draining or after
			 * an error (post_group() may skip a group and post
			 * nothing, which is no reason to stop)
			 */
			if (!C.nout && (done || err))
				break;
			n = ru_poll_send(&C.e, &w, 0);
			if (n < 0) {
				printf("# client: poll error\n");
				fatal = 1;
				break;
			}
			if (n == 0) {
				usleep(20);
				if (err && now - t_err > bound_ms) {
					printf("# client: %d WRs not flushed %llu ms after the error\n",
					       C.nout, (unsigned long long)(now - t_err));
					C.unflushed += C.nout;
					break;
				}
				if (!err) {
					ru_ep_pump_events(&C.e);
					if (C.e.disconnected) {
						err = 1;
						t_err = now;
						why = "DISCONNECTED event";
					}
				}
				if (done && !err && now - t_end > bound_ms) {
					printf("# client: %d WRs not completed %llu ms after the traffic ended\n",
					       C.nout, (unsigned long long)(now - t_end));
					C.unflushed += C.nout;
					break;
				}
				continue;
			}
			if (w.wr_id >= MAXWIN || !C.rec[w.wr_id].used) {
				printf("# client: completion of unknown wr_id %llu\n",
				       (unsigned long long)w.wr_id);
				C.verify_errors++;
				continue;
			}
			i = (int)w.wr_id;
			if (w.status == IBV_WC_SUCCESS) {
				t_ok = now;
				if (err)
					late_ok++;
				complete_ok(&C, i, &w);
			} else {
				t_last = now;
				if (!err) {
					err = 1;
					t_err = now;
					why = "a completion in error";
				}
				if (first == IBV_WC_SUCCESS)
					first = w.status;
				if ((C.rec[i].kind == K_FA || C.rec[i].kind == K_CS) &&
				    nfail + 2 <= 2 * MAXWIN) {
					/* may or may not have executed */
					failed[nfail++] = C.rec[i].expect;
					failed[nfail++] = C.rec[i].after;
				}
			}
			release(&C, i);
		}
		if (!t_last)
			t_last = ru_now_ms();
		if (err) {
			C.conn_errors++;
			if (t_last - t_err > C.max_flush_ms)
				C.max_flush_ms = t_last - t_err;
			if (t_last - t_ok > C.max_stall_ms)
				C.max_stall_ms = t_last - t_ok;
			printf("# client: connection %ld: error after %llu ms (%s, first status %s); "
			       "outstanding WRs completed in error %llu ms after it, "
			       "%llu ms after the last good completion\n",
			       conns, (unsigned long long)(t_err - t0), why, st(first),
			       (unsigned long long)(t_last - t_err),
			       (unsigned long long)(t_last - t_ok));
			/* the wall clock of the error, for a script's own timing */
			clock_gettime(CLOCK_REALTIME, &rt);
			printf("# client: connection %ld: first error at realtime %llu ms\n",
			       conns, (unsigned long long)rt.tv_sec * 1000 +
			       (unsigned long long)rt.tv_nsec / 1000000 -
			       (ru_now_ms() - t_err));
			if (late_ok)
				printf("# client: connection %ld: %d completions succeeded after the "
				       "first error (siw's send queue completes out of posting order)\n",
				       conns, late_ok);
		}
		now = ru_now_ms();
		printf("# client: connection %ld: %llu ms, %.2f MB/s, ops:", conns,
		       (unsigned long long)(now - t0),
		       (double)(C.bytes - b0) / 1000.0 / (double)(now - t0 + 1));
		for (k = 0; k < NKIND; k++)
			printf(" %s %ld", kname[k], C.cnt[k] - c0[k]);
		printf("\n");
		/* the counter's candidates for the next connection */
		C.ncand = 0;
		C.cand[C.ncand++] = C.counter;
		/*
		 * Atomics completed in error may have executed or not (they
		 * execute in order: a prefix of them did): the counter may
		 * be the value before or after any of them.
		 */
		for (i = 0; i < nfail; i++)
			C.cand[C.ncand++] = failed[i];
		if (!err) {
			ru_ep_disconnect(&C.e);
			ru_ep_wait_disconnected(&C.e, 5000);
		}
		ru_ep_close(&C.e);
		if (err && !reconnect)
			break;
	}
	rc = C.verify_errors || C.unflushed || fatal || (keep && C.conn_errors);
	printf("RESULT role=client conns=%ld conn_errors=%ld verify_errors=%ld unflushed=%ld "
	       "max_flush_ms=%llu max_stall_ms=%llu bytes=%ld ms=%llu",
	       conns, C.conn_errors, C.verify_errors, C.unflushed,
	       (unsigned long long)C.max_flush_ms,
	       (unsigned long long)C.max_stall_ms, C.bytes,
	       (unsigned long long)(ru_now_ms() - t_start));
	for (int k = 0; k < NKIND; k++)
		printf(" %s=%ld", kname[k], C.cnt[k]);
	printf(" connect_errors=%ld fatal=%d\n", connect_errors, fatal);
	return rc ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *src = NULL;
	long secs = 0, conns = 0, retry = 60000;
	int srv = 0, window = 32, reconnect = 0, keep = 0, opt;
	uint16_t port = 7471;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	while ((opt = getopt(argc, argv, "sc:a:b:p:t:n:w:rR:B:kEQ")) != -1) {
		switch (opt) {
		case 's': srv = 1; break;
		case 'c': addr = optarg; break;
		case 'a': addr = optarg; break;
		case 'b': src = optarg; break;
		case 'p': port = (uint16_t)strtol(optarg, NULL, 0); break;
		case 't': secs = strtol(optarg, NULL, 0); break;
		case 'n': conns = strtol(optarg, NULL, 0); break;
		case 'w': window = (int)strtol(optarg, NULL, 0); break;
		case 'r': reconnect = 1; break;
		case 'R': retry = strtol(optarg, NULL, 0); break;
		case 'B': bound_ms = (uint64_t)strtol(optarg, NULL, 0); break;
		case 'k': keep = 1; break;
		case 'E': retry_any = 1; break;
		case 'Q': reads_only = 1; break;
		default:
			fprintf(stderr, "usage: see the comment at the top of faults_traffic.c\n");
			return 2;
		}
	}
	if (srv)
		return server(addr ? addr : ru_addr0(), port, conns, secs);
	if (!addr) {
		fprintf(stderr, "-s or -c ADDR\n");
		return 2;
	}
	return client(addr, src, port, secs ? secs : 10, window, reconnect,
		      retry, keep);
}
#endif
