// SPDX-License-Identifier: GPL-2.0
/*
 * scale_tool: what an RDMA device costs per object and per connection, for
 * tools/bench/scale.sh (make bench-scale; Documentation/performance.md).
 *
 *   scale_tool mem -d DEV [-n NS] [-k KINDS] [-s SQ] [-r RQ] [-S] [-P MAX] [-C CYCLES]
 *       Kernel memory per verbs object. Opens DEV, allocates one PD, then
 *       for every kind of KINDS (default qp,mr4k,mr1m) and every N of NS
 *       (default 1,16,64,256), CYCLES times (default 3; after a warm-up
 *       cycle of 2 objects): measures, creates N objects, measures,
 *       destroys them and measures again. Reported: the median over the
 *       cycles of every difference.
 *         qp    a CQ of SQ+RQ entries and an RC QP (SQ send, RQ receive
 *               work requests, one SGE each, no inline data) on it: what
 *               one perftest-like connection end needs (perftest's
 *               defaults: tx depth 128, rx depth 512)
 *         mr4k  an MR of 4 KiB (one page of one large buffer each)
 *         mr1m  an MR of 1 MiB
 *       -S (siw): first a spacer CQ of 32768 entries whose mapping takes
 *       the context's first 1 MiB of mmap offsets, created before any
 *       measurement and not counted. siw hands out the mmap offset of a
 *       queue as its key, and libsiw takes the key 0x90000, which is also
 *       SIW_INVAL_UOBJ_KEY, for a failed mapping: the queue that happens
 *       to land at page offset 144 of a context fails to be created
 *       (ENOMEM, "libsiw: prepare QP mapping failed"). With the spacer no
 *       queue can land there.
 *       -P MAX: before everything else (and without the spacer), create
 *       up to MAX CQ+QP pairs in the context and report how many could be
 *       created ("result test=qp_probe ... created=K", with the reason of
 *       the first failure).
 *   scale_tool memconn -a ADDR0 -b ADDR1 [-n NS] [-s SQ] [-r RQ] [-S] [-C CYCLES]
 *       The same for N rdma_cm connections held open at once (default NS
 *       1,16,64): a listener on ADDR0, clients from ADDR1 (in $SIWX_NETNS1
 *       when ADDR1 is $SIWX_ADDR1, as the selftests' rdma_util does), both
 *       ends in this process, each end with a PD, a send and a receive CQ
 *       and a QP of SQ/RQ work requests. A connection's figure is both
 *       ends: two QPs, two rdma_cm ids, and the two TCP sockets (iWARP) or
 *       the IB CM state (RoCE). -S: a spacer CQ (see mem) in every siw
 *       device's context librdmacm opened.
 *   scale_tool connserve -a ADDR -p PORT -n M [-t]
 *   scale_tool connect -c ADDR -p PORT -n M [-b SRC] [-t]
 *       Connection setup rate: the client makes M connections one after the
 *       other, each connect, ESTABLISHED, disconnect, DISCONNECTED, close;
 *       the server accepts each (a PD, CQs and a QP of SQ/RQ per
 *       connection, as the client) and waits for its DISCONNECTED before
 *       it closes it and accepts the next. -t: plain TCP sockets instead,
 *       the baseline: connect; shutdown(SHUT_WR); read until EOF; close
 *       against accept; read until EOF; close.
 *
 * Memory is read from /proc/meminfo (Slab, SUnreclaim, VmallocUsed,
 * Percpu) and /proc/slabinfo (the sum of active_objs * objsize and of
 * num_objs * objsize over all caches), each time after a pause (-w ms,
 * default 500: objects freed through RCU come back) and after shrinking
 * every SLUB cache (/sys/kernel/slab/<cache>/shrink: the empty slabs of
 * the per-CPU partial lists go back). "kernel" is SUnreclaim +
 * VmallocUsed + Percpu: the reclaimable slab (dentries and inodes, which
 * the shrinking's own sysfs walk creates) is left out, but for the xarray
 * nodes (radix_tree_node, see included[]), and so are the slabs of
 * tw_sock_TCP and vmap_area (see excluded[]). Memory the kernel
 * takes straight from the page allocator is in none of them (neither siw
 * nor rxe does for these objects); pinned user pages are not kernel
 * memory.
 *
 * Output (stdout), one line per measurement:
 *   result test=mem_qp size=0 n=16 d_kernel=B d_slab=B d_sunreclaim=B
 *          d_vmalloc=B d_percpu=B d_slabinfo_active=B d_slabinfo_total=B
 *          d_excluded=B d_included=B residual_kernel=B per_kernel=B per_sunreclaim=B
 *          per_vmalloc=B per_slabinfo_active=B cycles=C d_kernel_min=B
 *          d_kernel_max=B secs_create=S
 *     (d_*: after creating less before; residual_kernel: after destroying
 *     less before; medians over the cycles; per_*: d_* / n, rounded;
 *     per_sunreclaim: the slab part of per_kernel; secs_create: the median
 *     time creating the N objects took)
 *   top test=mem_qp size=0 n=256 cache=NAME objsize=B d_objs=K d_bytes=B (the caches
 *     that grew most, for the largest N)
 *   result test=conn_rate size=0 n=M ok=K failed=F secs=S conn_per_s=R
 *          connect_median_ms=T connect_p90_ms=T cycle_median_ms=T
 *   error test=... n=... reason=...     (a measurement that failed)
 * Exit status 0 when every measurement was made (connect: also when some
 * connections failed: failed= says how many), 1 otherwise, 2 usage.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "rdma_util.h"

#define MAX_NS		16
#define TOP_CACHES	8
#define CONN_TIMEOUT_MS	30000
#define MAX_CYCLES	15

static int opt_spacer, opt_probe, opt_cycles = 3;
static int opt_sq = 128, opt_rq = 512, opt_wait_ms = 500;

static void usage(void)
{
	fprintf(stderr,
		"usage: scale_tool mem -d DEV [-n NS] [-k qp,mr4k,mr1m] [-s SQ] [-r RQ] [-w MS] [-S] [-P MAX]\n"
		"       scale_tool memconn -a ADDR0 -b ADDR1 [-n NS] [-s SQ] [-r RQ] [-w MS]\n"
		"       scale_tool connserve -a ADDR -p PORT -n M [-t]\n"
		"       scale_tool connect -c ADDR -p PORT -n M [-b SRC] [-t]\n");
	exit(2);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* ---- memory figures ----------------------------------------------------- */

struct cache {
	char name[64];
	long long active, total, objsize;
};

struct mem {
	long long slab, sunreclaim, vmalloc, percpu;	/* bytes */
	long long sl_active, sl_total;			/* slabinfo, bytes */
	long long excluded;			/* slabs of excluded[] */
	long long included;			/* slabs of included[] */
	struct cache *c;
	int nc;
};

static void shrink_all(void)
{
	DIR *d = opendir("/sys/kernel/slab");
	struct dirent *de;
	char p[512];

	if (!d)
		return;
	while ((de = readdir(d))) {
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/sys/kernel/slab/%s/shrink", de->d_name);
		f = fopen(p, "w");
		if (!f)
			continue;
		fputs("1", f);
		fclose(f);
	}
	closedir(d);
}

static void mem_free(struct mem *m)
{
	free(m->c);
	memset(m, 0, sizeof(*m));
}

/*
 * Caches whose growth is the kernel's design, not the objects': a closed
 * TCP connection waits in TIME_WAIT for 60 s (tw_sock_TCP, the perftest
 * runs before), and a vfree()d area's vmap_area stays until the lazy purge,
 * which then frees thousands at once (the queues of every QP destroyed
 * before). Their slabs are left out of "kernel", as the churn suite does.
 */
static const char *const excluded[] = { "tw_sock_TCP", "vmap_area" };
/*
 * A reclaimable-accounted cache whose objects here are not reclaimable:
 * the nodes of the xarrays that map QP numbers and memory keys to their
 * objects (siw allocates MR keys at random, so each MR brings about two
 * nodes of its own). Counted in "kernel".
 */
static const char *const included[] = { "radix_tree_node" };

/* settle, shrink and read; 0 or -errno (ru_errmsg) */
static int mem_read(struct mem *m)
{
	char line[512], name[64];
	long page = sysconf(_SC_PAGESIZE);
	FILE *f;
	long long v;
	int cap = 0;
	size_t e;

	mem_free(m);
	sleep_ms(opt_wait_ms);
	shrink_all();
	f = fopen("/proc/meminfo", "r");
	if (!f)
		return ru_fail(errno, "/proc/meminfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%63[^:]: %lld", name, &v) != 2)
			continue;
		if (!strcmp(name, "Slab"))
			m->slab = v * 1024;
		else if (!strcmp(name, "SUnreclaim"))
			m->sunreclaim = v * 1024;
		else if (!strcmp(name, "VmallocUsed"))
			m->vmalloc = v * 1024;
		else if (!strcmp(name, "Percpu"))
			m->percpu = v * 1024;
	}
	fclose(f);
	f = fopen("/proc/slabinfo", "r");
	if (!f)
		return ru_fail(errno, "/proc/slabinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		long long act, num, sz, pps, nslabs;

		/*
		 * name active_objs num_objs objsize objperslab pagesperslab
		 * : tunables L B S : slabdata active_slabs num_slabs shared
		 */
		if (sscanf(line, "%63s %lld %lld %lld %*d %lld : tunables %*d %*d %*d : "
			   "slabdata %*d %lld", name, &act, &num, &sz, &pps, &nslabs) != 6)
			continue;
		m->sl_active += act * sz;
		m->sl_total += num * sz;
		for (e = 0; e < sizeof(excluded) / sizeof(excluded[0]); e++)
			if (!strcmp(name, excluded[e]))
				m->excluded += nslabs * pps * page;
		for (e = 0; e < sizeof(included) / sizeof(included[0]); e++)
			if (!strcmp(name, included[e]))
				m->included += nslabs * pps * page;
		if (m->nc == cap) {
			struct cache *c;

			cap = cap ? 2 * cap : 256;
			c = realloc(m->c, cap * sizeof(*c));
			if (!c) {
				fclose(f);
				return ru_fail(ENOMEM, "out of memory");
			}
			m->c = c;
		}
		snprintf(m->c[m->nc].name, sizeof(m->c[m->nc].name), "%s", name);
		m->c[m->nc].active = act;
		m->c[m->nc].total = num;
		m->c[m->nc].objsize = sz;
		m->nc++;
	}
	fclose(f);
	return 0;
}

static long long kernel_of(const struct mem *m)
{
	return m->sunreclaim - m->excluded + m->included + m->vmalloc + m->percpu;
}

static long long per(long long d, int n)
{
	return (d + (d >= 0 ? n / 2 : -n / 2)) / n;
}

/* the caches whose active bytes grew most from b to a */
static void report_top(const char *test, long size, int n, const struct mem *b,
		       const struct mem *a)
{
	struct { int i; long long d; } top[TOP_CACHES];
	int nt = 0, i, j, k;

	for (i = 0; i < a->nc; i++) {
		long long before = 0, d;

		for (j = 0; j < b->nc; j++)
			if (!strcmp(b->c[j].name, a->c[i].name)) {
				before = b->c[j].active;
				break;
			}
		d = (a->c[i].active - before) * a->c[i].objsize;
		if (d <= 0)
			continue;
		if (nt < TOP_CACHES)
			k = nt++;
		else if (d <= top[TOP_CACHES - 1].d)
			continue;
		else
			k = TOP_CACHES - 1;
		for (; k > 0 && top[k - 1].d < d; k--)
			top[k] = top[k - 1];
		top[k].i = i;
		top[k].d = d;
	}
	for (k = 0; k < nt; k++) {
		const struct cache *c = &a->c[top[k].i];

		printf("top test=%s size=%ld n=%d cache=%s objsize=%lld d_objs=%lld d_bytes=%lld\n",
		       test, size, n, c->name, c->objsize, top[k].d / c->objsize, top[k].d);
	}
	fflush(stdout);
}

/* what one cycle measures, in the order of the result line */
enum { D_KERNEL, D_SLAB, D_SUNRECLAIM, D_VMALLOC, D_PERCPU, D_SLABINFO_ACTIVE,
       D_SLABINFO_TOTAL, D_EXCLUDED, D_INCLUDED, RESIDUAL_KERNEL, NFIELD };
static const char *const field_name[NFIELD] = {
	"d_kernel", "d_slab", "d_sunreclaim", "d_vmalloc", "d_percpu", "d_slabinfo_active",
	"d_slabinfo_total", "d_excluded", "d_included", "residual_kernel",
};

static int cmp_ll(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;

	return x < y ? -1 : x > y;
}

/* the median of v[0..n) (sorts v) */
static long long med_ll(long long *v, int n)
{
	qsort(v, n, sizeof(*v), cmp_ll);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* N objects of one kind: made and unmade by the mode */
struct objset {
	int (*create)(void *arg, int n);
	void (*destroy)(void *arg, int n);
	void *arg;
};

/*
 * opt_cycles times: read, create n, read, destroy, read. Prints the median
 * of every delta over the cycles (and the range of d_kernel), the caches
 * that grew most in the last cycle when top. 0 or 1 (an error line).
 */
static int measure(const char *test, long size, int n, int top, const struct objset *o)
{
	long long d[NFIELD][MAX_CYCLES], med[NFIELD], kmin = 0, kmax = 0;
	double secs[MAX_CYCLES], smed;
	struct mem b = {0}, a = {0}, f = {0};
	int c, x, rc = 0;

	for (c = 0; c < opt_cycles && !rc; c++) {
		double t0;

		rc = mem_read(&b);
		t0 = now_s();
		if (!rc)
			rc = o->create(o->arg, n);
		secs[c] = now_s() - t0;
		if (!rc)
			rc = mem_read(&a);
		o->destroy(o->arg, n);
		if (!rc)
			rc = mem_read(&f);
		if (rc)
			break;
		d[D_KERNEL][c] = kernel_of(&a) - kernel_of(&b);
		d[D_SLAB][c] = a.slab - b.slab;
		d[D_SUNRECLAIM][c] = a.sunreclaim - b.sunreclaim;
		d[D_VMALLOC][c] = a.vmalloc - b.vmalloc;
		d[D_PERCPU][c] = a.percpu - b.percpu;
		d[D_SLABINFO_ACTIVE][c] = a.sl_active - b.sl_active;
		d[D_SLABINFO_TOTAL][c] = a.sl_total - b.sl_total;
		d[D_EXCLUDED][c] = a.excluded - b.excluded;
		d[D_INCLUDED][c] = a.included - b.included;
		d[RESIDUAL_KERNEL][c] = kernel_of(&f) - kernel_of(&b);
		if (!c || d[D_KERNEL][c] < kmin)
			kmin = d[D_KERNEL][c];
		if (!c || d[D_KERNEL][c] > kmax)
			kmax = d[D_KERNEL][c];
	}
	if (rc) {
		printf("error test=%s size=%ld n=%d reason=%s (cycle %d)\n", test, size, n,
		       ru_errmsg(), c + 1);
	} else {
		for (x = 0; x < NFIELD; x++)
			med[x] = med_ll(d[x], opt_cycles);
		qsort(secs, opt_cycles, sizeof(*secs), cmp_d);
		smed = secs[opt_cycles / 2];
		printf("result test=%s size=%ld n=%d", test, size, n);
		for (x = 0; x < NFIELD; x++)
			printf(" %s=%lld", field_name[x], med[x]);
		printf(" per_kernel=%lld per_sunreclaim=%lld per_vmalloc=%lld "
		       "per_slabinfo_active=%lld cycles=%d d_kernel_min=%lld d_kernel_max=%lld "
		       "secs_create=%.2f\n",
		       per(med[D_KERNEL], n),
		       per(med[D_SUNRECLAIM] - med[D_EXCLUDED] + med[D_INCLUDED], n),
		       per(med[D_VMALLOC], n), per(med[D_SLABINFO_ACTIVE], n), opt_cycles,
		       kmin, kmax, smed);
		if (top)
			report_top(test, size, n, &b, &a);
	}
	fflush(stdout);
	mem_free(&b);
	mem_free(&a);
	mem_free(&f);
	return rc ? 1 : 0;
}

static int parse_ns(const char *s, int *ns)
{
	int n = 0;
	char *end;

	while (*s && n < MAX_NS) {
		long v = strtol(s, &end, 10);

		if (end == s || v < 1 || v > 100000)
			return -1;
		ns[n++] = (int)v;
		s = *end == ',' ? end + 1 : end;
		if (*end && *end != ',')
			return -1;
	}
	return n;
}

/* ---- mem: verbs objects of one device ------------------------------------- */

static struct ibv_context *open_dev(const char *name)
{
	struct ibv_device **l = ibv_get_device_list(NULL);
	struct ibv_context *ctx = NULL;
	int i;

	if (!l) {
		ru_fail(errno, "ibv_get_device_list: %s", strerror(errno));
		return NULL;
	}
	for (i = 0; l[i]; i++)
		if (!strcmp(ibv_get_device_name(l[i]), name))
			break;
	if (!l[i])
		ru_fail(ENODEV, "no device %s", name);
	else if (!(ctx = ibv_open_device(l[i])))
		ru_fail(errno, "ibv_open_device(%s): %s", name, strerror(errno));
	ibv_free_device_list(l);
	return ctx;
}

/*
 * The mappings of the device file (the provider's queues, at the offsets
 * the kernel handed out as keys), for a failure's reason: "uverbs mmaps
 * (page offset+pages): 0+6 6+4 ..."
 */
static const char *uverbs_maps(void)
{
	static char out[2048];
	char line[512];
	size_t n;
	FILE *f = fopen("/proc/self/maps", "r");

	n = (size_t)snprintf(out, sizeof(out), "uverbs mmaps (page offset+pages):");
	if (!f)
		return out;
	while (fgets(line, sizeof(line), f) && n < sizeof(out) - 32) {
		unsigned long lo, hi, off;

		if (!strstr(line, "uverbs") ||
		    sscanf(line, "%lx-%lx %*s %lx", &lo, &hi, &off) != 3)
			continue;
		n += (size_t)snprintf(out + n, sizeof(out) - n, " %lu+%lu", off / 4096,
				      (hi - lo) / 4096);
	}
	fclose(f);
	return out;
}

struct qpo {
	struct ibv_cq *cq;
	struct ibv_qp *qp;
};

static void qps_destroy(struct qpo *o, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (o[i].qp)
			ibv_destroy_qp(o[i].qp);
		if (o[i].cq)
			ibv_destroy_cq(o[i].cq);
		o[i].qp = NULL;
		o[i].cq = NULL;
	}
}

static int qps_create(struct ibv_context *ctx, struct ibv_pd *pd, struct qpo *o, int n)
{
	struct ibv_qp_init_attr qa;
	int i;

	for (i = 0; i < n; i++) {
		o[i].cq = ibv_create_cq(ctx, opt_sq + opt_rq, NULL, NULL, 0);
		if (!o[i].cq) {
			int e = errno;

			return ru_fail(e, "ibv_create_cq(%d) #%d: %s; %s", opt_sq + opt_rq,
				       i + 1, strerror(e), uverbs_maps());
		}
		memset(&qa, 0, sizeof(qa));
		qa.qp_type = IBV_QPT_RC;
		qa.send_cq = o[i].cq;
		qa.recv_cq = o[i].cq;
		qa.cap.max_send_wr = opt_sq;
		qa.cap.max_recv_wr = opt_rq;
		qa.cap.max_send_sge = 1;
		qa.cap.max_recv_sge = 1;
		o[i].qp = ibv_create_qp(pd, &qa);
		if (!o[i].qp) {
			int e = errno;

			return ru_fail(e, "ibv_create_qp(sq %d rq %d) #%d: %s; %s", opt_sq,
				       opt_rq, i + 1, strerror(e), uverbs_maps());
		}
	}
	return 0;
}

static void mrs_destroy(struct ibv_mr **mr, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (mr[i])
			ibv_dereg_mr(mr[i]);
		mr[i] = NULL;
	}
}

static int mrs_create(struct ibv_pd *pd, struct ibv_mr **mr, int n, uint8_t *buf, size_t sz)
{
	int i;

	for (i = 0; i < n; i++) {
		mr[i] = ibv_reg_mr(pd, buf + (size_t)i * sz, sz, IBV_ACCESS_LOCAL_WRITE |
				   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ);
		if (!mr[i])
			return ru_fail(errno, "ibv_reg_mr(%zu) #%d: %s", sz, i + 1,
				       strerror(errno));
	}
	return 0;
}

struct mem_arg {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	void *objs;
	uint8_t *buf;
	size_t sz;
};

static int qp_set_create(void *arg, int n)
{
	struct mem_arg *m = arg;

	return qps_create(m->ctx, m->pd, m->objs, n);
}

static void qp_set_destroy(void *arg, int n)
{
	struct mem_arg *m = arg;

	qps_destroy(m->objs, n);
}

static int mr_set_create(void *arg, int n)
{
	struct mem_arg *m = arg;

	return mrs_create(m->pd, m->objs, n, m->buf, m->sz);
}

static void mr_set_destroy(void *arg, int n)
{
	struct mem_arg *m = arg;

	mrs_destroy(m->objs, n);
}

static int do_mem(const char *dev, const int *ns, int nn, const char *kinds)
{
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *spacer = NULL;
	struct mem_arg ma;
	struct objset os;
	int maxn = 0, i, fails = 0;
	char kl[64], *save = NULL, *k;

	for (i = 0; i < nn; i++)
		if (ns[i] > maxn)
			maxn = ns[i];
	ctx = open_dev(dev);
	if (!ctx) {
		printf("error test=mem n=0 reason=%s\n", ru_errmsg());
		return 1;
	}
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		printf("error test=mem n=0 reason=ibv_alloc_pd: %s\n", strerror(errno));
		return 1;
	}
	ma.ctx = ctx;
	ma.pd = pd;
	if (opt_probe > 0) {
		struct qpo *o = calloc(opt_probe, sizeof(*o));
		int k, rc;

		if (!o)
			return 1;
		rc = qps_create(ctx, pd, o, opt_probe);
		for (k = 0; k < opt_probe && o[k].qp; k++)
			;
		printf("result test=qp_probe size=0 n=%d created=%d%s%s\n", opt_probe, k,
		       rc ? " reason=" : "", rc ? ru_errmsg() : "");
		qps_destroy(o, opt_probe);
		free(o);
	}
	if (opt_spacer) {
		spacer = ibv_create_cq(ctx, 32768, NULL, NULL, 0);
		if (!spacer) {
			printf("error test=mem n=0 reason=spacer CQ (32768 entries): %s\n",
			       strerror(errno));
			return 1;
		}
	}
	snprintf(kl, sizeof(kl), "%s", kinds);
	for (k = strtok_r(kl, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		const char *test;
		size_t sz = 0;
		uint8_t *buf = NULL;
		void *objs;

		if (!strcmp(k, "qp")) {
			test = "mem_qp";
		} else if (!strcmp(k, "mr4k")) {
			test = "mem_mr";
			sz = 4096;
		} else if (!strcmp(k, "mr1m")) {
			test = "mem_mr";
			sz = 1 << 20;
		} else {
			fprintf(stderr, "scale_tool: unknown kind %s\n", k);
			return 2;
		}
		if (sz) {
			buf = mmap(NULL, sz * maxn, PROT_READ | PROT_WRITE,
				   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
			if (buf == MAP_FAILED) {
				printf("error test=%s size=%zu n=%d reason=mmap %zu bytes: %s\n",
				       test, sz, maxn, sz * maxn, strerror(errno));
				fails++;
				continue;
			}
			objs = calloc(maxn, sizeof(struct ibv_mr *));
		} else {
			objs = calloc(maxn, sizeof(struct qpo));
		}
		if (!objs) {
			fprintf(stderr, "scale_tool: out of memory\n");
			return 1;
		}
		ma.objs = objs;
		ma.buf = buf;
		ma.sz = sz;
		os.create = sz ? mr_set_create : qp_set_create;
		os.destroy = sz ? mr_set_destroy : qp_set_destroy;
		os.arg = &ma;
		/* warm-up: the caches' first objects, one-time allocations */
		if (maxn >= 2) {
			os.create(&ma, 2);
			os.destroy(&ma, 2);
		}
		for (i = 0; i < nn; i++)
			fails += measure(test, (long)sz, ns[i], ns[i] == maxn, &os);
		free(objs);
		if (buf)
			munmap(buf, sz * maxn);
	}
	if (spacer)
		ibv_destroy_cq(spacer);
	ibv_dealloc_pd(pd);
	ibv_close_device(ctx);
	return fails ? 1 : 0;
}

/* ---- memconn: connections held open ---------------------------------------- */

static void conn_caps(struct ru_caps *c)
{
	ru_caps_default(c);
	c->max_send_wr = opt_sq;
	c->max_recv_wr = opt_rq;
	c->clamp_to_device = 1;
}

struct conn_arg {
	struct ru_listener *l;
	struct ru_caps caps;
	struct ru_ep *cli, *srv;
	const char *a0, *a1;
};

/*
 * n connections, one after the other. The server's ESTABLISHED is waited
 * for after the client's: on InfiniBand/RoCE the client's librdmacm sends
 * the RTU only when the client reads its CM event.
 */
static int pairs_open(void *arg, int n)
{
	struct conn_arg *c = arg;
	int j, rc = 0;

	for (j = 0; !rc && j < n; j++) {
		rc = ru_client_start(&c->cli[j], c->a1, c->a0, c->l->port, &c->caps,
				     CONN_TIMEOUT_MS);
		if (!rc)
			rc = ru_accept_start(c->l, &c->srv[j], &c->caps, CONN_TIMEOUT_MS);
		if (!rc)
			rc = ru_client_finish(&c->cli[j], CONN_TIMEOUT_MS);
		if (!rc)
			rc = ru_ep_wait_established(&c->srv[j], CONN_TIMEOUT_MS);
		if (rc)
			ru_fail(rc, "connection %d of %d: %s", j + 1, n, ru_errmsg());
	}
	return rc;
}

/*
 * The clients disconnect; each server, once DISCONNECTED, disconnects too
 * (InfiniBand/RoCE: that sends the DREP the client waits for; iWARP: no-op).
 */
static void pairs_close(void *arg, int n)
{
	struct conn_arg *c = arg;
	int i;

	for (i = 0; i < n; i++)
		if (c->cli[i].id)
			ru_ep_disconnect(&c->cli[i]);
	for (i = 0; i < n; i++) {
		if (c->srv[i].id) {
			ru_ep_wait_disconnected(&c->srv[i], 5000);
			ru_ep_disconnect(&c->srv[i]);
		}
	}
	for (i = 0; i < n; i++) {
		if (c->cli[i].id)
			ru_ep_wait_disconnected(&c->cli[i], 5000);
		ru_ep_close(&c->cli[i]);
		ru_ep_close(&c->srv[i]);
	}
}

static int do_memconn(const char *a0, const char *a1, const int *ns, int nn)
{
	struct ru_listener l;
	struct conn_arg ca;
	struct objset os;
	struct ru_ep *cli, *srv;
	struct ibv_cq **spacers = NULL;
	int maxn = 0, i, fails = 0, rc, nctx = 0;

	for (i = 0; i < nn; i++)
		if (ns[i] > maxn)
			maxn = ns[i];
	cli = calloc(maxn, sizeof(*cli));
	srv = calloc(maxn, sizeof(*srv));
	if (!cli || !srv)
		return 1;
	rc = ru_listen(&l, a0, 0, 128);
	if (rc) {
		printf("error test=mem_conn n=0 reason=%s\n", ru_errmsg());
		return 1;
	}
	if (opt_spacer) {
		struct ibv_context **ctxs = rdma_get_devices(&nctx);

		spacers = calloc(nctx > 0 ? nctx : 1, sizeof(*spacers));
		for (i = 0; ctxs && spacers && i < nctx; i++) {
			if (strncmp(ibv_get_device_name(ctxs[i]->device), "siw", 3))
				continue;
			spacers[i] = ibv_create_cq(ctxs[i], 32768, NULL, NULL, 0);
			if (!spacers[i]) {
				printf("error test=mem_conn n=0 reason=spacer CQ on %s: %s\n",
				       ibv_get_device_name(ctxs[i]->device), strerror(errno));
				return 1;
			}
		}
		if (ctxs)
			rdma_free_devices(ctxs);
	}
	ca.l = &l;
	ca.cli = cli;
	ca.srv = srv;
	ca.a0 = a0;
	ca.a1 = a1;
	conn_caps(&ca.caps);
	os.create = pairs_open;
	os.destroy = pairs_close;
	os.arg = &ca;
	/* warm-up */
	pairs_open(&ca, 1);
	pairs_close(&ca, 1);
	for (i = 0; i < nn; i++)
		fails += measure("mem_conn", 0, ns[i], ns[i] == maxn, &os);
	for (i = 0; spacers && i < nctx; i++)
		if (spacers[i])
			ibv_destroy_cq(spacers[i]);
	free(spacers);
	ru_listener_close(&l);
	free(cli);
	free(srv);
	return fails ? 1 : 0;
}

/* ---- connection rate ---------------------------------------------------------- */

static int tcp_addr(const char *a, int port, struct sockaddr_in *sa)
{
	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	sa->sin_port = htons(port);
	if (inet_pton(AF_INET, a, &sa->sin_addr) != 1)
		return ru_fail(EINVAL, "not an IPv4 address: %s", a);
	return 0;
}

/* read until EOF (or an error); 0 at EOF */
static int drain(int fd)
{
	char b[256];
	ssize_t r;

	while ((r = read(fd, b, sizeof(b))) > 0)
		;
	return r == 0 ? 0 : -errno;
}

static int tcp_serve(const char *addr, int port, int m)
{
	struct sockaddr_in sa;
	int ls, one = 1, i, ok = 0, failed = 0;
	struct timeval tv = { CONN_TIMEOUT_MS / 1000, 0 };

	if (tcp_addr(addr, port, &sa))
		return 1;
	ls = socket(AF_INET, SOCK_STREAM, 0);
	if (ls < 0 || setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 128)) {
		printf("error test=conn_rate n=%d reason=listen %s:%d: %s\n", m, addr, port,
		       strerror(errno));
		return 1;
	}
	/* an accept that waits longer than this: the client is gone */
	setsockopt(ls, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (i = 0; i < m; i++) {
		int fd = accept(ls, NULL, NULL);

		if (fd < 0) {
			printf("server: accept #%d: %s\n", i + 1, strerror(errno));
			break;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		if (drain(fd))
			failed++;
		else
			ok++;
		close(fd);
	}
	close(ls);
	printf("server accepted=%d failed=%d\n", ok, failed);
	return ok + failed == m ? 0 : 1;
}

static int rdma_serve(const char *addr, int port, int m)
{
	struct ru_listener l;
	struct ru_caps caps;
	struct ru_ep s;
	int i, ok = 0, failed = 0, rc;

	conn_caps(&caps);
	if (ru_listen(&l, addr, port, 128)) {
		printf("error test=conn_rate n=%d reason=%s\n", m, ru_errmsg());
		return 1;
	}
	for (i = 0; i < m; i++) {
		rc = ru_accept_start(&l, &s, &caps, CONN_TIMEOUT_MS);
		if (rc && !s.id) {	/* no request came: the client is gone */
			printf("server: no connect request #%d: %s\n", i + 1, ru_errmsg());
			break;
		}
		if (!rc)
			rc = ru_ep_wait_established(&s, CONN_TIMEOUT_MS);
		if (!rc)
			rc = ru_ep_wait_disconnected(&s, CONN_TIMEOUT_MS);
		if (rc) {
			printf("server: connection #%d: %s\n", i + 1, ru_errmsg());
			failed++;
		} else {
			ok++;
		}
		ru_ep_close(&s);
	}
	ru_listener_close(&l);
	printf("server accepted=%d failed=%d\n", ok, failed);
	return ok + failed == m ? 0 : 1;
}

/* one TCP cycle; the connect time in *tc */
static int tcp_cycle(const struct sockaddr_in *dst, const char *src, double *tc)
{
	struct sockaddr_in sa;
	struct timeval tv = { CONN_TIMEOUT_MS / 1000, 0 };
	double t0 = now_s();
	int fd, rc = 0;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (fd < 0)
		return ru_fail(errno, "socket: %s", strerror(errno));
	if (src && (tcp_addr(src, 0, &sa) || bind(fd, (struct sockaddr *)&sa, sizeof(sa))))
		rc = ru_fail(errno, "bind %s: %s", src, strerror(errno));
	if (!rc && connect(fd, (const struct sockaddr *)dst, sizeof(*dst)))
		rc = ru_fail(errno, "connect: %s", strerror(errno));
	*tc = now_s() - t0;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (!rc && shutdown(fd, SHUT_WR))
		rc = ru_fail(errno, "shutdown: %s", strerror(errno));
	if (!rc && (rc = drain(fd)))
		ru_fail(rc, "waiting for the server's close: %s", strerror(-rc));
	close(fd);
	return rc;
}

static int rdma_cycle(const char *dst, int port, const char *src, double *tc)
{
	struct ru_caps caps;
	struct ru_ep c;
	double t0 = now_s();
	int rc;

	conn_caps(&caps);
	rc = ru_client_start(&c, src, dst, port, &caps, CONN_TIMEOUT_MS);
	if (!rc)
		rc = ru_client_finish(&c, CONN_TIMEOUT_MS);
	*tc = now_s() - t0;
	if (!rc)
		rc = ru_ep_disconnect(&c);
	if (!rc)
		rc = ru_ep_wait_disconnected(&c, CONN_TIMEOUT_MS);
	ru_ep_close(&c);
	return rc;
}

static int do_connect(const char *dst, int port, const char *src, int m, int tcp)
{
	double *tc = calloc(m, sizeof(*tc)), *ty = calloc(m, sizeof(*ty));
	double t0, t1, secs;
	struct sockaddr_in sa;
	char first[256] = "";
	int i, ok = 0, failed = 0, consec = 0, rc;

	if (!tc || !ty)
		return 1;
	if (tcp && tcp_addr(dst, port, &sa))
		return 2;
	t0 = now_s();
	for (i = 0; i < m; i++) {
		double c0 = now_s(), t = 0;

		rc = tcp ? tcp_cycle(&sa, src, &t) : rdma_cycle(dst, port, src, &t);
		if (rc) {
			failed++;
			if (!first[0])
				snprintf(first, sizeof(first), "#%d: %s", i + 1, ru_errmsg());
			fprintf(stderr, "connection #%d failed: %s\n", i + 1, ru_errmsg());
			if (++consec == 10)
				break;
			continue;
		}
		consec = 0;
		tc[ok] = t;
		ty[ok] = now_s() - c0;
		ok++;
	}
	t1 = now_s();
	secs = t1 - t0;
	if (!ok) {
		printf("error test=conn_rate n=%d reason=no connection made; first failure %s\n",
		       m, first);
		return 1;
	}
	qsort(tc, ok, sizeof(*tc), cmp_d);
	qsort(ty, ok, sizeof(*ty), cmp_d);
	printf("result test=conn_rate size=0 n=%d ok=%d failed=%d secs=%.3f conn_per_s=%.1f "
	       "connect_median_ms=%.2f connect_p90_ms=%.2f cycle_median_ms=%.2f\n",
	       m, ok, failed, secs, ok / secs, tc[ok / 2] * 1e3, tc[(ok * 9) / 10] * 1e3,
	       ty[ok / 2] * 1e3);
	if (failed)
		printf("failures %d of %d%s; first %s\n", failed, i < m ? i + 1 : m,
		       i < m ? " (stopped after 10 in a row)" : "", first);
	free(tc);
	free(ty);
	return i < m ? 1 : 0;
}

int main(int argc, char **argv)
{
	const char *mode, *dev = NULL, *a0 = NULL, *a1 = NULL, *kinds = "qp,mr4k,mr1m";
	int ns[MAX_NS], nn = 0, port = 0, m = 0, tcp = 0, o;

	if (argc < 2)
		usage();
	mode = argv[1];
	optind = 2;
	while ((o = getopt(argc, argv, "d:n:k:s:r:w:a:b:c:p:tSP:C:")) != -1) {
		switch (o) {
		case 'd': dev = optarg; break;
		case 'n':
			nn = parse_ns(optarg, ns);
			if (nn < 1)
				usage();
			m = ns[0];
			break;
		case 'k': kinds = optarg; break;
		case 's': opt_sq = atoi(optarg); break;
		case 'r': opt_rq = atoi(optarg); break;
		case 'w': opt_wait_ms = atoi(optarg); break;
		case 'a': a0 = optarg; break;
		case 'c': a0 = optarg; break;
		case 'b': a1 = optarg; break;
		case 'p': port = atoi(optarg); break;
		case 't': tcp = 1; break;
		case 'S': opt_spacer = 1; break;
		case 'P': opt_probe = atoi(optarg); break;
		case 'C': opt_cycles = atoi(optarg); break;
		default: usage();
		}
	}
	if (opt_sq < 1 || opt_rq < 1 || opt_wait_ms < 0 || opt_cycles < 1 ||
	    opt_cycles > MAX_CYCLES)
		usage();
	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (!strcmp(mode, "mem")) {
		static const int def[] = { 1, 16, 64, 256 };

		if (!dev)
			usage();
		if (!nn) {
			memcpy(ns, def, sizeof(def));
			nn = 4;
		}
		return do_mem(dev, ns, nn, kinds);
	}
	if (!strcmp(mode, "memconn")) {
		static const int def[] = { 1, 16, 64 };

		if (!a0 || !a1)
			usage();
		if (!nn) {
			memcpy(ns, def, sizeof(def));
			nn = 3;
		}
		return do_memconn(a0, a1, ns, nn);
	}
	if (!strcmp(mode, "connserve")) {
		if (!a0 || !port || m < 1)
			usage();
		return tcp ? tcp_serve(a0, port, m) : rdma_serve(a0, port, m);
	}
	if (!strcmp(mode, "connect")) {
		if (!a0 || !port || m < 1)
			usage();
		return do_connect(a0, port, a1, m, tcp);
	}
	usage();
	return 2;
}
