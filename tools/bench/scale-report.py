#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""scale-report.py DIR: turn DIR/samples.csv (tools/bench/guest-scale.sh)
into DIR/summary.csv, DIR/report.md and DIR/summary.txt (make bench-scale).

Python standard library only.  The matrix comes from DIR/meta.txt, which
tools/bench/scale.sh writes from tools/bench/scale.conf; the caches that grew
most come from the scale_tool logs in DIR/logs/ (when present). What the
reports share is tools/bench/benchlib.py's.
"""

import csv
import glob
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import KIND_LABEL, Point, fmt, human_size, load, read_meta, read_text  # noqa: E402

OBJ_LABEL = {("mem_qp", 0): "QP (with its CQ)", ("mem_mr", 4096): "MR of 4 KiB",
             ("mem_mr", 1048576): "MR of 1 MiB", ("mem_conn", 0): "connection (both ends)"}
# memory metrics whose values may be zero or negative (deltas)
SIGNED = {"per_kernel_B", "per_kernel_min_B", "per_kernel_max_B", "per_sunreclaim_B",
          "per_vmalloc_B", "per_slabinfo_active_B", "d_kernel_B", "d_excluded_B", "d_included_B",
          "d_sunreclaim_B", "d_percpu_B", "d_slabinfo_total_B", "residual_kernel_B",
          "secs_create", "conn_failed", "qps_created", "end_spread_s",
          # ib_write_bw measures 0 when nothing completed in its window
          "bw_avg_MiBps", "msg_rate_Mpps"}


def kib(v):
    return "-" if v is None else "%.1f" % (v / 1024.0)


def top_caches(d):
    """{(kind, test, size, n): [(cache, objsize, objs, bytes)]} from the
    scale_tool logs (the last repetition's)."""
    out = {}
    for path in sorted(glob.glob(os.path.join(d, "logs", "*-mem*.txt"))):
        base = os.path.basename(path)
        # NNNN-rR-KIND-mem.txt / -memconn.txt
        parts = base.split("-")
        if len(parts) < 4:
            continue
        kind = parts[2]
        try:
            with open(path) as f:
                lines = f.readlines()
        except OSError:
            continue
        seen = set()
        for line in lines:
            if not line.startswith("top "):
                continue
            kv = dict(x.split("=", 1) for x in line.split()[1:] if "=" in x)
            try:
                key = (kind, kv["test"], int(kv["size"]), int(kv["n"]))
                ent = (kv["cache"], int(kv["objsize"]), int(kv["d_objs"]), int(kv["d_bytes"]))
            except (KeyError, ValueError):
                continue
            if key not in seen:
                out[key] = []
                seen.add(key)
            out[key].append(ent)
    return out


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench-scale"
    meta = read_meta(d)
    pts = load(d, ("kind", "test", "size", "n", "procs", "metric"), SIGNED, "no reason given")
    kinds = meta["kinds"].split()
    conn_kinds = meta["conn_kinds"].split()
    qps = [int(x) for x in meta["qps"].split()]
    nprocs = int(meta["procs"])
    bw_size, rate_size = int(meta["bw_size"]), int(meta["rate_size"])
    target = float(meta["bw_target"])
    growth = float(meta["mem_growth"])
    slack = int(meta["mem_slack"])
    conns = int(meta["conns"])
    mem_objs = [("mem_qp", 0, [int(x) for x in meta["mem_qps"].split()])]
    for s in meta["mem_mr_sizes"].split():
        mem_objs.append(("mem_mr", int(s), [int(x) for x in meta["mem_mrs"].split()]))
    mem_objs.append(("mem_conn", 0, [int(x) for x in meta["mem_conns"].split()]))
    bw_rows = []
    for n in qps:
        bw_rows.append((n, 1))
        if n >= nprocs:
            bw_rows.append((n, nprocs))

    def P(kind, test, size, n, procs, metric):
        return pts.get((kind, test, size, n, procs, metric)) or Point()

    # ---- summary.csv: every expected point and metric with its statistics
    rows = []
    for k in kinds:
        for s in (bw_size, rate_size):
            for n, p in bw_rows:
                for m in ("bw_avg_MiBps", "msg_rate_Mpps"):
                    rows.append((k, "write_bw", s, n, p, m))
        for t, s, ns in mem_objs:
            for n in ns:
                for m in ("per_kernel_B", "per_kernel_min_B", "per_kernel_max_B",
                          "per_sunreclaim_B", "per_vmalloc_B", "per_slabinfo_active_B",
                          "residual_kernel_B"):
                    rows.append((k, t, s, n, 1, m))
        probe = [key for key in pts if key[0] == k and key[1] == "qp_probe"]
        rows += sorted(probe)
    for k in conn_kinds:
        for m in ("conn_per_s", "connect_median_ms", "connect_p90_ms", "cycle_median_ms",
                  "conn_failed"):
            rows.append((k, "conn_rate", 0, conns, 1, m))
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "test", "size", "n", "procs", "metric", "status", "count", "median",
                    "min", "max", "note"])
        for key in rows:
            w.writerow(list(key) + (pts.get(key) or Point()).summary())

    out = []
    footnotes = []

    def foot(p):
        """A footnote mark for a failed or n/a point's reason, or for a
        measured 0 (its note says why)."""
        why = None
        if p.status in ("fail", "n/a"):
            why = (p.fails or p.na)[0]
        elif p.values and p.med() == 0 and p.notes:
            why = p.notes[0]
        if why:
            if why not in footnotes:
                footnotes.append(why)
            return " [%d]" % (footnotes.index(why) + 1)
        return ""

    # ---- bandwidth and message rate
    def bw_table(size, metric, unit, scale, what):
        out.append("### %s\n" % what)
        out.append("| QPs | processes | " + " | ".join(KIND_LABEL[k] for k in kinds) + " | " +
                   " | ".join("%s ÷ 1 QP" % KIND_LABEL[k] for k in kinds) + " |")
        out.append("|---|---|" + "---|" * (2 * len(kinds)))
        for n, p in bw_rows:
            cells, ratios = [], []
            for k in kinds:
                pt = P(k, "write_bw", size, n, p, metric)
                cells.append(pt.cell(fmt, scale) + foot(pt))
                base = P(k, "write_bw", size, qps[0], 1, metric).med()
                v = pt.med()
                ratios.append("%.2f" % (v / base) if v is not None and base else "-")
            out.append("| %d | %d | %s | %s |" % (n, p, " | ".join(cells), " | ".join(ratios)))
        out.append("")
        sp = []
        for k in kinds:
            v = [x for n, p in bw_rows if p > 1
                 for x in P(k, "write_bw", size, n, p, "end_spread_s").values]
            if v:
                sp.append("%s %.1f s" % (KIND_LABEL[k], max(v)))
        if sp:
            out.append("The %d processes' clients ended within (largest spread, all rows): %s; "
                       "each measures %d s, so their windows overlap at least that much less.\n"
                       % (nprocs, ", ".join(sp), int(meta["secs"]) - 2 * int(meta["margin"])))

    out.append("## Aggregate RDMA Write bandwidth and message rate (ib_write_bw -R -q N)\n")
    out.append("Each cell: the sum over the processes of ib_write_bw's average (its "
               "measured window, -D %s -f %s: %s s after %s s of warm-up), median over the "
               "repetitions (min–max in brackets). %d processes: %d server/client pairs "
               "started at once on distinct ports, N/%d QPs each. ÷ 1 QP: the median against "
               "that of one QP in one process. Unit %s = 2^20 bytes/s, Mmsg/s = 10^6 "
               "messages/s.\n" % (meta["secs"], meta["margin"],
                                   int(meta["secs"]) - 2 * int(meta["margin"]), meta["margin"],
                                   nprocs, nprocs, nprocs, "MiB/s"))
    bw_table(bw_size, "bw_avg_MiBps", "MiB/s", 1.0,
             "RDMA Write %s, aggregate MiB/s" % human_size(bw_size))
    bw_table(rate_size, "msg_rate_Mpps", "Mmsg/s", 1.0,
             "RDMA Write %s, aggregate message rate, Mmsg/s" % human_size(rate_size))
    # the 64 KiB message rate and 64 B bandwidth are in summary.csv

    # ---- connection rate
    out.append("## Connection setup rate (scale_tool connect / connserve)\n")
    out.append("%d connections one after the other: connect, ESTABLISHED, disconnect, "
               "DISCONNECTED, close (each end creates a PD, two CQs and a QP of %s/%s work "
               "requests per connection); the server accepts each and waits for its "
               "DISCONNECTED. raw TCP: connect; shutdown; read to EOF; close, against accept; "
               "read to EOF; close, on the siw addresses. conn/s: connections made per "
               "second of the whole run; connect: the connect call until ESTABLISHED (TCP: "
               "connect() returning).\n" % (conns, meta["sq"], meta["rq"]))
    out.append("| kind | conn/s | connect median, ms | connect p90, ms | cycle median, ms "
               "| failed |\n|---|---|---|---|---|---|")
    for k in conn_kinds:
        c = P(k, "conn_rate", 0, conns, 1, "conn_per_s")
        cells = [c.cell() + foot(c)]
        for m in ("connect_median_ms", "connect_p90_ms", "cycle_median_ms"):
            cells.append(P(k, "conn_rate", 0, conns, 1, m).cell())
        fl = P(k, "conn_rate", 0, conns, 1, "conn_failed")
        fc = fl.cell() if fl.values else "-"
        if fl.values and max(fl.values) > 0:
            fc += " [%s]" % "; ".join(sorted(set(fl.notes)))[:300]
        out.append("| %s | %s | %s |" % (KIND_LABEL[k], " | ".join(cells), fc))
    out.append("")
    ref = {k: P(k, "conn_rate", 0, conns, 1, "conn_per_s").med() for k in conn_kinds}
    rr = []
    for a, b in (("siwx", "upstream"), ("siwx", "rxe"), ("siwx", "tcp"), ("upstream", "tcp")):
        if ref.get(a) and ref.get(b):
            rr.append("%s/%s %.2f" % (KIND_LABEL[a], KIND_LABEL[b], ref[a] / ref[b]))
    if rr:
        out.append("Connection rate ratios: " + ", ".join(rr) + ".\n")

    # ---- memory
    out.append("## Kernel memory per object (scale_tool mem / memconn)\n")
    out.append("N objects created at once (QPs: a CQ of %s entries and an RC QP of %s send "
               "and %s receive work requests each, one PD, one verbs context; MRs: one PD; "
               "connections: both ends in one process, each end a PD, two CQs and a QP of "
               "%s/%s), the kernel's memory read before and after: SUnreclaim + VmallocUsed "
               "+ Percpu of /proc/meminfo after shrinking every slab cache (with the xarray "
               "nodes, radix_tree_node, which count as reclaimable but are not; without the "
               "slabs of tw_sock_TCP and vmap_area, whose growth is the kernel's lazy "
               "freeing), divided by N; the median of %s create/destroy cycles. KiB per "
               "object: median, in brackets the cycles' range, then slab / vmalloc. siw: with a "
               "spacer CQ that keeps the context's queues off the mmap key 0x90000 (see the "
               "QP probe below). Small N carry the slab's granularity (a fresh slab page "
               "counts whole) and the guest's background; the per-object cost that matters "
               "is the one at large N.\n"
               % (int(meta["sq"]) + int(meta["rq"]), meta["sq"], meta["rq"], meta["sq"],
                  meta["rq"], meta.get("mem_cycles", "?")))
    out.append("| object | N | " + " | ".join(KIND_LABEL[k] for k in kinds) + " |")
    out.append("|---|---|" + "---|" * len(kinds))
    for t, s, ns in mem_objs:
        for n in ns:
            cells = []
            for k in kinds:
                p = P(k, t, s, n, 1, "per_kernel_B")
                if p.values:
                    sl = P(k, t, s, n, 1, "per_sunreclaim_B").med()
                    vm = P(k, t, s, n, 1, "per_vmalloc_B").med()
                    lo = P(k, t, s, n, 1, "per_kernel_min_B").values
                    hi = P(k, t, s, n, 1, "per_kernel_max_B").values
                    rng = " (%s–%s)" % (kib(min(lo)), kib(max(hi))) if lo and hi else ""
                    cells.append("%s%s; %s / %s" % (kib(p.med()), rng, kib(sl), kib(vm)))
                else:
                    cells.append(p.cell() + foot(p))
            out.append("| %s | %d | %s |" % (OBJ_LABEL[(t, s)], n, " | ".join(cells)))
    out.append("")
    out.append("What was left after destroying the objects again (KiB in all, against before "
               "creating them; noise of the same order as above, TIME_WAIT sockets for the "
               "connections):\n")
    out.append("| object | N | " + " | ".join(KIND_LABEL[k] for k in kinds) + " |")
    out.append("|---|---|" + "---|" * len(kinds))
    for t, s, ns in mem_objs:
        n = ns[-1]
        cells = [P(k, t, s, n, 1, "residual_kernel_B").cell(kib) for k in kinds]
        out.append("| %s | %d | %s |" % (OBJ_LABEL[(t, s)], n, " | ".join(cells)))
    out.append("")
    probes = [(k, key) for k in kinds for key in pts if key[0] == k and key[1] == "qp_probe"]
    if probes:
        out.append("QPs one verbs context could create, each with its CQ, the same depths, "
                   "before the first failure (scale_tool mem -P, without the spacer):\n")
        out.append("| kind | tried | created | first failure |\n|---|---|---|---|")
        for k, key in probes:
            p = pts[key]
            got = "%d" % p.med() if p.values else p.cell()
            out.append("| %s | %d | %s | %s |" % (KIND_LABEL[k], key[3], got,
                                                   (sorted(set(p.notes)) or ["-"])[0][:400]))
        out.append("")
    tops = top_caches(d)
    if tops:
        out.append("The slab caches that grew most (active objects × size), at the largest N, "
                   "last repetition:\n")
        out.append("| kind | object | N | caches (objects, KiB) |\n|---|---|---|---|")
        for k in kinds:
            for t, s, ns in mem_objs:
                ent = tops.get((k, t, s, ns[-1]))
                if not ent:
                    continue
                out.append("| %s | %s | %d | %s |" % (
                    KIND_LABEL[k], OBJ_LABEL[(t, s)], ns[-1],
                    ", ".join("%s %d (%s)" % (c, o, kib(b)) for c, _, o, b in ent)))
        out.append("")

    # ---- targets
    out.append("## Scale targets\n")
    out.append("Issue 15: 64 QPs keep at least %.1f of the single-QP aggregate; no per-QP cost "
               "that grows with the number of QPs. The bandwidth verdicts compare the medians "
               "of the most QPs with one QP; the memory ones the kernel bytes per object at "
               "the largest N with those at the second largest (met: at most %.2f times "
               "those plus %d KiB / N for the slab's granularity and the guest's "
               "background).\n" % (target, growth, slack // 1024))
    out.append("| kind | target | value | verdict |\n|---|---|---|---|")
    met = {k: [0, 0] for k in kinds}
    nmax = qps[-1]
    for k in kinds:
        for size, metric, what in ((bw_size, "bw_avg_MiBps", "%s bandwidth" % human_size(bw_size)),
                                   (rate_size, "msg_rate_Mpps",
                                    "%s message rate" % human_size(rate_size))):
            base = P(k, "write_bw", size, qps[0], 1, metric)
            for p in ((1, nprocs) if nmax >= nprocs else (1,)):
                pt = P(k, "write_bw", size, nmax, p, metric)
                label = "%s, %d QPs in %d process%s ÷ 1 QP ≥ %.1f" % (
                    what, nmax, p, "es" if p > 1 else "", target)
                met[k][1] += 1
                if pt.med() is not None and base.med():
                    r = pt.med() / base.med()
                    ok = r >= target
                    met[k][0] += ok
                    out.append("| %s | %s | %.2f | %s |" % (KIND_LABEL[k], label, r,
                                                          "met" if ok else "**not met**"))
                else:
                    bad = pt if pt.status != "ok" else base
                    out.append("| %s | %s | %s%s | **not measured** |" % (
                        KIND_LABEL[k], label, bad.cell(), foot(bad)))
        for t, s, ns in mem_objs:
            if len(ns) < 2:
                continue
            ref_n = ns[-2]
            a = P(k, t, s, ns[-1], 1, "per_kernel_B")
            b = P(k, t, s, ref_n, 1, "per_kernel_B")
            bound = None if b.med() is None else growth * b.med() + slack / ref_n
            label = "%s: KiB per object at N = %d ≤ %.2f × at N = %d + %d KiB / %d" % (
                OBJ_LABEL[(t, s)], ns[-1], growth, ref_n, slack // 1024, ref_n)
            met[k][1] += 1
            if a.med() is not None and bound is not None:
                ok = a.med() <= bound
                met[k][0] += ok
                out.append("| %s | %s | %s ≤ %s (at N = %d: %s) | %s |" % (
                    KIND_LABEL[k], label, kib(a.med()), kib(bound), ref_n, kib(b.med()),
                    "met" if ok else "**not met**"))
            else:
                bad = a if a.status != "ok" else b
                out.append("| %s | %s | %s%s | **not measured** |" % (
                    KIND_LABEL[k], label, bad.cell(kib), foot(bad)))
    out.append("")
    for i, n in enumerate(footnotes):
        out.append("[%d] %s\n" % (i + 1, n.replace("|", "\\|")))
    if "siwx" in met:
        m, t = met["siwx"]
        others = "; ".join("%s %d of %d" % (KIND_LABEL[k], met[k][0], met[k][1])
                           for k in kinds if k != "siwx")
        out.append("**Scale targets: %d of %d met** (siwx; for comparison %s).\n"
                   % (m, t, others))
    tables = "\n".join(out)

    machine = read_text(d, "machine.txt")
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write("# siwx scale benchmark (make bench-scale, BENCH=%s, %s repetition%s)\n\n"
                % (meta["mode"], meta["reps"], "" if meta["reps"] == "1" else "s"))
        f.write(tables)
        f.write("\n## Machine\n\n```\n%s```\n" % machine)
        f.write("\nRaw samples: samples.csv; per-point statistics: summary.csv; tool output: "
                "logs/.\n")
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write("\n== siwx scale benchmark, BENCH=%s (%s repetition%s; TCG guest: compare "
                "ratios, not absolute numbers) ==\n\n"
                % (meta["mode"], meta["reps"], "" if meta["reps"] == "1" else "s"))
        f.write(tables)
    return 0


if __name__ == "__main__":
    sys.exit(main())
