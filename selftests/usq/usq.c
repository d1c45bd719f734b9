// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * usq - send queue elements a user process writes into its mmapped siw
 * send queue behind libsiw's back (patch 0006).
 *
 * libsiw only ever writes the opcodes user space may post, but the send
 * queue is plain shared memory: any process can put any opcode there and
 * ring the doorbell. Upstream siw dereferences the base_mr field of a
 * REG_MR element as a kernel pointer (Oops) and hits WARN(1, "undefined
 * WQE type") for RECEIVE, SEND_WITH_IMM and the atomics. siwx must refuse
 * each at the doorbell with EINVAL, complete nothing successfully and log
 * no kernel problem (tools/vm/run fails the run on any Oops or WARNING).
 * siwx accepts the RFC 7306 operations (atomics, RDMA Write with
 * Immediate) from user space, but only well formed: one 8-byte result
 * buffer, not inline; at most 5 SGEs with immediate data.
 *
 * The test finds its send queue by posting a Send with a magic wr_id and
 * searching the process's uverbs mappings for it at an SQE boundary; it
 * then writes the crafted element into the next slot and rings the
 * doorbell with a zero-WR IB_USER_VERBS_CMD_POST_SEND, as libsiw does.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/siw-abi.h>

#include "siwx_test.h"

#define MAGIC_WR_ID	0x5157585153510001ULL	/* "siwx" usq marker */
#define BAD_WR_ID	0xbadbadbadULL

/*
 * Find the send queue slot holding a Send with wr_id id in a uverbs
 * mapping; the queue starts at the mapping's first byte.
 */
static struct siw_sqe *find_sqe(uint64_t id, struct siw_sqe **base)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	struct siw_sqe *hit = NULL;

	if (!f)
		return NULL;
	while (!hit && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		struct siw_sqe *q;
		size_t i, n;

		if (!strstr(line, "/dev/infiniband/uverbs") || !strstr(line, "rw"))
			continue;
		if (sscanf(line, "%lx-%lx", &lo, &hi) != 2)
			continue;
		q = (struct siw_sqe *)lo;
		n = (hi - lo) / sizeof(*q);
		for (i = 0; i < n; i++)
			if (q[i].id == id && q[i].opcode == SIW_OP_SEND) {
				hit = &q[i];
				*base = q;
				break;
			}
	}
	fclose(f);
	return hit;
}

static int ring_doorbell(struct ibv_qp *qp)
{
	struct {
		struct ib_uverbs_cmd_hdr hdr;
		struct ib_uverbs_post_send cmd;
	} req;
	struct ib_uverbs_post_send_resp resp;

	memset(&req, 0, sizeof(req));
	memset(&resp, 0, sizeof(resp));
	req.hdr.command = IB_USER_VERBS_CMD_POST_SEND;
	req.hdr.in_words = sizeof(req) / 4;
	req.hdr.out_words = sizeof(resp) / 4;
	req.cmd.response = (uintptr_t)&resp;
	req.cmd.qp_handle = qp->handle;
	req.cmd.wqe_size = sizeof(struct ibv_send_wr);
	if (write(qp->context->cmd_fd, &req, sizeof(req)) == sizeof(req))
		return 0;
	return errno;
}

FIXTURE(usq) {
	struct ru_pair p;
	struct ru_buf cbuf, sbuf;
	struct ru_caps caps;
};

FIXTURE_VARIANT(usq) {
	uint8_t opcode;
	uint8_t num_sge;	/* 0: 1 */
	uint32_t length;	/* 0: 8 */
	uint16_t flags;		/* extra SQE flags */
};

FIXTURE_VARIANT_ADD(usq, reg_mr) { .opcode = SIW_OP_REG_MR };
FIXTURE_VARIANT_ADD(usq, inval_stag) { .opcode = SIW_OP_INVAL_STAG };
FIXTURE_VARIANT_ADD(usq, receive) { .opcode = SIW_OP_RECEIVE };
FIXTURE_VARIANT_ADD(usq, send_with_imm) { .opcode = SIW_OP_SEND_WITH_IMM };
FIXTURE_VARIANT_ADD(usq, read_response) { .opcode = SIW_OP_READ_RESPONSE };
FIXTURE_VARIANT_ADD(usq, read_local_inv) { .opcode = SIW_OP_READ_LOCAL_INV };
FIXTURE_VARIANT_ADD(usq, out_of_range) { .opcode = 0xee };
/* RFC 7306 operations are postable, but only well formed */
FIXTURE_VARIANT_ADD(usq, atomic_response) {
	.opcode = SIW_OP_ATOMIC_RESPONSE };
FIXTURE_VARIANT_ADD(usq, fetch_and_add_two_sge) {
	.opcode = SIW_OP_FETCH_AND_ADD, .num_sge = 2 };
FIXTURE_VARIANT_ADD(usq, comp_and_swap_len4) {
	.opcode = SIW_OP_COMP_AND_SWAP, .length = 4 };
FIXTURE_VARIANT_ADD(usq, masked_fetch_and_add_inline) {
	.opcode = SIW_OP_MASKED_FETCH_AND_ADD, .flags = SIW_WQE_INLINE };
FIXTURE_VARIANT_ADD(usq, write_with_imm_six_sge) {
	.opcode = SIW_OP_WRITE_WITH_IMM, .num_sge = 6 };

FIXTURE_SETUP(usq)
{
	int acc = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ;

	ru_caps_default(&self->caps);
	self->caps.max_send_wr = 4;
	RU_ASSERT_OK(ru_pair_open(&self->p, &self->caps, NULL));
	RU_ASSERT_OK(ru_buf_alloc(&self->cbuf, self->p.cli.pd, 4096, acc));
	RU_ASSERT_OK(ru_buf_alloc(&self->sbuf, self->p.srv.pd, 4096, acc));
}

FIXTURE_TEARDOWN(usq)
{
	ru_buf_free(&self->cbuf);
	ru_buf_free(&self->sbuf);
	ru_pair_close(&self->p);
}

TEST_F(usq, refused)
{
	struct ibv_qp *qp = self->p.cli.qp;
	struct siw_sqe *sqe, *next, *q0;
	struct ibv_wc wc;
	int rc, n;

	/* A real Send marks our slot in the mapped send queue. */
	RU_ASSERT_OK(ru_post_recv(&self->p.srv, &self->sbuf, 0, 64, 7));
	RU_ASSERT_OK(ru_post_send(&self->p.cli, IBV_WR_SEND, &self->cbuf, 0,
				  64, 0, 0, MAGIC_WR_ID, IBV_SEND_SIGNALED));
	RU_ASSERT_WC_OK(self->p.cli.scq, MAGIC_WR_ID, &wc);
	RU_ASSERT_WC_OK(self->p.srv.rcq, 7, &wc);

	sqe = find_sqe(MAGIC_WR_ID, &q0);
	ASSERT_NE(NULL, sqe) TH_LOG("send queue mapping not found");
	/* max_send_wr 4: the queue has 4 slots; libsiw's next one: */
	next = q0 + ((sqe - q0) + 1) % 4;
	ASSERT_EQ(0, next->flags);

	memset(next, 0, sizeof(*next));
	next->id = BAD_WR_ID;
	next->opcode = variant->opcode;
	next->num_sge = variant->num_sge ? variant->num_sge : 1;
	/* Bait for a kernel that trusts the element: a bogus MR pointer. */
	next->base_mr = 0x10;
	next->rkey = self->cbuf.mr->rkey;
	next->sge[0].laddr = (uintptr_t)self->cbuf.addr;
	next->sge[0].length = variant->length ? variant->length : 8;
	next->sge[0].lkey = self->cbuf.mr->lkey;
	for (n = 1; n < next->num_sge && n < SIW_MAX_SGE; n++)
		next->sge[n] = next->sge[0];
	__atomic_store_n(&next->flags,
			 SIW_WQE_VALID | SIW_WQE_SIGNALLED | variant->flags,
			 __ATOMIC_RELEASE);

	rc = ring_doorbell(qp);
	TH_LOG("doorbell for opcode %u: %s", variant->opcode,
	       rc ? strerror(rc) : "accepted");
	EXPECT_EQ(EINVAL, rc);

	/* Nothing may complete successfully for it. */
	n = ru_poll(self->p.cli.scq, &wc, 2000);
	if (n > 0) {
		TH_LOG("completion wr_id 0x%llx status %s",
		       (unsigned long long)wc.wr_id,
		       ibv_wc_status_str(wc.status));
		EXPECT_NE((int)IBV_WC_SUCCESS, (int)wc.status);
	}
}

TEST_HARNESS_MAIN
