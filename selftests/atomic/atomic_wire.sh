#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# atomic_wire.sh - RFC 7306 Atomic Requests, Responses and the Terminate
# of an invalid request, decoded from the raw bytes on the wire. TAP
# output. Runs in the single-VM topology.
#
# atomic_peer runs three connections (ports PORT0, +1, +2) while dumpcap
# records them: 'ops' (masked and unmasked FetchAdd/CmpSwap with
# distinctive operands, RDMA Reads in between), 'bad_stag' (a valid
# FetchAdd, then one with a wrong STag) and 'misaligned' (a CmpSwap 4 bytes
# off alignment). Traffic between the two local veth addresses flows over
# lo (see Documentation/vm.md), so lo is captured. tshark only extracts
# the TCP payload bytes (and, as a cross-check, its reading of the
# Terminate); atomic_wire.py reassembles each direction, parses MPA, DDP,
# RDMAP and the RFC 7306 headers itself and checks them against the
# operands atomic_peer posted and an independent model of the operations.
#
# Environment: SIWX_BIN (dir holding atomic_peer), SIWX_RESULTS (capture
# and logs are kept there), SIWX_ADDR0/1 (passed on), SIWX_ATOMIC_WIRE_PORT
# (first port, 40201).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SIWX_BIN:-$HERE/../../build/selftests/bin}
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
PORT0=${SIWX_ATOMIC_WIRE_PORT:-40201}
PY=$(command -v /usr/bin/python3 || command -v python3)
CASES=(ops bad_stag misaligned)
TESTS=(capture_decoded request_headers request_operands msn_shared_with_read
       response_headers response_request_ids original_values
       read_responses_see_atomics term_bad_stag term_misaligned
       term_ddp_segment_length)

all_fail() {	# REASON
	local i=1 t
	echo "TAP version 13"
	echo "1..${#TESTS[@]}"
	echo "# $1"
	for t in "${TESTS[@]}"; do
		echo "not ok $i atomic_wire.$t"
		i=$((i + 1))
	done
	exit 1
}

. "$HERE/../lib/capture.sh"
[ -x "$DUMPCAP" ] || all_fail "dumpcap not installed (apt-get install tshark)"
[ -x "$TSHARK" ] || all_fail "tshark not installed (apt-get install tshark)"
[ -n "$PY" ] || all_fail "python3 not installed"
[ -x "$BIN/atomic_peer" ] || all_fail "$BIN/atomic_peer missing (make selftests)"

TSV=$OUT/atomic_wire.frames.tsv
rm -f "$TSV"
last=$((PORT0 + ${#CASES[@]} - 1))
cap_start atomic_wire "tcp portrange $PORT0-$last" ||
	all_fail "dumpcap did not start: $(tr '\n' ' ' < "$CAP_LOG")"
LOG=$CAP_LOG

ARGS=()
port=$PORT0
for c in "${CASES[@]}"; do
	po=$OUT/atomic_wire.$c.out
	timeout 90 "$BIN/atomic_peer" "$c" "$port" > "$po" 2>&1
	echo "atomic_peer $c (port $port) exit $?" >> "$LOG"
	ARGS+=("$c:$port:$po")
	port=$((port + 1))
done
cap_stop
PCAP=$CAP_PCAP

# One tshark pass (slow to start under TCG): the payload of every TCP
# segment, relative sequence numbers, and tshark's Terminate fields.
"$TSHARK" -r "$PCAP" "${TSHARK_IWARP[@]}" \
	-o tcp.relative_sequence_numbers:TRUE \
	-Y 'tcp.len > 0' -T fields -E separator=/t -E occurrence=f \
	-e frame.number -e tcp.srcport -e tcp.dstport -e tcp.seq -e tcp.len \
	-e tcp.payload -e iwarp_rdma.term_layer -e iwarp_rdma.term_etype_rdma \
	-e iwarp_rdma.term_errcode_rdma -e iwarp_rdma.term_hdrct_m \
	-e iwarp_rdma.hdrct_d -e iwarp_rdma.hdrct_r \
	> "$TSV" 2>>"$LOG"

"$PY" "$HERE/atomic_wire.py" "$TSV" "${ARGS[@]}"
rc=$?
for c in "${CASES[@]}"; do
	echo "# atomic_peer $c:"
	sed 's/^/#   /' "$OUT/atomic_wire.$c.out"
done
[ -z "$CAP_SUMMARY" ] || echo "$CAP_SUMMARY"
echo "# capture: $PCAP; frames: $TSV"
exit $rc
