#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# faults_guest.sh - suite "faults", the single-VM side (run by faults.sh in
# a VM of its own, booted with --netns: siw0 on veth0 here, siw1 on veth1
# in namespace siwx1; the faults on the veth pair would hit any other
# suite's traffic). The traffic program (faults_traffic: every operation,
# every result verified) runs its server on siw0 and its client on siw1.
# TAP to stdout.
#
#   netem_loss1, netem_loss5, netem_reorder, netem_duplicate, netem_delay
#       netem on both veth ends (loss 1 %, loss 5 %, 25 % reordered with a
#       5 ms delay, 5 % duplicated, 20 ms +- 10 ms delay) for SECS seconds
#       of traffic: no connection error, every result verified, the
#       server's memory clean; throughput printed
#   corrupt_crc_caught   MPA CRC on (mpa_crc, mpa_crc_strict), 1 in
#       CORRUPT_N frames corrupted with a valid TCP checksum
#       (selftests/lib/netfault.sh) while the client reconnects after each
#       error (another round of traffic while no frame was corrupted, up
#       to CORRUPT_ROUNDS): siw counted CRC errors, and as many LLP
#       Terminates sent
#   corrupt_terminate_llp  no Terminate sent of another kind (term_tx_*)
#   corrupt_flushed      every outstanding WR of both ends completed
#       (with an error) within BOUND ms of the error, the client
#       reconnected, every result that completed verified
#   corrupt_never_placed  the server's Write targets hold only what the
#       client wrote: no corrupted FPDU was placed (kernel patch 0032;
#       it failed before)
#   reset_flushed        the established TCP connection destroyed from
#       outside (ss -K, an RST to the peer), once from each end, each
#       SECS/2 s into a connection, under traffic: both ends complete
#       every outstanding WR with an error within BOUND ms, no verify
#       error
#   reset_new_connection the client connected again after each reset and
#       its traffic verified
#   silent_peer_flushed  the server's side falls silent (netem loss 100 %
#       on veth0, its replies rate-limited before) while the client (-Q)
#       only reads: once its Read Requests are acknowledged TCP has nothing
#       to retransmit and never notices; siw's peer_timeout (set to
#       PEER_TIMEOUT s) must end the connection and flush every outstanding
#       Read within 1.5 x PEER_TIMEOUT s (data in flight at the cut still
#       arrives, TCP's timers tick in steps; SILENT_X10; kernel patch 0064; upstream
#       siw waits for good)
#   recv_after_error_flushed  after its first connection ended (every
#       receive flushed, the QP in ERR), the server posts one more receive:
#       it must complete with "flushed" within 2 s, as a WR posted to a QP
#       in the error state must (kernel patch 0033, rdma-core 0015)
#   resources_back       rdma res: no QP, MR, PD, CQ or cm_id left on siw0
#       or siw1 after the programs ended
#   kernel_log_clean     nothing of tools/vm/kernel-problems.sh in dmesg
#
# Environment: RDMA_PREFIX, FT (the traffic program), SIWX_FAULTS_SECS (4:
# traffic seconds of a netem case), SIWX_FAULTS_CORRUPT_N (3000),
# SIWX_FAULTS_BOUND (5000 ms: the flush bound of the corruption and reset
# cases), SIWX_FAULTS_CORRUPT_ROUNDS (5: corruption rounds at most, until a
# frame was corrupted), SIWX_FAULTS_PEER_TIMEOUT (10 s),
# SIWX_FAULTS_SILENT_X10 (15: the silent peer's bound in tenths of
# peer_timeout); from the boot: SIWX_NETNS1,
# SIWX_ADDR0, SIWX_ADDR1, SIWX_RESULTS.

set -u
P=${RDMA_PREFIX:?RDMA_PREFIX: the rdma-core prefix of the project}
export PATH=$P/bin:$PATH
FT=${FT:?FT: the faults_traffic program}
SECS=${SIWX_FAULTS_SECS:-4}
CORRUPT_N=${SIWX_FAULTS_CORRUPT_N:-3000}
BOUND=${SIWX_FAULTS_BOUND:-5000}
# rounds of corruption traffic at most, until a frame was corrupted
CORRUPT_ROUNDS=${SIWX_FAULTS_CORRUPT_ROUNDS:-5}
# the silent peer's bound in tenths of peer_timeout
SILENT_X10=${SIWX_FAULTS_SILENT_X10:-15}
OUT=${SIWX_RESULTS:-/tmp}
LOG=$OUT/faults.log
NS=${SIWX_NETNS1:-}
A0=${SIWX_ADDR0:-192.168.77.1}
A1=${SIWX_ADDR1:-192.168.77.2}
DEVS="veth0${NS:+ veth1@$NS}"
TOP=$(cd "$(dirname "$0")/../.." && pwd)
: > "$LOG"
# shellcheck source=tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"
# shellcheck source=selftests/lib/netfault.sh
. "$TOP/selftests/lib/netfault.sh"
# shellcheck source=selftests/lib/traffic.sh
. "$TOP/selftests/lib/traffic.sh"
export NF_LOG=$LOG
PARAMS=/sys/module/siw/parameters

N=0 FAILED=0
echo "TAP version 13"
echo "1..15"
ok() { N=$((N + 1)); echo "ok $N faults.$1${2:+ # $2}"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N faults.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
verdict() { if [ "$2" = 0 ]; then ok "$1"; else nok "$1" "$3"; fi; }
say() { echo "# $*"; echo "== $*" >> "$LOG"; }
nsx() { if [ -n "$NS" ]; then ip netns exec "$NS" "$@"; else "$@"; fi; }

modprobe -a sch_netem sch_ingress cls_u32 cls_matchall act_gact act_pedit act_csum \
	inet_diag tcp_diag >> "$LOG" 2>&1
KLOG0=$(dmesg | wc -l)

# counters: siw0's and siw1's protocol counters summed, "name value" lines
# (a device is seen from both namespaces when rdma's netns mode is shared:
# each device's counters once)
# shellcheck disable=SC2016 # run by bash -c
HWC='for f in /sys/class/infiniband/*/ports/1/hw_counters/*; do
	[ -r "$f" ] && d=${f#/sys/class/infiniband/} && echo "${d%%/*} ${f##*/} $(<"$f")"; done'
counters() {
	{ bash -c "$HWC"; [ -z "$NS" ] || nsx bash -c "$HWC"; } | sort -u |
		awk '$3 ~ /^[0-9]+$/ { s[$2] += $3 } END { for (k in s) print k, s[k] }' | sort
}
# cdelta BEFORE-FILE NAME: how much counter NAME grew
cdelta() {
	counters | awk -v n="$2" 'NR == FNR { b[$1] = $2; next } $1 == n { print $2 - b[$1]; f = 1 }
		END { if (!f) print 0 }' "$1" -
}

# field FILE KEY: KEY's value on the RESULT line of FILE (empty if none)
field() { sed -n 's/^RESULT .*\b'"$2"'=\([0-9]*\).*/\1/p' "$1" | tail -n 1; }

# show: the client's and the server's RESULT and diagnostics, as "# "
show() {
	grep -h '^# .*\(not flushed\|not completed\|never completed\)' "$CF" "$SF" | head -n 6
	grep -h '^# .*\(error\|verify\|placed_corrupt\|failed\)' "$CF" "$SF" | head -n 6
	grep -h '^RESULT' "$CF" "$SF" | sed 's/^/# /'
}
# every_op: the client completed every kind of operation at least once
every_op() {
	local k
	for k in send write write_imm read flush fetch_add cmp_swap atomic_write; do
		[ "$(field "$CF" "$k")" -gt 0 ] 2>/dev/null || return 1
	done
}
mbs() { awk -v b="$(field "$CF" bytes)" -v ms="$(field "$CF" ms)" 'BEGIN { if (ms > 0) printf "%.2f", b / ms / 1000; else print 0 }'; }

# ---------------------------------------------------------------- netem
for c in "loss1:loss 1%" "loss5:loss 5%" "reorder:delay 5ms reorder 75% 50%" \
	"duplicate:duplicate 5%" "delay:delay 20ms 10ms distribution normal"; do
	name=${c%%:*} spec=${c#*:}
	# shellcheck disable=SC2086 # the spec is words
	if ! nf_netem "$DEVS" $spec >> "$LOG" 2>&1; then
		nf_netem "$DEVS" none
		nok "netem_$name" "tc qdisc add ... netem $spec failed (see $LOG)"
		continue
	fi
	traffic "netem_$name" "$SECS" -k
	traffic_end
	nf_netem "$DEVS" none
	say "netem $spec: $(mbs) MB/s, $(field "$CF" conns) connection(s), ops:" \
		"$(grep '^RESULT' "$CF" | grep -o ' send=.*' | cut -d' ' -f2-10)"
	r=0
	[ "$CRC" = 0 ] && [ "$SRC" = 0 ] && [ "$(field "$CF" conn_errors)" = 0 ] &&
		[ "$(field "$SF" placed_corrupt)" = 0 ] && every_op || r=1
	[ $r = 0 ] || show
	verdict "netem_$name" $r "netem $spec: client exit $CRC, server exit $SRC (see $CF, $SF)"
done

# ---------------------------------------------------------------- corruption
C0=$OUT/counters.corrupt0
crc0=$(<"$PARAMS/mpa_crc") strict0=$(<"$PARAMS/mpa_crc_strict")
echo 1 > "$PARAMS/mpa_crc" && echo 1 > "$PARAMS/mpa_crc_strict"
counters > "$C0"
# corrupt_round: a round of traffic under the corruption; 1 if it did
# not verify as a netem case must (a round without a corrupted frame ends
# the rounds then, and the verdicts below fail on it)
# shellcheck disable=SC2317 # run by nf_rounds
corrupt_round() {
	traffic corrupt $((SECS * 2)) -r -R 30000 -B 10000
	traffic_end
	[ "$CRC" = 0 ] && [ "$SRC" = 0 ] && [ "$(field "$CF" verify_errors)" = 0 ] &&
		[ "$(field "$SF" verify_errors)" = 0 ] && [ "$(field "$SF" placed_corrupt)" = 0 ]
}
if nf_corrupt "$DEVS" "$CORRUPT_N"; then
	# rounds until a frame was corrupted (netfault.sh); the verdicts
	# below judge the last one
	nf_rounds "$DEVS" "$CORRUPT_ROUNDS" corrupt_round
	say "corruption: $(nf_corrupted "$DEVS") frames corrupted (1 in $CORRUPT_N) in $NF_ROUNDS round(s)"
else
	say "corruption could not be set up (see $LOG)"
	: > "$OUT/corrupt.client"; : > "$OUT/corrupt.server"; CF=$OUT/corrupt.client SF=$OUT/corrupt.server
	CRC=1 SRC=1
fi
nf_corrupt "$DEVS" none
echo "$crc0" > "$PARAMS/mpa_crc"; echo "$strict0" > "$PARAMS/mpa_crc_strict"
crc=$(cdelta "$C0" crc_errors) llp=$(cdelta "$C0" term_tx_llp)
others=$(counters | awk 'NR == FNR { b[$1] = $2; next }
	$1 ~ /^term_tx_/ && $1 != "term_tx_llp" && $2 != b[$1] { printf "%s +%d ", $1, $2 - b[$1] }' "$C0" -)
say "corruption: crc_errors +$crc, term_tx_llp +$llp, other Terminates sent: ${others:-none};" \
	"$(field "$CF" conns) connections, $(field "$CF" conn_errors) ended in error," \
	"$(mbs) MB/s; flushed within $(field "$CF" max_flush_ms) ms (client)," \
	"$(field "$SF" max_flush_ms) ms (server)"
r=0; [ "$crc" -gt 0 ] && [ "$llp" = "$crc" ] || r=1
verdict corrupt_crc_caught $r "crc_errors +$crc, term_tx_llp +$llp: every CRC error must end its stream with an LLP Terminate"
r=0; [ -z "$others" ] && [ "$llp" -gt 0 ] || r=1
verdict corrupt_terminate_llp $r "Terminates sent other than LLP: ${others:-none} (term_tx_llp +$llp)"
r=0
cu=$(field "$CF" unflushed) su=$(field "$SF" unflushed) cv=$(field "$CF" verify_errors) sv=$(field "$SF" verify_errors)
cfm=$(field "$CF" max_flush_ms) sfm=$(field "$SF" max_flush_ms)
[ "$(field "$CF" fatal)" = 0 ] && [ "${cu:-1}" = 0 ] && [ "${su:-1}" = 0 ] &&
	[ "${cv:-1}" = 0 ] && [ "${sv:-1}" = 0 ] && [ "${cfm:-99999999}" -le "$BOUND" ] &&
	[ "${sfm:-99999999}" -le "$BOUND" ] && [ "$(field "$CF" conn_errors)" -ge 1 ] &&
	[ "$(field "$CF" conns)" -ge 2 ] || r=1
[ $r = 0 ] || show
verdict corrupt_flushed $r "client: unflushed ${cu:-?}, verify errors ${cv:-?}, flushed in ${cfm:-?} ms; server: unflushed ${su:-?}, verify errors ${sv:-?}, flushed in ${sfm:-?} ms (bound $BOUND ms); a connection error and a reconnect needed"
say "corrupt: $(field "$SF" race_posted) receives reposted by the server while its QP was in ERR already, $(field "$SF" race_unflushed) of them never completed (each must be flushed too since kernel patch 0033: counted in unflushed as well)"
pc=$(field "$SF" placed_corrupt)
r=0; [ "${pc:-1}" = 0 ] || { r=1; grep -h '^# placed_corrupt' "$SF" | head -n 5; }
verdict corrupt_never_placed $r "words in the server's Write targets that no write of the client wrote (a corrupted FPDU placed): ${pc:-?}"

# ---------------------------------------------------------------- reset
# Each reset once the client runs on a connection (not after fixed sleeps:
# a loaded host makes the reconnect slower than any guess), then the
# client stopped (SIGINT: it drains and disconnects) on its third.
# conn_up K: until the client's connection K is established (60 s)
conn_up() { wait_client "^# client: connection $1 established" 60; }
# ss -K destroys through sock_diag; without it ss lists the sockets from
# /proc and destroys none
[ -d /sys/module/inet_diag ] ||
	say "reset: no inet_diag in this kernel (CONFIG_INET_DIAG, CONFIG_INET_DIAG_DESTROY): ss -K cannot reset a connection"
traffic reset 300 -r -R 30000 -B 10000
conn_up 1 || say "reset: the client's first connection did not come up"
sleep $((SECS / 2))
say "reset 1: $(ss -HtnK state established "( sport = :$TRAFFIC_PORT )" | wc -l) socket(s) destroyed on siw0's side"
conn_up 2 || say "reset: the client did not connect again after reset 1"
sleep $((SECS / 2))
say "reset 2: $(nsx ss -HtnK state established "( dport = :$TRAFFIC_PORT )" | wc -l) socket(s) destroyed on siw1's side"
conn_up 3 || say "reset: the client did not connect again after reset 2"
sleep $((SECS / 2))
kill -INT "$CPID" 2>/dev/null
traffic_end
cu=$(field "$CF" unflushed) su=$(field "$SF" unflushed) cv=$(field "$CF" verify_errors) sv=$(field "$SF" verify_errors)
cfm=$(field "$CF" max_flush_ms) sfm=$(field "$SF" max_flush_ms)
say "reset: $(field "$CF" conns) connections, $(field "$CF" conn_errors) ended in error;" \
	"outstanding WRs flushed within ${cfm:-?} ms (client), ${sfm:-?} ms (server); $(mbs) MB/s"
grep -h '^# client: connection .*error after\|^# server: connection .*ended' "$CF" "$SF" >> "$LOG"
r=0
[ "$(field "$CF" fatal)" = 0 ] && [ "${cu:-1}" = 0 ] && [ "${su:-1}" = 0 ] &&
	[ "${cv:-1}" = 0 ] && [ "${sv:-1}" = 0 ] && [ "${cfm:-99999999}" -le "$BOUND" ] &&
	[ "${sfm:-99999999}" -le "$BOUND" ] && [ "$(field "$CF" conn_errors)" -ge 2 ] &&
	[ "$(field "$SF" placed_corrupt)" = 0 ] || r=1
[ $r = 0 ] || show
verdict reset_flushed $r "client: unflushed ${cu:-?}, verify errors ${cv:-?}, flushed in ${cfm:-?} ms; server: unflushed ${su:-?}, verify errors ${sv:-?}, flushed in ${sfm:-?} ms (bound $BOUND ms); two connection errors expected, $(field "$CF" conn_errors) seen"
r=0; [ "${CRC}" = 0 ] && [ "$(field "$CF" conns)" -ge 3 ] || r=1
verdict reset_new_connection $r "client exit $CRC after $(field "$CF" conns) connections (3 expected: one before and one after each reset)"

# ---------------------------------------------------------------- silent peer
PT=${SIWX_FAULTS_PEER_TIMEOUT:-10}
pt0=$(cat "$PARAMS/peer_timeout" 2>/dev/null)
echo "$PT" > "$PARAMS/peer_timeout" || say "siw has no peer_timeout parameter"
nf_netem veth0 rate 1mbit >> "$LOG" 2>&1
traffic silent 600 -Q -B 60000
wait_client 'connection 1 established' 30
sleep 2
t0=$(date +%s%N)
nf_netem veth0 loss 100% >> "$LOG" 2>&1
wait_bounded "$CPID" $((PT * 3 + 30)) "client (the server silent)"; k=$?
ms=$((($(date +%s%N) - t0) / 1000000))
wait "$CPID"; CRC=$?
[ "$k" = 0 ] || CRC=124
nf_netem veth0 none
kill -TERM "$SPID" 2>/dev/null
wait_bounded "$SPID" 30 "server (SIGTERM sent)"
wait "$SPID"; SRC=$?
{ echo "---- $CF"; cat "$CF"; echo "---- $SF"; cat "$SF"; } >> "$LOG"
[ -z "$pt0" ] || echo "$pt0" > "$PARAMS/peer_timeout"
el=$(grep '^# client: connection 1: error after' "$CF")
# the error's wall clock (the client's own line) against the cut's
ea=$(sed -n 's/^# client: connection 1: first error at realtime \([0-9]*\) ms$/\1/p' "$CF")
em=$([ -n "$ea" ] && echo $((ea - t0 / 1000000)))
say "silent server: the client's connection ended ${em:-?} ms after the server fell silent" \
	"(peer_timeout $PT s), the client exited after ${ms} ms: ${el#\# client: };" \
	"$(field "$CF" bulk_read) Reads completed before"
r=0
[ "$CRC" = 0 ] && [ -n "$el" ] && [ "$(field "$CF" unflushed)" = 0 ] &&
	[ "$(field "$CF" verify_errors)" = 0 ] && [ "$(field "$CF" bulk_read)" -gt 0 ] &&
	[ -n "$em" ] && [ "$em" -le $((PT * SILENT_X10 * 100)) ] || r=1
[ $r = 0 ] || show
verdict silent_peer_flushed $r "client exit $CRC, its connection ended ${em:-never} ms after the server fell silent, bound $((PT * SILENT_X10 * 100)) ms ($((SILENT_X10 / 10)).$((SILENT_X10 % 10)) x peer_timeout $PT s)"

# ---------------------------------------------------------------- late posts
lp=0 lu=0
for f in "$OUT"/*.server; do	# a server without a RESULT line counts none
	p=$(field "$f" late_posted) u=$(field "$f" late_unflushed)
	lp=$((lp + ${p:-0})) lu=$((lu + ${u:-0}))
done
grep -h '^# server: .*\(posted to the QP in ERR\|posted in ERR\)' "$OUT"/*.server | sort | uniq -c | sed 's/^ */# /' | head -n 3
# kernel patch 0033 and rdma-core patch 0015; failed before
r=0; [ "$lp" -gt 0 ] && [ "$lu" = 0 ] || r=1
verdict recv_after_error_flushed $r "of $lp receives posted to a QP in ERR (after the first connection of each server run), $lu never completed (siw marks the free slots of a user QP's receive queue when the QP enters ERR, libsiw then posts through the kernel, which flushes)"

# ---------------------------------------------------------------- the end
left=$( { rdma res show qp; nsx rdma res show qp; rdma res show mr; nsx rdma res show mr; } 2>/dev/null | grep -c 'siw')
res=$( { rdma resource show; nsx rdma resource show; } 2>/dev/null | sort -u | tr '\n' ';')
echo "rdma resource: $res" >> "$LOG"
r=0; [ "$left" = 0 ] && ! echo "$res" | grep -qE ' (pd|cq|qp|cm_id|mr) [1-9]' || r=1
verdict resources_back $r "left: $left QP/MR lines; $res"
probs=$(dmesg | tail -n +"$((KLOG0 + 1))" | grep -E "$KERNEL_PROBLEMS")
r=0; [ -z "$probs" ] || r=1
verdict kernel_log_clean $r "$(echo "$probs" | head -n 3)"
dmesg | tail -n +"$((KLOG0 + 1))" > "$OUT/faults.dmesg"
exit $FAILED
