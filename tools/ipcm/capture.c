// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * capture.c - the CM MADs of a libpcap file, read by hand (no libpcap):
 * both byte orders, microsecond and nanosecond magic; link types Ethernet
 * (with up to two VLAN tags), Linux cooked v1 and v2, raw IP; IPv4 and
 * IPv6; RoCEv2 (UDP port 4791): BTH, DETH, MAD. Every length is checked
 * against what the record holds before a byte is read, since the file
 * may be anything.
 */
#include <string.h>

#include "capture.h"

/* pcap file format (draft-ietf-opsawg-pcap) */
#define PCAP_MAGIC_US		0xa1b2c3d4
#define PCAP_MAGIC_NS		0xa1b23c4d
#define PCAPNG_MAGIC		0x0a0d0d0a
#define PCAP_FILE_HDR		24
#define PCAP_OFF_LINKTYPE	20
#define PCAP_REC_HDR		16
#define PCAP_REC_OFF_INCL	8
/* larger than any snap length tools write: the file is garbage past it */
#define PCAP_REC_MAX		(256 * 1024)

/* link types (tcpdump.org/linktypes.html) */
#define LT_ETHERNET		1
/* DLT_RAW where OpenBSD and BSD/OS put it */
#define LT_RAW_BSD1		12
#define LT_RAW_BSD2		14
#define LT_RAW			101
#define LT_LINUX_SLL		113
#define LT_IPV4			228
#define LT_IPV6			229
#define LT_LINUX_SLL2		276

#define ETH_HDR			14
#define ETH_OFF_TYPE		12
#define VLAN_HDR		4
#define SLL_HDR			16
#define SLL_OFF_PROTO		14
#define SLL2_HDR		20
#define SLL2_OFF_PROTO		0
#define ETHERTYPE_IPV4		0x0800
#define ETHERTYPE_IPV6		0x86dd
#define ETHERTYPE_VLAN		0x8100
#define ETHERTYPE_QINQ		0x88a8

#define IPV4_MIN_HDR		20
#define IPV4_OFF_TOTLEN		2
#define IPV4_OFF_FRAG		6
#define IPV4_FRAG_MASK		0x3fff	/* MF and the fragment offset */
#define IPV4_OFF_PROTO		9
#define IPV6_HDR		40
#define IPV6_OFF_PAYLEN		4
#define IPV6_OFF_NEXT		6
#define IPPROTO_UDP_NUM		17
#define IPV6_EXT_HOPOPTS	0
#define IPV6_EXT_ROUTING	43
#define IPV6_EXT_DSTOPTS	60
#define UDP_HDR			8
#define UDP_OFF_DPORT		2
#define UDP_OFF_LEN		4

const char *cap_err_text(enum cap_err e)
{
	switch (e) {
	case CAP_OK:
		return "ok";
	case CAP_E_SHORT:
		return "shorter than a pcap file header";
	case CAP_E_MAGIC:
		return "not a pcap file (bad magic)";
	case CAP_E_PCAPNG:
		return "a pcapng file; convert it: editcap -F pcap IN OUT";
	case CAP_E_LINKTYPE:
		return "link type not supported (Ethernet, Linux SLL/SLL2, raw IP)";
	case CAP_E_RECORD:
		return "record with an impossible length (damaged file)";
	case CAP_E_TRUNCATED:
		return "last record cut short (truncated file)";
	}
	return "?";
}

const char *cap_attr_name(uint16_t attr)
{
	switch (attr) {
	case SIWX_CM_ATTR_REQ:
		return "REQ";
	case SIWX_CM_ATTR_MRA:
		return "MRA";
	case SIWX_CM_ATTR_REJ:
		return "REJ";
	case SIWX_CM_ATTR_REP:
		return "REP";
	case SIWX_CM_ATTR_RTU:
		return "RTU";
	case SIWX_CM_ATTR_DREQ:
		return "DREQ";
	case SIWX_CM_ATTR_DREP:
		return "DREP";
	}
	return NULL;
}

struct walk {
	cap_cm_fn fn;
	void *ctx;
	struct cap_stats *st;
	uint64_t frame;
};

/*
 * The CM message at m (avail bytes captured after the MAD header): the
 * fields the checker uses, and whether all of them were captured.
 */
static void cm_message(struct walk *w, uint16_t attr, const uint8_t *m,
		       size_t avail)
{
	struct cap_cm c = { .frame = w->frame, .attr = attr };
	size_t need = SIWX_CM_OFF_REMOTE_COMM_ID + 4, n;

	if (avail >= SIWX_CM_OFF_LOCAL_COMM_ID + 4) {
		c.have_local = 1;
		c.local_id = ipcm_get_be32(m + SIWX_CM_OFF_LOCAL_COMM_ID);
	}
	switch (attr) {
	case SIWX_CM_ATTR_REQ:
		/* a REQ has no remote ID; the checker needs the header */
		need = SIWX_CM_REQ_OFF_PD + SIWX_IPCM_HDR_SIZE;
		if (avail >= SIWX_CM_REQ_OFF_SERVICE_ID + 8) {
			c.have_sid = 1;
			c.sid = ipcm_get_be64(m + SIWX_CM_REQ_OFF_SERVICE_ID);
		}
		if (avail > SIWX_CM_REQ_OFF_PD) {
			n = avail - SIWX_CM_REQ_OFF_PD;
			c.pd = m + SIWX_CM_REQ_OFF_PD;
			if (n > SIWX_CM_REQ_PD_SIZE)
				n = SIWX_CM_REQ_PD_SIZE;
			c.pd_len = n;
		}
		break;
	case SIWX_CM_ATTR_REJ:
		need = SIWX_CM_REJ_OFF_ARI;
		if (avail < need)
			break;
		c.msg_rejected = m[SIWX_CM_REJ_OFF_MSG_REJECTED] >>
				 SIWX_CM_REJ_MSG_REJECTED_SHIFT;
		c.info_len = m[SIWX_CM_REJ_OFF_INFO_LEN] >>
			     SIWX_CM_REJ_INFO_LEN_SHIFT;
		c.reason = ipcm_get_be16(m + SIWX_CM_REJ_OFF_REASON);
		n = c.info_len < SIWX_CM_REJ_ARI_SIZE ? c.info_len :
							 SIWX_CM_REJ_ARI_SIZE;
		need += n;
		c.ari = m + SIWX_CM_REJ_OFF_ARI;
		c.ari_len = avail - SIWX_CM_REJ_OFF_ARI < n ?
			    avail - SIWX_CM_REJ_OFF_ARI : n;
		break;
	}
	if (attr != SIWX_CM_ATTR_REQ &&
	    avail >= SIWX_CM_OFF_REMOTE_COMM_ID + 4) {
		c.have_remote = 1;
		c.remote_id = ipcm_get_be32(m + SIWX_CM_OFF_REMOTE_COMM_ID);
	}
	c.truncated = avail < need;
	w->st->cm++;
	w->fn(w->ctx, &c);
}

/* the MAD of a UD packet to QP 1: sent bytes, of which avail captured */
static void mad(struct walk *w, const uint8_t *p, size_t sent, size_t avail)
{
	struct cap_cm c = { .frame = w->frame, .truncated = 1 };
	uint16_t attr;

	if (avail > sent)
		avail = sent;
	/* QP 1 carries every GSI class (SA, performance, ...): CM only */
	if (avail <= SIWX_MAD_OFF_MGMT_CLASS ||
	    p[SIWX_MAD_OFF_MGMT_CLASS] != SIWX_MAD_CLASS_CM)
		return;
	if (p[SIWX_MAD_OFF_BASE_VERSION] != SIWX_MAD_BASE_VERSION)
		return;
	if (avail < SIWX_MAD_HDR_SIZE) {
		/* a CM MAD, but which message is not captured */
		w->st->cm++;
		w->fn(w->ctx, &c);
		return;
	}
	attr = ipcm_get_be16(p + SIWX_MAD_OFF_ATTR_ID);
	if (!cap_attr_name(attr))
		return;		/* SIDR, LAP, APR, ClassPortInfo: not ours */
	cm_message(w, attr, p + SIWX_MAD_HDR_SIZE, avail - SIWX_MAD_HDR_SIZE);
}

/* a UDP payload to port 4791: sent bytes, avail of them captured */
static void rocev2(struct walk *w, const uint8_t *p, size_t sent,
		   size_t avail)
{
	size_t hdrs = SIWX_BTH_SIZE + SIWX_DETH_SIZE, tail;
	uint32_t qp;

	w->st->roce++;
	if (avail > sent)
		avail = sent;
	if (avail < hdrs)
		return;
	if (p[SIWX_BTH_OFF_OPCODE] != SIWX_BTH_OP_UD_SEND_ONLY)
		return;
	qp = ipcm_get_be32(p + SIWX_BTH_OFF_DEST_QP - 1) & SIWX_BTH_QP_MASK;
	if (qp != SIWX_GSI_QP)
		return;
	/* the payload ends before the pad bytes and the ICRC */
	tail = ((p[SIWX_BTH_OFF_FLAGS] & SIWX_BTH_PAD_MASK) >>
		SIWX_BTH_PAD_SHIFT) + SIWX_ICRC_SIZE;
	if (sent < hdrs + tail)
		return;
	mad(w, p + hdrs, sent - hdrs - tail, avail - hdrs);
}

/* a UDP datagram: sent bytes (the IP layer's count), avail captured */
static void udp(struct walk *w, const uint8_t *p, size_t sent, size_t avail)
{
	size_t len;

	if (avail > sent)
		avail = sent;
	if (avail < UDP_HDR)
		return;
	if (ipcm_get_be16(p + UDP_OFF_DPORT) != SIWX_ROCEV2_UDP_PORT)
		return;
	len = ipcm_get_be16(p + UDP_OFF_LEN);
	if (len < UDP_HDR)
		return;
	if (len > sent)
		len = sent;	/* a lying UDP length: the IP layer's wins */
	rocev2(w, p + UDP_HDR, len - UDP_HDR, avail - UDP_HDR);
}

static void ipv4(struct walk *w, const uint8_t *p, size_t avail)
{
	size_t ihl, tot;

	if (avail < IPV4_MIN_HDR || p[0] >> 4 != 4)
		return;
	ihl = (size_t)(p[0] & 0x0f) * 4;
	tot = ipcm_get_be16(p + IPV4_OFF_TOTLEN);
	if (ihl < IPV4_MIN_HDR || tot < ihl || avail < ihl)
		return;
	/* a fragment: nothing to reassemble a 300-byte MAD from */
	if (ipcm_get_be16(p + IPV4_OFF_FRAG) & IPV4_FRAG_MASK)
		return;
	if (p[IPV4_OFF_PROTO] != IPPROTO_UDP_NUM)
		return;
	udp(w, p + ihl, tot - ihl, avail - ihl);
}

static void ipv6(struct walk *w, const uint8_t *p, size_t avail)
{
	size_t off = IPV6_HDR, sent, ext;
	uint8_t next;

	if (avail < IPV6_HDR || p[0] >> 4 != 6)
		return;
	sent = IPV6_HDR + ipcm_get_be16(p + IPV6_OFF_PAYLEN);
	next = p[IPV6_OFF_NEXT];
	/* the extension headers with the generic layout; not fragments */
	while (next == IPV6_EXT_HOPOPTS || next == IPV6_EXT_ROUTING ||
	       next == IPV6_EXT_DSTOPTS) {
		if (avail < off + 2)
			return;
		ext = ((size_t)p[off + 1] + 1) * 8;
		next = p[off];
		off += ext;
	}
	if (next != IPPROTO_UDP_NUM || off > avail || off > sent)
		return;
	udp(w, p + off, sent - off, avail - off);
}

/* raw IP: the version nibble says which */
static void ip(struct walk *w, const uint8_t *p, size_t avail)
{
	if (!avail)
		return;
	if (p[0] >> 4 == 4)
		ipv4(w, p, avail);
	else if (p[0] >> 4 == 6)
		ipv6(w, p, avail);
}

static void ethertype(struct walk *w, uint16_t type, const uint8_t *p,
		      size_t avail)
{
	if (type == ETHERTYPE_IPV4)
		ipv4(w, p, avail);
	else if (type == ETHERTYPE_IPV6)
		ipv6(w, p, avail);
}

static void frame(struct walk *w, uint32_t linktype, const uint8_t *p,
		  size_t len)
{
	size_t off;
	uint16_t type;
	int tags;

	switch (linktype) {
	case LT_ETHERNET:
		if (len < ETH_HDR)
			return;
		off = ETH_HDR;
		type = ipcm_get_be16(p + ETH_OFF_TYPE);
		for (tags = 0; tags < 2 && (type == ETHERTYPE_VLAN ||
					    type == ETHERTYPE_QINQ); tags++) {
			if (len < off + VLAN_HDR)
				return;
			type = ipcm_get_be16(p + off + 2);
			off += VLAN_HDR;
		}
		ethertype(w, type, p + off, len - off);
		break;
	case LT_LINUX_SLL:
		if (len < SLL_HDR)
			return;
		ethertype(w, ipcm_get_be16(p + SLL_OFF_PROTO), p + SLL_HDR,
			  len - SLL_HDR);
		break;
	case LT_LINUX_SLL2:
		if (len < SLL2_HDR)
			return;
		ethertype(w, ipcm_get_be16(p + SLL2_OFF_PROTO), p + SLL2_HDR,
			  len - SLL2_HDR);
		break;
	case LT_RAW:
	case LT_RAW_BSD1:
	case LT_RAW_BSD2:
		ip(w, p, len);
		break;
	case LT_IPV4:
		ipv4(w, p, len);
		break;
	case LT_IPV6:
		ipv6(w, p, len);
		break;
	}
}

static uint32_t get32(const uint8_t *p, int swap)
{
	uint32_t v = ipcm_get_be32(p);

	/* the file's numbers are in the writer's order: big-endian or not */
	if (swap)
		v = (v >> 24) | (v >> 8 & 0xff00) | (v << 8 & 0xff0000) |
		    (v << 24);
	return v;
}

enum cap_err cap_walk(const uint8_t *buf, size_t len, cap_cm_fn fn,
		      void *ctx, struct cap_stats *st, size_t *where)
{
	struct walk w = { .fn = fn, .ctx = ctx, .st = st };
	uint32_t magic, linktype, incl;
	size_t off;
	int swap;

	memset(st, 0, sizeof(*st));
	*where = 0;
	if (len < 4)
		return CAP_E_SHORT;
	magic = ipcm_get_be32(buf);
	if (magic == PCAPNG_MAGIC)
		return CAP_E_PCAPNG;
	if (magic == PCAP_MAGIC_US || magic == PCAP_MAGIC_NS)
		swap = 0;
	else if (get32(buf, 1) == PCAP_MAGIC_US ||
		 get32(buf, 1) == PCAP_MAGIC_NS)
		swap = 1;
	else
		return CAP_E_MAGIC;
	if (len < PCAP_FILE_HDR)
		return CAP_E_SHORT;
	/* the link type is the low 16 bits; FCS flags live above them */
	linktype = get32(buf + PCAP_OFF_LINKTYPE, swap) & 0xffff;
	switch (linktype) {
	case LT_ETHERNET:
	case LT_RAW_BSD1:
	case LT_RAW_BSD2:
	case LT_RAW:
	case LT_LINUX_SLL:
	case LT_IPV4:
	case LT_IPV6:
	case LT_LINUX_SLL2:
		break;
	default:
		*where = PCAP_OFF_LINKTYPE;
		return CAP_E_LINKTYPE;
	}
	for (off = PCAP_FILE_HDR; off < len; off += PCAP_REC_HDR + incl) {
		*where = off;
		if (len - off < PCAP_REC_HDR)
			return CAP_E_TRUNCATED;
		incl = get32(buf + off + PCAP_REC_OFF_INCL, swap);
		if (incl > PCAP_REC_MAX)
			return CAP_E_RECORD;
		if (len - off - PCAP_REC_HDR < incl)
			return CAP_E_TRUNCATED;
		st->frames++;
		w.frame = st->frames;
		frame(&w, linktype, buf + off + PCAP_REC_HDR, incl);
	}
	*where = len;
	return CAP_OK;
}
