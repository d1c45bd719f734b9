// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipcm.c - the IBTA RDMA IP CM Service annex: Service ID, REQ private
 * data header and reject format, built and checked (API in ipcm.h).
 *
 * "Slide N" cites the page of the annex presentation (seed 002) that
 * states a rule; the presentation has no section numbers. Where the
 * slides leave a rule open, the comment says whose reading we follow.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <string.h>

#include "ipcm.h"

/*
 * Slide 13: the addresses are 8-byte aligned in the MAD, so that a CM can
 * read them in place. It holds by construction (fixed offsets); if one of
 * the numbers in <siwx/ipcm.h> were wrong this would not build.
 */
_Static_assert((SIWX_MAD_HDR_SIZE + SIWX_CM_REQ_OFF_PD +
		SIWX_IPCM_HDR_OFF_SRC_ADDR) % SIWX_IPCM_ADDR_ALIGN == 0,
	       "annex source address not 8-byte aligned in the REQ MAD");
_Static_assert((SIWX_MAD_HDR_SIZE + SIWX_CM_REQ_OFF_PD +
		SIWX_IPCM_HDR_OFF_DST_ADDR) % SIWX_IPCM_ADDR_ALIGN == 0,
	       "annex destination address not 8-byte aligned in the REQ MAD");
_Static_assert(SIWX_IPCM_HDR_OFF_DST_ADDR + SIWX_IPCM_HDR_ADDR_SIZE ==
	       SIWX_IPCM_HDR_SIZE, "annex header size");
_Static_assert(SIWX_IPCM_ARI_COUNT <= 256, "ARI codes fit their byte");
_Static_assert(IPCM_E_COUNT <= 8 * sizeof(ipcm_errset),
	       "every error has a bit in ipcm_errset");

static const struct {
	const char *name;
	const char *text;
} errs[IPCM_E_COUNT] = {
	[IPCM_OK] = { "ok", "as the annex wants it" },
	[IPCM_E_SID_RANGE] = { "sid-not-in-annex-range",
		"Service ID outside 0x0000000001PPDDDD" },
	[IPCM_E_SHORT] = { "short-private-data",
		"REQ private data shorter than the 36-byte header" },
	[IPCM_E_MAJOR] = { "major-version", "major version not 0" },
	[IPCM_E_MINOR] = { "minor-version", "minor version not 0" },
	[IPCM_E_IPV] = { "ip-version", "IP version neither 4 nor 6" },
	[IPCM_E_HDR_RSVD] = { "reserved-bits",
		"reserved bits (byte 1, 3:0) not zero" },
	[IPCM_E_SRC_ADDR] = { "src-addr-format",
		"source address format does not match the IP version" },
	[IPCM_E_DST_ADDR] = { "dst-addr-format",
		"destination address format does not match the IP version" },
	[IPCM_E_FAMILY] = { "address-family",
		"addresses neither both IPv4 nor both IPv6" },
	[IPCM_E_REJ_SHORT] = { "rej-short",
		"reject ARI shorter than its layer's fields" },
	[IPCM_E_REJ_LAYER] = { "reject-layer",
		"rejection layer neither 0x00 (IP CM) nor 0x01 (ULP)" },
	[IPCM_E_ARI_UNKNOWN] = { "ari-unknown",
		"IP CM Service ARI code above 0x06" },
	[IPCM_E_VALUE_LEN] = { "suggested-value-too-long",
		"suggested value longer than 68 bytes" },
	[IPCM_E_VALUE_TRUNC] = { "suggested-value-truncated",
		"suggested value longer than the ARI carries" },
	[IPCM_E_REJ_RSVD] = { "rej-reserved",
		"reserved byte 3 of the reject not zero" },
};

static const char *const ari_names[SIWX_IPCM_ARI_COUNT] = {
	[SIWX_IPCM_ARI_UNSPECIFIED] = "unspecified",
	[SIWX_IPCM_ARI_MAJOR_VERSION] = "major-version",
	[SIWX_IPCM_ARI_MINOR_VERSION] = "minor-version",
	[SIWX_IPCM_ARI_IP_VERSION] = "ip-version",
	[SIWX_IPCM_ARI_SRC_ADDR] = "src-addr-format",
	[SIWX_IPCM_ARI_DST_ADDR] = "dst-addr-format",
	[SIWX_IPCM_ARI_UNKNOWN_ADDR] = "unknown-addr",
};

const char *ipcm_err_name(enum ipcm_err e)
{
	return (unsigned int)e < IPCM_E_COUNT ? errs[e].name : NULL;
}

const char *ipcm_err_text(enum ipcm_err e)
{
	return (unsigned int)e < IPCM_E_COUNT ? errs[e].text : NULL;
}

enum ipcm_err ipcm_err_by_name(const char *name)
{
	int e;

	for (e = 0; e < IPCM_E_COUNT; e++)
		if (!strcmp(errs[e].name, name))
			return e;
	return IPCM_E_COUNT;
}

enum ipcm_err ipcm_errset_first(ipcm_errset set)
{
	int e;

	for (e = 1; e < IPCM_E_COUNT; e++)
		if (set & IPCM_ERR_BIT(e))
			return e;
	return IPCM_OK;
}

uint8_t ipcm_ari_for(enum ipcm_err e)
{
	/* slide 7: one code per header field a peer can get wrong */
	switch (e) {
	case IPCM_E_MAJOR:
		return SIWX_IPCM_ARI_MAJOR_VERSION;
	case IPCM_E_MINOR:
		return SIWX_IPCM_ARI_MINOR_VERSION;
	case IPCM_E_IPV:
		return SIWX_IPCM_ARI_IP_VERSION;
	case IPCM_E_SRC_ADDR:
		return SIWX_IPCM_ARI_SRC_ADDR;
	case IPCM_E_DST_ADDR:
		return SIWX_IPCM_ARI_DST_ADDR;
	default:
		return SIWX_IPCM_ARI_UNSPECIFIED;
	}
}

const char *ipcm_ari_name(uint8_t ari)
{
	return ari < SIWX_IPCM_ARI_COUNT ? ari_names[ari] : NULL;
}

const char *ipcm_layer_name(uint8_t layer)
{
	switch (layer) {
	case SIWX_IPCM_LAYER_IPCM:
		return "ip-cm";
	case SIWX_IPCM_LAYER_ULP:
		return "ulp";
	default:
		return NULL;
	}
}

/* ---------------------------------------------------------------- SID */

uint64_t ipcm_sid(uint8_t protocol, uint16_t port)
{
	return SIWX_IPCM_SID_PREFIX |
	       (uint64_t)protocol << SIWX_IPCM_SID_PROTOCOL_SHIFT | port;
}

int ipcm_sid_in_range(uint64_t sid)
{
	/* slide 5: bytes 0-4 are 0x00 0x00 0x00 0x00 0x01 */
	return (sid & SIWX_IPCM_SID_PREFIX_MASK) == SIWX_IPCM_SID_PREFIX;
}

enum ipcm_err ipcm_sid_decode(uint64_t sid, uint8_t *protocol,
			      uint16_t *port)
{
	*protocol = (sid >> SIWX_IPCM_SID_PROTOCOL_SHIFT) &
		    SIWX_IPCM_SID_PROTOCOL_MASK;
	*port = sid & SIWX_IPCM_SID_PORT_MASK;
	return ipcm_sid_in_range(sid) ? IPCM_OK : IPCM_E_SID_RANGE;
}

const char *ipcm_protocol_name(uint8_t protocol)
{
	switch (protocol) {
	case SIWX_IPCM_PROTOCOL_TCP:
		return "tcp";
	case SIWX_IPCM_PROTOCOL_UDP:
		return "udp";
	case SIWX_IPCM_PROTOCOL_IB:
		return "ib";
	default:
		return NULL;
	}
}

/* ---------------------------------------------------------------- REQ */

static int all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return 0;
	return 1;
}

/* ::ffff:a.b.c.d (RFC 4291 2.5.5.2) */
static int v4_mapped(const uint8_t *a)
{
	return all_zero(a, 10) && a[10] == 0xff && a[11] == 0xff;
}

/* ::a.b.c.d, the form Linux writes (cma.c union cma_ip_addr .ip4) */
static int v4_zero_prefixed(const uint8_t *a)
{
	return all_zero(a, SIWX_IPCM_HDR_ADDR_OFF_IPV4);
}

/*
 * Slide 4 gives an IPv4 address the low 32 bits of its field ("Source IP
 * Address (31-0)"); slide 7's ARI 0x04/0x05 reject an address whose
 * format does not match the IP version. What the upper 96 bits of an
 * IPv4 address hold the slides do not say: Linux writes zeros, the notes
 * on the annex say IPv4-mapped; both are taken. Under IPV 6 an address in
 * either IPv4 form is an IPv4 address in an IPv6 header, i.e. the wrong
 * format, except :: and ::1, which are IPv6's own (RFC 4291 2.5.2-3).
 */
static int addr_matches(uint8_t ipv, const uint8_t *a)
{
	if (ipv == SIWX_IPCM_IPV4)
		return v4_zero_prefixed(a) || v4_mapped(a);
	if (v4_mapped(a))
		return 0;
	if (v4_zero_prefixed(a))
		return all_zero(a + 12, 3) && a[15] <= 1;
	return 1;
}

void ipcm_req_hdr_encode(const struct ipcm_req_hdr *h,
			 uint8_t out[SIWX_IPCM_HDR_SIZE])
{
	out[SIWX_IPCM_HDR_OFF_VERSION] =
		(h->major << SIWX_IPCM_HDR_MAJOR_SHIFT &
		 SIWX_IPCM_HDR_MAJOR_MASK) |
		(h->minor & SIWX_IPCM_HDR_MINOR_MASK);
	out[SIWX_IPCM_HDR_OFF_IPV] =
		(h->ip_version << SIWX_IPCM_HDR_IPV_SHIFT &
		 SIWX_IPCM_HDR_IPV_MASK) |
		(h->reserved & SIWX_IPCM_HDR_RSVD_MASK);
	ipcm_put_be16(out + SIWX_IPCM_HDR_OFF_SRC_PORT, h->src_port);
	memcpy(out + SIWX_IPCM_HDR_OFF_SRC_ADDR, h->src_addr,
	       SIWX_IPCM_HDR_ADDR_SIZE);
	memcpy(out + SIWX_IPCM_HDR_OFF_DST_ADDR, h->dst_addr,
	       SIWX_IPCM_HDR_ADDR_SIZE);
}

ipcm_errset ipcm_req_hdr_check(const struct ipcm_req_hdr *h)
{
	ipcm_errset set = 0;

	/*
	 * Slide 7 has an ARI for each version nibble, so each is checked on
	 * its own; 0.0 is the only version (see <siwx/ipcm.h>). Linux
	 * compares the whole byte with CMA_VERSION, which rejects both.
	 */
	if (h->major != SIWX_IPCM_MAJOR_VERSION)
		set |= IPCM_ERR_BIT(IPCM_E_MAJOR);
	if (h->minor != SIWX_IPCM_MINOR_VERSION)
		set |= IPCM_ERR_BIT(IPCM_E_MINOR);
	/* slide 4: reserved bits; IBTA sends reserved fields as zero */
	if (h->reserved)
		set |= IPCM_ERR_BIT(IPCM_E_HDR_RSVD);
	/* slide 7, ARI 0x03: an IP version the CM does not know */
	if (h->ip_version != SIWX_IPCM_IPV4 && h->ip_version != SIWX_IPCM_IPV6)
		return set | IPCM_ERR_BIT(IPCM_E_IPV);
	/* slide 7, ARI 0x04 and 0x05 (only judged under a known IPV) */
	if (!addr_matches(h->ip_version, h->src_addr))
		set |= IPCM_ERR_BIT(IPCM_E_SRC_ADDR);
	if (!addr_matches(h->ip_version, h->dst_addr))
		set |= IPCM_ERR_BIT(IPCM_E_DST_ADDR);
	return set;
}

ipcm_errset ipcm_req_hdr_decode(const uint8_t *pd, size_t len,
				struct ipcm_req_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (len < SIWX_IPCM_HDR_SIZE)
		return IPCM_ERR_BIT(IPCM_E_SHORT);
	h->major = (pd[SIWX_IPCM_HDR_OFF_VERSION] & SIWX_IPCM_HDR_MAJOR_MASK) >>
		   SIWX_IPCM_HDR_MAJOR_SHIFT;
	h->minor = pd[SIWX_IPCM_HDR_OFF_VERSION] & SIWX_IPCM_HDR_MINOR_MASK;
	h->ip_version = (pd[SIWX_IPCM_HDR_OFF_IPV] & SIWX_IPCM_HDR_IPV_MASK) >>
			SIWX_IPCM_HDR_IPV_SHIFT;
	h->reserved = pd[SIWX_IPCM_HDR_OFF_IPV] & SIWX_IPCM_HDR_RSVD_MASK;
	h->src_port = ipcm_get_be16(pd + SIWX_IPCM_HDR_OFF_SRC_PORT);
	memcpy(h->src_addr, pd + SIWX_IPCM_HDR_OFF_SRC_ADDR,
	       SIWX_IPCM_HDR_ADDR_SIZE);
	memcpy(h->dst_addr, pd + SIWX_IPCM_HDR_OFF_DST_ADDR,
	       SIWX_IPCM_HDR_ADDR_SIZE);
	return ipcm_req_hdr_check(h);
}

static void put_v4(uint8_t *field, const struct in_addr *a)
{
	memset(field, 0, SIWX_IPCM_HDR_ADDR_SIZE);
	memcpy(field + SIWX_IPCM_HDR_ADDR_OFF_IPV4, a, 4);
}

enum ipcm_err ipcm_req_hdr_from_sockaddr(const struct sockaddr *src,
					 const struct sockaddr *dst,
					 struct ipcm_req_hdr *h)
{
	memset(h, 0, sizeof(*h));
	h->major = SIWX_IPCM_MAJOR_VERSION;
	h->minor = SIWX_IPCM_MINOR_VERSION;
	if (src->sa_family != dst->sa_family)
		return IPCM_E_FAMILY;
	if (src->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)src;
		const struct sockaddr_in *d = (const void *)dst;

		h->ip_version = SIWX_IPCM_IPV4;
		h->src_port = ntohs(s->sin_port);
		put_v4(h->src_addr, &s->sin_addr);
		put_v4(h->dst_addr, &d->sin_addr);
		return IPCM_OK;
	}
	if (src->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)src;
		const struct sockaddr_in6 *d = (const void *)dst;
		const uint8_t *sa = s->sin6_addr.s6_addr;
		const uint8_t *da = d->sin6_addr.s6_addr;

		h->src_port = ntohs(s->sin6_port);
		if (v4_mapped(sa) != v4_mapped(da))
			return v4_mapped(sa) ? IPCM_E_SRC_ADDR :
					       IPCM_E_DST_ADDR;
		if (v4_mapped(sa)) {
			/*
			 * An AF_INET6 socket talking IPv4: the header says
			 * what goes on the wire, IPv4 (Linux sends IPV 6 and
			 * the mapped address, which ipcm_req_hdr_check()
			 * reports as src/dst-addr-format).
			 */
			h->ip_version = SIWX_IPCM_IPV4;
			put_v4(h->src_addr, (const void *)(sa + 12));
			put_v4(h->dst_addr, (const void *)(da + 12));
			return IPCM_OK;
		}
		h->ip_version = SIWX_IPCM_IPV6;
		memcpy(h->src_addr, sa, SIWX_IPCM_HDR_ADDR_SIZE);
		memcpy(h->dst_addr, da, SIWX_IPCM_HDR_ADDR_SIZE);
		return IPCM_OK;
	}
	return IPCM_E_FAMILY;
}

enum ipcm_err ipcm_req_hdr_to_sockaddr(const struct ipcm_req_hdr *h,
				       uint16_t dst_port,
				       struct sockaddr_storage *src,
				       struct sockaddr_storage *dst)
{
	if (h->ip_version == SIWX_IPCM_IPV4) {
		struct sockaddr_in *s = (void *)src, *d = (void *)dst;

		memset(src, 0, sizeof(*src));
		memset(dst, 0, sizeof(*dst));
		s->sin_family = d->sin_family = AF_INET;
		s->sin_port = htons(h->src_port);
		d->sin_port = htons(dst_port);
		memcpy(&s->sin_addr, h->src_addr + SIWX_IPCM_HDR_ADDR_OFF_IPV4,
		       4);
		memcpy(&d->sin_addr, h->dst_addr + SIWX_IPCM_HDR_ADDR_OFF_IPV4,
		       4);
		return IPCM_OK;
	}
	if (h->ip_version == SIWX_IPCM_IPV6) {
		struct sockaddr_in6 *s = (void *)src, *d = (void *)dst;

		memset(src, 0, sizeof(*src));
		memset(dst, 0, sizeof(*dst));
		s->sin6_family = d->sin6_family = AF_INET6;
		s->sin6_port = htons(h->src_port);
		d->sin6_port = htons(dst_port);
		memcpy(&s->sin6_addr, h->src_addr, SIWX_IPCM_HDR_ADDR_SIZE);
		memcpy(&d->sin6_addr, h->dst_addr, SIWX_IPCM_HDR_ADDR_SIZE);
		return IPCM_OK;
	}
	return IPCM_E_IPV;
}

char *ipcm_addr_str(const struct ipcm_req_hdr *h, const uint8_t *addr,
		    char *buf, size_t len)
{
	/* an unknown IP version: the 16 bytes as they are, IPv6 notation */
	if (h->ip_version == SIWX_IPCM_IPV4) {
		if (!inet_ntop(AF_INET, addr + SIWX_IPCM_HDR_ADDR_OFF_IPV4, buf,
			       len))
			buf[0] = 0;
	} else if (!inet_ntop(AF_INET6, addr, buf, len)) {
		buf[0] = 0;
	}
	return buf;
}

/* ---------------------------------------------------------------- REJ */

size_t ipcm_rej_encode(const struct ipcm_rej *r,
		       uint8_t out[SIWX_IPCM_REJ_SIZE])
{
	size_t n;

	memset(out, 0, SIWX_IPCM_REJ_SIZE);
	out[SIWX_IPCM_REJ_OFF_LAYER] = r->layer;
	if (r->layer == SIWX_IPCM_LAYER_ULP) {
		n = r->ulp_len < sizeof(r->ulp) ? r->ulp_len : sizeof(r->ulp);
		memcpy(out + 1, r->ulp, n);
		return 1 + n;
	}
	if (r->layer != SIWX_IPCM_LAYER_IPCM)
		return 1;
	out[SIWX_IPCM_REJ_OFF_ARI] = r->ari;
	out[SIWX_IPCM_REJ_OFF_VALUE_LEN] = r->value_len;
	out[SIWX_IPCM_REJ_OFF_RSVD] = r->reserved;
	n = r->value_len < SIWX_IPCM_REJ_VALUE_MAX ? r->value_len :
						     SIWX_IPCM_REJ_VALUE_MAX;
	memcpy(out + SIWX_IPCM_REJ_OFF_VALUE, r->value, n);
	return SIWX_IPCM_REJ_HDR_SIZE + n;
}

ipcm_errset ipcm_rej_decode(const uint8_t *ari, size_t len,
			    struct ipcm_rej *r)
{
	ipcm_errset set = 0;
	size_t n;

	memset(r, 0, sizeof(*r));
	if (len > SIWX_IPCM_REJ_SIZE)
		len = SIWX_IPCM_REJ_SIZE;
	/* slide 6: byte 0, the Rejection Layer, is always there */
	if (len < 1)
		return IPCM_ERR_BIT(IPCM_E_REJ_SHORT);
	r->layer = ari[SIWX_IPCM_REJ_OFF_LAYER];
	if (r->layer == SIWX_IPCM_LAYER_ULP) {
		/* slide 6: bytes 1-71 are the ULP's, nothing to check */
		r->ulp_len = len - 1;
		memcpy(r->ulp, ari + 1, len - 1);
		return 0;
	}
	if (r->layer != SIWX_IPCM_LAYER_IPCM)
		return IPCM_ERR_BIT(IPCM_E_REJ_LAYER);
	/* slide 6, the IP CM Service error format: bytes 0-3 at least */
	if (len < SIWX_IPCM_REJ_HDR_SIZE)
		set |= IPCM_ERR_BIT(IPCM_E_REJ_SHORT);
	if (len > SIWX_IPCM_REJ_OFF_ARI)
		r->ari = ari[SIWX_IPCM_REJ_OFF_ARI];
	if (len > SIWX_IPCM_REJ_OFF_VALUE_LEN)
		r->value_len = ari[SIWX_IPCM_REJ_OFF_VALUE_LEN];
	if (len > SIWX_IPCM_REJ_OFF_RSVD)
		r->reserved = ari[SIWX_IPCM_REJ_OFF_RSVD];
	if (len > SIWX_IPCM_REJ_OFF_ARI && r->ari >= SIWX_IPCM_ARI_COUNT)
		set |= IPCM_ERR_BIT(IPCM_E_ARI_UNKNOWN);
	/* slide 6: "Alignment filler", reserved */
	if (r->reserved)
		set |= IPCM_ERR_BIT(IPCM_E_REJ_RSVD);
	/* slide 6: the value is bytes 4-71, at most 68 bytes */
	if (r->value_len > SIWX_IPCM_REJ_VALUE_MAX)
		set |= IPCM_ERR_BIT(IPCM_E_VALUE_LEN);
	else if (len >= SIWX_IPCM_REJ_HDR_SIZE &&
		 (size_t)SIWX_IPCM_REJ_HDR_SIZE + r->value_len > len)
		set |= IPCM_ERR_BIT(IPCM_E_VALUE_TRUNC);
	if (len > SIWX_IPCM_REJ_HDR_SIZE) {
		n = len - SIWX_IPCM_REJ_HDR_SIZE;
		if (n > r->value_len)
			n = r->value_len;
		memcpy(r->value, ari + SIWX_IPCM_REJ_OFF_VALUE, n);
	}
	return set;
}
