// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * siwx-demo - RFC 7306 operations over siwx, the way an application
 * uses them: rdma_cm + libibverbs, nothing siwx specific. The connection
 * is set up by the selftests' rdma_util (selftests/lib/rdma_util.c,
 * linked in); the operations are plain ibv_post_send() work requests.
 *
 *   siwx-demo -s ADDR [-p PORT]            server: exports an 8-byte counter
 *   siwx-demo -c ADDR [-b SRC] [-p PORT]   client: FetchAdd, CmpSwap and
 *                                          RDMA Write with Immediate on it
 *
 * The server registers a buffer with REMOTE_ATOMIC and REMOTE_WRITE
 * access, hands its address and rkey to the client in the connection's
 * private data and posts receives. The client
 *   - increments the remote counter with FetchAdd five times, printing
 *     the value each one returned;
 *   - tries two CmpSwaps: one that matches the counter (it swaps) and
 *     one that no longer matches (memory unchanged);
 *   - writes a text with RDMA Write with Immediate Data; the server
 *     prints the immediate value, the byte count and the text.
 * Every result is checked against what it must be; the exit status
 * says whether all were right. Addresses are numeric.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_util.h"

#define BUF_SIZE 4096
#define TEXT_OFF 64
#define WAIT_MS	 30000		/* any single wait */

struct pdata {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct conn {
	struct ru_ep ep;
	struct ru_buf buf;	/* the counter (server) / atomic results (client) */
	char *mem;		/* buf.addr */
};

static int fail(const char *what)
{
	fprintf(stderr, "siwx-demo: %s: %s\n", what, ru_errmsg());
	return 1;
}

/* caps.on_qp: the buffer; the server also posts its receive and puts the
 * buffer's coordinates into accept's private data */
static int setup(struct ru_ep *e, void *arg)
{
	struct conn *c = arg;
	struct pdata pd;
	int rc;

	rc = ru_buf_alloc(&c->buf, e->pd, BUF_SIZE,
			  IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	if (rc)
		return rc;
	c->mem = (char *)c->buf.addr;
	if (!e->passive)
		return 0;
	rc = ru_post_recv(e, &c->buf, 2048, 64, 1);
	if (rc)
		return rc;
	pd.addr = htobe64((uintptr_t)c->mem);
	pd.rkey = htobe32(c->buf.mr->rkey);
	pd.len = htobe32(BUF_SIZE);
	memcpy(e->pdata, &pd, sizeof(pd));
	e->pdata_len = sizeof(pd);
	return 0;
}

/* caps.on_close */
static void release(struct ru_ep *e, void *arg)
{
	struct conn *c = arg;

	(void)e;
	ru_buf_free(&c->buf);
	c->mem = NULL;
}

static void demo_caps(struct ru_caps *caps, struct conn *c)
{
	ru_caps_default(caps);
	caps->max_send_wr = 16;
	caps->max_recv_wr = 16;
	caps->cq_depth = 32;
	caps->initiator_depth = 4;
	caps->responder_resources = 4;
	caps->on_qp = setup;
	caps->on_qp_arg = c;
	caps->on_close = release;
	caps->on_close_arg = c;
}

static int wait_wc(struct ibv_cq *cq, struct ibv_wc *wc)
{
	int n = ru_poll(cq, wc, WAIT_MS);

	if (n < 0)
		return fail("ibv_poll_cq");
	if (n == 0) {
		fprintf(stderr, "siwx-demo: no completion in %d s\n",
			WAIT_MS / 1000);
		return 1;
	}
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "siwx-demo: wr %" PRIu64 ": %s\n", wc->wr_id,
			ibv_wc_status_str(wc->status));
		return 1;
	}
	return 0;
}

static int server(const char *addr, uint16_t port)
{
	static struct conn c;
	struct ru_listener l;
	struct ru_caps caps;
	struct ibv_wc wc;
	uint64_t *counter;

	if (ru_listen(&l, addr, port, 1))
		return fail("listen");
	printf("server: listening on %s:%u\n", addr, port);
	fflush(stdout);
	demo_caps(&caps, &c);
	if (ru_accept(&l, &c.ep, &caps, 60000))
		return fail("accept");
	counter = (uint64_t *)c.mem;
	printf("server: counter at 0x%" PRIxPTR " rkey 0x%x starts at 0\n",
	       (uintptr_t)c.mem, c.buf.mr->rkey);
	/* The client's RDMA Write with Immediate consumes our receive. */
	if (wait_wc(c.ep.rcq, &wc))
		return 1;
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM)) {
		fprintf(stderr, "server: receive opcode %d flags 0x%x\n",
			wc.opcode, wc.wc_flags);
		return 1;
	}
	printf("server: RDMA Write with Immediate arrived: imm_data 0x%08x, byte_len %u, text \"%s\"\n",
	       be32toh(wc.imm_data), wc.byte_len, c.mem + TEXT_OFF);
	printf("server: counter is now %" PRIu64 "\n", *counter);
	fflush(stdout);
	/* wait for the client to disconnect */
	ru_ep_wait_disconnected(&c.ep, WAIT_MS);
	ru_ep_disconnect(&c.ep);
	return *counter == 100 && be32toh(wc.imm_data) == 0x5157 ? 0 : 1;
}

static int atomic(struct conn *c, struct pdata *pd, enum ibv_wr_opcode op,
		  uint64_t cmp_add, uint64_t swap, uint64_t *orig)
{
	struct ibv_sge sge = { (uintptr_t)c->mem, 8, c->buf.mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = pd->addr, .compare_add = cmp_add,
			       .swap = swap, .rkey = pd->rkey },
	}, *bad;
	struct ibv_wc wc;
	int rc = ibv_post_send(c->ep.qp, &wr, &bad);

	if (rc) {
		fprintf(stderr, "siwx-demo: ibv_post_send (atomic): %s\n",
			strerror(rc < 0 ? -rc : rc));
		return 1;
	}
	if (wait_wc(c->ep.scq, &wc))
		return 1;
	*orig = *(uint64_t *)c->mem;
	return 0;
}

static int client(const char *addr, const char *src, uint16_t port)
{
	static struct conn c;
	const char *text = "hello from siw1";
	struct ru_caps caps;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct pdata pd;
	uint64_t v;
	int i, bad_results = 0;

	demo_caps(&caps, &c);
	if (ru_client_start(&c.ep, src, addr, port, &caps, 2000) ||
	    ru_client_finish(&c.ep, WAIT_MS))
		return fail("connect");
	if (c.ep.peer.len < sizeof(pd)) {
		fprintf(stderr, "client: short private data\n");
		return 1;
	}
	memcpy(&pd, c.ep.peer.data, sizeof(pd));
	pd.addr = be64toh(pd.addr);
	pd.rkey = be32toh(pd.rkey);
	printf("client: connected via %s, remote counter 0x%" PRIx64 " rkey 0x%x\n",
	       ibv_get_device_name(c.ep.id->verbs->device), pd.addr, pd.rkey);

	for (i = 0; i < 5; i++) {
		if (atomic(&c, &pd, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, 0, &v))
			return 1;
		printf("client: FetchAdd +1        returned %" PRIu64 "\n", v);
		bad_results += v != (uint64_t)i;
	}
	if (atomic(&c, &pd, IBV_WR_ATOMIC_CMP_AND_SWP, 5, 100, &v))
		return 1;
	printf("client: CmpSwap 5 -> 100   returned %" PRIu64 " (%s)\n", v,
	       v == 5 ? "matched: swapped" : "no match");
	bad_results += v != 5;
	if (atomic(&c, &pd, IBV_WR_ATOMIC_CMP_AND_SWP, 5, 200, &v))
		return 1;
	printf("client: CmpSwap 5 -> 200   returned %" PRIu64 " (%s)\n", v,
	       v == 5 ? "matched: swapped" : "no match: memory unchanged");
	bad_results += v != 100;

	strcpy(c.mem + TEXT_OFF, text);
	sge = (struct ibv_sge){ (uintptr_t)c.mem + TEXT_OFF,
				(uint32_t)strlen(text) + 1, c.buf.mr->lkey };
	if (ru_post_sge(c.ep.qp, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 1,
			pd.addr + TEXT_OFF, pd.rkey, htobe32(0x5157),
			IBV_SEND_SIGNALED, 3))
		return fail("ibv_post_send (write with immediate)");
	if (wait_wc(c.ep.scq, &wc))
		return 1;
	printf("client: RDMA Write with Immediate 0x00005157, %u bytes: done\n",
	       sge.length);
	fflush(stdout);
	sleep(1);
	ru_ep_disconnect(&c.ep);
	return bad_results ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *srv = NULL, *cli = NULL, *src = NULL;
	unsigned long port = 7471;
	char *end;
	int o;

	while ((o = getopt(argc, argv, "s:c:b:p:")) != -1) {
		switch (o) {
		case 's': srv = optarg; break;
		case 'c': cli = optarg; break;
		case 'b': src = optarg; break;
		case 'p':
			port = strtoul(optarg, &end, 10);
			if (*end || !port || port > 65535)
				goto usage;
			break;
		default:
			goto usage;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (srv)
		return server(srv, (uint16_t)port);
	if (cli)
		return client(cli, src, (uint16_t)port);
usage:
	fprintf(stderr, "usage: %s -s ADDR | -c ADDR [-b SRC] [-p PORT]\n",
		argv[0]);
	return 2;
}
