#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netns.sh - suite "netns" (host): siwx in network namespaces as containers
# use them, in a VM of its own (tools/vm/run, single topology without
# --netns): the RDMA core's exclusive mode can only be switched while no
# namespace but the initial one exists. The guest side is netns_guest.sh;
# this prints its TAP and the VM's own verdict (no kernel problem, every
# link deleted, rmmod siw clean).
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SIWX_NETNS_TIMEOUT
# (300 s, the VM's limit).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MODULE=${SIWX_MODULE:-$TOP/build/siwx/siw.ko}
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
OUT=${SIWX_RESULTS:-$TOP/build/selftests/results}/netns
mkdir -p "$OUT"
"$TOP/tools/vm/run" --quiet --module "$MODULE" --share "$PREFIX" --out "$OUT" \
	--timeout "${SIWX_NETNS_TIMEOUT:-300}" \
	-- "RDMA_PREFIX=$PREFIX bash $HERE/netns_guest.sh > \$SIWX_RESULTS/netns.tap" >"$OUT.log" 2>&1
rc=$?
echo "TAP version 13"
echo "# tools/vm/run exit $rc (log $OUT.log, console $OUT/console.log, guest log $OUT/netns.log)"
planned=$(grep -m1 -oE '^1\.\.[0-9]+' "$OUT/netns.tap" 2>/dev/null | cut -c4-)
planned=${planned:-10}
echo "1..$((planned + 1))"
n=0 failed=0
while IFS= read -r l; do
	case $l in
	"ok "*|"not ok "*)
		n=$((n + 1))
		[[ $l == "not ok"* ]] && failed=1
		echo "$l" ;;
	"#"*) echo "$l" ;;
	esac
done < <(cat "$OUT/netns.tap" 2>/dev/null)
while [ "$n" -lt "$planned" ]; do
	n=$((n + 1)) failed=1
	echo "not ok $n netns.guest_test_$n # the guest did not report it"
done
n=$((n + 1))
if [ "$rc" = 0 ]; then
	echo "ok $n netns.vm_run_clean"
else
	failed=1
	echo "not ok $n netns.vm_run_clean # tools/vm/run exit $rc"
	# shellcheck source=../../tools/vm/kernel-problems.sh
	. "$TOP/tools/vm/kernel-problems.sh"
	grep -E "siwx-vm: .*FAIL|$KERNEL_PROBLEMS" "$OUT.log" "$OUT/console.log" 2>/dev/null | head -n 10 | sed 's/^/#   /'
fi
exit $failed
