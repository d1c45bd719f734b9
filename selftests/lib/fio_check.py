#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""fio_check.py JSON: the first job of a fio JSON report, in one line
(error, bytes written and read, IOPS and KiB/s each way); exit 0 only when
fio reported no error and moved data (a verify_only run reads only)."""
import json
import sys


def main(path):
    j = json.load(open(path))["jobs"][0]
    w, r = j["write"], j["read"]
    print(f'{j["jobname"]}: error {j["error"]}, wrote {w["io_bytes"]} B, '
          f'read {r["io_bytes"]} B, write {w["iops"]:.0f} IOPS {w["bw"]} KiB/s, '
          f'read {r["iops"]:.0f} IOPS {r["bw"]} KiB/s')
    return 0 if j["error"] == 0 and (w["io_bytes"] > 0 or r["io_bytes"] > 0) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
