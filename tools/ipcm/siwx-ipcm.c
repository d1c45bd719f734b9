// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * siwx-ipcm - check the CM traffic of a RoCEv2 capture against the IBTA
 * RDMA IP CM Service annex (see siwx-ipcm.1).
 *
 *   siwx-ipcm [-q | --json] FILE.pcap
 *
 * Exit status: 0 no deviation, 1 deviations, 2 usage or file error.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "capture.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: siwx-ipcm [-q | --json] FILE.pcap\n"
		"Check the InfiniBand CM messages of a RoCEv2 capture\n"
		"(libpcap format, UDP port %d) against the IBTA RDMA IP CM\n"
		"Service annex: one line per connection (5-tuple, CM\n"
		"messages), every deviation.\n"
		"  -q          deviations only\n"
		"  --json      one JSON object per connection a line\n"
		"  -h, --help  this text\n"
		"FILE may be - for standard input.\n"
		"Exit status: 0 no deviation, 1 deviations, 2 usage or file\n"
		"error.\n",
		SIWX_ROCEV2_UDP_PORT);
}

/* all of a non-seekable input (a pipe), in memory */
static uint8_t *slurp(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	uint8_t *buf = malloc(cap), *p;
	ssize_t r;

	while (buf) {
		if (n == cap) {
			p = realloc(buf, cap * 2);
			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n);
		if (r == 0) {
			*len = n;
			return buf;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (r > 0)
			n += r;
	}
	free(buf);
	return NULL;
}

int main(int argc, char **argv)
{
	enum check_format fmt = CHECK_TEXT;
	const char *file = NULL;
	int i, fd, rc, only_files = 0, mapped = 0, help = 0, many = 0;
	uint8_t *buf;
	struct stat sb;
	size_t len = 0;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (only_files || a[0] != '-' || !a[1]) {
			if (file)
				many = 1;
			file = a;
		} else if (!strcmp(a, "--")) {
			only_files = 1;
		} else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			help = 1;
		} else if (!strcmp(a, "-q")) {
			fmt = CHECK_QUIET;
		} else if (!strcmp(a, "--json")) {
			fmt = CHECK_JSON;
		} else {
			fprintf(stderr, "siwx-ipcm: unknown option %s\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (help) {
		usage(stdout);
		return 0;
	}
	if (many)
		fprintf(stderr, "siwx-ipcm: one capture file only\n");
	if (!file || many) {
		usage(stderr);
		return 2;
	}
	fd = strcmp(file, "-") ? open(file, O_RDONLY) : 0;
	if (fd < 0 || fstat(fd, &sb)) {
		fprintf(stderr, "siwx-ipcm: %s: %s\n", file, strerror(errno));
		return 2;
	}
	if (S_ISDIR(sb.st_mode)) {
		fprintf(stderr, "siwx-ipcm: %s: %s\n", file, strerror(EISDIR));
		return 2;
	}
	if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
		/* captures can be large: mapped, not read */
		len = sb.st_size;
		buf = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (buf == MAP_FAILED) {
			fprintf(stderr, "siwx-ipcm: %s: %s\n", file,
				strerror(errno));
			return 2;
		}
		mapped = 1;
	} else {
		/* a pipe, standard input, or an empty file */
		buf = slurp(fd, &len);
		if (!buf) {
			fprintf(stderr, "siwx-ipcm: %s: %s\n", file,
				strerror(errno ? errno : ENOMEM));
			return 2;
		}
	}
	rc = ipcm_check_capture(buf, len, file, fmt, stdout, stderr);
	if (fflush(stdout) && rc < 2) {
		fprintf(stderr, "siwx-ipcm: writing the report: %s\n",
			strerror(errno));
		rc = 2;
	}
	if (mapped)
		munmap(buf, len);
	else
		free(buf);
	if (fd)
		close(fd);
	return rc;
}
