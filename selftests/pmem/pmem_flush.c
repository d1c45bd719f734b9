// SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
/*
 * pmem_flush - the power-failure sequence of suite powerfail (two VMs).
 *
 *   pmem_flush [--pmem DEV] [--port N] [--mode auto|native|emulated]
 *
 * VM b (the target, tools/vm/run --pmem): maps DEV (default
 * $SIWX_PMEM_DEV, a devdax device), registers its first 2 MiB, listens,
 * hands out address and rkey, and waits to be killed.
 * VM a (the initiator): connects and runs
 *     RDMA Write 4 KiB (the record, at offset 0),
 *     Flush(persistent) of the record,
 *     Atomic Write 8 bytes (the pointer, at offset 4096),
 *     Flush(persistent) of the pointer,
 * natively (ibv_wr_flush / ibv_wr_atomic_write, all four posted at once:
 * the responder orders them) when both ends can, otherwise as librpma
 * emulates them: each Flush an RDMA Read of 8 bytes after the Write, the
 * pointer an 8-byte RDMA Write after the first Read completed. Then it
 * asks b how many bytes b's kernel wrote back to pmem meanwhile (a kprobe
 * event on arch_wb_cache_pmem, size argument), saves the record and the
 * pointer to $SIWX_RESULTS (powerfail-record.bin, powerfail-pointer.bin,
 * powerfail-expect.txt) and cuts b's power (tools/vm/run --powerfail:
 * $SIWX_RESULTS/powerfail). The host then checks b's NVDIMM backing file
 * (selftests/pmem/powerfail.sh). b saves where the region is in that file
 * (powerfail-target.txt in its $SIWX_RESULTS). Prints TAP.
 *
 * Built against our rdma-core (bin/) with the native path; the stock build
 * has the emulation only.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <unistd.h>

#include "rdma_util.h"

#define REGION		(2u << 20)	/* devdax: 2 MiB aligned mappings */
#define RECORD		4096
#define PTR_OFF		4096
#define IO_MS		30000
#define NSLOT		4
#define SLOTSZ		256

/* IB_UVERBS_DEVICE_* of the kernel's ib_user_verbs.h (not in rdma-core 44) */
#define DEV_FLUSH_PERSISTENT	(1ULL << 39)
#define DEV_ATOMIC_WRITE	(1ULL << 40)

#define KPROBE_DIR	"/sys/kernel/tracing"
#define KPROBE_EVENT	"siwx_pmem/wb"

enum { MSG_INFO = 1, MSG_DONE, MSG_REPORT };

static int ntest;
static int nfail;

__attribute__((format(printf, 2, 3)))
static void tap(int ok, const char *fmt, ...)
{
	va_list ap;

	printf("%sok %d - ", ok ? "" : "not ", ++ntest);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	if (!ok)
		nfail++;
}

static void diag(const char *fmt, ...)
{
	va_list ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
}

static int write_file(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "w");
	int rc = 0;

	if (!f)
		return -errno;
	if (fwrite(p, 1, n, f) != n)
		rc = -EIO;
	if (fflush(f) || fsync(fileno(f)))
		rc = -errno;
	if (fclose(f) && !rc)
		rc = -errno;
	return rc;
}

static int write_str(const char *dir, const char *name, const char *s)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return write_file(path, s, strlen(s));
}

static uint64_t dev_caps(struct ibv_context *ctx)
{
	struct ibv_device_attr_ex a;

	memset(&a, 0, sizeof(a));
	if (ibv_query_device_ex(ctx, NULL, &a))
		return 0;
	return a.device_cap_flags_ex;
}

static int native_capable(struct ibv_context *ctx)
{
#ifdef HAVE_IBV_FLUSH
	uint64_t c = dev_caps(ctx);

	return (c & DEV_FLUSH_PERSISTENT) && (c & DEV_ATOMIC_WRITE);
#else
	(void)dev_caps;
	return 0;
#endif
}

/* ---- the kprobe on arch_wb_cache_pmem (target) ------------------------ */

static int kprobe_on(void)
{
	static const char def[] =
		"p:" KPROBE_EVENT " arch_wb_cache_pmem addr=%di:x64 size=%si:u64\n";
	int fd, rc = 0;

	/* the test VM mounts debugfs, not tracefs */
	if (access(KPROBE_DIR "/kprobe_events", F_OK) &&
	    mount("tracefs", KPROBE_DIR, "tracefs", 0, NULL))
		return -errno;
	fd = open(KPROBE_DIR "/kprobe_events", O_WRONLY | O_APPEND);
	if (fd < 0)
		return -errno;
	if (write(fd, def, strlen(def)) < 0)
		rc = -errno;
	close(fd);
	if (rc)
		return rc;
	fd = open(KPROBE_DIR "/events/" KPROBE_EVENT "/enable", O_WRONLY);
	if (fd < 0)
		return -errno;
	if (write(fd, "1\n", 2) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

/* bytes written back and the number of calls, from the trace buffer */
static int kprobe_sum(uint64_t *bytes, uint32_t *calls)
{
	FILE *f = fopen(KPROBE_DIR "/trace", "r");
	char line[512];
	char *p;

	*bytes = 0;
	*calls = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#' || !strstr(line, "wb:"))
			continue;
		p = strstr(line, "size=");
		if (!p)
			continue;
		*bytes += strtoull(p + 5, NULL, 0);
		(*calls)++;
	}
	fclose(f);
	return 0;
}

/* ---- connection ------------------------------------------------------- */

struct conn {
	struct ru_ep ep;
	struct ru_chan ch;
};

static void caps_for(struct ru_caps *caps, struct conn *c, int qpx)
{
	ru_caps_default(caps);
	ru_chan_caps(caps, &c->ch, NSLOT, SLOTSZ, SLOTSZ,
		     IBV_ACCESS_LOCAL_WRITE);
	caps->initiator_depth = 4;
	caps->responder_resources = 4;
#ifdef HAVE_IBV_FLUSH
	if (qpx)
		caps->send_ops = IBV_QP_EX_WITH_RDMA_WRITE |
				 IBV_QP_EX_WITH_RDMA_READ |
				 IBV_QP_EX_WITH_FLUSH |
				 IBV_QP_EX_WITH_ATOMIC_WRITE;
#else
	(void)qpx;
#endif
}

/* ---- target (VM b) ---------------------------------------------------- */

static int run_target(const char *dev, int port)
{
	const char *res = ru_env("SIWX_RESULTS", "/results");
	long off = ru_env_long("SIWX_PMEM_OFFSET", -1);
	struct ru_listener l = { 0 };
	struct conn c;
	struct ru_caps caps;
	struct ibv_mr *mr = NULL;
	struct ru_msg mine, peer, m;
	char buf[512];
	uint8_t *pm;
	int fd, rc, native = 0, access, kp;
	uint64_t bytes;
	uint32_t calls;

	memset(&c, 0, sizeof(c));
	fd = open(dev, O_RDWR);
	if (fd < 0) {
		tap(0, "target: open %s: %s", dev, strerror(errno));
		return 1;
	}
	pm = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	tap(pm != MAP_FAILED, "target: mmap 2 MiB of %s", dev);
	if (pm == MAP_FAILED)
		return 1;
	/* a known state: the record and pointer area zero */
	memset(pm, 0, 2 * RECORD);
	snprintf(buf, sizeof(buf), "file=%s\noffset=%ld\n",
		 ru_env("SIWX_PMEM_FILE", ""), off);
	tap(write_str(res, "powerfail-target.txt", buf) == 0,
	    "target: region at offset %ld of the backing file", off);

	kp = kprobe_on();
	if (kp)
		diag("kprobe on arch_wb_cache_pmem: %s", strerror(-kp));
	tap(kp == 0, "target: kprobe event on arch_wb_cache_pmem");

	rc = ru_listen(&l, ru_env("SIWX_LOCAL", "192.168.78.2"),
		       (uint16_t)port, 4);
	tap(rc == 0, "target: listen on port %d%s%s", port, rc ? ": " : "",
	    rc ? ru_errmsg() : "");
	if (rc)
		return 1;
	caps_for(&caps, &c, 0);
	rc = ru_accept_start(&l, &c.ep, &caps, 240000);
	if (!rc)
		rc = ru_ep_wait_established(&c.ep, RU_TIMEOUT_MS);
	tap(rc == 0, "target: accepted%s%s", rc ? ": " : "",
	    rc ? ru_errmsg() : "");
	if (rc)
		return 1;

	access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		 IBV_ACCESS_REMOTE_READ;
#ifdef HAVE_IBV_FLUSH
	if (native_capable(c.ep.id->verbs)) {
		mr = ibv_reg_mr(c.ep.pd, pm, REGION, access |
				IBV_ACCESS_FLUSH_PERSISTENT |
				IBV_ACCESS_FLUSH_GLOBAL);
		if (mr)
			native = 1;
		else
			diag("ibv_reg_mr with FLUSH_PERSISTENT: %s",
			     strerror(errno));
	}
#endif
	if (!mr)
		mr = ibv_reg_mr(c.ep.pd, pm, REGION, access);
	tap(mr != NULL, "target: MR on %s (%s)", dev,
	    native ? "flush access" : "no flush access: emulation only");
	if (!mr)
		return 1;

	memset(&mine, 0, sizeof(mine));
	mine.type = MSG_INFO;
	mine.addr = (uintptr_t)pm;
	mine.len = REGION;
	mine.rkey = mr->rkey;
	mine.cap = native;
	rc = ru_msg_exchange(&c.ep, &c.ch, 0, &mine, &peer, IO_MS);
	tap(rc == 0, "target: INFO exchanged");
	if (rc)
		return 1;

	rc = ru_msg_recv(&c.ep, &c.ch, MSG_DONE, &m, 240000);
	tap(rc == 0, "target: DONE from the initiator");
	if (rc)
		return 1;
	bytes = 0;
	calls = 0;
	if (!kp)
		kp = kprobe_sum(&bytes, &calls);
	snprintf(buf, sizeof(buf), "kprobe=%d\nbytes=%" PRIu64 "\ncalls=%u\n",
		 kp, bytes, calls);
	write_str(res, "powerfail-writeback.txt", buf);
	memset(&m, 0, sizeof(m));
	m.type = MSG_REPORT;
	m.value = bytes;
	m.count = calls;
	m.status = kp ? 1 : 0;
	rc = ru_msg_send(&c.ep, &c.ch, &m, IO_MS);
	tap(rc == 0, "target: REPORT sent (%" PRIu64 " bytes written back in %u calls)",
	    bytes, calls);
	/* now the power goes; still here after 120 s is a failure */
	diag("target: waiting for the power cut");
	sleep(120);
	tap(0, "target: still alive 120 s after the REPORT (no power cut)");
	return 1;
}

/* ---- initiator (VM a) -------------------------------------------------- */

static int wait_ok(struct ru_ep *e, int n, const char *what)
{
	struct ibv_wc wc[8];
	int got, i, ok = 1;

	got = ru_poll_n(e->scq, wc, n, IO_MS);
	if (got < n) {
		tap(0, "%s: %d of %d completions", what, got < 0 ? 0 : got, n);
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (wc[i].status != IBV_WC_SUCCESS) {
			diag("%s: wr %" PRIu64 " status %s", what, wc[i].wr_id,
			     ibv_wc_status_str(wc[i].status));
			ok = 0;
		}
	}
	tap(ok, "%s: %d completions, all successful", what, n);
	return ok ? 0 : -1;
}

/* native_capable() of the device named name (SIWX_DEV0), before connecting */
static int local_native(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx;
	int i, r = 0;

	for (i = 0; l && l[i]; i++) {
		if (strcmp(ibv_get_device_name(l[i]), name))
			continue;
		ctx = ibv_open_device(l[i]);
		if (ctx) {
			r = native_capable(ctx);
			ibv_close_device(ctx);
		}
	}
	if (l)
		ibv_free_device_list(l);
	return r;
}

static int run_initiator(int port, const char *mode)
{
	const char *res = ru_env("SIWX_RESULTS", "/results");
	struct conn c;
	struct ru_caps caps;
	struct ru_msg mine, peer, m;
	struct ru_buf b = { 0 };
	uint64_t seed = ru_random_seed(), ptr;
	char buf[512], path[512];
	int rc, native, want_native, fd, i;

	memset(&c, 0, sizeof(c));
	want_native = strcmp(mode, "emulated") != 0 &&
		      local_native(ru_env("SIWX_DEV0", "siw0"));
	/* the extended QP (send_ops) only where the device has the ops */
	caps_for(&caps, &c, want_native);
	rc = ru_connect(&c.ep, ru_env("SIWX_LOCAL", "192.168.78.1"),
			ru_env("SIWX_PEER", "192.168.78.2"), (uint16_t)port,
			&caps, 240000);
	tap(rc == 0, "initiator: connected%s%s", rc ? ": " : "",
	    rc ? ru_errmsg() : "");
	if (rc)
		return 1;
	native = want_native && native_capable(c.ep.id->verbs);
	if (want_native && !native)
		diag("local device: no FLUSH_PERSISTENT/ATOMIC_WRITE caps (or no native build)");
	memset(&mine, 0, sizeof(mine));
	mine.type = MSG_INFO;
	mine.cap = native;
	rc = ru_msg_exchange(&c.ep, &c.ch, 1, &mine, &peer, IO_MS);
	tap(rc == 0, "initiator: INFO exchanged (target rkey 0x%x, native %u)",
	    peer.rkey, peer.cap);
	if (rc)
		return 1;
	native = native && peer.cap;
	if (!strcmp(mode, "native") && !native) {
		tap(0, "native Flush/Atomic Write available on both ends (--mode native)");
		return 1;
	}
	diag("path: %s", native ? "native Flush + Atomic Write" :
	     "emulation: RDMA Read after Write, 8-byte RDMA Write");

	rc = ru_buf_alloc(&b, c.ep.pd, 2 * RECORD, IBV_ACCESS_LOCAL_WRITE);
	if (rc) {
		tap(0, "initiator: buffer: %s", ru_errmsg());
		return 1;
	}
	ru_fill(b.addr, RECORD, seed);
	ptr = (seed * 0x9e3779b97f4a7c15ull) | 1;	/* non-zero */
	memcpy(b.addr + PTR_OFF, &ptr, sizeof(ptr));
	memset(b.addr + RECORD + 64, 0, 64);

	if (native) {
#ifdef HAVE_IBV_FLUSH
		struct ibv_qp_ex *qx = c.ep.qpx;

		if (!qx) {
			tap(0, "initiator: an extended QP (send_ops)");
			return 1;
		}
		ibv_wr_start(qx);
		qx->wr_id = 1;
		qx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(qx, peer.rkey, peer.addr);
		ibv_wr_set_sge(qx, b.mr->lkey, (uintptr_t)b.addr, RECORD);
		qx->wr_id = 2;
		ibv_wr_flush(qx, peer.rkey, peer.addr, RECORD,
			     IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE);
		qx->wr_id = 3;
		ibv_wr_atomic_write(qx, peer.rkey, peer.addr + PTR_OFF, &ptr);
		qx->wr_id = 4;
		ibv_wr_flush(qx, peer.rkey, peer.addr + PTR_OFF, 8,
			     IBV_FLUSH_PERSISTENT, IBV_FLUSH_RANGE);
		rc = ibv_wr_complete(qx);
		tap(rc == 0, "initiator: Write, Flush(P), Atomic Write, Flush(P) posted (%s)",
		    rc ? strerror(rc) : "ok");
		if (rc || wait_ok(&c.ep, 4, "initiator: native sequence"))
			return 1;
#endif
	} else {
		rc = ru_post_send(&c.ep, IBV_WR_RDMA_WRITE, &b, 0, RECORD,
				  peer.addr, peer.rkey, 1, IBV_SEND_SIGNALED);
		if (!rc)
			rc = ru_post_send(&c.ep, IBV_WR_RDMA_READ, &b,
					  RECORD + 64, 8, peer.addr, peer.rkey,
					  2, IBV_SEND_SIGNALED);
		tap(rc == 0, "initiator: Write 4 KiB + Read 8 bytes (flush emulation) posted");
		if (rc || wait_ok(&c.ep, 2, "initiator: record written and read back"))
			return 1;
		rc = ru_post_send(&c.ep, IBV_WR_RDMA_WRITE, &b, PTR_OFF, 8,
				  peer.addr + PTR_OFF, peer.rkey, 3,
				  IBV_SEND_SIGNALED);
		if (!rc)
			rc = ru_post_send(&c.ep, IBV_WR_RDMA_READ, &b,
					  RECORD + 64, 8, peer.addr + PTR_OFF,
					  peer.rkey, 4, IBV_SEND_SIGNALED);
		tap(rc == 0, "initiator: Write 8 bytes (pointer) + Read 8 bytes posted");
		if (rc || wait_ok(&c.ep, 2, "initiator: pointer written and read back"))
			return 1;
		tap(!memcmp(b.addr + RECORD + 64, &ptr, 8),
		    "initiator: the Read returned the pointer");
	}

	/* what the host must find in b's backing file */
	snprintf(path, sizeof(path), "%s/powerfail-record.bin", res);
	rc = write_file(path, b.addr, RECORD);
	snprintf(path, sizeof(path), "%s/powerfail-pointer.bin", res);
	if (!rc)
		rc = write_file(path, &ptr, sizeof(ptr));
	snprintf(buf, sizeof(buf), "path=%s\nseed=0x%" PRIx64 "\npointer=0x%" PRIx64 "\n",
		 native ? "native" : "emulated", seed, ptr);
	if (!rc)
		rc = write_str(res, "powerfail-expect.txt", buf);
	tap(rc == 0, "initiator: expected record and pointer saved");

	memset(&m, 0, sizeof(m));
	m.type = MSG_DONE;
	rc = ru_msg_send(&c.ep, &c.ch, &m, IO_MS);
	if (!rc)
		rc = ru_msg_recv(&c.ep, &c.ch, MSG_REPORT, &m, IO_MS);
	tap(rc == 0 && !m.status, "initiator: target's writeback count: %" PRIu64
	    " bytes in %u calls of arch_wb_cache_pmem", m.value, m.count);
	if (!rc) {
		if (native)
			tap(m.value == RECORD + 8,
			    "persistent Flushes wrote back exactly the record and the pointer (%d bytes)",
			    RECORD + 8);
		else
			tap(m.value == 0,
			    "emulated path: no pmem writeback at the target (no Flush executed)");
		snprintf(buf, sizeof(buf), "bytes=%" PRIu64 "\ncalls=%u\n",
			 m.value, m.count);
		write_str(res, "powerfail-writeback.txt", buf);
	}

	/* cut b's power (tools/vm/run --powerfail) and wait for it */
	snprintf(path, sizeof(path), "%s/powerfail", res);
	rc = write_file(path, "", 0);
	snprintf(path, sizeof(path), "%s/powerfail.done", res);
	for (i = 0; !rc && i < 600; i++) {
		fd = open(path, O_RDONLY);
		if (fd >= 0) {
			close(fd);
			break;
		}
		usleep(50000);
	}
	tap(!rc && i < 600, "initiator: the target's power is cut");
	return nfail ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *dev = ru_env("SIWX_PMEM_DEV", "/dev/dax0.0");
	const char *mode = ru_env("SIWX_PMEM_MODE", "auto");
	int port = (int)ru_env_long("SIWX_PMEM_PORT", 18520);
	int i, role, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--pmem") && i + 1 < argc)
			dev = argv[++i];
		else if (!strcmp(argv[i], "--port") && i + 1 < argc)
			port = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--mode") && i + 1 < argc)
			mode = argv[++i];
		else {
			fprintf(stderr, "usage: %s [--pmem DEV] [--port N] [--mode auto|native|emulated]\n",
				argv[0]);
			return 2;
		}
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("TAP version 13\n");
	ru_print_lib_info(stdout);
	role = ru_pair_role();
	if (role == 'b')
		rc = run_target(dev, port);
	else if (role == 'a')
		rc = run_initiator(port, mode);
	else {
		tap(0, "SIWX_ROLE is a or b (pair topology)");
		rc = 1;
	}
	printf("1..%d\n", ntest);
	return rc;
}
