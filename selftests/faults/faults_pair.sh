#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# faults_pair.sh - suite "faults_pair" (host): a peer unloaded under load
# and a peer killed hard. Boots its own pair (tools/vm/run --pair
# --powerfail, our module on both): VM a runs the traffic program's client
# to b's server (faults_pair_a.sh), b kills its server with SIGKILL and
# rmmods siw under the traffic, loads it again and serves a new
# connection (faults_pair_b.sh), then a has b's QEMU killed. Prints a's
# TAP, then b's rmmod as one more test and the run's verdict.
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SELFTEST_DIR,
# SIWX_FAULTS_PAIR_TIMEOUT (360), SIWX_VM_KVER.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MODULE=${SIWX_MODULE:-$TOP/build/siwx/siw.ko}
SDIR=${SELFTEST_DIR:-$TOP/build/selftests}
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
OUT=${SIWX_RESULTS:-$SDIR/results}/faults_pair
FT=$SDIR/bin/faults_traffic
LIMIT=${SIWX_FAULTS_PAIR_TIMEOUT:-360}
case ${SIWX_VM_KVER:-} in *siwx-debug*) LIMIT=$((LIMIT * 4)) ;; esac
# the guests' waits scale as the suites' do (SIWX_SUITE_TIMEOUT_SCALE)
SCALE=SIWX_SUITE_TIMEOUT_SCALE=${SIWX_SUITE_TIMEOUT_SCALE:-1}
mkdir -p "$OUT"
"$TOP/tools/vm/run" --quiet --pair --powerfail \
	--module "$MODULE" --peer-module "$MODULE" \
	--share "$SDIR" --share "$PREFIX" --out "$OUT" --timeout "$LIMIT" \
	--peer-cmd "RDMA_PREFIX=$PREFIX FT=$FT $SCALE bash $HERE/faults_pair_b.sh" \
	-- "RDMA_PREFIX=$PREFIX FT=$FT $SCALE bash $HERE/faults_pair_a.sh > \$SIWX_RESULTS/faults_pair.tap" >&2
rc=$?
echo "TAP version 13"
echo "# tools/vm/run exit $rc (consoles $OUT/a/console.log, $OUT/b/console.log)"
echo "1..7"
n=0 failed=0
while IFS= read -r l; do
	case $l in
	"ok "*|"not ok "*)
		n=$((n + 1))
		[[ $l == "not ok"* ]] && failed=1
		echo "$l" ;;
	"#"*) echo "$l" ;;
	esac
done < <(cat "$OUT/a/faults_pair.tap" 2>/dev/null)
while [ "$n" -lt 5 ]; do
	n=$((n + 1)) failed=1
	echo "not ok $n faults_pair.a_test_$n # VM a did not report it"
done
rm_=$(cat "$OUT/b/rmmod.txt" 2>/dev/null)
echo "# b: server SIGKILLed, rmmod siw: ${rm_:-no record}"
if [[ $rm_ == rc=0* ]]; then
	echo "ok 6 faults_pair.peer_rmmod"
else
	failed=1
	echo "not ok 6 faults_pair.peer_rmmod"
	echo "#   rmmod siw in VM b after its server was killed: ${rm_:-no record}; $(head -c 300 "$OUT/b/rmmod.err" 2>/dev/null)"
fi
# a's status 1 is a failed test, counted above; b was killed (its verdict
# PASS unless its console shows a kernel problem)
if [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$failed" = 1 ]; }; then
	echo "ok 7 faults_pair.vm_run_clean"
else
	failed=1
	echo "not ok 7 faults_pair.vm_run_clean # tools/vm/run exit $rc"
	# shellcheck source=tools/vm/kernel-problems.sh
	. "$TOP/tools/vm/kernel-problems.sh"
	grep -E "siwx-vm: .*FAIL|$KERNEL_PROBLEMS" "$OUT/console.log" 2>/dev/null |
		head -n 10 | sed 's/^/#   /'
fi
exit $failed
