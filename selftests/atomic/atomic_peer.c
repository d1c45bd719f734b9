// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * atomic_peer - atomics with distinctive operands for atomic_wire.sh.
 *
 *   atomic_peer CASE PORT
 *
 * Listens on SIWX_ADDR0:PORT, connects from SIWX_ADDR1 and, as requester,
 * runs one case:
 *   ops         masked and unmasked FetchAdd/CmpSwap on four words of the
 *               server's buffer, with RDMA Reads in between (Read Requests
 *               share the MSN space of queue 1 with Atomic Requests)
 *   bad_stag    a valid FetchAdd, then a FetchAdd with a wrong STag key
 *   misaligned  a CmpSwap at a target 4 bytes off 64-bit alignment
 * One line per operation on stdout, key=value, for the decoder:
 *   INIT case=C rkey=K w0=V w1=V w2=V w3=V base=A
 *   OP case=C n=N kind=fa|cs|read masked=0|1 raddr=A rkey=K add=V fmask=V
 *      cmp=V cmask=V swap=V smask=V len=L status=S orig=V data=HEX
 *   FINAL case=C w0=V w1=V w2=V w3=V
 * (values in hex; orig is what the completion left in the result buffer;
 * data is what an RDMA Read returned). Exits 0 when every operation could
 * be posted and completed (whatever its status), 1 otherwise.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "atomic_common.h"

static const char *cname;
static struct ru_ep *cli;
static struct ibv_qp_ex *qpx;
static struct ru_buf tgt, res;
static int nop;

static void hx(uint64_t v, const char *k)
{
	printf(" %s=0x%016llx", k, (unsigned long long)v);
}

/* Post and wait; print the line. Returns the completion status or -1. */
static int do_op(const struct aop *op)
{
	uint8_t *slot = res.addr + 16 * nop;
	struct ibv_wc wc;
	uint64_t orig;
	int rc;

	memset(slot, 0xc3, 16);
	rc = post_atomic(cli->qp, qpx, op->masked ? API_DV : API_POST, op,
			 (uintptr_t)slot, res.mr->lkey, 100 + nop,
			 IBV_SEND_SIGNALED);
	if (rc) {
		printf("ERROR case=%s n=%d post: %s\n", cname, nop, strerror(rc));
		return -1;
	}
	rc = ru_poll(cli->scq, &wc, 15000);
	if (rc != 1) {
		printf("ERROR case=%s n=%d no completion\n", cname, nop);
		return -1;
	}
	memcpy(&orig, slot, 8);
	printf("OP case=%s n=%d kind=%s masked=%d", cname, nop,
	       op->kind == AOP_FA ? "fa" : "cs", op->masked);
	hx(op->raddr, "raddr");
	printf(" rkey=0x%08x", op->rkey);
	hx(op->add, "add");
	hx(op->fmask, "fmask");
	hx(op->cmp, "cmp");
	hx(op->cmask, "cmask");
	hx(op->swap, "swap");
	hx(op->smask, "smask");
	printf(" len=8 status=%s", ibv_wc_status_str(wc.status));
	hx(orig, "orig");
	printf("\n");
	nop++;
	return wc.status;
}

static int do_read(uint64_t raddr, uint32_t len)
{
	uint8_t *sink = res.addr + 2048;
	struct ibv_wc wc;
	uint32_t i;

	memset(sink, 0, len);
	if (ru_post_send(cli, IBV_WR_RDMA_READ, &res, 2048, len, raddr,
			 tgt.mr->rkey, 100 + nop, IBV_SEND_SIGNALED) ||
	    ru_poll(cli->scq, &wc, 15000) != 1) {
		printf("ERROR case=%s n=%d read: %s\n", cname, nop, ru_errmsg());
		return -1;
	}
	printf("OP case=%s n=%d kind=read masked=0", cname, nop);
	hx(raddr, "raddr");
	printf(" rkey=0x%08x len=%u status=%s data=", tgt.mr->rkey, len,
	       ibv_wc_status_str(wc.status));
	for (i = 0; i < len; i++)
		printf("%02x", sink[i]);
	printf("\n");
	nop++;
	return wc.status;
}

static void words(const char *tag)
{
	int i;

	printf("%s case=%s rkey=0x%08x", tag, cname, tgt.mr->rkey);
	for (i = 0; i < 4; i++) {
		char k[4] = { 'w', (char)('0' + i), 0, 0 };
		uint64_t v;

		memcpy(&v, tgt.addr + 8 * i, 8);
		hx(v, k);
	}
	hx((uintptr_t)tgt.addr, "base");
	printf("\n");
}

static struct aop mk(enum aop_kind k, int masked, int word)
{
	struct aop op;

	memset(&op, 0, sizeof(op));
	op.kind = k;
	op.masked = masked;
	op.raddr = (uintptr_t)(tgt.addr + 8 * word);
	op.rkey = tgt.mr->rkey;
	if (!masked) {	/* what the unmasked opcodes mean */
		op.cmask = ~0ull;
		op.smask = ~0ull;
	}
	return op;
}

int main(int argc, char **argv)
{
	static const uint64_t init[4] = {
		0x01ff01ff01ff01ffull, 0x1122334455667788ull,
		0xffffffffffffffffull, 0xdeadbeefcafef00dull,
	};
	struct ru_listener l;
	struct ru_ep srv, c;
	struct ru_caps caps, ccaps;
	struct aop op;
	int rc = 0, port;

	if (argc != 3) {
		fprintf(stderr, "usage: %s ops|bad_stag|misaligned PORT\n", argv[0]);
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	cname = argv[1];
	port = atoi(argv[2]);
	ru_caps_default(&caps);
	ru_caps_default(&ccaps);
	ccaps.send_ops = HAVE_SIWDV ? AX_SEND_OPS : 0;	/* masked: ibv_qp_ex */
	memset(&srv, 0, sizeof(srv));
	if (ru_listen(&l, ru_addr0(), (uint16_t)port, 4) ||
	    ru_pair_open_on(&l, &c, &srv, &ccaps, &caps)) {
		printf("ERROR case=%s connect: %s\n", cname, ru_errmsg());
		return 1;
	}
	cli = &c;
	qpx = c.qpx;
	if (ru_buf_alloc(&tgt, srv.pd, 64, ACC_ATOMIC) ||
	    ru_buf_alloc(&res, c.pd, 4096, IBV_ACCESS_LOCAL_WRITE)) {
		printf("ERROR case=%s %s\n", cname, ru_errmsg());
		return 1;
	}
	memcpy(tgt.addr, init, sizeof(init));
	words("INIT");

	if (!strcmp(cname, "ops")) {
		op = mk(AOP_FA, 1, 0);
		op.add = 0x0101010101010101ull;
		op.fmask = 0x8080808080808080ull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;

		op = mk(AOP_CS, 1, 1);
		op.cmp = 0xffff334455667788ull;
		op.cmask = 0x0000ffffffffffffull;
		op.swap = 0xaaaaaaaabbbbbbbbull;
		op.smask = 0x00000000ffffffffull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;

		rc |= do_read((uintptr_t)tgt.addr, 32) != IBV_WC_SUCCESS;

		op = mk(AOP_FA, 0, 2);
		op.add = 2;
		rc |= do_op(&op) != IBV_WC_SUCCESS;

		op = mk(AOP_CS, 0, 3);
		op.cmp = 0xdeadbeefcafef00dull;
		op.swap = 0x0123456789abcdefull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;

		op = mk(AOP_CS, 1, 1);	/* does not match: no change */
		op.cmp = 0x5500000000000000ull;
		op.cmask = 0xff00000000000000ull;
		op.swap = 0xfedcba9876543210ull;
		op.smask = 0xffffffffffffffffull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;

		rc |= do_read((uintptr_t)tgt.addr + 24, 8) != IBV_WC_SUCCESS;

		op = mk(AOP_FA, 1, 0);
		op.add = 0x00000000ffffffffull;
		op.fmask = 0x8000000080000000ull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;
	} else if (!strcmp(cname, "bad_stag")) {
		op = mk(AOP_FA, 0, 0);
		op.add = 0x0000000100000001ull;
		rc |= do_op(&op) != IBV_WC_SUCCESS;
		op = mk(AOP_FA, 0, 1);
		op.add = 0x7777777777777777ull;
		op.rkey ^= 0x5a;
		rc |= do_op(&op) < 0;
	} else if (!strcmp(cname, "misaligned")) {
		op = mk(AOP_CS, 0, 2);
		op.raddr += 4;
		op.cmp = 0x12345678ffffffffull;
		op.swap = 0x5555555555555555ull;
		rc |= do_op(&op) < 0;
	} else {
		fprintf(stderr, "unknown case %s\n", cname);
		return 2;
	}
	words("FINAL");
	/* let the Terminate and the TCP close reach the wire */
	ru_ep_disconnect(&c);
	ru_ep_wait_disconnected(&c, 3000);
	ru_buf_free(&tgt);
	ru_buf_free(&res);
	ru_ep_close(&c);
	ru_ep_close(&srv);
	ru_listener_close(&l);
	return rc ? 1 : 0;
}
