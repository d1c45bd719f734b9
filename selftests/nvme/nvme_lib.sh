# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nvme_lib.sh - sourced by the nvme suites (nvme_rdma.sh in one VM,
# nvme_pair.sh across two): the nvmet configfs target, the nvme-cli host
# side, fio with verification; with lib/tap_out.sh and lib/ulp.sh.
#
# The caller sets: TESTS (the plan), OUT, LOG, NQN, TA (the target's
# address), HA (the host's), FSIZE (per fio job), RES_DEVS (the rdma
# devices rdma_res counts, an awk regex), CFS (default nvmet configfs).

CFS=${CFS:-/sys/kernel/config/nvmet}
TAP_PREFIX=${TAP_PREFIX:-nvme}
# shellcheck source=selftests/lib/tap_out.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/tap_out.sh"
# shellcheck source=selftests/lib/ulp.sh
. "$(dirname "${BASH_SOURCE[0]}")/../lib/ulp.sh"

# ---------------------------------------------------------------- target
port_add() {	# ID TRTYPE SVCID
	local p=$CFS/ports/$1
	mkdir "$p" || return 1
	echo "$2" >"$p/addr_trtype" && echo ipv4 >"$p/addr_adrfam" &&
		echo "$TA" >"$p/addr_traddr" && echo "$3" >"$p/addr_trsvcid" &&
		ln -s "$CFS/subsystems/$NQN" "$p/subsystems/$NQN"
}
# target_up PORT_ID:TRTYPE:SVCID...: subsystem NQN with /dev/ram0 as
# namespace 1, on each port
target_up() {
	local s=$CFS/subsystems/$NQN
	mkdir "$s" || return 1
	echo 1 >"$s/attr_allow_any_host" || return 1
	mkdir "$s/namespaces/1" || return 1
	echo /dev/ram0 >"$s/namespaces/1/device_path" || return 1
	echo 1 >"$s/namespaces/1/enable" || return 1
	local p id tr svc
	for p in "$@"; do
		IFS=: read -r id tr svc <<<"$p"
		port_add "$id" "$tr" "$svc" || return 1
	done
}
target_down() {
	local p
	for p in "$CFS"/ports/*; do
		p=${p##*/}
		[ -e "$CFS/ports/$p" ] || continue
		rm -f "$CFS/ports/$p/subsystems/$NQN" 2>/dev/null
		rmdir "$CFS/ports/$p" 2>/dev/null
	done
	echo 0 >"$CFS/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
	rmdir "$CFS/subsystems/$NQN/namespaces/1" "$CFS/subsystems/$NQN" 2>/dev/null
	[ ! -e "$CFS/subsystems/$NQN" ]
}
# ---------------------------------------------------------------- host
# discover_test: test discover, nvme discover over rdma lists our subsystem
# on an rdma port
discover_test() {
	if nvme discover -t rdma -a "$TA" -s "$RPORT" -w "$HA" >"$OUT/nvme-discover.txt" 2>&1 &&
	   grep -q "subnqn: *$NQN" "$OUT/nvme-discover.txt" &&
	   grep -q "trtype: *rdma" "$OUT/nvme-discover.txt"; then
		ok discover
	else
		nok discover "nvme discover over rdma did not list $NQN:"
		sed 's/^/#   /' "$OUT/nvme-discover.txt" | tail -n 12
	fi
}
# ctrl_of TRTYPE: the controller (nvmeN) of our subsystem on TRTYPE
ctrl_of() {
	local c
	for c in /sys/class/nvme/nvme*; do
		[ -r "$c/subsysnqn" ] || continue
		[ "$(cat "$c/subsysnqn")" = "$NQN" ] && [ "$(cat "$c/transport")" = "$1" ] &&
			{ echo "${c##*/}"; return 0; }
	done
	return 1
}
# wait_live TRTYPE: until the controller exists and is live (20 s)
wait_live() {
	local i c
	for i in $(seq 100); do
		c=$(ctrl_of "$1") && [ "$(cat "/sys/class/nvme/$c/state" 2>/dev/null)" = live ] &&
			{ CTRL=$c; return 0; }
		sleep 0.2
	done
	return 1
}
# wait_ns: DEV, the block device of our namespace (20 s): the multipath
# head in our subsystem's sysfs folder, or the controller's own namespace
wait_ns() {
	local i s b
	for i in $(seq 100); do
		for s in /sys/class/nvme-subsystem/*/ "/sys/class/nvme/$CTRL/"; do
			[ "$(cat "$s/subsysnqn" 2>/dev/null)" = "$NQN" ] || continue
			for b in "$s"nvme*n1; do
				b=${b##*/}
				case $b in *c*n1) continue ;; esac	# a path, not the head
				[ -b "/dev/$b" ] && { DEV=/dev/$b; return 0; }
			done
		done
		sleep 0.2
	done
	return 1
}
connect() {	# TRTYPE SVCID; CONNECT_OPTS: more nvme connect options
	# shellcheck disable=SC2086 # CONNECT_OPTS is words
	nvme connect -t "$1" -a "$TA" -s "$2" -w "$HA" -n "$NQN" -i 1 ${CONNECT_OPTS:-} >>"$LOG" 2>&1 || return 1
	wait_live "$1" && wait_ns
}
# gone: no controller of our subsystem left (20 s)
gone() {
	local i
	for i in $(seq 100); do
		ctrl_of rdma >/dev/null || ctrl_of tcp >/dev/null || return 0
		sleep 0.2
	done
	return 1
}
disconnect() {
	nvme disconnect -n "$NQN" >>"$LOG" 2>&1 && gone
}

# fio_job NAME RW BS QD [OPTION...]: one fio job on DEV with crc32c
# verification; its JSON in OUT/fio-NAME.json, or OUT/fio-NAME-$TAG.json
# when TAG is set (a verify_only rerun of the same job)
fio_job() {
	local name=$1 rw=$2 bs=$3 qd=$4 json=$OUT/fio-$1${TAG:+-$TAG}.json; shift 4
	fio_run "$json" --name="$name" --filename="$DEV" --direct=1 --ioengine=libaio \
		--rw="$rw" --bs="$bs" --iodepth="$qd" --size="$FSIZE" \
		--verify=crc32c --do_verify=1 --verify_fatal=1 --randrepeat=1 "$@"
}
