#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# failinject_guest.sh - suite "failinject", the guest side (run by
# failinject.sh in a VM of its own on a kernel with fault injection,
# booted with --netns: siw0 on veth0 here, siw1 on veth1 in namespace
# siwx1). TAP to stdout, the programs' output in $SIWX_RESULTS.
#
# Allocation failures are injected with the kernel's failslab (kmalloc,
# kmem_cache_alloc) and fail_page_alloc (the page allocator), each in
# turn, restricted by their stack-trace filter to allocations with a siw
# function among the 32 innermost callers (require-start/require-end:
# siw's memory), sleeping allocations included (ignore-gfp-wait N), every
# order, nothing printed (verbose 0). So what fails is what siw allocates
# itself and what the kernel allocates on its behalf (TCP's skbs on
# siw's transmit path, the sockets of its connection setup, rdma core
# objects it asks for), not the rest of the system. `times` counts the
# failures injected; a phase in which none was injected fails (it would
# have tested nothing).
#
#   setup                  fault injection's debugfs files, siw's text range
#   verbs_failslab, verbs_fail_page_alloc
#       failinject_verbs: VERBS iterations of open device, PD, CQ, MR, QP,
#       SRQ, a receive posted, all destroyed, at 5 %: every failure an
#       errno an allocation failure explains (ENOMEM, EAGAIN, ENOBUFS,
#       EFAULT), no destroy failing, some iterations complete
#   connect_failslab, connect_fail_page_alloc
#       churn -e: CYCLES connection cycles (connect, a verified Send, RDMA
#       Write and Send back, disconnect, destroy) at 1 % (failslab) and
#       2 % (fail_page_alloc): a failed cycle
#       is torn down and the next one goes on; no data corrupted, some
#       cycles good
#   traffic_failslab, traffic_fail_page_alloc
#       faults_traffic (every operation, every result verified, the
#       client reconnecting after an error, -E: retrying a connect that
#       failed in any step) for SECS seconds, armed once the first
#       connection is up, at 1 % (fail_page_alloc: 20 %, the data path
#       allocates few pages):
#       no verify error, nothing placed that the client did not write,
#       every outstanding work request completed (flushed within 10 s of
#       a connection error)
#   recovered              injection off: churn (5 cycles) and
#       failinject_verbs -s (10 iterations) with every step successful
#   resources_back         rdma res: no PD, CQ, QP, MR, cm_id, context or
#       SRQ left on siw0/siw1
#   injected_kernel_log_clean  nothing of tools/vm/kernel-problems.sh in dmesg
#   injected_kmemleak_clean  no suspected leak (two kmemleak scans) with a
#       frame of siw or of the RDMA core (skipped without kmemleak)
#
# Environment: RDMA_PREFIX, FIBIN (the programs), SIWX_FI_VERBS (200),
# SIWX_FI_CYCLES (60), SIWX_FI_SECS (15); from the boot: SIWX_ADDR0,
# SIWX_ADDR1, SIWX_NETNS1, SIWX_RESULTS.

set -u
P=${RDMA_PREFIX:?RDMA_PREFIX: the rdma-core prefix of the project}
export PATH=$P/bin:$PATH
FIBIN=${FIBIN:?FIBIN: the directory of the programs}
VERBS=${SIWX_FI_VERBS:-200}
CYCLES=${SIWX_FI_CYCLES:-60}
SECS=${SIWX_FI_SECS:-15}
OUT=${SIWX_RESULTS:-/tmp}
LOG=$OUT/failinject.log
# shellcheck disable=SC2034  # traffic.sh's server and client addresses
A0=${SIWX_ADDR0:-192.168.77.1} A1=${SIWX_ADDR1:-192.168.77.2}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
DBG=/sys/kernel/debug
KINDS="failslab fail_page_alloc"
: > "$LOG"

N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok $N failinject.$1${2:+ # $2}"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N failinject.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
say() { echo "# $*"; echo "== $*" >> "$LOG"; }
# shellcheck source=../../tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"
# shellcheck source=../lib/guest_checks.sh
. "$TOP/selftests/lib/guest_checks.sh"
# shellcheck source=../lib/traffic.sh
. "$TOP/selftests/lib/traffic.sh"

echo "TAP version 13"
echo "1..11"
# The kernel log, every line as it comes: the allocator reports the
# failures (warn_alloc's stack dump and memory summary for a vmalloc or
# page allocation without __GFP_NOWARN), a few a second, and the ring
# buffer would lose the older lines
dmesg -w > "$OUT/kmsg.txt" 2>&1 &
KPID=$!
[ -z "$KMEMLEAK" ] || echo clear > "$KMEMLEAK"

# ---------------------------------------------------------------- setup
TIMES=1000000
# siw's text: /proc/modules gives the start of its text and the size of
# all its memory (text first; the rest, its data, holds no return
# address); /proc/kallsyms would be exact but takes a minute to read on
# the debug kernel under TCG
read -r SIZE ADDR < <(awk '$1 == "siw" { print $2, $6 }' /proc/modules)
setup() {
	local k
	for k in $KINDS; do
		if [ ! -w "$DBG/$k/probability" ] || [ ! -w "$DBG/$k/require-start" ]; then
			echo "no $DBG/$k with a stack-trace filter"
			return 1
		fi
	done
	if [ -z "$ADDR" ] || [ "$START" = 0 ]; then
		echo "siw not in /proc/modules (or its address hidden: kptr_restrict)"
		return 1
	fi
	printf 'siw text 0x%x-0x%x (%d bytes of module memory)\n' "$START" "$END" "$SIZE"
}
START=$((${ADDR:-0})) END=$((${ADDR:-0} + ${SIZE:-0}))
if out=$(setup 2>&1); then
	ok setup
	say "$out"
else
	nok setup "$out"
	for t in verbs_failslab verbs_fail_page_alloc connect_failslab connect_fail_page_alloc \
		traffic_failslab traffic_fail_page_alloc recovered resources_back injected_kernel_log_clean \
		injected_kmemleak_clean; do
		nok "$t" "no fault injection"
	done
	exit 1
fi

# fi_on KIND PERCENT: inject KIND failures with PERCENT % probability
# into call chains through siw. Armed only when every setting took: an
# unfiltered injection fails the whole system's allocations (init dies).
# The addresses go in as hex: bash's arithmetic is signed.
fi_on() {
	local d=$DBG/$1 f
	echo 0 > "$d/probability"
	for f in "interval 1" "times $TIMES" "space 0" "verbose 0" "task-filter N" \
		"ignore-gfp-wait N" "stacktrace-depth 32" "require-start $(printf '0x%x' "$START")" \
		"require-end $(printf '0x%x' "$END")" "reject-start 0" "reject-end 0"; do
		if ! echo "${f#* }" > "$d/${f%% *}"; then
			say "$d/${f%% *}: could not set ${f#* }; nothing injected"
			return 1
		fi
	done
	if [ "$1" = fail_page_alloc ]; then
		echo N > "$d/ignore-gfp-highmem" && echo 0 > "$d/min-order" || return 1
	fi
	echo "$2" > "$d/probability"
}
# fi_off KIND: stop injecting; INJECTED: how many failures it injected
fi_off() {
	local d=$DBG/$1
	echo 0 > "$d/probability"
	INJECTED=$((TIMES - $(cat "$d/times")))
}
# field FILE KEY: KEY's value on the last RESULT line of FILE (empty if none)
field() { sed -n 's/^RESULT .*\b'"$2"'=\([0-9]*\).*/\1/p' "$1" | tail -n 1; }

# ---------------------------------------------------------------- verbs
for k in $KINDS; do
	f=$OUT/verbs.$k
	fi_on "$k" 5
	"$FIBIN/failinject_verbs" -d siw0 -n "$VERBS" > "$f" 2>&1
	rc=$?
	fi_off "$k"
	{ echo "---- $f"; cat "$f"; } >> "$LOG"
	say "verbs, $k: $INJECTED failures injected; $(grep '^RESULT' "$f")"
	grep '^# failed:' "$f" | head -n 12
	if [ "$rc" = 0 ] && [ "$INJECTED" -gt 0 ] && [ "$(field "$f" complete)" -gt 0 ] 2>/dev/null; then
		ok "verbs_$k"
	else
		nok "verbs_$k" "exit $rc, $INJECTED injected, $(field "$f" complete) complete iterations:"
		grep '^# iteration' "$f" | head -n 10 | sed 's/^/#   /'
	fi
done

# ---------------------------------------------------------------- connect
for k in $KINDS; do
	f=$OUT/connect.$k
	# a connection cycle makes many of siw's allocations: at 2 % failslab
	# left 6-11 of 60 cycles good, at 1 % about a third
	if [ "$k" = failslab ]; then fi_on "$k" 1; else fi_on "$k" 2; fi
	"$FIBIN/churn" -e -n "$CYCLES" > "$f" 2>&1
	rc=$?
	fi_off "$k"
	{ echo "---- $f"; cat "$f"; } >> "$LOG"
	say "connect, $k: $INJECTED failures injected; $(grep '^RESULT' "$f")"
	grep '^# failed:' "$f" | head -n 12
	if [ "$rc" = 0 ] && [ "$INJECTED" -gt 0 ]; then
		ok "connect_$k"
	else
		nok "connect_$k" "exit $rc (1: data corrupted or no good cycle), $INJECTED injected:"
		grep '^# cycle' "$f" | tail -n 10 | sed 's/^/#   /'
	fi
done

# ---------------------------------------------------------------- traffic
# the client may take long to give up under injection (reconnects)
# shellcheck disable=SC2034  # traffic.sh's
TRAFFIC_PORT=7480 TRAFFIC_GRACE=300 FT=$FIBIN/faults_traffic
for k in $KINDS; do
	traffic "traffic.$k" "$SECS" -E -r -R 30000 -B 10000
	cf=$CF sf=$SF
	# armed once the first connection is up: this phase is about the
	# data path (and the reconnects after an error), the connect phase
	# above about connection setup. The data path allocates few pages
	# (TCP's page fragments are 32 KiB): a higher rate for them.
	for ((i = 0; i < 600; i++)); do
		grep -q 'connection 1 established' "$cf" 2>/dev/null && break
		kill -0 "$CPID" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$k" = fail_page_alloc ]; then fi_on "$k" 20; else fi_on "$k" 1; fi
	wait_bounded "$CPID" $((SECS + TRAFFIC_GRACE)) client
	fi_off "$k"
	traffic_end
	crc=$CRC src=$SRC
	say "traffic, $k: $INJECTED failures injected"
	say "  $(grep '^RESULT' "$cf")"
	say "  $(grep '^RESULT' "$sf")"
	bad=""
	[ "$crc" = 0 ] || bad="$bad client exit $crc;"
	[ "$src" = 0 ] || bad="$bad server exit $src;"
	for key in verify_errors unflushed; do
		[ "$(field "$cf" $key)" = 0 ] || bad="$bad client $key=$(field "$cf" $key);"
	done
	for key in verify_errors placed_corrupt unflushed; do
		[ "$(field "$sf" $key)" = 0 ] || bad="$bad server $key=$(field "$sf" $key);"
	done
	[ "$INJECTED" -gt 0 ] || bad="$bad no failure injected;"
	if [ -z "$bad" ]; then
		ok "traffic_$k"
	else
		nok "traffic_$k" "$bad"
		grep -h '^# ' "$cf" "$sf" | tail -n 10 | sed 's/^/#   /'
	fi
done

# ---------------------------------------------------------------- after
f=$OUT/recovered
{
	"$FIBIN/churn" -n 5 && "$FIBIN/failinject_verbs" -d siw0 -n 10 -s
} > "$f" 2>&1
rc=$?
cat "$f" >> "$LOG"
if [ "$rc" = 0 ]; then
	ok recovered
else
	nok recovered "with nothing injected any more: exit $rc:"
	tail -n 10 "$f" | sed 's/^/#   /'
fi

left=$(res_left)
if [ -z "$left" ]; then ok resources_back; else nok resources_back "left: $left"; fi

# The kernel log: every problem line of tools/vm/kernel-problems.sh
# counts, except the "Call Trace" of the allocator's own report of a
# failed allocation (from its "vmalloc error:" or "page allocation
# failure:" line to its "Mem-Info:"), which the injection causes by
# design; a WARNING, BUG, KASAN report or anything else inside such a
# report still counts. Then the ring buffer is cleared, so that
# tools/vm/run's scan at the end (which knows nothing of injection)
# judges only what comes after: every line before was judged here and is
# kept in kmsg.txt.
sleep 1
kill "$KPID" 2>/dev/null
wait "$KPID" 2>/dev/null
problems=$(awk -v pat="$KERNEL_PROBLEMS" '
	/vmalloc error: size|page allocation failure: order/ { inrep = 1; nrep++ }
	inrep && /Mem-Info:/ { inrep = 0 }
	inrep && /Call Trace/ { next }
	$0 ~ pat { print; n++; if (n >= 10) exit }
	END { print nrep + 0 > "/dev/stderr" }' "$OUT/kmsg.txt" 2> "$OUT/kmsg.reports")
say "kernel log: $(cat "$OUT/kmsg.reports") allocation failure reports (warn_alloc)"
if [ -z "$problems" ]; then
	ok injected_kernel_log_clean
	dmesg -C
else
	nok injected_kernel_log_clean "${problems//$'\n'/$'\n#   '}"
fi
kmemleak_test injected '\\[(siw|ib_core|ib_uverbs|ib_cm|iw_cm|rdma_cm|rdma_ucm)\\]' "frames of siw or the RDMA core"
exit $FAILED
