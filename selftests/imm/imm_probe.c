// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * imm_probe - one RDMA Write with Immediate between two hosts (pair
 * topology), TAP output.
 *
 *   imm_probe [--server | --client] [--expect refused|accepted|any]
 *             [--port N] [--local ADDR] [--peer ADDR] [--limit-ms N]
 *
 * server  a plain rdma_cm server on LOCAL:PORT: it posts receives before
 *         accepting, then tells the client (one Send) where its 4096-byte
 *         target is, and reports what it sees: the receive completion of
 *         the Immediate Data, or the connection going down.
 * client  connects from LOCAL to PEER:PORT (retrying while the server
 *         boots), posts one RDMA Write with Immediate (4096 bytes) and,
 *         behind it, an RDMA Read of the same bytes, and reports every
 *         completion with its status and time.
 *
 * Expected outcome (Documentation/rfc7306.md, "Capability probing"):
 *   accepted  the peer runs siwx: both complete successfully, the Read
 *             returns the written bytes, the server gets
 *             IBV_WC_RECV_RDMA_WITH_IMM with the immediate and byte_len
 *             4096;
 *   refused   the peer runs upstream siw: it places the write, refuses the
 *             Immediate Data message (opcode 0x8) with a Terminate and
 *             closes: the client must see an error completion (not success,
 *             no hang) within --limit-ms (10000), its QP ends in error. An
 *             iWARP write completes locally once transmitted, so the error
 *             lands on the Read (or on the write itself if the Terminate
 *             overtakes its completion): the probe looks at the first error.
 *   any       only the bound is checked.
 *
 * Defaults come from the pair harness: the role from SIWX_IMM_PROBE_ROLE,
 * else the VM that runs siwx is the client (SIWX_PAIR_ORDER, SIWX_ROLE;
 * with siwx in both VMs, or unknown, VM a serves and VM b probes); the
 * expectation from SIWX_IMM_PROBE_EXPECT, else from the server's module
 * (upstream: refused, siwx: accepted, unknown: any). Addresses from
 * SIWX_LOCAL/SIWX_PEER, port SIWX_IMM_PROBE_PORT (47400).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imm_common.h"

#define LEN		4096
#define NRECV		4
#define MSGSZ		256
/* the server's one message (struct ru_msg): target addr/len/rkey, seed */
#define M_INFO		1

static int tapn;
static int tapfail;

__attribute__((format(printf, 2, 3)))
static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s %d ", ok ? "ok" : "not ok", ++tapn);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	tapfail += !ok;
}

static void fill(uint8_t *p, size_t n, uint64_t seed)
{
	ru_fill(p, n, seed);
}

static __be32 imm_of(uint64_t seed)
{
	return htobe32((uint32_t)(seed ^ (seed >> 32)));
}

struct mem {
	uint8_t *p;
	struct ibv_mr *mr;
};

static int mem_get(struct ibv_pd *pd, size_t len, struct mem *m)
{
	m->p = aligned_alloc(4096, len);
	if (!m->p)
		return ru_fail(ENOMEM, "aligned_alloc");
	memset(m->p, 0, len);
	m->mr = ibv_reg_mr(pd, m->p, len, IM_ACC);
	if (!m->mr)
		return ru_fail(errno, "ibv_reg_mr: %s", strerror(errno));
	return 0;
}

static void mem_put(struct mem *m)
{
	if (m->mr)
		ibv_dereg_mr(m->mr);
	free(m->p);
	memset(m, 0, sizeof(*m));
}

/* receive slots posted before the connection is accepted/established */
static void caps_for(struct ru_caps *caps, struct ru_chan *ch)
{
	ru_caps_default(caps);
	ru_chan_caps(caps, ch, NRECV, MSGSZ, MSGSZ, IM_ACC);
}

/* ---- server -------------------------------------------------------------- */

static int run_server(const char *local, uint16_t port, const char *expect,
		      int limit_ms)
{
	struct ru_listener l;
	struct ru_ep s;
	struct ru_caps cfg;
	struct ru_chan c;
	struct mem tgt;
	struct ru_msg pi;
	struct ru_wc w;
	char buf[200];
	uint64_t seed = ru_random_seed(), t0;
	int rc, got_imm = 0, got_err = 0, placed;
	int connect_ms = (int)ru_env_long("SIWX_IMM_PROBE_CONNECT_MS", 240000);

	memset(&tgt, 0, sizeof(tgt));
	caps_for(&cfg, &c);
	printf("TAP version 13\n1..3\n");
	printf("# imm_probe server on %s:%u, expecting the probe to be %s\n",
	       local, port, expect);
	rc = ru_listen(&l, local, port, 4);
	if (!rc)
		rc = ru_accept_start(&l, &s, &cfg, connect_ms);
	if (!rc)
		rc = ru_ep_wait_established(&s, 30000);
	if (!rc)
		rc = mem_get(s.pd, LEN + RU_GUARD, &tgt);
	tap(!rc, "imm_probe.server.connect");
	if (rc) {
		printf("# %s\n", ru_errmsg());
		tap(0, "imm_probe.server.outcome # no connection");
		tap(0, "imm_probe.server.write_placed # no connection");
		return 1;
	}
	fill(tgt.p, LEN + RU_GUARD, ~seed);
	memset(&pi, 0, sizeof(pi));
	pi.type = M_INFO;
	pi.len = LEN;
	pi.addr = (uintptr_t)tgt.p;
	pi.rkey = tgt.mr->rkey;
	pi.seed = seed;
	usleep(RU_FIRST_SEND_DELAY_US);
	rc = ru_msg_send(&s, &c, &pi, 30000);
	if (!rc)
		printf("# told the client: target 0x%llx rkey 0x%x, seed 0x%llx\n",
		       (unsigned long long)pi.addr, pi.rkey,
		       (unsigned long long)seed);
	else
		printf("# sending the target's address failed: %s\n", ru_errmsg());

	/* what comes back: the immediate, or the connection going down */
	t0 = ru_now_ms();
	while (ru_now_ms() - t0 < (uint64_t)limit_ms + 20000) {
		rc = ru_poll_recv(&s, &w, 200);
		if (rc == 1) {
			printf("# receive after %llu ms: %s\n",
			       (unsigned long long)(ru_now_ms() - t0),
			       ru_wc_str(&w, buf, sizeof(buf)));
			if (w.status != IBV_WC_SUCCESS) {
				got_err = 1;
				continue;
			}
			if (w.opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			    (w.wc_flags & IBV_WC_WITH_IMM) &&
			    w.imm == imm_of(seed) && w.byte_len == LEN)
				got_imm = 1;
			else
				got_imm = -1;
			break;
		}
		ru_ep_pump_events(&s);
		if (s.disconnected || ru_qp_state(s.qp) == IBV_QPS_ERR) {
			got_err = 1;
			/* drain the flushed receives */
			while (ru_poll_recv(&s, &w, 500) == 1)
				printf("# receive: %s\n", ru_wc_str(&w, buf, sizeof(buf)));
			break;
		}
	}
	printf("# server QP %s, connection %s after %llu ms\n",
	       ru_qp_state_str(ru_qp_state(s.qp)),
	       s.disconnected ? "closed" : "open",
	       (unsigned long long)(ru_now_ms() - t0));
	if (!strcmp(expect, "accepted"))
		tap(got_imm == 1, "imm_probe.server.outcome # immediate %s",
		    got_imm == 1 ? "received" : got_imm ? "wrong" : "not received");
	else if (!strcmp(expect, "refused"))
		tap(got_imm == 0 && (got_err || s.disconnected),
		    "imm_probe.server.outcome # %s", got_imm ?
		    "the immediate completed a receive" : got_err ?
		    "connection terminated" : "no error within the bound");
	else
		tap(got_imm >= 0, "imm_probe.server.outcome # %s",
		    got_imm ? "received" : "not received");
	/* "the write's data is placed" in both cases (rfc7306.md) */
	{
		/* the guard is part of ~seed's stream: compare it as such */
		uint8_t ref[RU_GUARD + LEN];

		fill(ref, LEN + RU_GUARD, ~seed);
		placed = ru_check(tgt.p, LEN, seed) < 0 &&
			 !memcmp(tgt.p + LEN, ref + LEN, RU_GUARD);
	}
	if (!strcmp(expect, "any"))
		tap(1, "imm_probe.server.write_placed # %s",
		    placed ? "placed" : "not placed");
	else
		tap(placed, "imm_probe.server.write_placed");
	if (s.established && !s.disconnected)
		ru_ep_wait_disconnected(&s, 15000);
	mem_put(&tgt);
	ru_ep_close(&s);
	ru_chan_free(&c);
	ru_listener_close(&l);
	return tapfail ? 1 : 0;
}

/* ---- client -------------------------------------------------------------- */

static int run_client(const char *local, const char *peer, uint16_t port,
		      const char *expect, int limit_ms)
{
	struct ru_ep m;
	struct ru_caps cfg;
	struct ru_chan c;
	struct mem src, sink;
	struct ru_msg pi;
	struct ibv_sge sg;
	struct ru_wc w[2];
	char buf[200];
	uint64_t t0, tw[2] = { 0, 0 };
	int rc, i, n = 0, first_err = -1, ok_after_err = 0, st;
	int connect_ms = (int)ru_env_long("SIWX_IMM_PROBE_CONNECT_MS", 240000);

	memset(&src, 0, sizeof(src));
	memset(&sink, 0, sizeof(sink));
	caps_for(&cfg, &c);
	printf("TAP version 13\n1..4\n");
	printf("# imm_probe client %s -> %s:%u, expecting the probe to be %s "
	       "within %d ms\n", local, peer, port, expect, limit_ms);
	rc = ru_connect(&m, local, peer, port, &cfg, connect_ms);
	if (!rc)
		rc = mem_get(m.pd, LEN, &src);
	if (!rc)
		rc = mem_get(m.pd, LEN, &sink);
	if (!rc)
		rc = ru_msg_recv(&m, &c, M_INFO, &pi, 60000);
	if (!rc && pi.len != LEN)
		rc = ru_fail(EPROTO, "server's message: len %llu, not %d",
			     (unsigned long long)pi.len, LEN);
	tap(!rc, "imm_probe.client.connect");
	if (rc) {
		printf("# %s\n", ru_errmsg());
		tap(0, "imm_probe.client.post # no connection");
		tap(0, "imm_probe.client.outcome # no connection");
		tap(0, "imm_probe.client.qp_state # no connection");
		return 1;
	}
	fill(src.p, LEN, pi.seed);
	memset(sink.p, 0x5a, LEN);
	printf("# server's target 0x%llx rkey 0x%x; posting a %d-byte write with "
	       "immediate 0x%08x and a Read of it\n", (unsigned long long)pi.addr,
	       pi.rkey, LEN, be32toh(imm_of(pi.seed)));
	t0 = ru_now_ms();
	rc = im_post_wimm(m.qp, src.mr, src.p, LEN, pi.addr, pi.rkey,
			  imm_of(pi.seed), IBV_SEND_SIGNALED, 1);
	if (!rc) {
		sg.addr = (uintptr_t)sink.p;
		sg.length = LEN;
		sg.lkey = sink.mr->lkey;
		rc = ru_post_sge(m.qp, IBV_WR_RDMA_READ, &sg, 1, pi.addr, pi.rkey, 0,
			     IBV_SEND_SIGNALED, 2);
	}
	tap(!rc, "imm_probe.client.post%s%s", rc ? " # " : "", rc ? ru_errmsg() : "");
	if (rc) {
		tap(0, "imm_probe.client.outcome # not posted");
		tap(0, "imm_probe.client.qp_state # not posted");
		ru_ep_close(&m);
		return 1;
	}
	/* every completion, bounded by the limit (plus slack for a flush) */
	while (n < 2 && ru_now_ms() - t0 < (uint64_t)limit_ms + 5000) {
		if (ru_poll_send(&m, &w[n], 100) != 1)
			continue;
		tw[n] = ru_now_ms() - t0;
		printf("# completion after %llu ms: %s\n", (unsigned long long)tw[n],
		       ru_wc_str(&w[n], buf, sizeof(buf)));
		if (w[n].status != IBV_WC_SUCCESS && first_err < 0)
			first_err = n;
		else if (w[n].status == IBV_WC_SUCCESS && first_err >= 0)
			ok_after_err = 1;
		n++;
	}
	if (n < 2)
		printf("# only %d of 2 completions after %llu ms\n", n,
		       (unsigned long long)(ru_now_ms() - t0));
	if (!strcmp(expect, "refused")) {
		int in_time = first_err >= 0 && tw[first_err] <= (uint64_t)limit_ms;

		tap(in_time && !ok_after_err,
		    "imm_probe.client.outcome # %s", first_err < 0 ?
		    (n == 2 ? "both completed successfully" : "no completion: hang") :
		    !in_time ? "error completion too late" :
		    ok_after_err ? "success after an error" :
		    "error completion in time");
		if (first_err >= 0)
			printf("# first error: wr %llu %s after %llu ms\n",
			       (unsigned long long)w[first_err].wr_id,
			       ibv_wc_status_str(w[first_err].status),
			       (unsigned long long)tw[first_err]);
	} else if (!strcmp(expect, "accepted")) {
		int ok = n == 2 && first_err < 0 && w[0].wr_id == 1 &&
			 w[1].wr_id == 2 && !memcmp(sink.p, src.p, LEN);

		tap(ok, "imm_probe.client.outcome # %s", ok ? "accepted" :
		    n < 2 ? "missing completions" : first_err >= 0 ?
		    "error completion" : "Read returned other bytes");
	} else {
		tap(n == 2, "imm_probe.client.outcome # %s within %d ms",
		    first_err >= 0 ? "refused" : "accepted", limit_ms + 5000);
	}
	st = ru_qp_state(m.qp);
	if (!strcmp(expect, "refused")) {
		if (st != IBV_QPS_ERR && !ru_wait_qp_state(m.qp, IBV_QPS_ERR, 10000))
			st = IBV_QPS_ERR;
		tap(st == IBV_QPS_ERR, "imm_probe.client.qp_state # %s",
		    ru_qp_state_str(st));
	} else if (!strcmp(expect, "accepted")) {
		tap(st == IBV_QPS_RTS, "imm_probe.client.qp_state # %s",
		    ru_qp_state_str(st));
	} else {
		tap(1, "imm_probe.client.qp_state # %s", ru_qp_state_str(st));
	}
	for (i = 0; i < 4 && ru_poll_send(&m, &w[0], 200) == 1; i++)
		printf("# late completion: %s\n", ru_wc_str(&w[0], buf, sizeof(buf)));
	if (m.established && !m.disconnected) {
		ru_ep_disconnect(&m);
		ru_ep_wait_disconnected(&m, 15000);
	}
	mem_put(&src);
	mem_put(&sink);
	ru_ep_close(&m);
	ru_chan_free(&c);
	return tapfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *role = ru_env("SIWX_IMM_PROBE_ROLE", NULL);
	const char *expect = ru_env("SIWX_IMM_PROBE_EXPECT", NULL);
	const char *local = ru_env("SIWX_LOCAL", NULL);
	const char *peer = ru_env("SIWX_PEER", NULL);
	const char *vm = ru_env("SIWX_ROLE", "");
	int port = (int)ru_env_long("SIWX_IMM_PROBE_PORT", 47400);
	int limit_ms = (int)ru_env_long("SIWX_IMM_PROBE_LIMIT_MS", 10000);
	int me = !strcmp(vm, "b") ? 1 : 0, i;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--server") || !strcmp(a, "--client")) {
			role = a + 2;
		} else if (!strcmp(a, "--expect") && v) {
			expect = v;
			i++;
		} else if (!strcmp(a, "--port") && v) {
			port = atoi(v);
			i++;
		} else if (!strcmp(a, "--local") && v) {
			local = v;
			i++;
		} else if (!strcmp(a, "--peer") && v) {
			peer = v;
			i++;
		} else if (!strcmp(a, "--limit-ms") && v) {
			limit_ms = atoi(v);
			i++;
		} else {
			fprintf(stderr, "usage: %s [--server|--client] [--expect "
				"refused|accepted|any] [--port N] [--local ADDR] "
				"[--peer ADDR] [--limit-ms N]\n", argv[0]);
			return 2;
		}
	}
	if (!role) {
		int ka = ru_pair_kind(0), kb = ru_pair_kind(1);

		/* the siwx side probes; siwx on both or unknown: b probes */
		if (ka == 1 && kb == 0)
			role = me == 0 ? "client" : "server";
		else if (ka == 0 && kb == 1)
			role = me == 1 ? "client" : "server";
		else
			role = me == 1 ? "client" : "server";
	}
	if (!expect) {
		/* what the server's module does decides, on both sides */
		int ks = !strcmp(role, "server") ? ru_pair_kind(me) : ru_pair_kind(!me);

		expect = ks == 0 ? "refused" : ks == 1 ? "accepted" : "any";
	}
	if (strcmp(expect, "refused") && strcmp(expect, "accepted") &&
	    strcmp(expect, "any")) {
		fprintf(stderr, "imm_probe: --expect refused|accepted|any\n");
		return 2;
	}
	if (!local)
		local = me ? "192.168.78.2" : "192.168.78.1";
	if (!peer)
		peer = me ? "192.168.78.1" : "192.168.78.2";
	printf("# imm_probe: VM %s, SIWX_PAIR_ORDER '%s', role %s\n",
	       *vm ? vm : "?", ru_env("SIWX_PAIR_ORDER", ""), role);
	if (!strcmp(role, "server"))
		return run_server(local, (uint16_t)port, expect, limit_ms);
	if (!strcmp(role, "client"))
		return run_client(local, peer, (uint16_t)port, expect, limit_ms);
	fprintf(stderr, "imm_probe: role must be server or client\n");
	return 2;
}
