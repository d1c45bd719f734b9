#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# faults_pair_b.sh - suite "faults_pair", VM b (see faults_pair.sh): the
# traffic program's server; once VM a's client has run on it for HOLD
# seconds, the server is killed with SIGKILL and siw unloaded at once
# (rmmod, retried for at most 10 s while the dead process's verbs file is
# released); the rmmod's result goes to $SIWX_RESULTS/rmmod.txt. Then siw
# is loaded again, siw0 added, a new server started, and b waits for its
# power to be cut (a's tools/vm/powerfail).
#
# Environment: RDMA_PREFIX, FT (the program), HOLD (3),
# SIWX_SUITE_TIMEOUT_SCALE (1: its wait for a's client); from the boot:
# SIWX_LOCAL, SIWX_MODULE, SIWX_NETDEV0, SIWX_RESULTS.
set -u
P=${RDMA_PREFIX:?}
export PATH=$P/bin:$PATH
FT=${FT:?}
HOLD=${HOLD:-3}
OUT=${SIWX_RESULTS:-/tmp}
MARGS=()
[ ! -r "$OUT/module-args" ] || read -r -a MARGS < "$OUT/module-args"
say() { echo "faults_pair b: $*"; echo "$(date +%s.%N) $*" >> "$OUT/b.log"; }

"$FT" -s -a "$SIWX_LOCAL" -p 7471 > "$OUT/server1.txt" 2>&1 &
pid=$!
for ((i = 0; i < 3000 * ${SIWX_SUITE_TIMEOUT_SCALE:-1}; i++)); do
	grep -q 'connection 1 established' "$OUT/server1.txt" && break
	sleep 0.1
done
say "a connected ($((i / 10)) s); traffic for $HOLD s"
sleep "$HOLD"
t0=$(date +%s%N)
kill -KILL "$pid"
wait "$pid"
t1=$(date +%s%N)
rmmod siw 2> "$OUT/rmmod.err"
first=$? tries=1
rc=$first
while [ "$rc" != 0 ] && [ "$tries" -lt 100 ]; do
	sleep 0.1
	tries=$((tries + 1))
	rmmod siw 2>> "$OUT/rmmod.err"
	rc=$?
done
t2=$(date +%s%N)
echo "rc=$rc first=$first tries=$tries reaped_ms=$(((t1 - t0) / 1000000)) rmmod_ms=$(((t2 - t1) / 1000000))" > "$OUT/rmmod.txt"
say "server killed, rmmod siw: $(<"$OUT/rmmod.txt")"
sync
if ! insmod "${SIWX_MODULE:?}" "${MARGS[@]}" ||
	! rdma link add siw0 type siw netdev "${SIWX_NETDEV0:-eth0}"; then
	say "siw could not be loaded again"
fi
"$FT" -s -a "$SIWX_LOCAL" -p 7471 > "$OUT/server2.txt" 2>&1 &
say "server started again; waiting for the power cut"
sleep 600
