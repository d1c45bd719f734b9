#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/demo/pmem.sh server|client: the persistent-memory part of `make demo`, run by
# tools/vm/run --pair --pmem (tools/demo/run.sh). VM b (server) registers the first MiB
# of its emulated NVDIMM (devdax $SIWX_PMEM_DEV) for RDMA Flush; VM a (client) commits
# records to it the way the seed describes: RDMA Write of a 4 KiB record, Flush to
# persistence, Atomic Write of the 8-byte pointer, Flush again, only the last signaled,
# all in one round trip (tools/bench/flush_bench, tests pipe_p_lat and read8_lat).
# The server checks its own memory; tools/demo/run.sh then reads the pointer and the
# record from the host's backing file.
set -u
P=$SIWX_TOP/build/rdma-core/prefix
export LD_LIBRARY_PATH=$P/lib
FB=$SIWX_TOP/build/tools/demo/flush_bench
PORT=18600
report=$SIWX_RESULTS/demo-pmem.txt
say() { printf '%s\n' "$*" | tee -a "$report"; }

case ${1:-} in
server)
	: "${SIWX_PMEM_DEV:?no pmem device (tools/vm/run --pmem)}"
	# where the device's byte 0 is in the host's backing file
	echo "$SIWX_PMEM_OFFSET" > "$SIWX_RESULTS/pmem-offset"
	say "server: $SIWX_PMEM_DEV (emulated NVDIMM, devdax) on $SIWX_LOCAL"
	timeout 240 "$FB" -s -a "$SIWX_LOCAL" -p "$PORT" -P "$SIWX_PMEM_DEV" 2>&1 | tee -a "$report"
	exit "${PIPESTATUS[0]}"
	;;
client)
	ok=0
	for _ in $(seq 30); do
		if timeout 200 "$FB" -c "$SIWX_PEER" -p "$PORT" -x pipe_p_lat,pipe_p_waited_lat,read8_lat \
			-n 20 -r 2 -w 2 > /tmp/fb.txt 2> /tmp/fb.err; then
			ok=1
			break
		fi
		grep -q 'connect to' /tmp/fb.err || break
		sleep 1
	done
	if [ $ok != 1 ]; then
		cat /tmp/fb.txt /tmp/fb.err
		say "demo: FAILED: flush_bench client"
		exit 1
	fi
	say "client: $SIWX_LOCAL -> $SIWX_PEER, 40 commits (record + pointer), round trips in us:"
	grep -E '^(result|na|ratio)' /tmp/fb.txt | sed 's/^/         /' | tee -a "$report"
	;;
*)
	echo "usage: $0 server|client" >&2
	exit 2
	;;
esac
