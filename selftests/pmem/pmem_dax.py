#!/usr/bin/python3
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
"""suite pmem (single VM, pmem=64M): the NVDIMM tools/vm/run --pmem gives.

Maps $SIWX_PMEM_DEV (devdax), stores random bytes at a few offsets through
the mapping, and reads them back from the host's backing file
$SIWX_PMEM_FILE (in the results directory, seen here through the results
share, i.e. the host's own file) at $SIWX_PMEM_OFFSET + offset. Prints TAP.
"""
import mmap
import os
import stat
import sys

n = 0
failed = 0


def tap(ok, what):
    global n, failed
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what), flush=True)
    failed |= not ok
    return ok


def main():
    print("TAP version 13")
    dev = os.environ.get("SIWX_PMEM_DEV", "")
    path = os.environ.get("SIWX_PMEM_FILE", "")
    try:
        base = int(os.environ.get("SIWX_PMEM_OFFSET", ""))
        size = int(os.environ.get("SIWX_PMEM_SIZE", ""))
    except ValueError:
        base = size = -1
    if not tap(dev != "" and os.path.exists(dev) and stat.S_ISCHR(os.stat(dev).st_mode),
               "devdax device %r (SIWX_PMEM_DEV)" % dev):
        print("1..%d" % n)
        return 1
    tap(base >= 0 and size >= (32 << 20), "offset %d and size %d of the device in %s"
        % (base, size, path))
    tap(os.path.getsize(path) >= base + size, "backing file covers the device")
    fd = os.open(dev, os.O_RDWR)
    length = 8 << 20                    # 2 MiB aligned, as devdax wants
    m = mmap.mmap(fd, length, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
    offsets = [0, 4096 + 17, (2 << 20) - 8, length - 4096]
    data = {o: os.urandom(4096 if o % 4096 == 0 else 8) for o in offsets}
    for o, d in data.items():
        m[o:o + len(d)] = d
    # no msync: devdax has no page cache (msync fails with EINVAL)
    with open(path, "rb") as f:
        for o, d in data.items():
            f.seek(base + o)
            got = f.read(len(d))
            tap(got == d, "%d bytes stored at device offset %d are in the host file at %d"
                % (len(d), o, base + o))
        # and the other way: the file's bytes are what the mapping reads
        f.seek(base + 8192)
        tap(f.read(4096) == m[8192:8192 + 4096], "an untouched page reads the same both ways")
    m.close()
    os.close(fd)
    print("1..%d" % n)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
