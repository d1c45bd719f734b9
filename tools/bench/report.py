#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0
"""report.py DIR: turn DIR/samples.csv (tools/bench/guest-bench.sh) into
DIR/summary.csv, DIR/report.md, DIR/summary.txt and plots (gnuplot, PNG).

Python standard library only.  The matrix comes from DIR/meta.txt, which
tools/bench/bench.sh writes from tools/bench/bench.conf; what the reports
share is tools/bench/benchlib.py's.
"""

import csv
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from benchlib import KIND_LABEL, Point, fmt, human_size, load, read_meta, read_text  # noqa: E402

TEST_LABEL = {
    "write_lat": "RDMA Write latency (ib_write_lat, one-way)",
    "read_lat": "RDMA Read latency (ib_read_lat, round trip)",
    "send_lat": "Send latency (ib_send_lat, one-way)",
    "atomic_fadd_lat": "Fetch&Add latency (ib_atomic_lat, round trip)",
    "atomic_cas_lat": "Cmp&Swap latency (ib_atomic_lat, round trip)",
    "write_bw": "RDMA Write (ib_write_bw)",
    "read_bw": "RDMA Read (ib_read_bw)",
    "send_bw": "Send (ib_send_bw)",
    "atomic_fadd_bw": "Fetch&Add (ib_atomic_bw)",
    "atomic_cas_bw": "Cmp&Swap (ib_atomic_bw)",
    "write_imm_lat": "RDMA Write with Immediate latency (imm_bench, one-way)",
    "write_poll_lat": "RDMA Write latency, receiver polls the last byte (imm_bench, one-way)",
    "write_send_lat": "RDMA Write + 8-byte Send latency (imm_bench, one-way)",
    "write_imm_bw": "RDMA Write with Immediate (imm_bench)",
    "write_plain_bw": "RDMA Write (imm_bench)",
    "write_send_bw": "RDMA Write + 8-byte Send (imm_bench)",
    "read8_lat": "8-byte RDMA Read (one round trip)",
    "write8_lat": "8-byte RDMA Write (its completion)",
    "write_read_lat": "8-byte RDMA Write, then an 8-byte Read",
    "flush_g_lat": "Flush, global visibility, of 4 KiB",
    "flush_p_lat": "Flush, persistence, of 4 KiB (devdax)",
    "atomic_write_lat": "8-byte Atomic Write",
    "pipe_g_lat": "pipeline: Write 4 KiB, Flush, Atomic Write, Flush (global); last signaled",
    "pipe_p_lat": "the same with persistent Flushes (devdax)",
    "pipe_g_waited_lat": "the same four operations (global), each waited for",
    "pipe_p_waited_lat": "the same four operations (persistent), each waited for",
    "pipe_emul_lat": "the emulation without Flush: Write, Read, fenced Write, Read; last signaled",
}
# imm_bench: the three ways of writing and notifying, measured side by side
IMM_MODES = (("write_imm", "write with immediate"), ("write_poll", "write, poll last byte"),
             ("write_send", "write + send"))
# Latency tests whose perftest figure is a full round trip (compared with the
# TCP round trip); the others report half a round trip (compared with RTT/2).
ROUND_TRIP = {"read_lat", "atomic_fadd_lat", "atomic_cas_lat"}
# A difference counts as beyond noise when the min..max ranges of the two
# kinds do not overlap and the medians differ by more than this.
NOISE = 0.05
# ... and both have at least this many samples (BENCH=quick has 2: no flags).
MIN_FLAG_N = 3


def main_metric(test):
    if test == "tcp_rtt":
        return "oneway_median_us"
    if test == "tcp_bw":
        return "bw_MiBps"
    if test.endswith("_lat"):
        return "lat_typical_us"
    return "bw_avg_MiBps"


def expected(meta):
    """[(test, size)] of the RDMA kinds, in table order."""
    lat, bw = [], []
    for t in meta["lat_tests"].split():
        lat.append((t, int(meta["atomic_size"] if t.startswith("atomic_") else meta["lat_size"])))
    for t in meta["bw_tests"].split():
        if t.startswith("atomic_"):
            bw.append((t, int(meta["atomic_size"])))
        else:
            bw.extend((t, int(s)) for s in meta["bw_sizes"].split())
    return lat, bw


def expected_imm(meta):
    """[(test, size)] of imm_bench's latency and bandwidth points ([] for an
    older report without them)."""
    lat = [(t, int(s)) for t in meta.get("imm_lat_tests", "").split()
           for s in meta.get("imm_lat_sizes", "").split()]
    bw = [(t, int(s)) for t in meta.get("imm_bw_tests", "").split()
          for s in meta["bw_sizes"].split()]
    return lat, bw


def expected_flush(meta):
    """[(test, size)] of flush_bench's points, [(a, b)] of the ratios the
    report shows (both [] for an older report without them)."""
    pts = list(zip(meta.get("flush_tests", "").split(),
                   (int(s) for s in meta.get("flush_sizes", "").split())))
    ratios = [tuple(r.split("/", 1)) for r in meta.get("flush_ratios", "").split()]
    return pts, ratios


def rep_ratio(a, b):
    """Median and range over the repetitions of a/b, each repetition's two
    values coming from the same run (imm_bench: one connection)."""
    if not a or not b:
        return None
    r = sorted(a.by_rep[k] / b.by_rep[k] for k in a.by_rep if k in b.by_rep and b.by_rep[k])
    if not r:
        return None
    return statistics.median(r), r[0], r[-1], len(r)


def ratio_cell(x):
    if not x:
        return "-"
    med, lo, hi, n = x
    return "%.2f" % med if n == 1 else "%.2f (%.2f–%.2f)" % (med, lo, hi)


def ratio(a, b, higher_is_better):
    """(text, flag) for median(a)/median(b); flag marks a difference beyond
    noise: '+' siwx better, '-' siwx worse."""
    sa, sb = a.stats() if a else None, b.stats() if b else None
    if not sa or not sb or not sb["median"]:
        return "-", ""
    r = sa["median"] / sb["median"]
    flag = ""
    apart = sa["min"] > sb["max"] or sa["max"] < sb["min"]
    if apart and abs(r - 1) > NOISE and min(sa["n"], sb["n"]) >= MIN_FLAG_N:
        better = (r > 1) == higher_is_better
        flag = "+" if better else "-"
    return "%.2f" % r, flag


def compare_rows(out, P, kinds, points, row, na_note, flagged, higher_is_better, ref):
    """A table row per (test, size) of POINTS: each kind's cell, the raw TCP
    reference's (ref(test): its Point and what follows its cell) and siwx's
    ratios against upstream siw (one worse beyond noise goes into FLAGGED),
    rxe and the reference."""
    for t, s in points:
        ps = {k: P(k, t, s) for k in kinds}
        cells = [(ps[k].cell() if ps[k] else "missing") + na_note(ps[k]) for k in kinds]
        tcp, suffix = ref(t)
        r_up, f_up = ratio(ps["siwx"], ps["upstream"], higher_is_better)
        r_rxe, _ = ratio(ps["siwx"], ps["rxe"], higher_is_better)
        r_tcp, _ = ratio(ps["siwx"], tcp, higher_is_better)
        if f_up == "-":
            flagged.append((t, s, r_up))
        out.append(row(t, s, cells, (tcp.cell() if tcp else "missing") + suffix,
                       r_up + (" (%s)" % f_up if f_up else ""), r_rxe, r_tcp))


def main():
    d = sys.argv[1] if len(sys.argv) > 1 else "build/bench"
    meta = read_meta(d)
    pts = load(d, ("kind", "test", "size", "metric"))
    lat, bw = expected(meta)
    imm_lat, imm_bw = expected_imm(meta)
    flush_lat, flush_ratios = expected_flush(meta)
    kinds = meta["rdma_kinds"].split()
    lat_size = int(meta["lat_size"])
    tcp_bw_size = int(meta["tcp_bw_size"])

    def P(kind, test, size, metric=None):
        return pts.get((kind, test, size, metric or main_metric(test)))

    # ---- summary.csv: every expected point with its statistics
    rows = []
    for kind in kinds:
        for t, s in lat + bw + imm_lat + imm_bw + flush_lat:
            rows.append((kind, t, s, main_metric(t)))
            if t.endswith("_bw"):
                rows.append((kind, t, s, "msg_rate_Mpps"))
            else:
                rows.append((kind, t, s, "lat_min_us"))
    rows += [("tcp", "tcp_rtt", lat_size, "oneway_median_us"),
             ("tcp", "tcp_rtt", lat_size, "rtt_median_us"),
             ("tcp", "tcp_rtt", lat_size, "rtt_min_us"),
             ("tcp", "tcp_bw", tcp_bw_size, "bw_MiBps")]
    with open(os.path.join(d, "summary.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["kind", "test", "size", "metric", "status", "n", "median", "min", "max",
                    "spread_pct", "note"])
        for key in rows:
            w.writerow(list(key) + (pts.get(key) or Point()).summary(spread=True))

    # ---- report.md
    out = []
    footnotes = []

    def na_note(p):
        if p and p.status == "n/a" and p.na:
            if p.na[0] not in footnotes:
                footnotes.append(p.na[0])
            return " [%d]" % (footnotes.index(p.na[0]) + 1)
        return ""

    flagged = []
    tcp_oneway = P("tcp", "tcp_rtt", lat_size, "oneway_median_us")
    tcp_rtt = P("tcp", "tcp_rtt", lat_size, "rtt_median_us")
    tcp_bw = P("tcp", "tcp_bw", tcp_bw_size, "bw_MiBps")

    def row(t, s, cells, *rest):
        return "| " + " | ".join([t, human_size(s)] + cells + list(rest)) + " |"

    hdr = ("| test | size | siwx | upstream siw | rxe | raw TCP | siwx/upstream | siwx/rxe "
           "| siwx/raw TCP |\n|---|---|---|---|---|---|---|---|---|")
    out.append("### Latency, µs (median of the repetitions, min–max in brackets; lower is better)\n")
    out.append(hdr)
    compare_rows(out, P, kinds, lat, row, na_note, flagged, False,
                 lambda t: (tcp_rtt, " RTT") if t in ROUND_TRIP else (tcp_oneway, " RTT/2"))
    out.append("")
    out.append("### Latency, best case, µs (minimum over all iterations of all repetitions)\n")
    out.append("Scheduling noise on a shared TCG host only ever adds time, so the minimum "
               "shows the cost of the protocol path itself.\n")
    out.append("| test | size | siwx | upstream siw | rxe | raw TCP | siwx/upstream | siwx/rxe "
               "| siwx/raw TCP |\n|---|---|---|---|---|---|---|---|---|")
    tcp_min = P("tcp", "tcp_rtt", lat_size, "rtt_min_us")
    tmin = tcp_min.stats() if tcp_min else None
    for t, s in lat:
        mins = {}
        cells = []
        for k in kinds:
            p = P(k, t, s, "lat_min_us")
            st = p.stats() if p else None
            mins[k] = st["min"] if st else None
            q = P(k, t, s)
            cells.append(fmt(mins[k]) if st else ("n/a" if q and q.status == "n/a" else "-"))
        ref = None
        if tmin:
            ref = tmin["min"] if t in ROUND_TRIP else tmin["min"] / 2

        def rt(a, b):
            return "%.2f" % (a / b) if a and b else "-"
        out.append(row(t, s, cells, (fmt(ref) if ref else "-") +
                       (" RTT" if t in ROUND_TRIP else " RTT/2"),
                       rt(mins["siwx"], mins["upstream"]), rt(mins["siwx"], mins["rxe"]),
                       rt(mins["siwx"], ref)))
    out.append("")
    out.append("### Bandwidth, MiB/s (median, min–max; higher is better)\n")
    out.append(hdr)
    compare_rows(out, P, kinds, bw, row, na_note, flagged, True, lambda t: (tcp_bw, ""))
    out.append("")
    out.append("### Message rate, thousands of messages/s (median)\n")
    out.append("| test | size | siwx | upstream siw | rxe |\n|---|---|---|---|---|")
    for t, s in bw:
        cells = []
        for k in kinds:
            p = P(k, t, s, "msg_rate_Mpps")
            st = p.stats() if p else None
            if st:
                cells.append(fmt(st["median"] * 1000))
            else:
                q = P(k, t, s)
                cells.append("n/a" if q and q.status == "n/a" else "-")
        out.append("| %s | %s | %s |" % (t, human_size(s), " | ".join(cells)))
    out.append("")
    if imm_lat or imm_bw:
        imm_tables(out, P, kinds, imm_lat, imm_bw, hdr, row, na_note, flagged,
                   tcp_oneway, tcp_bw, meta)
    if flush_lat:
        flush_tables(out, P, kinds, flush_lat, flush_ratios, row, na_note, flagged, meta,
                     guest_line(d, "flush_bench server memory: "))
    out.append("### Raw TCP on the siw path (veth0 ↔ veth1 across network namespaces)\n")
    out.append("| measurement | median (min–max) |\n|---|---|")
    out.append("| iperf3 throughput, MiB/s (%s writes) | %s |" % (
        human_size(tcp_bw_size), tcp_bw.cell() if tcp_bw else "missing"))
    out.append("| TCP ping-pong round trip, µs (%s) | %s |" % (
        human_size(lat_size), tcp_rtt.cell() if tcp_rtt else "missing"))
    out.append("| TCP ping-pong RTT/2, µs | %s |" % (tcp_oneway.cell() if tcp_oneway else "missing"))
    out.append("")
    notes = [
        "Ratios are median/median. For latency a ratio below 1 means siwx is faster, "
        "for bandwidth above 1. (+)/(-): siwx better/worse than upstream siw beyond noise "
        "(min–max ranges do not overlap, the medians differ by more than %d%% and both have "
        "at least %d samples)." % (NOISE * 100, MIN_FLAG_N),
        "siwx/raw TCP compares one-way latencies (write, send) with half the TCP round trip and "
        "round-trip ones (read, atomics) with the full TCP round trip; bandwidth is compared "
        "with iperf3's throughput, the ceiling of a TCP-based transport on this path.",
    ]
    for i, n in enumerate(footnotes):
        notes.append("[%d] n/a: %s." % (i + 1, n))
    out.extend("- " + n for n in notes)
    out.append("")
    if int(meta["reps"]) < MIN_FLAG_N:
        out.append("With %s repetitions no difference is called beyond noise (that needs %d); "
                   "run BENCH=full for that." % (meta["reps"], MIN_FLAG_N))
    elif flagged:
        out.append("**siwx trails upstream siw beyond noise on:** " + ", ".join(
            "%s %s (ratio %s)" % (t, human_size(s), r) for t, s, r in flagged) + ".")
    else:
        out.append("siwx does not trail upstream siw beyond noise on any operation both support.")
    out.append("")
    data_path_targets(out, P, kinds, lat, bw, tcp_bw, tcp_rtt, tcp_oneway, flagged, meta)
    tables = "\n".join(out)

    machine = read_text(d, "machine.txt")
    plots, plot_note = make_plots(d, pts, meta, lat, bw, kinds, flush_lat)
    with open(os.path.join(d, "report.md"), "w") as f:
        f.write("# siwx benchmark report (BENCH=%s, %s repetitions)\n\n" % (meta["mode"], meta["reps"]))
        f.write(tables)
        f.write("\n## Plots\n\n")
        if plots:
            for name, what in plots:
                f.write("- `%s`: %s\n" % (name, what))
        else:
            f.write("No plots: %s\n" % plot_note)
        f.write("\n## Machine\n\n```\n%s```\n" % machine)
        f.write("\nRaw samples: samples.csv; per-point statistics: summary.csv; tool output: logs/.\n")
    with open(os.path.join(d, "summary.txt"), "w") as f:
        f.write("\n== siwx benchmark, BENCH=%s (%s repetitions; TCG guest: compare ratios, "
                "not absolute numbers) ==\n\n" % (meta["mode"], meta["reps"]))
        f.write(tables)
        if not plots:
            f.write("\n(no plots: %s)\n" % plot_note)
    with open(os.path.join(d, "plots.txt"), "w") as f:
        f.write("".join("%s\n" % n for n, _ in plots) if plots else "none: %s\n" % plot_note)
    return 0


# The data path's targets (issue 15): (test, size, reference, comparison,
# bound). Reference "tcp_bw" is iperf3's throughput, for every measured size
# from the one given up; "rtt" and "rtt2" the TCP ping-pong's round trip and
# half of it, "rxe" rxe's message rate, both at exactly the size given.
DATA_PATH_TARGETS = (
    ("write_bw", 65536, "tcp_bw", ">=", 0.8),
    ("send_bw", 65536, "tcp_bw", ">=", 0.8),
    ("read_bw", 65536, "tcp_bw", ">=", 0.6),
    ("write_bw", 64, "rxe", ">=", 2.0),
    ("send_bw", 64, "rxe", ">=", 2.0),
    ("read_bw", 64, "rxe", ">=", 2.0),
    ("atomic_fadd_bw", 8, "rxe", ">=", 2.0),
    ("atomic_cas_bw", 8, "rxe", ">=", 2.0),
    ("write_lat", 64, "rtt2", "<=", 1.1),
    ("send_lat", 64, "rtt2", "<=", 1.1),
    ("read_lat", 64, "rtt", "<=", 1.3),
    ("atomic_fadd_lat", 8, "rtt", "<=", 1.3),
    ("atomic_cas_lat", 8, "rtt", "<=", 1.3),
)
REF_LABEL = {"tcp_bw": "iperf3 throughput", "rxe": "rxe message rate",
             "rtt": "TCP round trip", "rtt2": "TCP RTT/2"}


def data_path_targets(out, P, kinds, lat, bw, tcp_bw, tcp_rtt, tcp_oneway, flagged, meta):
    """The headline ratios against the data path's targets: one row per
    target and measured size, the median ratio with its range, met or not."""
    points = set(lat) | set(bw)
    out.append("### The data path's targets\n")
    out.append("The ratio of the two medians (in brackets the min–max of the "
               "per-repetition ratios); *met* when it reaches the target.\n")
    st = tcp_oneway.stats() if tcp_oneway else None
    if st and st["median"] > 1000:
        out.append("**The latency rows say nothing in this run:** the TCP ping-pong itself took "
                   "%.0f µs one way (tens of µs on an idle host): the guest's vCPUs waited for "
                   "the host, every kind alike.\n" % st["median"])
    out.append("| test | size | siwx against | ratio | target | verdict |\n"
               "|---|---|---|---|---|---|")
    met = total = 0
    for t, smin, ref, cmp, bound in DATA_PATH_TARGETS:
        for tt, s in sorted(p for p in points if p[0] == t and
                            (p[1] >= smin if ref == "tcp_bw" else p[1] == smin)):
            a = P("siwx", t, s, "msg_rate_Mpps" if ref == "rxe" else None)
            if ref == "rxe":
                b = P("rxe", t, s, "msg_rate_Mpps")
            elif ref == "tcp_bw":
                b = tcp_bw
            elif ref == "rtt":
                b = tcp_rtt
            else:
                b = tcp_oneway
            sa, sb = a.stats() if a else None, b.stats() if b else None
            if not sa or not sb or not sb["median"]:
                na = a and a.status == "n/a" or (ref == "rxe" and b and b.status == "n/a")
                out.append("| %s | %s | %s | %s | %s %.1f | - |" % (
                    t, human_size(s), REF_LABEL[ref], "n/a" if na else "missing", cmp, bound))
                continue
            r = sa["median"] / sb["median"]
            rr = rep_ratio(a, b)
            cell = "%.2f" % r
            if rr and rr[3] > 1:
                cell += " (%.2f–%.2f)" % (rr[1], rr[2])
            ok = r >= bound if cmp == ">=" else r <= bound
            total += 1
            met += ok
            out.append("| %s | %s | %s | %s | %s %.1f | %s |" % (
                t, human_size(s), REF_LABEL[ref], cell, cmp, bound, "met" if ok else "not met"))
    behind = ("siwx trails upstream siw beyond noise on %d point(s)" % len(flagged) if flagged
              else "siwx trails upstream siw beyond noise nowhere" if int(meta["reps"]) >= MIN_FLAG_N
              else "siwx against upstream siw: too few repetitions to call a difference")
    out.append("")
    out.append("**Data path targets: %d of %d met; %s.**\n" % (met, total, behind))


def imm_tables(out, P, kinds, imm_lat, imm_bw, hdr, row, na_note, flagged, tcp_oneway,
               tcp_bw, meta):
    """The imm_bench section of report.md: latency, bandwidth, ratios."""
    out.append("### RDMA Write with Immediate against RDMA Write and Write + Send "
               "(tools/bench/imm_bench)\n")
    out.append("One imm_bench run per kind and repetition measures all three on one "
               "connection, taking turns (%s rounds): *write_imm* (the receiver polls its "
               "receive CQ for the immediate), *write_poll* (the receiver polls the last "
               "byte of its buffer, as ib_write_lat does), *write_send* (an RDMA Write and an "
               "8-byte Send in one post; the receiver polls for the Send). Latency is a "
               "ping-pong, reported one-way (RTT/2); bandwidth counts the time until the "
               "receiver has seen the last message.\n" % meta.get("imm_rounds", "?"))
    out.append("#### Latency, µs (median, min–max; lower is better)\n")
    out.append(hdr)
    compare_rows(out, P, kinds, imm_lat, row, na_note, flagged, False,
                 lambda t: (tcp_oneway, " RTT/2"))
    out.append("")
    out.append("#### Bandwidth, MiB/s (median, min–max; higher is better)\n")
    out.append(hdr)
    compare_rows(out, P, kinds, imm_bw, row, na_note, flagged, True, lambda t: (tcp_bw, ""))
    out.append("")
    out.append("#### Write with immediate against the alternatives, per kind\n")
    out.append("Ratios per repetition (both values from the same connection), median and "
               "min–max over the repetitions. Latency: imm/x > 1 means write with immediate "
               "is slower; bandwidth: imm/x < 1 means it is slower. *best* compares the "
               "minimum round trips.\n")
    out.append("| kind | what | size | write_imm | write (poll) | write + send | imm/write "
               "| imm/(write+send) | best imm/write | best imm/(write+send) |\n"
               "|---|---|---|---|---|---|---|---|---|---|")
    lat_sizes = sorted({s for _, s in imm_lat})
    bw_sizes = sorted({s for _, s in imm_bw})
    for k in kinds:
        for what, sizes, suf in (("latency", lat_sizes, "_lat"), ("bandwidth", bw_sizes, "_bw")):
            for s in sizes:
                names = ("write_imm" + suf, ("write_poll" if suf == "_lat" else "write_plain") + suf,
                         "write_send" + suf)
                ps = [P(k, n, s) for n in names]
                cells = [(p.cell() if p else "missing") for p in ps]
                r1, r2 = rep_ratio(ps[0], ps[1]), rep_ratio(ps[0], ps[2])
                b1 = b2 = "-"
                if suf == "_lat":
                    mins = [P(k, n, s, "lat_min_us") for n in names]
                    mins = [(m.stats() or {}).get("min") if m else None for m in mins]
                    if mins[0] and mins[1]:
                        b1 = "%.2f" % (mins[0] / mins[1])
                    if mins[0] and mins[2]:
                        b2 = "%.2f" % (mins[0] / mins[2])
                out.append("| %s | %s | %s | %s | %s | %s |" % (
                    k, what, human_size(s), " | ".join(cells), ratio_cell(r1),
                    " | ".join((ratio_cell(r2), b1, b2))))
    out.append("")


def guest_line(d, prefix):
    """What guest-bench.sh said after PREFIX in guest.txt (None if not)."""
    try:
        with open(os.path.join(d, "guest.txt")) as f:
            for line in f:
                if prefix in line:
                    return line.split(prefix, 1)[1].strip()
    except OSError:
        pass
    return None


def flush_tables(out, P, kinds, flush_lat, flush_ratios, row, na_note, flagged, meta, memory):
    """The flush_bench section of report.md: latency per kind, the ratios."""
    sizes = dict(flush_lat)
    out.append("### RDMA Flush and Atomic Write (tools/bench/flush_bench)\n")
    out.append("One flush_bench run per kind and repetition measures every test on one "
               "connection, taking turns (%s rounds, the order reversed every other round). "
               "A sample is the time from posting the first work request to the completion "
               "of the last: a whole round trip, not halved (unlike ib_write_lat). The "
               "server's region: %s. Flush, Atomic Write and the native pipelines are n/a "
               "on a device without them (upstream siw); the persistent ones (flush_p, "
               "pipe_p) also without a devdax device at the server.\n"
               % (meta.get("flush_rounds", "?"), memory or "not recorded"))
    out.append("| test | what |\n|---|---|")
    for t, _ in flush_lat:
        out.append("| %s | %s |" % (t, TEST_LABEL.get(t, t)))
    out.append("")
    out.append("#### Latency, µs (median, min–max; lower is better)\n")
    out.append("| test | size | " + " | ".join(KIND_LABEL[k] for k in kinds) +
               " | siwx/upstream | siwx/rxe | best siwx/rxe |\n|" + "---|" * (len(kinds) + 5))
    for t, s in flush_lat:
        ps = {k: P(k, t, s) for k in kinds}
        cells = [(ps[k].cell() if ps[k] else "missing") + na_note(ps[k]) for k in kinds]
        r_up, f_up = ratio(ps["siwx"], ps["upstream"], False)
        r_rxe, _ = ratio(ps["siwx"], ps["rxe"], False)
        mins = [P(k, t, s, "lat_min_us") for k in ("siwx", "rxe")]
        mins = [(m.stats() or {}).get("min") if m else None for m in mins]
        best = "%.2f" % (mins[0] / mins[1]) if mins[0] and mins[1] else "-"
        if f_up == "-":
            flagged.append((t, s, r_up))
        out.append(row(t, s, cells, r_up + (" (%s)" % f_up if f_up else ""), r_rxe, best))
    out.append("")
    target = float(meta.get("flush_pipe_target", "1.3"))
    out.append("#### Flush and Atomic Write against what they replace, per kind\n")
    out.append("Ratios of medians per repetition (both from the same connection), median and "
               "min–max over the repetitions; below 1 means the first is faster. The seed's "
               "claim is one round trip: the pipeline (pipe_g, pipe_p) at most %.1f × one "
               "8-byte Read. Comparing a column with rxe's shows siwx against rxe running "
               "the same program.\n" % target)
    out.append("| ratio | target | " + " | ".join(KIND_LABEL[k] for k in kinds) + " |\n|" +
               "---|" * (len(kinds) + 2))
    verdicts = []
    for a, b in flush_ratios:
        pipe = a.startswith("pipe_") and b == "read8_lat"
        cells = []
        for k in kinds:
            pa, pb = P(k, a, sizes.get(a, 0)), P(k, b, sizes.get(b, 0))
            x = rep_ratio(pa, pb)
            if x:
                cells.append(ratio_cell(x))
                if pipe:
                    verdicts.append("%s %s/%s %.2f: %s" % (
                        KIND_LABEL[k], a, b, x[0], "met" if x[0] <= target else "not met"))
            elif any(p and p.status == "n/a" for p in (pa, pb)):
                cells.append("n/a")
            else:
                cells.append("-")
        out.append("| %s/%s | %s | %s |" % (a, b, "≤ %.1f" % target if pipe else "-",
                                            " | ".join(cells)))
    out.append("")
    out.append("Pipeline target (≤ %.1f × Read): %s.\n" % (
        target, "; ".join(verdicts) if verdicts else "no native pipeline measured"))


def dat_cols(x, scale=1):
    """A plot data file's median, min and max columns of stats() X, each
    times SCALE ("NaN" without X)."""
    return ["%g" % (x[k] * scale) for k in ("median", "min", "max")] if x else ["NaN"] * 3


def make_plots(d, pts, meta, lat, bw, kinds, flush_lat):
    """Data files + a gnuplot script; returns ([(png, description)], why-not)."""
    gp = shutil.which("gnuplot")
    if not gp:
        return [], "gnuplot not installed (apt-get install gnuplot-nox)"
    colors = {"siwx": "#d62728", "upstream": "#1f77b4", "rxe": "#2ca02c", "tcp": "#7f7f7f"}
    bw_tests = [t for t in meta["bw_tests"].split() if not t.startswith("atomic_")]
    sizes = [int(s) for s in meta["bw_sizes"].split()]

    def st(kind, test, size, metric=None):
        p = pts.get((kind, test, size, metric or main_metric(test)))
        return p.stats() if p else None

    # bw-<test>.dat / rate-<test>.dat: size, then median min max per kind
    for t in bw_tests:
        for fname, metric, scale in (("bw", None, 1), ("rate", "msg_rate_Mpps", 1000)):
            with open(os.path.join(d, "%s-%s.dat" % (fname, t)), "w") as f:
                f.write("# size " + " ".join("%s_med %s_min %s_max" % (k, k, k) for k in kinds) + "\n")
                for s in sizes:
                    vals = []
                    for k in kinds:
                        vals += dat_cols(st(k, t, s, metric), scale)
                    f.write("%d %s\n" % (s, " ".join(vals)))
    tcpbw = st("tcp", "tcp_bw", int(meta["tcp_bw_size"]))
    # lat.dat: one row per test; per kind median min max
    lat_size = int(meta["lat_size"])
    with open(os.path.join(d, "lat.dat"), "w") as f:
        f.write("# test " + " ".join("%s_med %s_min %s_max" % (k, k, k) for k in kinds + ["tcp"]) + "\n")
        for t, s in lat:
            vals = []
            for k in kinds:
                vals += dat_cols(st(k, t, s))
            vals += dat_cols(st("tcp", "tcp_rtt", lat_size,
                                "rtt_median_us" if t in ROUND_TRIP else "oneway_median_us"))
            f.write("%s %s\n" % (t.replace("_lat", "").replace("atomic_", ""), " ".join(vals)))
    # ratio.dat: siwx vs upstream as a speed ratio (>1: siwx faster)
    with open(os.path.join(d, "ratio.dat"), "w") as f:
        f.write("# label speed_ratio lo hi\n")
        for t, s in lat + bw:
            a, b = st("siwx", t, s), st("upstream", t, s)
            if not a or not b or not a["median"] or not b["median"]:
                continue
            if t.endswith("_lat"):
                r, lo, hi = b["median"] / a["median"], b["min"] / a["max"], b["max"] / a["min"]
            else:
                r, lo, hi = a["median"] / b["median"], a["min"] / b["max"], a["max"] / b["min"]
            f.write('"%s %s" %g %g %g\n' % (t, human_size(s).replace(" ", ""), r, lo, hi))

    k_idx = {k: i for i, k in enumerate(kinds)}
    xtics = ", ".join('"%s" %d' % (human_size(s), s) for s in sizes)
    g = ["set terminal pngcairo noenhanced size 1500,520 font 'sans,10'",
         "set grid", "set key top left", "set logscale x 2", "set logscale y",
         "set xlabel 'message size'", "set xtics (%s)" % xtics,
         "set xrange [%g:%g]" % (sizes[0] / 1.5, sizes[-1] * 1.5)]
    plots = []
    for fname, ylabel, desc in (("bw", "MiB/s (median, bars: min-max)",
                                 "bandwidth against message size, one panel per operation; "
                                 "dashed: iperf3 on the same path"),
                                ("rate", "thousand messages/s (median, bars: min-max)",
                                 "message rate against message size")):
        png = "%s.png" % fname
        g.append("set output '%s/%s'" % (d, png))
        g.append("set multiplot layout 1,%d title '%s (BENCH=%s, TCG guest)'" % (
            len(bw_tests), "Bandwidth" if fname == "bw" else "Message rate", meta["mode"]))
        g.append("set ylabel '%s'" % ylabel)
        for t in bw_tests:
            g.append("set title '%s'" % TEST_LABEL[t])
            parts = []
            for k in kinds:
                c = 2 + 3 * k_idx[k]
                parts.append("'%s/%s-%s.dat' using 1:%d:%d:%d with yerrorlines lw 2 lc rgb '%s' title '%s'"
                             % (d, fname, t, c, c + 1, c + 2, colors[k], KIND_LABEL[k]))
            if fname == "bw" and tcpbw:
                parts.append("%g with lines dt 2 lw 2 lc rgb '%s' title 'raw TCP (iperf3)'"
                             % (tcpbw["median"], colors["tcp"]))
            g.append("plot " + ", ".join(parts))
        g.append("unset multiplot")
        plots.append((png, desc))
    g += ["unset logscale x", "set xtics autofreq", "set xrange [*:*]", "set xlabel ''",
          "set terminal pngcairo noenhanced size 1000,520 font 'sans,10'",
          "set output '%s/latency.png'" % d,
          "set title 'Latency, %s messages (atomics 8 B), median; bars: min-max (BENCH=%s)'"
          % (human_size(lat_size), meta["mode"]),
          "set ylabel 'microseconds (log scale)'",
          "set style data histograms", "set style histogram errorbars gap 2 lw 1",
          "set style fill solid 0.8 border -1", "set key below horizontal", "set yrange [1:*]"]
    parts = []
    allk = kinds + ["tcp"]
    for i, k in enumerate(allk):
        c = 2 + 3 * i
        title = KIND_LABEL[k] + (" (ping-pong, RTT or RTT/2)" if k == "tcp" else "")
        parts.append("'%s/lat.dat' using %d:%d:%d%s lc rgb '%s' title '%s'"
                     % (d, c, c + 1, c + 2, ":xtic(1)" if i == 0 else "", colors[k], title))
    g.append("plot " + ", ".join(parts))
    plots.append(("latency.png", "latency per operation and device kind, with the TCP ping-pong"))
    g += ["unset logscale y", "set yrange [*:*]", "set key off",
          "set terminal pngcairo noenhanced size 1200,560 font 'sans,10'",
          "set output '%s/ratio.png'" % d,
          "set title 'siwx against upstream siw: speed ratio (>1: siwx faster; bars: worst/best "
          "combination of the repetitions)'",
          "set ylabel 'speed ratio'", "set xtics rotate by -45",
          "set style histogram errorbars gap 1 lw 1",
          "plot '%s/ratio.dat' using 2:3:4:xtic(1) lc rgb '%s', 1 with lines dt 2 lc rgb 'black'"
          % (d, colors["siwx"])]
    plots.append(("ratio.png", "siwx/upstream speed ratio for every operation and size both support"))
    imm_tests = meta.get("imm_bw_tests", "").split()
    if imm_tests:
        # imm-<kind>.dat: size, then median min max per imm_bench bandwidth test
        for k in kinds:
            with open(os.path.join(d, "imm-%s.dat" % k), "w") as f:
                f.write("# size " + " ".join("%s_med %s_min %s_max" % (t, t, t) for t in imm_tests) + "\n")
                for sz in sizes:
                    vals = []
                    for t in imm_tests:
                        vals += dat_cols(st(k, t, sz))
                    f.write("%d %s\n" % (sz, " ".join(vals)))
        icolors = ["#d62728", "#1f77b4", "#2ca02c"]
        g += ["set terminal pngcairo noenhanced size 1500,520 font 'sans,10'",
              "set output '%s/imm.png'" % d, "set style data lines", "set key inside top left vertical",
              "set grid", "set logscale x 2", "set logscale y", "set yrange [*:*]",
              "set xtics norotate", "set xtics (%s)" % xtics, "set xlabel 'message size'",
              "set xrange [%g:%g]" % (sizes[0] / 1.5, sizes[-1] * 1.5),
              "set ylabel 'MiB/s (median, bars: min-max)'",
              "set multiplot layout 1,%d title 'RDMA Write with Immediate against RDMA Write "
              "and Write + Send (imm_bench, BENCH=%s)'" % (len(kinds), meta["mode"])]
        for k in kinds:
            g.append("set title '%s'" % KIND_LABEL[k])
            parts = []
            for i, t in enumerate(imm_tests):
                c = 2 + 3 * i
                parts.append("'%s/imm-%s.dat' using 1:%d:%d:%d with yerrorlines lw 2 lc rgb '%s' "
                             "title '%s'" % (d, k, c, c + 1, c + 2, icolors[i % 3], t))
            g.append("plot " + ", ".join(parts))
        g.append("unset multiplot")
        plots.append(("imm.png", "imm_bench: bandwidth of write with immediate, plain write and "
                      "write + send against message size, one panel per kind"))
    if flush_lat:
        # flush.dat: one row per flush_bench test; per kind median min max
        with open(os.path.join(d, "flush.dat"), "w") as f:
            f.write("# test " + " ".join("%s_med %s_min %s_max" % (k, k, k) for k in kinds) + "\n")
            for t, s in flush_lat:
                vals = []
                for k in kinds:
                    vals += dat_cols(st(k, t, s))
                f.write("%s %s\n" % (t.replace("_lat", ""), " ".join(vals)))
        g += ["unset logscale x", "set xtics autofreq", "set xrange [*:*]", "set xlabel ''",
              "set xtics rotate by -30", "set logscale y", "set yrange [*:*]",
              "set terminal pngcairo noenhanced size 1200,560 font 'sans,10'",
              "set output '%s/flush.png'" % d,
              "set title 'RDMA Flush and Atomic Write (flush_bench, round trips), median; "
              "bars: min-max; missing: n/a (BENCH=%s)'" % meta["mode"],
              "set ylabel 'microseconds (log scale)'", "set style data histograms",
              "set style histogram errorbars gap 2 lw 1", "set style fill solid 0.8 border -1",
              "set key below horizontal"]
        parts = []
        for i, k in enumerate(kinds):
            c = 2 + 3 * i
            parts.append("'%s/flush.dat' using %d:%d:%d%s lc rgb '%s' title '%s'"
                         % (d, c, c + 1, c + 2, ":xtic(1)" if i == 0 else "", colors[k],
                            KIND_LABEL[k]))
        g.append("plot " + ", ".join(parts))
        plots.append(("flush.png", "flush_bench: latency of every Flush / Atomic Write test "
                      "and its references, per kind"))
    script = os.path.join(d, "plots.gp")
    with open(script, "w") as f:
        f.write("\n".join(g) + "\n")
    r = subprocess.run([gp, script], capture_output=True, text=True)
    if r.returncode != 0:
        return [], "gnuplot failed: " + r.stderr.strip().splitlines()[-1] if r.stderr.strip() else "gnuplot failed"
    return [(n, w) for n, w in plots if os.path.getsize(os.path.join(d, n)) > 0], ""


if __name__ == "__main__":
    sys.exit(main())
