#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""param-ab.py - A/B a siw module parameter with perftest, in one guest.

    tools/vm/run --netns -- tools/bench/param-ab.py PARAM V1,V2 [ROUNDS]

Runs in the VM (two siw devices, the client in SIWX_NETNS1 so that the
traffic crosses the veth pair, as the bench does). Every round runs every
case once per value, the values taking turns (V1 V2, V2 V1, ...), so that
the machine's drift hits both alike. Prints each run's result and, per
case, the median of each value and the median of the per-round ratios
V2/V1 (with their range). Latencies: t_typical, µs; bandwidth cases:
MsgRate in thousands of messages/s. Environment: PERFTEST_AB_CASES
("name|tool options;..." replaces the default cases), SIWX_ADDR0/1,
SIWX_DEV0/1, SIWX_NETNS1, RDMA_PREFIX (our rdma-core, for atomics).
"""
import os
import re
import statistics
import subprocess
import sys
import time

A0 = os.environ.get("SIWX_ADDR0", "192.168.77.1")
A1 = os.environ.get("SIWX_ADDR1", "192.168.77.2")
D0 = os.environ.get("SIWX_DEV0", "siw0")
D1 = os.environ.get("SIWX_DEV1", "siw1")
NS = os.environ.get("SIWX_NETNS1", "")
TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
OURS = os.path.join(os.environ.get("RDMA_PREFIX",
                                   os.path.join(TOP, "build/rdma-core/prefix")),
                    "lib")
CASES = [
    ("read_lat_64", "ib_read_lat -s 64 -n 2000"),
    ("atomic_fadd_lat", "ib_atomic_lat -A FETCH_AND_ADD -n 2000"),
    ("read_rate_64", "ib_read_bw -s 64 -n 5000"),
    ("atomic_fadd_rate", "ib_atomic_bw -A FETCH_AND_ADD -n 5000"),
    ("write_lat_64", "ib_write_lat -s 64 -n 2000"),
]
PORT = [19515]


def run_case(tool_opts):
    argv = tool_opts.split()
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = OURS
    for _ in range(3):
        port = str(PORT[0])
        PORT[0] += 1
        srv = subprocess.Popen(argv + ["-R", "-F", "-d", D0, "-p", port],
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, text=True, env=env)
        time.sleep(1.5)
        ns = ["ip", "netns", "exec", NS] if NS else []
        cli = subprocess.run(ns + argv + ["-R", "-F", "-d", D1, "-p", port,
                                          "--source_ip", A1, A0],
                             capture_output=True, text=True, env=env,
                             timeout=300)
        try:
            srv.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.communicate()
        lines = [ln.split() for ln in cli.stdout.splitlines()
                 if re.match(r"^\s*\d+\s+\d+\s+[\d.]", ln)]
        if lines:
            v = lines[-1]
            if "_lat" in argv[0]:
                return float(v[4])          # t_typical, µs
            return float(v[4]) * 1000.0     # MsgRate, Mpps -> kmsg/s
        time.sleep(1)
    return None


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    param, values = sys.argv[1], sys.argv[2].split(",")
    rounds = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    path = "/sys/module/siw/parameters/" + param
    cases = CASES
    if os.environ.get("PERFTEST_AB_CASES"):
        cases = [tuple(c.split("|", 1)) for c in
                 os.environ["PERFTEST_AB_CASES"].split(";") if c]
    res = {(c[0], v): [] for c in cases for v in values}
    for r in range(rounds):
        order = values if r % 2 == 0 else list(reversed(values))
        for name, opts in cases:
            for v in order:
                with open(path, "w") as f:
                    f.write(v)
                x = run_case(opts)
                res[(name, v)].append(x)
                print("round %d %s %s=%s: %s" % (r + 1, name, param, v, x),
                      flush=True)
    with open(path, "w") as f:
        f.write(values[0])
    print("\n| case | %s | ratio %s/%s, median (range) |" %
          (" | ".join("%s=%s" % (param, v) for v in values),
           values[-1], values[0]))
    print("|---|%s---|" % ("---|" * len(values)))
    for name, _ in cases:
        cols = []
        for v in values:
            xs = [x for x in res[(name, v)] if x is not None]
            cols.append("%.2f (%.2f-%.2f)" % (statistics.median(xs), min(xs),
                                              max(xs)) if xs else "-")
        pr = [b / a for a, b in zip(res[(name, values[0])],
                                    res[(name, values[-1])]) if a and b]
        ratio = ("%.2f (%.2f-%.2f)" % (statistics.median(pr), min(pr),
                                       max(pr))) if pr else "-"
        print("| %s | %s | %s |" % (name, " | ".join(cols), ratio))
    return 0


if __name__ == "__main__":
    sys.exit(main())
