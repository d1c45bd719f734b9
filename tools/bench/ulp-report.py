#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""ulp-report.py DIR: the report of tools/bench/ulp-bench.sh.

Reads DIR/samples.csv (written by tools/bench/guest-ulp-bench.sh) and
DIR/meta.txt (the matrix: kinds per protocol, jobs, repetitions), writes
  DIR/ulp-report.md    per protocol: throughput (IOPS for 4 KiB jobs, MiB/s
                       for the others) per kind as median (min..max, n) and
                       the ratios siwx/KIND, each the median of the ratios of
                       the same repetition (so the same boot and minute),
                       latency (fio clat mean and p99), the issue's targets
  DIR/ulp-summary.csv  one row per protocol, job, kind and metric
  DIR/ulp-ratio.png    the ratios, one bar per job and kind (gnuplot; skipped
                       with a note when gnuplot is missing)
Exit status 0; 1 when the samples or the meta file are missing or a point
that must be measured has no value.
"""
import csv
import os
import shutil
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchlib  # noqa: E402  (tools/bench/benchlib.py: meta.txt, the number format)


def job_name(spec):
    rw, bs, qd = spec.split(":")
    return "%s_%s_qd%s" % (rw, bs, qd)


def headline(spec):
    """The metric a job is judged by: IOPS for 4 KiB, MiB/s otherwise."""
    bs = spec.split(":")[1]
    return ("iops", "IOPS") if bs == "4k" else ("mib_s", "MiB/s")


def fmt(v):
    """make bench's number format (tools/bench/benchlib.py), n/a for none."""
    return "n/a" if v is None else benchlib.fmt(v)


def cell(vals):
    if not vals:
        return "n/a"
    med = statistics.median(vals)
    if len(vals) == 1:
        return "%s (n=1)" % fmt(med)
    return "%s (%s..%s, n=%d)" % (fmt(med), fmt(min(vals)), fmt(max(vals)), len(vals))


def main():
    d = sys.argv[1]
    try:
        meta = benchlib.read_meta(d)
        with open(os.path.join(d, "samples.csv")) as f:
            rows = list(csv.DictReader(f))
    except OSError as e:
        print("ulp-report: %s" % e, file=sys.stderr)
        return 1
    jobs = meta["ulp_jobs"].split()
    protos = [("nvme", "NVMe over Fabrics", meta["ulp_nvme_kinds"].split()),
              ("nfs", "NFS 4.2", meta["ulp_nfs_kinds"].split())]
    # (test, kind, metric) -> {rep: value}
    vals = {}
    notes = {}
    for r in rows:
        key = (r["test"], r["kind"], r["metric"])
        if r["value"] == "":
            notes[(r["test"], r["kind"])] = r["note"]
            continue
        vals.setdefault(key, {})[int(r["rep"])] = float(r["value"])

    def series(test, kind, metric):
        return vals.get((test, kind, metric), {})

    missing = []
    out = []
    summary = [["proto", "job", "kind", "metric", "median", "min", "max", "n"]]
    plot = []  # (label, [ratio per other kind])
    targets = []
    out.append("# Kernel storage protocols over siwx (tools/bench/ulp-bench.sh, BENCH=%s, %s repetitions)\n"
               % (meta.get("mode", "?"), meta.get("ulp_reps", "?")))
    out.append("fio %ss per job after a %ss ramp, one job, O_DIRECT, libaio; one RAM disk (brd, %s MiB), "
               "one veth pair with policy routing, the same boot for every kind. A cell is the median "
               "(min..max, n repetitions); a ratio siwx/KIND is the median of the ratios of the same "
               "repetition. Under TCG absolute numbers mean little; the ratios are the result.\n"
               % (meta.get("ulp_runtime", "?"), meta.get("ulp_ramp", "?"), meta.get("ulp_disk_mb", "?")))
    for proto, title, kinds in protos:
        others = [k for k in kinds if k != "siwx"]
        out.append("## %s: %s\n" % (title, ", ".join(kinds)))
        out.append("| job | metric | " + " | ".join(kinds) + " | "
                   + " | ".join("siwx/%s" % k for k in others) + " |")
        out.append("|---|---|" + "---|" * (len(kinds) + len(others)))
        for spec in jobs:
            test = "%s.%s" % (proto, job_name(spec))
            metric, unit = headline(spec)
            cells = []
            for k in kinds:
                s = series(test, k, metric)
                if not s:
                    missing.append("%s %s %s: %s" % (test, k, metric, notes.get((test, k), "no sample")))
                cells.append(cell(list(s.values())))
                for m in ("iops", "mib_s", "clat_mean_us", "clat_p99_us"):
                    v = list(series(test, k, m).values())
                    if v:
                        summary.append([proto, job_name(spec), k, m, "%.3f" % statistics.median(v),
                                        "%.3f" % min(v), "%.3f" % max(v), len(v)])
            rcells = []
            rmeds = []
            sx = series(test, "siwx", metric)
            for k in others:
                so = series(test, k, metric)
                ratios = [sx[r] / so[r] for r in sx if r in so and so[r] > 0]
                rcells.append(cell(ratios))
                rmeds.append(statistics.median(ratios) if ratios else None)
                if ratios:
                    summary.append([proto, job_name(spec), "siwx/" + k, metric + "_ratio",
                                    "%.3f" % statistics.median(ratios), "%.3f" % min(ratios),
                                    "%.3f" % max(ratios), len(ratios)])
                    targets.append((proto, job_name(spec), k, ratios))
            out.append("| %s | %s | %s | %s |" % (job_name(spec), unit, " | ".join(cells), " | ".join(rcells)))
            plot.append(("%s %s" % (proto, job_name(spec)), dict(zip(others, rmeds))))
        out.append("")
        out.append("Latency (fio completion latency, µs: mean / p99):\n")
        out.append("| job | " + " | ".join(kinds) + " |")
        out.append("|---|" + "---|" * len(kinds))
        for spec in jobs:
            test = "%s.%s" % (proto, job_name(spec))
            cs = []
            for k in kinds:
                m = list(series(test, k, "clat_mean_us").values())
                p = list(series(test, k, "clat_p99_us").values())
                cs.append("%s / %s" % (fmt(statistics.median(m)) if m else "n/a",
                                       fmt(statistics.median(p)) if p else "n/a"))
            out.append("| %s | %s |" % (job_name(spec), " | ".join(cs)))
        out.append("")

    # The targets, measured: siwx level with upstream, ahead of rxe,
    # NVMe over siwx at least NVMe/TCP for the 128 KiB sequential jobs.
    out.append("## Targets\n")
    out.append("A target is *met* when the median ratio reaches it, *within spread* when only the "
               "highest repetition does, *missed* otherwise.\n")
    out.append("| target | job | siwx/KIND median (min..max) | verdict |")
    out.append("|---|---|---|---|")

    def verdict(ratios, goal):
        if statistics.median(ratios) >= goal:
            return "met"
        return "within spread" if max(ratios) >= goal else "missed"
    for proto, job, k, ratios in targets:
        if k == "upstream":
            goal, what = 1.0, "siwx level with upstream siw (>= 1.0)"
        elif k == "rxe":
            goal, what = 1.0, "siwx ahead of rxe (>= 1.0)"
        elif k == "tcp" and proto == "nvme" and "128k" in job:
            goal, what = 1.0, "NVMe over siwx >= NVMe/TCP, 128 KiB sequential"
        else:
            continue
        out.append("| %s: %s | %s | %s | %s |" % (proto, what, job, cell(ratios), verdict(ratios, goal)))
    out.append("")
    if missing:
        out.append("## Points not measured\n")
        out.extend("- %s" % m for m in missing)
        out.append("")

    # the plot: ratios per job, one bar per other kind
    allk = []
    for _, _, kinds in protos:
        allk += [k for k in kinds if k != "siwx" and k not in allk]
    with open(os.path.join(d, "ulp-ratio.dat"), "w") as f:
        f.write("job " + " ".join("siwx/" + k for k in allk) + "\n")
        for label, r in plot:
            f.write('"%s" ' % label.replace("_", " ")
                    + " ".join("%.4f" % r[k] if r.get(k) is not None else "NaN" for k in allk) + "\n")
    gp = os.path.join(d, "ulp-ratio.gp")
    with open(gp, "w") as f:
        f.write('set terminal pngcairo size 1200,560 font ",10"\n'
                'set output "%s"\n'
                'set title "siwx against the other transports of the same protocol (median ratio of the same repetition; > 1: siwx faster)"\n'
                'set style data histograms\nset style histogram clustered gap 1\nset style fill solid 0.8 border -1\n'
                'set xtics rotate by -35 noenhanced\nset key outside top center horizontal noenhanced\nset grid ytics\n'
                'set ylabel "siwx / KIND (IOPS at 4 KiB, MiB/s at 128 KiB)"\nset yrange [0:*]\nset offsets 0, 0, graph 0.08, 0\n'
                'set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 dt 2\n'
                'plot ' % os.path.join(d, "ulp-ratio.png")
                + ", ".join("'%s' using %d:xtic(1) title columnheader" % (os.path.join(d, "ulp-ratio.dat"), i + 2)
                            for i in range(len(allk))) + "\n")
    if shutil.which("gnuplot"):
        rc = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if rc.returncode != 0:
            out.append("(plot failed: %s)\n" % rc.stderr.strip()[:200])
        else:
            out.append("![ratios](ulp-ratio.png)\n")
    else:
        out.append("(no plot: gnuplot missing)\n")

    with open(os.path.join(d, "ulp-report.md"), "w") as f:
        f.write("\n".join(out))
    with open(os.path.join(d, "ulp-summary.csv"), "w", newline="") as f:
        csv.writer(f).writerows(summary)
    if missing:
        print("ulp-report: %d points not measured" % len(missing), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
