#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests/run.sh - host-side runner of the siwx selftests (`make check`).
#
#   selftests/run.sh [-l|--list] [-h|--help] [SUITE...]
#
# Builds nothing (the Makefile does). Boots as few VMs as possible through
# tools/vm/run:
#   - one single-VM boot with SIWX_MODULE for every selected single-VM suite
#     (basic, basic-stock, fixes, term_wire, perftest, identity);
#   - one single-VM boot with SIWX_UPSTREAM_MODULE for the suites that need
#     upstream in that topology (rsockets_upstream);
#   - for interop, two pair boots: SIWX_MODULE in VM a vs
#     SIWX_UPSTREAM_MODULE in VM b, then swapped;
#   - for atomic_pair, the same two boots plus one with SIWX_MODULE in
#     both VMs (SIWX_PAIR_ORDER=ours-upstream|upstream-ours|ours-ours).
# Collects the TAP of every suite, prints one line per test (failing tests
# with their diagnostics) and ends with exactly one line
#   N passed, N failed[, N skipped]
# Exit status 0 only when nothing failed. A VM-level problem (kernel
# WARNING/Oops/..., failed rmmod or teardown, timeout, dead guest) counts as
# a failed test of its own ("vm.<run>.clean"); so do tests missing from a
# truncated TAP stream.
#
# Environment (defaults relative to the repository):
#   SIWX_MODULE           module under test          (build/siwx/siw.ko)
#   SIWX_UPSTREAM_MODULE  unmodified upstream module (build/upstream/siw.ko)
#   RDMA_PREFIX           our rdma-core prefix       (build/rdma-core/prefix)
#   SELFTEST_DIR          build output of selftests/ (build/selftests)
#   SIWX_RESULTS_DIR      where results go     (SELFTEST_DIR/results/<stamp>)
#   SIWX_VM_TIMEOUT       single-VM limit, seconds (1800)
#   SIWX_PAIR_TIMEOUT     limit of each pair boot, seconds (600)
#   SIWX_VERBOSE=1        stream the VM consoles

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/.." && pwd)

SINGLE_SUITES=(basic basic-stock fixes usq term_wire perftest identity stress kulp rawpeer atomic atomic_wire imm imm_wire rsockets mpa)
# single-VM suites that need the unmodified upstream module: one more boot
# with SIWX_UPSTREAM_MODULE (rsockets_upstream: rsockets' fallback path)
UPSTREAM_SUITES=(rsockets_upstream)
PAIR_SUITES=(interop atomic_pair imm_probe mpa_pair)
# what runs without arguments (stress is opt-in: slow, and it still finds
# a rare upstream bug)
DEFAULT_SUITES=(basic basic-stock fixes usq term_wire perftest identity kulp rawpeer atomic atomic_wire imm imm_wire rsockets mpa rsockets_upstream interop atomic_pair imm_probe mpa_pair bench)

usage() {
	sed -n '/^#   selftests\/run.sh/,/^#   SIWX_VERBOSE/s/^# \{0,1\}//p' "$0"
	echo
	echo "Suites: ${SINGLE_SUITES[*]} ${UPSTREAM_SUITES[*]} ${PAIR_SUITES[*]} bench (host side: BENCH=quick + report check)"
	echo "Default: ${DEFAULT_SUITES[*]}"
}

SEL=()
for a in "$@"; do
	case $a in
	-h|--help) usage; exit 0 ;;
	-l|--list) printf '%s\n' "${SINGLE_SUITES[@]}" "${UPSTREAM_SUITES[@]}" "${PAIR_SUITES[@]}" bench; exit 0 ;;
	-*) echo "run.sh: unknown option $a" >&2; usage >&2; exit 2 ;;
	*) SEL+=("$a") ;;
	esac
done
[ ${#SEL[@]} -gt 0 ] || SEL=("${DEFAULT_SUITES[@]}")

abs() { (cd "$(dirname "$1")" 2>/dev/null && echo "$(pwd -P)/$(basename "$1")") || echo "$1"; }
SIWX_MODULE=$(abs "${SIWX_MODULE:-$TOP/build/siwx/siw.ko}")
SIWX_UPSTREAM_MODULE=$(abs "${SIWX_UPSTREAM_MODULE:-$TOP/build/upstream/siw.ko}")
RDMA_PREFIX=$(abs "${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}")
SELFTEST_DIR=$(abs "${SELFTEST_DIR:-$TOP/build/selftests}")
STAMP=$(date +%Y%m%d-%H%M%S)
RES=${SIWX_RESULTS_DIR:-$SELFTEST_DIR/results/$STAMP}
VM_TIMEOUT=${SIWX_VM_TIMEOUT:-1800}
PAIR_TIMEOUT=${SIWX_PAIR_TIMEOUT:-600}
VMRUN=$TOP/tools/vm/run

single=() pair=() single_up=() RUN_BENCH=0
for s in "${SEL[@]}"; do
	[ "$s" = bench ] && { RUN_BENCH=1; continue; }
	case " ${SINGLE_SUITES[*]} " in *" $s "*) single+=("$s"); continue ;; esac
	case " ${UPSTREAM_SUITES[*]} " in *" $s "*) single_up+=("$s"); continue ;; esac
	case " ${PAIR_SUITES[*]} " in *" $s "*) pair+=("$s"); continue ;; esac
	echo "run.sh: unknown suite '$s' (run.sh --list)" >&2
	exit 2
done

mkdir -p "$RES" || { echo "run.sh: cannot create $RES" >&2; exit 2; }
RES=$(cd "$RES" && pwd -P)
[ -n "${SIWX_RESULTS_DIR:-}" ] || ln -sfn "$STAMP" "$(dirname "$RES")/latest" 2>/dev/null

PASS=0 FAIL=0 SKIP=0
pass() { PASS=$((PASS + 1)); echo "PASS  $1"; }
fail() { FAIL=$((FAIL + 1)); echo "FAIL  $1"; }
skip() { SKIP=$((SKIP + 1)); echo "SKIP  $1: $2"; }

# ---------------------------------------------------------------- checks
PRE_OK=1
precheck() {	# WHAT PATH
	if [ ! -e "$2" ]; then
		fail "setup.$1 ($2 missing: run 'make check' or build it first)"
		PRE_OK=0
	fi
}
precheck vm-harness "$VMRUN"
precheck module "$SIWX_MODULE"
for s in "${single[@]}"; do
	case $s in
	basic|fixes|usq|stress) precheck "bin.$s" "$SELFTEST_DIR/bin/$s" ;;
	term_wire) precheck bin.term_peer "$SELFTEST_DIR/bin/term_peer" ;;
	rawpeer) precheck bin.raw_server "$SELFTEST_DIR/bin/raw_server"
		precheck tool.mpa-peer "$TOP/build/tools/mpa-peer/mpa-peer" ;;
	basic-stock) precheck bin.stock.basic "$SELFTEST_DIR/stock/basic" ;;
	atomic) precheck bin.atomic "$SELFTEST_DIR/bin/atomic" ;;
	atomic_wire) precheck bin.atomic_peer "$SELFTEST_DIR/bin/atomic_peer" ;;
	imm) precheck bin.imm "$SELFTEST_DIR/bin/imm" ;;
	imm_wire) precheck bin.imm_peer "$SELFTEST_DIR/bin/imm_peer" ;;
	kulp) precheck kmod.siwx_ktest "$SELFTEST_DIR/kmod/siwx_ktest.ko" ;;
	esac
done
# the upstream single-VM boot needs it too (checked once)
[ ${#single_up[@]} -eq 0 ] || [ ${#pair[@]} -gt 0 ] ||
	precheck upstream-module "$SIWX_UPSTREAM_MODULE"
if [ ${#pair[@]} -gt 0 ]; then
	precheck upstream-module "$SIWX_UPSTREAM_MODULE"
	precheck bin.interop "$SELFTEST_DIR/bin/interop"
	case " ${pair[*]} " in *" atomic_pair "*)
		precheck bin.atomic_pair "$SELFTEST_DIR/bin/atomic_pair" ;;
	esac
	case " ${pair[*]} " in *" imm_probe "*)
		precheck bin.imm_probe "$SELFTEST_DIR/bin/imm_probe" ;;
	esac
fi

echo "siwx selftests: module $SIWX_MODULE"
[ ${#pair[@]} -eq 0 ] || echo "siwx selftests: upstream module $SIWX_UPSTREAM_MODULE"
echo "siwx selftests: results in $RES"

# ---------------------------------------------------------------- TAP
# tail_diag N: the last N collected diagnostic lines, indented.
tail_diag() {
	local n=${#diag[@]} from
	from=$((n > $1 ? n - $1 : 0))
	[ "$n" -gt 0 ] || return 0
	printf '%s\n' "${diag[@]:$from}" | sed 's/^/        /'
}

# report SUITE-LABEL TAPFILE: per-test lines; diagnostics of failures.
# The one place that reads TAP.
report() {
	local label=$1 tap=$2 line diag=() planned=0 seen=0 name reason
	if [ ! -s "$tap" ]; then
		fail "$label (no TAP output)"
		return
	fi
	while IFS= read -r line; do
		case $line in
		"1.."*)
			planned=${line#1..}
			planned=${planned%%[!0-9]*}
			;;
		"ok "*|"not ok "*)
			seen=$((seen + 1))
			name=${line#not }
			name=${name#ok }
			name=${name#* }	# drop the number
			name=${name#- }	# and TAP's optional dash
			if [[ $line == "not ok "* ]] && [[ $name == *" # TODO"* ]]; then
				reason=${name#* # TODO}
				skip "$label/${name%% # TODO*}" "TODO${reason}"
			elif [[ $line == "ok "* ]] && [[ $name == *" # SKIP"* ]]; then
				reason=${name#* # SKIP}
				skip "$label/${name%% # SKIP*}" "${reason# }"
			elif [[ $line == "ok "* ]]; then
				pass "$label/${name%% # *}"
			else
				fail "$label/${name%% # *}"
				tail_diag 25
			fi
			diag=()
			;;
		"Bail out!"*)
			fail "$label (${line})"
			;;
		*)
			# harness chatter between results belongs to the next one
			case $line in
			"#  RUN "*|"# Starting "*|"TAP version"*) ;;
			*) diag+=("$line") ;;
			esac
			;;
		esac
	done < "$tap"
	if [ "$planned" -gt "$seen" ]; then
		fail "$label: $((planned - seen)) of $planned tests did not report (crash or timeout)"
		tail_diag 15
	fi
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

T_START=$(date +%s)
guest_env="SIWX_BIN=$SELFTEST_DIR/bin SIWX_STOCK_BIN=$SELFTEST_DIR/stock"
# the suites' own tunables reach the guest (e.g. SIWX_IMM_FLUSH_ROUNDS=12)
for v in $(compgen -e | grep -E '^SIWX_(IMM_|ATOMIC_|STRESS_|KULP_|SUITE_TIMEOUT_|SEED$)'); do
	guest_env+=" $v=${!v}"
done

# ---------------------------------------------------------------- single VM
if [ ${#single[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	dir=$RES/single
	echo "--- single VM: ${single[*]} (module $(basename "$(dirname "$SIWX_MODULE")")/$(basename "$SIWX_MODULE"))"
	t0=$(date +%s)
	"$VMRUN" "${VM_OPTS[@]}" --module "$SIWX_MODULE" --timeout "$VM_TIMEOUT" --out "$dir" \
		-- "$guest_env $HERE/guest.sh ${single[*]}" > "$dir.log" 2>&1
	rc=$?
	echo "    (${single[*]}: $(( $(date +%s) - t0 ))s, tools/vm/run exit $rc, log $dir.log)"
	for s in "${single[@]}"; do
		report "$s" "$dir/$s.tap"
		[ -s "$dir/$s.secs" ] && echo "    ($s: $(cat "$dir/$s.secs")s)"
	done
	vm_verdict single "$dir" "$rc"
fi

# ---------------------------------------------------------------- single VM, upstream
# The same topology booted with the unmodified upstream module, for the
# suites that check behaviour against it (UPSTREAM_SUITES).
if [ ${#single_up[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	dir=$RES/single-upstream
	echo "--- single VM, upstream module: ${single_up[*]} ($SIWX_UPSTREAM_MODULE)"
	t0=$(date +%s)
	"$VMRUN" "${VM_OPTS[@]}" --module "$SIWX_UPSTREAM_MODULE" --timeout "$VM_TIMEOUT" --out "$dir" \
		-- "$guest_env $HERE/guest.sh ${single_up[*]}" > "$dir.log" 2>&1
	rc=$?
	echo "    (${single_up[*]}: $(( $(date +%s) - t0 ))s, tools/vm/run exit $rc, log $dir.log)"
	for s in "${single_up[@]}"; do
		report "$s" "$dir/$s.tap"
		[ -s "$dir/$s.secs" ] && echo "    ($s: $(cat "$dir/$s.secs")s)"
	done
	vm_verdict single-upstream "$dir" "$rc" "upstream module"
fi

# ---------------------------------------------------------------- pairs
if [ ${#pair[@]} -gt 0 ] && [ "$PRE_OK" = 1 ]; then
	# atomic_pair also needs siwx in both VMs: one more boot, running
	# only atomic_pair (SIWX_PAIR_ORDER tells the guests what runs where)
	ours_ours=
	case " ${pair[*]} " in *" atomic_pair "*) ours_ours=ours-ours ;; esac
	for order in ours-upstream upstream-ours $ours_ours; do
		if [ "$order" = ours-upstream ]; then
			ma=$SIWX_MODULE mb=$SIWX_UPSTREAM_MODULE
		else
			ma=$SIWX_UPSTREAM_MODULE mb=$SIWX_MODULE
		fi
		psuites=("${pair[@]}")
		if [ "$order" = ours-ours ]; then
			ma=$SIWX_MODULE psuites=(atomic_pair)
		fi
		dir=$RES/pair-$order
		echo "--- pair $order (a: $ma, b: $mb): ${psuites[*]}"
		t0=$(date +%s)
		cmd="$guest_env SIWX_PAIR_ORDER=$order $HERE/guest.sh ${psuites[*]}"
		"$VMRUN" "${VM_OPTS[@]}" --pair --module "$ma" --peer-module "$mb" \
			--timeout "$PAIR_TIMEOUT" --out "$dir" --peer-cmd "$cmd" -- "$cmd" \
			> "$dir.log" 2>&1
		rc=$?
		echo "    ($order: $(( $(date +%s) - t0 ))s, tools/vm/run exit $rc, log $dir.log)"
		for s in "${psuites[@]}"; do
			report "$s[$order]/a" "$dir/a/$s.tap"
			report "$s[$order]/b" "$dir/b/$s.tap"
		done
		# one VM-level verdict per VM
		vm_verdict "pair-$order.a" "$dir/a" "$rc" "VM a: ${order%-*} module"
		vm_verdict "pair-$order.b" "$dir/b" "$rc" "VM b: ${order#*-} module"
	done
fi

# ---------------------------------------------------------------- bench
# The benchmark harness in quick mode: proves that it produces every row
# (tools/bench/check-report.sh); it never asserts on speed.
if [ "$RUN_BENCH" = 1 ] && [ "$PRE_OK" = 1 ]; then
	echo "--- bench (BENCH=quick): harness check, no speed assertions"
	t0=$(date +%s)
	BENCH=quick BENCH_QUIET=1 BENCH_OUT=$RES/bench KVER=${KVER:-} \
		"$TOP/tools/bench/bench.sh" > "$RES/bench.log" 2>&1
	rc=$?
	echo "    (bench: $(( $(date +%s) - t0 ))s, bench.sh exit $rc, log $RES/bench.log)"
	[ $rc = 0 ] || fail "bench.run (bench.sh exit $rc; see $RES/bench.log)"
	"$TOP/tools/bench/check-report.sh" "$RES/bench" > "$RES/bench.tap" 2>&1
	report bench "$RES/bench.tap"
fi

echo "siwx selftests: $(( $(date +%s) - T_START ))s; results in $RES"
line="$PASS passed, $FAIL failed"
[ "$SKIP" = 0 ] || line="$line, $SKIP skipped"
echo "$line"
[ "$FAIL" = 0 ]
