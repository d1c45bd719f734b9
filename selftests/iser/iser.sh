#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iser.sh - suite "iser": iSCSI Extensions for RDMA over siwx in one VM:
# an LIO target (targetcli-fb, ib_isert) exporting a brd RAM disk on
# 192.168.79.1:3260 (vn0, siwn0) and Debian's open-iscsi initiator
# (iscsid, iscsiadm, ib_iser) on 192.168.79.2 (vn1, siwn1), policy routing
# in between (selftests/lib/ulp.sh). TAP output.
#
# Tests: the iWARP port mapper, the target with its portal's iSER
# enabled, discovery, login over the iser interface, the session's
# transport, its TCP connection on the mapped port and the QPs on the two
# siwx devices, fio with --verify=crc32c (random 4 KiB and sequential
# 128 KiB writes, each read back), rmmod siw with the session logged in,
# siw back and the session logged in again by open-iscsi's recovery, the
# data read back over it, logout, the teardown.
#
# LIO adds iSER to a network portal that already listens for iSCSI/TCP on
# the same address and port, and an iWARP listener is a TCP listener in
# the same port space. siwx's module parameter port_map lets Debian's
# iwpmd map the port of ib_isert's listener to one it reserves, siw binds
# over the reservation, and the initiator's IWCM learns the mapped port
# from iwpmd (Documentation/ulps.md). Without it, rdma_listen() fails with
# EADDRINUSE ("Cannot change iser").
#
# Usage (guest.sh): iser.sh IW_CM_KO (build/rdma_cm/iw_cm.ko, with the
# port mapper's registration fix; Debian's is back when the suite ends)
# Environment: SIWX_RESULTS (logs), ISER_FIO_SIZE (8M), ISER_PORTMAP_CYCLES
# (10; 2 on the debug kernel), ISER_IW_CM (instead of IW_CM_KO; "stock": Debian's iw_cm, to show
# the registration race).

set -u
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
FSIZE=${ISER_FIO_SIZE:-8M}
TA=192.168.79.1 HA=192.168.79.2
IQN=iqn.2026-12.org.siwx:iser-test
LOG=$OUT/iser.log
RES_DEVS='siwn0|siwn1'
TAP_PREFIX=iser
HERE=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin

TESTS=(
	setup.iw_cm setup.modules setup.portmap setup.network portmap.restart_cycles
	setup.target discovery login
	path.veth path.mapped_port fio.randwrite_4k_qd16 fio.write_128k_qd4
	rmmod_siw_logged_in relogin fio.verify_after_relogin logout cleanup
	stock_iw_cm
)
echo "TAP version 13"
echo "1..${#TESTS[@]}"
# shellcheck source=selftests/lib/tap_out.sh
. "$HERE/../lib/tap_out.sh"
# shellcheck source=selftests/lib/ulp.sh
. "$HERE/../lib/ulp.sh"
: >"$LOG"

# shellcheck source=selftests/iser/iser_lib.sh
. "$HERE/iser_lib.sh"

for t in $ISER_TOOLS; do
	command -v "$t" >/dev/null || skip_rest "$t missing (make deps: targetcli-fb, open-iscsi, fio, rdma-core, rdmacm-utils)"
done
IW_CM_KO=${ISER_IW_CM:-${1:-}}
check setup.iw_cm swap_iw_cm "${IW_CM_KO:?usage: iser.sh IW_CM_KO}"
[ "$fails" = 0 ] || skip_rest "the patched iw_cm did not load"
check setup.modules load_modules "${TARGET_MODS[@]}" "${INITIATOR_MODS[@]}"
[ "$fails" = 0 ] || skip_rest "modules missing"
# the suites after this one in the same VM must not meet a port mapper
trap portmap_down EXIT
check setup.portmap portmap_up on
[ "$fails" = 0 ] || skip_rest "no port mapping"
check setup.network net_up
[ "$fails" = 0 ] || skip_rest "network setup failed"

# iwpmd restarted ISER_PORTMAP_CYCLES times, an rdma_listen() (Debian's
# rping) after each: the first mapping after a start registers iw_cm with
# iwpmd, the request that Debian's iw_cm races with iwpmd's answer (a NULL
# pointer dereference in iwpm_register_pid_cb()). iwpmd and rping share
# CPU 0, so that iwpmd, woken by the request, may run before the thread
# that sent it goes on. Each listener must get a mapped port.
restart_cycles() {
	local i mapped=0 pid PIN="taskset -c 0" cycles
	# 10; 2 on the debug kernel (SIWX_SUITE_TIMEOUT_SCALE), where a
	# restart and its listen took 160 s
	cycles=${ISER_PORTMAP_CYCLES:-$(( ${SIWX_SUITE_TIMEOUT_SCALE:-1} > 1 ? 2 : 10 ))}
	for i in $(seq "$cycles"); do
		pkill -x iwpmd
		for _ in $(seq 50); do pgrep -x iwpmd >/dev/null || break; sleep 0.1; done
		portmap_up on || return 1
		$PIN rping -s -a "$TA" -p 7999 >/dev/null 2>&1 &
		pid=$!
		for _ in $(seq 50); do
			if ss -ltnH | awk -v ta="$TA" '$4 ~ "^"ta":" && $4 !~ ":(3260|7999)$"' | grep -q .; then
				mapped=$((mapped + 1))
				break
			fi
			sleep 0.1
		done
		kill "$pid"
		wait "$pid" 2>/dev/null
	done
	say "$mapped of $i listeners on a mapped port, iwpmd restarted before each"
	[ "$mapped" = "$i" ]
}
check portmap.restart_cycles restart_cycles
check setup.target target_up ||
	{ target_down >>"$LOG" 2>&1; net_down; skip_rest "target setup failed"; }

initiator_up >>"$LOG" 2>&1
discovery_test
check login login
path_test "the session"
check path.mapped_port mapped_port
check fio.randwrite_4k_qd16 fio_job randwrite_4k_qd16 randwrite 4k 16
check fio.write_128k_qd4 fio_job write_128k_qd4 write 128k 4

# rmmod siw with the session logged in: kernel ULPs hold no reference on
# the module, the RDMA core removes each device from its clients (ib_iser
# fails the connection, ib_isert drops its listener). Then siw back, the
# portal's iSER listener re-enabled, and open-iscsi's recovery logs the
# session in again by itself.
rmmod_logged_in() {
	local t0
	t0=$(date +%s)
	timeout 120 rmmod siw || { say "rmmod siw failed with the session logged in"; return 1; }
	say "rmmod siw with the session logged in: $(( $(date +%s) - t0 )) s"
	[ ! -d /sys/module/siw ] || { say "siw still loaded"; return 1; }
	iscsiadm -m session -P 1
	siw_back || return 1
	echo 1 >/sys/module/siw/parameters/port_map || return 1
	rdma link add siwn0 type siw netdev vn0 || return 1
	rdma link add siwn1 type siw netdev vn1
}
check rmmod_siw_logged_in rmmod_logged_in
relogin() { iser_reenable && logged_in_again; }
check relogin relogin
# what the 128 KiB job wrote, read back over the new connection
check fio.verify_after_relogin fio_job write_128k_qd4 write 128k 4 --verify_only=1
check logout logout
cleanup() {
	local rc=0
	iscsiadm -m node -o delete >/dev/null 2>&1
	pkill -x iscsid
	target_down || rc=1
	net_down
	# after the listener is gone: iw_cm tells iwpmd to drop its mapping
	portmap_down
	sleep 1
	# targetcli loads every backstore module it knows
	unload_modules "${INITIATOR_MODS[@]}" "${TARGET_UNLOAD[@]}" || rc=1
	return $rc
}
check cleanup cleanup
check stock_iw_cm swap_iw_cm stock
[ "$fails" = 0 ]
