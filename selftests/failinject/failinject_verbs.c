// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * failinject_verbs - create and destroy every kind of verbs object on a
 * siw device, over and over, for the suite failinject (allocation
 * failures injected into siw while it runs).
 *
 *   failinject_verbs [-d DEV] [-n ITERATIONS] [-s]
 *
 * Each iteration opens DEV (default SIWX_DEV0, siw0: a user context and
 * its mmap entries), allocates a PD, creates a CQ, registers an MR, creates
 * an RC QP (its send and receive queues mapped into the process) and an
 * SRQ, posts a receive to the SRQ, and destroys everything in reverse.
 * Sizes rotate from one iteration to the next (CQ 1-4096 entries, MR
 * 4 KiB-4 MiB, QP 1-1024 work requests, 1-4 SGEs), so that small and
 * large kmalloc()s, vmalloc()s and page pins all come up.
 *
 * A step that fails skips those that need it. Its errno must be one an
 * allocation failure explains: ENOMEM, EAGAIN, ENOBUFS, EFAULT (a user
 * page that could not be faulted in and pinned). Any other errno, or a
 * destroy that fails, is "unexpected". With -s (strict: nothing injected)
 * every step must succeed.
 *
 * Output: "# " lines (the failures by step and errno), then
 *   RESULT iterations=N complete=N failed_steps=N unexpected=N ms=N
 * Exit 0 when nothing was unexpected (and, with -s, nothing failed).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_util.h"

enum step { OPEN, PD, CQ, MR, QP, SRQ, RECV, DESTROY, NSTEPS };
static const char *const step_name[NSTEPS] = {
	"ibv_open_device", "ibv_alloc_pd", "ibv_create_cq", "ibv_reg_mr",
	"ibv_create_qp", "ibv_create_srq", "ibv_post_srq_recv", "destroy",
};

#define MAX_ERRNO 140
static long fails[NSTEPS][MAX_ERRNO + 1];
static long unexpected, failed_steps;
static int strict;

static int expected_errno(int e)
{
	return e == ENOMEM || e == EAGAIN || e == ENOBUFS || e == EFAULT;
}

/* a step failed with errno e (0: the call failed and set no errno) */
static void failed(enum step s, int e, long iter)
{
	failed_steps++;
	fails[s][e >= 0 && e <= MAX_ERRNO ? e : 0]++;
	if (strict || s == DESTROY || !expected_errno(e)) {
		unexpected++;
		printf("# iteration %ld: %s failed: errno %d (%s)%s\n", iter,
		       step_name[s], e, strerror(e),
		       strict ? ", nothing was injected" : "");
	}
}

static struct ibv_device *find_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	int i;

	for (i = 0; l && l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			return l[i];	/* the list is never freed: one lookup */
	return NULL;
}

static void iteration(struct ibv_device *dev, long i)
{
	static const int cqes[] = { 1, 16, 256, 4096 };
	static const size_t mrlen[] = { 4096, 65536, 1 << 20, 4 << 20 };
	static const int wrs[] = { 1, 64, 1024 };
	struct ibv_context *ctx;
	struct ibv_pd *pd = NULL;
	struct ibv_cq *cq = NULL;
	struct ibv_mr *mr = NULL;
	struct ibv_qp *qp = NULL;
	struct ibv_srq *srq = NULL;
	size_t len = mrlen[i % 4];
	void *buf = NULL;
	int rc;

	errno = 0;
	ctx = ibv_open_device(dev);
	if (!ctx) {
		failed(OPEN, errno, i);
		return;
	}
	errno = 0;
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		failed(PD, errno, i);
		goto out;
	}
	errno = 0;
	cq = ibv_create_cq(ctx, cqes[i % 4], NULL, NULL, 0);
	if (!cq)
		failed(CQ, errno, i);
	if (posix_memalign(&buf, 4096, len)) {
		buf = NULL;
	} else {
		memset(buf, 0x5a, len);
		errno = 0;
		mr = ibv_reg_mr(pd, buf, len, IBV_ACCESS_LOCAL_WRITE |
				IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				IBV_ACCESS_REMOTE_ATOMIC);
		if (!mr)
			failed(MR, errno, i);
	}
	if (cq) {
		struct ibv_qp_init_attr qa = {
			.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
			.cap = {
				.max_send_wr = wrs[i % 3],
				.max_recv_wr = wrs[(i + 1) % 3],
				.max_send_sge = 1 + i % 4,
				.max_recv_sge = 1 + (i + 1) % 4,
			},
		};

		errno = 0;
		qp = ibv_create_qp(pd, &qa);
		if (!qp)
			failed(QP, errno, i);
	}
	{
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = wrs[i % 3], .max_sge = 1 + i % 2 },
		};

		errno = 0;
		srq = ibv_create_srq(pd, &sa);
		if (!srq)
			failed(SRQ, errno, i);
	}
	if (srq && mr) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)buf, .length = 4096, .lkey = mr->lkey,
		};
		struct ibv_recv_wr wr = { .wr_id = i, .sg_list = &sge,
					  .num_sge = 1 }, *bad;

		rc = ibv_post_srq_recv(srq, &wr, &bad);
		if (rc)
			failed(RECV, rc, i);
	}
out:
	if (srq && (rc = ibv_destroy_srq(srq)))
		failed(DESTROY, rc, i);
	if (qp && (rc = ibv_destroy_qp(qp)))
		failed(DESTROY, rc, i);
	if (mr && (rc = ibv_dereg_mr(mr)))
		failed(DESTROY, rc, i);
	if (cq && (rc = ibv_destroy_cq(cq)))
		failed(DESTROY, rc, i);
	if (pd && (rc = ibv_dealloc_pd(pd)))
		failed(DESTROY, rc, i);
	if (ibv_close_device(ctx))
		failed(DESTROY, errno, i);
	free(buf);
}

int main(int argc, char **argv)
{
	const char *name = ru_env("SIWX_DEV0", "siw0");
	long n = 100, i, before, complete = 0;
	struct ibv_device *dev;
	uint64_t t0 = ru_now_ms();
	int opt, s, e;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "d:n:s")) != -1) {
		switch (opt) {
		case 'd':
			name = optarg;
			break;
		case 'n':
			n = strtol(optarg, NULL, 0);
			break;
		case 's':
			strict = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-d DEV] [-n ITERATIONS] [-s]\n",
				argv[0]);
			return 2;
		}
	}
	dev = find_dev(name);
	if (!dev) {
		printf("# no device %s\n", name);
		return 1;
	}
	for (i = 0; i < n; i++) {
		before = failed_steps;
		iteration(dev, i);
		complete += failed_steps == before;
	}
	for (s = 0; s < NSTEPS; s++)
		for (e = 0; e <= MAX_ERRNO; e++)
			if (fails[s][e])
				printf("# failed: %ld x %s, errno %d (%s)\n",
				       fails[s][e], step_name[s], e, strerror(e));
	printf("RESULT iterations=%ld complete=%ld failed_steps=%ld unexpected=%ld ms=%llu\n",
	       n, complete, failed_steps, unexpected,
	       (unsigned long long)(ru_now_ms() - t0));
	return unexpected ? 1 : 0;
}
