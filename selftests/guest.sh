#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# guest.sh - runs selftest suites inside a test VM (started by run.sh via
# tools/vm/run). Not meant for the host.
#
#   selftests/guest.sh SUITE...
#
# What a suite runs and its time limit come from its settings file
# (selftests/lib/suites.sh). For each SUITE it writes to $SIWX_RESULTS:
# SUITE.tap (the command's output: TAP, diagnostics included), SUITE.rc
# (exit status; 124 = timed out), SUITE.secs, SUITE.times (each result
# line after the seconds since the suite started) and SUITE.diag (network
# state) when the command failed. A "siwx-selftest: SUITE start/end" line
# goes to the kernel log so that kernel problems can be attributed to a
# suite.
#
# Environment: SIWX_BIN (binaries built against our rdma-core),
# SIWX_STOCK_BIN (built against Debian's rdma-core 44), SIWX_RESULTS,
# SIWX_SUITE_TIMEOUT_<suite> (seconds, '-' replaced by '_'; overrides the
# settings' timeout). SIWX_GUEST_DRY_RUN=1: run nothing, print what would
# run and the environment the suites would get (run.sh's check uses it).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
RES=${SIWX_RESULTS:-/results}
DRY=${SIWX_GUEST_DRY_RUN:-0}
# shellcheck source=lib/suites.sh
. "$HERE/lib/suites.sh"

BIN=${SIWX_BIN:-$TOP/build/selftests/bin}
STOCK=${SIWX_STOCK_BIN:-$TOP/build/selftests/stock}
export SIWX_BIN=$BIN
SUITE_BIN=$BIN SUITE_STOCK=$STOCK SUITE_KMOD=${BIN%/*}/kmod
# the tools of the same build as BIN (KERNEL=debug: build/debug-kernel/tools)
SUITE_TOOLS=${BIN%/selftests/bin}/tools SUITE_TOP=$TOP

kmsg() { echo "siwx-selftest: $*" > /dev/kmsg 2>/dev/null; }

# bail SUITE REASON: the suite's TAP is just a Bail out!
bail() {
	if [ "$DRY" = 1 ]; then
		echo "suite $1: Bail out! $2"
	else
		echo "Bail out! $2" > "$RES/$1.tap"
		echo 2 > "$RES/$1.rc"
	fi
	rc_all=1
}

rc_all=0
if ! suites_load "$HERE"; then
	for suite in "$@"; do
		bail "$suite" "bad suite settings: ${SUITE_ERRORS[*]}"
	done
	exit 1
fi

if [ "$DRY" = 1 ]; then
	# the environment the suites get: every SIWX_* variable and those
	# the named suites declare
	declared=
	for suite in "$@"; do declared+=" ${SUITE[$suite:env]-}"; done
	for v in $(compgen -e); do
		case $v in
		SIWX_*) ;;
		*) case "$declared " in *" $v "*) ;; *) continue ;; esac ;;
		esac
		declare -p "$v"
	done
else
	# the suites' fixed ports (40000-59999: rawpeer, mpa, mpa_pair,
	# atomic_pair, flush_pair, interop, rsockets ...) are never handed
	# out as ephemeral ports: a client that got one could take a later
	# listener's port, and a capture filtered on a port range sees its
	# connection (CI once counted one as a second connection to a case)
	sysctl -q -w net.ipv4.ip_local_reserved_ports=40000-59999 >/dev/null 2>&1 ||
		echo "guest.sh: ports 40000-59999 not reserved" >&2
fi
if [ "$DRY" != 1 ] && [ "${SIWX_ROLE:-single}" = single ]; then
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

# stamp PID TAP T0: while PID runs, each test result line of TAP as it
# appears, after the seconds since T0 (SUITE.times: where a suite's time
# goes, run.sh names the slowest tests)
stamp() {
	local line t
	tail -s 0.2 -n +1 --pid="$1" -F "$2" 2>/dev/null | while IFS= read -r line; do
		case $line in
		ok\ *|not\ ok\ *)
			t=$(( (${EPOCHREALTIME/./} - ${3/./}) / 100000 ))
			printf '%d.%d %s\n' $((t / 10)) $((t % 10)) "$line" ;;
		esac
	done
}

for suite in "$@"; do
	tap=$RES/$suite.tap
	if [ -z "${SUITE[$suite:file]+x}" ]; then
		bail "$suite" "unknown suite '$suite'"
		continue
	fi
	suite_expand "$suite" "${SUITE[$suite:cmd]}"
	read -r -a cmd <<< "$REPLY"
	if [ ! -x "${cmd[0]}" ]; then
		bail "$suite" "${cmd[0]} missing or not executable (make selftests)"
		continue
	fi
	suite_timeout "$suite"
	limit=$REPLY
	if [ "$DRY" = 1 ]; then
		echo "suite $suite: limit ${limit}s: ${cmd[*]}"
		continue
	fi
	echo "siwx-selftest: running $suite (limit ${limit}s)"
	kmsg "$suite start"
	t0=$EPOCHSECONDS
	timeout -k 10 "$limit" "${cmd[@]}" > "$tap" 2>&1 < /dev/null &
	pid=$!
	stamp "$pid" "$tap" "$EPOCHREALTIME" > "$RES/$suite.times" &
	spid=$!
	wait "$pid"
	rc=$?
	wait "$spid"
	secs=$((EPOCHSECONDS - t0))
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
