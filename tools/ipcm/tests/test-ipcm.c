// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * test-ipcm - libipcm's unit test. Prints TAP, one line per check.
 *
 *   test-ipcm                 every field and every named error of the
 *                             library; a round trip against Linux 6.12's
 *                             own encoding (struct cma_hdr, below)
 *   test-ipcm --fuzz FILE...  siwx-ipcm's capture reader and checker on
 *                             each pcap FILE cut anywhere, each of its
 *                             records cut at every byte and with every
 *                             byte changed, and random mutations; each
 *                             input in a buffer of its exact size (so a
 *                             sanitizer build sees any read past the
 *                             end); one line per FILE
 *
 * tests/test_ipcm.py runs both and checks that the Linux part below is
 * what cma.c says (when a Linux 6.12 source is at hand).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include "capture.h"
#include "ipcm.h"

#define ARRAY_SIZE(a)	(sizeof(a) / sizeof((a)[0]))

static int tests, failures;

static int ok(int cond, const char *fmt, ...)
{
	va_list ap;

	tests++;
	if (!cond)
		failures++;
	printf("%sok %d - ", cond ? "" : "not ", tests);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	return cond;
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	fputs("# ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
}

/* "major-version|ip-version" for a set, for messages */
static const char *set_str(ipcm_errset set)
{
	static char buf[512];
	int e;

	buf[0] = 0;
	for (e = 1; e < IPCM_E_COUNT; e++)
		if (set & IPCM_ERR_BIT(e))
			snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf),
				 "%s%s", buf[0] ? "|" : "", ipcm_err_name(e));
	return buf[0] ? buf : "none";
}

/* exactly the set: on failure the test says what came instead */
static void ok_set(ipcm_errset got, ipcm_errset want, const char *what)
{
	char w[512];

	snprintf(w, sizeof(w), "%s", set_str(want));
	if (!ok(got == want, "%s: %s", what, w))
		diag("got %s", set_str(got));
}

static void v4(struct sockaddr_in *s, const char *a, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin_family = AF_INET;
	s->sin_port = htons(port);
	inet_pton(AF_INET, a, &s->sin_addr);
}

static void v6(struct sockaddr_in6 *s, const char *a, uint16_t port)
{
	memset(s, 0, sizeof(*s));
	s->sin6_family = AF_INET6;
	s->sin6_port = htons(port);
	inet_pton(AF_INET6, a, &s->sin6_addr);
}

/* ---------------------------------------------------------------- numbers */

static void t_constants(void)
{
	ok(SIWX_IPCM_HDR_SIZE == 36, "header is 36 bytes (slide 4)");
	ok(SIWX_IPCM_CONSUMER_PD_SIZE == 56,
	   "56 bytes of REQ private data left to the consumer (slide 4)");
	ok(SIWX_CM_REQ_OFF_PD == 140 && SIWX_IPCM_HDR_OFF_SRC_ADDR == 4,
	   "private data at REQ byte 140, addresses at 144 (slide 13)");
	ok((SIWX_MAD_HDR_SIZE + SIWX_CM_REQ_OFF_PD +
	    SIWX_IPCM_HDR_OFF_SRC_ADDR) % 8 == 0 &&
	   (SIWX_MAD_HDR_SIZE + SIWX_CM_REQ_OFF_PD +
	    SIWX_IPCM_HDR_OFF_DST_ADDR) % 8 == 0,
	   "both addresses 8-byte aligned in the MAD (slide 13)");
	ok(SIWX_IPCM_REJ_SIZE == 72 && SIWX_IPCM_REJ_VALUE_MAX == 68,
	   "reject bytes 0-71, suggested value bytes 4-71 (slide 6)");
	ok(SIWX_MAD_HDR_SIZE + SIWX_CM_REQ_OFF_PD + SIWX_CM_REQ_PD_SIZE ==
	   SIWX_MAD_SIZE, "REQ private data ends the 256-byte MAD");
	ok(SIWX_MAD_HDR_SIZE + SIWX_CM_REJ_OFF_PD + SIWX_CM_REJ_PD_SIZE ==
	   SIWX_MAD_SIZE &&
	   SIWX_CM_REJ_OFF_ARI + SIWX_CM_REJ_ARI_SIZE == SIWX_CM_REJ_OFF_PD,
	   "REJ: ARI then private data, to the end of the MAD");
}

static void t_names(void)
{
	int e, f, uniq = 1, named = 1, back = 1;

	for (e = 0; e < IPCM_E_COUNT; e++) {
		if (!ipcm_err_name(e) || !*ipcm_err_name(e) ||
		    !ipcm_err_text(e) || !*ipcm_err_text(e)) {
			named = 0;
			diag("error %d has no name or text", e);
			continue;
		}
		if (ipcm_err_by_name(ipcm_err_name(e)) != (enum ipcm_err)e)
			back = 0;
		for (f = 0; f < e; f++)
			if (!strcmp(ipcm_err_name(e), ipcm_err_name(f)))
				uniq = 0;
	}
	ok(named, "every error has a name and a text");
	ok(uniq, "error names are unique");
	ok(back, "ipcm_err_by_name() finds every error by its name");
	ok(ipcm_err_name(IPCM_E_COUNT) == NULL &&
	   ipcm_err_by_name("no-such-error") == IPCM_E_COUNT,
	   "no name beyond the enum");
	ok(!strcmp(ipcm_err_name(IPCM_E_SID_RANGE), "sid-not-in-annex-range") &&
	   !strcmp(ipcm_err_name(IPCM_E_MAJOR), "major-version") &&
	   !strcmp(ipcm_err_name(IPCM_E_SRC_ADDR), "src-addr-format") &&
	   !strcmp(ipcm_err_name(IPCM_E_REJ_LAYER), "reject-layer"),
	   "the names the man page and the docs use");
	ok(ipcm_errset_first(0) == IPCM_OK &&
	   ipcm_errset_first(IPCM_ERR_BIT(IPCM_E_IPV) |
			     IPCM_ERR_BIT(IPCM_E_DST_ADDR)) == IPCM_E_IPV,
	   "ipcm_errset_first()");

	ok(!strcmp(ipcm_ari_name(0), "unspecified") &&
	   !strcmp(ipcm_ari_name(1), "major-version") &&
	   !strcmp(ipcm_ari_name(2), "minor-version") &&
	   !strcmp(ipcm_ari_name(3), "ip-version") &&
	   !strcmp(ipcm_ari_name(4), "src-addr-format") &&
	   !strcmp(ipcm_ari_name(5), "dst-addr-format") &&
	   !strcmp(ipcm_ari_name(6), "unknown-addr") &&
	   ipcm_ari_name(7) == NULL && ipcm_ari_name(0xff) == NULL,
	   "ARI codes 0x00-0x06 named, 0x07 up not (slide 7)");
	ok(ipcm_ari_for(IPCM_E_MAJOR) == SIWX_IPCM_ARI_MAJOR_VERSION &&
	   ipcm_ari_for(IPCM_E_MINOR) == SIWX_IPCM_ARI_MINOR_VERSION &&
	   ipcm_ari_for(IPCM_E_IPV) == SIWX_IPCM_ARI_IP_VERSION &&
	   ipcm_ari_for(IPCM_E_SRC_ADDR) == SIWX_IPCM_ARI_SRC_ADDR &&
	   ipcm_ari_for(IPCM_E_DST_ADDR) == SIWX_IPCM_ARI_DST_ADDR &&
	   ipcm_ari_for(IPCM_E_HDR_RSVD) == SIWX_IPCM_ARI_UNSPECIFIED &&
	   ipcm_ari_for(IPCM_E_SHORT) == SIWX_IPCM_ARI_UNSPECIFIED,
	   "each header error maps to its ARI code");
	ok(!strcmp(ipcm_layer_name(0), "ip-cm") &&
	   !strcmp(ipcm_layer_name(1), "ulp") && !ipcm_layer_name(2),
	   "rejection layers 0x00 and 0x01 named (slide 6)");
}

/* ---------------------------------------------------------------- SID */

static void t_sid(void)
{
	static const uint8_t protos[] = { SIWX_IPCM_PROTOCOL_TCP,
					  SIWX_IPCM_PROTOCOL_UDP,
					  SIWX_IPCM_PROTOCOL_IB, 132, 0, 255 };
	static const uint16_t ports[] = { 0, 1, 7471, 0x8000, 0xffff };
	int good = 1, bytes = 1;
	uint8_t b[8], p;
	uint16_t port;
	size_t i, j;
	uint64_t sid;

	for (i = 0; i < sizeof(protos); i++) {
		for (j = 0; j < ARRAY_SIZE(ports); j++) {
			sid = ipcm_sid(protos[i], ports[j]);
			if (!ipcm_sid_in_range(sid) ||
			    ipcm_sid_decode(sid, &p, &port) != IPCM_OK ||
			    p != protos[i] || port != ports[j])
				good = 0;
			ipcm_put_be64(b, sid);
			if (b[0] != SIWX_IPCM_SID_AGN || b[1] || b[2] || b[3] ||
			    b[4] != SIWX_IPCM_SID_RANGE_RDMA_AWARE ||
			    b[5] != protos[i] || b[6] != ports[j] >> 8 ||
			    b[7] != (ports[j] & 0xff) ||
			    ipcm_get_be64(b) != sid)
				bytes = 0;
		}
	}
	ok(good, "SID round trip: protocol and port of 36 SIDs");
	ok(bytes, "SID bytes: 00 | 00 00 00 | 01 | protocol | port (slide 5)");

	/* Linux's port spaces are annex SIDs: include/rdma/rdma_cm.h */
	ok(ipcm_sid(SIWX_IPCM_PROTOCOL_TCP, 0) == SIWX_IPCM_PS_TCP &&
	   ipcm_sid(SIWX_IPCM_PROTOCOL_UDP, 0) == SIWX_IPCM_PS_UDP &&
	   ipcm_sid(SIWX_IPCM_PROTOCOL_IB, 0) == SIWX_IPCM_PS_IB,
	   "RDMA_IB_IP_PS_TCP/UDP/IB are the annex SIDs of port 0");
	sid = ipcm_sid(SIWX_IPCM_PROTOCOL_TCP, 7471);
	ok((sid & SIWX_IPCM_PS_MASK) == SIWX_IPCM_PS_TCP &&
	   (uint16_t)sid == 7471,
	   "rdma_cm's SID of TCP port 7471: RDMA_IB_IP_PS_TCP | port");
	ok(!strcmp(ipcm_protocol_name(6), "tcp") &&
	   !strcmp(ipcm_protocol_name(17), "udp") &&
	   !strcmp(ipcm_protocol_name(0x3f), "ib") &&
	   !ipcm_protocol_name(132), "protocol names");

	/* each byte of the prefix on its own */
	for (i = 0; i <= SIWX_IPCM_SID_OFF_RANGE; i++) {
		ipcm_put_be64(b, ipcm_sid(6, 7471));
		b[i] ^= i == SIWX_IPCM_SID_OFF_RANGE ? 0x03 : 0x80;
		sid = ipcm_get_be64(b);
		ok(!ipcm_sid_in_range(sid) &&
		   ipcm_sid_decode(sid, &p, &port) == IPCM_E_SID_RANGE &&
		   p == 6 && port == 7471,
		   "SID byte %zu changed: sid-not-in-annex-range, protocol and port still read",
		   i);
	}
	ok(ipcm_sid_decode(0, &p, &port) == IPCM_E_SID_RANGE &&
	   ipcm_sid_decode(0x0000000002060001ULL, &p, &port) ==
		   IPCM_E_SID_RANGE,
	   "SID 0 and the range byte 0x02: not annex");
}

/* ---------------------------------------------------------------- REQ */

static void good_v4(struct ipcm_req_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->ip_version = 4;
	h->src_port = 40001;
	inet_pton(AF_INET, "192.0.2.1", h->src_addr + 12);
	inet_pton(AF_INET, "192.0.2.2", h->dst_addr + 12);
}

static void good_v6(struct ipcm_req_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->ip_version = 6;
	h->src_port = 40002;
	inet_pton(AF_INET6, "2001:db8::1", h->src_addr);
	inet_pton(AF_INET6, "2001:db8::2", h->dst_addr);
}

static ipcm_errset roundtrip(const struct ipcm_req_hdr *h,
			     struct ipcm_req_hdr *back)
{
	uint8_t b[SIWX_CM_REQ_PD_SIZE] = { 0 };

	ipcm_req_hdr_encode(h, b);
	return ipcm_req_hdr_decode(b, sizeof(b), back);
}

static void t_req_layout(void)
{
	static const uint8_t want[SIWX_IPCM_HDR_SIZE] = {
		0x00, 0x40, 0x9c, 0x41,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 1,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 192, 0, 2, 2,
	};
	struct ipcm_req_hdr h, back;
	uint8_t b[SIWX_IPCM_HDR_SIZE];
	int v, fields = 1;

	good_v4(&h);
	ipcm_req_hdr_encode(&h, b);
	ok(!memcmp(b, want, sizeof(b)),
	   "IPv4 header bytes: 00 40 | port | ::192.0.2.1 | ::192.0.2.2");
	ok_set(roundtrip(&h, &back), 0, "good IPv4 header");
	ok(!memcmp(&h, &back, sizeof(h)), "IPv4 header round trip");
	good_v6(&h);
	ok_set(roundtrip(&h, &back), 0, "good IPv6 header");
	ok(!memcmp(&h, &back, sizeof(h)), "IPv6 header round trip");

	/* every value of each nibble, the others untouched */
	for (v = 0; v < 16; v++) {
		good_v4(&h);
		h.major = v;
		roundtrip(&h, &back);
		fields &= back.major == v && back.minor == 0 &&
			  back.ip_version == 4 && back.reserved == 0;
		good_v4(&h);
		h.minor = v;
		roundtrip(&h, &back);
		fields &= back.minor == v && back.major == 0 &&
			  back.ip_version == 4;
		good_v4(&h);
		h.ip_version = v;
		roundtrip(&h, &back);
		fields &= back.ip_version == v && back.reserved == 0 &&
			  back.major == 0;
		good_v4(&h);
		h.reserved = v;
		roundtrip(&h, &back);
		fields &= back.reserved == v && back.ip_version == 4;
	}
	ok(fields,
	   "MajV, MinV, IPV and reserved nibbles: 16 values each, independent");
	good_v4(&h);
	h.major = 0x1f;		/* a 5-bit value: the nibble only */
	ipcm_req_hdr_encode(&h, b);
	ok(b[0] == 0xf0 && b[1] == 0x40,
	   "a field wider than its nibble is cut to 4 bits");

	fields = 1;
	for (v = 0; v < 4; v++) {
		static const uint16_t ports[] = { 0, 1, 0x1234, 0xffff };

		good_v4(&h);
		h.src_port = ports[v];
		ipcm_req_hdr_encode(&h, b);
		roundtrip(&h, &back);
		fields &= back.src_port == ports[v] &&
			  ipcm_get_be16(b + 2) == ports[v];
	}
	ok(fields, "source port big-endian at bytes 2-3, round trip");
	good_v6(&h);
	ipcm_req_hdr_encode(&h, b);
	ok(!memcmp(b + 4, h.src_addr, 16) && !memcmp(b + 20, h.dst_addr, 16),
	   "IPv6 addresses at bytes 4-19 and 20-35, in network order");
}

static void t_req_errors(void)
{
	struct ipcm_req_hdr h, back;
	uint8_t b[SIWX_CM_REQ_PD_SIZE] = { 0 };
	int v;

	good_v4(&h);
	h.major = 1;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_MAJOR), "major 1");
	h.major = 15;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_MAJOR), "major 15");
	good_v4(&h);
	h.minor = 1;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_MINOR), "minor 1");
	h.minor = 15;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_MINOR), "minor 15");
	for (v = 0; v < 16; v++) {
		if (v == 4 || v == 6)
			continue;
		good_v4(&h);
		h.ip_version = v;
		if (roundtrip(&h, &back) != IPCM_ERR_BIT(IPCM_E_IPV))
			break;
	}
	ok(v == 16,
	   "IP versions 0-3, 5, 7-15: ip-version (and no address judged)");
	good_v6(&h);
	h.ip_version = 5;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_IPV),
	       "IPv6 addresses under IPV 5");
	good_v4(&h);
	h.reserved = 1;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_HDR_RSVD),
	       "reserved bit 0 of byte 1");
	h.reserved = 8;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_HDR_RSVD),
	       "reserved bit 3 of byte 1");

	/* IPv4 address formats */
	good_v4(&h);
	h.src_addr[0] = 0x20;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_SRC_ADDR),
	       "IPV 4, source with an IPv6 prefix");
	good_v4(&h);
	h.src_addr[11] = 1;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_SRC_ADDR),
	       "IPV 4, source ::1:c000:201 (neither zero-prefixed nor mapped)");
	good_v4(&h);
	h.dst_addr[10] = 0xff;
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_DST_ADDR),
	       "IPV 4, destination ::ff00:c000:202");
	good_v4(&h);
	h.src_addr[10] = h.src_addr[11] = 0xff;
	h.dst_addr[10] = h.dst_addr[11] = 0xff;
	ok_set(roundtrip(&h, &back), 0, "IPV 4, IPv4-mapped addresses taken");
	good_v4(&h);
	inet_pton(AF_INET6, "2001:db8::1", h.src_addr);
	inet_pton(AF_INET6, "2001:db8::2", h.dst_addr);
	ok_set(roundtrip(&h, &back),
	       IPCM_ERR_BIT(IPCM_E_SRC_ADDR) | IPCM_ERR_BIT(IPCM_E_DST_ADDR),
	       "IPV 4, IPv6 addresses on both sides");

	/* IPv6 address formats */
	good_v6(&h);
	inet_pton(AF_INET6, "::ffff:192.0.2.1", h.src_addr);
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_SRC_ADDR),
	       "IPV 6, source IPv4-mapped");
	good_v6(&h);
	inet_pton(AF_INET6, "::192.0.2.2", h.dst_addr);
	ok_set(roundtrip(&h, &back), IPCM_ERR_BIT(IPCM_E_DST_ADDR),
	       "IPV 6, destination an IPv4 address as Linux writes one");
	good_v6(&h);
	inet_pton(AF_INET6, "::", h.src_addr);
	inet_pton(AF_INET6, "::1", h.dst_addr);
	ok_set(roundtrip(&h, &back), 0, "IPV 6, :: and ::1 are IPv6 addresses");

	/* all at once: each reported */
	good_v4(&h);
	h.major = 2;
	h.minor = 3;
	h.reserved = 4;
	h.src_addr[0] = 1;
	h.dst_addr[0] = 1;
	ok_set(roundtrip(&h, &back),
	       IPCM_ERR_BIT(IPCM_E_MAJOR) | IPCM_ERR_BIT(IPCM_E_MINOR) |
	       IPCM_ERR_BIT(IPCM_E_HDR_RSVD) | IPCM_ERR_BIT(IPCM_E_SRC_ADDR) |
	       IPCM_ERR_BIT(IPCM_E_DST_ADDR), "five faults, five errors");

	/* length */
	good_v4(&h);
	ipcm_req_hdr_encode(&h, b);
	ok_set(ipcm_req_hdr_decode(b, 35, &back), IPCM_ERR_BIT(IPCM_E_SHORT),
	       "35 bytes of private data");
	ok_set(ipcm_req_hdr_decode(b, 0, &back), IPCM_ERR_BIT(IPCM_E_SHORT),
	       "no private data");
	ok_set(ipcm_req_hdr_decode(b, 36, &back), 0, "exactly 36 bytes");
	ok_set(ipcm_req_hdr_check(&h), 0,
	       "ipcm_req_hdr_check() of a good header");
}

static void t_sockaddr(void)
{
	struct sockaddr_in s4, d4, *o4;
	struct sockaddr_in6 s6, d6, *o6;
	struct sockaddr_storage os, od;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct ipcm_req_hdr h, ref;
	char a[INET6_ADDRSTRLEN];

	v4(&s4, "192.0.2.1", 40001);
	v4(&d4, "192.0.2.2", 7471);
	ok(ipcm_req_hdr_from_sockaddr((void *)&s4, (void *)&d4, &h) ==
	   IPCM_OK, "from AF_INET sockaddrs");
	good_v4(&ref);
	ok(!memcmp(&h, &ref, sizeof(h)) && !ipcm_req_hdr_check(&h),
	   "... version 0.0, IPV 4, source port, zero-prefixed addresses");
	ok(ipcm_req_hdr_to_sockaddr(&h, 7471, &os, &od) == IPCM_OK,
	   "to AF_INET sockaddrs");
	o4 = (void *)&os;
	ok(!memcmp(o4, &s4, sizeof(s4)),
	   "... the requester's address and port");
	o4 = (void *)&od;
	ok(!memcmp(o4, &d4, sizeof(d4)),
	   "... the listener's address, the port from the SID");
	ok(!strcmp(ipcm_addr_str(&h, h.src_addr, a, sizeof(a)), "192.0.2.1"),
	   "IPv4 address as text");

	v6(&s6, "2001:db8::1", 40002);
	v6(&d6, "2001:db8::2", 7471);
	ok(ipcm_req_hdr_from_sockaddr((void *)&s6, (void *)&d6, &h) ==
	   IPCM_OK, "from AF_INET6 sockaddrs");
	good_v6(&ref);
	ok(!memcmp(&h, &ref, sizeof(h)), "... IPV 6, both addresses");
	ipcm_req_hdr_to_sockaddr(&h, 7471, &os, &od);
	o6 = (void *)&os;
	ok(!memcmp(o6, &s6, sizeof(s6)), "to AF_INET6: the requester");
	o6 = (void *)&od;
	ok(!memcmp(o6, &d6, sizeof(d6)), "to AF_INET6: the listener");
	ok(!strcmp(ipcm_addr_str(&h, h.dst_addr, a, sizeof(a)), "2001:db8::2"),
	   "IPv6 address as text");

	v6(&s6, "::ffff:192.0.2.1", 40001);
	v6(&d6, "::ffff:192.0.2.2", 7471);
	ok(ipcm_req_hdr_from_sockaddr((void *)&s6, (void *)&d6, &h) ==
	   IPCM_OK, "from two IPv4-mapped AF_INET6 sockaddrs");
	good_v4(&ref);
	ok(!memcmp(&h, &ref, sizeof(h)), "... sent as IPV 4, as from AF_INET");
	v6(&d6, "2001:db8::2", 7471);
	ok(ipcm_req_hdr_from_sockaddr((void *)&s6, (void *)&d6, &h) ==
	   IPCM_E_SRC_ADDR, "a mapped source beside an IPv6 destination: src-addr-format");
	ok(ipcm_req_hdr_from_sockaddr((void *)&d6, (void *)&s6, &h) ==
	   IPCM_E_DST_ADDR, "a mapped destination beside an IPv6 source: dst-addr-format");
	ok(ipcm_req_hdr_from_sockaddr((void *)&s4, (void *)&d6, &h) ==
	   IPCM_E_FAMILY, "AF_INET to AF_INET6: address-family");
	ok(ipcm_req_hdr_from_sockaddr((void *)&un, (void *)&un, &h) ==
	   IPCM_E_FAMILY, "AF_UNIX: address-family");
	good_v4(&h);
	h.ip_version = 5;
	memset(&os, 0xa5, sizeof(os));
	ok(ipcm_req_hdr_to_sockaddr(&h, 1, &os, &od) == IPCM_E_IPV &&
	   ((uint8_t *)&os)[0] == 0xa5,
	   "to sockaddr under IPV 5: ip-version, nothing written");
}

/* ---------------------------------------------------------------- REJ */

static void t_rej(void)
{
	struct ipcm_rej r, back;
	uint8_t b[SIWX_IPCM_REJ_SIZE + 8];
	size_t n;
	int a, all = 1;

	for (a = 0; a < SIWX_IPCM_ARI_COUNT; a++) {
		memset(&r, 0, sizeof(r));
		r.ari = a;
		n = ipcm_rej_encode(&r, b);
		all &= n == 4 && b[0] == 0 && b[1] == a && !b[2] && !b[3] &&
		       !ipcm_rej_decode(b, n, &back) && back.ari == a &&
		       back.layer == 0 && back.value_len == 0;
	}
	ok(all, "ARI codes 0x00-0x06 without value: 4 bytes, round trip");

	memset(&r, 0, sizeof(r));
	r.ari = SIWX_IPCM_ARI_IP_VERSION;
	r.value_len = 1;
	r.value[0] = 6;
	n = ipcm_rej_encode(&r, b);
	ok(n == 5 && !memcmp(b, "\x00\x03\x01\x00\x06", 5),
	   "ip-version with suggested value 6: 00 03 01 00 06 (slide 6)");
	memset(&r, 0, sizeof(r));
	r.ari = SIWX_IPCM_ARI_UNKNOWN_ADDR;
	r.value_len = 16;
	inet_pton(AF_INET6, "2001:db8::2", r.value);
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), 0,
	       "unknown-addr with a 16-byte suggested address");
	ok(n == 20 && back.value_len == 16 && !memcmp(back.value, r.value, 16),
	   "... round trip of the value");
	memset(&r, 0, sizeof(r));
	r.value_len = SIWX_IPCM_REJ_VALUE_MAX;
	memset(r.value, 0x5a, sizeof(r.value));
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), 0, "a 68-byte value, the most");
	ok(n == 72 && back.value[67] == 0x5a, "... fills bytes 4-71");

	memset(&r, 0, sizeof(r));
	r.layer = SIWX_IPCM_LAYER_ULP;
	r.ulp_len = 10;
	memcpy(r.ulp, "ULP reason", 10);
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), 0,
	       "layer 0x01 (ULP) with 10 bytes");
	ok(n == 11 && b[0] == 1 && back.ulp_len == 10 &&
	   !memcmp(back.ulp, "ULP reason", 10), "... its bytes 1-10 the ULP's");
	r.ulp_len = 0;
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), 0, "layer 0x01 alone");

	/* each malformation */
	memset(&r, 0, sizeof(r));
	r.layer = 2;
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), IPCM_ERR_BIT(IPCM_E_REJ_LAYER),
	       "layer 0x02");
	b[0] = 0xff;
	ok_set(ipcm_rej_decode(b, 4, &back), IPCM_ERR_BIT(IPCM_E_REJ_LAYER),
	       "layer 0xff");
	memset(&r, 0, sizeof(r));
	r.ari = 7;
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), IPCM_ERR_BIT(IPCM_E_ARI_UNKNOWN),
	       "ARI 0x07");
	r.ari = 0xff;
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), IPCM_ERR_BIT(IPCM_E_ARI_UNKNOWN),
	       "ARI 0xff");
	memset(&r, 0, sizeof(r));
	r.value_len = SIWX_IPCM_REJ_VALUE_MAX + 1;
	n = ipcm_rej_encode(&r, b);
	ok(n == 72, "a 69-byte value is encoded in 72 bytes");
	ok_set(ipcm_rej_decode(b, n, &back), IPCM_ERR_BIT(IPCM_E_VALUE_LEN),
	       "suggested value length 69");
	memset(&r, 0, sizeof(r));
	r.value_len = 10;
	ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, 12, &back), IPCM_ERR_BIT(IPCM_E_VALUE_TRUNC),
	       "suggested value length 10 in an ARI of 12 bytes");
	memset(&r, 0, sizeof(r));
	r.reserved = 1;
	n = ipcm_rej_encode(&r, b);
	ok_set(ipcm_rej_decode(b, n, &back), IPCM_ERR_BIT(IPCM_E_REJ_RSVD),
	       "reserved byte 3 set");
	ok_set(ipcm_rej_decode(b, 0, &back), IPCM_ERR_BIT(IPCM_E_REJ_SHORT),
	       "no ARI at all");
	memset(b, 0, sizeof(b));
	ok_set(ipcm_rej_decode(b, 3, &back), IPCM_ERR_BIT(IPCM_E_REJ_SHORT),
	       "layer 0x00 in 3 bytes");
	ok_set(ipcm_rej_decode(b, 1, &back), IPCM_ERR_BIT(IPCM_E_REJ_SHORT),
	       "layer 0x00 alone");
	b[1] = 9;
	b[3] = 1;
	ok_set(ipcm_rej_decode(b, 4, &back),
	       IPCM_ERR_BIT(IPCM_E_ARI_UNKNOWN) | IPCM_ERR_BIT(IPCM_E_REJ_RSVD),
	       "two faults, two errors");
	memset(b, 0, sizeof(b));
	ok_set(ipcm_rej_decode(b, sizeof(b), &back), 0,
	       "an ARI longer than 72 bytes is read as 72");
}

/* ---------------------------------------------------------------- Linux */

/*
 * Linux 6.12, drivers/infiniband/core/cma.c: the header as rdma_cm writes
 * and reads it. The declarations and the statements marked "cma.c" are
 * the kernel's, token for token (test_ipcm.py compares them with the
 * source when one is at hand); only the kernel types are mapped here.
 */
typedef uint8_t u8;
typedef uint16_t u16;
typedef uint16_t __be16;
typedef uint32_t __be32;
typedef uint64_t __be64;

/* cma.c */
union cma_ip_addr {
	struct in6_addr ip6;
	struct {
		__be32 pad[3];
		__be32 addr;
	} ip4;
};

/* cma.c */
struct cma_hdr {
	u8 cma_version;
	u8 ip_version;	/* IP version: 7:4 */
	__be16 port;
	union cma_ip_addr src_addr;
	union cma_ip_addr dst_addr;
};

/* cma.c */
#define CMA_VERSION 0x00

/* cma.c */
static inline u8 cma_get_ip_ver(const struct cma_hdr *hdr)
{
	return hdr->ip_version >> 4;
}

/* cma.c */
static void cma_set_ip_ver(struct cma_hdr *hdr, u8 ip_ver)
{
	hdr->ip_version = (ip_ver << 4) | (hdr->ip_version & 0xF);
}

/*
 * cma_format_hdr(), with the id's two addresses as arguments; the buffer
 * comes zeroed, as cma_connect_ib()'s kzalloc() gives it.
 */
static void linux_format_hdr(void *hdr, const struct sockaddr *src,
			     const struct sockaddr *dst)
{
	struct cma_hdr *cma_hdr;

	cma_hdr = hdr;
	cma_hdr->cma_version = CMA_VERSION;
	if (src->sa_family == AF_INET) {
		struct sockaddr_in *src4, *dst4;

		src4 = (struct sockaddr_in *) src;
		dst4 = (struct sockaddr_in *) dst;

		cma_set_ip_ver(cma_hdr, 4);
		cma_hdr->src_addr.ip4.addr = src4->sin_addr.s_addr;
		cma_hdr->dst_addr.ip4.addr = dst4->sin_addr.s_addr;
		cma_hdr->port = src4->sin_port;
	} else if (src->sa_family == AF_INET6) {
		struct sockaddr_in6 *src6, *dst6;

		src6 = (struct sockaddr_in6 *) src;
		dst6 = (struct sockaddr_in6 *) dst;

		cma_set_ip_ver(cma_hdr, 6);
		cma_hdr->src_addr.ip6 = src6->sin6_addr;
		cma_hdr->dst_addr.ip6 = dst6->sin6_addr;
		cma_hdr->port = src6->sin6_port;
	}
}

/*
 * cma_save_ip_info() with cma_save_ip4_info()/cma_save_ip6_info(): what
 * the passive side makes of a header. src is the listener's address (the
 * header's destination, the port from the SID), dst the requester's.
 */
static int linux_save_ip_info(struct sockaddr *src_addr,
			      struct sockaddr *dst_addr,
			      struct cma_hdr *hdr, __be64 service_id)
{
	__be16 port;

	if (hdr->cma_version != CMA_VERSION)
		return -EINVAL;

	port = htons((u16)service_id);

	switch (cma_get_ip_ver(hdr)) {
	case 4:
		*(struct sockaddr_in *)src_addr = (struct sockaddr_in) {
			.sin_family = AF_INET,
			.sin_addr.s_addr = hdr->dst_addr.ip4.addr,
			.sin_port = port,
		};
		*(struct sockaddr_in *)dst_addr = (struct sockaddr_in) {
			.sin_family = AF_INET,
			.sin_addr.s_addr = hdr->src_addr.ip4.addr,
			.sin_port = hdr->port,
		};
		break;
	case 6:
		*(struct sockaddr_in6 *)src_addr = (struct sockaddr_in6) {
			.sin6_family = AF_INET6,
			.sin6_addr = hdr->dst_addr.ip6,
			.sin6_port = port,
		};
		*(struct sockaddr_in6 *)dst_addr = (struct sockaddr_in6) {
			.sin6_family = AF_INET6,
			.sin6_addr = hdr->src_addr.ip6,
			.sin6_port = hdr->port,
		};
		break;
	default:
		return -EAFNOSUPPORT;
	}

	return 0;
}

static void t_linux_one(const char *fam, const struct sockaddr *src,
			const struct sockaddr *dst, size_t salen,
			uint16_t dport)
{
	uint8_t lx[SIWX_CM_REQ_PD_SIZE] = { 0 };
	uint8_t ours[SIWX_CM_REQ_PD_SIZE] = { 0 };
	struct sockaddr_storage ls, ld, os, od;
	struct ipcm_req_hdr h;
	ipcm_errset set;
	uint64_t sid = ipcm_sid(SIWX_IPCM_PROTOCOL_TCP, dport);

	linux_format_hdr(lx, src, dst);
	ok(ipcm_req_hdr_from_sockaddr(src, dst, &h) == IPCM_OK,
	   "%s: the library's header of the same connection", fam);
	ipcm_req_hdr_encode(&h, ours);
	ok(!memcmp(lx, ours, sizeof(lx)),
	   "%s: byte-identical to cma_format_hdr()'s", fam);

	set = ipcm_req_hdr_decode(lx, sizeof(lx), &h);
	ok_set(set, 0, "Linux's header checked by the library");
	ipcm_req_hdr_to_sockaddr(&h, dport, &os, &od);
	memset(&ls, 0, sizeof(ls));
	memset(&ld, 0, sizeof(ld));
	ok(linux_save_ip_info((void *)&ld, (void *)&ls, (void *)lx, sid) == 0,
	   "%s: cma_save_ip_info() takes it", fam);
	ok(!memcmp(&os, &ls, salen) && !memcmp(&od, &ld, salen),
	   "%s: the library reads the addresses and ports Linux reads", fam);
	ok(!memcmp(&os, src, salen) && !memcmp(&od, dst, salen),
	   "%s: ... which are the connection's", fam);

	memset(&ls, 0, sizeof(ls));
	memset(&ld, 0, sizeof(ld));
	ok(linux_save_ip_info((void *)&ld, (void *)&ls, (void *)ours, sid) ==
	   0 && !memcmp(&ls, src, salen) && !memcmp(&ld, dst, salen),
	   "%s: Linux reads the library's header right", fam);
}

static void t_linux(void)
{
	struct sockaddr_in s4, d4;
	struct sockaddr_in6 s6, d6;
	struct sockaddr_storage a, b;
	struct ipcm_req_hdr h;
	uint8_t pd[SIWX_CM_REQ_PD_SIZE];

	ok(sizeof(struct cma_hdr) == SIWX_IPCM_HDR_SIZE &&
	   offsetof(struct cma_hdr, port) == SIWX_IPCM_HDR_OFF_SRC_PORT &&
	   offsetof(struct cma_hdr, src_addr) == SIWX_IPCM_HDR_OFF_SRC_ADDR &&
	   offsetof(struct cma_hdr, dst_addr) == SIWX_IPCM_HDR_OFF_DST_ADDR &&
	   offsetof(union cma_ip_addr, ip4.addr) ==
		   SIWX_IPCM_HDR_ADDR_OFF_IPV4,
	   "struct cma_hdr: 36 bytes, the annex's offsets");

	v4(&s4, "192.0.2.1", 40001);
	v4(&d4, "192.0.2.2", 7471);
	t_linux_one("IPv4", (void *)&s4, (void *)&d4, sizeof(s4), 7471);
	v6(&s6, "2001:db8::1", 40002);
	v6(&d6, "2001:db8::2", 7471);
	t_linux_one("IPv6", (void *)&s6, (void *)&d6, sizeof(s6), 7471);

	/* where Linux and the annex (the library) agree to refuse */
	good_v4(&h);
	h.major = 1;
	ipcm_req_hdr_encode(&h, pd);
	ok(linux_save_ip_info((void *)&a, (void *)&b, (void *)pd, 0) ==
	   -EINVAL && ipcm_req_hdr_check(&h) == IPCM_ERR_BIT(IPCM_E_MAJOR),
	   "major 1: Linux -EINVAL, library major-version");
	good_v4(&h);
	h.minor = 1;
	ipcm_req_hdr_encode(&h, pd);
	ok(linux_save_ip_info((void *)&a, (void *)&b, (void *)pd, 0) ==
	   -EINVAL && ipcm_req_hdr_check(&h) == IPCM_ERR_BIT(IPCM_E_MINOR),
	   "minor 1: Linux -EINVAL (whole-byte compare), library minor-version");
	good_v4(&h);
	h.ip_version = 5;
	ipcm_req_hdr_encode(&h, pd);
	ok(linux_save_ip_info((void *)&a, (void *)&b, (void *)pd, 0) ==
	   -EAFNOSUPPORT && ipcm_req_hdr_check(&h) == IPCM_ERR_BIT(IPCM_E_IPV),
	   "IPV 5: Linux -EAFNOSUPPORT, library ip-version");

	/* and where Linux is more lenient (Documentation/ipcm.md) */
	good_v4(&h);
	h.reserved = 1;
	ipcm_req_hdr_encode(&h, pd);
	ok(linux_save_ip_info((void *)&a, (void *)&b, (void *)pd, 0) == 0 &&
	   ipcm_req_hdr_check(&h) == IPCM_ERR_BIT(IPCM_E_HDR_RSVD),
	   "reserved bits set: Linux takes it, library reserved-bits");
	good_v4(&h);
	h.src_addr[0] = 0x20;
	ipcm_req_hdr_encode(&h, pd);
	ok(linux_save_ip_info((void *)&a, (void *)&b, (void *)pd, 0) == 0 &&
	   ipcm_req_hdr_check(&h) == IPCM_ERR_BIT(IPCM_E_SRC_ADDR),
	   "IPV 4 with a non-zero prefix: Linux reads the last 4 bytes, library src-addr-format");
}

/* ---------------------------------------------------------------- fuzz */

static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(void)
{
	/* xorshift64*: the same inputs on every run */
	rnd_state ^= rnd_state >> 12;
	rnd_state ^= rnd_state << 25;
	rnd_state ^= rnd_state >> 27;
	return (rnd_state * 0x2545f4914f6cdd1dULL) >> 32;
}

static int run_one(const uint8_t *src, size_t len, FILE *null)
{
	static const enum check_format fmts[] = { CHECK_JSON, CHECK_TEXT,
						  CHECK_QUIET };
	static unsigned int turn;
	uint8_t *b = malloc(len ? len : 1);
	int rc;

	if (!b)
		return -1;
	memcpy(b, src, len);
	/* every output format in turn: each prints other fields */
	rc = ipcm_check_capture(b, len, "fuzz", fmts[turn++ % 3], null, null);
	free(b);
	return rc;
}

/* a file of the pcap header hdr (24 bytes) and one record of len bytes */
static int run_record(const uint8_t *hdr, const uint8_t *rec, uint32_t len,
		      int swap, FILE *null)
{
	uint8_t b[24 + 16 + 65536];
	uint32_t v = swap ? __builtin_bswap32(len) : len;

	if (len > 65536)
		return 0;
	memcpy(b, hdr, 24);
	memset(b + 24, 0, 16);
	memcpy(b + 24 + 8, &v, 4);
	memcpy(b + 24 + 12, &v, 4);
	memcpy(b + 24 + 16, rec, len);
	return run_one(b, 24 + 16 + len, null);
}

static int bad_rc(int rc)
{
	return rc < 0 || rc > 2;
}

static int fuzz(const char *path)
{
	FILE *f = fopen(path, "rb"), *null = fopen("/dev/null", "w");
	uint8_t *buf = NULL, *mut, *rec;
	size_t len = 0, cap = 0, i, n = 0, k, off;
	uint32_t incl, magic, c;
	int bad = 0, j, swap, v;

	if (!f || !null) {
		ok(0, "fuzz %s: %s", path, strerror(errno));
		return 1;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? 2 * cap : 4096;
			buf = realloc(buf, cap);
			if (!buf)
				return 1;
		}
		k = fread(buf + len, 1, cap - len, f);
		if (!k)
			break;
		len += k;
	}
	fclose(f);
	/* the file cut anywhere */
	for (i = 0; i <= len; i++, n++)
		bad += bad_rc(run_one(buf, i, null));
	/*
	 * Each record alone, cut at every length (a snap length at every
	 * byte of every header) and with each byte set to 0x00, 0xff and
	 * flipped (every length field lying): the checks inside a record,
	 * which a cut file never reaches.
	 */
	memcpy(&magic, buf, len >= 4 ? 4 : 0);
	swap = len >= 24 && (magic == 0xd4c3b2a1 || magic == 0x4d3cb2a1);
	for (off = 24; len >= 24 && off + 16 <= len; off += 16 + incl) {
		memcpy(&incl, buf + off + 8, 4);
		if (swap)
			incl = __builtin_bswap32(incl);
		if (incl > len - off - 16 || incl > 65536)
			break;
		for (c = 0; c <= incl; c++, n++)
			bad += bad_rc(run_record(buf, buf + off + 16, c, swap,
						 null));
		rec = malloc(incl ? incl : 1);
		for (c = 0; c < incl; c++) {
			for (v = 0; v < 3; v++, n++) {
				memcpy(rec, buf + off + 16, incl);
				rec[c] = v == 0 ? 0x00 : v == 1 ? 0xff :
					 rec[c] ^ 0x80;
				bad += bad_rc(run_record(buf, rec, incl, swap,
							 null));
			}
		}
		free(rec);
	}
	/* and the whole file, 1-4 bytes changed at random */
	mut = malloc(len ? len : 1);
	for (j = 0; j < 3000 && len; j++, n++) {
		memcpy(mut, buf, len);
		for (k = 1 + rnd() % 4; k; k--) {
			i = rnd() % len;
			switch (rnd() % 3) {
			case 0:
				mut[i] = rnd();
				break;
			case 1:
				mut[i] = rnd() & 1 ? 0xff : 0x00;
				break;
			default:
				mut[i] ^= 1 << (rnd() % 8);
			}
		}
		bad += bad_rc(run_one(mut, len - (rnd() % 8 == 0 ?
						  rnd() % len : 0), null));
	}
	free(mut);
	free(buf);
	fclose(null);
	return !ok(!bad, "fuzz %s: %zu inputs (file prefixes, each record cut at every byte and each byte changed, 3000 random mutations), exit 0-2 each",
		   path, n);
}

int main(int argc, char **argv)
{
	int i;

	if (argc > 1 && !strcmp(argv[1], "--fuzz")) {
		for (i = 2; i < argc; i++)
			fuzz(argv[i]);
	} else {
		t_constants();
		t_names();
		t_sid();
		t_req_layout();
		t_req_errors();
		t_sockaddr();
		t_rej();
		t_linux();
	}
	printf("1..%d\n", tests);
	return failures ? 1 : 0;
}
