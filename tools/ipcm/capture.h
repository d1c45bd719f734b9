/* SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause */
/*
 * capture.h - siwx-ipcm's two halves, kept apart from main() so that the
 * unit test can run them on any bytes (test-ipcm --fuzz):
 *
 *   capture.c  a libpcap file in memory -> the CM MADs in it: link layer
 *              (Ethernet, Linux cooked SLL/SLL2, raw IP), IPv4/IPv6, UDP
 *              to port 4791, BTH + DETH of a UD SEND_ONLY to QP 1, the MAD
 *   check.c    the CM messages -> connections, their 5-tuple and every
 *              deviation from the annex; text or JSON report
 *
 * The ICRC is not checked: a capture on the sending host shows frames
 * before the NIC (or rxe) computed it, and the annex says nothing of it.
 */
#ifndef IPCM_CAPTURE_H
#define IPCM_CAPTURE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ipcm.h"

/* one CM MAD as found in a frame; pointers point into the capture */
struct cap_cm {
	uint64_t frame;		/* 1-based number of the pcap record */
	uint16_t attr;		/* SIWX_CM_ATTR_*; 0 when not captured */
	/*
	 * The message ends before a field the checker needs (snap length,
	 * a short UDP datagram): what is there is filled in, the rest is 0.
	 */
	int truncated;
	int have_local, have_remote;
	uint32_t local_id;
	uint32_t remote_id;
	/* REQ */
	int have_sid;
	uint64_t sid;
	const uint8_t *pd;	/* the REQ private data captured ... */
	size_t pd_len;		/* ... at most SIWX_CM_REQ_PD_SIZE bytes */
	/* REJ */
	uint8_t msg_rejected;
	uint8_t info_len;	/* Rejected Info Length as sent (7 bits) */
	uint16_t reason;
	const uint8_t *ari;	/* min(info_len, 72) bytes */
	size_t ari_len;
};

struct cap_stats {
	uint64_t frames;	/* pcap records */
	uint64_t roce;		/* UDP datagrams to port 4791 */
	uint64_t cm;		/* CM MADs (the attributes above) */
};

/* what is wrong with a file (CAP_OK: nothing) */
enum cap_err {
	CAP_OK = 0,
	CAP_E_SHORT,		/* shorter than the pcap file header */
	CAP_E_MAGIC,		/* not a pcap file */
	CAP_E_PCAPNG,		/* a pcapng file (not read; editcap -F pcap) */
	CAP_E_LINKTYPE,		/* a link type this reader does not know */
	CAP_E_RECORD,		/* a record header with an absurd length */
	CAP_E_TRUNCATED,	/* the last record ends after the file */
};

typedef void (*cap_cm_fn)(void *ctx, const struct cap_cm *m);

/*
 * Walk a pcap file (len bytes at buf): fn for every CM MAD, in order.
 * CAP_OK, or the first problem of the file; *where is its byte offset.
 * Records before the problem were walked.
 */
enum cap_err cap_walk(const uint8_t *buf, size_t len, cap_cm_fn fn,
		      void *ctx, struct cap_stats *st, size_t *where);
const char *cap_err_text(enum cap_err e);
/* "REQ", "REP", ... for a CM attribute; NULL for another */
const char *cap_attr_name(uint16_t attr);

/* ---------------------------------------------------------------- check */

enum check_format {
	CHECK_TEXT,
	CHECK_QUIET,		/* deviations only */
	CHECK_JSON,		/* one object per connection a line */
};

/*
 * The checker's own deviations (the header's and the reject's are
 * ipcm_err_name()'s): a reason-28 REJ of an annex REQ without the annex's
 * ARI, a Rejected Info Length above 72, a CM MAD cut short.
 */
#define CHECK_DEV_REJ_NO_ARI	"rej-without-annex-ari"
#define CHECK_DEV_INFO_LEN	"rej-info-length"
#define CHECK_DEV_TRUNCATED	"truncated-cm-mad"

/*
 * Check the capture at buf and report on out (name: the file's, for the
 * summary and messages on err). Returns the exit status: 0 no deviation,
 * 1 deviations, 2 a file error (what could be read is still reported).
 */
int ipcm_check_capture(const uint8_t *buf, size_t len, const char *name,
		       enum check_format fmt, FILE *out, FILE *err);

#endif /* IPCM_CAPTURE_H */
