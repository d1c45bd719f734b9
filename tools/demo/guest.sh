#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/demo/guest.sh: guest side of `make demo` (run by tools/vm/run --netns): siw0 on veth0 in
# the initial namespace, siw1 on veth1 in namespace $SIWX_NETNS1.
# Prints a few lines a person can read; exits non-zero if anything fails.
set -u
P=$SIWX_TOP/build/rdma-core/prefix
export LD_LIBRARY_PATH=$P/lib
peer=(ip netns exec "$SIWX_NETNS1")
report=$SIWX_RESULTS/demo.txt
say() { printf '%s\n' "$*" | tee -a "$report"; }
fail() { say "demo: FAILED: $*"; exit 1; }

rx_bytes() { cat /sys/class/net/veth0/statistics/rx_bytes; }

ver=$(cat /sys/module/siw/version)
src=$(cat /sys/module/siw/srcversion)
built=$(modinfo -F srcversion "$SIWX_MODULE")
[ "$src" = "$built" ] || fail "loaded siw (srcversion $src) is not $SIWX_MODULE ($built)"
say ""
say "== siwx demo =="
say "module : siw $ver, srcversion $src = $SIWX_MODULE"
say "devices: siw0 on veth0 $SIWX_ADDR0  <->  siw1 on veth1 $SIWX_ADDR1 (netns $SIWX_NETNS1)"

# rping: each round the client Sends its buffer's address, the server
# RDMA Reads the client's data, RDMA Writes it back, and the client checks it.
rx0=$(rx_bytes)
"$P/bin/rping" -s -a "$SIWX_ADDR0" -C 3 -v >/tmp/rping-server.txt 2>&1 &
srv=$!
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	if "${peer[@]}" "$P/bin/rping" -c -a "$SIWX_ADDR0" -C 3 -v -V -S 42 \
		>/tmp/rping-client.txt 2>&1; then
		ok=1
		break
	fi
done
wait "$srv" || ok=0
[ $ok = 1 ] || { cat /tmp/rping-*.txt; fail "rping"; }
say "rping  : siw1 -> siw0, 3 rounds of Send + RDMA Read + RDMA Write, data checked:"
grep '^ping data' /tmp/rping-client.txt | sed 's/^/         /' | tee -a "$report"
say "         $(( $(rx_bytes) - rx0 )) bytes crossed veth1 -> veth0"

# RFC 7306: FetchAdd, CmpSwap and RDMA Write with Immediate (siwx-demo,
# plain verbs through our rdma-core) from siw1 to a counter on siw0.
DEMO=$SIWX_TOP/build/tools/demo/siwx-demo
"$DEMO" -s "$SIWX_ADDR0" >/tmp/demo-server.txt 2>&1 &
srv=$!
ok=0
for _ in 1 2 3 4 5 6 7 8 9 10; do
	sleep 1
	if "${peer[@]}" "$DEMO" -c "$SIWX_ADDR0" -b "$SIWX_ADDR1" \
		>/tmp/demo-client.txt 2>&1; then
		ok=1
		break
	fi
	grep -q 'rdma_connect\|REJECTED\|UNREACHABLE\|ADDR_ERROR' /tmp/demo-client.txt || break
done
wait "$srv" || ok=0
[ $ok = 1 ] || { cat /tmp/demo-*.txt; fail "siwx-demo (RFC 7306)"; }
say "rfc7306: remote atomics and write with immediate, siw1 -> a counter on siw0:"
sed 's/^/         /' /tmp/demo-client.txt | tee -a "$report"
grep -v listening /tmp/demo-server.txt | sed 's/^/         /' | tee -a "$report"

# perftest (Debian's, stock libsiw of rdma-core 44) on the same devices.
PERFTEST_TRIES=10 "$SIWX_TOP/tools/vm/perftest-run" single ib_write_bw -s 65536 -n 300 \
	>/tmp/perftest.txt 2>&1 || { cat /tmp/perftest.txt; fail "ib_write_bw"; }
bw=$(awk '$1 == 65536 { print $4 }' /tmp/perftest.txt | tail -n 1)
say "perftest: ib_write_bw -R, 64 KiB RDMA Writes siw1 -> siw0: ${bw:-?} MB/s (TCG guest; slow in absolute terms)"
say "== demo OK =="
