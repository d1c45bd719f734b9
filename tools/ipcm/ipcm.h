/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * ipcm.h - libipcm: build and parse what the IBTA RDMA IP CM Service annex
 * puts on the wire: the Service ID, the REQ private data header and the
 * reject format. The numbers and layouts are <siwx/ipcm.h>'s; this file
 * only declares the functions and the host-order views of the fields.
 *
 * Checking: every rule the annex states is one named error (enum
 * ipcm_err, ipcm_err_name()); a checking function returns the set of all
 * errors found (ipcm_errset, one bit per error), so that a header with two
 * faults reports both and a test can require exactly one.
 *
 * Units: ipcm.c (this API), capture.c and check.c (siwx-ipcm's capture
 * reader and checker, capture.h).
 */
#ifndef IPCM_H
#define IPCM_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include <siwx/ipcm.h>

enum ipcm_err {
	IPCM_OK = 0,
	/* Service ID (slide 5) */
	IPCM_E_SID_RANGE,	/* SID not in 0x0000000001PPDDDD */
	/* REQ private data header (slide 4) */
	IPCM_E_SHORT,		/* fewer than 36 bytes of private data */
	IPCM_E_MAJOR,		/* major version not 0 */
	IPCM_E_MINOR,		/* minor version not 0 */
	IPCM_E_IPV,		/* IP version neither 4 nor 6 */
	IPCM_E_HDR_RSVD,	/* reserved low nibble of byte 1 not 0 */
	IPCM_E_SRC_ADDR,	/* source address format does not match IPV */
	IPCM_E_DST_ADDR,	/* destination address format ... */
	/* sockaddr conversion */
	IPCM_E_FAMILY,		/* not AF_INET/AF_INET6, or src != dst's */
	/* reject (slides 6, 7) */
	IPCM_E_REJ_SHORT,	/* ARI too short for its layer's fields */
	IPCM_E_REJ_LAYER,	/* rejection layer neither 0x00 nor 0x01 */
	IPCM_E_ARI_UNKNOWN,	/* ARI code above 0x06 */
	IPCM_E_VALUE_LEN,	/* suggested value longer than 68 bytes */
	IPCM_E_VALUE_TRUNC,	/* suggested value longer than the ARI sent */
	IPCM_E_REJ_RSVD,	/* reserved byte 3 not 0 */
	IPCM_E_COUNT
};

typedef uint32_t ipcm_errset;
#define IPCM_ERR_BIT(e)		((ipcm_errset)1 << (e))

/* "sid-not-in-annex-range", ...; NULL for a value out of the enum */
const char *ipcm_err_name(enum ipcm_err e);
/* a sentence for humans, e.g. "major version not supported" */
const char *ipcm_err_text(enum ipcm_err e);
/* the error of that name, or IPCM_E_COUNT */
enum ipcm_err ipcm_err_by_name(const char *name);
/* the lowest-numbered error of the set (IPCM_OK for none) */
enum ipcm_err ipcm_errset_first(ipcm_errset set);
/*
 * The ARI code with which the IP CM Service rejects a REQ header error
 * (slide 7); SIWX_IPCM_ARI_UNSPECIFIED for an error that has no code of its
 * own (reserved bits, a short header).
 */
uint8_t ipcm_ari_for(enum ipcm_err e);
/* "unspecified", "major-version", ..., "unknown-addr"; NULL above 0x06 */
const char *ipcm_ari_name(uint8_t ari);
/* "ip-cm", "ulp"; NULL for another layer */
const char *ipcm_layer_name(uint8_t layer);

/* ---------------------------------------------------------------- bytes */

static inline uint16_t ipcm_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t ipcm_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t ipcm_get_be64(const uint8_t *p)
{
	return (uint64_t)ipcm_get_be32(p) << 32 | ipcm_get_be32(p + 4);
}

static inline void ipcm_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void ipcm_put_be32(uint8_t *p, uint32_t v)
{
	ipcm_put_be16(p, v >> 16);
	ipcm_put_be16(p + 2, v);
}

static inline void ipcm_put_be64(uint8_t *p, uint64_t v)
{
	ipcm_put_be32(p, v >> 32);
	ipcm_put_be32(p + 4, v);
}

/* ---------------------------------------------------------------- SID */

/* the annex SID of an IP protocol and a destination port */
uint64_t ipcm_sid(uint8_t protocol, uint16_t port);
/* 1 when the SID is in the annex's range (its REQ carries the header) */
int ipcm_sid_in_range(uint64_t sid);
/*
 * Protocol and port of an annex SID: IPCM_OK, or IPCM_E_SID_RANGE (and
 * the out-parameters still set from bytes 5-7, for a report).
 */
enum ipcm_err ipcm_sid_decode(uint64_t sid, uint8_t *protocol,
			      uint16_t *port);
/* "tcp", "udp", "ib" (0x3f, rdma_cm's IB port space), or NULL */
const char *ipcm_protocol_name(uint8_t protocol);

/* ---------------------------------------------------------------- REQ */

/* the REQ private data header, field by field, in host order */
struct ipcm_req_hdr {
	uint8_t major;		/* 4 bits */
	uint8_t minor;		/* 4 bits */
	uint8_t ip_version;	/* 4 bits */
	uint8_t reserved;	/* 4 bits */
	uint16_t src_port;
	uint8_t src_addr[SIWX_IPCM_HDR_ADDR_SIZE];
	uint8_t dst_addr[SIWX_IPCM_HDR_ADDR_SIZE];
};

/*
 * The 36 bytes of a header, the fields as given (nibbles masked to 4
 * bits): a test or an injector can write any malformation.
 */
void ipcm_req_hdr_encode(const struct ipcm_req_hdr *h,
			 uint8_t out[SIWX_IPCM_HDR_SIZE]);
/*
 * Parse the first bytes of a REQ's private data into h and check them:
 * the set of errors (IPCM_E_SHORT alone, h zeroed, when len < 36).
 */
ipcm_errset ipcm_req_hdr_decode(const uint8_t *pd, size_t len,
				struct ipcm_req_hdr *h);
/* check a header: the set of its errors (0: as the annex wants it) */
ipcm_errset ipcm_req_hdr_check(const struct ipcm_req_hdr *h);

/*
 * The header an active side sends for a connection from src to dst
 * (struct sockaddr_in or sockaddr_in6, the same family): version 0.0,
 * IPV 4 or 6, src's port; an IPv4 address zero-prefixed, as Linux's
 * cma_format_hdr() writes it. Two IPv4-mapped IPv6 addresses go out as
 * IPV 4 (the annex has no mapped format, see ipcm_req_hdr_check()).
 * IPCM_OK, IPCM_E_FAMILY, or IPCM_E_SRC_ADDR/IPCM_E_DST_ADDR for one
 * IPv4-mapped address beside a native IPv6 one.
 */
enum ipcm_err ipcm_req_hdr_from_sockaddr(const struct sockaddr *src,
					 const struct sockaddr *dst,
					 struct ipcm_req_hdr *h);
/*
 * What a passive side learns: the requester's address and port (src),
 * its own address with the port the SID names (dst_port). IPCM_OK, or
 * IPCM_E_IPV for an IP version neither 4 nor 6 (nothing written).
 */
enum ipcm_err ipcm_req_hdr_to_sockaddr(const struct ipcm_req_hdr *h,
				       uint16_t dst_port,
				       struct sockaddr_storage *src,
				       struct sockaddr_storage *dst);
/* an address of the header as text, per its IP version; returns buf */
char *ipcm_addr_str(const struct ipcm_req_hdr *h, const uint8_t *addr,
		    char *buf, size_t len);

/* ---------------------------------------------------------------- REJ */

/* the reject's ARI (layer 0x00: the IP CM Service's format) */
struct ipcm_rej {
	uint8_t layer;
	/* layer 0x00 */
	uint8_t ari;
	uint8_t value_len;
	uint8_t reserved;
	uint8_t value[SIWX_IPCM_REJ_VALUE_MAX];
	/* layer 0x01: bytes 1.. as the ULP sent them */
	uint8_t ulp_len;
	uint8_t ulp[SIWX_IPCM_REJ_SIZE - 1];
};

/*
 * The ARI bytes of a reject (at most 72): the number of bytes, for the
 * REJ's Rejected Info Length. Layer 0x00 writes 4 + value_len bytes
 * (value_len as given, so that a test can lie; the copy stops at 68),
 * layer 0x01 1 + ulp_len, any other layer the layer byte only.
 */
size_t ipcm_rej_encode(const struct ipcm_rej *r,
		       uint8_t out[SIWX_IPCM_REJ_SIZE]);
/*
 * Parse and check the ARI of a reason-28 REJ, len bytes (its Rejected
 * Info Length): the set of errors. r is zeroed first, then filled as far
 * as the bytes go.
 */
ipcm_errset ipcm_rej_decode(const uint8_t *ari, size_t len,
			    struct ipcm_rej *r);

#endif /* IPCM_H */
