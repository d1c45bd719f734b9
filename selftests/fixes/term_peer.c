// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * term_peer - provoke one Terminate from the responder, for term_wire.sh.
 *
 *   term_peer CASE PORT
 *
 * Listens on SIWX_ADDR0:PORT, connects from SIWX_ADDR1, then the client
 * issues an RDMA Read that the server must refuse:
 *   read_noperm  MR registered without IBV_ACCESS_REMOTE_READ
 *   read_oob     Read runs past the end of the MR
 *   read_badkey  rkey with a wrong key byte
 * It prints the completion status, waits (bounded) for the client QP to
 * enter the error state and for the connection to close, and exits 0 when
 * the scenario ran (whatever its outcome), 1 on a setup error.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_util.h"

int main(int argc, char **argv)
{
	struct ru_caps caps;
	struct ru_pair p;
	struct ru_buf sbuf, cbuf;
	const char *mode;
	uint64_t raddr;
	uint32_t rkey;
	size_t len = 4096;
	int access, rc, port;
	struct ibv_wc wc;

	if (argc != 3) {
		fprintf(stderr, "usage: %s read_noperm|read_oob|read_badkey PORT\n",
			argv[0]);
		return 2;
	}
	mode = argv[1];
	port = atoi(argv[2]);
	memset(&p, 0, sizeof(p));
	ru_caps_default(&caps);

	if (ru_listen(&p.l, ru_addr0(), (uint16_t)port, 4) ||
	    ru_pair_open_on(&p.l, &p.cli, &p.srv, &caps, &caps)) {
		fprintf(stderr, "term_peer: connect: %s\n", ru_errmsg());
		return 1;
	}
	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
	if (strcmp(mode, "read_noperm"))
		access |= IBV_ACCESS_REMOTE_READ;
	if (ru_buf_alloc(&sbuf, p.srv.pd, len, access) ||
	    ru_buf_alloc(&cbuf, p.cli.pd, len, access)) {
		fprintf(stderr, "term_peer: %s\n", ru_errmsg());
		return 1;
	}
	ru_fill(sbuf.addr, len, 0x5ec2e7);
	raddr = (uintptr_t)sbuf.addr;
	rkey = sbuf.mr->rkey;
	if (!strcmp(mode, "read_oob"))
		raddr += len + RU_GUARD - 16;	/* 16 bytes left in the MR */
	else if (!strcmp(mode, "read_badkey"))
		rkey ^= 0x5a;
	else if (strcmp(mode, "read_noperm")) {
		fprintf(stderr, "term_peer: unknown case %s\n", mode);
		return 2;
	}
	if (ru_post_send(&p.cli, IBV_WR_RDMA_READ, &cbuf, 0, 64, raddr, rkey,
			 1, IBV_SEND_SIGNALED)) {
		fprintf(stderr, "term_peer: %s\n", ru_errmsg());
		return 1;
	}
	rc = ru_poll(p.cli.scq, &wc, 15000);
	if (rc == 1)
		printf("%s: read completion: %s\n", mode,
		       ibv_wc_status_str(wc.status));
	else
		printf("%s: read completion: none (%s)\n", mode, ru_errmsg());
	rc = ru_wait_qp_state(p.cli.qp, IBV_QPS_ERR, 10000);
	printf("%s: client QP %s\n", mode,
	       ru_qp_state_str(ru_qp_state(p.cli.qp)));
	/* let the Terminate and the TCP close reach the wire */
	ru_ep_wait_disconnected(&p.cli, rc ? 1000 : 5000);
	ru_buf_free(&sbuf);
	ru_buf_free(&cbuf);
	ru_pair_close(&p);
	return 0;
}
