#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""fio_numbers.py JSON: one fio job's numbers, for tools/bench/guest-ulp-bench.sh.

Prints "IOPS MIB_S CLAT_MEAN_US CLAT_P99_US" of the job's direction that
moved data (read or write; a job that moved both is summed for IOPS and
MiB/s, its latencies are the read side's), or "error: WHY".
"""
import json
import sys


def main():
    try:
        with open(sys.argv[1]) as f:
            text = f.read()
        # fio may print notes before the JSON object
        doc = json.loads(text[text.index("{"):])
        job = doc["jobs"][0]
    except (OSError, ValueError, KeyError, IndexError) as e:
        print("error: no fio JSON report (%s)" % e)
        return 1
    if job.get("error"):
        print("error: fio job error %s" % job["error"])
        return 1
    dirs = [job[d] for d in ("read", "write") if job.get(d, {}).get("io_bytes", 0) > 0]
    if not dirs:
        print("error: the job moved no data")
        return 1
    iops = sum(d["iops"] for d in dirs)
    mib = sum(d["bw_bytes"] for d in dirs) / 1048576.0
    clat = dirs[0]["clat_ns"]
    p99 = clat.get("percentile", {}).get("99.000000")
    if p99 is None:
        print("error: no 99th percentile in the report")
        return 1
    print("%.1f %.2f %.1f %.1f" % (iops, mib, clat["mean"] / 1000.0, p99 / 1000.0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
