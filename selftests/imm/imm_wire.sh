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

DUMPCAP=$(command -v dumpcap || echo /usr/bin/dumpcap)
TSHARK=$(command -v tshark || echo /usr/bin/tshark)
[ -x "$DUMPCAP" ] || all_fail "dumpcap not installed (apt-get install tshark)"
[ -x "$TSHARK" ] || all_fail "tshark not installed (apt-get install tshark)"
[ -n "$PY" ] || all_fail "python3 not installed"
[ -x "$BIN/imm_peer" ] || all_fail "$BIN/imm_peer missing (make selftests)"

PCAP=$OUT/imm_wire.pcap
LOG=$OUT/imm_wire.log
TSV=$OUT/imm_wire.frames.tsv
rm -f "$PCAP" "$TSV"
: > "$LOG"

last=$((PORT0 + ${#CASES[@]} - 1))
"$DUMPCAP" -i lo -f "tcp portrange $PORT0-$last" -w "$PCAP" 2>>"$LOG" &
DC=$!
for _ in $(seq 300); do	# up to 30 s under TCG
	grep -q "Capturing on" "$LOG" && break
	kill -0 "$DC" 2>/dev/null || break
	sleep 0.1
done
if ! grep -q "Capturing on" "$LOG"; then
	kill "$DC" 2>/dev/null
	all_fail "dumpcap did not start: $(tr '\n' ' ' < "$LOG")"
fi

ARGS=()
port=$PORT0
for c in "${CASES[@]}"; do
	po=$OUT/imm_wire.$c.out
	timeout 90 "$BIN/imm_peer" "$c" "$port" > "$po" 2>&1
	echo "imm_peer $c (port $port) exit $?" >> "$LOG"
	ARGS+=("$c:$port:$po")
	port=$((port + 1))
done
sleep 1
kill -INT "$DC" 2>/dev/null
for _ in $(seq 100); do kill -0 "$DC" 2>/dev/null || break; sleep 0.1; done
kill -KILL "$DC" 2>/dev/null
wait "$DC" 2>/dev/null

# One tshark pass (slow to start under TCG): the payload of every TCP
# segment, relative sequence numbers, and tshark's Terminate fields.
"$TSHARK" -r "$PCAP" -n \
	--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp \
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
echo "# capture: $PCAP; frames: $TSV; log: $LOG"
exit $rc
