#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# fuzz.sh - the receive-path fuzzer against siw0. TAP output. Single-VM
# topology (tools/vm/run --netns).
#
# fuzz_target (selftests/fuzz) listens with rdma_cm on SIWX_ADDR0 and
# serves one connection after the other; tools/fuzz's siwx-fuzz runs in
# siw1's namespace (its TCP crosses the veth pair), connects to the target
# as MPA initiator and, from SIWX_ADDR1, takes the target's connections as
# MPA responder, and throws FPDU streams at it (tools/fuzz/README).
#
# Tests:
#   fuzz.replay.NAME   every stored replay (selftests/fuzz/replays/*.fz):
#                      the connection passes now (each is a bug once found)
#   fuzz.stream        SIWX_FUZZ_FRAMES frames (20000) from SIWX_FUZZ_SEED
#                      (default: fixed, 0x5eed0001, so CI runs the same
#                      slice) without a failure: target verdicts (memory,
#                      QP teardown), Terminate or a working connection on
#                      the wire, the next connection made
#   fuzz.terminate_sent  no connection with intact framing closed without
#                      a Terminate, and no Terminate siw dropped (its debug
#                      messages "cannot send TERMINATE: ..." and "sent
#                      TERM: failure", switched on here). Patches 0027-0030
#                      closed the ways siw lost them (reliability.md)
#   fuzz.target        fuzz_target ended with every verdict ok, exit 0
#   fuzz.params_restored  siw's MPA module parameters, which the target
#                      sets for the connections siw initiates, as they were
#                      before the suite (the suites after it depend on them)
#   fuzz.resources     siw0's rdma resources (PD, CQ, QP, MR, cm_id) back to
#                      what they were before the suite
#   fuzz.kernel_clean  no kernel problem (tools/vm/kernel-problems.sh) in
#                      dmesg since the suite started
# The report (fuzz.log: progress, outcome table, summary), the target's
# log and any replay of a failure go to SIWX_RESULTS/fuzz/.
#
# Environment: SIWX_FUZZ_FRAMES, SIWX_FUZZ_SECONDS (a time limit, none by
# default), SIWX_FUZZ_SEED, SIWX_FUZZ_MINIMISE=1 (shrink failures),
# SIWX_FUZZ_REPLAYS (another directory of replays), SIWX_FUZZ_CAPTURE=1
# (capture the VM link, 200 bytes a frame, to fuzz/*.pcap for each replay
# and the slice, and switch on siw's messages about Terminates, closes and
# CM works; for finding out why a connection failed), SIWX_FUZZ_VERBOSE=1
# (a line per connection), SIWX_FUZZ_ARGS (more
# siwx-fuzz options, e.g. "--roles resp --debug"), SIWX_FUZZ_BIN (siwx-fuzz),
# SIWX_BIN, SIWX_ADDR0, SIWX_ADDR1, SIWX_NETNS1, SIWX_RESULTS.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BIN=${SIWX_BIN:-$TOP/build/selftests/bin}
FUZZ=${SIWX_FUZZ_BIN:-${BIN%/selftests/bin}/tools/fuzz/siwx-fuzz}	# the same build's
A0=${SIWX_ADDR0:-192.168.77.1}
A1=${SIWX_ADDR1:-192.168.77.2}
IN_NS=()
[ -z "${SIWX_NETNS1:-}" ] || IN_NS=(ip netns exec "$SIWX_NETNS1")
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}/fuzz
FRAMES=${SIWX_FUZZ_FRAMES:-20000}
SEED=${SIWX_FUZZ_SEED:-0x5eed0001}
# shellcheck source=../../tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"
mkdir -p "$OUT"

mapfile -t REPLAYS < <(ls "${SIWX_FUZZ_REPLAYS:-$HERE/replays}"/*.fz 2>/dev/null)
echo "1..$((6 + ${#REPLAYS[@]}))"
n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n fuzz.$1"; }
notok() { n=$((n + 1)); echo "not ok $n fuzz.$1"; fails=$((fails + 1)); }

# siw0's resource counts: "pd N cq N qp N cm_id N mr N"
res() {
	rdma resource show 2>/dev/null | awk '$2 == "siw0:" {
		for (i = 3; i < NF; i += 2) if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s %s ", $i, $(i + 1) }'
}
slab() { awk '$1 == "Slab:" { print $2 }' /proc/meminfo; }
# siw0's protocol counters (Documentation/counters.md), "name value" lines
counters() {
	local f
	for f in /sys/class/infiniband/siw0/ports/1/hw_counters/*; do
		[ -r "$f" ] && echo "${f##*/} $(<"$f")"
	done
}
# counters_delta BEFORE-FILE: the ones that changed, "name +delta"
counters_delta() {
	counters | awk 'NR == FNR { b[$1] = $2; next }
		$2 ~ /^[0-9]+$/ && $2 != b[$1] { printf "%s +%d\n", $1, $2 - b[$1] }' "$1" -
}

echo "fuzz: suite start" >/dev/kmsg
# fuzz_target sets siw's MPA parameters for the connections it makes
# (mpa_rev, mpa_p2p, mpa_rtr_offer, mpa_crc): the suites after this one
# in the same boot get them back as they were
PARAMS=/sys/module/siw/parameters
SAVED=()
for p in mpa_rev mpa_p2p mpa_rtr_offer mpa_crc; do
	[ -w "$PARAMS/$p" ] && SAVED+=("$p=$(<"$PARAMS/$p")")
done
restore_params() {
	local kv
	for kv in "${SAVED[@]}"; do echo "${kv#*=}" >"$PARAMS/${kv%%=*}"; done
}
trap restore_params EXIT
# siw's message of a Terminate it drops (siw_send_terminate())
DYN=/sys/kernel/debug/dynamic_debug/control
[ -e "$DYN" ] || mount -t debugfs none /sys/kernel/debug 2>/dev/null
{ echo 'module siw format "cannot send TERMINATE" +p' >"$DYN" &&
	echo 'module siw format "sent TERM" +p' >"$DYN"; } 2>/dev/null ||
	echo "# cannot switch on siw's dropped-Terminate messages"
# Terminates siw dropped: a transmit in progress, or the socket full of
# what it transmits (kernel_sendmsg(MSG_DONTWAIT) failed)
dropped_terms() {
	dmesg | grep -cE 'cannot send TERMINATE: (op|QP locked)|sent TERM: failure'
}
# SIWX_FUZZ_CAPTURE=1: captures, and what siw does about closes
CAPTURE=${SIWX_FUZZ_CAPTURE:-0}
if [ "$CAPTURE" != 0 ]; then
	# shellcheck source=../lib/capture.sh
	. "$TOP/selftests/lib/capture.sh"
	for f in "no work available" "rx error" "init TERM" "llp close" \
		"work type"; do
		echo "module siw format \"$f\" +p" >"$DYN"
	done
fi
cap() {		# start NAME | stop: capture the VM link if asked to
	[ "$CAPTURE" != 0 ] || return 0
	case $1 in
	start) cap_start "$2" tcp -s 200 || echo "# $2: no capture" ;;
	stop) cap_stop && echo "# capture $CAP_PCAP" ;;
	esac
}
# SIWX_FUZZ_DYNDBG=1: all of siw's debug messages (slow; for replays)
[ "${SIWX_FUZZ_DYNDBG:-0}" = 0 ] || echo 'module siw +p' >"$DYN"
res0=$(res) slab0=$(slab)
port=42000
start_target() {	# NAME: fuzz_target on port, port+1 (control)
	local i
	"$BIN/fuzz_target" --addr "$A0" --port "$port" --ctl $((port + 1)) \
		--seed 0x1234 >"$OUT/$1.target" 2>&1 &
	TPID=$!
	# the fuzzer connects to the control port at once: wait until the
	# target listens there (a boot's first listen takes seconds on the
	# debug kernel; the fuzzer got "connection refused" once)
	for ((i = 0; i < 300; i++)); do
		grep -q '^target control listening' "$OUT/$1.target" 2>/dev/null && return
		kill -0 "$TPID" 2>/dev/null || return
		sleep 0.1
	done
}
# RUN NAME FUZZ-ARGS...: target + siwx-fuzz; FRC and TRC their exit codes
run() {
	local name=$1
	shift
	start_target "$name"
	"${IN_NS[@]}" "$FUZZ" --port "$port" --ctl $((port + 1)) \
		--listen-addr "$A1" --out "$OUT" "$@" "$A0" >"$OUT/$name.log" 2>&1
	FRC=$?
	# the target ends on the fuzzer's "q"; a fuzzer that died leaves it
	# waiting on its control connection, which then closes
	for _ in $(seq 1 100); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.2; done
	kill "$TPID" 2>/dev/null
	wait "$TPID"
	TRC=$?
	port=$((port + 3))
}

for f in "${REPLAYS[@]}"; do
	name=replay.$(basename "$f" .fz)
	counters >"$OUT/$name.counters0"
	cap start "$name"
	# shellcheck disable=SC2086  # options, split on blanks
	run "$name" --replay "$f" ${SIWX_FUZZ_ARGS:-}
	cap stop
	counters_delta "$OUT/$name.counters0" >"$OUT/$name.counters"
	if [ "$FRC" = 0 ] && [ "$TRC" = 0 ]; then
		ok "$name"
	else
		echo "# $(grep -m2 -E '^replay|FAIL' "$OUT/$name.log")"
		tail -n 3 "$OUT/$name.target" | sed 's/^/#   /'
		notok "$name"
	fi
done

extra=()
[ -z "${SIWX_FUZZ_SECONDS:-}" ] || extra+=(--seconds "$SIWX_FUZZ_SECONDS")
[ "${SIWX_FUZZ_MINIMISE:-0}" = 0 ] || extra+=(--minimise)
[ "${SIWX_FUZZ_VERBOSE:-0}" = 0 ] || extra+=(--verbose)
# shellcheck disable=SC2206  # options, split on blanks
[ -z "${SIWX_FUZZ_ARGS:-}" ] || extra+=($SIWX_FUZZ_ARGS)
dropped0=$(dropped_terms)
counters >"$OUT/stream.counters0"
cap start stream
run stream --seed "$SEED" --frames "$FRAMES" "${extra[@]}"
cap stop
dropped=$(($(dropped_terms) - dropped0))
grep -E '^fuzz (done|outcome)' "$OUT/stream.log" | sed 's/^/# /'
counters_delta "$OUT/stream.counters0" >"$OUT/stream.counters"
echo "# siw0 counters: $(tr '\n' ' ' <"$OUT/stream.counters")"
cwt=$(grep -c '^fuzz FAIL .*class=closed_without_terminate' "$OUT/stream.log")
other=$(grep '^fuzz FAIL ' "$OUT/stream.log" | grep -vc 'class=closed_without_terminate')
if grep -q '^fuzz done ' "$OUT/stream.log" && [ "$other" = 0 ]; then
	ok stream
else
	echo "# siwx-fuzz exit $FRC, $other failures"
	grep -E 'FAIL|replay|siwx-fuzz:|mpa-peer:' "$OUT/stream.log" |
		grep -v 'class=closed_without_terminate' | head -n 20 | sed 's/^/#   /'
	notok stream
fi
echo "# closed without a Terminate: $cwt connections; siw dropped $dropped Terminates"
if [ "$cwt" = 0 ] && [ "$dropped" = 0 ]; then
	ok terminate_sent
else
	grep 'class=closed_without_terminate' "$OUT/stream.log" | head -n 3 | sed 's/^/#   /'
	dmesg | grep -E 'cannot send TERMINATE: (op|QP locked)|sent TERM: failure' | tail -n 3 | sed 's/^/#   /'
	notok terminate_sent
fi
if [ "$TRC" = 0 ] && grep -q '^target done .* bad=0$' "$OUT/stream.target"; then
	ok target
else
	echo "# fuzz_target exit $TRC"
	grep -vE '^v [0-9]+ (ok|refused)' "$OUT/stream.target" | tail -n 12 | sed 's/^/#   /'
	notok target
fi

restore_params
bad=()
for kv in "${SAVED[@]}"; do
	[ "$(<"$PARAMS/${kv%%=*}")" = "${kv#*=}" ] || bad+=("${kv%%=*}")
done
if [ ${#bad[@]} = 0 ]; then
	ok params_restored
else
	echo "# siw parameters not as before: ${bad[*]}"
	notok params_restored
fi

res1=$(res)
for _ in $(seq 1 25); do [ "$res1" = "$res0" ] && break; sleep 0.2; res1=$(res); done
echo "# siw0 resources before: $res0; after: $res1; Slab ${slab0} kB -> $(slab) kB"
if [ -n "$res0" ] && [ "$res1" = "$res0" ]; then ok resources; else notok resources; fi

dmesg >"$OUT/dmesg" 2>&1
mapfile -t P < <(sed -n '/fuzz: suite start/,$p' "$OUT/dmesg" | grep -E "$KERNEL_PROBLEMS")
if [ ${#P[@]} = 0 ]; then
	ok kernel_clean
else
	for l in "${P[@]:0:12}"; do echo "#   ${l:0:300}"; done
	notok kernel_clean
fi
[ "$fails" = 0 ]
