#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests/run.sh - host-side runner of the siwx selftests (`make check`).
#
#   selftests/run.sh [-l|--list] [--table] [-n|--dry-run] [-h|--help] [SUITE...]
#
# The suites are the folders of selftests/, each described by its settings
# file (selftests/lib/suites.sh; Documentation/testing.md, "Adding a
# test"). Builds nothing (the Makefile does). Boots as few VMs as possible
# through tools/vm/run:
#   - one single-VM boot with SIWX_MODULE for every selected suite of
#     topology single (tools/vm/run --netns: siw1 and its address in a
#     network namespace of their own, where the suites run their clients);
#   - one single-VM boot with SIWX_UPSTREAM_MODULE for topology
#     single-upstream;
#   - one pair boot per pair order that a selected pair suite names
#     (ours-upstream: SIWX_MODULE in VM a, SIWX_UPSTREAM_MODULE in VM b;
#     upstream-ours; ours-ours; ...), running the pair suites that name it
#     (SIWX_PAIR_ORDER tells the guests which boot it is);
# and then runs the host suites. Collects the TAP of every suite, prints
# one line per test (failing tests with their diagnostics) and ends with
# exactly one line
#   N passed, N failed[, N skipped]
# Exit status 0 only when nothing failed. A VM-level problem (kernel
# WARNING/Oops/..., failed rmmod or teardown, timeout, dead guest) counts as
# a failed test of its own ("vm.<run>.clean"); so do tests missing from a
# truncated TAP stream, and a host suite's non-zero exit ("SUITE.run").
#
#   --list     the suite names, in the order of a default run
#   --table    the suite table of Documentation/testing.md, from the settings
#   --dry-run  boot nothing: print the boots and the exact guest commands
#
# Environment (defaults relative to the repository):
#   SIWX_MODULE           module under test          (build/siwx/siw.ko)
#   SIWX_UPSTREAM_MODULE  unmodified upstream module (build/upstream/siw.ko)
#   RDMA_PREFIX           our rdma-core prefix       (build/rdma-core/prefix)
#   SELFTEST_DIR          build output of selftests/ (build/selftests)
#   SIWX_RESULTS_DIR      where results go     (SELFTEST_DIR/results/<stamp>)
#   SIWX_VM_TIMEOUT       limit of a single-VM boot, seconds (default: the
#                         sum of its suites' timeouts + 300, suites_limit)
#   SIWX_PAIR_TIMEOUT     limit of each pair boot, seconds (default: the same
#                         sum for the suites of that boot)
#   SIWX_VERBOSE=1        stream the VM consoles
#   Every other SIWX_* variable (e.g. SIWX_IMM_FLUSH_ROUNDS=12,
#   SIWX_SUITE_TIMEOUT_<suite>), and the variables the selected suites
#   declare (env=), reach the suites in the guest.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)
# shellcheck source=lib/suites.sh
. "$HERE/lib/suites.sh"

# The runner's and the VM harness's own variables, and those the guest sets
# itself: never passed on to the suites.
RUNNER_VARS='^SIWX_(MODULE|UPSTREAM_MODULE|RESULTS_DIR|VM_[A-Z0-9_]*|PAIR_TIMEOUT|VERBOSE|BIN|STOCK_BIN|PAIR_ORDER|GUEST_DRY_RUN|ROLE|RESULTS|TOP|LOCAL|PEER|ADDR[0-9]|DEV[0-9]|NETDEV[0-9]|NETNS[0-9])$'

usage() {
	sed -n '/^#   selftests\/run.sh/,/^#   declare (env=)/s/^# \{0,1\}//p' "$0"
	echo
	echo "Suites: ${ALL[*]}"
	echo "Default: ${DEFAULT[*]}"
}

if ! suites_load "$HERE"; then
	printf 'run.sh: %s\n' "${SUITE_ERRORS[@]}" >&2
	exit 2
fi
# every suite by place, then name; the default run
mapfile -t ALL < <(for s in "${SUITE_NAMES[@]}"; do
	echo "${SUITE[$s:order]} $s"; done | LC_ALL=C sort -k1,1n -k2,2 | cut -d' ' -f2)
DEFAULT=()
for s in "${ALL[@]}"; do
	[ "${SUITE[$s:default]}" = off ] || DEFAULT+=("$s")
done

# table: the suite table of Documentation/testing.md
table() {
	local s where t
	echo "| suite | settings | runs in | timeout | default |"
	echo "|---|---|---|---|---|"
	for s in "${ALL[@]}"; do
		case ${SUITE[$s:topology]} in
		single) where="single VM" ;;
		single-upstream) where="single VM, upstream module" ;;
		pair) where="pair: ${SUITE[$s:pairs]// /, }" ;;
		host) where="host"; [ "${SUITE[$s:early]}" = no ] || where="host, started early" ;;
		esac
		[ -z "${SUITE[$s:pmem]}" ] || where="$where, pmem ${SUITE[$s:pmem]}"
		t=${SUITE[$s:timeout]}
		[ "$t" = 0 ] && t=none || t="$t s"
		echo "| \`$s\` | \`${SUITE[$s:file]#"$TOP"/}\` | $where | $t | ${SUITE[$s:default]} |"
	done
}

SEL=() DRY=0
for a in "$@"; do
	case $a in
	-h|--help) usage; exit 0 ;;
	-l|--list) printf '%s\n' "${ALL[@]}"; exit 0 ;;
	--table) table; exit 0 ;;
	-n|--dry-run) DRY=1 ;;
	-*) echo "run.sh: unknown option $a" >&2; usage >&2; exit 2 ;;
	*) SEL+=("$a") ;;
	esac
done
[ ${#SEL[@]} -gt 0 ] || SEL=("${DEFAULT[@]}")

abs() { (cd "$(dirname "$1")" 2>/dev/null && echo "$(pwd -P)/$(basename "$1")") || echo "$1"; }
SIWX_MODULE=$(abs "${SIWX_MODULE:-$TOP/build/siwx/siw.ko}")
SIWX_UPSTREAM_MODULE=$(abs "${SIWX_UPSTREAM_MODULE:-$TOP/build/upstream/siw.ko}")
RDMA_PREFIX=$(abs "${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}")
SELFTEST_DIR=$(abs "${SELFTEST_DIR:-$TOP/build/selftests}")
STAMP=$(date +%Y%m%d-%H%M%S)
RES=${SIWX_RESULTS_DIR:-$SELFTEST_DIR/results/$STAMP}
# boot_limit VAR SUITE...: $VAR if set, else suites_limit, in REPLY
boot_limit() {
	local v=$1; shift
	if [ -n "${!v:-}" ]; then REPLY=${!v}; else suites_limit "$@"; fi
}
VMRUN=$TOP/tools/vm/run
SUITE_BIN=$SELFTEST_DIR/bin SUITE_STOCK=$SELFTEST_DIR/stock SUITE_KMOD=$SELFTEST_DIR/kmod
# the tools of the same build as the tests (build/debug-kernel/tools for
# make check KERNEL=debug)
SUITE_TOOLS=${SELFTEST_DIR%/*}/tools SUITE_TOP=$TOP

single=() single_up=() pair=() host=()
for s in "${SEL[@]}"; do
	if [ -z "${SUITE[$s:file]+x}" ]; then
		echo "run.sh: unknown suite '$s' (run.sh --list)" >&2
		exit 2
	fi
	case ${SUITE[$s:topology]} in
	single) single+=("$s") ;;
	single-upstream) single_up+=("$s") ;;
	pair) pair+=("$s") ;;
	host) host+=("$s") ;;
	esac
done
# the pair boots: every order a selected pair suite names
orders=()
for o in $SUITE_PAIR_ORDERS; do
	for s in "${pair[@]}"; do
		case " ${SUITE[$s:pairs]} " in *" $o "*) orders+=("$o"); break ;; esac
	done
done
module_of() {	# ours|upstream
	if [ "$1" = ours ]; then echo "$SIWX_MODULE"; else echo "$SIWX_UPSTREAM_MODULE"; fi
}
uses_upstream=0
[ ${#single_up[@]} -eq 0 ] || uses_upstream=1
case " ${orders[*]} " in *upstream*) uses_upstream=1 ;; esac

# ---------------------------------------------------------------- guest command
# guest_cmd VAR ORDER SUITE...: into VAR, the shell command line the guest
# runs: guest.sh SUITE... with the suites' environment as assignments, each
# value quoted. That is every SIWX_* variable that is not the runner's, and
# the variables the suites declare (env=).
guest_cmd() {
	local -n out=$1
	local order=$2 v declared= vars; shift 2
	printf -v out '%s=%q ' SIWX_BIN "$SELFTEST_DIR/bin" SIWX_STOCK_BIN "$SELFTEST_DIR/stock" \
		RDMA_PREFIX "$RDMA_PREFIX"
	[ -z "$order" ] || out+="SIWX_PAIR_ORDER=$order "
	for v in "$@"; do declared+=" ${SUITE[$v:env]}"; done
	for v in $(compgen -e); do
		case $v in
		RDMA_PREFIX) continue ;;
		SIWX_*) [[ $v =~ $RUNNER_VARS ]] && continue ;;
		*) case "$declared " in *" $v "*) ;; *) continue ;; esac ;;
		esac
		printf -v vars '%s=%q ' "$v" "${!v}"
		out+=$vars
	done
	printf -v vars '%q ' "$HERE/guest.sh" "$@"
	out+=${vars% }
}

if [ "$DRY" = 1 ]; then
	if [ ${#single[@]} -gt 0 ]; then
		guest_cmd cmd '' "${single[@]}"
		boot_limit SIWX_VM_TIMEOUT "${single[@]}"; lim=$REPLY
		suites_pmem "${single[@]}"
		echo "boot single (module $SIWX_MODULE, --netns, limit ${lim}s${REPLY:+, pmem $REPLY}): ${single[*]}"
		echo "  guest: $cmd"
	fi
	if [ ${#single_up[@]} -gt 0 ]; then
		guest_cmd cmd '' "${single_up[@]}"
		boot_limit SIWX_VM_TIMEOUT "${single_up[@]}"; lim=$REPLY
		suites_pmem "${single_up[@]}"
		echo "boot single-upstream (module $SIWX_UPSTREAM_MODULE, --netns, limit ${lim}s${REPLY:+, pmem $REPLY}): ${single_up[*]}"
		echo "  guest: $cmd"
	fi
	for order in "${orders[@]}"; do
		psuites=()
		for s in "${pair[@]}"; do
			case " ${SUITE[$s:pairs]} " in *" $order "*) psuites+=("$s") ;; esac
		done
		guest_cmd cmd "$order" "${psuites[@]}"
		boot_limit SIWX_PAIR_TIMEOUT "${psuites[@]}"; lim=$REPLY
		suites_pmem "${psuites[@]}"
		echo "boot pair-$order (a: $(module_of "${order%-*}"), b: $(module_of "${order#*-}"), limit ${lim}s${REPLY:+, pmem $REPLY in b}): ${psuites[*]}"
		echo "  guest: $cmd"
	done
	for s in "${host[@]}"; do
		suite_expand "$s" "${SUITE[$s:cmd]}"
		t=${SUITE[$s:timeout]}; [ "$t" != 0 ] && t="${t}s" || t=none
		echo "host $s (limit $t): $REPLY"
	done
	exit 0
fi

mkdir -p "$RES" || { echo "run.sh: cannot create $RES" >&2; exit 2; }
RES=$(cd "$RES" && pwd -P)
[ -n "${SIWX_RESULTS_DIR:-}" ] || ln -sfn "$STAMP" "$(dirname "$RES")/latest" 2>/dev/null

PASS=0 FAIL=0 SKIP=0
pass() { PASS=$((PASS + 1)); echo "PASS  $1"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL  $1"; }
skip() { SKIP=$((SKIP + 1)); echo "SKIP  $1: $2"; }

# ---------------------------------------------------------------- checks
# What the selected suites need (their cmd and needs=) must exist before
# anything boots; each is a failed "setup.*" test when it does not.
PRE_OK=1 CHECKED=' '
precheck() {	# WHAT PATH
	case $CHECKED in *" $1 "*) return ;; esac
	CHECKED+="$1 "
	if [ ! -e "$2" ]; then
		fail "setup.$1 ($2 missing: run 'make check' or build it first)"
		PRE_OK=0
	fi
}
precheck vm-harness "$VMRUN"
precheck module "$SIWX_MODULE"
[ "$uses_upstream" = 0 ] || precheck upstream-module "$SIWX_UPSTREAM_MODULE"
for s in "${SEL[@]}"; do
	for w in "${SUITE[$s:cmd]%% *}" ${SUITE[$s:needs]}; do
		case $w in
		'$DIR/'*) continue ;;	# in the source tree
		'$BIN/'*) what=bin.${w#'$BIN/'} ;;
		'$STOCK/'*) what=bin.stock.${w#'$STOCK/'} ;;
		'$KMOD/'*) what=kmod.${w#'$KMOD/'}; what=${what%.ko} ;;
		'$TOOLS/'*) what=tool.${w##*/} ;;
		*) what=file.${w##*/} ;;
		esac
		suite_expand "$s" "$w"
		precheck "$what" "$REPLY"
	done
done

echo "siwx selftests: module $SIWX_MODULE"
[ "$uses_upstream" = 0 ] || echo "siwx selftests: upstream module $SIWX_UPSTREAM_MODULE"
echo "siwx selftests: results in $RES"

# ---------------------------------------------------------------- host, early
# host_run SUITE: runs a host suite: TAP on stdout into RES/SUITE.tap,
# stderr into RES/SUITE.log, its exit status and seconds into
# RES/SUITE.rc and RES/SUITE.secs.
host_run() {
	local s=$1 t0 rc var limit hcmd
	suite_expand "$s" "${SUITE[$s:cmd]}"
	read -r -a hcmd <<< "$REPLY"
	t0=$(date +%s)
	suite_timeout "$s"
	limit=$REPLY
	# what a host suite that boots VMs of its own (tools/vm/run)
	# needs: the modules and build outputs of this run
	SIWX_RESULTS=$RES SIWX_MODULE=$SIWX_MODULE SIWX_UPSTREAM_MODULE=$SIWX_UPSTREAM_MODULE \
	RDMA_PREFIX=$RDMA_PREFIX SELFTEST_DIR=$SELFTEST_DIR \
		timeout -k 10 "$limit" "${hcmd[@]}" \
		> "$RES/$s.tap" 2> "$RES/$s.log" < /dev/null
	rc=$?
	echo "$rc" > "$RES/$s.rc"
	echo "$(( $(date +%s) - t0 ))" > "$RES/$s.secs"
}
# The host suites with early=yes start now, in the background, next to the
# VMs: one lane, one suite after the other in the run's order (each boots
# VMs of its own; two at a time would crowd the single-VM boot). The host
# section below waits for each one's result (host_run writes SUITE.secs
# last).
declare -A EARLY=()
early_lane=()
if [ "$PRE_OK" = 1 ]; then
	for s in "${host[@]}"; do
		[ "${SUITE[$s:early]}" = yes ] || continue
		early_lane+=("$s")
		EARLY[$s]=1
	done
fi
if [ ${#early_lane[@]} -gt 0 ]; then
	echo "--- host, started early (alongside the VMs, one after the other): ${early_lane[*]}"
	( for s in "${early_lane[@]}"; do host_run "$s"; done ) &
	EARLY_PID=$!
fi
# early_wait SUITE: until the lane has SUITE's result (or has gone)
early_wait() {
	while [ ! -e "$RES/$1.secs" ] && kill -0 "$EARLY_PID" 2>/dev/null; do
		sleep 2
	done
}

# ---------------------------------------------------------------- TAP
# shellcheck source=selftests/lib/tap.sh
. "$HERE/lib/tap.sh"

# The guest kernel's problem reports: KERNEL_PROBLEMS, the one list
# (tools/vm/kernel-problems.sh), for the VMs' verdicts and the host suites
# shellcheck source=../tools/vm/kernel-problems.sh
. "$TOP/tools/vm/kernel-problems.sh"

# oops_excerpt FILE...: the first kernel report (a line of KERNEL_PROBLEMS)
# of the first FILE that has one, with the lines that say where it happened
# (CPU and task, RIP, the call trace): what a CI log must show of a crash
# whose results directory is gone with the machine.
oops_excerpt() {
	local f
	for f in "$@"; do
		[ -s "$f" ] || continue
		tr -d '\r' < "$f" | awk -v name="$f" -v re="$KERNEL_PROBLEMS" '
			!n && $0 ~ re { print "        the first kernel report in " name ":" }
			(n || $0 ~ re) && n < 40 && /Oops|BUG|WARNING|panic|CPU:|Comm:|RIP:|RSP:|CR2:|Call Trace|<TASK>|<IRQ>|<#DF>|<NMI>|\+0x/ {
				print "          " substr($0, 1, 160); n++
			}
			END { exit !n }' && return 0
	done
	return 1
}

# vm_verdict LABEL DIR RC [WHAT]: the VM-level result as a test of its own,
# from the verdict tools/vm/run wrote (DIR/vm-verdict: PASS only for a
# clean run: no kernel problem in dmesg, teardown and rmmod fine, no
# timeout, the guest alive to the end); the kernel problem lines are shown
# with the suite that was running then.
vm_verdict() {
	local label=$1 dir=$2 rc=$3 what=${4:-} log=$2.log
	case $dir in */a|*/b) log=${dir%/*}.log ;; esac
	if [ "$(head -n 1 "$dir/vm-verdict" 2>/dev/null)" = PASS ]; then
		pass "vm.$label.clean"
		return
	fi
	fail "vm.$label.clean (${what:+$what, }tools/vm/run exit $rc)"
	if [ -s "$dir/vm-verdict" ]; then
		tail -n +2 "$dir/vm-verdict" | sed 's/^/        /'
	else
		echo "        tools/vm/run gave no verdict (exit $rc); the end of $log:"
		tail -n 6 "$log" 2>/dev/null | sed 's/^/        /'
	fi
	oops_excerpt "$dir/dmesg.txt" "$dir/console.log"
	if [ -s "$dir/problems.txt" ]; then
		echo "        kernel problem lines (dmesg.txt), with the suite running then:"
		local ln text suite
		head -n 8 "$dir/problems.txt" | while IFS=: read -r ln text; do
			suite=$(head -n "$ln" "$dir/dmesg.txt" | grep -o 'siwx-selftest: [^ ]* start' | tail -n 1 | cut -d' ' -f2)
			echo "        [${suite:-before any suite}] $text"
		done
	fi
}

# vm_opts: tools/vm/run options of every boot
vm_opts() {
	[ "${SIWX_VERBOSE:-0}" = 1 ] || echo --quiet
	# the build outputs the guests need, at their host paths
	local p
	for p in "$SELFTEST_DIR" "$RDMA_PREFIX"; do
		[ ! -e "$p" ] || printf '%s\n' --share "$p"
	done
}
mapfile -t VM_OPTS < <(vm_opts)

# slowest TIMES: "; slowest: TEST 12.3s, ..." - the three tests of a
# suite that took longest, from guest.sh's SUITE.times (each result line
# after the seconds since the suite started), or nothing
slowest() {
	[ -s "$1" ] || return 0
	awk '{ t = $1 - prev; prev = $1; sub(/^[0-9.]+ (not )?ok [0-9]+ (- )?/, "");
	       sub(/ # .*/, ""); printf "%.1f %s\n", t, $0 }' "$1" |
		sort -rn | head -n 3 |
		awk 'BEGIN { ORS = "" } { print (NR == 1 ? "; slowest: " : ", ") $2 " " $1 "s" }'
}

T_START=$(date +%s)

# ---------------------------------------------------------------- single VM
# boot_single NAME MODULE WHAT SUITE...: one single-VM boot
boot_single() {
	local name=$1 module=$2 what=$3 dir=$RES/$1 t0 rc cmd s lim pm=(); shift 3
	guest_cmd cmd '' "$@"
	boot_limit SIWX_VM_TIMEOUT "$@"; lim=$REPLY
	suites_pmem "$@"
	[ -z "$REPLY" ] || pm=(--pmem "$REPLY")
	t0=$(date +%s)
	# --netns: siw1 and its address in a namespace of their own, so the
	# suites' clients (rdma_util, perftest-run, ...) run there and their
	# traffic crosses the veth pair (Documentation/testing.md)
	"$VMRUN" "${VM_OPTS[@]}" "${pm[@]}" --netns --module "$module" --timeout "$lim" \
		--out "$dir" -- "$cmd" > "$dir.log" 2>&1
	rc=$?
	echo "    ($*: $(( $(date +%s) - t0 ))s, tools/vm/run exit $rc, log $dir.log)"
	for s in "$@"; do
		report "$s" "$dir/$s.tap"
		[ -s "$dir/$s.secs" ] && echo "    ($s: $(cat "$dir/$s.secs")s$(slowest "$dir/$s.times"))"
	done
	vm_verdict "$name" "$dir" "$rc" "$what"
}

if [ ${#single[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	echo "--- single VM: ${single[*]} (module $(basename "$(dirname "$SIWX_MODULE")")/$(basename "$SIWX_MODULE"))"
	boot_single single "$SIWX_MODULE" '' "${single[@]}"
fi

# The same topology booted with the unmodified upstream module, for the
# suites that check behaviour against it (topology single-upstream).
if [ ${#single_up[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	echo "--- single VM, upstream module: ${single_up[*]} ($SIWX_UPSTREAM_MODULE)"
	boot_single single-upstream "$SIWX_UPSTREAM_MODULE" "upstream module" "${single_up[@]}"
fi

# ---------------------------------------------------------------- pairs
# One boot per pair order; each runs the pair suites that name the order.
if [ ${#pair[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	for order in "${orders[@]}"; do
		ma=$(module_of "${order%-*}") mb=$(module_of "${order#*-}")
		psuites=()
		for s in "${pair[@]}"; do
			case " ${SUITE[$s:pairs]} " in *" $order "*) psuites+=("$s") ;; esac
		done
		dir=$RES/pair-$order
		echo "--- pair $order (a: $ma, b: $mb): ${psuites[*]}"
		t0=$(date +%s)
		guest_cmd cmd "$order" "${psuites[@]}"
		boot_limit SIWX_PAIR_TIMEOUT "${psuites[@]}"; lim=$REPLY
		suites_pmem "${psuites[@]}"
		pm=()
		[ -z "$REPLY" ] || pm=(--pmem "$REPLY")
		"$VMRUN" "${VM_OPTS[@]}" "${pm[@]}" --pair --module "$ma" --peer-module "$mb" \
			--timeout "$lim" --out "$dir" --peer-cmd "$cmd" -- "$cmd" \
			> "$dir.log" 2>&1
		rc=$?
		echo "    ($order: $(( $(date +%s) - t0 ))s, tools/vm/run exit $rc, log $dir.log)"
		for s in "${psuites[@]}"; do
			report "$s[$order]/a" "$dir/a/$s.tap"
			report "$s[$order]/b" "$dir/b/$s.tap"
			for r in a b; do
				[ -s "$dir/$r/$s.secs" ] || continue
				echo "    (${s}[$order]/$r: $(cat "$dir/$r/$s.secs")s$(slowest "$dir/$r/$s.times"))"
			done
		done
		# one VM-level verdict per VM
		vm_verdict "pair-$order.a" "$dir/a" "$rc" "VM a: ${order%-*} module"
		vm_verdict "pair-$order.b" "$dir/b" "$rc" "VM b: ${order#*-} module"
	done
fi

# ---------------------------------------------------------------- host
# The lines of a failed host suite's log that say why: tools/vm/run's FAIL
# lines and the guest kernel's problem reports (KERNEL_PROBLEMS, above).
FAIL_LINES="siwx-vm: .*FAIL|FAIL:|$KERNEL_PROBLEMS"
# Host suites run here, after the VMs: TAP on stdout into RES/SUITE.tap,
# stderr into RES/SUITE.log; a non-zero exit is a failure of its own.
if [ ${#host[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	for s in "${host[@]}"; do
		suite_expand "$s" "${SUITE[$s:cmd]}"
		read -r -a hcmd <<< "$REPLY"
		suite_timeout "$s"
		limit=$REPLY
		if [ -n "${EARLY[$s]:-}" ]; then
			echo "--- host: $s (${hcmd[*]}; started early)"
			early_wait "$s"
		else
			echo "--- host: $s (${hcmd[*]})"
			host_run "$s"
		fi
		rc=$(cat "$RES/$s.rc" 2>/dev/null || echo 1)
		echo "    ($s: $(cat "$RES/$s.secs" 2>/dev/null)s, ${hcmd[0]##*/} exit $rc, log $RES/$s.log)"
		if [ $rc = 124 ] || [ $rc = 137 ]; then
			# timeout(1): 124 after TERM, 137 after the KILL 10 s later
			fail "$s.run (timed out after ${limit}s, settings timeout or $var; see $RES/$s.log)"
		elif [ $rc != 0 ]; then
			fail "$s.run (${hcmd[0]##*/} exit $rc; see $RES/$s.log)"
		fi
		if [ $rc != 0 ] && [ -s "$RES/$s.log" ] &&
		   grep -q -E "$FAIL_LINES" "$RES/$s.log"; then
			# what a VM the suite booted said of itself (tools/vm/run's
			# verdict, kernel problems), wherever it is in the log
			echo "        problems reported in $s.log (first 12):"
			grep -E "$FAIL_LINES" "$RES/$s.log" | head -n 12 | cut -c1-200 | sed 's/^/        /'
		fi
		if [ $rc != 0 ] && [ -d "$RES/$s" ]; then
			mapfile -t consoles < <(find "$RES/$s" -name console.log 2>/dev/null | sort)
			[ ${#consoles[@]} = 0 ] || oops_excerpt "${consoles[@]}"
		fi
		if [ $rc != 0 ] && [ -s "$RES/$s.log" ]; then
			echo "        the end of $s.log:"
			tail -n 8 "$RES/$s.log" | cut -c1-200 | sed 's/^/        /'
		fi
		report "$s" "$RES/$s.tap"
	done
fi

echo "siwx selftests: $(( $(date +%s) - T_START ))s; results in $RES"
line="$PASS passed, $FAIL failed"
[ "$SKIP" = 0 ] || line="$line, $SKIP skipped"
echo "$line"
[ "$FAIL" = 0 ]
