// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: output (die, out, hexstr) and the clock.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "mpa-peer.h"

void die(int rc, const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fprintf(stderr, "mpa-peer: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(rc);
}

/* non-zero: out() prints nothing (a program that links these units) */
int out_quiet;

/* every output line goes out at once (tests read it while we run) */
void out(const char *fmt, ...)
{
	va_list ap;

	if (out_quiet)
		return;
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fflush(stdout);
}

/* n bytes as hex into dst (truncated to fit), "-" for none */
void hexstr(char *dst, size_t dstlen, const uint8_t *p, size_t n)
{
	size_t i;

	if (!n) {
		snprintf(dst, dstlen, "-");
		return;
	}
	for (i = 0; i < n && 2 * i + 3 <= dstlen; i++)
		sprintf(dst + 2 * i, "%02x", p[i]);
	dst[2 * i] = 0;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}
