// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * churn - connect/disconnect cycles with verified traffic (suite churn,
 * run by churn_guest.sh, which measures slab and `rdma res` around it).
 *
 *   churn [-n CYCLES] [-f FIRST]
 *
 * Each cycle opens one connection (client on SIWX_ADDR1/siw1, in
 * SIWX_NETNS1 when set, server on SIWX_ADDR0/siw0, one listener for all
 * cycles), then:
 *   - the client Sends 4 KiB, the server checks them;
 *   - the client RDMA Writes 4 KiB to the server's buffer and Sends 16
 *     bytes behind it, the server checks the written bytes once that Send
 *     arrived (RDMAP orders the Write's placement before it);
 *   - the server Sends 64 bytes back, the client checks them;
 *   - one side disconnects (the client in even cycles, the server in odd
 *     ones: FIRST + cycle number), both must see DISCONNECTED;
 *   - both ends are destroyed (MRs, QP, CQs, PD, cm_id).
 * Every completion must succeed. The first failure ends the run: the
 * cycle, the step and the reason are printed as "# " lines, exit 1.
 * Exit 0 after CYCLES good cycles, with a summary line; a cycle that took
 * 2 s or more is named with its time and when each of its steps ended.
 *
 * -e (suite failinject: allocation failures injected into siw): a failed
 * cycle is counted, torn down and the run goes on with a new listener;
 * the summary line then says how many cycles were good and how many
 * failed in which step with which error, and the exit status is 1 only
 * when a received or written buffer held the wrong bytes (EBADMSG: an
 * allocation failure may end a connection, never corrupt its data) or
 * when no cycle at all was good.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rdma_util.h"

#define ACC_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		 IBV_ACCESS_REMOTE_READ)
#define LEN	4096	/* the Send and the Write */
#define ACK	64	/* the server's Send back */
#define SLOW_MS	2000	/* a cycle this slow is named (under TCG: 10-100 ms) */

static const char *step = "";

/* the steps of the current cycle and when they ended, for a slow cycle */
#define MAX_MARKS 48
static struct { const char *what; uint64_t ms; } marks[MAX_MARKS];
static int nmarks;
static uint64_t cycle_t0;

static void mark(const char *what)
{
	if (nmarks < MAX_MARKS)
		marks[nmarks++] = (typeof(marks[0])){ what, ru_now_ms() - cycle_t0 };
}

/* rdma_util's steps inside ru_pair_open_on() (client and server) */
static void on_step(struct ru_ep *e, const char *what, int rc, void *arg)
{
	mark(what);
}

#define TRY(expr) do {							\
	step = #expr;							\
	rc = (expr);							\
	mark(#expr);							\
	if (rc)								\
		goto out;						\
} while (0)

/* check a device name: the ends must be on the two devices */
static int on_dev(struct ru_ep *e, const char *want)
{
	const char *got = ibv_get_device_name(e->id->verbs->device);

	if (strcmp(got, want))
		return ru_fail(EXDEV, "end on %s, expected %s", got, want);
	return 0;
}

static int check(const struct ru_buf *b, size_t off, size_t len,
		 uint64_t seed, const char *what)
{
	long at = ru_check(b->addr + off, len, seed);

	if (at >= 0)
		return ru_fail(EBADMSG, "%s: first mismatch at byte %ld of %zu",
			       what, at, len);
	return 0;
}

static int got_len(const struct ibv_wc *wc, uint32_t want)
{
	if (wc->byte_len != want)
		return ru_fail(EBADMSG, "receive of %u bytes, expected %u",
			       wc->byte_len, want);
	return 0;
}

static int cycle(struct ru_listener *l, long n, uint64_t seed)
{
	struct ru_ep c = { 0 }, s = { 0 }, *first, *second;
	struct ru_buf cb = { 0 }, sb = { 0 };
	struct ru_caps caps;
	struct ibv_wc wc;
	int rc;

	ru_caps_default(&caps);
	caps.on_step = on_step;
	nmarks = 0;
	cycle_t0 = ru_now_ms();
	TRY(ru_pair_open_on(l, &c, &s, &caps, &caps));
	TRY(on_dev(&c, ru_env("SIWX_DEV1", "siw1")));
	TRY(on_dev(&s, ru_env("SIWX_DEV0", "siw0")));
	TRY(ru_buf_alloc(&cb, c.pd, 3 * LEN, ACC_ALL));
	TRY(ru_buf_alloc(&sb, s.pd, 3 * LEN, ACC_ALL));

	/* a Send: client [0, LEN) -> server [0, LEN) */
	ru_fill(cb.addr, LEN, seed);
	TRY(ru_post_recv(&s, &sb, 0, LEN, 1));
	TRY(ru_post_recv(&s, &sb, 2 * LEN, 16, 2));
	TRY(ru_post_recv(&c, &cb, 2 * LEN, ACK, 3));
	TRY(ru_post_send(&c, IBV_WR_SEND, &cb, 0, LEN, 0, 0, 10,
			 IBV_SEND_SIGNALED));
	TRY(ru_expect_success(c.scq, 10, &wc, RU_TIMEOUT_MS));
	TRY(ru_expect_success(s.rcq, 1, &wc, RU_TIMEOUT_MS));
	TRY(got_len(&wc, LEN));
	TRY(check(&sb, 0, LEN, seed, "Send"));

	/* an RDMA Write: client [LEN, 2 LEN) -> server [LEN, 2 LEN), a Send behind */
	ru_fill(cb.addr + LEN, LEN, seed + 1);
	TRY(ru_post_send(&c, IBV_WR_RDMA_WRITE, &cb, LEN, LEN,
			 (uintptr_t)sb.addr + LEN, sb.mr->rkey, 11,
			 IBV_SEND_SIGNALED));
	TRY(ru_post_send(&c, IBV_WR_SEND, &cb, 0, 16, 0, 0, 12,
			 IBV_SEND_SIGNALED));
	TRY(ru_expect_success(c.scq, 11, &wc, RU_TIMEOUT_MS));
	TRY(ru_expect_success(c.scq, 12, &wc, RU_TIMEOUT_MS));
	TRY(ru_expect_success(s.rcq, 2, &wc, RU_TIMEOUT_MS));
	TRY(got_len(&wc, 16));
	TRY(check(&sb, LEN, LEN, seed + 1, "RDMA Write"));

	/* a Send back: server -> client */
	ru_fill(sb.addr + 2 * LEN, ACK, seed + 2);
	TRY(ru_post_send(&s, IBV_WR_SEND, &sb, 2 * LEN, ACK, 0, 0, 13,
			 IBV_SEND_SIGNALED));
	TRY(ru_expect_success(s.scq, 13, &wc, RU_TIMEOUT_MS));
	TRY(ru_expect_success(c.rcq, 3, &wc, RU_TIMEOUT_MS));
	TRY(got_len(&wc, ACK));
	TRY(check(&cb, 2 * LEN, ACK, seed + 2, "Send back"));

	first = n % 2 ? &s : &c;
	second = n % 2 ? &c : &s;
	TRY(ru_ep_disconnect(first));
	TRY(ru_ep_wait_disconnected(second, RU_TIMEOUT_MS));
	TRY(ru_ep_wait_disconnected(first, RU_TIMEOUT_MS));
	step = "";
out:
	ru_buf_free(&cb);
	ru_buf_free(&sb);
	ru_ep_close(&c);
	ru_ep_close(&s);
	return rc;
}

/* -e: the failed cycles, by step and error */
#define MAX_KINDS 32
static struct { const char *step; int rc; long n; } kinds[MAX_KINDS];
static int nkinds;

static void count_failure(const char *where, int rc)
{
	int k;

	for (k = 0; k < nkinds; k++)
		if (kinds[k].rc == rc && !strcmp(kinds[k].step, where))
			break;
	if (k == nkinds) {
		if (nkinds == MAX_KINDS)
			return;
		kinds[nkinds++] = (typeof(kinds[0])){ where, rc, 0 };
	}
	kinds[k].n++;
}

/* -e: a new listener after a failed cycle (a connection request of the
 * failed one may still be queued on the old); listen may fail too */
static int relisten(struct ru_listener *l)
{
	int tries, rc = 0;

	ru_listener_close(l);
	for (tries = 0; tries < 50; tries++) {
		memset(l, 0, sizeof(*l));
		rc = ru_listen(l, ru_addr0(), 0, 16);
		if (!rc)
			return 0;
		count_failure("ru_listen", rc);
		usleep(100000);
	}
	return rc;
}

int main(int argc, char **argv)
{
	long n = 100, first = 0, i, good = 0, failed = 0;
	struct ru_listener l = { 0 };
	uint64_t seed = ru_random_seed(), t0 = ru_now_ms(), t = t0;
	int opt, rc, keep_going = 0, corrupt = 0, k;

	setvbuf(stdout, NULL, _IOLBF, 0);
	while ((opt = getopt(argc, argv, "n:f:e")) != -1) {
		switch (opt) {
		case 'n':
			n = strtol(optarg, NULL, 0);
			break;
		case 'f':
			first = strtol(optarg, NULL, 0);
			break;
		case 'e':
			keep_going = 1;
			break;
		default:
			fprintf(stderr, "usage: %s [-n CYCLES] [-f FIRST] [-e]\n",
				argv[0]);
			return 2;
		}
	}
	rc = keep_going ? relisten(&l) : ru_listen(&l, ru_addr0(), 0, 16);
	if (rc) {
		printf("# listen on %s: %s\n", ru_addr0(), ru_errmsg());
		return 1;
	}
	for (i = 0; i < n; i++) {
		uint64_t c0 = ru_now_ms();

		rc = cycle(&l, first + i, seed + 4 * (uint64_t)(first + i));
		if (ru_now_ms() - c0 >= SLOW_MS) {
			int k;

			printf("# cycle %ld took %llu ms; its steps ended at:\n",
			       first + i, (unsigned long long)(ru_now_ms() - c0));
			for (k = 0; k < nmarks; k++)
				printf("#   %6llu ms %.60s\n",
				       (unsigned long long)marks[k].ms,
				       marks[k].what);
		}
		if (rc && keep_going) {
			printf("# cycle %ld failed: %s -> %d: %s\n", first + i,
			       step, rc, ru_errmsg());
			failed++;
			count_failure(step, rc);
			if (rc == -EBADMSG)
				corrupt++;
			rc = relisten(&l);
			if (rc) {
				printf("# listen on %s: %s\n", ru_addr0(),
				       ru_errmsg());
				break;
			}
			continue;
		}
		if (rc) {
			printf("# cycle %ld failed after %ld good ones: %s -> %d: %s\n",
			       first + i, i, step, rc, ru_errmsg());
			printf("# seed 0x%llx\n", (unsigned long long)seed);
			break;
		}
		good++;
		if ((i + 1) % 100 == 0 && i + 1 < n) {
			printf("# %ld cycles, the last 100 in %llu ms\n", i + 1,
			       (unsigned long long)(ru_now_ms() - t));
			t = ru_now_ms();
		}
	}
	ru_listener_close(&l);
	if (keep_going) {
		for (k = 0; k < nkinds; k++)
			printf("# failed: %ld x %s -> %d (%s)\n", kinds[k].n,
			       kinds[k].step, kinds[k].rc, strerror(-kinds[k].rc));
		printf("RESULT cycles=%ld good=%ld failed=%ld corrupt=%ld ms=%llu\n",
		       i, good, failed, (long)corrupt,
		       (unsigned long long)(ru_now_ms() - t0));
		return rc || corrupt || !good ? 1 : 0;
	}
	if (!rc)
		printf("# %ld cycles (%ld-%ld) in %llu ms, seed 0x%llx\n", n,
		       first, first + n - 1,
		       (unsigned long long)(ru_now_ms() - t0),
		       (unsigned long long)seed);
	return rc ? 1 : 0;
}
