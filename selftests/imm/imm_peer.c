// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * imm_peer - traffic for imm_wire.sh: one connection per case, both ends
 * in this process (server on SIWX_ADDR0:PORT, client from SIWX_ADDR1).
 *
 *   imm_peer ops PORT      Sends, RDMA Writes with Immediate (zero-length,
 *                          solicited, inline, multi-FPDU) and a plain
 *                          RDMA Write, in the order of the table below
 *   imm_peer norecv PORT   a zero-length write with immediate to a QP
 *                          with no receive posted, then an RDMA Read
 *
 * It prints what it posted and what completed, one line each, for
 * imm_wire.py:
 *   OP n=N kind=send|wimm|write len=L se=0|1 inline=0|1 imm=XXXXXXXX
 *      rkey=XXXXXXXX raddr=XXXXXXXXXXXXXXXX
 *   SCQ wr=N status=S opcode=O
 *   RECV wr=N status=S opcode=O len=L flags=F imm=XXXXXXXX
 *   QP client=STATE server=STATE
 *   ERROR text
 * imm is the value of the verbs immediate as a host number
 * (be32toh(imm_data)): on the wire it is the big-endian low half of the
 * Immediate Data. Payload byte i of op n is (n * 37 + i * 11) & 0xff.
 * Exit status 0 when the scenario ran (whatever its outcome), 1 on a
 * set-up error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imm_common.h"

#define MAXOP	16
#define OPSZ	(72 * 1024)
#define RSZ	2048

struct pop {
	const char *kind;	/* send, wimm, write */
	uint32_t len;
	int se;
	int inl;
	uint32_t imm;
};

/* the ops case */
static const struct pop ops[] = {
	{ "send", 100, 0, 0, 0 },
	{ "wimm", 3000, 0, 0, 0x11223344 },
	{ "wimm", 0, 0, 0, 0xffffffff },	/* right after an Immediate Data */
	{ "send", 0, 1, 0, 0 },
	{ "wimm", 5000, 1, 0, 0x80000001 },
	{ "wimm", 0, 1, 0, 0x00000000 },
	{ "send", 10, 0, 0, 0 },
	{ "write", 200, 0, 0, 0 },
	{ "wimm", 0, 0, 0, 0xdeadbeef },	/* right after a plain Write */
	{ "wimm", 40, 0, 1, 0x01020304 },
	{ "wimm", 70000, 0, 0, 0xa5a5a5a5 },	/* more than one FPDU */
	{ "send", 1, 1, 0, 0 },
};

#define NOPS (int)(sizeof(ops) / sizeof(ops[0]))

static void fill(uint8_t *p, uint32_t len, int n)
{
	uint32_t i;

	for (i = 0; i < len; i++)
		p[i] = (uint8_t)(n * 37 + i * 11);
}

struct bufs {
	struct ibv_mr *src, *tgt, *rcv;
	uint8_t *s, *t, *r;
};

static int reg(struct ibv_pd *pd, size_t len, uint8_t **p, struct ibv_mr **mr)
{
	*p = aligned_alloc(4096, len);
	if (!*p)
		return ru_fail(ENOMEM, "aligned_alloc");
	memset(*p, 0, len);
	*mr = ibv_reg_mr(pd, *p, len, IM_ACC);
	if (!*mr)
		return ru_fail(errno, "ibv_reg_mr: %s", strerror(errno));
	return 0;
}

static void print_wc(const char *tag, const struct ru_wc *w)
{
	char st[64];
	size_t i;

	/* one word: "Work_Request_Flushed_Error" */
	snprintf(st, sizeof(st), "%s", ibv_wc_status_str(w->status));
	for (i = 0; st[i]; i++)
		if (st[i] == ' ')
			st[i] = '_';
	printf("%s wr=%llu status=%s opcode=%s len=%u flags=0x%x imm=%08x\n",
	       tag, (unsigned long long)w->wr_id, st,
	       ru_wc_opcode_str(w->opcode), w->byte_len, w->wc_flags,
	       be32toh(w->imm));
}

static int run_ops(struct ru_ep *cli, struct ru_ep *srv, struct bufs *b)
{
	struct ru_wc w;
	int i, rc, fails = 0, slot;

	for (i = 0; i < NOPS; i++) {
		rc = ru_post_recv_mr(srv->qp, NULL, b->rcv, b->r + i * RSZ,
				      RSZ, 100 + i);
		if (rc)
			return rc;
	}
	for (i = 0; i < NOPS; i++) {
		const struct pop *o = &ops[i];
		int n = i + 1;
		uint8_t *s = b->s + (size_t)i * OPSZ;
		uint8_t *t = b->t + (size_t)i * OPSZ;
		struct ibv_sge sg = { .addr = (uintptr_t)s, .length = o->len,
				      .lkey = b->src->lkey };
		enum ibv_wr_opcode op = !strcmp(o->kind, "send") ? IBV_WR_SEND :
			!strcmp(o->kind, "write") ? IBV_WR_RDMA_WRITE :
			IBV_WR_RDMA_WRITE_WITH_IMM;
		unsigned int fl = IBV_SEND_SIGNALED |
			(o->se ? IBV_SEND_SOLICITED : 0) |
			(o->inl ? IBV_SEND_INLINE : 0);

		fill(s, o->len, n);
		printf("OP n=%d kind=%s len=%u se=%d inline=%d imm=%08x rkey=%08x "
		       "raddr=%016llx\n", n, o->kind, o->len, o->se, o->inl, o->imm,
		       b->tgt->rkey, (unsigned long long)(uintptr_t)t);
		rc = ru_post_sge(cli->qp, op, &sg, 1, (uintptr_t)t, b->tgt->rkey,
			     htobe32(o->imm), fl, n);
		if (rc) {
			printf("ERROR op %d: %s\n", n, ru_errmsg());
			return rc;
		}
	}
	for (i = 0; i < NOPS; i++) {
		if (ru_poll_send(cli, &w, 30000) != 1) {
			printf("ERROR sender: %s\n", ru_errmsg());
			fails++;
			break;
		}
		print_wc("SCQ", &w);
		fails += w.status != IBV_WC_SUCCESS;
	}
	for (i = 0; i < NOPS; i++) {
		if (!strcmp(ops[i].kind, "write"))
			continue;
		if (ru_poll_recv(srv, &w, 30000) != 1) {
			printf("ERROR receiver: %s\n", ru_errmsg());
			fails++;
			break;
		}
		print_wc("RECV", &w);
		fails += w.status != IBV_WC_SUCCESS;
	}
	/* placement (receive slots are taken in order by Sends and imms) */
	for (i = 0, slot = 0; i < NOPS; i++) {
		const struct pop *o = &ops[i];
		uint8_t *ref = malloc(o->len + 1);
		const uint8_t *got;

		if (!ref)
			break;
		fill(ref, o->len, i + 1);
		got = !strcmp(o->kind, "send") ? b->r + slot * RSZ :
						 b->t + (size_t)i * OPSZ;
		if (strcmp(o->kind, "write"))
			slot++;
		if (memcmp(got, ref, o->len)) {
			printf("ERROR op %d: data not placed as sent\n", i + 1);
			fails++;
		}
		free(ref);
	}
	return fails ? -EIO : 0;
}

static int run_norecv(struct ru_ep *cli, struct ru_ep *srv, struct bufs *b)
{
	struct ibv_sge sg = { .addr = (uintptr_t)b->s, .length = 0,
			      .lkey = b->src->lkey };
	struct ru_wc w;
	int i, rc;

	printf("OP n=1 kind=wimm len=0 se=0 inline=0 imm=%08x rkey=%08x "
	       "raddr=%016llx\n", 0xfeedf00du, b->tgt->rkey,
	       (unsigned long long)(uintptr_t)b->t);
	rc = ru_post_sge(cli->qp, IBV_WR_RDMA_WRITE_WITH_IMM, &sg, 1,
		     (uintptr_t)b->t, b->tgt->rkey, htobe32(0xfeedf00d),
		     IBV_SEND_SIGNALED, 1);
	if (rc) {
		printf("ERROR post: %s\n", ru_errmsg());
		return rc;
	}
	sg.length = 64;
	printf("OP n=2 kind=read len=64 se=0 inline=0 imm=00000000 rkey=%08x "
	       "raddr=%016llx\n", b->tgt->rkey,
	       (unsigned long long)(uintptr_t)b->t + 4096);
	rc = ru_post_sge(cli->qp, IBV_WR_RDMA_READ, &sg, 1,
		     (uintptr_t)b->t + 4096, b->tgt->rkey, 0, IBV_SEND_SIGNALED, 2);
	if (rc) {
		printf("ERROR post: %s\n", ru_errmsg());
		return rc;
	}
	for (i = 0; i < 2; i++) {
		if (ru_poll_send(cli, &w, 10000) != 1) {
			printf("ERROR sender: %s\n", ru_errmsg());
			break;
		}
		print_wc("SCQ", &w);
	}
	ru_wait_qp_state(cli->qp, IBV_QPS_ERR, 10000);
	ru_wait_qp_state(srv->qp, IBV_QPS_ERR, 10000);
	printf("QP client=%s server=%s\n",
	       ru_qp_state_str(ru_qp_state(cli->qp)),
	       ru_qp_state_str(ru_qp_state(srv->qp)));
	if (ru_poll_recv(srv, &w, 500) == 1)
		print_wc("RECV", &w);
	/* let the Terminate and the TCP close reach the wire */
	ru_ep_wait_disconnected(cli, 5000);
	ru_ep_wait_disconnected(srv, 5000);
	return 0;
}

int main(int argc, char **argv)
{
	struct ru_listener l;
	struct ru_ep cli, srv;
	struct ru_caps cc, sc;
	struct bufs b;
	int rc, port;

	if (argc != 3 || (strcmp(argv[1], "ops") && strcmp(argv[1], "norecv"))) {
		fprintf(stderr, "usage: %s ops|norecv PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	port = atoi(argv[2]);
	memset(&b, 0, sizeof(b));
	ru_caps_default(&cc);
	ru_caps_default(&sc);
	cc.max_inline = IM_MAX_INLINE_IMM;
	sc.max_recv_wr = 32;
	if (ru_listen(&l, ru_addr0(), (uint16_t)port, 4)) {
		printf("ERROR listen: %s\n", ru_errmsg());
		return 1;
	}
	rc = ru_pair_open_on(&l, &cli, &srv, &cc, &sc);
	if (!rc)
		rc = reg(cli.pd, (size_t)NOPS * OPSZ, &b.s, &b.src);
	if (!rc)
		rc = reg(srv.pd, (size_t)NOPS * OPSZ, &b.t, &b.tgt);
	if (!rc)
		rc = reg(srv.pd, (size_t)NOPS * RSZ, &b.r, &b.rcv);
	if (rc) {
		printf("ERROR set-up: %s\n", ru_errmsg());
		return 1;
	}
	printf("CONN case=%s port=%d client_qp=%u server_qp=%u\n", argv[1], port,
	       cli.qp->qp_num, srv.qp->qp_num);
	if (!strcmp(argv[1], "ops")) {
		rc = run_ops(&cli, &srv, &b);
		/* an orderly close after the last completion */
		ru_ep_disconnect(&cli);
		ru_ep_wait_disconnected(&cli, 5000);
		ru_ep_wait_disconnected(&srv, 5000);
	} else {
		rc = run_norecv(&cli, &srv, &b);
	}
	printf("DONE rc=%d\n", rc);
	ibv_dereg_mr(b.src);
	ibv_dereg_mr(b.tgt);
	ibv_dereg_mr(b.rcv);
	ru_ep_close(&cli);
	ru_ep_close(&srv);
	ru_listener_close(&l);
	free(b.s);
	free(b.t);
	free(b.r);
	return 0;
}
