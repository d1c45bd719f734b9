#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# churn_guest.sh - suite "churn", the guest side (run by churn.sh in a VM of
# its own, booted with --netns: siw0 on veth0 here, siw1 on veth1 in
# namespace siwx1). TAP to stdout.
#
#   connections          CONNS connect/disconnect cycles of the churn
#                        program (a verified Send, RDMA Write and Send back
#                        each, alternating which side disconnects), every
#                        one good
#   connections_no_leftover_resources  rdma res: no PD, CQ, QP, MR, cm_id,
#                        context or SRQ left on siw0/siw1
#   connections_slab_stable, connections_vmalloc_stable  unreclaimable
#                        slab and VmallocUsed after the last cycle against
#                        after the warm-up (below)
#   connections_kernel_log_clean  no Oops/WARNING/BUG/refcount/hung task
#                        (tools/vm/kernel-problems.sh) since the start
#   connections_kmemleak_clean  debug kernel only (skipped elsewhere): no
#                        new suspected leak with a siw frame
#   modules              LOADS cycles of insmod siw.ko, rdma link add siw0
#                        and siw1, one connection of the churn program,
#                        rdma link delete, rmmod siw: every step succeeds
#   modules_slab_stable, modules_vmalloc_stable  the same after the last
#                        rmmod against after the first
#   modules_kernel_log_clean  as above, for the module cycles
#   modules_kmemleak_clean  debug kernel only: no new suspected leak with
#                        a siw frame or a frame in unloaded module text
#   boot_state_restored  siw loaded and siw0/siw1 back, as the boot made
#                        them (tools/vm/run's own teardown and its kmemleak
#                        scan run on them)
#
# The slab criterion. "Slab" is SUnreclaim of /proc/meminfo after
# shrinking every SLUB cache (/sys/kernel/slab/*/shrink gives the empty
# slabs of the per-CPU partial lists back), less the slabs of caches whose
# growth is the kernel's design, not a leak: tw_sock_TCP (a closed TCP
# connection waits 60 s in TIME_WAIT), vmap_area (a vfree()d area's
# bookkeeping stays until the lazy purge, after about 64 MiB of freed
# areas; siw's queues are vmalloc()ed) and, on the debug kernel, the
# per-object metadata of kmemleak and debugobjects (kmemleak_object,
# kmemleak_scan_area, debug_objects_cache), which follow the objects they
# track, vmap_area's among them. What vmalloc really holds, VmallocUsed, is
# checked on its own. The first measurement is after a warm-up (the first
# WARM connection cycles; the first load cycle), which fills the caches;
# the last one, of the connections, once no TIME_WAIT socket is left (at
# most 90 s: they hold a struct pid each, and objects freed through RCU in
# batches, kmalloc-192, come back within seconds), and of the module
# cycles 10 s after the last (their few TIME_WAIT sockets are excluded).
# The growth from the first to the last must stay below
# SIWX_CHURN_SLAB_PER_CONN (default 1024 bytes) a connection cycle or
# SIWX_CHURN_SLAB_PER_LOAD (default 8192) a load cycle, plus
# SIWX_CHURN_SLAB_SLACK (256 KiB) for the slab's granularity, and VmallocUsed
# below a page a cycle plus 128 KiB (runs measured 0-57 KiB). One connection holds much more unreclaimable
# slab while it lives (two TCP sockets of about 2.4 KiB each, two siw QPs
# and CEPs, CQs, PDs, MRs, two rdma_cm ids and their ucma contexts) and
# one siw device much more than 8 KiB (its ib_device, ports, counters,
# sysfs nodes), so leaking any of these in every cycle exceeds the bound,
# while the slab's granularity (a new slab of a cache counts whole while a
# CPU allocates from it: 32 KiB for some; runs measured 90-260 KiB of such
# noise whatever the cycle count) stays within the slack. Smaller leaks per
# cycle are kmemleak's (debug kernel). The caches that grew most are
# printed, and any that grew by half an object per cycle or more (and
# more than a slab per CPU).
#
# Environment: RDMA_PREFIX, CHURN (the program), SIWX_CHURN_CONNS (500),
# SIWX_CHURN_LOADS (30), SIWX_CHURN_SLAB_PER_CONN, SIWX_CHURN_SLAB_PER_LOAD,
# SIWX_CHURN_SLAB_SLACK;
# from the boot: SIWX_MODULE, SIWX_NETNS1, SIWX_RESULTS.

set -u
P=${RDMA_PREFIX:?RDMA_PREFIX: the rdma-core prefix of the project}
export PATH=$P/bin:$PATH
CHURN=${CHURN:?CHURN: the churn program}
CONNS=${SIWX_CHURN_CONNS:-500}
LOADS=${SIWX_CHURN_LOADS:-30}
PER_CONN=${SIWX_CHURN_SLAB_PER_CONN:-1024}
PER_LOAD=${SIWX_CHURN_SLAB_PER_LOAD:-8192}
SLACK=${SIWX_CHURN_SLAB_SLACK:-262144}
OUT=${SIWX_RESULTS:-/tmp}
LOG=$OUT/churn.log
NS=${SIWX_NETNS1:-}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
: > "$LOG"
# shellcheck source=../../tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"
MARGS=()
[ ! -r "$OUT/module-args" ] || read -r -a MARGS < "$OUT/module-args"
NCPU=$(nproc)
PAGE=$(getconf PAGESIZE)

N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok $N churn.$1${2:+ # $2}"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N churn.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
say() { echo "# $*"; echo "== $*" >> "$LOG"; }
run() { echo "+ $*" >> "$LOG"; "$@" >> "$LOG" 2>&1; }
# shellcheck source=../lib/guest_checks.sh
. "$TOP/selftests/lib/guest_checks.sh"
# shellcheck disable=SC2317  # also called through run
nsx() { if [ -n "$NS" ]; then ip netns exec "$NS" "$@"; else "$@"; fi; }

# slab NAME: shrink every cache, save /proc/slabinfo as OUT/slabinfo.NAME
# and set SLAB (bytes: SUnreclaim less the slabs of EXCLUDED), TW
# (tw_sock_TCP objects), VMALLOC (VmallocUsed, bytes) and ODEBUG (the debug
# kernel's debugobjects pool_used and pool_free, else empty)
EXCLUDED=" tw_sock_TCP vmap_area kmemleak_object kmemleak_scan_area debug_objects_cache "
slab() {
	local f k v ex=0 name act pps nslabs
	for f in /sys/kernel/slab/*/shrink; do echo 1 > "$f"; done 2>/dev/null
	while read -r k v _; do
		case $k in
		SUnreclaim:) SLAB=$((v * 1024)) ;;
		VmallocUsed:) VMALLOC=$((v * 1024)) ;;
		esac
	done < /proc/meminfo
	TW=0
	# name active_objs num_objs objsize objperslab pagesperslab : tunables
	# limit batchcount sharedfactor : slabdata active_slabs num_slabs ...
	while read -r name act _ _ _ pps _ _ _ _ _ _ _ nslabs _; do
		[ "$name" != tw_sock_TCP ] || TW=$act
		[[ $EXCLUDED != *" $name "* ]] || ex=$((ex + nslabs * pps * PAGE))
	done < /proc/slabinfo
	SLAB=$((SLAB - ex))
	cat /proc/slabinfo > "$OUT/slabinfo.$1"
	# debug kernel: what debugobjects tracks (pool_used) and keeps free
	ODEBUG=""
	if [ -r /sys/kernel/debug/debug_objects/stats ]; then
		# "pool_used     :1234"
		while IFS=' :' read -r k v; do
			case $k in pool_used|pool_free) ODEBUG="$ODEBUG $k $v" ;; esac
		done < /sys/kernel/debug/debug_objects/stats
	fi
}

# tw_gone: wait until no TCP socket is in TIME_WAIT in either namespace
# (at most 90 s; TCP keeps them 60 s)
tw_gone() {
	local i
	for ((i = 0; i < 90; i++)); do
		[ -z "$(ss -Htan state time-wait)" ] && [ -z "$(nsx ss -Htan state time-wait)" ] && return 0
		sleep 1
	done
	return 1
}

# slab_top A B CYCLES: the 5 caches whose bytes (active objects x size)
# grew most from OUT/slabinfo.A to OUT/slabinfo.B, and any other that
# grew by CYCLES / 2 objects or more and by more than a slab per CPU (a
# CPU's current slab counts whole), as "# " lines
slab_top() {
	awk -v half="$(($3 / 2))" -v ncpu="$NCPU" -v excl="$EXCLUDED" '
	     NR == FNR { if ($1 !~ /^#|^slabinfo/) a[$1] = $2; next }
	     $1 !~ /^#|^slabinfo/ { d = $2 - a[$1]; if (d) printf "%d %s %d %s\n", d * $4, $1, d, (d >= half && d > ncpu * $5 && index(excl, " " $1 " ") == 0) ? "half" : "" }' \
		"$OUT/slabinfo.$1" "$OUT/slabinfo.$2" | sort -rn |
		awk '{ if (NR <= 5 || $4 == "half") printf "#   %s: %+d objects, %+d bytes%s\n", $2, $3, $1, $4 == "half" ? " (half an object per cycle or more)" : "" }'
}

# load: insmod siw.ko and the two links as the boot made them
load() {
	run insmod "$SIWX_MODULE" "${MARGS[@]}" || { echo "insmod"; return 1; }
	run rdma link add siw0 type siw netdev veth0 || { echo "rdma link add siw0"; return 1; }
	run nsx rdma link add siw1 type siw netdev veth1 || { echo "rdma link add siw1"; return 1; }
}
# unload: the links, then rmmod (each bounded: a hang is a failure)
unload() {
	run nsx timeout 60 rdma link delete siw1 || { echo "rdma link delete siw1"; return 1; }
	run timeout 60 rdma link delete siw0 || { echo "rdma link delete siw0"; return 1; }
	run timeout 60 rmmod siw || { echo "rmmod siw"; return 1; }
}

# stable WHAT FIRST LAST CYCLES BOUND R: tests WHAT_slab_stable and
# WHAT_vmalloc_stable from the measurements named FIRST and LAST (SLAB_x,
# VM_x, TW_x) over CYCLES cycles; R non-empty: the cycles failed
stable() {
	local what=$1 a=$2 b=$3 cyc=$4 bound=$5 r=$6 sa sb va vb ta tb g
	sa=SLAB_$a sb=SLAB_$b va=VM_$a vb=VM_$b ta=TW_$a tb=TW_$b
	[ "$cyc" -ge 1 ] || cyc=1
	g=$((${!sb} - ${!sa}))
	say "$what: unreclaimable slab (less the slabs of$EXCLUDED) $a ${!sa}, $b ${!sb} bytes: $g over $cyc cycles, $((g / cyc)) a cycle; bound $bound a cycle + $SLACK: $((bound * cyc + SLACK)); TIME_WAIT sockets ${!ta} and ${!tb}"
	slab_top "$a" "$b" "$cyc"
	if [ -n "$r" ]; then
		nok "${what}_slab_stable" "the cycles failed"
	elif [ "$g" -lt $((bound * cyc + SLACK)) ]; then
		ok "${what}_slab_stable"
	else
		nok "${what}_slab_stable" "$g bytes over $cyc cycles, bound $bound a cycle + $SLACK"
	fi
	g=$((${!vb} - ${!va}))
	say "$what: VmallocUsed $a ${!va}, $b ${!vb} bytes: $g over $cyc cycles, $((g / cyc)) a cycle; bound a page a cycle + 128 KiB: $((PAGE * cyc + 131072))"
	if [ -n "$r" ]; then
		nok "${what}_vmalloc_stable" "the cycles failed"
	elif [ "$g" -lt $((PAGE * cyc + 131072)) ]; then
		ok "${what}_vmalloc_stable"
	else
		nok "${what}_vmalloc_stable" "$g bytes over $cyc cycles, bound a page a cycle + 128 KiB"
	fi
}
# measure NAME: slab NAME, its figures kept as SLAB_NAME, VM_NAME, TW_NAME
measure() {
	slab "$1"
	printf -v "SLAB_$1" %s "$SLAB"
	printf -v "VM_$1" %s "$VMALLOC"
	printf -v "TW_$1" %s "$TW"
	[ -z "$ODEBUG" ] || say "$1: debugobjects:$ODEBUG"
}

echo "TAP version 13"
echo "1..12"
say "$CONNS connection cycles, $LOADS module load cycles; kernel $(uname -r), module $SIWX_MODULE"
[ -z "$KMEMLEAK" ] || echo clear > "$KMEMLEAK"

# -------------------------------------------------------------- connections
say "connections"
MARK=$(dmesg_mark)
WARM=$((CONNS / 10)); [ "$WARM" -ge 1 ] || WARM=1; [ "$WARM" -le 20 ] || WARM=20
measure conn_start
t0=$EPOCHSECONDS r=""
# a generous bound: a cycle takes well under 2 s under TCG
if ! timeout $((60 + 2 * WARM)) "$CHURN" -n "$WARM" > "$OUT/churn.warm.out" 2>&1; then
	r="warm-up ($WARM cycles) failed"
fi
cat "$OUT/churn.warm.out"
measure conn_warm
if [ -z "$r" ] && [ "$CONNS" -gt "$WARM" ] &&
   ! timeout $((60 + 2 * (CONNS - WARM))) "$CHURN" -n $((CONNS - WARM)) -f "$WARM" \
	> "$OUT/churn.main.out" 2>&1; then
	r="cycles $WARM-$((CONNS - 1)) failed"
fi
[ ! -r "$OUT/churn.main.out" ] || cat "$OUT/churn.main.out"
secs=$((EPOCHSECONDS - t0))
if [ -z "$r" ]; then ok connections "$CONNS cycles in $secs s"; else nok connections "$r (exit status and output above)"; fi

left=$(res_left)
if [ -z "$left" ]; then ok connections_no_leftover_resources; else nok connections_no_leftover_resources "rdma res: $left"; fi

measure conn_end
t0=$EPOCHSECONDS
tw_gone || say "TIME_WAIT sockets still there after 90 s"
say "$((EPOCHSECONDS - t0)) s until no TIME_WAIT socket was left"
measure conn_settled
stable connections conn_warm conn_settled $((CONNS - WARM)) "$PER_CONN" "$r"

kernel_log_test connections "$MARK"
kmemleak_test connections '\\[siw\\]' "siw frames"

# -------------------------------------------------------------- modules
say "modules"
MARK=$(dmesg_mark)
t0=$EPOCHSECONDS r=""
# the boot's devices and module go first: that rmmod counts too
e=$(unload) || r="before the first load: $e failed"
measure mod_0
for ((i = 1; i <= LOADS && ${#r} == 0; i++)); do
	if ! e=$(load); then
		r="load $i: $e failed"
	elif ! timeout 120 "$CHURN" -n 1 -f "$i" > "$OUT/churn.load.out" 2>&1; then
		r="load $i: the connection failed"
		cat "$OUT/churn.load.out"
		unload > /dev/null
	elif ! e=$(unload); then
		r="load $i: $e failed"
	fi
	[ "$i" != 1 ] || measure mod_1
	[ $((i % 10)) != 0 ] || echo "# $i load cycles, $((EPOCHSECONDS - t0)) s"
done
secs=$((EPOCHSECONDS - t0))
if [ -z "$r" ]; then ok modules "$LOADS cycles in $secs s"; else nok modules "$r (see $LOG)"; fi
# what RCU frees in batches comes back within seconds
sleep 10
measure mod_end
[ -n "${SLAB_mod_1:-}" ] || measure mod_1
stable modules mod_1 mod_end $((LOADS - 1)) "$PER_LOAD" "$r"
s=SLAB_mod_0
say "modules: unreclaimable slab with siw unloaded before the first cycle ${!s} bytes"

kernel_log_test modules "$MARK"

# the boot's state back: tools/vm/run's kmemleak scan and teardown expect it
e=""
if [ ! -e /sys/module/siw ]; then
	e=$(load) || e="$e failed"
else
	[ -e /sys/class/infiniband/siw0 ] || run rdma link add siw0 type siw netdev veth0 || e="rdma link add siw0 failed"
	[ -e /sys/class/infiniband/siw1 ] || run nsx rdma link add siw1 type siw netdev veth1 || e="rdma link add siw1 failed"
fi
# symbols of the siw loaded now; an earlier one's text has no name
kmemleak_test modules '\\[siw\\]|\\] 0xffff' "siw frames or frames in unloaded module text"

if [ -e /sys/class/infiniband/siw0 ] && [ -e /sys/class/infiniband/siw1 ]; then
	ok boot_state_restored
else
	nok boot_state_restored "${e:-siw0 or siw1 missing}"
fi
exit "$FAILED"
