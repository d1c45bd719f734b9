#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# imm_wire.sh - RFC 7306 Immediate Data on the wire, decoded from the raw
# bytes. TAP output. Runs in the single-VM topology.
#
# imm_peer runs two connections while dumpcap records them: 'ops' (port
# PORT0: Sends and RDMA Writes with Immediate, zero-length, solicited,
# inline, one longer than an FPDU, one right after a plain RDMA Write) and
# 'norecv' (PORT0+1: a zero-length write with immediate to a QP without a
# receive). Traffic between the two local veth addresses flows over lo
# (Documentation/vm.md), so lo is captured.
#
# tshark 4.0 does not decode RDMAP opcodes 0x8/0x9 (it shows "Unknown
# (0x8)"): it only extracts the TCP payload bytes here, plus its reading of
# the Terminate as a cross-check. imm_wire.py reassembles each direction
# and parses MPA, DDP, RDMAP and the Immediate Data message itself.
#
# Environment: SIWX_BIN (dir holding imm_peer), SIWX_RESULTS (capture and
# logs are kept there), SIWX_ADDR0/1 (passed on), SIWX_IMM_WIRE_PORT
# (first port, 40301).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SIWX_BIN:-$HERE/../../build/selftests/bin}
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
PORT0=${SIWX_IMM_WIRE_PORT:-40301}
PY=$(command -v /usr/bin/python3 || command -v python3)
CASES=(ops norecv)
TESTS=(capture_decoded imm_headers imm_payload imm_opcode_se
       qn0_msn_shared_with_send write_before_imm receiver_completions
       term_no_receive term_no_receive_tshark)

all_fail() {	# REASON
	local i=1 t
	echo "TAP version 13"
	echo "1..${#TESTS[@]}"
	echo "# $1"
	for t in "${TESTS[@]}"; do
		echo "not ok $i imm_wire.$t"
		i=$((i + 1))
	done
	exit 1
}

. "$HERE/../lib/capture.sh"
[ -x "$DUMPCAP" ] || all_fail "dumpcap not installed (apt-get install tshark)"
[ -x "$TSHARK" ] || all_fail "tshark not installed (apt-get install tshark)"
[ -n "$PY" ] || all_fail "python3 not installed"
[ -x "$BIN/imm_peer" ] || all_fail "$BIN/imm_peer missing (make selftests)"

TSV=$OUT/imm_wire.frames.tsv
rm -f "$TSV"
last=$((PORT0 + ${#CASES[@]} - 1))
cap_start imm_wire "tcp portrange $PORT0-$last" ||
	all_fail "dumpcap did not start: $(tr '\n' ' ' < "$CAP_LOG")"
LOG=$CAP_LOG

ARGS=()
port=$PORT0
for c in "${CASES[@]}"; do
	po=$OUT/imm_wire.$c.out
	timeout 90 "$BIN/imm_peer" "$c" "$port" > "$po" 2>&1
	echo "imm_peer $c (port $port) exit $?" >> "$LOG"
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
	-e tcp.payload -e iwarp_rdma.term_layer -e iwarp_rdma.term_etype_ddp \
	-e iwarp_rdma.term_errcode_ddp_untagged -e iwarp_rdma.term_hdrct_m \
	-e iwarp_rdma.hdrct_d -e iwarp_rdma.hdrct_r -e iwarp_rdma.opcode \
	> "$TSV" 2>>"$LOG"

"$PY" "$HERE/imm_wire.py" "$TSV" "${ARGS[@]}"
rc=$?
for c in "${CASES[@]}"; do
	echo "# imm_peer $c:"
	sed 's/^/#   /' "$OUT/imm_wire.$c.out"
done
[ -z "$CAP_SUMMARY" ] || echo "$CAP_SUMMARY"
echo "# capture: $PCAP; frames: $TSV; log: $LOG"
exit $rc
