// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * check.c - siwx-ipcm's checker: the CM messages of a capture grouped
 * into connections, each connection's 5-tuple as the annex carries it,
 * the messages seen, and every deviation from the annex.
 *
 * Grouping: a REQ opens a connection under its Local Communication ID
 * (the active side's, "A"). Messages of the active side carry A as their
 * local ID, those of the passive side as their remote ID; the passive
 * side's own ID ("B") is learnt from its first message and matched too.
 * A REQ with the ID of an open connection is a retransmission; after a
 * REJ or DREP the ID may start a new connection. Messages of a connection
 * whose REQ the capture does not hold get a connection without 5-tuple.
 */
#include <arpa/inet.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"

struct msg {
	uint16_t attr;
	uint64_t frame;
	/* REJ */
	uint16_t reason;
	uint8_t msg_rejected;
	uint8_t info_len;
	int decoded;		/* rej holds the ARI, decoded */
	struct ipcm_rej rej;
};

struct dev {
	const char *name;
	uint64_t frame;
	char detail[160];
};

struct devs {
	struct dev *v;
	size_t n, cap;
};

struct conn {
	uint32_t id;		/* the REQ's Local Communication ID (A) */
	uint32_t peer;		/* the passive side's (B) */
	int have_peer;
	int have_req;
	int req_cut;		/* a REQ was seen, cut short */
	int closed;		/* a REJ or DREP was seen */
	uint64_t frame;		/* the first message's */
	uint64_t sid;
	int annex;		/* the SID is in the annex range */
	uint8_t protocol;
	uint16_t dport;
	int have_hdr;		/* hdr holds the REQ's private data header */
	struct ipcm_req_hdr hdr;
	struct msg *msgs;
	size_t nmsgs, msgcap;
	struct devs devs;
};

struct check {
	struct conn *conns;
	size_t n, cap;
	struct devs global;	/* deviations of no connection */
	size_t ndevs;
	int oom;
};

static void *grow(void *v, size_t *cap, size_t n, size_t size, int *oom)
{
	size_t c = *cap ? *cap * 2 : 8;
	void *p;

	if (n < *cap)
		return v;
	p = realloc(v, c * size);
	if (!p) {
		*oom = 1;
		return NULL;
	}
	*cap = c;
	return p;
}

static void deviate(struct check *c, struct devs *d, const char *name,
		    uint64_t frame, const char *fmt, ...)
{
	struct dev *v;
	va_list ap;
	size_t i;

	/* one report per kind and connection (retransmissions repeat it) */
	if (d != &c->global)
		for (i = 0; i < d->n; i++)
			if (!strcmp(d->v[i].name, name))
				return;
	v = grow(d->v, &d->cap, d->n, sizeof(*v), &c->oom);
	if (!v)
		return;
	d->v = v;
	v = &d->v[d->n++];
	v->name = name;
	v->frame = frame;
	va_start(ap, fmt);
	vsnprintf(v->detail, sizeof(v->detail), fmt, ap);
	va_end(ap);
	c->ndevs++;
}

static struct conn *conn_new(struct check *c, uint32_t id, uint64_t frame)
{
	struct conn *v = grow(c->conns, &c->cap, c->n, sizeof(*v), &c->oom);

	if (!v)
		return NULL;
	c->conns = v;
	v = &c->conns[c->n++];
	memset(v, 0, sizeof(*v));
	v->id = id;
	v->frame = frame;
	return v;
}

/* the most recent connection the message belongs to */
static struct conn *conn_find(struct check *c, const struct cap_cm *m)
{
	size_t i;

	for (i = c->n; i-- > 0;) {
		struct conn *k = &c->conns[i];

		if (m->attr == SIWX_CM_ATTR_REQ) {
			if (k->have_req && !k->closed &&
			    k->id == m->local_id && k->sid == m->sid)
				return k;
			continue;
		}
		if (m->have_local && (k->id == m->local_id ||
				      (k->have_peer && k->peer == m->local_id)))
			return k;
		if (m->have_remote && (k->id == m->remote_id ||
				       (k->have_peer &&
					k->peer == m->remote_id)))
			return k;
	}
	return NULL;
}

static void hexstr(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t i;

	if (!cap)
		return;
	out[0] = 0;
	for (i = 0; i < n && 2 * i + 2 < cap; i++)
		snprintf(out + 2 * i, 3, "%02x", p[i]);
}

/* the REQ's header, checked (slides 4, 5, 7) */
static void check_req(struct check *c, struct conn *k, const struct cap_cm *m)
{
	const struct ipcm_req_hdr *h = &k->hdr;
	char a[INET6_ADDRSTRLEN];
	ipcm_errset set;
	int e;

	k->sid = m->sid;
	k->annex = ipcm_sid_decode(m->sid, &k->protocol, &k->dport) == IPCM_OK;
	if (!k->annex) {
		deviate(c, &k->devs, ipcm_err_name(IPCM_E_SID_RANGE), m->frame,
			"Service ID 0x%016llx: bytes 0-4 are not 00 00 00 00 01 (slide 5)",
			(unsigned long long)m->sid);
		return;
	}
	set = ipcm_req_hdr_decode(m->pd, m->pd_len, &k->hdr);
	k->have_hdr = !(set & IPCM_ERR_BIT(IPCM_E_SHORT));
	for (e = 1; e < IPCM_E_COUNT; e++) {
		if (!(set & IPCM_ERR_BIT(e)))
			continue;
		switch (e) {
		case IPCM_E_MAJOR:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"major version %u, only %u exists (ARI 0x01)",
				h->major, SIWX_IPCM_MAJOR_VERSION);
			break;
		case IPCM_E_MINOR:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"minor version %u, only %u exists (ARI 0x02)",
				h->minor, SIWX_IPCM_MINOR_VERSION);
			break;
		case IPCM_E_IPV:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"IP version %u, neither 4 nor 6 (ARI 0x03)",
				h->ip_version);
			break;
		case IPCM_E_HDR_RSVD:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"reserved bits of byte 1 are 0x%x, not 0 (slide 4)",
				h->reserved);
			break;
		case IPCM_E_SRC_ADDR:
			ipcm_addr_str(&(struct ipcm_req_hdr){ .ip_version = 6 },
				      h->src_addr, a, sizeof(a));
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"source address %s is not IPv%u format (ARI 0x04)",
				a, h->ip_version);
			break;
		case IPCM_E_DST_ADDR:
			ipcm_addr_str(&(struct ipcm_req_hdr){ .ip_version = 6 },
				      h->dst_addr, a, sizeof(a));
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"destination address %s is not IPv%u format (ARI 0x05)",
				a, h->ip_version);
			break;
		default:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame, "%s",
				ipcm_err_text(e));
		}
	}
}

/* a REJ: decoded when it may carry the annex format, checked when must */
static void check_rej(struct check *c, struct conn *k, struct msg *s,
		      const struct cap_cm *m)
{
	/* the annex format answers a REQ of the annex range (slide 6) */
	int must = k->have_req && k->annex &&
		   m->msg_rejected == SIWX_CM_REJ_MSG_REQ &&
		   m->reason == SIWX_IPCM_REJ_REASON;
	ipcm_errset set;
	int e;

	if (m->reason != SIWX_IPCM_REJ_REASON)
		return;
	if (m->info_len > SIWX_CM_REJ_ARI_SIZE && must)
		deviate(c, &k->devs, CHECK_DEV_INFO_LEN, m->frame,
			"Rejected Info Length %u, the ARI field holds %u",
			m->info_len, SIWX_CM_REJ_ARI_SIZE);
	if (!m->info_len) {
		if (must)
			deviate(c, &k->devs, CHECK_DEV_REJ_NO_ARI, m->frame,
				"reason 28 reject of an annex REQ without the annex ARI (no rejection layer byte, slide 6)");
		return;
	}
	set = ipcm_rej_decode(m->ari, m->ari_len, &s->rej);
	s->decoded = 1;
	if (!must)
		return;
	for (e = 1; e < IPCM_E_COUNT; e++) {
		if (!(set & IPCM_ERR_BIT(e)))
			continue;
		switch (e) {
		case IPCM_E_REJ_LAYER:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"rejection layer 0x%02x, neither 0x00 nor 0x01 (slide 6)",
				s->rej.layer);
			break;
		case IPCM_E_ARI_UNKNOWN:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"ARI code 0x%02x, above 0x06 (slide 7)",
				s->rej.ari);
			break;
		case IPCM_E_VALUE_LEN:
		case IPCM_E_VALUE_TRUNC:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"suggested value length %u in an ARI of %zu bytes (at most 68, slide 6)",
				s->rej.value_len, m->ari_len);
			break;
		case IPCM_E_REJ_RSVD:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"reserved byte 3 is 0x%02x (slide 6)",
				s->rej.reserved);
			break;
		default:
			deviate(c, &k->devs, ipcm_err_name(e), m->frame,
				"%s (%zu ARI bytes)", ipcm_err_text(e),
				m->ari_len);
		}
	}
}

static void on_cm(void *ctx, const struct cap_cm *m)
{
	struct check *c = ctx;
	const char *what = m->attr ? cap_attr_name(m->attr) : "CM MAD";
	struct conn *k = NULL;
	struct msg *s;

	if (m->truncated) {
		/* not checkable: said so, never silently passed */
		deviate(c, &c->global, CHECK_DEV_TRUNCATED, m->frame,
			"%s cut short in the capture (snap length or a short datagram)",
			what);
		if (!m->have_local)
			return;
	}
	if (m->have_local || m->have_remote)
		k = conn_find(c, m);
	if (!k) {
		k = conn_new(c, m->have_local ? m->local_id : m->remote_id,
			     m->frame);
		if (!k)
			return;
		if (m->attr != SIWX_CM_ATTR_REQ && m->have_remote) {
			/* no REQ: we cannot tell A from B; keep both */
			k->peer = m->remote_id;
			k->have_peer = 1;
		}
	}
	if (m->attr != SIWX_CM_ATTR_REQ && !k->have_peer && m->have_local &&
	    m->local_id != k->id && m->local_id) {
		k->peer = m->local_id;
		k->have_peer = 1;
	}
	s = grow(k->msgs, &k->msgcap, k->nmsgs, sizeof(*s), &c->oom);
	if (!s)
		return;
	k->msgs = s;
	s = &k->msgs[k->nmsgs++];
	memset(s, 0, sizeof(*s));
	s->attr = m->attr;
	s->frame = m->frame;
	if (m->truncated) {
		if (m->attr == SIWX_CM_ATTR_REQ)
			k->req_cut = 1;
		return;
	}
	switch (m->attr) {
	case SIWX_CM_ATTR_REQ:
		/* a retransmission repeats the first REQ: checked once */
		if (!k->have_req) {
			k->have_req = 1;
			check_req(c, k, m);
		}
		break;
	case SIWX_CM_ATTR_REJ:
		s->reason = m->reason;
		s->msg_rejected = m->msg_rejected;
		s->info_len = m->info_len;
		check_rej(c, k, s, m);
		k->closed = 1;
		break;
	case SIWX_CM_ATTR_DREP:
		k->closed = 1;
		break;
	}
}

/* ---------------------------------------------------------------- output */

static void endpoint(char *out, size_t cap, const struct ipcm_req_hdr *h,
		     const uint8_t *addr, unsigned int port)
{
	char a[INET6_ADDRSTRLEN];

	ipcm_addr_str(h, addr, a, sizeof(a));
	if (h->ip_version == SIWX_IPCM_IPV4)
		snprintf(out, cap, "%s:%u", a, port);
	else
		snprintf(out, cap, "[%s]:%u", a, port);
}

static const char *proto_name(uint8_t p, char *buf, size_t cap)
{
	const char *n = ipcm_protocol_name(p);

	if (n)
		return n;
	snprintf(buf, cap, "proto-%u", p);
	return buf;
}

static void print_msg(FILE *out, const struct msg *s)
{
	char hex[2 * SIWX_CM_REJ_ARI_SIZE + 1];
	const char *n;

	if (!s->attr) {
		fputs(" ?", out);
		return;
	}
	fprintf(out, " %s", cap_attr_name(s->attr));
	if (s->attr != SIWX_CM_ATTR_REJ)
		return;
	fprintf(out, "(%u", s->reason);
	if (s->reason == SIWX_IPCM_REJ_REASON && !s->info_len)
		fputs(",no-ari", out);
	if (s->decoded) {
		n = ipcm_layer_name(s->rej.layer);
		if (n)
			fprintf(out, ",layer=%s", n);
		else
			fprintf(out, ",layer=0x%02x", s->rej.layer);
		if (s->rej.layer == SIWX_IPCM_LAYER_IPCM) {
			n = ipcm_ari_name(s->rej.ari);
			if (n)
				fprintf(out, ",ari=%s", n);
			else
				fprintf(out, ",ari=0x%02x", s->rej.ari);
			if (s->rej.value_len) {
				/* a lying length shows what there is */
				hexstr(hex, sizeof(hex), s->rej.value,
				       s->rej.value_len <
				       SIWX_IPCM_REJ_VALUE_MAX ?
				       s->rej.value_len :
				       SIWX_IPCM_REJ_VALUE_MAX);
				fprintf(out, ",value=%s", hex);
			}
		}
	}
	fputc(')', out);
}

static void print_text(FILE *out, const struct conn *k)
{
	char src[INET6_ADDRSTRLEN + 8], dst[INET6_ADDRSTRLEN + 8];
	char pb[16];
	size_t i;

	fprintf(out, "conn 0x%08x", k->id);
	if (!k->have_req) {
		fputs(k->req_cut ? " (REQ cut short in the capture)" :
				   " (no REQ in the capture)", out);
	} else if (!k->annex) {
		fprintf(out, " sid 0x%016llx (not an annex SID)",
			(unsigned long long)k->sid);
	} else if (!k->have_hdr) {
		fprintf(out, " %s ?:? -> ?:%u",
			proto_name(k->protocol, pb, sizeof(pb)), k->dport);
	} else {
		endpoint(src, sizeof(src), &k->hdr, k->hdr.src_addr,
			 k->hdr.src_port);
		endpoint(dst, sizeof(dst), &k->hdr, k->hdr.dst_addr, k->dport);
		fprintf(out, " %s %s -> %s",
			proto_name(k->protocol, pb, sizeof(pb)), src, dst);
	}
	for (i = 0; i < k->nmsgs; i++)
		print_msg(out, &k->msgs[i]);
	fputc('\n', out);
	for (i = 0; i < k->devs.n; i++)
		fprintf(out, "  deviation %s (frame %llu): %s\n",
			k->devs.v[i].name,
			(unsigned long long)k->devs.v[i].frame,
			k->devs.v[i].detail);
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static void json_devs(FILE *out, const struct devs *d)
{
	size_t i;

	fputs("\"deviations\":[", out);
	for (i = 0; i < d->n; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		json_str(out, d->v[i].name);
		fprintf(out, ",\"frame\":%llu,\"detail\":",
			(unsigned long long)d->v[i].frame);
		json_str(out, d->v[i].detail);
		fputc('}', out);
	}
	fputc(']', out);
}

static void json_msg(FILE *out, const struct msg *s)
{
	char hex[2 * SIWX_CM_REJ_ARI_SIZE + 1];
	const char *n;

	fprintf(out, "{\"type\":");
	json_str(out, s->attr ? cap_attr_name(s->attr) : "?");
	fprintf(out, ",\"frame\":%llu", (unsigned long long)s->frame);
	if (s->attr == SIWX_CM_ATTR_REJ) {
		fprintf(out, ",\"reason\":%u,\"msg_rejected\":%u,\"ari_len\":%u",
			s->reason, s->msg_rejected, s->info_len);
	}
	if (s->decoded) {
		fprintf(out, ",\"layer\":%u,\"layer_name\":", s->rej.layer);
		n = ipcm_layer_name(s->rej.layer);
		if (n)
			json_str(out, n);
		else
			fputs("null", out);
		if (s->rej.layer == SIWX_IPCM_LAYER_IPCM) {
			fprintf(out, ",\"ari\":%u,\"ari_name\":", s->rej.ari);
			n = ipcm_ari_name(s->rej.ari);
			if (n)
				json_str(out, n);
			else
				fputs("null", out);
			hexstr(hex, sizeof(hex), s->rej.value,
			       s->rej.value_len < SIWX_IPCM_REJ_VALUE_MAX ?
			       s->rej.value_len : SIWX_IPCM_REJ_VALUE_MAX);
			fprintf(out, ",\"value_len\":%u,\"value\":\"%s\"",
				s->rej.value_len, hex);
		} else if (s->rej.layer == SIWX_IPCM_LAYER_ULP) {
			hexstr(hex, sizeof(hex), s->rej.ulp, s->rej.ulp_len);
			fprintf(out, ",\"ulp\":\"%s\"", hex);
		}
	}
	fputc('}', out);
}

static void print_json(FILE *out, const struct conn *k)
{
	char a[INET6_ADDRSTRLEN];
	const char *n;
	size_t i;

	fprintf(out, "{\"conn\":\"0x%08x\",\"peer\":", k->id);
	if (k->have_peer)
		fprintf(out, "\"0x%08x\"", k->peer);
	else
		fputs("null", out);
	fprintf(out, ",\"frame\":%llu,\"req\":%s",
		(unsigned long long)k->frame, k->have_req ? "true" : "false");
	if (k->have_req)
		fprintf(out, ",\"sid\":\"0x%016llx\",\"annex\":%s",
			(unsigned long long)k->sid,
			k->annex ? "true" : "false");
	else
		fputs(",\"sid\":null,\"annex\":null", out);
	if (k->have_req && k->annex) {
		fprintf(out, ",\"protocol\":%u,\"protocol_name\":",
			k->protocol);
		n = ipcm_protocol_name(k->protocol);
		if (n)
			json_str(out, n);
		else
			fputs("null", out);
		fprintf(out, ",\"dport\":%u", k->dport);
	} else {
		fputs(",\"protocol\":null,\"protocol_name\":null,\"dport\":null",
		      out);
	}
	if (k->have_hdr) {
		fprintf(out, ",\"major\":%u,\"minor\":%u,\"ip_version\":%u,\"reserved\":%u",
			k->hdr.major, k->hdr.minor, k->hdr.ip_version,
			k->hdr.reserved);
		ipcm_addr_str(&k->hdr, k->hdr.src_addr, a, sizeof(a));
		fputs(",\"src\":", out);
		json_str(out, a);
		fprintf(out, ",\"sport\":%u,\"dst\":", k->hdr.src_port);
		ipcm_addr_str(&k->hdr, k->hdr.dst_addr, a, sizeof(a));
		json_str(out, a);
	} else {
		fputs(",\"major\":null,\"minor\":null,\"ip_version\":null,\"reserved\":null,\"src\":null,\"sport\":null,\"dst\":null",
		      out);
	}
	fputs(",\"messages\":[", out);
	for (i = 0; i < k->nmsgs; i++) {
		if (i)
			fputc(',', out);
		json_msg(out, &k->msgs[i]);
	}
	fputs("],", out);
	json_devs(out, &k->devs);
	fputs("}\n", out);
}

static void report(const struct check *c, enum check_format fmt, FILE *out)
{
	const struct devs *g = &c->global;
	size_t i, j;

	for (i = 0; i < c->n; i++) {
		const struct conn *k = &c->conns[i];

		if (fmt == CHECK_JSON) {
			print_json(out, k);
		} else if (fmt == CHECK_TEXT) {
			print_text(out, k);
		} else {
			for (j = 0; j < k->devs.n; j++)
				fprintf(out, "conn 0x%08x: deviation %s (frame %llu): %s\n",
					k->id, k->devs.v[j].name,
					(unsigned long long)k->devs.v[j].frame,
					k->devs.v[j].detail);
		}
	}
	if (!g->n)
		return;
	if (fmt == CHECK_JSON) {
		fputs("{\"conn\":null,", out);
		json_devs(out, g);
		fputs("}\n", out);
		return;
	}
	for (j = 0; j < g->n; j++)
		fprintf(out, "capture: deviation %s (frame %llu): %s\n",
			g->v[j].name, (unsigned long long)g->v[j].frame,
			g->v[j].detail);
}

static void check_free(struct check *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		free(c->conns[i].msgs);
		free(c->conns[i].devs.v);
	}
	free(c->conns);
	free(c->global.v);
}

int ipcm_check_capture(const uint8_t *buf, size_t len, const char *name,
		       enum check_format fmt, FILE *out, FILE *err)
{
	struct check c = { 0 };
	struct cap_stats st;
	enum cap_err e;
	size_t where;
	int rc;

	e = cap_walk(buf, len, on_cm, &c, &st, &where);
	report(&c, fmt, out);
	if (fmt == CHECK_TEXT)
		fprintf(out, "%s: %llu frames, %llu RoCEv2, %llu CM MADs, %zu connections, %zu deviations\n",
			name, (unsigned long long)st.frames,
			(unsigned long long)st.roce,
			(unsigned long long)st.cm, c.n, c.ndevs);
	rc = c.ndevs ? 1 : 0;
	if (c.oom) {
		fprintf(err, "siwx-ipcm: %s: out of memory\n", name);
		rc = 2;
	}
	if (e != CAP_OK) {
		fprintf(err, "siwx-ipcm: %s: %s (byte %zu)\n", name,
			cap_err_text(e), where);
		rc = 2;
	}
	check_free(&c);
	return rc;
}
