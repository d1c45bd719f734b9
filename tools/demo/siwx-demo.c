// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * siwx-demo - RFC 7306 operations over siwx, the way an application
 * uses them: plain rdma_cm + libibverbs, nothing siwx specific.
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
 * says whether all were right.
 */
#include <endian.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#define BUF_SIZE 4096
#define TEXT_OFF 64

struct pdata {
	uint64_t addr;
	uint32_t rkey;
	uint32_t len;
};

struct conn {
	struct rdma_cm_id *id;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_mr *mr;
	char *buf;
};

static int fail(const char *what)
{
	fprintf(stderr, "siwx-demo: %s: %s\n", what, strerror(errno));
	return 1;
}

static int get_event(struct rdma_event_channel *ch, enum rdma_cm_event_type t,
		     struct rdma_cm_event **out)
{
	struct rdma_cm_event *ev;

	if (rdma_get_cm_event(ch, &ev))
		return fail("rdma_get_cm_event");
	if (ev->event != t) {
		fprintf(stderr, "siwx-demo: got %s (status %d), wanted %s\n",
			rdma_event_str(ev->event), ev->status,
			rdma_event_str(t));
		rdma_ack_cm_event(ev);
		return 1;
	}
	if (out)
		*out = ev;
	else
		rdma_ack_cm_event(ev);
	return 0;
}

static int setup(struct conn *c)
{
	struct ibv_qp_init_attr qa = {
		.cap = { .max_send_wr = 16, .max_recv_wr = 16,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	c->pd = ibv_alloc_pd(c->id->verbs);
	c->cq = c->pd ? ibv_create_cq(c->id->verbs, 32, NULL, NULL, 0) : NULL;
	if (!c->cq)
		return fail("pd/cq");
	qa.send_cq = qa.recv_cq = c->cq;
	if (rdma_create_qp(c->id, c->pd, &qa))
		return fail("rdma_create_qp");
	if (posix_memalign((void **)&c->buf, 4096, BUF_SIZE))
		return fail("memalign");
	memset(c->buf, 0, BUF_SIZE);
	c->mr = ibv_reg_mr(c->pd, c->buf, BUF_SIZE,
			   IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	return c->mr ? 0 : fail("ibv_reg_mr");
}

static int wait_wc(struct conn *c, struct ibv_wc *wc)
{
	int n, spins = 0;

	while ((n = ibv_poll_cq(c->cq, 1, wc)) == 0) {
		if (++spins > 10000000 / 10) {
			fprintf(stderr, "siwx-demo: no completion in 10 s\n");
			return 1;
		}
		usleep(10);
	}
	if (n < 0)
		return fail("ibv_poll_cq");
	if (wc->status != IBV_WC_SUCCESS) {
		fprintf(stderr, "siwx-demo: wr %" PRIu64 ": %s\n", wc->wr_id,
			ibv_wc_status_str(wc->status));
		return 1;
	}
	return 0;
}

static int post_recv(struct conn *c)
{
	struct ibv_sge sge = { (uintptr_t)c->buf + 2048, 64, c->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = 1, .sg_list = &sge, .num_sge = 1 },
			   *bad;

	return ibv_post_recv(c->id->qp, &wr, &bad) ? fail("ibv_post_recv") : 0;
}

static int server(const char *addr, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_addrinfo hints = { .ai_flags = RAI_PASSIVE,
				       .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4 };
	struct rdma_cm_event *ev;
	struct rdma_cm_id *listen;
	struct conn c = { 0 };
	struct pdata pd;
	struct ibv_wc wc;
	uint64_t *counter;

	if (!ch || rdma_getaddrinfo(addr, port, &hints, &ai))
		return fail("rdma_getaddrinfo");
	if (rdma_create_id(ch, &listen, NULL, RDMA_PS_TCP) ||
	    rdma_bind_addr(listen, ai->ai_src_addr) || rdma_listen(listen, 1))
		return fail("listen");
	printf("server: listening on %s:%s\n", addr, port);
	fflush(stdout);
	if (get_event(ch, RDMA_CM_EVENT_CONNECT_REQUEST, &ev))
		return 1;
	c.id = ev->id;
	rdma_ack_cm_event(ev);
	if (setup(&c) || post_recv(&c))
		return 1;
	counter = (uint64_t *)c.buf;
	*counter = 0;
	pd.addr = htobe64((uintptr_t)c.buf);
	pd.rkey = htobe32(c.mr->rkey);
	pd.len = htobe32(BUF_SIZE);
	cp.private_data = &pd;
	cp.private_data_len = sizeof(pd);
	if (rdma_accept(c.id, &cp))
		return fail("rdma_accept");
	if (get_event(ch, RDMA_CM_EVENT_ESTABLISHED, NULL))
		return 1;
	printf("server: counter at 0x%" PRIxPTR " rkey 0x%x starts at 0\n",
	       (uintptr_t)c.buf, c.mr->rkey);
	/* The client's RDMA Write with Immediate consumes our receive. */
	if (wait_wc(&c, &wc))
		return 1;
	if (wc.opcode != IBV_WC_RECV_RDMA_WITH_IMM ||
	    !(wc.wc_flags & IBV_WC_WITH_IMM)) {
		fprintf(stderr, "server: receive opcode %d flags 0x%x\n",
			wc.opcode, wc.wc_flags);
		return 1;
	}
	printf("server: RDMA Write with Immediate arrived: imm_data 0x%08x, byte_len %u, text \"%s\"\n",
	       be32toh(wc.imm_data), wc.byte_len, c.buf + TEXT_OFF);
	printf("server: counter is now %" PRIu64 "\n", *counter);
	fflush(stdout);
	/* wait for the client to disconnect */
	get_event(ch, RDMA_CM_EVENT_DISCONNECTED, NULL);
	rdma_disconnect(c.id);
	return *counter == 100 && be32toh(wc.imm_data) == 0x5157 ? 0 : 1;
}

static int atomic(struct conn *c, struct pdata *pd, enum ibv_wr_opcode op,
		  uint64_t cmp_add, uint64_t swap, uint64_t *orig)
{
	struct ibv_sge sge = { (uintptr_t)c->buf, 8, c->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = 2, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = IBV_SEND_SIGNALED,
		.wr.atomic = { .remote_addr = pd->addr, .compare_add = cmp_add,
			       .swap = swap, .rkey = pd->rkey },
	}, *bad;
	struct ibv_wc wc;

	if (ibv_post_send(c->id->qp, &wr, &bad))
		return fail("ibv_post_send (atomic)");
	if (wait_wc(c, &wc))
		return 1;
	*orig = *(uint64_t *)c->buf;
	return 0;
}

static int client(const char *addr, const char *src, const char *port)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP }, *ai;
	struct rdma_addrinfo shints = { .ai_flags = RAI_PASSIVE,
					.ai_port_space = RDMA_PS_TCP }, *sai;
	struct rdma_conn_param cp = { .responder_resources = 4,
				      .initiator_depth = 4, .retry_count = 7 };
	const char *text = "hello from siw1";
	struct rdma_cm_event *ev;
	struct conn c = { 0 };
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	struct ibv_wc wc;
	struct pdata pd;
	uint64_t v;
	int i, bad_results = 0;

	if (!ch || rdma_getaddrinfo(addr, port, &hints, &ai))
		return fail("rdma_getaddrinfo");
	if (rdma_create_id(ch, &c.id, NULL, RDMA_PS_TCP))
		return fail("rdma_create_id");
	if (src) {
		if (rdma_getaddrinfo(src, NULL, &shints, &sai))
			return fail("rdma_getaddrinfo (source)");
		if (rdma_resolve_addr(c.id, sai->ai_src_addr, ai->ai_dst_addr,
				      2000))
			return fail("rdma_resolve_addr");
	} else if (rdma_resolve_addr(c.id, NULL, ai->ai_dst_addr, 2000)) {
		return fail("rdma_resolve_addr");
	}
	if (get_event(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(c.id, 2000) ||
	    get_event(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL))
		return 1;
	if (setup(&c) || rdma_connect(c.id, &cp))
		return fail("connect");
	if (get_event(ch, RDMA_CM_EVENT_ESTABLISHED, &ev))
		return 1;
	if (ev->param.conn.private_data_len < sizeof(pd)) {
		fprintf(stderr, "client: short private data\n");
		return 1;
	}
	memcpy(&pd, ev->param.conn.private_data, sizeof(pd));
	rdma_ack_cm_event(ev);
	pd.addr = be64toh(pd.addr);
	pd.rkey = be32toh(pd.rkey);
	printf("client: connected via %s, remote counter 0x%" PRIx64 " rkey 0x%x\n",
	       ibv_get_device_name(c.id->verbs->device), pd.addr, pd.rkey);

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

	strcpy(c.buf + TEXT_OFF, text);
	sge = (struct ibv_sge){ (uintptr_t)c.buf + TEXT_OFF,
				(uint32_t)strlen(text) + 1, c.mr->lkey };
	wr = (struct ibv_send_wr){
		.wr_id = 3, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
		.send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0x5157),
		.wr.rdma = { .remote_addr = pd.addr + TEXT_OFF,
			     .rkey = pd.rkey },
	};
	if (ibv_post_send(c.id->qp, &wr, &bad))
		return fail("ibv_post_send (write with immediate)");
	if (wait_wc(&c, &wc))
		return 1;
	printf("client: RDMA Write with Immediate 0x00005157, %u bytes: done\n",
	       sge.length);
	fflush(stdout);
	sleep(1);
	rdma_disconnect(c.id);
	return bad_results ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *srv = NULL, *cli = NULL, *src = NULL, *port = "7471";
	int o;

	while ((o = getopt(argc, argv, "s:c:b:p:")) != -1) {
		switch (o) {
		case 's': srv = optarg; break;
		case 'c': cli = optarg; break;
		case 'b': src = optarg; break;
		case 'p': port = optarg; break;
		default:
			fprintf(stderr, "usage: %s -s ADDR | -c ADDR [-b SRC] [-p PORT]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (srv)
		return server(srv, port);
	if (cli)
		return client(cli, src, port);
	fprintf(stderr, "usage: %s -s ADDR | -c ADDR [-b SRC] [-p PORT]\n",
		argv[0]);
	return 2;
}
