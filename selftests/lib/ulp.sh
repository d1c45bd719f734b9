# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ulp.sh - sourced by the kernel ULP suites (nvme, nfs): two siwx devices
# in one VM whose traffic really crosses a veth pair, the RDMA resource
# counts, module loading.
#
# Kernel ULPs open their rdma_cm ids in the initial network namespace, so
# both ends have local addresses there: vn0 $TA with siwn0 (the server),
# vn1 $HA with siwn1 (the client). Without help the kernel would route
# between them over lo and rdma_cm would put both ends on one device;
# policy routing looks up "local" only for what came in on the veth pair
# and sends what is for the other address out of it (as the bench does
# for rxe). The caller sets TA and HA (default 192.168.79.1 and .2) and
# LOG.
#
#   net_up              the pair, the rules, siwn0 and siwn1
#   net_down            all of it undone (the "local" rule back at 0)
#   routed_pair_up, routed_pair_down
#                       the same for any pair of names and addresses
#                       (IPv6 too), without RDMA devices
#   rdma_res            "DEV.pd=N DEV.cq=N ..." of the devices RES_DEVS
#                       (an awk regex) matches
#   nocq LINE           that line without the CQ counts
#   siw_back            siw and the harness's siw0, siw1 back after rmmod
#   pair_a_wait READY DONE_SECS
#                       a pair suite's VM a: b's hello, b's done, no leak
#   load_modules M...   modprobe each (brd as a 64 MiB /dev/ram0)
#   unload_modules M... rmmod each one that is loaded
#   res_pooled, res_cycles N UP DOWN, res_leak_test, path_test WHAT
#                       the resource and path checks (TAP, lib/tap_out.sh)
#   fio_run JSON OPT... fio, its report checked by lib/fio_check.py

TA=${TA:-192.168.79.1}
HA=${HA:-192.168.79.2}

# routed_pair_up DEV0 DEV1 ADDR0 ADDR1 [ADDR0_6 ADDR1_6]: a veth pair
# whose traffic between its two local addresses crosses it (the rules
# above, tables 201 and 202; for IPv6 too when its addresses are given)
routed_pair_up() {
	local f
	ip -batch - <<-EOF || return 1
	link add $1 type veth peer name $2
	addr add $3/24 dev $1
	addr add $4/24 dev $2
	link set $1 up
	link set $2 up
	EOF
	if [ -n "${5:-}" ]; then
		ip addr add "$5/64" dev "$1" nodad &&
			ip addr add "$6/64" dev "$2" nodad || return 1
	fi
	for f in all $1 $2; do
		echo 0 >/proc/sys/net/ipv4/conf/$f/rp_filter
		echo 1 >/proc/sys/net/ipv4/conf/$f/accept_local
	done
	pair_rules -4 "$@" || return 1
	[ -z "${5:-}" ] || pair_rules -6 "$1" "$2" "$5" "$6"
}
# pair_rules -4|-6 DEV0 DEV1 ADDR0 ADDR1: both addresses are local; look
# up "local" only for what came in on the pair; what is for the other
# address goes out of it
pair_rules() {
	ip "$1" -batch - <<-EOF
	rule add pref 10 iif $2 lookup local
	rule add pref 11 iif $3 lookup local
	route add $4 dev $3 src $5 table 201
	route add $5 dev $2 src $4 table 202
	rule add pref 20 to $4 lookup 201
	rule add pref 21 to $5 lookup 202
	rule add pref 100 lookup local
	rule del pref 0
	EOF
}
routed_pair_down() {	# DEV0: the pair and its rules gone ("local" back at 0)
	local f
	for f in -4 -6; do
		ip "$f" -force -batch - >/dev/null 2>&1 <<-EOF
		rule add pref 0 lookup local
		rule del pref 10
		rule del pref 11
		rule del pref 20
		rule del pref 21
		rule del pref 100
		EOF
	done
	ip link del "$1" 2>/dev/null
}

net_up() {
	routed_pair_up vn0 vn1 "$TA" "$HA" || return 1
	rdma link add siwn0 type siw netdev vn0 || return 1
	rdma link add siwn1 type siw netdev vn1 || return 1
	ip route get "$TA" from "$HA" | grep -q 'dev vn1' || return 1
	{ ip rule; ip route get "$TA" from "$HA"; rdma link show; } >>"$LOG"
}
net_down() {
	rdma link delete siwn1 2>/dev/null
	rdma link delete siwn0 2>/dev/null
	routed_pair_down vn0
}

# siw_back: after a test's rmmod siw, the module and the harness's
# devices siw0 and siw1 back, for the suites after this one and for the
# harness's teardown (siw1 in its namespace when the VM was booted with
# --netns)
siw_back() {
	local ns=()
	if [ ! -d /sys/module/siw ]; then
		insmod "${SIWX_MODULE:?}" || return 1
	fi
	rdma link show siw0 >/dev/null 2>&1 ||
		rdma link add siw0 type siw netdev "${SIWX_NETDEV0:-veth0}" || return 1
	[ -z "${SIWX_NETNS1:-}" ] || ns=(ip netns exec "$SIWX_NETNS1")
	rdma link show siw1 >/dev/null 2>&1 ||
		"${ns[@]}" rdma link add siw1 type siw netdev "${SIWX_NETDEV1:-veth1}"
}

# pair_a_wait READY DONE_SECS: VM a of a pair suite (TAP tests peer.ready,
# peer.done, leak.rdma_res): READY to b's hello on $TA:$SYNC
# (selftests/nvme/pair_sync.py, the command in the array PSYNC), then b's
# "done ..." on $SYNC + 1 within DONE_SECS, then the RDMA resources back
# at $BASE. Both waits times SIWX_SUITE_TIMEOUT_SCALE (6 on the debug
# kernel).
pair_a_wait() {
	local scale=${SIWX_SUITE_TIMEOUT_SCALE:-1} line now
	if line=$("${PSYNC[@]}" serve "$TA" "$SYNC" "$1" $((240 * scale)) 2>>"$LOG") &&
	   [ "$line" = hello ]; then
		ok peer.ready
	else
		nok peer.ready "b never came (${line:-nothing})"
	fi
	if line=$("${PSYNC[@]}" serve "$TA" $((SYNC + 1)) bye $(($2 * scale)) 2>>"$LOG") &&
	   [ "${line%% *}" = "done" ]; then
		say "b: $line"
		ok peer.done
	else
		nok peer.done "no 'done' from b (${line:-nothing})"
	fi
	now=$(rdma_res)
	if [ "$(nocq "$now")" = "$(nocq "$BASE")" ]; then
		ok leak.rdma_res
	else
		nok leak.rdma_res "rdma res after b is done: $now; before: $BASE"
	fi
}

# rdma_res: "pd cq qp cm_id mr" of the devices RES_DEVS matches
rdma_res() {
	rdma res show | awk -v re="^(${RES_DEVS}):\$" '$2 ~ re {
		for (i = 3; i < NF; i += 2) if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s.%s=%s ", $2, $i, $(i + 1)
	}'
}
# after the first controller, the RDMA core's CQ pool keeps its CQs until
# the device goes: nocq drops the CQ counts from an rdma_res line
nocq() { echo "$1" | tr ' ' '\n' | grep -v '\.cq=' | tr '\n' ' '; }

# load_modules MODULE...: brd as a 64 MiB RAM disk (/dev/ram0); with
# nvmet, configfs mounted
load_modules() {
	local m
	for m in "$@"; do
		case $m in
		brd) modprobe brd rd_nr=1 rd_size=65536 && [ -b /dev/ram0 ] || return 1 ;;
		*) modprobe "$m" || return 1 ;;
		esac
	done
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	case " $* " in *" nvmet "*) [ -d "$CFS" ] ;; esac
}
unload_modules() {	# MODULE...: each one that is loaded
	local m rc=0
	for m in "$@"; do
		[ ! -d "/sys/module/$m" ] || rmmod "$m" >>"$LOG" 2>&1 || rc=1
	done
	return $rc
}

# ---------------------------------------------------------------- checks
# The RDMA core's CQ pool keeps its CQs (two a device here) from a ULP's
# first connection until the device goes. res_pooled takes the counts
# after the first teardown as POOLED; only the CQs may differ from BASE,
# the counts before the first connection.
res_pooled() {
	POOLED=$(rdma_res)
	say "rdma res after the first teardown: $POOLED"
	[ "$(nocq "$POOLED")" = "$(nocq "$BASE")" ] ||
		{ say "resources other than CQs differ from before: $BASE"; return 1; }
}
# res_cycles N UP DOWN: UP then DOWN (functions), N times; the counts back
# to POOLED after each
res_cycles() {
	local i now
	[ -n "${POOLED:-}" ] || { say "no counts after a first teardown"; return 1; }
	for i in $(seq "$1"); do
		"$2" || { say "cycle $i: $2 failed"; return 1; }
		"$3" || { say "cycle $i: $3 failed"; return 1; }
		now=$(rdma_res)
		[ "$now" = "$POOLED" ] || { say "cycle $i: rdma res $now, not $POOLED"; return 1; }
	done
	say "$1 cycles of $2 and $3"
}
# res_leak_test: test leak.rdma_res, the counts now against POOLED
res_leak_test() {
	local now
	now=$(rdma_res)
	if [ -n "${POOLED:-}" ] && [ "$now" = "$POOLED" ]; then
		ok leak.rdma_res
	else
		nok leak.rdma_res "rdma res now: $now; after the first teardown: ${POOLED:-none}"
	fi
}
# path_test WHAT: test path.veth, WHAT's QPs on siwn1 and siwn0 (at least
# MIN each, default 1) and none on the harness's siw0/siw1
path_test() {
	local qps c s o
	qps=$(rdma res show qp 2>/dev/null)
	echo "$qps" >>"$LOG"
	c=$(echo "$qps" | grep -c 'link siwn1/')
	s=$(echo "$qps" | grep -c 'link siwn0/')
	o=$(echo "$qps" | grep -cE 'link siw[01]/')
	say "QPs: $c on siwn1, $s on siwn0, $o on siw0/siw1"
	if [ "$c" -ge "${MIN:-1}" ] && [ "$s" -ge "${MIN:-1}" ] && [ "$o" = 0 ]; then
		ok path.veth
	else
		nok path.veth "$1's QPs should be on siwn1 and siwn0 only"
	fi
}
# fio_run JSON FIO_OPTION...: fio with JSON output into JSON, then
# fio_check.py: no error, bytes moved
fio_run() {
	local json=$1; shift
	fio "$@" --output-format=json --output="$json" >>"$LOG" 2>&1 &&
		python3 "$(dirname "${BASH_SOURCE[0]}")/fio_check.py" "$json" >>"$LOG"
}
