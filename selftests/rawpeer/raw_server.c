// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * raw_server - the verbs side of the rawpeer suite.
 *
 *   raw_server --port P [options]
 *   raw_server --caps [--dev NAME]
 *
 * Listens with rdma_cm on SIWX_ADDR0 (siw0), registers one memory region
 * with the access flags asked for, fills it and a guard page on each side
 * with a pseudo-random pattern, accepts the first connection with private
 * data "rkey=0x.. addr=0x.. len=N" (text: tools/mpa-peer turns it into
 * variables), then records everything the QP reports -- CM events, async
 * events, completions, the QP state -- until the QP leaves RTS or the
 * time is up. At the end it compares the whole area (guards included)
 * with what it must hold and prints one "server mem ..." verdict.
 *
 * Output: one "server WHAT key=value..." line per observation, flushed.
 * Exit: 0 memory as expected, 1 memory differs, 3 setup failure (no
 * connection, verbs error), 2 usage.
 *
 * Options:
 *   --addr A           listen address (default SIWX_ADDR0)
 *   --port P           listen port (required)
 *   --len N            MR length (default 4096)
 *   --access LIST      lw,rw,rr,ra (local write, remote write/read/atomic),
 *                      or none (default lw,rw,rr,ra)
 *   --pd2              register the MR in a second PD (not the QP's)
 *   --recv N           receives posted before accept (default 4)
 *   --recv-len N       bytes per receive (default 256)
 *   --ird N --ord N    responder_resources/initiator_depth to accept with
 *                      (default 16/16)
 *   --timeout MS       connect request + wait for the QP to leave RTS
 *                      (default 20000)
 *   --linger MS        keep collecting after that (default 700)
 *   --set-u64 OFF=V    initial host-order u64 at MR offset OFF (repeatable)
 *   --expect-u64 OFF=V expected final u64 at MR offset OFF (repeatable)
 *   --expect-hex OFF=HEX  expected final bytes at MR offset OFF
 *   --seed S           pattern seed (default random, SIWX_SEED)
 *   --post-fadd ADD    once established (+ --post-delay MS, default 300),
 *   --post-cswap CMP:SWAP  post one FetchAdd / CmpSwap to the peer's
 *                      rkey 0x1234, address 0x1000 (--post-rkey/--post-raddr)
 *                      with an 8-byte result buffer, printed at the end
 *   --ready-fd N       write "listening" to file descriptor N and close it
 *                      once rdma_listen() returned (a connection made
 *                      earlier may never be accepted by siw)
 *   --caps             print the device's capabilities and exit: verbs
 *                      attributes and the caps word of siw's ALLOC_CTX
 *                      response (SIW_CAP_ATOMIC 1, SIW_CAP_IMM_DATA 2)
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <arpa/inet.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rdma_util.h"

#define MAX_EXP		16
#define PAGE		4096

static void say(const char *fmt, ...)
{
	va_list ap;

	fputs("server ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	fflush(stdout);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: raw_server --port P [--addr A] [--len N] [--access lw,rw,rr,ra|none]\n"
		"       [--pd2] [--recv N] [--recv-len N] [--ird N] [--ord N]\n"
		"       [--timeout MS] [--linger MS] [--set-u64 OFF=V]...\n"
		"       [--expect-u64 OFF=V]... [--expect-hex OFF=HEX]... [--seed S]\n"
		"       [--post-fadd ADD | --post-cswap CMP:SWAP] [--post-delay MS]\n"
		"       [--post-rkey K] [--post-raddr A] [--ready-fd N]\n"
		"       raw_server --caps [--dev NAME]\n");
	exit(2);
}

static uint64_t num(const char *s)
{
	char *end;
	uint64_t v;

	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end)
		usage();
	return v;
}

/* "OFF=VALUE": split */
static void offval(const char *s, uint64_t *off, const char **val)
{
	const char *eq = strchr(s, '=');
	char tmp[32];

	if (!eq || eq == s || (size_t)(eq - s) >= sizeof(tmp))
		usage();
	memcpy(tmp, s, eq - s);
	tmp[eq - s] = 0;
	*off = num(tmp);
	*val = eq + 1;
}

static int hexbytes(const char *s, uint8_t *b, size_t max)
{
	size_t n = 0;

	if (s[0] == '0' && s[1] == 'x')
		s += 2;
	while (s[0] && s[1]) {
		unsigned int v;

		if (n == max || sscanf(s, "%2x", &v) != 1)
			return -1;
		b[n++] = v;
		s += 2;
	}
	return *s ? -1 : (int)n;
}

static const char *access_str(int a, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", a & IBV_ACCESS_LOCAL_WRITE ? "lw," : "",
		 a & IBV_ACCESS_REMOTE_WRITE ? "rw," : "",
		 a & IBV_ACCESS_REMOTE_READ ? "rr," : "",
		 a & IBV_ACCESS_REMOTE_ATOMIC ? "ra," : "", a ? "" : "none");
	if (buf[0] && buf[strlen(buf) - 1] == ',')
		buf[strlen(buf) - 1] = 0;
	return buf;
}

/* ---------------------------------------------------------------- caps */

/* legacy write() ABI of GET_CONTEXT (include/uapi/rdma/ib_user_verbs.h) */
struct uv_hdr {
	uint32_t command;
	uint16_t in_words;
	uint16_t out_words;
};

struct uv_get_context {
	uint64_t response;
};

struct uv_get_context_resp {
	uint32_t async_fd;
	uint32_t num_comp_vectors;
	/* siw_uresp_alloc_ctx */
	uint32_t dev_id;
	uint32_t caps;		/* "pad" upstream: 0 */
};

static int print_caps(const char *name)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ibv_device *dev = NULL;
	struct ibv_device_attr attr;
	struct ibv_context *ctx;
	int i, fd, rc = 3;

	for (i = 0; list && list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			dev = list[i];
	if (!dev) {
		say("caps error=no-device dev=%s", name);
		goto out;
	}
	ctx = ibv_open_device(dev);
	if (!ctx || ibv_query_device(ctx, &attr)) {
		say("caps error=query dev=%s errno=%d", name, errno);
		goto out;
	}
	say("caps dev=%s atomic_cap=%d max_qp_rd_atom=%d max_qp_init_rd_atom=%d max_sge=%d",
	    name, attr.atomic_cap, attr.max_qp_rd_atom,
	    attr.max_qp_init_rd_atom, attr.max_sge);
	ibv_close_device(ctx);

	/* what the kernel itself reports to a new user context */
	{
		char path[128];
		struct {
			struct uv_hdr h;
			struct uv_get_context c;
		} cmd;
		struct uv_get_context_resp resp;

		snprintf(path, sizeof(path), "/dev/infiniband/%s", dev->dev_name);
		fd = open(path, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			say("caps error=open path=%s errno=%d", path, errno);
			goto out;
		}
		memset(&cmd, 0, sizeof(cmd));
		memset(&resp, 0xff, sizeof(resp));
		cmd.h.command = 0;	/* IB_USER_VERBS_CMD_GET_CONTEXT */
		cmd.h.in_words = sizeof(cmd) / 4;
		cmd.h.out_words = sizeof(resp) / 4;
		cmd.c.response = (uintptr_t)&resp;
		if (write(fd, &cmd, sizeof(cmd)) != sizeof(cmd)) {
			say("caps error=get_context path=%s errno=%d", path, errno);
			close(fd);
			goto out;
		}
		close((int)resp.async_fd);
		close(fd);
		say("caps dev=%s uverbs=%s dev_id=0x%x kernel_caps=0x%x atomic=%d imm_data=%d",
		    name, dev->dev_name, resp.dev_id, resp.caps,
		    !!(resp.caps & 1), !!(resp.caps & 2));
	}
	rc = 0;
out:
	if (list)
		ibv_free_device_list(list);
	return rc;
}

/* ---------------------------------------------------------------- main */

struct expect {
	uint64_t off;
	uint8_t bytes[64];
	int n;
};

static const char *cm_str(enum rdma_cm_event_type t)
{
	return rdma_event_str(t);
}

int main(int argc, char **argv)
{
	const char *addr = ru_addr0(), *dev = ru_env("SIWX_DEV0", "siw0");
	int port = -1, pd2 = 0, caps_only = 0, i, nrecv = 4, rc;
	size_t len = 4096, recv_len = 256;
	int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	unsigned int ird = 16, ord = 16;
	uint64_t timeout = 20000, linger = 700, seed = 0, t0;
	int have_seed = 0;
	struct expect sets[MAX_EXP], exps[MAX_EXP];
	int nsets = 0, nexps = 0;
	struct rdma_event_channel *lch = NULL, *ch = NULL;
	struct rdma_cm_id *lid = NULL, *id = NULL;
	struct rdma_cm_event *ev;
	struct ibv_pd *pd = NULL, *pdm = NULL;
	struct ibv_cq *scq = NULL, *rcq = NULL;
	struct ibv_mr *mr = NULL, *rmr = NULL;
	struct ibv_qp_init_attr qia;
	struct rdma_conn_param cp;
	uint8_t *area = NULL, *want = NULL, *rbuf = NULL, *mrp;
	size_t area_len;
	char pdata[200], abuf[32];
	int established = 0, disconnected = 0, n_async = 0, n_cqe = 0;
	int qp_err = 0, mem_bad;
	struct sockaddr_in sin;
	int post_op = -1, posted = 0, ready_fd = -1;
	uint64_t post_a = 0, post_b = 0, post_delay = 300, est_at = 0;
	uint64_t post_raddr = 0x1000, *result = NULL;
	uint32_t post_rkey = 0x1234;
	struct ibv_mr *resmr = NULL;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (i = 1; i < argc; i++) {
		const char *o = argv[i], *a = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(o, "--caps")) {
			caps_only = 1;
			continue;
		}
		if (!strcmp(o, "--pd2")) {
			pd2 = 1;
			continue;
		}
		if (!a)
			usage();
		i++;
		if (!strcmp(o, "--addr")) {
			addr = a;
		} else if (!strcmp(o, "--dev")) {
			dev = a;
		} else if (!strcmp(o, "--port")) {
			port = (int)num(a);
		} else if (!strcmp(o, "--len")) {
			len = num(a);
		} else if (!strcmp(o, "--access")) {
			access = 0;
			if (strstr(a, "lw"))
				access |= IBV_ACCESS_LOCAL_WRITE;
			if (strstr(a, "rw"))
				access |= IBV_ACCESS_REMOTE_WRITE;
			if (strstr(a, "rr"))
				access |= IBV_ACCESS_REMOTE_READ;
			if (strstr(a, "ra"))
				access |= IBV_ACCESS_REMOTE_ATOMIC;
		} else if (!strcmp(o, "--recv")) {
			nrecv = (int)num(a);
		} else if (!strcmp(o, "--recv-len")) {
			recv_len = num(a);
		} else if (!strcmp(o, "--ird")) {
			ird = num(a);
		} else if (!strcmp(o, "--ord")) {
			ord = num(a);
		} else if (!strcmp(o, "--timeout")) {
			timeout = num(a);
		} else if (!strcmp(o, "--linger")) {
			linger = num(a);
		} else if (!strcmp(o, "--seed")) {
			seed = num(a);
			have_seed = 1;
		} else if (!strcmp(o, "--set-u64") || !strcmp(o, "--expect-u64")) {
			struct expect *e = o[2] == 's' ? &sets[nsets++] :
							 &exps[nexps++];
			const char *v;
			uint64_t x;

			if (nsets > MAX_EXP || nexps > MAX_EXP)
				usage();
			offval(a, &e->off, &v);
			x = num(v);
			memcpy(e->bytes, &x, 8);
			e->n = 8;
		} else if (!strcmp(o, "--post-fadd")) {
			post_op = IBV_WR_ATOMIC_FETCH_AND_ADD;
			post_a = num(a);
		} else if (!strcmp(o, "--post-cswap")) {
			char tmp[64], *c;

			snprintf(tmp, sizeof(tmp), "%s", a);
			c = strchr(tmp, ':');
			if (!c)
				usage();
			*c = 0;
			post_op = IBV_WR_ATOMIC_CMP_AND_SWP;
			post_a = num(tmp);
			post_b = num(c + 1);
		} else if (!strcmp(o, "--ready-fd")) {
			ready_fd = (int)num(a);
		} else if (!strcmp(o, "--post-delay")) {
			post_delay = num(a);
		} else if (!strcmp(o, "--post-rkey")) {
			post_rkey = num(a);
		} else if (!strcmp(o, "--post-raddr")) {
			post_raddr = num(a);
		} else if (!strcmp(o, "--expect-hex")) {
			struct expect *e = &exps[nexps++];
			const char *v;

			if (nexps > MAX_EXP)
				usage();
			offval(a, &e->off, &v);
			e->n = hexbytes(v, e->bytes, sizeof(e->bytes));
			if (e->n < 0)
				usage();
		} else {
			usage();
		}
	}
	if (caps_only)
		return print_caps(dev);
	if (port < 0 || !len || nrecv < 0)
		usage();
	for (i = 0; i < nsets; i++)
		if (sets[i].off + 8 > len)
			usage();
	for (i = 0; i < nexps; i++)
		if (exps[i].off + exps[i].n > len)
			usage();
	if (!have_seed)
		seed = ru_random_seed();

	/* ---- listen */
	lch = rdma_create_event_channel();
	if (!lch || rdma_create_id(lch, &lid, NULL, RDMA_PS_TCP)) {
		say("error step=create_id errno=%d", errno);
		return 3;
	}
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1)
		usage();
	if (rdma_bind_addr(lid, (struct sockaddr *)&sin) ||
	    rdma_listen(lid, 4)) {
		say("error step=listen addr=%s port=%d errno=%d (%s)", addr,
		    port, errno, strerror(errno));
		return 3;
	}
	say("listening addr=%s port=%d dev=%s seed=0x%" PRIx64, addr, port,
	    lid->verbs ? ibv_get_device_name(lid->verbs->device) : "?", seed);
	if (ready_fd >= 0) {
		if (write(ready_fd, "listening\n", 10) != 10)
			say("warning ready-fd=%d errno=%d", ready_fd, errno);
		close(ready_fd);
	}

	/* ---- wait for the connect request */
	t0 = ru_now_ms();
	{
		struct pollfd p = { .fd = lch->fd, .events = POLLIN };

		if (poll(&p, 1, (int)timeout) <= 0 || rdma_get_cm_event(lch, &ev)) {
			say("error step=connect_request timeout_ms=%" PRIu64, timeout);
			say("end result=no-connection");
			return 3;
		}
	}
	if (ev->event != RDMA_CM_EVENT_CONNECT_REQUEST) {
		say("error step=connect_request event=%s status=%d",
		    cm_str(ev->event), ev->status);
		rdma_ack_cm_event(ev);
		return 3;
	}
	id = ev->id;
	{
		char hex[2 * 64 + 1] = "-";
		const uint8_t *p = ev->param.conn.private_data;
		int k, n = ev->param.conn.private_data_len;

		for (k = 0; p && k < n && k < 64; k++)
			sprintf(hex + 2 * k, "%02x", p[k]);
		say("connect-request pd_len=%d responder_resources=%u initiator_depth=%u pdata=%s",
		    n, ev->param.conn.responder_resources,
		    ev->param.conn.initiator_depth, hex);
	}
	rdma_ack_cm_event(ev);
	ch = rdma_create_event_channel();
	if (!ch || rdma_migrate_id(id, ch)) {
		say("error step=migrate errno=%d", errno);
		return 3;
	}

	/* ---- resources */
	pd = ibv_alloc_pd(id->verbs);
	pdm = pd2 ? ibv_alloc_pd(id->verbs) : pd;
	scq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	rcq = ibv_create_cq(id->verbs, 64, NULL, NULL, 0);
	if (!pd || !pdm || !scq || !rcq) {
		say("error step=pd_cq errno=%d", errno);
		return 3;
	}
	area_len = PAGE + ((len + PAGE - 1) & ~(size_t)(PAGE - 1)) + PAGE;
	area = mmap(NULL, area_len, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	want = malloc(area_len);
	if (area == MAP_FAILED || !want) {
		say("error step=alloc");
		return 3;
	}
	mrp = area + PAGE;
	ru_fill(area, area_len, seed);
	for (i = 0; i < nsets; i++)
		memcpy(mrp + sets[i].off, sets[i].bytes, 8);
	memcpy(want, area, area_len);
	for (i = 0; i < nexps; i++)
		memcpy(want + PAGE + exps[i].off, exps[i].bytes, exps[i].n);
	mr = ibv_reg_mr(pdm, mrp, len, access);
	if (!mr) {
		say("error step=reg_mr access=%s errno=%d (%s)",
		    access_str(access, abuf, sizeof(abuf)), errno,
		    strerror(errno));
		return 3;
	}
	say("mr rkey=0x%08x addr=0x%" PRIx64 " len=%zu access=%s pd=%s", mr->rkey,
	    (uint64_t)(uintptr_t)mrp, len, access_str(access, abuf, sizeof(abuf)),
	    pd2 ? "other" : "qp");
	for (i = 0; i < nsets; i++) {
		uint64_t v;

		memcpy(&v, sets[i].bytes, 8);
		say("set off=%" PRIu64 " u64=0x%016" PRIx64, sets[i].off, v);
	}

	memset(&qia, 0, sizeof(qia));
	qia.send_cq = scq;
	qia.recv_cq = rcq;
	qia.qp_type = IBV_QPT_RC;
	qia.cap.max_send_wr = 16;
	qia.cap.max_recv_wr = nrecv > 0 ? nrecv : 1;
	qia.cap.max_send_sge = 1;
	qia.cap.max_recv_sge = 1;
	if (rdma_create_qp(id, pd, &qia)) {
		say("error step=create_qp errno=%d (%s)", errno, strerror(errno));
		return 3;
	}
	if (nrecv) {
		rbuf = calloc(nrecv, recv_len);
		rmr = rbuf ? ibv_reg_mr(pd, rbuf, nrecv * recv_len,
					IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (!rmr) {
			say("error step=recv_mr errno=%d", errno);
			return 3;
		}
		for (i = 0; i < nrecv; i++) {
			struct ibv_sge sge = {
				.addr = (uintptr_t)rbuf + i * recv_len,
				.length = recv_len, .lkey = rmr->lkey,
			};
			struct ibv_recv_wr wr = { .wr_id = 100 + i,
						  .sg_list = &sge,
						  .num_sge = 1 }, *bad;

			if (ibv_post_recv(id->qp, &wr, &bad)) {
				say("error step=post_recv errno=%d", errno);
				return 3;
			}
		}
	}
	say("qp qpn=%u recv_posted=%d recv_len=%zu", id->qp->qp_num, nrecv,
	    recv_len);
	if (post_op >= 0) {
		result = aligned_alloc(64, 64);
		resmr = result ? ibv_reg_mr(pd, result, 64,
					    IBV_ACCESS_LOCAL_WRITE) : NULL;
		if (!resmr) {
			say("error step=result_mr errno=%d", errno);
			return 3;
		}
		*result = 0x5a5a5a5a5a5a5a5aull;
	}

	snprintf(pdata, sizeof(pdata), "rkey=0x%08x addr=0x%" PRIx64 " len=%zu",
		 mr->rkey, (uint64_t)(uintptr_t)mrp, len);
	memset(&cp, 0, sizeof(cp));
	cp.private_data = pdata;
	cp.private_data_len = strlen(pdata) + 1;
	cp.responder_resources = ird;
	cp.initiator_depth = ord;
	if (rdma_accept(id, &cp)) {
		say("error step=accept errno=%d (%s)", errno, strerror(errno));
		return 3;
	}
	say("accepted ird=%u ord=%u pdata=\"%s\"", ird, ord, pdata);

	/* ---- watch */
	{
		int afd = id->verbs->async_fd;
		int fl = fcntl(afd, F_GETFL);
		uint64_t end = ru_now_ms() + timeout, stop = 0;

		fcntl(afd, F_SETFL, fl | O_NONBLOCK);
		fcntl(ch->fd, F_SETFL, fcntl(ch->fd, F_GETFL) | O_NONBLOCK);
		for (;;) {
			struct ibv_async_event ae;
			struct ibv_wc wc;
			struct pollfd p[2] = {
				{ .fd = afd, .events = POLLIN },
				{ .fd = ch->fd, .events = POLLIN },
			};
			uint64_t now = ru_now_ms();
			int st;

			while (!ibv_get_async_event(id->verbs, &ae)) {
				n_async++;
				say("async event=%s", ibv_event_type_str(ae.event_type));
				ibv_ack_async_event(&ae);
			}
			while (!rdma_get_cm_event(ch, &ev)) {
				say("cm-event event=%s status=%d", cm_str(ev->event),
				    ev->status);
				if (ev->event == RDMA_CM_EVENT_ESTABLISHED) {
					established = 1;
					est_at = ru_now_ms();
				}
				if (ev->event == RDMA_CM_EVENT_DISCONNECTED)
					disconnected = 1;
				rdma_ack_cm_event(ev);
			}
			for (int q = 0; q < 2; q++) {
				struct ibv_cq *cq = q ? scq : rcq;

				while (ibv_poll_cq(cq, 1, &wc) == 1) {
					char hex[2 * 32 + 1] = "-";

					n_cqe++;
					if (!q && wc.status == IBV_WC_SUCCESS &&
					    wc.wr_id >= 100 &&
					    wc.wr_id < 100 + (uint64_t)nrecv) {
						uint8_t *b = rbuf + (wc.wr_id - 100) * recv_len;
						unsigned int k;

						for (k = 0; k < wc.byte_len && k < 32; k++)
							sprintf(hex + 2 * k, "%02x", b[k]);
					}
					say("cqe cq=%s wr_id=%" PRIu64 " status=%s opcode=%d byte_len=%u wc_flags=0x%x with_imm=%d imm=0x%08x data=%s",
					    q ? "send" : "recv", wc.wr_id,
					    ibv_wc_status_str(wc.status), wc.opcode,
					    wc.byte_len, wc.wc_flags,
					    !!(wc.wc_flags & IBV_WC_WITH_IMM),
					    ntohl(wc.imm_data), hex);
				}
			}
			if (post_op >= 0 && !posted && established &&
			    now >= est_at + post_delay) {
				struct ibv_sge sge = {
					.addr = (uintptr_t)result, .length = 8,
					.lkey = resmr->lkey,
				};
				struct ibv_send_wr wr = {
					.wr_id = 1, .sg_list = &sge, .num_sge = 1,
					.opcode = post_op,
					.send_flags = IBV_SEND_SIGNALED,
				}, *badwr;
				int prc;

				wr.wr.atomic.remote_addr = post_raddr;
				wr.wr.atomic.rkey = post_rkey;
				wr.wr.atomic.compare_add = post_a;
				wr.wr.atomic.swap = post_b;
				prc = ibv_post_send(id->qp, &wr, &badwr);
				posted = 1;
				say("post op=%s rc=%d%s%s rkey=0x%x raddr=0x%" PRIx64,
				    post_op == IBV_WR_ATOMIC_FETCH_AND_ADD ?
				    "fadd" : "cswap", prc, prc ? " err=" : "",
				    prc ? strerror(prc < 0 ? -prc : prc) : "",
				    post_rkey, post_raddr);
			}
			st = ru_qp_state(id->qp);
			if (!qp_err && st == IBV_QPS_ERR) {
				qp_err = 1;
				say("qp-state state=ERR after_ms=%" PRIu64, now - t0);
			}
			if (!stop && (qp_err || disconnected))
				stop = now + linger;
			if (stop && now >= stop)
				break;
			if (!stop && now >= end) {
				say("timeout qp_state=%s after_ms=%" PRIu64,
				    ru_qp_state_str(st), now - t0);
				break;
			}
			poll(p, 2, 50);
		}
	}

	/* ---- verdict */
	{
		size_t k, first = (size_t)-1, ndiff = 0;

		for (k = 0; k < area_len; k++)
			if (area[k] != want[k]) {
				if (first == (size_t)-1)
					first = k;
				ndiff++;
			}
		mem_bad = ndiff != 0;
		for (i = 0; i < nexps; i++) {
			uint64_t v = 0;

			memcpy(&v, mrp + exps[i].off,
			       exps[i].n < 8 ? exps[i].n : 8);
			say("value off=%" PRIu64 " u64=0x%016" PRIx64,
			    exps[i].off, v);
		}
		if (!mem_bad) {
			say("mem ok bytes=%zu expected_changes=%d", area_len, nexps);
		} else {
			long off = (long)first - PAGE;
			const char *where = off < 0 ? "guard-before" :
				(size_t)off >= len ? "guard-after" : "mr";
			char g[33] = "", w[33] = "";

			for (k = 0; k < 16 && first + k < area_len; k++) {
				sprintf(g + 2 * k, "%02x", area[first + k]);
				sprintf(w + 2 * k, "%02x", want[first + k]);
			}
			say("mem changed ndiff=%zu first_mr_off=%ld where=%s got=%s want=%s",
			    ndiff, off, where, g, w);
		}
	}
	if (result)
		say("result u64=0x%016" PRIx64, *result);
	say("end established=%d disconnected=%d qp_err=%d qp_state=%s async=%d cqes=%d result=%s",
	    established, disconnected, qp_err,
	    ru_qp_state_str(ru_qp_state(id->qp)), n_async, n_cqe,
	    mem_bad ? "mem-changed" : "mem-ok");

	rdma_disconnect(id);
	rdma_destroy_qp(id);
	if (mr)
		ibv_dereg_mr(mr);
	if (rmr)
		ibv_dereg_mr(rmr);
	if (resmr)
		ibv_dereg_mr(resmr);
	free(result);
	ibv_destroy_cq(scq);
	ibv_destroy_cq(rcq);
	if (pdm != pd)
		ibv_dealloc_pd(pdm);
	ibv_dealloc_pd(pd);
	rdma_destroy_id(id);
	rdma_destroy_id(lid);
	rdma_destroy_event_channel(ch);
	rdma_destroy_event_channel(lch);
	munmap(area, area_len);
	free(want);
	free(rbuf);
	rc = mem_bad ? 1 : 0;
	return rc;
}
