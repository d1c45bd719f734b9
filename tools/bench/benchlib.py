# SPDX-License-Identifier: GPL-2.0
"""benchlib: what the benchmark reports share, imported by
tools/bench/report.py, scale-report.py and ulp-report.py (each puts its own
directory first on sys.path). Python standard library only.

  KIND_LABEL                 a device kind's name in the tables
  num(s)                     s as a float; None for anything else and NaN
  fmt(v)                     a number as the tables have it ("-" for None)
  human_size(n)              bytes as "N B", "N KiB" or "N MiB"
  read_meta(d)               DIR/meta.txt's KEY=VALUE lines, a dict
  read_text(d, name)         DIR/NAME's text, "" if there is none
  Point                      all samples of one point: the values (also by
                             repetition), every note, the n/a reasons and
                             the failures; its status, statistics, table
                             cell and summary.csv columns
  load(d, key, signed, no_reason)
                             {key: Point} from DIR/samples.csv
"""

import csv
import os
import statistics

KIND_LABEL = {"siwx": "siwx", "upstream": "upstream siw", "rxe": "rxe", "tcp": "raw TCP"}
# samples.csv's columns that hold integers
INT_COLUMNS = {"size", "n", "procs"}


def num(s):
    try:
        v = float(s)
    except (TypeError, ValueError):
        return None
    return v if v == v else None


def fmt(v):
    """3 significant digits below 1, 2 decimals below 10, 1 below 100,
    none above (by the magnitude: deltas may be negative)."""
    if v is None:
        return "-"
    a = abs(v)
    if a >= 100:
        return "%.0f" % v
    if a >= 10:
        return "%.1f" % v
    if a >= 1:
        return "%.2f" % v
    return "%.3g" % v


def human_size(n):
    n = int(n)
    if n >= 1048576 and n % 1048576 == 0:
        return "%d MiB" % (n // 1048576)
    if n >= 1024 and n % 1024 == 0:
        return "%d KiB" % (n // 1024)
    return "%d B" % n


def read_meta(d):
    meta = {}
    with open(os.path.join(d, "meta.txt")) as f:
        for line in f:
            if "=" in line:
                k, v = line.rstrip("\n").split("=", 1)
                meta[k] = v
    return meta


def read_text(d, name):
    path = os.path.join(d, name)
    if not os.path.exists(path):
        return ""
    with open(path) as f:
        return f.read()


class Point:
    """All samples of one point (one key of load())."""

    def __init__(self):
        self.values = []
        self.by_rep = {}
        self.na = []
        self.fails = []
        self.notes = []

    @property
    def status(self):
        if self.values:
            return "ok"
        if self.na:
            return "n/a"
        return "fail" if self.fails else "missing"

    def stats(self):
        if not self.values:
            return None
        v = sorted(self.values)
        med = statistics.median(v)
        return {"n": len(v), "median": med, "min": v[0], "max": v[-1],
                "spread_pct": (v[-1] - v[0]) / med * 100 if med else 0.0}

    def med(self):
        s = self.stats()
        return s["median"] if s else None

    def cell(self, f=fmt, scale=1.0):
        """median (min–max) in f's format, each times scale; n/a, FAILED
        or missing without a value."""
        s = self.stats()
        if s:
            if s["n"] == 1:
                return f(s["median"] * scale)
            return "%s (%s–%s)" % (f(s["median"] * scale), f(s["min"] * scale),
                                   f(s["max"] * scale))
        if self.na:
            return "n/a"
        return "FAILED" if self.fails else "missing"

    def summary(self, spread=False):
        """summary.csv's columns after the point's key: status, count,
        median, min, max (spread_pct too if spread), note (the n/a reason
        or the first failure)."""
        st = self.stats()
        note = self.na[0] if self.status == "n/a" else (self.fails[0] if self.fails else "")
        if st:
            cols = [st["n"], "%g" % st["median"], "%g" % st["min"], "%g" % st["max"]]
            if spread:
                cols.append("%.1f" % st["spread_pct"])
        else:
            cols = [0, "", "", ""] + ([""] if spread else [])
        return [self.status] + cols + [note]


def load(d, key, signed=(), no_reason=""):
    """{key: Point} from DIR/samples.csv, a point's key its row's columns
    KEY (a tuple of names; size, n and procs as integers). A value counts
    when it is a number above 0 (for a metric in SIGNED: any number); "n/a"
    is n/a with the note as its reason; anything else fails with the note
    (NO_REASON without one) or, for a number, "invalid value V" (perftest
    prints 0 when it could not calibrate its clock)."""
    pts = {}
    with open(os.path.join(d, "samples.csv"), newline="") as f:
        for row in csv.DictReader(f):
            k = tuple(int(row[c]) if c in INT_COLUMNS else row[c] for c in key)
            p = pts.setdefault(k, Point())
            v = num(row["value"])
            if row["note"]:
                p.notes.append(row["note"])
            if v is not None and (v > 0 or row["metric"] in signed):
                p.values.append(v)
                p.by_rep[row["rep"]] = v
            elif row["value"] == "n/a":
                p.na.append(row["note"])
            elif v is not None:
                p.fails.append("invalid value %s" % row["value"])
            else:
                p.fails.append(row["note"] or no_reason)
    return pts
