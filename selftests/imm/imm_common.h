/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * imm_common.h - shared by the RFC 7306 Immediate Data test programs
 * (imm, imm_peer, imm_probe): what is specific to immediate data. The
 * connections (receive queue on an SRQ, a receive CQ with a completion
 * channel or from ibv_create_cq_ex, a QP with ibv_qp_ex send operations:
 * struct ru_caps), posting and polling (struct ru_wc) are rdma_util's.
 *
 * The verbs immediate value is opaque 32 bits in network byte order
 * (struct ibv_send_wr.imm_data, struct ibv_wc.imm_data): the tests keep it
 * as the raw __be32 they post and compare it bit for bit with what the
 * receiver reports. On the wire (Documentation/rfc7306.md) the Immediate
 * Data message carries 64 bits: 32 zero bits, then those 4 bytes as they
 * are in memory.
 *
 * The 64-bit immediate of siwx goes through the direct-verbs header
 * <infiniband/siwdv.h>. When it is not available at build time,
 * HAVE_SIWDV is 0 and the 64-bit tests fail (they must not pass silently).
 */
#ifndef SIWX_IMM_COMMON_H
#define SIWX_IMM_COMMON_H

#include <endian.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "rdma_util.h"

#define IM_ACC (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		IBV_ACCESS_REMOTE_READ)

/* siwx limits of an RDMA Write with Immediate (siw-abi.h) */
#define IM_MAX_SGE_IMM		5
#define IM_MAX_INLINE_IMM	64

/* ru_caps.send_ops of the QPs that post through ibv_qp_ex */
#define IM_SEND_OPS (IBV_QP_EX_WITH_RDMA_WRITE |			\
		     IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |		\
		     IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ)

/* A random 32-bit immediate, with the edge values now and then. */
static inline __be32 im_rand_imm(uint64_t *s)
{
	static const uint32_t edge[] = { 0, 0xffffffffu, 0x80000000u, 1,
					 0x01020304u };
	uint32_t r = (uint32_t)ru_rng(s);

	if (ru_rand(s, 8) == 0)
		r = edge[ru_rand(s, sizeof(edge) / sizeof(edge[0]))];
	return htobe32(r);
}

/*
 * A single-SGE write with immediate from [addr, addr+len) of mr: 0 or a
 * negative errno (ru_post_sge()).
 */
static inline int im_post_wimm(struct ibv_qp *qp, struct ibv_mr *mr,
			       void *addr, uint32_t len, uint64_t raddr,
			       uint32_t rkey, __be32 imm, unsigned int flags,
			       uint64_t wr_id)
{
	struct ibv_sge sge = { .addr = (uintptr_t)addr, .length = len,
			       .lkey = mr->lkey };

	return ru_post_sge(qp, IBV_WR_RDMA_WRITE_WITH_IMM, &sge, 1, raddr,
			   rkey, imm, flags, wr_id);
}

#endif /* SIWX_IMM_COMMON_H */
