# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# traffic.sh - sourced by the guest sides of the fault suites (faults,
# faults_pair, failinject): faults_traffic's server and client in the
# background, and bounded waits for them. The sourcing script defines say
# TEXT and, for traffic/traffic_end, FT (the faults_traffic program), A0,
# A1 (server and client addresses), OUT (results) and LOG.
#
#   wait_bounded PID SECS WHAT   wait for PID, SIGKILL it after SECS
#   wait_client PATTERN SECS     wait for a line of the client's ($CF)
#   traffic NAME SECS [CLIENT ARGS...], traffic_end

# wait_bounded PID SECS WHAT: wait up to SECS seconds for PID to exit;
# still running then, it is killed (SIGKILL) and WHAT said so. Returns 0,
# or 124 when it had to be killed. PID is not reaped: the caller's `wait`
# gets its status.
wait_bounded() {
	# a deadline, not a count of naps: each nap forks a sleep, slow
	# in a loaded TCG guest
	local end=$((EPOCHSECONDS + $2))
	while [ "$EPOCHSECONDS" -lt "$end" ]; do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -0 "$1" 2>/dev/null || return 0
	say "$3 still running after $2 s; killed"
	kill -KILL "$1"
	return 124
}

# wait_client PATTERN SECS: until the client's output ($CF) has a line
# matching PATTERN (grep); 1 when the client ($CPID) exits first or SECS
# pass.
wait_client() {
	local end=$((EPOCHSECONDS + $2))
	while [ "$EPOCHSECONDS" -lt "$end" ]; do
		grep -q "$1" "$CF" && return 0
		kill -0 "$CPID" 2>/dev/null || return 1
		sleep 0.1
	done
	return 1
}

# traffic NAME SECS [CLIENT ARGS...]: server on A0 (waiting at most 10 s
# for its receives to be flushed; TRAFFIC_PORT, incremented first, is its
# port), client from A1 for SECS seconds, both in the background; SPID,
# CPID, SF, CF (their output files, OUT/NAME.server and .client) set.
# Stop it with traffic_end.
TRAFFIC_PORT=${TRAFFIC_PORT:-7470}
# how long past its SECS the client may take before traffic_end kills it
TRAFFIC_GRACE=${TRAFFIC_GRACE:-120}
traffic() {
	local name=$1
	TRAFFIC_SECS=$2
	shift 2
	TRAFFIC_PORT=$((TRAFFIC_PORT + 1))
	SF=$OUT/$name.server CF=$OUT/$name.client
	"$FT" -s -a "$A0" -p "$TRAFFIC_PORT" -B 10000 > "$SF" 2>&1 &
	SPID=$!
	"$FT" -c "$A0" -b "$A1" -p "$TRAFFIC_PORT" -t "$TRAFFIC_SECS" "$@" > "$CF" 2>&1 &
	CPID=$!
}

# traffic_end: wait for the client (at most its SECS + TRAFFIC_GRACE),
# then stop the server (SIGTERM, 30 s); CRC, SRC: their exit statuses
# (124: had to be killed); both outputs appended to LOG
# shellcheck disable=SC2034  # CRC and SRC are the caller's results
traffic_end() {
	local k
	wait_bounded "$CPID" $((TRAFFIC_SECS + TRAFFIC_GRACE)) client; k=$?
	wait "$CPID"; CRC=$?
	[ "$k" = 0 ] || CRC=124
	kill -TERM "$SPID" 2>/dev/null
	wait_bounded "$SPID" 30 "server (SIGTERM sent)"; k=$?
	wait "$SPID"; SRC=$?
	[ "$k" = 0 ] || SRC=124
	{ echo "---- $CF"; cat "$CF"; echo "---- $SF"; cat "$SF"; } >> "$LOG"
}
