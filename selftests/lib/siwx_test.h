/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * Glue between rdma_util and kselftest_harness.h: include this instead of
 * kselftest_harness.h. All diagnostics go to stdout, line-buffered, so
 * that the TAP stream keeps them in order (a test's child process leaves
 * through _exit(), which would drop a fully buffered stdout).
 */
#ifndef SIWX_TEST_H
#define SIWX_TEST_H

#include <stdio.h>

#ifndef TH_LOG_STREAM
#define TH_LOG_STREAM stdout
#endif
#include "kselftest_harness.h"
#include "rdma_util.h"

static void __attribute__((constructor)) siwx_line_buffered(void)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
}

/* check (ASSERT_EQ or EXPECT_EQ) that a rdma_util call returned 0 */
#define RU_CHECK_OK(check, expr) do {					\
	int __ru_rc = (expr);						\
	if (__ru_rc)							\
		TH_LOG("%s -> %d: %s", #expr, __ru_rc, ru_errmsg());	\
	check(0, __ru_rc);						\
} while (0)

/* check that [p, p+n) holds the pattern of seed, logging the first diff */
#define RU_CHECK_PATTERN(check, p, n, seed, what) do {			\
	long __ru_at = ru_check((p), (n), (seed));			\
	if (__ru_at >= 0)						\
		TH_LOG("%s: first mismatch at byte %ld of %zu "		\
		       "(seed 0x%llx)", (what), __ru_at, (size_t)(n),	\
		       (unsigned long long)(seed));			\
	check(-1, __ru_at);						\
} while (0)

#define RU_ASSERT_OK(expr)	RU_CHECK_OK(ASSERT_EQ, expr)
#define RU_EXPECT_OK(expr)	RU_CHECK_OK(EXPECT_EQ, expr)
#define RU_ASSERT_PATTERN(p, n, seed, what) \
	RU_CHECK_PATTERN(ASSERT_EQ, p, n, seed, what)
#define RU_EXPECT_PATTERN(p, n, seed, what) \
	RU_CHECK_PATTERN(EXPECT_EQ, p, n, seed, what)

/* Poll one completion, require success and wr_id. */
#define RU_ASSERT_WC_OK(cq, wr_id, wcp) \
	RU_ASSERT_OK(ru_expect_success((cq), (wr_id), (wcp), RU_TIMEOUT_MS))

#endif /* SIWX_TEST_H */
