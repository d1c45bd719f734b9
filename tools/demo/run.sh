#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/demo/run.sh (make demo): boot a test VM with the siwx module just built and show two
# siwx devices exchanging RDMA traffic across a veth pair.
set -euo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$top/build/vm/results/demo
rm -rf "$out"
echo "siwx demo: booting a QEMU/TCG guest (about 15 s) ..."
rc=0
"$top/tools/vm/run" --netns --quiet --out "$out" --timeout 300 \
	-- bash "$top/tools/demo/guest.sh" || rc=$?
cat "$out/demo.txt" 2>/dev/null
if [ $rc != 0 ]; then
	echo "demo failed (status $rc); guest console: $out/console.log"
	exit $rc
fi

# Persistent memory in another VM: VM b has an emulated NVDIMM (devdax), VM a commits
# records and pointers to it with RDMA Write, Flush and Atomic Write (tools/demo/pmem.sh).
pout=$top/build/vm/results/demo-pmem
rm -rf "$pout"
echo
echo "siwx demo: booting two guests, the second with an emulated NVDIMM (about 30 s) ..."
"$top/tools/vm/run" --pair --pmem 64M --quiet --out "$pout" --timeout 300 \
	--peer-cmd "bash $top/tools/demo/pmem.sh server" \
	-- bash "$top/tools/demo/pmem.sh" client || rc=$?
echo "== siwx demo: a record and a pointer committed to persistent memory in another VM =="
cat "$pout/b/demo-pmem.txt" "$pout/a/demo-pmem.txt" 2>/dev/null
if [ $rc != 0 ]; then
	echo "demo failed (status $rc); consoles: $pout/a/console.log $pout/b/console.log"
	exit $rc
fi
# what the NVDIMM's backing file on this host holds after VM b powered off
off=$(cat "$pout/b/pmem-offset")
ptr=$(od -A n -t u8 -j $((off + 4096)) -N 8 "$pout/b/pmem.img" | tr -d ' ')
rec=$(od -A n -t x1 -j "$off" -N 16 "$pout/b/pmem.img")
echo "host   : the NVDIMM's backing file $pout/b/pmem.img holds pointer $ptr,"
echo "         record bytes$rec ..."
# flush_bench's commit n: record byte i is (n + i) mod 256, the pointer is n
first=$(od -A n -t u1 -j "$off" -N 1 "$pout/b/pmem.img" | tr -d ' ')
if [ -z "$ptr" ] || [ "$ptr" = 0 ] || [ "$first" != $((ptr % 256)) ]; then
	echo "demo failed: the backing file does not hold the last commit (pointer '$ptr', record byte 0 '$first')"
	exit 1
fi
echo "         (record byte 0 = pointer mod 256: the record of commit $ptr)"

# A filesystem on an NVMe namespace served over siwx from another VM: VM b exports a RAM
# disk with nvmet-rdma, VM a formats and uses it with nvme-rdma (tools/demo/nvme.sh).
nout=$top/build/vm/results/demo-nvme
rm -rf "$nout"
echo
echo "siwx demo: booting two guests for NVMe over Fabrics over siwx (about 90 s) ..."
"$top/tools/vm/run" --pair --quiet --out "$nout" --timeout 300 \
	--peer-cmd "bash $top/tools/demo/nvme.sh target" \
	-- bash "$top/tools/demo/nvme.sh" host || rc=$?
echo "== siwx demo: ext4 on an NVMe namespace served over siwx from another VM =="
{ head -n 1 "$nout/b/demo-nvme.txt"; cat "$nout/a/demo-nvme.txt"
  tail -n +2 "$nout/b/demo-nvme.txt"; } 2>/dev/null
if [ $rc != 0 ]; then
	echo "demo failed (status $rc); consoles: $nout/a/console.log $nout/b/console.log"
	exit $rc
fi
echo "== demo OK =="
exit 0
