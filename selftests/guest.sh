#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# guest.sh - runs selftest suites inside a test VM (started by run.sh via
# tools/vm/run). Not meant for the host.
#
#   selftests/guest.sh SUITE...
#
# Single-VM suites: basic basic-stock fixes term_wire perftest identity stress kulp
# Pair suites (both VMs run them, SIWX_ROLE=a|b): interop atomic_pair imm_probe mpa_pair
#
# For each SUITE it writes to $SIWX_RESULTS: SUITE.tap (the TAP stream,
# diagnostics included), SUITE.rc (exit status; 124 = timed out) and
# SUITE.secs. A "siwx-selftest: SUITE start/end" line goes to the kernel
# log so that kernel problems can be attributed to a suite.
#
# Environment: SIWX_BIN (binaries built against our rdma-core),
# SIWX_STOCK_BIN (built against Debian's rdma-core 44), SIWX_RESULTS,
# SIWX_SUITE_TIMEOUT_<suite> (seconds, '-' replaced by '_').

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
RES=${SIWX_RESULTS:-/results}

BIN=${SIWX_BIN:-$TOP/build/selftests/bin}
STOCK=${SIWX_STOCK_BIN:-$TOP/build/selftests/stock}
export SIWX_BIN=$BIN

kmsg() { echo "siwx-selftest: $*" > /dev/kmsg 2>/dev/null; }

default_timeout() {
	case $1 in
	basic|basic-stock) echo 300 ;;
	fixes) echo 240 ;;
	usq) echo 180 ;;
	term_wire) echo 180 ;;
	rawpeer) echo 600 ;;
	perftest) echo 240 ;;
	identity) echo 60 ;;
	kulp) echo 300 ;;
	interop) echo 400 ;;
	mpa) echo 900 ;;
	mpa_pair) echo 400 ;;
	atomic) echo 400 ;;
	atomic_wire) echo 240 ;;
	imm) echo 600 ;;
	imm_wire) echo 240 ;;
	rsockets) echo 600 ;;
	rsockets_upstream) echo 400 ;;
	atomic_pair) echo 380 ;;
	imm_probe) echo 120 ;;
	stress) echo 900 ;;
	*) echo 120 ;;
	esac
}

suite_cmd() {
	case $1 in
	basic) echo "$BIN/basic" ;;
	basic-stock) echo "$STOCK/basic" ;;
	fixes) echo "$BIN/fixes" ;;
	usq) echo "$BIN/usq" ;;
	term_wire) echo "$HERE/fixes/term_wire.sh" ;;
	rawpeer) echo "$HERE/rawpeer/rawpeer.sh" ;;
	perftest) echo "$HERE/perftest/perftest_smoke.sh" ;;
	identity) echo "$HERE/identity/module_identity.sh" ;;
	kulp) echo "$HERE/kulp/kulp.sh" ;;
	interop) echo "$BIN/interop" ;;
	atomic) echo "$BIN/atomic" ;;
	atomic_wire) echo "$HERE/atomic/atomic_wire.sh" ;;
	imm) echo "$BIN/imm" ;;
	imm_wire) echo "$HERE/imm/imm_wire.sh" ;;
	rsockets) echo "$HERE/rsockets/rsockets.sh" ;;
	rsockets_upstream) echo "$HERE/rsockets/rsockets_upstream.sh" ;;
	atomic_pair) echo "$BIN/atomic_pair" ;;
	imm_probe) echo "$BIN/imm_probe" ;;
	mpa) echo "$HERE/mpa/mpa_suite.py" ;;
	mpa_pair) echo "$HERE/mpa/mpa_pair.sh" ;;
	stress) echo "$BIN/stress" ;;
	*) return 1 ;;
	esac
}

if [ "${SIWX_ROLE:-single}" = single ]; then
	# rdma_cm resolves the peer's local address by ARP between the two
	# veths; that needs local source addresses to be accepted.
	sysctl -q -w net.ipv4.conf.all.accept_local=1 \
		net.ipv4.conf.default.accept_local=1 >/dev/null 2>&1
	for nd in "${SIWX_NETDEV0:-veth0}" "${SIWX_NETDEV1:-veth1}"; do
		sysctl -q -w "net.ipv4.conf.$nd.accept_local=1" >/dev/null 2>&1
	done
fi

ulimit -l unlimited 2>/dev/null	# memory registration (root anyway)
ulimit -c 0

rc_all=0
for suite in "$@"; do
	tap=$RES/$suite.tap
	if ! cmd=$(suite_cmd "$suite"); then
		echo "Bail out! unknown suite '$suite'" > "$tap"
		echo 2 > "$RES/$suite.rc"
		rc_all=1
		continue
	fi
	if [ ! -x "$cmd" ]; then
		echo "Bail out! $cmd missing or not executable (make selftests)" > "$tap"
		echo 2 > "$RES/$suite.rc"
		rc_all=1
		continue
	fi
	var=SIWX_SUITE_TIMEOUT_${suite//-/_}
	limit=${!var:-$(default_timeout "$suite")}
	echo "siwx-selftest: running $suite (limit ${limit}s)"
	kmsg "$suite start"
	t0=$(date +%s)
	timeout -k 10 "$limit" "$cmd" > "$tap" 2>&1 < /dev/null
	rc=$?
	secs=$(( $(date +%s) - t0 ))
	kmsg "$suite end (exit $rc)"
	[ "$rc" != 124 ] && [ "$rc" != 137 ] || echo "# suite timed out after ${limit}s" >> "$tap"
	if [ "$rc" != 0 ]; then	# network state, for the post mortem
		{
			echo "== $suite exit $rc, $(date)"
			ip -s neigh 2>&1; ip -s link 2>&1; ss -tanpi 2>&1; rdma resource show 2>&1
		} >> "$RES/$suite.diag" 2>&1
	fi
	echo "$rc" > "$RES/$suite.rc"
	echo "$secs" > "$RES/$suite.secs"
	echo "siwx-selftest: $suite exit $rc after ${secs}s"
	[ "$rc" = 0 ] || rc_all=1
done
exit "$rc_all"
