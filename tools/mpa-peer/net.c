// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * mpa-peer: sockets. Connect (retrying while refused), listen and accept,
 * the send queue (one send() per frame, or coalesced), and the reads: of
 * the handshake (rx_exact) and of FPDUs (rx_for).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "mpa-peer.h"

static void nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/*
 * A TCP connection to addr:port, from src if given (the first attempt;
 * retries take any source). Connection refused is retried every 200 ms
 * until timeout ms have passed. Dies on failure.
 */
int tcp_connect(const char *addr, const char *port, const char *src,
		uint64_t timeout)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai;
	uint64_t end;
	int fd, rc;

	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc)
		die(2, "%s:%s: %s", addr, port, gai_strerror(rc));
	fd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (fd < 0)
		die(1, "socket: %s", strerror(errno));
	if (src) {
		struct addrinfo *sa;

		if (getaddrinfo(src, NULL, &hints, &sa) ||
		    bind(fd, sa->ai_addr, sa->ai_addrlen))
			die(1, "bind %s: %s", src, strerror(errno));
		freeaddrinfo(sa);
	}
	end = now_ms() + timeout;
	for (;;) {
		if (!connect(fd, ai->ai_addr, ai->ai_addrlen))
			break;
		if ((errno != ECONNREFUSED && errno != EINTR) || now_ms() > end)
			die(1, "connect %s:%s: %s", addr, port, strerror(errno));
		/* listener not up yet: a new socket and retry */
		close(fd);
		usleep(200000);
		fd = socket(ai->ai_family, SOCK_STREAM, 0);
		if (fd < 0)
			die(1, "socket: %s", strerror(errno));
	}
	nodelay(fd);
	freeaddrinfo(ai);
	return fd;
}

/* A listening socket on addr:port; prints "listening ADDR:PORT". */
int tcp_listen(const char *addr, const char *port)
{
	struct addrinfo hints = {
		.ai_flags = AI_PASSIVE, .ai_socktype = SOCK_STREAM
	}, *ai;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	unsigned int lport = 0;
	int lfd, one = 1, rc;

	rc = getaddrinfo(addr, port, &hints, &ai);
	if (rc)
		die(2, "%s:%s: %s", addr, port, gai_strerror(rc));
	lfd = socket(ai->ai_family, SOCK_STREAM, 0);
	if (lfd < 0)
		die(1, "socket: %s", strerror(errno));
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, ai->ai_addr, ai->ai_addrlen) || listen(lfd, 16))
		die(1, "listen %s:%s: %s", addr, port, strerror(errno));
	freeaddrinfo(ai);
	if (!getsockname(lfd, (struct sockaddr *)&ss, &sl))
		lport = ntohs(ss.ss_family == AF_INET6 ?
			      ((struct sockaddr_in6 *)&ss)->sin6_port :
			      ((struct sockaddr_in *)&ss)->sin_port);
	out("listening %s:%u\n", addr, lport);
	return lfd;
}

/* The next connection on lfd within timeout ms, or -1. */
int tcp_accept(int lfd, uint64_t timeout)
{
	struct pollfd pfd = { .fd = lfd, .events = POLLIN };
	uint64_t end = now_ms() + timeout, t;
	int fd = -1, k;

	while ((t = now_ms()) < end) {
		k = poll(&pfd, 1, (int)(end - t));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			die(1, "poll: %s", strerror(errno));
		if (!k)
			break;
		fd = accept(lfd, NULL, NULL);
		if (fd >= 0)
			break;
		if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED)
			die(1, "accept: %s", strerror(errno));
	}
	if (fd >= 0)
		nodelay(fd);
	return fd;
}

/* ---------------------------------------------------------------- state */

struct state S;

/* the start of a connection's state: fd, MSNs, request ids, buffers */
void conn_init(int fd)
{
	int q;

	for (q = 0; q < SIWX_DDP_QN_COUNT; q++)
		S.msn[q] = SIWX_DDP_MSN_FIRST;
	S.fd = fd;
	S.reqid = 1;		/* atomic Request Identifiers count from 1 */
	S.crc = 0;
	S.crc_req = 0;
	S.rxlen = 0;
	S.txlen = 0;
	S.closed = 0;
	S.rx_fpdus = 0;
	S.terms = 0;
}

/* ---------------------------------------------------------------- send */

void tx_flush(void)
{
	size_t off = 0;
	ssize_t n;

	while (off < S.txlen) {
		n = send(S.fd, S.tx + off, S.txlen - off, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			out("tx-error errno=%d (%s) unsent=%zu\n", errno,
			    strerror(errno), S.txlen - off);
			break;
		}
		off += n;
	}
	S.txlen = 0;
}

/* Queue a frame; sent at once unless --coalesce (then at tx_flush()). */
void tx_queue(const uint8_t *p, size_t n)
{
	if (S.txlen + n > sizeof(S.tx))
		tx_flush();
	if (n > sizeof(S.tx)) {
		S.txlen = 0;
		memcpy(S.tx, p, sizeof(S.tx));
		die(2, "frame too large");
	}
	memcpy(S.tx + S.txlen, p, n);
	S.txlen += n;
	if (!S.coalesce)
		tx_flush();
}

/* ---------------------------------------------------------------- receive */

/*
 * Read for up to ms milliseconds, stopping early on close, or (until >= 0)
 * once an FPDU with RDMAP opcode 'until' (RX_UNTIL_ANY: any FPDU) has
 * arrived. Prints every FPDU.
 */
void rx_for(uint64_t ms, int until)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
	int n, got;

	tx_flush();
	got = rx_parse(until);
	while (!S.closed && !got) {
		uint64_t t = now_ms();
		ssize_t r;

		if (t >= end)
			break;
		n = poll(&pfd, 1, (int)(end - t));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (S.rxlen == sizeof(S.rx))
			die(1, "receive buffer full (bogus length?)");
		r = recv(S.fd, S.rx + S.rxlen, sizeof(S.rx) - S.rxlen, 0);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			out("reset errno=%d (%s)\n", errno, strerror(errno));
			S.closed = 1;
			break;
		}
		if (r == 0) {
			S.closed = 1;
			break;
		}
		S.rxlen += r;
		got = rx_parse(until);
	}
}

/* Read exactly n bytes of handshake within ms (0 ok, -1 eof/timeout). */
int rx_exact(size_t n, uint64_t ms)
{
	uint64_t end = now_ms() + ms;
	struct pollfd pfd = { .fd = S.fd, .events = POLLIN };
	ssize_t r;

	while (S.rxlen < n) {
		uint64_t t = now_ms();
		int k;

		if (t >= end)
			return -1;
		k = poll(&pfd, 1, (int)(end - t));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		r = recv(S.fd, S.rx + S.rxlen, sizeof(S.rx) - S.rxlen, 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			if (r < 0)
				out("reset errno=%d (%s)\n", errno, strerror(errno));
			S.closed = 1;
			return -1;
		}
		S.rxlen += r;
	}
	return 0;
}
