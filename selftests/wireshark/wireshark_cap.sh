#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# wireshark_cap.sh - suite wireshark_cap (single VM): one capture of real
# siwx traffic with everything tools/wireshark/siwx.lua decodes, for the
# host suite wireshark (selftests/wireshark/wireshark.sh), which compares
# the dissector's fields with selftests/lib/iwarp_capture.py on it. The
# committed reference capture selftests/wireshark/pcaps/siwx.pcap.gz is one
# of these.
#
# While dumpcap records lo (traffic between the two local veth addresses
# flows over lo, Documentation/vm.md):
#   imm_peer ops       Sends, RDMA Writes with Immediate (Immediate Data,
#                      with and without SE), a plain Write
#   atomic_peer ops    FetchAdd/CmpSwap, masked and not, Reads between
#   flush              fl.global_range.aw_pipeline (Writes, Flushes of a
#                      range, Atomic Writes), SIWX_FLUSH_ROUNDS=4
#   flush, P2P         fl.global_mr.selectivity (Flushes of the whole MR)
#                      with mpa_p2p=1, mpa_rtr_offer=send,write,read: the
#                      IRD/ORD word with A and RTR bits, and an RTR
#   imm_peer norecv    with mpa_ird_ord=ulp and mpa_p2p=1 (ulp alone makes
#                      a revision 1 Request): IRD/ORD 0x3FFF, a Terminate
# Every connection without mpa_p2p is an enhanced one too (the default
# mpa_ird_ord=relaxed sends the IRD/ORD word). The module parameters are
# restored afterwards.
#
# Output: SIWX_RESULTS/wireshark_cap.pcap.gz (gzip -9) and the programs'
# logs; TAP: each program ran, and iwarp_capture.py finds each kind of
# message in the capture.
#
# The protocol counters of siw0 and siw1 (ports/1/hw_counters, 'rdma
# statistic show link') are read before the capture starts and after it
# stopped (SIWX_RESULTS/wireshark_cap.counters/); counters_check.py checks
# what they counted against the capture (wireshark_cap.counters.*). siw1
# counts per QP meanwhile ('rdma statistic qp set link siw1/1 auto type
# on', sampled every half second, then during 6 s of ib_send_bw after the
# capture): its link totals then include what its QPs counted while bound,
# and counters_check.py checks those too.
#
# Environment: SIWX_BIN, SIWX_RESULTS, SIWX_ADDR0/1 (passed on),
# SIWX_WIRESHARK_CAP_PORT (first port of imm_peer/atomic_peer, 40401).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SIWX_BIN:-$HERE/../../build/selftests/bin}
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
PORT0=${SIWX_WIRESHARK_CAP_PORT:-40401}
PY=$(command -v /usr/bin/python3 || command -v python3)
PAR=/sys/module/siw/parameters
TESTS=(capture imm_peer_ops atomic_peer_ops flush_aw_pipeline
       flush_selectivity_p2p imm_peer_norecv_ulp contents)

all_fail() {	# REASON
	local i=1 t
	echo "TAP version 13"
	echo "1..${#TESTS[@]}"
	echo "# $1"
	for t in "${TESTS[@]}"; do
		echo "not ok $i wireshark_cap.$t"
		i=$((i + 1))
	done
	exit 1
}

. "$HERE/../lib/capture.sh"
[ -x "$DUMPCAP" ] || all_fail "dumpcap not installed (apt-get install tshark)"
[ -n "$PY" ] || all_fail "python3 not installed"
for p in imm_peer atomic_peer flush; do
	[ -x "$BIN/$p" ] || all_fail "$BIN/$p missing (make selftests)"
done
[ -w "$PAR/mpa_p2p" ] || all_fail "$PAR not writable (siw not loaded?)"

saved=()
for p in mpa_p2p mpa_rtr_offer mpa_ird_ord; do
	saved+=("$p=$(cat "$PAR/$p")")
done
restore() {
	local s
	for s in "${saved[@]}"; do
		echo "${s#*=}" > "$PAR/${s%%=*}" 2>/dev/null
	done
}
trap restore EXIT

CNT=$OUT/wireshark_cap.counters
rm -rf "$CNT"
mkdir -p "$CNT"
# counters_read WHEN: each device's hw_counters as "name value" lines
counters_read() {
	local d f
	for d in siw0 siw1; do
		for f in "/sys/class/infiniband/$d/ports/1/hw_counters/"*; do
			[ "${f##*/}" = lifespan ] && continue
			echo "${f##*/} $(cat "$f")"
		done > "$CNT/$d.$1"
	done
}
echo "${SIWX_ADDR0:-192.168.77.1}" > "$CNT/siw0.addr"
echo "${SIWX_ADDR1:-192.168.77.2}" > "$CNT/siw1.addr"
counters_read before
# per QP: siw1's QPs bound to counters in auto mode for the whole run, a
# sample of 'rdma statistic qp show' every half second
qp_auto_off() {
	rdma statistic qp set link siw0/1 auto off 2>/dev/null
	rdma statistic qp set link siw1/1 auto off 2>/dev/null
}
rdma statistic qp set link siw1/1 auto type on > "$CNT/qp_auto.txt" 2>&1
echo $? > "$CNT/qp_auto.rc"
trap 'restore; qp_auto_off' EXIT
(
	while [ ! -e "$CNT/qp.stop" ]; do
		rdma statistic qp show 2>&1
		echo --
		sleep 0.5
	done > "$CNT/qp.samples"
) &
QP_SAMPLER=$!

# -P: libpcap, which iwarp_capture.py reads (dumpcap writes pcapng)
cap_start wireshark_cap "tcp" -P ||
	all_fail "dumpcap did not start: $(tr '\n' ' ' < "$CAP_LOG")"
LOG=$CAP_LOG
n=1
RES=()
run() {	# NAME TIMEOUT COMMAND...
	local name=$1 t=$2 rc
	shift 2
	timeout "$t" "$@" > "$OUT/wireshark_cap.$name.out" 2>&1
	rc=$?
	echo "$name: $* exit $rc" >> "$LOG"
	RES+=("$rc")
}
run imm_peer_ops 90 "$BIN/imm_peer" ops "$PORT0"
run atomic_peer_ops 90 "$BIN/atomic_peer" ops "$((PORT0 + 1))"
SIWX_FLUSH_ROUNDS=4 run flush_aw_pipeline 120 "$BIN/flush" \
	-r fl.global_range.aw_pipeline
echo 1 > "$PAR/mpa_p2p"
echo send,write,read > "$PAR/mpa_rtr_offer"
SIWX_FLUSH_ROUNDS=4 run flush_selectivity_p2p 120 "$BIN/flush" \
	-r fl.global_mr.selectivity
restore
echo ulp > "$PAR/mpa_ird_ord"
echo 1 > "$PAR/mpa_p2p"
run imm_peer_norecv_ulp 90 "$BIN/imm_peer" norecv "$((PORT0 + 2))"
restore
cap_stop
PCAP=$CAP_PCAP
touch "$CNT/qp.stop"
wait "$QP_SAMPLER"
qp_auto_off
# the counters are cached for the stats' lifespan (10 ms)
sleep 0.1
counters_read after
for d in siw0 siw1; do
	rdma -j statistic show link "$d/1" > "$CNT/$d.rdma.json" 2>&1
done
# A QP that lives long enough to be sampled for sure (the capture's QPs
# may all come and go between two samples under TCG): 6 s of ib_send_bw
# outside the capture and after the link counters were read, both devices
# in auto mode (with both addresses in one namespace, a VM booted without
# --netns, rdma_cm may put both ends on siw0);
# 'rdma statistic qp show' until a counter with a QP has Sends in it
rdma statistic qp set link siw0/1 auto type on >> "$CNT/qp_auto.txt" 2>&1
SIWX_RESULTS=$CNT "$HERE/../../tools/vm/perftest-run" single ib_send_bw -D 6 \
	> "$CNT/qp_perftest.txt" 2>&1 &
QP_PT=$!
: > "$CNT/qp.live"
for ((i = 0; i < 60; i++)); do
	rdma statistic qp show > "$CNT/qp.live" 2>&1
	grep -q -E '^link siw[01]/1 .* [rt]x_send_fpdus [1-9]' "$CNT/qp.live" &&
		grep -q LQPN "$CNT/qp.live" && break
	sleep 0.5
done
wait "$QP_PT"
echo $? > "$CNT/qp_perftest.rc"
# the counters go with their last QP
rdma statistic qp show > "$CNT/qp.after" 2>&1

echo "TAP version 13"
[ -n "$CAP_SUMMARY" ] && echo "$CAP_SUMMARY"
if [ -s "$PCAP" ] && gzip -9 -c "$PCAP" > "$OUT/wireshark_cap.pcap.gz"; then
	echo "# $(stat -c %s "$PCAP") bytes, $(stat -c %s "$OUT/wireshark_cap.pcap.gz") gzip'd"
	echo "ok $n wireshark_cap.capture"
else
	echo "not ok $n wireshark_cap.capture"
fi
rm -f "$PCAP"
fails=0
i=0
for t in "${TESTS[@]:1:5}"; do
	n=$((n + 1))
	if [ "${RES[$i]}" = 0 ]; then
		echo "ok $n wireshark_cap.$t"
	else
		sed 's/^/# /' "$OUT/wireshark_cap.$t.out" | tail -n 20
		echo "not ok $n wireshark_cap.$t # exit ${RES[$i]}"
		fails=$((fails + 1))
	fi
	i=$((i + 1))
done
n=$((n + 1))
if "$PY" "$HERE/wireshark_suite.py" contents "$OUT/wireshark_cap.pcap.gz"; then
	echo "ok $n wireshark_cap.contents"
else
	echo "not ok $n wireshark_cap.contents"
	fails=$((fails + 1))
fi
# the counters against the capture
zcat "$OUT/wireshark_cap.pcap.gz" > "$CNT/capture.pcap" 2>/dev/null
"$PY" "$HERE/counters_check.py" "$CNT/capture.pcap" "$CNT" "$((n + 1))" > "$CNT/tap.txt" 2>&1 ||
	fails=$((fails + 1))
cat "$CNT/tap.txt"
c=$(grep -c -E '^(not )?ok ' "$CNT/tap.txt")
if [ "$c" = 0 ]; then
	c=1
	echo "not ok $((n + 1)) wireshark_cap.counters (counters_check.py printed no result)"
fi
n=$((n + c))
rm -f "$CNT/capture.pcap"
echo "1..$n"
echo "# capture: $OUT/wireshark_cap.pcap.gz; log: $LOG"
[ "$fails" = 0 ]
