#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nvme_kill_guest.sh target|host - the two VMs of suite nvme_kill
# (selftests/nvme/nvme_kill.sh boots them with tools/vm/run --pair
# --powerfail).
#
# target (VM b): nvmet-rdma exporting a 64 MiB brd RAM disk on
#   $SIWX_LOCAL:4420, tells a it is ready, then waits to be killed.
# host (VM a): connects (ctrl_loss_tmo KILL_LOSS_TMO, reconnect delay
#   KILL_RECONNECT_DELAY, keep-alive 5 s), runs a verified fio job, starts a long one and has b's
#   QEMU killed (SIGKILL, tools/vm/powerfail) 3 s into it; then checks that
#   the controller leaves "live" (error recovery, reconnect attempts), is
#   removed after its ctrl_loss_tmo / reconnect_delay attempts (each one
#   a connect to a dead peer, which siw gives up after 10 s: patch 0022;
#   before, 73 s), fio ends with I/O errors instead of
#   hanging, every QP and cm_id of siw0 is freed, no task is left in D
#   state, nvme_rdma unloads. The hung-task detector watches with a 30 s
#   limit (the harness fails the run on its report). TAP on the console,
#   which nvme_kill.sh reads.

set -u
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
LOG=$OUT/nvme-kill.log
NQN=nqn.2026-12.org.siwx:nvme-kill RPORT=4420
SYNC=${SIWX_NVME_SYNC_PORT:-18720}
LOSS_TMO=${KILL_LOSS_TMO:-15}
DELAY=${KILL_RECONNECT_DELAY:-5}
FSIZE=4M
RES_DEVS=siw0 TAP_PREFIX=nvme_kill
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PSYNC=(python3 "$HERE/pair_sync.py")

case ${1:-} in
target)
	TA=$SIWX_LOCAL HA=$SIWX_PEER
	TESTS=(target)
	# shellcheck source=selftests/nvme/nvme_lib.sh
	. "$HERE/nvme_lib.sh"
	: >"$LOG"
	ready=ready
	{ load_modules brd nvmet nvmet_rdma && target_up "1:rdma:$RPORT"; } >>"$LOG" 2>&1 || ready=fail
	"${PSYNC[@]}" serve "$TA" "$SYNC" "$ready" 240 >>"$LOG" 2>&1
	# a has this VM killed; still here after that means it never asked
	sleep 400
	echo "nvme_kill target: never killed" >&2
	exit 1
	;;
host) ;;
*) echo "usage: $0 target|host" >&2; exit 2 ;;
esac

TA=$SIWX_PEER HA=$SIWX_LOCAL
TESTS=(setup.modules peer.ready connect fio.before_kill kill ctrl.recovery
       ctrl.removed fio.ends qp.freed no_d_state cleanup)
echo "TAP version 13"
echo "1..${#TESTS[@]}"
# shellcheck source=selftests/nvme/nvme_lib.sh
. "$HERE/nvme_lib.sh"
: >"$LOG"
echo 30 >/proc/sys/kernel/hung_task_timeout_secs
check setup.modules load_modules nvme_fabrics nvme_rdma
line=$("${PSYNC[@]}" ask "$TA" "$SYNC" 240 hello 2>>"$LOG")
if [ "$line" = ready ]; then ok peer.ready; else nok peer.ready "target: ${line:-nothing}"; skip_rest "no target"; fi
BASE=$(rdma_res)
say "rdma res before connecting: $BASE"
CONNECT_OPTS="--ctrl-loss-tmo=$LOSS_TMO --reconnect-delay=$DELAY --keep-alive-tmo=5"
CTRL= DEV=
if connect rdma "$RPORT"; then
	ok connect
	say "connected: $CTRL, $DEV"
else
	nok connect "nvme connect -t rdma -a $TA failed (see $LOG)"
	skip_rest "not connected"
fi
if fio_job before randwrite 4k 16; then ok fio.before_kill; else nok fio.before_kill "see $LOG"; fi

# kill: b's QEMU killed 3 s into a long verified write job
fio_job during randwrite 4k 16 --size=48M >/dev/null 2>&1 &
FPID=$!
sleep 3
T0=$(date +%s)
if kill -0 "$FPID" 2>/dev/null && "$TOP/tools/vm/powerfail" 30 >>"$LOG" 2>&1; then
	ok kill
	say "target VM killed (SIGKILL to its QEMU) with fio running"
else
	nok kill "fio had ended before the kill, or the host did not kill b"
fi
since() { echo $(( $(date +%s) - T0 )); }

# ctrl.recovery: the controller leaves "live" (keep-alive timeout, error
# recovery, reconnect attempts)
states=
for _ in $(seq 120); do
	s=$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null) || break
	case " $states " in *" $s "*) ;; *) states="$states $s" ;; esac
	[ "$s" != live ] && break
	sleep 0.5
done
if [ "${s:-gone}" != live ]; then
	ok ctrl.recovery
	say "controller ${s:-gone} after $(since) s (states:$states)"
else
	nok ctrl.recovery "controller still live 60 s after the kill"
fi
# ctrl.removed: after ctrl_loss_tmo / reconnect_delay failed attempts the
# host gives up and deletes it; each attempt is the delay and a connect
# that siw gives up after 10 s; 60 s for the keep-alive timeout and TCG
attempts=$(( (LOSS_TMO + DELAY - 1) / DELAY ))
limit=$(( attempts * (DELAY + 10) + 60 ))
while [ -e "/sys/class/nvme/$CTRL" ] && [ "$(since)" -lt "$limit" ]; do
	s=$(cat "/sys/class/nvme/$CTRL/state" 2>/dev/null)
	case " $states " in *" $s "*) ;; *) states="$states $s" ;; esac
	sleep 1
done
if [ ! -e "/sys/class/nvme/$CTRL" ]; then
	ok ctrl.removed
	say "controller removed $(since) s after the kill (ctrl_loss_tmo $LOSS_TMO s, $attempts attempts $DELAY s apart; states:$states)"
	dmesg | grep -E 'rdma_connect|Reconnecting|Removing|failed reconnect' | tail -n 8 >>"$LOG"
else
	nok ctrl.removed "controller $CTRL still there $limit s after the kill (state $(cat "/sys/class/nvme/$CTRL/state"))"
fi
# fio.ends: the writes fail (EIO) instead of hanging
for _ in $(seq 60); do kill -0 "$FPID" 2>/dev/null || break; sleep 1; done
if kill -0 "$FPID" 2>/dev/null; then
	nok fio.ends "fio still running $(since) s after the kill"
	pkill -KILL -x fio
	wait "$FPID"
elif wait "$FPID"; then
	nok fio.ends "fio succeeded although its target died"
else
	ok fio.ends
	say "fio ended $(since) s after the kill: $(grep -m1 -o 'io_u error[^,]*' "$LOG" || echo 'with an error')"
fi
# qp.freed: nothing of the controller left on siw0 (the RDMA core's CQ
# pool keeps its CQs until the device goes)
now=$(rdma_res)
say "rdma res now: $now"
rdma res show qp >>"$LOG" 2>&1
if [ "$(nocq "$now")" = "$(nocq "$BASE")" ]; then
	ok qp.freed
else
	nok qp.freed "rdma res $now, before connecting $BASE"
fi
# no_d_state: no task blocked in uninterruptible sleep
d=$(ps -eo stat=,pid=,comm= | awk '$1 ~ /^D/')
if [ -z "$d" ]; then ok no_d_state; else nok no_d_state "in D state: $d"; fi
check cleanup unload_modules nvme_rdma
[ "$fails" = 0 ]
