#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nvme_rdma.sh - suite "nvme": NVMe over Fabrics over siwx in one VM,
# Debian's own nvmet-rdma (target), nvme-rdma (host), nvme-cli and fio.
# TAP output.
#
# Kernel ULPs open their rdma_cm ids in the initial network namespace, so
# the two ends get a veth pair of their own (vn0 192.168.79.1 with siwn0:
# the target; vn1 192.168.79.2 with siwn1: the host) and policy routing
# sends what is for the other address out of the veth instead of over lo
# (as the bench does for rxe). The suite checks that the queues' QPs sit
# on siwn0 and siwn1.
#
# The target exports a brd RAM disk (64 MiB) as namespace 1 of one
# subsystem, on an rdma port (4420) and, for the cross-check, a tcp port
# (4421) on the same path. The host discovers, connects, runs fio with
# --verify=crc32c (random and sequential, queue depths 1 to 32), resets
# the controller and verifies the data again, reads the data written over
# RDMA back over NVMe/TCP, disconnects, and connects and disconnects
# NVME_CYCLES times, the RDMA resources (rdma res) back to where they
# were after each. Last, rmmod siw while a controller is connected: the
# RDMA core removes the device from its clients (nvme-rdma deletes the
# controller, nvmet-rdma its queues); the module goes, nothing hangs or
# warns, and siw is loaded again with its links for the suites after this.
# guest.sh and tools/vm/run check the kernel log of the whole boot.
#
# Environment: SIWX_RESULTS (logs, fio JSON), SIWX_MODULE (reloaded after
# the rmmod test), NVME_CYCLES (50), NVME_FIO_SIZE (4M per fio job).

set -u
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
CYCLES=${NVME_CYCLES:-50}
FSIZE=${NVME_FIO_SIZE:-4M}
NQN=nqn.2026-12.org.siwx:nvme-test
TA=192.168.79.1 HA=192.168.79.2
RPORT=4420 TPORT=4421
LOG=$OUT/nvme.log

TESTS=(
	setup.modules setup.network setup.target discover connect path.veth
	fio.randwrite_4k_qd1 fio.randwrite_4k_qd8 fio.randwrite_4k_qd32
	fio.randrw_4k_qd16 fio.write_128k_qd1 fio.write_128k_qd32
	reset.verify disconnect tcp.reads_rdma_data cycles leak.rdma_res
	rmmod_siw_connected cleanup
)
echo "TAP version 13"
echo "1..${#TESTS[@]}"
RES_DEVS='siwn0|siwn1'
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=selftests/nvme/nvme_lib.sh
. "$HERE/nvme_lib.sh"
: >"$LOG"

# ---------------------------------------------------------------- setup
if ! command -v nvme >/dev/null || ! command -v fio >/dev/null; then
	skip_rest "nvme-cli or fio missing (make deps)"
fi
check setup.modules load_modules brd nvmet nvmet_rdma nvmet_tcp nvme_fabrics nvme_rdma nvme_tcp
[ "$fails" = 0 ] || skip_rest "modules missing"

check setup.network net_up
[ "$fails" = 0 ] || skip_rest "network setup failed"

check setup.target target_up "1:rdma:$RPORT" "2:tcp:$TPORT"
[ "$fails" = 0 ] || { target_down; net_down; skip_rest "target setup failed"; }

BASE=$(rdma_res)
say "rdma res with the target listening: $BASE"

discover_test

CTRL= DEV=
if connect rdma "$RPORT"; then
	say "connected over rdma: $CTRL, namespace $DEV"
	ok connect
else
	nok connect "nvme connect -t rdma failed or no live controller/namespace (see $LOG)"
	target_down; net_down; skip_rest "not connected"
fi

# path.veth: the admin and I/O queue QPs on siwn1 (host) and siwn0 (target)
MIN=2 path_test "the controller"

for spec in "randwrite_4k_qd1 randwrite 4k 1" "randwrite_4k_qd8 randwrite 4k 8" \
	    "randwrite_4k_qd32 randwrite 4k 32" "randrw_4k_qd16 randrw 4k 16" \
	    "write_128k_qd1 write 128k 1" "write_128k_qd32 write 128k 32"; do
	set -- $spec
	if fio_job "$@"; then
		ok "fio.$1"
		say "$(tail -n 1 "$LOG")"
	else
		nok "fio.$1" "fio $* failed or did not verify (see $OUT/fio-$1.json, $LOG)"
	fi
done

# reset.verify: nvme reset, live again, the last job's data verifies
verify_last() {	# the data of fio.write_128k_qd32, read back and checked
	TAG=verify-$1 fio_job write_128k_qd32 write 128k 32 --verify_only=1
}
reset_verify() {
	nvme reset "/dev/$CTRL" >>"$LOG" 2>&1 || return 1
	sleep 1
	wait_live rdma && wait_ns && verify_last reset
}
check reset.verify reset_verify
disconnect_first() { disconnect && res_pooled; }
POOLED=
check disconnect disconnect_first

# tcp.reads_rdma_data: what was written over RDMA reads the same over
# NVMe/TCP from the same RAM disk
tcp_reads() {
	connect tcp "$TPORT" || return 1
	say "connected over tcp: $CTRL, namespace $DEV"
	local rc=0
	verify_last tcp || rc=1
	disconnect || rc=1
	return $rc
}
check tcp.reads_rdma_data tcp_reads

# cycles: connect and disconnect; the rdma resources back to POOLED each time
connect_rdma() { connect rdma "$RPORT"; }
check cycles res_cycles "$CYCLES" connect_rdma disconnect
res_leak_test

# rmmod_siw_connected: kernel ULPs hold no reference on the module; the
# RDMA core unregisters each device from its clients instead: nvmet-rdma
# drops its queues, nvme-rdma deletes the controller. When the target's
# device goes first, the host's shutdown command is never answered and
# waits for the admin timeout (60 s by default, nvme-rdma's own
# behaviour on any RDMA device; read at each command): 5 s meanwhile.
AT=/sys/module/nvme_core/parameters/admin_timeout
rmmod_connected() {
	local at c rc=0 t0
	at=$(cat "$AT")
	echo 5 >"$AT"
	connect rdma "$RPORT" || { echo "$at" >"$AT"; return 1; }
	c=$CTRL
	t0=$(date +%s)
	timeout 120 rmmod siw >>"$LOG" 2>&1 || { say "rmmod siw failed with a controller connected"; rc=1; }
	say "rmmod siw with $c connected: $(( $(date +%s) - t0 )) s"
	echo "$at" >"$AT"
	if [ -d /sys/module/siw ]; then
		say "siw still loaded"; rc=1
	fi
	gone || { say "controller $c still there after rmmod siw"; rc=1; }
	# back for the suites after this one and for the harness's teardown
	siw_back || rc=1
	return $rc
}
check rmmod_siw_connected rmmod_connected

cleanup() {
	local rc=0
	nvme disconnect -n "$NQN" >/dev/null 2>&1
	target_down || rc=1
	net_down
	unload_modules nvme_rdma nvmet_rdma nvme_tcp nvmet_tcp brd || rc=1
	return $rc
}
check cleanup cleanup
[ "$fails" = 0 ]
