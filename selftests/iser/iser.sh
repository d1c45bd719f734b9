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
# 128 KiB writes, each read back), logout, the teardown.
#
# LIO adds iSER to a network portal that already listens for iSCSI/TCP on
# the same address and port, and an iWARP listener is a TCP listener in
# the same port space. siwx's module parameter port_map lets Debian's
# iwpmd map the port of ib_isert's listener to one it reserves, siw binds
# over the reservation, and the initiator's IWCM learns the mapped port
# from iwpmd (Documentation/ulps.md). Without it, rdma_listen() fails with
# EADDRINUSE ("Cannot change iser").
#
# Environment: SIWX_RESULTS (logs), ISER_FIO_SIZE (8M).

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
	setup.modules setup.portmap setup.network setup.target discovery login
	path.veth path.mapped_port fio.randwrite_4k_qd16 fio.write_128k_qd4
	logout cleanup
)
echo "TAP version 13"
echo "1..${#TESTS[@]}"
# shellcheck source=selftests/lib/tap_out.sh
. "$HERE/../lib/tap_out.sh"
# shellcheck source=selftests/lib/ulp.sh
. "$HERE/../lib/ulp.sh"
: >"$LOG"

for t in targetcli iscsid iscsiadm dbus-daemon fio iwpmd; do
	command -v "$t" >/dev/null || skip_rest "$t missing (make deps: targetcli-fb, open-iscsi, fio, rdma-core)"
done
MODS=(brd target_core_mod target_core_iblock iscsi_target_mod ib_isert ib_iser sd_mod)
check setup.modules load_modules "${MODS[@]}"
[ "$fails" = 0 ] || skip_rest "modules missing"
# Debian's iwpmd (it daemonizes; iw_cm asks it over netlink), and the
# siwx devices added below take part in port mapping
portmap_up() {
	[ -w /sys/module/siw/parameters/port_map ] || { echo "siw has no port_map parameter"; return 1; }
	echo 1 >/sys/module/siw/parameters/port_map || return 1
	iwpmd || return 1
	local i
	for i in $(seq 50); do
		pgrep -x iwpmd >/dev/null && ss -lun | grep -q ':3935 ' && return 0
		sleep 0.1
	done
	echo "iwpmd is not listening on UDP port 3935"
	return 1
}
# the suites after this one in the same VM must not meet a port mapper
portmap_down() {
	pkill -x iwpmd
	[ ! -w /sys/module/siw/parameters/port_map ] || echo 0 >/sys/module/siw/parameters/port_map
}
trap portmap_down EXIT
check setup.portmap portmap_up
[ "$fails" = 0 ] || skip_rest "no port mapping"
check setup.network net_up
[ "$fails" = 0 ] || skip_rest "network setup failed"

# targetcli-fb 2.1.53 asks the D-Bus system bus for tcmu-runner's user
# backstores and fails without one: a private bus, only for it
DBUS_PID=
dbus_up() {
	local sock=/run/siwx-iser-dbus.sock
	DBUS_PID=$(dbus-daemon --session --address="unix:path=$sock" --fork --print-pid) || return 1
	export DBUS_SYSTEM_BUS_ADDRESS=unix:path=$sock
}
tcli() { echo "targetcli $*"; targetcli "$@"; }
target_up() {
	local t=/iscsi/$IQN/tpg1
	dbus_up || return 1
	tcli set global auto_save_on_exit=false auto_add_default_portal=false || return 1
	tcli /backstores/block create name=ram0 dev=/dev/ram0 || return 1
	tcli /iscsi create "$IQN" || return 1
	tcli "$t/luns" create /backstores/block/ram0 || return 1
	tcli "$t" set attribute authentication=0 demo_mode_write_protect=0 \
		generate_node_acls=1 cache_dynamic_acls=1 || return 1
	tcli "$t/portals" create "$TA" 3260 || return 1
	tcli "$t/portals/$TA:3260" enable_iser boolean=true || return 1
	tcli ls
}
target_down() {
	targetcli clearconfig confirm=True || return 1
	# the fabric's configfs group holds iscsi_target_mod
	[ ! -d /sys/kernel/config/target/iscsi ] || rmdir /sys/kernel/config/target/iscsi
}
if target_up >>"$LOG" 2>&1; then
	ok setup.target
elif dmesg | grep -q 'isert_setup_id: rdma_listen() failed: -98'; then
	nok setup.target "ib_isert: rdma_listen() failed with EADDRINUSE: the portal's iSCSI/TCP listener holds $TA:3260 (see $LOG)"
else
	nok setup.target "target_up failed (see $LOG)"
fi
[ "$fails" = 0 ] || { target_down >>"$LOG" 2>&1; net_down; skip_rest "target setup failed"; }

mkdir -p /run/lock/iscsi
iscsid >>"$LOG" 2>&1
sleep 1
if iscsiadm -m discovery -t st -p "$TA:3260" -I iser >"$OUT/iser-discovery.txt" 2>&1 &&
   grep -q "$IQN" "$OUT/iser-discovery.txt"; then
	ok discovery
else
	nok discovery "iscsiadm discovery over iser did not list $IQN:"
	sed 's/^/#   /' "$OUT/iser-discovery.txt" | tail -n 8
fi

DEV=
login() {
	iscsiadm -m node -T "$IQN" -p "$TA:3260" -I iser --login || return 1
	local i
	for i in $(seq 100); do
		DEV=$(iscsiadm -m session -P 3 2>/dev/null | sed -n 's/.*Attached scsi disk \([a-z]*\).*/\1/p' | head -n 1)
		[ -n "$DEV" ] && [ -b "/dev/$DEV" ] && { DEV=/dev/$DEV; break; }
		sleep 0.2
	done
	[ -b "$DEV" ] || return 1
	iscsiadm -m session -P 1 | tee -a "$OUT/iser-session.txt" | grep -q "iface.transport_name: iser\|Iface Transport: iser"
}
check login login
say "session: $(iscsiadm -m session 2>&1 | head -n 1), disk ${DEV:-none}"

path_test "the session"

# The iSER connection: from the initiator to the port iwpmd mapped the
# portal's to, while the portal's iSCSI/TCP listener keeps $TA:3260
mapped_port() {
	local conns
	ss -ltn | tee -a "$LOG" | grep -q " $TA:3260 " || { echo "no TCP listener on $TA:3260"; return 1; }
	conns=$(ss -tnH state established "( src $HA )" | tee -a "$LOG" | awk -v ta="$TA" '$4 ~ "^"ta":" { print $4 }')
	say "iSER connection(s) to: ${conns:-none}"
	[ -n "$conns" ] || return 1
	! echo "$conns" | grep -q ":3260\$"
}
check path.mapped_port mapped_port

fio_dev() {
	[ -b "$DEV" ] || return 1
	fio_run "$OUT/fio-iser.json" --name=iser --filename="$DEV" --direct=1 --ioengine=libaio \
		--rw=randwrite --bs=4k --iodepth=16 --size="$FSIZE" \
		--verify=crc32c --do_verify=1 --verify_fatal=1
}
check fio.randwrite_4k_qd16 fio_dev
fio_seq() {
	[ -b "$DEV" ] || return 1
	fio_run "$OUT/fio-iser-seq.json" --name=iser-seq --filename="$DEV" --direct=1 --ioengine=libaio \
		--rw=write --bs=128k --iodepth=4 --size="$FSIZE" \
		--verify=crc32c --do_verify=1 --verify_fatal=1
}
check fio.write_128k_qd4 fio_seq
logout() {
	iscsiadm -m node -T "$IQN" -p "$TA:3260" -I iser --logout || return 1
	! iscsiadm -m session >/dev/null 2>&1
}
check logout logout
cleanup() {
	local rc=0
	iscsiadm -m node -o delete >/dev/null 2>&1
	pkill -x iscsid
	target_down || rc=1
	[ -z "$DBUS_PID" ] || kill "$DBUS_PID"
	net_down
	# after the listener is gone: iw_cm tells iwpmd to drop its mapping
	portmap_down
	sleep 1
	# targetcli loads every backstore module it knows
	unload_modules ib_iser ib_isert iscsi_target_mod target_core_iblock \
		target_core_file target_core_pscsi target_core_user target_core_mod brd || rc=1
	return $rc
}
check cleanup cleanup
[ "$fails" = 0 ]
