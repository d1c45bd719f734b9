#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# faults_pair_a.sh - suite "faults_pair", VM a (see faults_pair.sh): the
# traffic program's client, to VM b's server, reconnecting after each
# error. b kills its server and unloads siw under the traffic
# (faults_pair_b.sh), loads it again and serves anew; once a's client
# runs on the new connection for HOLD seconds, a cuts b's power
# (tools/vm/powerfail: b's QEMU SIGKILLed) and waits for its client to
# give up. siw's peer_timeout is PEER_TIMEOUT (10 s) here: a connection
# whose peer stays silent that long ends, whether a's client has data in
# flight (TCP_USER_TIMEOUT) or only awaits b's responses (keepalive; TCP
# alone would never notice, kernel patch 0064); the bound checked is
# BOUND ms (30000) from the last good completion to the last WR completed
# in error. TAP to stdout:
#
#   unload_flushed   b's server SIGKILLed and siw rmmod'ed: a's client saw
#                    the connection end, every outstanding WR completed
#                    in error within BOUND ms, and it connected again
#   killed_flushed   b's QEMU killed: every outstanding WR of a completed
#                    in error within BOUND ms of the last good completion
#   verified         no verify error and nothing unflushed in the whole run
#   qps_freed        rdma res: no QP, MR or cm_id left after the client
#   new_connection   a connection on a's own siw0 (server and client on
#                    SIWX_LOCAL) with verified traffic for 2 s
#
# Environment: RDMA_PREFIX, FT (the program), HOLD (3), BOUND (30000),
# SIWX_SUITE_TIMEOUT_SCALE (1),
# PEER_TIMEOUT (10); from the boot: SIWX_LOCAL, SIWX_PEER, SIWX_RESULTS.
set -u
P=${RDMA_PREFIX:?}
export PATH=$P/bin:$PATH
FT=${FT:?}
HOLD=${HOLD:-3}
BOUND=${BOUND:-30000}
# the waits for b and the client's reconnect window, times
# SIWX_SUITE_TIMEOUT_SCALE (6 on the debug kernel: b reloads siw and starts
# its server again 21 s after the unload there, 5 s on Debian's kernel)
S=${SIWX_SUITE_TIMEOUT_SCALE:-1}
OUT=${SIWX_RESULTS:-/tmp}
CF=$OUT/client.txt
N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok $N faults_pair.$1"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N faults_pair.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
verdict() { if [ "$2" = 0 ]; then ok "$1"; else nok "$1" "$3"; fi; }
say() { echo "# $*"; }
# shellcheck source=../lib/traffic.sh
. "$(dirname "$0")/../lib/traffic.sh"
field() { sed -n 's/^RESULT .*\b'"$2"'=\([0-9]*\).*/\1/p' "$1" | tail -n 1; }
# err_line K: the client's error line of connection K (last: its last one)
err_line() {
	if [ "$1" = last ]; then
		grep "^# client: connection [0-9]*: error after" "$CF" | tail -n 1
	else
		grep "^# client: connection $1: error after" "$CF"
	fi
}
# ms_after K WHAT: of that line, the ms "after it" (WHAT=error) or
# "after the last good completion" (WHAT=good)
ms_after() {
	local l
	l=$(err_line "$1")
	case $2 in
	error) sed -n 's/.* error \([0-9]*\) ms after it.*/\1/p' <<< "$l" ;;
	good) sed -n 's/.*, \([0-9]*\) ms after the last good completion.*/\1/p' <<< "$l" ;;
	esac
}

echo "TAP version 13"
echo "1..5"
echo "${PEER_TIMEOUT:-10}" > /sys/module/siw/parameters/peer_timeout ||
	say "siw has no peer_timeout parameter"
say "siw peer_timeout $(cat /sys/module/siw/parameters/peer_timeout 2>/dev/null) s"
"$FT" -c "$SIWX_PEER" -b "$SIWX_LOCAL" -p 7471 -t $((600 * S)) -r -R $((5000 * S)) -B 120000 > "$CF" 2>&1 &
CPID=$!
if wait_client 'connection 1 established' $((180 * S)); then
	say "connected to b; b kills its server and unloads siw after $HOLD s"
else
	say "no connection to b in $((180 * S)) s"
fi
r=0
wait_client 'connection 2 established' $((120 * S)) || r=1
e1=$(ms_after 1 error)
[ $r = 0 ] && [ -n "$e1" ] && [ "$e1" -le "$BOUND" ] || r=1
say "after b's unload: $(err_line 1 | cut -c3-)"
verdict unload_flushed $r "connection 1: ${e1:-no} error line; connection 2 established: $(grep -c 'connection 2 established' "$CF")"

sleep "$HOLD"
t0=$(date +%s%N)
tools/vm/powerfail 30 > /dev/null || say "tools/vm/powerfail: no answer"
say "b's power cut $(( ($(date +%s%N) - t0) / 1000000 )) ms after asking"
# the client: the peer timeout ends its connection (~10-13 s), then its
# reconnect fails (10 s)
wait_bounded "$CPID" $((180 * S)) "client (after the power cut)"
wait "$CPID"
# the connection the power cut ended: the client's last error, not the
# unload's (connection 1)
e2=$(ms_after last error) g2=$(ms_after last good)
say "after b's power cut: $(err_line last | cut -c3-)"
r=0; [ -n "$g2" ] && [ "$g2" -le "$BOUND" ] && [ "$(err_line last)" != "$(err_line 1)" ] || r=1
verdict killed_flushed $r "the last connection: outstanding WRs completed in error ${g2:-never} ms after the last good completion (${e2:-?} ms after the first error), bound $BOUND ms"
grep '^RESULT' "$CF" | sed 's/^/# /'
r=0; [ "$(field "$CF" verify_errors)" = 0 ] && [ "$(field "$CF" unflushed)" = 0 ] || r=1
verdict verified $r "verify errors $(field "$CF" verify_errors), unflushed $(field "$CF" unflushed)"
sleep 1
left=$(rdma res show qp 2>/dev/null | grep -c lqpn)
res=$(rdma resource show 2>/dev/null | tr '\n' ';')
r=0; [ "$left" = 0 ] && ! echo "$res" | grep -qE ' (pd|cq|qp|cm_id|mr) [1-9]' || r=1
verdict qps_freed $r "$left QPs left; $res"
"$FT" -s -a "$SIWX_LOCAL" -p 7472 > "$OUT/local.server" 2>&1 &
SPID=$!
"$FT" -c "$SIWX_LOCAL" -p 7472 -t 2 -k > "$OUT/local.client" 2>&1
crc=$?
kill -TERM "$SPID"; wait "$SPID"; src=$?
grep -h '^RESULT' "$OUT/local.client" "$OUT/local.server" | sed 's/^/# /'
verdict new_connection $((crc | src)) "a local connection on siw0: client exit $crc, server exit $src"
exit $FAILED
