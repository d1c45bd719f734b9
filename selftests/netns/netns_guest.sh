#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netns_guest.sh - suite "netns", the guest side (run by netns.sh in a VM
# of its own, siw.ko loaded, no namespace but the initial one): siwx in
# network namespaces the way containers use them. Each case makes its own
# veth pair and siw devices; rping (the project's rdma-core, -V: data
# verified) carries the traffic. TAP to stdout.
#
#   shared.two_namespaces      shared mode (the default): a device in each of
#                              two namespaces, connected both ways
#   shared.netdev_moved        a device whose netdev moves to another
#                              namespace goes away cleanly; a new one is made
#                              there and works
#   exclusive.set              rdma system set netns exclusive
#   exclusive.move_device      rdma dev set DEV netns NS: the device is the
#                              only one the namespace sees (rdma, ibv_devices)
#                              and gone from the initial one (needs the user
#                              context disassociation of patch 0063)
#   exclusive.traffic          from the namespace to the initial one and back
#   exclusive.wildcard_listener  a listener on the wildcard address inside
#                              the namespace, reached from outside
#   exclusive.netdev_deleted_under_traffic  the namespace's netdev deleted
#                              while both ends carry traffic: both ends end
#                              with an error within 30 s, both devices and
#                              every QP gone
#   exclusive.namespace_deleted_under_traffic  a namespace deleted (its name
#                              and its last process) while it carries
#                              traffic: both ends gone within 30 s (the
#                              server with an error or after the peer's
#                              disconnect: a race), both devices and every
#                              QP gone, no data mismatch
#   exclusive.shared_again     back to shared mode once no namespace is left
#   boot_devices_still_work    siw0 -> siw1 (the boot's devices) afterwards
#                              (ib_send_bw -R)
# The run's own checks (tools/vm/run): no kernel problem, every link deleted,
# rmmod siw clean.
#
# Environment: RDMA_PREFIX (the project's rdma-core).

set -u
P=${RDMA_PREFIX:?RDMA_PREFIX: the rdma-core prefix of the project}
export LD_LIBRARY_PATH=$P/lib PATH=$P/bin:$PATH
TOP=$(cd "$(dirname "$0")/../.." && pwd)
LOG=${SIWX_RESULTS:-/tmp}/netns.log
: > "$LOG"

N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok $N netns.$1${2:+ # $2}"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N netns.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
say() { echo "# $*"; echo "== $*" >> "$LOG"; }
run() { echo "+ $*" >> "$LOG"; "$@" >> "$LOG" 2>&1; }

# rping_pair SRV_NS SRV_ADDR CLI_NS DST [COUNT [SRC]]: a verified rping
# between a server (bound to SRV_ADDR, "" for the wildcard) in namespace
# SRV_NS and a client (bound to SRC if given) in CLI_NS ("" for the initial
# namespace); 0 when both exited 0.
nsx() { local ns=$1; shift; if [ -n "$ns" ]; then ip netns exec "$ns" "$@"; else "$@"; fi; }
rping_pair() {
	local sns=$1 saddr=$2 cns=$3 dst=$4 count=${5:-5} s rc_s rc_c a=() b=()
	[ -z "$saddr" ] || a=(-a "$saddr")
	[ -z "${6:-}" ] || b=(-I "$6")
	echo "+ rping server [${sns:-init}] ${a[*]}, client [${cns:-init}] -> $dst" >> "$LOG"
	nsx "$sns" timeout 60 rping -s "${a[@]}" -C "$count" -V >> "$LOG" 2>&1 &
	s=$!
	sleep 1
	nsx "$cns" timeout 60 rping -c "${b[@]}" -a "$dst" -C "$count" -V >> "$LOG" 2>&1
	rc_c=$?
	wait "$s"
	rc_s=$?
	echo "  client exit $rc_c, server exit $rc_s" >> "$LOG"
	[ "$rc_c" = 0 ] && [ "$rc_s" = 0 ]
}

# dev_in NS DEV: DEV is listed by rdma dev in NS ("" initial)
dev_in() { nsx "$1" rdma dev show 2>/dev/null | grep -q "^[0-9]*: $2:"; }
# devs_in NS: the device names rdma dev lists in NS
devs_in() { nsx "$1" rdma dev show 2>/dev/null | sed -n 's/^[0-9]*: \([^:]*\):.*/\1/p' | tr '\n' ' '; }
# no_netns: no namespace other than the initial one is left (their
# teardown is asynchronous); at most 60 s
wait_no_netns() {
	local i
	for ((i = 0; i < 120; i++)); do
		[ -z "$(ip netns list)" ] && return 0
		sleep 0.5
	done
	return 1
}
# set_mode MODE: rdma system set netns MODE, retried while the kernel still
# tears a namespace down (EBUSY), at most 60 s
set_mode() {
	local i
	for ((i = 0; i < 120; i++)); do
		rdma system set netns "$1" >> "$LOG" 2>&1 &&
			rdma system show 2>/dev/null | grep -q "netns $1" && return 0
		sleep 0.5
	done
	return 1
}
# how long rping may take to end once its device or namespace is gone
# (netns.sh scales it for the debug kernel)
GONE=${NETNS_GONE_S:-30}
# gone_within SEC PID...: every PID has exited within SEC seconds
gone_within() {
	local sec=$1 p i alive
	shift
	for ((i = 0; i < sec * 10; i++)); do
		alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && return 0
		sleep 0.1
	done
	return 1
}
# shellcheck disable=SC2317  # run by the EXIT trap
cleanup() {
	local ns
	pkill -KILL -x rping 2>/dev/null
	for ns in n1 n2 n3 c1 c2; do ip netns del "$ns" 2>/dev/null; done
	for l in sa sb sm sm2 sxa sxb sya syb; do rdma link delete "$l" 2>/dev/null; done
	ip link del va 2>/dev/null; ip link del vm1 2>/dev/null
	ip link del xa 2>/dev/null; ip link del ya 2>/dev/null
}
trap cleanup EXIT

echo "TAP version 13"
echo "1..10"
say "mode at start: $(rdma system show 2>&1)"

# ---------------------------------------------------------------- shared
say "shared.two_namespaces"
ok_=1
run ip netns add n1 && run ip netns add n2 &&
run ip link add va type veth peer name vb &&
run ip link set va netns n1 && run ip link set vb netns n2 &&
run ip -n n1 addr add 10.78.0.1/24 dev va && run ip -n n1 link set va up &&
run ip -n n2 addr add 10.78.0.2/24 dev vb && run ip -n n2 link set vb up &&
run ip -n n1 link set lo up && run ip -n n2 link set lo up &&
run ip netns exec n1 rdma link add sa type siw netdev va &&
run ip netns exec n2 rdma link add sb type siw netdev vb || ok_=0
if [ "$ok_" = 1 ] && rping_pair n1 10.78.0.1 n2 10.78.0.1 &&
   rping_pair n2 10.78.0.2 n1 10.78.0.2; then
	ok shared.two_namespaces
else
	nok shared.two_namespaces "setup $ok_; see $LOG"
fi
run rdma link delete sa; run rdma link delete sb
run ip netns del n1; run ip netns del n2

say "shared.netdev_moved"
r=""
run ip netns add n3 && run ip link add vm1 type veth peer name vm2 &&
run ip link set vm1 up && run rdma link add sm type siw netdev vm1 || r="setup failed"
if [ -z "$r" ]; then
	dev_in "" sm || r="sm not created"
	run ip link set vm1 netns n3
	for ((i = 0; i < 100; i++)); do dev_in "" sm || break; sleep 0.1; done
	dev_in "" sm && r="sm still there 10 s after its netdev moved"
fi
if [ -z "$r" ]; then
	run ip link set vm2 netns n3
	run ip -n n3 addr add 10.77.3.1/24 dev vm1; run ip -n n3 addr add 10.77.3.2/24 dev vm2
	run ip -n n3 link set vm1 up; run ip -n n3 link set vm2 up; run ip -n n3 link set lo up
	run ip netns exec n3 rdma link add sm2 type siw netdev vm1 || r="no new device on the moved netdev"
	[ -n "$r" ] || rping_pair n3 10.77.3.1 n3 10.77.3.1 || r="no traffic over the new device"
fi
if [ -z "$r" ]; then ok shared.netdev_moved; else nok shared.netdev_moved "$r"; fi
run rdma link delete sm2
run ip netns del n3

# ---------------------------------------------------------------- exclusive
say "exclusive.set"
if wait_no_netns && set_mode exclusive; then
	ok exclusive.set
	EXCL=1
else
	nok exclusive.set "$(rdma system show 2>&1); namespaces: $(ip netns list | tr '\n' ' ')"
	EXCL=0
fi

# ns_pair NS LOCAL PEER NET DEV_LOCAL DEV_PEER: namespace NS and a veth
# pair, LOCAL in the initial namespace with NET.1 and siw device DEV_LOCAL,
# PEER in NS with NET.2 and DEV_PEER (created there)
ns_pair() {
	local ns=$1 l=$2 p=$3 net=$4 dl=$5 dp=$6
	run ip netns add "$ns" && run ip link add "$l" type veth peer name "$p" &&
	run ip link set "$p" netns "$ns" &&
	run ip addr add "$net.1/24" dev "$l" && run ip link set "$l" up &&
	run ip -n "$ns" addr add "$net.2/24" dev "$p" &&
	run ip -n "$ns" link set "$p" up && run ip -n "$ns" link set lo up &&
	run rdma link add "$dl" type siw netdev "$l" &&
	run ip netns exec "$ns" rdma link add "$dp" type siw netdev "$p"
}

# xa (initial, 10.79.0.1, device sxa) <-> xb (c1, 10.79.0.2, device sxb)
say "exclusive.move_device"
r=""
if [ "$EXCL" = 1 ]; then
	ns_pair c1 xa xb 10.79.0 sxa sxb || r="setup failed"
	[ -n "$r" ] || run rdma dev set sxb netns c1 || r="rdma dev set sxb netns c1 failed: $(tail -n 1 "$LOG")"
	if [ -z "$r" ]; then
		inside=$(devs_in c1)
		[ "$inside" = "sxb " ] || r="c1 sees '$inside', not just sxb"
		dev_in "" sxb && r="${r:+$r; }the initial namespace still sees sxb"
		v=$(ip netns exec c1 ibv_devices 2>/dev/null | awk 'NR > 2 {print $1}' | tr '\n' ' ')
		[ "$v" = "sxb " ] || r="${r:+$r; }ibv_devices in c1: '$v'"
	fi
else
	r="not in exclusive mode"
fi
if [ -z "$r" ]; then ok exclusive.move_device; MOVED=1; else nok exclusive.move_device "$r"; MOVED=0; fi

say "exclusive.traffic"
if [ "$MOVED" = 1 ] && rping_pair "" 10.79.0.1 c1 10.79.0.1 &&
   rping_pair c1 10.79.0.2 "" 10.79.0.2; then
	ok exclusive.traffic
else
	nok exclusive.traffic "moved $MOVED; see $LOG"
fi

say "exclusive.wildcard_listener"
if [ "$MOVED" = 1 ] && rping_pair c1 "" "" 10.79.0.2; then
	ok exclusive.wildcard_listener
else
	nok exclusive.wildcard_listener "moved $MOVED; see $LOG"
fi

say "exclusive.netdev_deleted_under_traffic"
r=""
if [ "$MOVED" = 1 ]; then
	rping -s -a 10.79.0.1 -C 1000000 -V >> "$LOG" 2>&1 &
	S=$!
	sleep 1
	ip netns exec c1 rping -c -a 10.79.0.1 -C 1000000 -V >> "$LOG" 2>&1 &
	C=$!
	sleep 3
	q=$(rdma res show qp 2>/dev/null | grep -c "comm rping")
	[ "$q" -ge 1 ] || r="no rping QP in the initial namespace after 3 s"
	run ip -n c1 link del xb
	gone_within "$GONE" "$S" "$C" || r="${r:+$r; }rping still running $GONE s after the netdev went"
	kill -KILL "$S" "$C" 2>/dev/null
	wait "$S"; rs=$?
	wait "$C"; rc=$?
	[ "$rs" != 0 ] && [ "$rc" != 0 ] || r="${r:+$r; }rping exits $rs/$rc, expected errors"
	for ((i = 0; i < 100; i++)); do dev_in "" sxa || dev_in c1 sxb || break; sleep 0.1; done
	dev_in "" sxa && r="${r:+$r; }sxa still there"
	dev_in c1 sxb && r="${r:+$r; }sxb still there"
	q=$(rdma res show qp 2>/dev/null | grep -c "comm rping")
	[ "$q" = 0 ] || r="${r:+$r; }$q rping QPs left"
else
	r="device not moved"
fi
if [ -z "$r" ]; then ok exclusive.netdev_deleted_under_traffic; else nok exclusive.netdev_deleted_under_traffic "$r"; fi
run ip netns del c1

# ya (initial, 10.80.0.1, sya) <-> yb (c2, 10.80.0.2, syb): the client in
# c2; then c2's name is deleted and its last process killed
say "exclusive.namespace_deleted_under_traffic"
r=""
if [ "$EXCL" = 1 ]; then
	ns_pair c2 ya yb 10.80.0 sya syb &&
	run rdma dev set syb netns c2 || r="setup failed"
	if [ -z "$r" ]; then
		rping -s -a 10.80.0.1 -C 1000000 -V >> "$LOG" 2>&1 &
		S=$!
		sleep 1
		ip netns exec c2 rping -c -a 10.80.0.1 -C 1000000 -V >> "$LOG" 2>&1 &
		C=$!
		sleep 3
		q=$(rdma res show qp 2>/dev/null | grep -c "comm rping")
		[ "$q" -ge 1 ] || r="no rping QP in the initial namespace after 3 s"
		run ip netns del c2
		kill -KILL "$C"
		gone_within "$GONE" "$S" "$C" || r="${r:+$r; }rping still running $GONE s after the namespace went"
		kill -KILL "$S" 2>/dev/null
		wait "$S"; rs=$?
		wait "$C"
		# The namespace goes only with its last process: the client is
		# killed, as a container's processes are. Whether the server
		# then sees the peer's disconnect (rping exits 0) or its device
		# going away (an error) first is a race; both end cleanly.
		echo "# server exit status $rs (0: it saw the disconnect first)"
		grep -q "data mismatch" "$LOG" && r="${r:+$r; }rping reported a data mismatch"
		# the namespace's veth goes with it, and both devices with it
		for ((i = 0; i < 300; i++)); do dev_in "" sya || dev_in "" syb || break; sleep 0.1; done
		dev_in "" sya && r="${r:+$r; }sya still there 30 s later"
		dev_in "" syb && r="${r:+$r; }syb still there 30 s later"
		q=$(rdma res show qp 2>/dev/null | grep -c "comm rping")
		[ "$q" = 0 ] || r="${r:+$r; }$q rping QPs left"
	fi
else
	r="not in exclusive mode"
fi
if [ -z "$r" ]; then ok exclusive.namespace_deleted_under_traffic; else nok exclusive.namespace_deleted_under_traffic "$r"; fi

say "exclusive.shared_again"
if wait_no_netns && set_mode shared; then
	ok exclusive.shared_again
else
	nok exclusive.shared_again "$(rdma system show 2>&1); namespaces: $(ip netns list | tr '\n' ' ')"
fi

say "boot_devices_still_work"
# perftest-run: its retries step around rping's 2 s address resolution,
# which the local route over lo does not always make under TCG
if run env LD_LIBRARY_PATH="$LD_LIBRARY_PATH" "$TOP/tools/vm/perftest-run" single ib_send_bw -n 100; then
	ok boot_devices_still_work
else
	nok boot_devices_still_work "see $LOG"
fi
say "devices at the end: $(devs_in "")"
exit "$FAILED"
