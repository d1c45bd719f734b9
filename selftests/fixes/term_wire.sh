#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# term_wire.sh - the Terminate a responder sends, as an independent decoder
# (tshark) reads it. TAP output. Runs in the single-VM topology.
#
# For each case term_peer provokes one Terminate (an RDMA Read the server
# must refuse) while dumpcap records the loopback interface (traffic between
# the two local veth addresses flows over lo). tshark then decodes the
# capture (MPA is found heuristically, hence the capture starts before the
# connection) and the Terminate's Layer/EType/Error Code must be the RFC 5040
# values. Upstream siw swaps the Layer and EType nibbles, and serves the
# read_noperm Read instead of refusing it.
#
# Environment: SIWX_BIN (dir holding term_peer), SIWX_RESULTS (where the
# capture is kept), SIWX_ADDR0/SIWX_ADDR1 (passed on to term_peer).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SIWX_BIN:-$HERE/../../build/selftests/bin}
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
PORT0=${SIWX_TERM_PORT:-40101}

# case  layer  etype(RDMAP)  errcode(RDMAP)  what
CASES=(
	"read_noperm 0 1 0x02 RDMAP/Remote Protection/Access rights violation"
	"read_oob    0 1 0x01 RDMAP/Remote Protection/Base or bounds violation"
	"read_badkey 0 1 0x00 RDMAP/Remote Protection/Invalid STag"
)

echo "TAP version 13"
echo "1..${#CASES[@]}"

skip_all() {
	local i=1 c
	for c in "${CASES[@]}"; do
		set -- $c
		echo "ok $i terminate_wire.$1 # SKIP $*"
		i=$((i + 1))
	done
	exit 0
}

. "$HERE/../lib/capture.sh"
[ -x "$DUMPCAP" ] || skip_all "dumpcap not installed (apt-get install tshark)"
[ -x "$TSHARK" ] || skip_all "tshark not installed (apt-get install tshark)"
[ -x "$BIN/term_peer" ] || { echo "Bail out! $BIN/term_peer missing (make selftests)"; exit 1; }

last=$((PORT0 + ${#CASES[@]} - 1))
if ! cap_start term_wire "tcp portrange $PORT0-$last"; then
	echo "# dumpcap did not start:"; sed 's/^/#   /' "$CAP_LOG"
	i=1
	for c in "${CASES[@]}"; do
		set -- $c
		echo "not ok $i terminate_wire.$1 # capture failed"
		i=$((i + 1))
	done
	exit 1
fi

port=$PORT0
declare -A PEEROUT
for c in "${CASES[@]}"; do
	set -- $c
	PEEROUT[$1]=$(timeout 90 "$BIN/term_peer" "$1" "$port" 2>&1)
	echo "# term_peer $1 (port $port) exit $?:"
	printf '%s\n' "${PEEROUT[$1]}" | sed 's/^/#   /'
	port=$((port + 1))
done
cap_stop
PCAP=$CAP_PCAP
LOG=$CAP_LOG
[ -z "$CAP_SUMMARY" ] || echo "$CAP_SUMMARY"

# One tshark pass (slow to start under TCG): every frame that MPA was
# dissected for, with the Terminate fields (empty for other frames).
ROWS=$("$TSHARK" -r "$PCAP" "${TSHARK_IWARP[@]}" \
	-Y iwarp_mpa -T fields -E separator=';' \
	-e tcp.srcport -e tcp.dstport -e iwarp_rdma.term_layer \
	-e iwarp_rdma.term_etype_rdma -e iwarp_rdma.term_errcode_rdma \
	-e iwarp_rdma.term_etype_ddp -e iwarp_rdma.term_etype_llp \
	-e iwarp_rdma.term_errcode_ddp_tagged -e iwarp_rdma.term_errcode_llp \
	2>>"$LOG")
TERMS=$(printf '%s\n' "$ROWS" | awk -F';' '$3 != ""')
echo "# capture: $PCAP ($(printf '%s\n' "$ROWS" | grep -c .) MPA frames, $(printf '%s\n' "$TERMS" | grep -c .) Terminates)"

num() { [ -n "$1" ] && printf '%d' "$1" 2>/dev/null; }

i=1 port=$PORT0 fails=0
for c in "${CASES[@]}"; do
	set -- $c
	name=$1 want_l=$2 want_t=$3 want_c=$4; shift 4
	lines=$(printf '%s\n' "$TERMS" | awk -F';' -v p="$port" '$1 == p || $2 == p')
	mpa=$(printf '%s\n' "$ROWS" | awk -F';' -v p="$port" '$1 == p || $2 == p' | wc -l)
	if [ -z "$lines" ]; then
		reason="no Terminate on the wire"
		[ "$mpa" -gt 0 ] || reason="$reason (and no MPA frame decoded: capture or dissector problem)"
		echo "# $name: $reason; peer said: $(printf '%s' "${PEEROUT[$name]}" | tr '\n' ' ')"
		# what the capture holds of the connection, for the post mortem
		"$TSHARK" -r "$PCAP" -n -Y "tcp.port == $port" -T fields \
			-e frame.number -e tcp.srcport -e tcp.dstport \
			-e tcp.flags.str -e tcp.len 2>/dev/null |
			sed "s/^/# $name: frame /" | head -n 30
		echo "not ok $i terminate_wire.$name"
		fails=$((fails + 1))
	else
		first=$(printf '%s\n' "$lines" | head -n 1)
		IFS=';' read -r sp dp layer et_r ec_r et_d et_l ec_d ec_l <<<"$first"
		echo "# $name: Terminate $sp->$dp: layer=$layer etype_rdma=$et_r errcode_rdma=$ec_r etype_ddp=$et_d errcode_ddp_tagged=$ec_d etype_llp=$et_l errcode_llp=$ec_l"
		echo "# $name: expected layer=$want_l etype_rdma=$want_t errcode_rdma=$want_c ($*)"
		if [ "$sp" = "$port" ] && [ "$(num "$layer")" = "$(num "$want_l")" ] &&
		   [ "$(num "$et_r")" = "$(num "$want_t")" ] &&
		   [ "$(num "$ec_r")" = "$(num "$want_c")" ]; then
			echo "ok $i terminate_wire.$name"
		else
			[ "$sp" = "$port" ] || echo "# $name: the Terminate did not come from the responder (port $port)"
			echo "not ok $i terminate_wire.$name"
			fails=$((fails + 1))
		fi
	fi
	i=$((i + 1)) port=$((port + 1))
done
[ "$fails" = 0 ]
