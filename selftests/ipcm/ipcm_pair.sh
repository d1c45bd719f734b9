#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# suite ipcm_pair: the patched rdma_cm (patches/linux-cma) against
# Debian's across the wire, over RoCE. Pair boot ours-ours: VM a swaps in
# build/rdma_cm/rdma_cm.ko, VM b keeps Debian's; each puts an rxe device
# on a macvlan of its pair interface (its own subnet, so that rdma_cm picks
# rxe there and siw0 on the interface itself; rxe refuses a VLAN device),
# and both run this script:
#
#   a_srv.*   a's ipcm_conn server (patched) accepts b's client (Debian's):
#             connected, the same 5-tuple at both ends
#   b_srv.*   the other way round
#   a_rej.*   a's application rejects b's request: b gets status 28 and the
#             application's private data, nothing more (Debian's rdma_cm
#             drops the ARI the patched one sent)
#   a_unk.*   b asks a's second address, where no listener is: the patched
#             rdma_cm rejects with ARI unknown address, b sees status 28
#   b_rej.*   b's application rejects a's request: a (patched) gets status
#             28 and 148 bytes of private data (no ARI came)
#
# The client retries while the server does not listen yet (the IB CM's
# reject 8, invalid Service ID). Usage (guest.sh): ipcm_pair.sh BUILD_DIR
#
# Each VM records its RoCE traffic (OUT/roce.pcap) and its CM's trace
# events (OUT/trace.txt). Those showed why b's requests in a_srv and a_unk
# once went unanswered: ARP flux, see arp_strict below.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$TOP/build}
BIN=${SIWX_BIN:-$BUILD/selftests/bin}
CONN=$BIN/ipcm_conn
RDMA_CM_KO=$BUILD/rdma_cm/rdma_cm.ko
ROLE=${SIWX_ROLE:-}
OUT=${SIWX_RESULTS:-/tmp}/ipcm_pair
mkdir -p "$OUT"
LOG=$OUT/ipcm_pair.log
: >"$LOG"
TAP_PREFIX=ipcm_pair
# shellcheck source=../lib/tap_out.sh
. "$TOP/selftests/lib/tap_out.sh"
# shellcheck source=../lib/cm_swap.sh
. "$TOP/selftests/lib/cm_swap.sh"
# shellcheck source=../lib/neigh.sh
. "$TOP/selftests/lib/neigh.sh"

case ${SIWX_PAIR_ORDER:-}/$ROLE in
ours-ours/a|ours-ours/b) ;;
*) echo "1..0 # SKIP pair boot ours-ours only"; exit 0 ;;
esac
DEV=${SIWX_NETDEV0:?}
A=192.168.96.1 A2=192.168.96.3 B=192.168.96.2
PORT=7190
export IPCM_TIMEOUT_MS=90000	# the other VM may be far behind under TCG
[ "$ROLE" = a ] && ME=$A || ME=$B

TESTS=(setup a_srv.connected a_srv.same_5tuple b_srv.connected
       b_srv.same_5tuple a_rej.client_sees_reject a_unk.client_sees_reject
       b_rej.client_sees_reject wire.a_rej_ulp_layer wire.a_unk_annex_ari
       wire.b_rej_stock_no_ari rdma_cm_restored)
echo "1..${#TESTS[@]}"

swap_rdma_cm() { swap_cm rdma_cm "$1"; }	# KO|stock
# ARP: the macvlan shares the wire with its lower device, and Linux by
# default answers an ARP request for any local address on any interface:
# the pair interface answered for the macvlan's addresses with its own
# MAC, the peer's RoCE frames then arrived on the pair interface, where
# no rxe device is, and rxe dropped them (the requests "no one answered",
# Documentation/ipcm.md). arp_ignore=1: answer only on the interface that
# has the address; arp_announce=2: ask with the best local address for
# the target. Both restored in cleanup.
ARP_SAVED=
arp_strict() {
	ARP_SAVED="$(cat /proc/sys/net/ipv4/conf/all/arp_ignore) $(cat /proc/sys/net/ipv4/conf/all/arp_announce)"
	echo 1 >/proc/sys/net/ipv4/conf/all/arp_ignore &&
		echo 2 >/proc/sys/net/ipv4/conf/all/arp_announce
}
arp_restore() {
	[ -n "$ARP_SAVED" ] || return 0
	set -- $ARP_SAVED
	echo "$1" >/proc/sys/net/ipv4/conf/all/arp_ignore
	echo "$2" >/proc/sys/net/ipv4/conf/all/arp_announce
	ARP_SAVED=
}
setup() {
	if [ "$ROLE" = a ]; then swap_rdma_cm "$RDMA_CM_KO" || return 1; fi
	arp_strict || return 1
	modprobe -a rdma_rxe macvlan || return 1
	ip link add link "$DEV" name ipcm96 type macvlan mode bridge || return 1
	ip addr add "$ME/24" dev ipcm96 || return 1
	[ "$ROLE" = b ] || ip addr add "$A2/24" dev ipcm96 || return 1
	ip link set ipcm96 up || return 1
	rdma link add rxev0 type rxe netdev ipcm96 || return 1
	rdma link show >>"$LOG"
}
# What each VM's CM did and what crossed the wire, for the diagnosis of a
# failed exchange: the kernel's ib_cma (IB CM) and rdma_cma trace events
# into OUT/trace.txt, the RoCE traffic of the pair interface into
# OUT/roce.pcap (siwx-ipcm and tshark decode it).
# (trace_events again once setup swapped rdma_cm: its events come and go
# with the module)
T=/sys/kernel/tracing
trace_events() {
	local e
	for e in ib_cma rdma_cma; do
		[ ! -d $T/events/$e ] || echo 1 >$T/events/$e/enable
	done
}
trace_start() {
	tcpdump -i "$DEV" -U -n -w "$OUT/roce.pcap" udp port 4791 2>"$OUT/tcpdump.log" &
	CAP=$!
	mountpoint -q $T || mount -t tracefs nodev $T 2>/dev/null || return 0
	echo 8192 >$T/buffer_size_kb
	echo >$T/trace
	trace_events
	echo 1 >$T/tracing_on
}
# (once: unloading rdma_cm afterwards empties the trace buffer)
TRACED=
trace_stop() {
	# (tcpdump gets 2 s for what the kernel holds for it: the last
	# exchange's REJ was missing once when it was stopped at once)
	[ -z "${CAP:-}" ] || { sleep 2; kill "$CAP" 2>/dev/null; wait "$CAP" 2>/dev/null; CAP=; }
	[ -z "$TRACED" ] && [ -w $T/tracing_on ] || return 0
	TRACED=1
	echo 0 >$T/tracing_on
	cat $T/trace >"$OUT/trace.txt" 2>/dev/null
	for e in ib_cma rdma_cma; do
		[ ! -d $T/events/$e ] || echo 0 >$T/events/$e/enable
	done
}
cleanup() {
	trace_stop
	rdma link delete rxev0 2>/dev/null
	ip link del ipcm96 2>/dev/null
	arp_restore
}
trap cleanup EXIT

# server NAME ADDR MODE: ipcm_conn's server for one request, in the
# background; SRV its pid
server() {
	"$CONN" server "$2" "$PORT" 1 "$3" >"$OUT/$1.srv" 2>&1 &
	SRV=$!
}
# client NAME ADDR: ipcm_conn's client, again while the IB CM says there
# is no listener (status 8) for at most 90 s. ADDR's neighbour entry is
# resolved first (lib/neigh.sh; the other VM may still be setting up its
# macvlan: 60 s at most): rdma_resolve_ip()'s lost wake-up failed b's
# first request with ADDR_ERROR -110 in CI
client() {
	local i
	neigh_warm "$2" ipcm96 300 >>"$LOG"
	for i in $(seq 45); do
		"$CONN" client "$2" "$PORT" "$ME" >"$OUT/$1.cli" 2>&1
		grep -q '^rejected status=8 ' "$OUT/$1.cli" || break
		sleep 2
	done
	cat "$OUT/$1.cli" >>"$LOG"
}
# tuple NAME: the client's and the server's views compared
tuple() {
	local cl cp sp sl
	read -r cl cp < <(sed -n 's/^connected local=\([^ ]*\) peer=\([^ ]*\) .*/\1 \2/p' "$OUT/$1.cli")
	read -r sp sl < <(sed -n 's/^request peer=\([^ ]*\) local=\([^ ]*\) .*/\1 \2/p' "$OUT/$1.srv")
	[ -n "${cl:-}" ] && [ "$cl" = "$sp" ] && [ "$cp" = "$sl" ] ||
		{ echo "== client local=${cl:-} peer=${cp:-}, server peer=${sp:-} local=${sl:-}"; return 1; }
}
expect_line() {	# FILE PATTERN: FILE has a line matching PATTERN
	grep -Eq "$2" "$1" && return 0
	echo "== $(basename "$1"): '$(tail -n 1 "$1")', want /$2/"
	return 1
}
step() {	# NAME: both sides of one exchange; the result is the tests'
	local n=$1 srv=$2 mode=$3 to=$4
	PORT=$((PORT + 1))
	if [ "$ROLE" = "$srv" ]; then
		server "$n" "$to" "$mode"
		wait "$SRV"
		cat "$OUT/$n.srv" >>"$LOG"
	else
		client "$n" "$to"
	fi
}

trace_start
check setup setup || skip_rest "setup failed"
[ ! -w $T/tracing_on ] || trace_events
step a_srv a accept "$A"
if [ "$ROLE" = b ]; then
	check a_srv.connected expect_line "$OUT/a_srv.cli" '^connected .* device=rxev0$'
	ok a_srv.same_5tuple "checked by a"
else
	check a_srv.connected expect_line "$OUT/a_srv.srv" '^established'
	# a sees b's client end as b printed it: b's file is in b's results
	check a_srv.same_5tuple expect_line "$OUT/a_srv.srv" "^request peer=$B:[0-9]+ local=$A:$PORT "
fi
step b_srv b accept "$B"
if [ "$ROLE" = a ]; then
	check b_srv.connected expect_line "$OUT/b_srv.cli" '^connected .* device=rxev0$'
	ok b_srv.same_5tuple "checked by b"
else
	check b_srv.connected expect_line "$OUT/b_srv.srv" '^established'
	check b_srv.same_5tuple expect_line "$OUT/b_srv.srv" "^request peer=$A:[0-9]+ local=$B:$PORT "
fi
step a_rej a reject "$A"
PORT_A_REJ=$PORT
if [ "$ROLE" = b ]; then
	check a_rej.client_sees_reject expect_line "$OUT/a_rej.cli" \
		'^rejected status=28 pdata_len=148 pdata=ulp-reject ari=-$'
else
	ok a_rej.client_sees_reject "checked by b"
fi
# no listener on A2: a's server listens on A, b asks A2
PORT=$((PORT + 1))
PORT_A_UNK=$PORT
if [ "$ROLE" = a ]; then
	server a_unk "$A" accept
	sleep 25	# b asks from 5 s on
	kill "$SRV" 2>/dev/null
	wait "$SRV" 2>/dev/null
	ok a_unk.client_sees_reject "checked by b"
else
	sleep 5
	client a_unk "$A2"
	check a_unk.client_sees_reject expect_line "$OUT/a_unk.cli" \
		'^rejected status=28 pdata_len=148 pdata=- ari=-$'
fi
step b_rej b reject "$B"
PORT_B_REJ=$PORT
if [ "$ROLE" = a ]; then
	check b_rej.client_sees_reject expect_line "$OUT/b_rej.cli" \
		'^rejected status=28 pdata_len=148 pdata=ulp-reject ari=-$'
else
	ok b_rej.client_sees_reject "checked by a"
fi
cleanup
# What a's capture shows, decoded by siwx-ipcm: the patched rdma_cm's
# rejects in the annex's format went over the wire to Debian's (which
# hands its application none of it); Debian's own reject carries none
wire() {	# TO PORT REJ: a's capture has the exchange to TO:PORT, rejected so
	"$IPCM" "$OUT/roce.pcap" >"$OUT/roce.ipcm.txt" 2>&1
	expect_line "$OUT/roce.ipcm.txt" \
		"tcp [0-9.]+:[0-9]+ -> ${1//./\\.}:$2 REQ REJ\\($3\\)\$"
}
IPCM=$BUILD/tools/ipcm/siwx-ipcm
if [ "$ROLE" = a ]; then
	check wire.a_rej_ulp_layer wire "$A" "$PORT_A_REJ" '28,layer=ulp'
	check wire.a_unk_annex_ari wire "$A2" "$PORT_A_UNK" '28,layer=ip-cm,ari=unknown-addr'
	check wire.b_rej_stock_no_ari wire "$B" "$PORT_B_REJ" '28,no-ari'
else
	for t in wire.a_rej_ulp_layer wire.a_unk_annex_ari wire.b_rej_stock_no_ari; do
		ok "$t" "checked by a"
	done
fi
if [ "$ROLE" = a ]; then check rdma_cm_restored swap_rdma_cm stock
else ok rdma_cm_restored "Debian's all along"; fi
exit $((fails > 0))
