// SPDX-License-Identifier: GPL-2.0
/*
 * tcp_pingpong: TCP round-trip latency between two endpoints, the raw-TCP
 * reference for the perftest latency tests in tools/bench.
 *
 *   tcp_pingpong -s [-p PORT] [-b ADDR] [-B]     server: echo every message
 *   tcp_pingpong -c ADDR [-p PORT] [-z SIZE] [-n ITERS] [-w WARMUP] [-B]
 *                                                client: send SIZE bytes, wait
 *                                                for the SIZE-byte echo, repeat
 *
 * The server accepts one connection, echoes messages of the size the client
 * announces in its first 4 bytes (network order) until the client closes,
 * then exits.  TCP_NODELAY is set on both sides.  Like perftest's latency
 * tests, both sides busy-poll (recv with MSG_DONTWAIT in a loop) unless -B
 * (blocking recv) is given.  The client prints one line:
 *
 *   size=64 iters=1000 mode=spin rtt_min_us=.. rtt_median_us=.. rtt_avg_us=.. rtt_p99_us=.. oneway_median_us=..
 *
 * oneway = RTT / 2, which is what ib_write_lat and ib_send_lat report.
 * The client retries the connection for a few seconds (the server may still
 * be starting).  Exit status 0 on success.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int spin = 1;	/* busy-poll instead of blocking in recv() */

static int xfer_all(int fd, void *buf, size_t len, int is_send)
{
	char *p = buf;

	while (len) {
		ssize_t n = is_send ? send(fd, p, len, MSG_NOSIGNAL) :
				      recv(fd, p, len, spin ? MSG_DONTWAIT : 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK))
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

static int server(const char *bind_addr, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int one = 1, lfd, fd;
	uint32_t size_be;
	size_t size;
	char *buf;

	if (bind_addr && inet_pton(AF_INET, bind_addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_pingpong: bad address %s\n", bind_addr);
		return 2;
	}
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	if (lfd < 0 || setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		perror("tcp_pingpong: listen");
		return 1;
	}
	fd = accept(lfd, NULL, NULL);
	if (fd < 0) {
		perror("tcp_pingpong: accept");
		return 1;
	}
	close(lfd);
	nodelay(fd);
	if (xfer_all(fd, &size_be, sizeof(size_be), 0))
		return 1;
	size = ntohl(size_be);
	if (size == 0 || size > (64u << 20))
		return 1;
	buf = malloc(size);
	if (!buf)
		return 1;
	while (xfer_all(fd, buf, size, 0) == 0)
		if (xfer_all(fd, buf, size, 1))
			break;
	close(fd);
	free(buf);
	return 0;
}

static int client(const char *addr, int port, size_t size, int iters, int warmup)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	double *rtt, sum = 0, t0;
	uint32_t size_be = htonl((uint32_t)size);
	int fd = -1, i, try;
	char *buf;

	if (inet_pton(AF_INET, addr, &sa.sin_addr) != 1) {
		fprintf(stderr, "tcp_pingpong: bad address %s\n", addr);
		return 2;
	}
	for (try = 0; try < 100; try++) {
		fd = socket(AF_INET, SOCK_STREAM, 0);
		if (fd < 0) {
			perror("tcp_pingpong: socket");
			return 1;
		}
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			break;
		close(fd);
		fd = -1;
		usleep(100000);
	}
	if (fd < 0) {
		fprintf(stderr, "tcp_pingpong: cannot connect to %s:%d\n", addr, port);
		return 1;
	}
	nodelay(fd);
	buf = calloc(1, size);
	rtt = calloc((size_t)iters, sizeof(*rtt));
	if (!buf || !rtt)
		return 1;
	if (xfer_all(fd, &size_be, sizeof(size_be), 1))
		return 1;
	for (i = -warmup; i < iters; i++) {
		t0 = now_us();
		if (xfer_all(fd, buf, size, 1) || xfer_all(fd, buf, size, 0)) {
			fprintf(stderr, "tcp_pingpong: connection lost\n");
			return 1;
		}
		if (i >= 0) {
			rtt[i] = now_us() - t0;
			sum += rtt[i];
		}
	}
	close(fd);
	qsort(rtt, (size_t)iters, sizeof(*rtt), cmp_double);
	{
		double med = iters % 2 ? rtt[iters / 2] :
				(rtt[iters / 2 - 1] + rtt[iters / 2]) / 2;
		int p99 = (int)((iters - 1) * 0.99);

		printf("size=%zu iters=%d mode=%s rtt_min_us=%.2f rtt_median_us=%.2f rtt_avg_us=%.2f rtt_p99_us=%.2f oneway_median_us=%.2f\n",
		       size, iters, spin ? "spin" : "block", rtt[0], med, sum / iters, rtt[p99], med / 2);
	}
	free(buf);
	free(rtt);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tcp_pingpong -s [-p PORT] [-b ADDR] [-B]\n"
		"       tcp_pingpong -c ADDR [-p PORT] [-z SIZE] [-n ITERS] [-w WARMUP] [-B]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	const char *addr = NULL, *bind_addr = NULL;
	int opt, is_server = 0, port = 18600, iters = 1000, warmup = 20;
	long size = 64;

	while ((opt = getopt(argc, argv, "sc:b:p:z:n:w:B")) != -1) {
		switch (opt) {
		case 'B': spin = 0; break;
		case 's': is_server = 1; break;
		case 'c': addr = optarg; break;
		case 'b': bind_addr = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 'z': size = atol(optarg); break;
		case 'n': iters = atoi(optarg); break;
		case 'w': warmup = atoi(optarg); break;
		default: usage();
		}
	}
	if (is_server == !!addr || port <= 0 || port > 65535 || size <= 0 ||
	    size > (64L << 20) || iters <= 0 || warmup < 0)
		usage();
	return is_server ? server(bind_addr, port) : client(addr, port, (size_t)size, iters, warmup);
}
