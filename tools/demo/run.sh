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
[ $rc = 0 ] || echo "demo failed (status $rc); guest console: $out/console.log"
exit $rc
