# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iser_lib.sh - sourced by the iSER suites (iser: one VM, iser_pair: two):
# the iWARP port mapper, the LIO target (targetcli-fb, ib_isert) and the
# open-iscsi initiator (iscsid, iscsiadm, ib_iser), the checks and the fio
# jobs. The caller sources lib/tap_out.sh and sets TA (the portal's
# address), HA (the initiator's), IQN, OUT, LOG and FSIZE.
#
#   swap_iw_cm KO|stock  iw_cm.ko replaced by KO (build/rdma_cm/iw_cm.ko:
#                        patches/linux-cma 0001, the port mapper's
#                        registration race) or Debian's back; before any
#                        module that uses rdma_cm is loaded
#   portmap_up [on]      iwpmd running (UDP 3935); with "on", siw's
#                        port_map parameter set (for devices added after)
#   portmap_down         iwpmd stopped, port_map back to 0
#   target_up, target_down
#                        brd ram0 as a block backstore, the target, its
#                        portal $TA:3260 with iSER enabled; all of it gone
#   initiator_up         iscsid; discovery_test (TAP test "discovery")
#   login, logout        the session over the iser interface (DEV: its disk)
#   mapped_port          the portal's TCP listener keeps $TA:3260, the
#                        session's connection goes to another port
#   fio_job NAME RW BS QD [OPT...]
#                        fio on DEV with --verify=crc32c, JSON in OUT

# shellcheck source=selftests/lib/cm_swap.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/cm_swap.sh"

TARGET_MODS=(brd target_core_mod target_core_iblock iscsi_target_mod ib_isert)
TARGET_UNLOAD=(ib_isert iscsi_target_mod target_core_iblock target_core_file
	       target_core_pscsi target_core_user target_core_mod brd)
INITIATOR_MODS=(ib_iser sd_mod)
ISER_TOOLS="targetcli iscsid iscsiadm dbus-daemon fio iwpmd rping"

# Debian's iw_cm oopses when iwpmd answers its registration request
# before the request records the device data (iwpm_register_pid(); the
# first rdma_listen() or rdma_connect() after iwpmd started): one of six
# runs of suite iser did under TCG. The suites run ours, patched.
swap_iw_cm() { swap_cm iw_cm "$1"; }

# Debian's iwpmd daemonizes; iw_cm asks it over netlink, and a connecting
# peer's iwpmd asks this one (UDP 3935) for the port it mapped
portmap_up() {
	local i
	if [ "${1:-}" = on ]; then
		[ -w /sys/module/siw/parameters/port_map ] || { say "siw has no port_map parameter"; return 1; }
		echo 1 >/sys/module/siw/parameters/port_map || return 1
	fi
	${PIN:-} iwpmd || return 1
	for i in $(seq 50); do
		pgrep -x iwpmd >/dev/null && ss -lun | grep -q ':3935 ' && return 0
		sleep 0.1
	done
	say "iwpmd is not listening on UDP port 3935"
	return 1
}
portmap_down() {
	pkill -x iwpmd
	[ ! -w /sys/module/siw/parameters/port_map ] || echo 0 >/sys/module/siw/parameters/port_map
}

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
	if ! tcli "$t/portals/$TA:3260" enable_iser boolean=true; then
		dmesg | grep -q 'isert_setup_id: rdma_listen() failed: -98' &&
			say "ib_isert: rdma_listen() failed with EADDRINUSE: the portal's iSCSI/TCP listener holds $TA:3260"
		return 1
	fi
	tcli ls
	ss -ltn
}
# the portal's iSER listener again (ib_isert drops it when its device goes)
iser_reenable() {
	local p=/iscsi/$IQN/tpg1/portals/$TA:3260
	tcli "$p" enable_iser boolean=false
	tcli "$p" enable_iser boolean=true
}
target_down() {
	targetcli clearconfig confirm=True || return 1
	[ -z "$DBUS_PID" ] || kill "$DBUS_PID"
	DBUS_PID=
	# the fabric's configfs group holds iscsi_target_mod
	[ ! -d /sys/kernel/config/target/iscsi ] || rmdir /sys/kernel/config/target/iscsi
}

initiator_up() {
	mkdir -p /run/lock/iscsi
	iscsid && sleep 1
}
discovery_test() {
	if iscsiadm -m discovery -t st -p "$TA:3260" -I iser >"$OUT/iser-discovery.txt" 2>&1 &&
	   grep -q "$IQN" "$OUT/iser-discovery.txt"; then
		ok discovery
	else
		nok discovery "iscsiadm discovery over iser did not list $IQN:"
		sed 's/^/#   /' "$OUT/iser-discovery.txt" | tail -n 8
	fi
}
DEV=
# open-iscsi gives a login 15 s (node.conn[0].timeo.login_timeout); the
# first one of a boot on the debug kernel took longer (connection timed
# out, the next one logged in): times SIWX_SUITE_TIMEOUT_SCALE
login() {
	local i
	iscsiadm -m node -T "$IQN" -p "$TA:3260" -I iser -o update \
		-n 'node.conn[0].timeo.login_timeout' -v $((15 * ${SIWX_SUITE_TIMEOUT_SCALE:-1})) || return 1
	iscsiadm -m node -T "$IQN" -p "$TA:3260" -I iser --login || return 1
	for i in $(seq 100); do
		DEV=$(iscsiadm -m session -P 3 2>/dev/null | sed -n 's/.*Attached scsi disk \([a-z]*\).*/\1/p' | head -n 1)
		[ -n "$DEV" ] && [ -b "/dev/$DEV" ] && { DEV=/dev/$DEV; break; }
		sleep 0.2
	done
	[ -b "$DEV" ] || { say "no disk attached"; return 1; }
	say "session: $(iscsiadm -m session 2>&1 | head -n 1), disk $DEV"
	iscsiadm -m session -P 1 | tee -a "$OUT/iser-session.txt" | grep -q "iface.transport_name: iser\|Iface Transport: iser"
}
# logged in again (by open-iscsi's recovery) within 60 s
logged_in_again() {
	local i
	for i in $(seq 120); do
		if iscsiadm -m session -P 1 2>/dev/null | grep -q "iSCSI Session State: LOGGED_IN"; then
			say "session logged in again after $((i / 2)) s"
			return 0
		fi
		sleep 0.5
	done
	iscsiadm -m session -P 1
	return 1
}
logout() {
	iscsiadm -m node -T "$IQN" -p "$TA:3260" -I iser --logout || return 1
	! iscsiadm -m session >/dev/null 2>&1
}
# mapped_port [LISTENER]: LISTENER (default yes: this host has the target)
# checks the portal's TCP listener on $TA:3260 too
mapped_port() {
	local conns
	if [ "${1:-yes}" = yes ]; then
		ss -ltn | grep -q " $TA:3260 " || { say "no TCP listener on $TA:3260"; return 1; }
	fi
	conns=$(ss -tnH state established "( src $HA )" | awk -v ta="$TA" '$4 ~ "^"ta":" { print $4 }')
	say "iSER connection(s) to: ${conns:-none}"
	[ -n "$conns" ] || return 1
	! echo "$conns" | grep -q ":3260\$"
}
# fio_job NAME RW BS QD [OPT...]: on DEV, verified (crc32c)
fio_job() {
	local name=$1 rw=$2 bs=$3 qd=$4; shift 4
	[ -b "$DEV" ] || return 1
	fio_run "$OUT/fio-iser-$name.json" --name="$name" --filename="$DEV" --direct=1 \
		--ioengine=libaio --rw="$rw" --bs="$bs" --iodepth="$qd" --size="$FSIZE" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 "$@"
}
