#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# suite powerfail (host): the power-failure test. Boots a pair of its own
# (tools/vm/run --pair --pmem 64M --powerfail): VM b, the target, serves an
# MR on its /dev/dax0.0; VM a runs Write 4 KiB, Flush(persistent), Atomic
# Write 8 bytes, Flush(persistent) into it (selftests/pmem/pmem_flush.c),
# then has b's QEMU killed with SIGKILL. Here the host checks that b's
# NVDIMM backing file holds exactly the record and the pointer, and in a's
# capture of the connection (powerfail_a.sh) which messages carried the
# sequence: Flush and Atomic Write Requests and their Responses on the
# native path, 8-byte RDMA Read Requests and no Flush on the emulated one.
# Prints TAP.
#
# Environment: SIWX_MODULE (both VMs; from run.sh), SELFTEST_DIR,
# RDMA_PREFIX, SIWX_RESULTS (run.sh's results directory),
# SIWX_PMEM_MODE=auto|native|emulated (default auto: native on siwx with
# our rdma-core, whatever both ends can elsewhere),
# SIWX_POWERFAIL_BIN=bin|stock (default bin), SIWX_POWERFAIL_TIMEOUT
# (seconds, default 420).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MODULE=${SIWX_MODULE:-$TOP/build/siwx/siw.ko}
SDIR=${SELFTEST_DIR:-$TOP/build/selftests}
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
OUT=${SIWX_RESULTS:-$SDIR/results}/powerfail
PROG=$SDIR/${SIWX_POWERFAIL_BIN:-bin}/pmem_flush
MODE=${SIWX_PMEM_MODE:-auto}
# siwx has Flush and Atomic Write: auto must not fall back to the emulation
# on it unnoticed (the upstream module and stock libsiw take the emulation)
if [ "$MODE" = auto ] && [ "${SIWX_POWERFAIL_BIN:-bin}" = bin ] &&
	[ "$MODULE" != "${SIWX_UPSTREAM_MODULE:-$TOP/build/upstream/siw.ko}" ]; then
	MODE=native
fi

n=0 failed=0
ok() { n=$((n + 1)); echo "ok $n - $*"; }
nok() { n=$((n + 1)); failed=1; echo "not ok $n - $*"; }
check() { local what=$1; shift; if "$@"; then ok "$what"; else nok "$what"; fi; }

echo "TAP version 13"
if [ ! -x "$PROG" ]; then
	nok "$PROG built (make selftests)"
	echo "1..$n"; exit 1
fi
mkdir -p "$OUT"
# the VM run's own exit status: a's program status, or a VM-level failure
"$TOP/tools/vm/run" --quiet --pair --pmem 64M --powerfail \
	--module "$MODULE" --peer-module "$MODULE" \
	--share "$SDIR" --share "$PREFIX" --out "$OUT" \
	--timeout "${SIWX_POWERFAIL_TIMEOUT:-420}" \
	--peer-cmd "SIWX_PMEM_MODE=$MODE $PROG" -- "SIWX_PMEM_MODE=$MODE $HERE/powerfail_a.sh $PROG" \
	> "$OUT.log" 2>&1
rc=$?
echo "# tools/vm/run exit $rc (log $OUT.log)"
for v in a b; do
	sed "s/^/# [$v] /" "$OUT/$v/console.log" 2>/dev/null | grep -E '^# \[.\] (ok|not ok|#) ' | head -n 40
done
check "the pair run is clean and VM a's sequence passed (tools/vm/run exit $rc)" [ "$rc" = 0 ]
check "VM b was killed hard (SIGKILL to QEMU, no shutdown)" [ -s "$OUT/b/powerfailed" ]
check "VM b never reached its teardown (no status, no dmesg)" \
	[ ! -e "$OUT/b/status" ] && [ ! -e "$OUT/b/dmesg.txt" ]

# the bytes in the backing file against what a wrote
PYTHONPATH=$TOP/selftests/lib python3 - "$OUT" "${SIWX_PMEM_PORT:-18520}" <<'PY'
import collections
import sys
import iwarp_capture as C
import siwx_wire as W
out, port = sys.argv[1], int(sys.argv[2])
n = 3
def tap(ok, what):
    global n
    n += 1
    print(("ok" if ok else "not ok") + " %d - %s" % (n, what))
    return ok
try:
    tgt = dict(l.split("=", 1) for l in open(out + "/b/powerfail-target.txt").read().split())
    off = int(tgt["offset"])
    rec = open(out + "/a/powerfail-record.bin", "rb").read()
    ptr = open(out + "/a/powerfail-pointer.bin", "rb").read()
    exp = open(out + "/a/powerfail-expect.txt").read().split()
except Exception as e:
    tap(False, "the run left the target's offset and the expected bytes (%s)" % e)
    print("1..%d" % n)
    sys.exit(1)
print("# expected: %s; region at offset %d of %s" % (" ".join(exp), off, out + "/b/pmem.img"))
with open(out + "/b/pmem.img", "rb") as f:
    f.seek(off)
    got = f.read(8192)
ok = tap(len(rec) == 4096 and got[:4096] == rec, "backing file: the 4 KiB record")
if not ok and len(got) >= 4096:
    d = next(i for i in range(4096) if got[i] != rec[i])
    print("# first difference at byte %d: file 0x%02x, expected 0x%02x" % (d, got[d], rec[d]))
tap(len(ptr) == 8 and got[4096:4104] == ptr,
    "backing file: the 8-byte pointer (file %s, expected %s)" % (got[4096:4104].hex(), ptr.hex()))
tap(got[4104:8192] == bytes(4088), "backing file: nothing else written after the pointer")

# the wire, from a's capture: which operations carried the sequence
path = dict(l.split("=", 1) for l in exp).get("path", "?")
try:
    conns = C.decode(out + "/a/powerfail.pcap", port)
except Exception as e:
    conns = []
    print("# capture: %s" % e)
if tap(len(conns) == 1 and conns[0]["rep"] is not None,
       "capture: one MPA connection to port %d (%d found)" % (port, len(conns))):
    c = conns[0]
    up = collections.Counter(d["op"] for d in c["fpdus_i"] if d.get("complete"))
    down = collections.Counter(d["op"] for d in c["fpdus_r"] if d.get("complete"))
    name = lambda k: "0x%x" % k
    print("# a->b opcodes: %s" % dict((name(k), v) for k, v in sorted(up.items())))
    print("# b->a opcodes: %s" % dict((name(k), v) for k, v in sorted(down.items())))
    fl, aw = W.RDMAP_OP_FLUSH_REQ, W.RDMAP_OP_ATOMIC_WRITE_REQ
    rrq = W.RDMAP_OP_READ_REQ
    if path == "native":
        tap(up[fl] == 2 and up[aw] == 1,
            "native: 2 Flush Requests and 1 Atomic Write Request from a (%d, %d)" % (up[fl], up[aw]))
        tap(down[W.RDMAP_OP_FLUSH_RESP] == 2 and down[W.RDMAP_OP_ATOMIC_WRITE_RESP] == 1,
            "native: 2 Flush Responses and 1 Atomic Write Response from b")
        tap(up[rrq] == 0, "native: no RDMA Read Request (no emulation)")
    else:
        sizes = [d.get("size") for d in c["fpdus_i"] if d["op"] == rrq]
        tap(sizes == [8, 8], "emulated: two 8-byte RDMA Read Requests (%s)" % sizes)
        tap(up[fl] == 0 and up[aw] == 0, "emulated: no Flush or Atomic Write Request on the wire")
print("1..%d" % n)
sys.exit(0)
PY
prc=$?
[ "$prc" = 0 ] && [ "$failed" = 0 ]
