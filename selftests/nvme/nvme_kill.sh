#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nvme_kill.sh - suite "nvme_kill" (host): the NVMe target killed hard in
# the middle of I/O. Boots a pair of its own (tools/vm/run --pair
# --powerfail): VM b runs nvmet-rdma over siwx, VM a nvme-rdma over siwx
# with fio, and has b's QEMU killed (SIGKILL) during a verified write job
# (selftests/nvme/nvme_kill_guest.sh). The host's controller must go into
# error recovery, be removed after ctrl_loss_tmo, fail the I/O, free every
# siwx QP, leave no task blocked. Prints a's tests and the run's own.
#
# Environment: SIWX_MODULE (both VMs), SIWX_RESULTS, KILL_LOSS_TMO (15 s),
# KILL_RECONNECT_DELAY (5 s),
# SIWX_NVME_KILL_TIMEOUT (420 s, the pair run's limit).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
MODULE=${SIWX_MODULE:-$TOP/build/siwx/siw.ko}
OUT=${SIWX_RESULTS:-$TOP/build/selftests/results}/nvme_kill
mkdir -p "$OUT"
"$TOP/tools/vm/run" --quiet --pair --powerfail --module "$MODULE" --peer-module "$MODULE" \
	--out "$OUT" --timeout "${SIWX_NVME_KILL_TIMEOUT:-420}" \
	--peer-cmd "KILL_LOSS_TMO=${KILL_LOSS_TMO:-15} KILL_RECONNECT_DELAY=${KILL_RECONNECT_DELAY:-5} bash $HERE/nvme_kill_guest.sh target" \
	-- "KILL_LOSS_TMO=${KILL_LOSS_TMO:-15} KILL_RECONNECT_DELAY=${KILL_RECONNECT_DELAY:-5} bash $HERE/nvme_kill_guest.sh host" >"$OUT.log" 2>&1
rc=$?
echo "TAP version 13"
echo "# tools/vm/run exit $rc (log $OUT.log, consoles $OUT/a/console.log $OUT/b/console.log)"
# a's TAP, renumbered after the plan is known
mapfile -t lines < <(tr -d '\r' <"$OUT/a/console.log" 2>/dev/null |
	grep -E '^((not )?ok [0-9]+ nvme_kill\.|# )' | grep -vE '^# (SKIP|TODO)')
planned=$(tr -d '\r' <"$OUT/a/console.log" 2>/dev/null | grep -m1 -oE '^1\.\.[0-9]+' | cut -c4-)
echo "1..$(( ${planned:-0} + 2 ))"
n=0 failed=0 seen=0
for l in "${lines[@]}"; do
	case $l in
	"ok "*|"not ok "*)
		n=$((n + 1)) seen=$((seen + 1))
		[[ $l == "not ok"* ]] && failed=1
		echo "$l" | sed -E "s/^(not )?ok [0-9]+/\\1ok $n/" ;;
	*) echo "$l" ;;
	esac
done
# what a did not report fails
while [ "$seen" -lt "${planned:-1}" ]; do
	n=$((n + 1)) seen=$((seen + 1)) failed=1
	echo "not ok $n nvme_kill.a_test_$seen # VM a did not report it"
done
n=$((n + 1))
if [ "$rc" = 0 ]; then echo "ok $n nvme_kill.pair_run_clean"; else failed=1; echo "not ok $n nvme_kill.pair_run_clean # tools/vm/run exit $rc"; fi
n=$((n + 1))
if [ -s "$OUT/b/powerfailed" ]; then echo "ok $n nvme_kill.target_killed_hard"; else failed=1; echo "not ok $n nvme_kill.target_killed_hard"; fi
exit $failed
