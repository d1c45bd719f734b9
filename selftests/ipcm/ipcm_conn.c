// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * ipcm_conn - one rdma_cm program for every transport: the same code
 * connects over iWARP (siw) and RoCE (rxe), and prints the 5-tuple each
 * end sees, so that suite ipcm_rxe can show an application gets the same
 * answers from both (and, on RoCE, what the IP CM Service annex header
 * of the very connection carried on the wire).
 *
 *   ipcm_conn server ADDR PORT N [accept|reject]
 *	listens on ADDR:PORT (rdma_cm, RDMA_PS_TCP) for N requests; prints
 *	   request peer=IP:PORT local=IP:PORT pdata_len=N pdata=TEXT
 *	for each and accepts it (with a QP; the connection is then
 *	disconnected by the client) or rejects it with private data
 *	"ulp-reject" (a reject of the application, not of rdma_cm).
 *   ipcm_conn client ADDR PORT [SRC]
 *	connects (private data "hello"), prints
 *	   connected local=IP:PORT peer=IP:PORT
 *	and disconnects; or prints (exit 1)
 *	   rejected status=N pdata_len=N pdata=TEXT ari=HEX|-
 *	ari: the Additional Rejection Information of a consumer reject
 *	(IB/RoCE) as librdmacm's rdma_consumer_reject_ari() returns it
 *	(patches/rdma-core 0013): with patches/linux-cma 0004, what
 *	follows the 148 bytes of the REJ's private data.
 *
 * Uses librdmacm's event channel API (what a portable application uses):
 * rdma_create_id, rdma_resolve_addr/route, rdma_connect, rdma_listen.
 * IPCM_TIMEOUT_MS: how long to wait for an event (default 20000).
 * Exit 0 on success, 1 on a failure, 2 on usage errors.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rdma/rdma_cma.h>
#include <siwx/ipcm.h>

/*
 * librdmacm's call for the Additional Rejection Information: ours has it
 * (patches/rdma-core 0013), Debian's stock one (this program is built
 * against both) does not. Weak: in the stock build it is NULL and the
 * program reads what follows the REJ's 148 bytes of private data itself.
 */
const void *rdma_consumer_reject_ari(struct rdma_cm_id *id,
				     const struct rdma_cm_event *event,
				     uint8_t *ari_len) __attribute__((weak));

static const void *reject_ari(struct rdma_cm_id *id,
			      const struct rdma_cm_event *ev, uint8_t *len)
{
	const unsigned char *pd = ev->param.conn.private_data;
	int n = ev->param.conn.private_data_len;

	if (rdma_consumer_reject_ari)
		return rdma_consumer_reject_ari(id, ev, len);
	*len = 0;
	if (ev->status != SIWX_CM_REJ_REASON_CONSUMER || !pd ||
	    n <= SIWX_CM_REJ_PD_SIZE) {
		errno = ENODATA;
		return NULL;
	}
	*len = n - SIWX_CM_REJ_PD_SIZE;
	return pd + SIWX_CM_REJ_PD_SIZE;
}

/* how long to wait for an event; IPCM_TIMEOUT_MS overrides */
static int timeout_ms = 20000;
/*
 * below timeout_ms: a resolution that lost its wake-up (see neigh_warm in
 * ipcm_rxe.sh) still completes at its timeout, before the event wait ends
 */
#define RESOLVE_MS 5000

static const char *ep(const struct sockaddr *sa, char *buf, size_t n)
{
	char ip[INET6_ADDRSTRLEN] = "?";
	unsigned int port = 0;

	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *s = (const void *)sa;

		inet_ntop(AF_INET, &s->sin_addr, ip, sizeof(ip));
		port = ntohs(s->sin_port);
	} else if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *s = (const void *)sa;

		inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof(ip));
		port = ntohs(s->sin6_port);
	}
	snprintf(buf, n, sa->sa_family == AF_INET6 ? "[%s]:%u" : "%s:%u",
		 ip, port);
	return buf;
}

/* the next event on ch, or NULL after timeout_ms */
static struct rdma_cm_event *next_event(struct rdma_event_channel *ch)
{
	struct pollfd p = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev;

	if (poll(&p, 1, timeout_ms) <= 0 || rdma_get_cm_event(ch, &ev))
		return NULL;
	return ev;
}

/* wait for event kind on ch; anything else is printed and fails */
static int expect(struct rdma_event_channel *ch, enum rdma_cm_event_type kind,
		  int *status)
{
	struct rdma_cm_event *ev = next_event(ch);
	int ok;

	if (!ev) {
		printf("timeout waiting for %s\n", rdma_event_str(kind));
		return -1;
	}
	ok = ev->event == kind;
	if (status)
		*status = ev->status;
	if (!ok)
		printf("event %s status=%d (waiting for %s)\n",
		       rdma_event_str(ev->event), ev->status,
		       rdma_event_str(kind));
	rdma_ack_cm_event(ev);
	return ok ? 0 : -1;
}

static int resolve(const char *addr, const char *port, int passive,
		   struct sockaddr_storage *ss)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST |
					      (passive ? AI_PASSIVE : 0) };
	struct addrinfo *res;

	if (getaddrinfo(addr, port, &hints, &res))
		return -1;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

static int make_qp(struct rdma_cm_id *id)
{
	struct ibv_qp_init_attr a = {
		.cap = { .max_send_wr = 4, .max_recv_wr = 4,
			 .max_send_sge = 1, .max_recv_sge = 1 },
		.qp_type = IBV_QPT_RC,
	};

	return rdma_create_qp(id, NULL, &a);
}

static int server(const char *addr, const char *port, int n, int accept)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct sockaddr_storage ss;
	struct rdma_cm_id *lid;
	char a[80], b[80];
	int i, rc = 0;

	if (!ch || rdma_create_id(ch, &lid, NULL, RDMA_PS_TCP) ||
	    resolve(addr, port, 1, &ss) ||
	    rdma_bind_addr(lid, (struct sockaddr *)&ss) ||
	    rdma_listen(lid, 8)) {
		perror("server: listen");
		return 1;
	}
	printf("listening %s\n", ep(rdma_get_local_addr(lid), a, sizeof(a)));
	fflush(stdout);
	for (i = 0; i < n; i++) {
		struct rdma_cm_event *ev = NULL;
		struct rdma_cm_id *id;
		char pd[64] = "";
		int len;

		while (!ev) {
			ev = next_event(ch);
			if (!ev) {
				printf("timeout waiting for a request\n");
				return 1;
			}
			if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
				printf("event %s status=%d\n",
				       rdma_event_str(ev->event), ev->status);
				if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
					rdma_destroy_qp(ev->id);
				rdma_ack_cm_event(ev);
				ev = NULL;
				fflush(stdout);
			}
		}
		id = ev->id;
		len = ev->param.conn.private_data_len;
		if (ev->param.conn.private_data) {
			memcpy(pd, ev->param.conn.private_data,
			       len < 63 ? len : 63);
			pd[63] = 0;
		}
		printf("request peer=%s local=%s pdata_len=%d pdata=%s\n",
		       ep(rdma_get_peer_addr(id), a, sizeof(a)),
		       ep(rdma_get_local_addr(id), b, sizeof(b)), len,
		       *pd ? pd : "-");
		rdma_ack_cm_event(ev);
		if (accept) {
			if (make_qp(id) || rdma_accept(id, NULL) ||
			    expect(ch, RDMA_CM_EVENT_ESTABLISHED, NULL)) {
				printf("accept failed\n");
				rc = 1;
			} else {
				printf("established\n");
			}
		} else {
			rdma_reject(id, "ulp-reject", 11);
			rdma_destroy_id(id);
		}
		fflush(stdout);
	}
	if (accept && !rc) {	/* the last one's DISCONNECTED */
		struct rdma_cm_event *ev = next_event(ch);

		if (ev) {
			printf("event %s\n", rdma_event_str(ev->event));
			rdma_ack_cm_event(ev);
		}
	}
	return rc;
}

static int client(const char *addr, const char *port, const char *src)
{
	struct rdma_event_channel *ch = rdma_create_event_channel();
	struct rdma_conn_param cp = { .private_data = "hello",
				      .private_data_len = 6,
				      .responder_resources = 1,
				      .initiator_depth = 1,
				      .retry_count = 7,
				      .rnr_retry_count = 7 };
	struct sockaddr_storage dst, s;
	struct rdma_cm_event *ev;
	struct rdma_cm_id *id;
	char a[80], b[80];
	int status = 0;

	if (!ch || rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) ||
	    resolve(addr, port, 0, &dst) ||
	    (src && resolve(src, "0", 0, &s)) ||
	    rdma_resolve_addr(id, src ? (struct sockaddr *)&s : NULL,
			      (struct sockaddr *)&dst, RESOLVE_MS) ||
	    expect(ch, RDMA_CM_EVENT_ADDR_RESOLVED, NULL) ||
	    rdma_resolve_route(id, RESOLVE_MS) ||
	    expect(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, NULL) ||
	    make_qp(id) || rdma_connect(id, &cp)) {
		perror("client: connect");
		return 1;
	}
	ev = next_event(ch);
	if (!ev) {
		printf("timeout waiting for the answer\n");
		return 1;
	}
	if (ev->event == RDMA_CM_EVENT_REJECTED) {
		/*
		 * IB/RoCE: the REJ's 148 bytes of private data, then, with
		 * patches/linux-cma 0004, the Additional Rejection
		 * Information of a consumer reject (the annex's format)
		 */
		const unsigned char *pd = ev->param.conn.private_data;
		int len = ev->param.conn.private_data_len, i, err;
		const unsigned char *ari;
		uint8_t alen = 0;

		ari = reject_ari(id, ev, &alen);
		err = ari ? 0 : errno;
		printf("rejected status=%d pdata_len=%d pdata=%.11s ari=",
		       ev->status, len, pd && len && *pd ?
		       (const char *)pd : "-");
		/*
		 * It must agree with the private data it points into;
		 * if not, the line says so (and matches no expectation).
		 */
		if (ari ? ari != pd + SIWX_CM_REJ_PD_SIZE ||
			  len != SIWX_CM_REJ_PD_SIZE + alen :
			  err != ENODATA)
			printf("inconsistent(%s,len=%u,off=%ld)",
			       ari ? "returned" : strerror(err), alen,
			       ari ? (long)(ari - pd) : -1L);
		for (i = 0; ari && i < alen; i++)
			printf("%02x", ari[i]);
		printf("%s\n", ari ? "" : "-");
		rdma_ack_cm_event(ev);
		return 1;
	}
	if (ev->event != RDMA_CM_EVENT_ESTABLISHED) {
		printf("%s status=%d\n", rdma_event_str(ev->event),
		       ev->status);
		rdma_ack_cm_event(ev);
		return 1;
	}
	rdma_ack_cm_event(ev);
	printf("connected local=%s peer=%s device=%s\n",
	       ep(rdma_get_local_addr(id), a, sizeof(a)),
	       ep(rdma_get_peer_addr(id), b, sizeof(b)),
	       ibv_get_device_name(id->verbs->device));
	fflush(stdout);
	rdma_disconnect(id);
	if (expect(ch, RDMA_CM_EVENT_DISCONNECTED, &status))
		return 1;
	rdma_destroy_qp(id);
	rdma_destroy_id(id);
	rdma_destroy_event_channel(ch);
	return 0;
}

int main(int argc, char **argv)
{
	if (getenv("IPCM_TIMEOUT_MS"))
		timeout_ms = atoi(getenv("IPCM_TIMEOUT_MS"));
	if (argc >= 5 && !strcmp(argv[1], "server"))
		return server(argv[2], argv[3], atoi(argv[4]),
			      argc < 6 || strcmp(argv[5], "reject"));
	if (argc >= 4 && !strcmp(argv[1], "client"))
		return client(argv[2], argv[3], argc > 4 ? argv[4] : NULL);
	fprintf(stderr, "usage: ipcm_conn server ADDR PORT N [accept|reject]\n"
			"       ipcm_conn client ADDR PORT [SRC]\n");
	return 2;
}
