# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# selftests/lib/capture.sh - packet capture for the wire suites (sourced).
#
# One way to record the test connections and to hand the capture to tshark,
# for term_wire.sh, atomic_wire.sh, imm_wire.sh, rsockets.sh and perftest_smoke.sh:
#
#   cap_start NAME FILTER [DUMPCAP-OPTION...]
#	Starts dumpcap on the interface that carries the traffic between
#	SIWX_ADDR0 and SIWX_ADDR1: veth0 ($SIWX_NETDEV0) when siw1 lives in
#	a namespace of its own ($SIWX_NETNS1, tools/vm/run --netns, as the
#	runner boots the single VM), lo when both addresses are local
#	(Documentation/vm.md); into a file on the guest's own
#	disk: writing to the results share (9p) is slow enough under TCG to
#	leave dumpcap far behind the traffic. A 64 MiB kernel buffer, so that
#	nothing is dropped while the guest is busy. Returns 0 once dumpcap
#	captures (at most 30 s), 1 otherwise; CAP_LOG says why.
#	Sets CAP_FILE (the local capture), CAP_LOG ($OUT/NAME.log, kept).
#	CAP_IFACE: capture on that interface instead (e.g. $SIWX_NETDEV0 of
#	a pair VM).
#   cap_stop [PCAP]
#	Waits until the capture file has not grown for 2 s (at most 60 s),
#	stops dumpcap and copies the capture to PCAP (default $OUT/NAME.pcap),
#	which it leaves in CAP_PCAP. CAP_SUMMARY: dumpcap's packet and drop
#	counts as TAP comments. A capture with drops is still analysed.
#   "$TSHARK" "${TSHARK_IWARP[@]}" ...
#	The options every iWARP decode needs: MPA is found by tshark's heuristic
#	only, so (1) heuristics go first: a port-based dissector registered
#	for an ephemeral port (enip 44818, irc 57000, ...) would otherwise take
#	the connection whenever rdma_cm picks that port for the client, and
#	no MPA frame of it would be decoded; (2) the RPC-over-RDMA and SMB
#	Direct heuristics are off, they claim iWARP payloads of their own.
#
# Needs OUT (results directory) set by the caller.

DUMPCAP=$(command -v dumpcap || echo /usr/bin/dumpcap)
TSHARK=$(command -v tshark || echo /usr/bin/tshark)
TSHARK_IWARP=(-n -o tcp.try_heuristic_first:TRUE
	--disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)

cap_start() {	# NAME FILTER [DUMPCAP-OPTION...]
	local name=$1 filter=$2
	shift 2
	CAP_NAME=$name
	CAP_LOG=$OUT/$name.log
	: > "$CAP_LOG"
	CAP_DIR=$(mktemp -d "${TMPDIR:-/tmp}/$name.XXXXXX") || return 1
	CAP_FILE=$CAP_DIR/capture.pcap
	local iface=lo
	[ -z "${SIWX_NETNS1:-}" ] || iface=${SIWX_NETDEV0:-veth0}
	"$DUMPCAP" -i "${CAP_IFACE:-$iface}" -B 64 "$@" -f "$filter" -w "$CAP_FILE" \
		2>>"$CAP_LOG" &
	CAP_PID=$!
	local _
	# dumpcap prints "Capturing on" before it opens the interface, and
	# "File: ..." once the socket, its filter and the file are ready:
	# packets between the two are not captured
	for _ in $(seq 300); do	# up to 30 s under TCG
		grep -q "^File: " "$CAP_LOG" && return 0
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	CAP_PID=
	return 1
}

cap_stop() {	# [PCAP]
	CAP_PCAP=${1:-$OUT/$CAP_NAME.pcap}
	CAP_SUMMARY=''
	[ -n "${CAP_PID:-}" ] || return 1
	local same=0 size=-1 now _
	for _ in $(seq 120); do
		now=$(stat -c %s "$CAP_FILE" 2>/dev/null || echo 0)
		if [ "$now" = "$size" ]; then
			same=$((same + 1))
			[ "$same" -ge 4 ] && break
		else
			same=0 size=$now
		fi
		sleep 0.5
	done
	kill -INT "$CAP_PID" 2>/dev/null
	for _ in $(seq 100); do
		kill -0 "$CAP_PID" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$CAP_PID" 2>/dev/null
	wait "$CAP_PID" 2>/dev/null
	CAP_PID=
	CAP_SUMMARY=$(tr '\r' '\n' < "$CAP_LOG" |
		grep -E "^Packets (captured|received)" | sed 's/^/# dumpcap: /')
	cp "$CAP_FILE" "$CAP_PCAP" 2>/dev/null
	rm -rf "$CAP_DIR"
	[ -s "$CAP_PCAP" ]
}
