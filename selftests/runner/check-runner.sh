#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# check-runner.sh - the test runner's own checks, on the host, without a VM
# (`make -C selftests check-syntax` runs them). TAP; exit status 1 if a
# check failed.
#
#   settings.valid           every suite's settings parse, name only known
#                            keys, and its cmd and needs resolve
#   env.reaches_guest        every variable a suite declares (env=) and any
#                            other SIWX_* variable set on the host reaches
#                            guest.sh, value intact, in every boot that
#                            run.sh --dry-run shows
#   env.runner_vars_stay     the runner's own variables do not (the guest
#                            sets SIWX_MODULE & co. itself), and
#                            SIWX_SUITE_TIMEOUT_<suite> sets the limit
#   docs.suite_table         Documentation/testing.md's suite table is
#                            run.sh --table
#   kernel_problems.patterns tools/vm/kernel-problems.sh, the one definition,
#                            catches the kernel's problem lines and passes
#                            the boot's harmless ones; no suite has its own
#                            list; kernel_problems.py reads the same one
#   tap.report               lib/tap.sh shows each failure with its
#                            diagnostics, before or after its "not ok" line
#   bench.check_report       tools/bench/check-report.sh passes a complete
#                            report (report.py's, from samples of the whole
#                            matrix) and fails one without the flush_bench
#                            section, a ratio row or cell, a table row, or
#                            with n/a where a point must be measured
#   env.boot_limits          a boot's limit is its suites' timeouts + 300 s,
#                            SIWX_VM_TIMEOUT / SIWX_PAIR_TIMEOUT override it
#   bench.ulp_report         tools/bench/ulp-report.py on samples of the whole
#                            ULP matrix: every job row with its ratios (the
#                            median of per-repetition ratios), the targets,
#                            the plot; a missing point fails it and is named
#   bench.scale_report       tools/bench/scale-report.py on samples of the
#                            whole make bench-scale matrix: check-scale-report.sh
#                            passes it, fails it without a table row or the
#                            verdict line, and fails a failed point (passes
#                            it when SCALE_CHECK_ALLOW_FAIL names its reason)

set -u
# HERE: selftests/ (this script is suite runner's, in selftests/runner/)
HERE=$(cd "$(dirname "$0")/.." && pwd)
TOP=$(cd "$HERE/.." && pwd)
TMP=$(mktemp -d) || exit 1
trap 'rm -rf "$TMP"' EXIT

N=0 FAILED=0
check() {	# NAME FUNCTION: one test; FUNCTION's output becomes diagnostics
	local out rc
	out=$("$2" 2>&1); rc=$?
	N=$((N + 1))
	[ -z "$out" ] || printf '%s\n' "$out" | sed 's/^/# /'
	if [ "$rc" = 0 ]; then
		echo "ok $N $1"
	else
		echo "not ok $N $1"
		FAILED=$((FAILED + 1))
	fi
}

# shellcheck source=lib/suites.sh
. "$HERE/lib/suites.sh"
suites_load "$HERE"
LOAD_RC=$?

t_settings() {
	local s w bad=0
	if [ "$LOAD_RC" != 0 ]; then
		printf '%s\n' "${SUITE_ERRORS[@]}"
		return 1
	fi
	SUITE_BIN=/B SUITE_STOCK=/S SUITE_KMOD=/K SUITE_TOOLS=/T SUITE_TOP=$TOP
	for s in "${SUITE_NAMES[@]}"; do
		for w in ${SUITE[$s:cmd]%% *} ${SUITE[$s:needs]}; do
			suite_expand "$s" "$w"
			case $REPLY in
			*'$'*) echo "$s: '$w': unknown \$variable"; bad=1 ;;
			/[BSKT]/*) ;;	# build outputs
			*) [ -x "$REPLY" ] || { echo "$s: $REPLY is not executable"; bad=1; } ;;
			esac
		done
	done
	return "$bad"
}

# the probe: every declared variable set to a value only quoting keeps intact
PROBE_DIR=$(cd "$TMP" && pwd -P)
probe_value() {	# VAR
	case $1 in
	RDMA_PREFIX) echo "$PROBE_DIR" ;;	# run.sh resolves it: an existing path
	*) echo "probe $1: 'q' \"d\" \$x \\b & * ;" ;;
	esac
}
declared_vars() {
	local s
	for s in "${SUITE_NAMES[@]}"; do echo ${SUITE[$s:env]}; done | tr ' ' '\n' | sort -u
}

# guest_env BOOTLINE: run the guest command of a run.sh --dry-run boot
# with nothing of the probe in the environment, guest.sh in dry-run mode;
# prints the environment guest.sh saw, as declare -x lines
guest_env() {
	local -a unset=()
	local v
	for v in $(declared_vars) SIWX_RUNNER_PROBE SIWX_MODULE SIWX_SUITE_TIMEOUT_identity; do
		unset+=(-u "$v")
	done
	env "${unset[@]}" SIWX_GUEST_DRY_RUN=1 SIWX_RESULTS="$TMP" SIWX_ROLE=a bash -c "$1" < /dev/null
}

# dry_run: run.sh --dry-run of every suite with the probe set
dry_run() {
	local v
	(
		for v in $(declared_vars); do export "$v=$(probe_value "$v")"; done
		export SIWX_RUNNER_PROBE="$(probe_value SIWX_RUNNER_PROBE)"
		export SIWX_MODULE=/nonexistent/siw.ko SIWX_SUITE_TIMEOUT_identity=7
		# shellcheck disable=SC2046  # suite names
		"$HERE/run.sh" --dry-run $("$HERE/run.sh" --list)
	)
}

t_env() {
	local line boot suites s v want got bad=0 boots=0 declared
	dry_run > "$TMP/dry" || { cat "$TMP/dry"; return 1; }
	while IFS= read -r line; do
		case $line in
		"boot "*) boot=${line%% (*}; suites=${line##*: } ;;
		"  guest: "*)
			boots=$((boots + 1))
			guest_env "${line#  guest: }" > "$TMP/env" 2>&1
			declared=
			for s in $suites; do declared+=" ${SUITE[$s:env]}"; done
			for v in $(printf '%s\n' SIWX_RUNNER_PROBE $declared $(declared_vars | grep '^SIWX_') | sort -u); do
				want=$(probe_value "$v")
				got=$(unset "$v"; source <(grep '^declare -x ' "$TMP/env"); echo "${!v-<unset>}")
				if [ "$got" != "$want" ]; then
					echo "$boot: $v is '$got' in guest.sh, not '$want'"
					bad=1
				fi
			done
			;;
		esac
	done < "$TMP/dry"
	[ "$boots" -ge 5 ] || { echo "only $boots boots in run.sh --dry-run"; bad=1; }
	return "$bad"
}

t_runner_vars() {
	local line bad=0
	dry_run > "$TMP/dry" || { cat "$TMP/dry"; return 1; }
	line=$(grep -m1 '^  guest: ' "$TMP/dry")
	guest_env "${line#  guest: }" > "$TMP/env" 2>&1
	if grep -q '^declare -x SIWX_MODULE=' "$TMP/env"; then
		echo "SIWX_MODULE reached guest.sh: $(grep '^declare -x SIWX_MODULE=' "$TMP/env")"
		bad=1
	fi
	grep -q '^suite identity: limit 7s: ' "$TMP/env" ||
		{ echo "SIWX_SUITE_TIMEOUT_identity=7 did not set the limit:"; grep identity "$TMP/env"; bad=1; }
	return "$bad"
}

# every boot's limit is its suites' timeouts + 300 s (identity at 7 s
# here), unless SIWX_VM_TIMEOUT / SIWX_PAIR_TIMEOUT set one
t_boot_limits() {
	local line suites lim want s n=0 bad=0
	dry_run > "$TMP/dry" || { cat "$TMP/dry"; return 1; }
	while IFS= read -r line; do
		case $line in
		"boot "*) ;;
		*) continue ;;
		esac
		lim=${line#*limit }; lim=${lim%%s[,)]*}
		suites=${line##*: }
		want=300
		for s in $suites; do
			if [ "$s" = identity ]; then want=$((want + 7)); else want=$((want + ${SUITE[$s:timeout]})); fi
		done
		[ "$lim" = "$want" ] || { echo "${line%%(*}: limit $lim, want $want ($suites)"; bad=1; }
		n=$((n + 1))
	done < "$TMP/dry"
	[ "$n" -ge 5 ] || { echo "only $n boots in run.sh --dry-run"; bad=1; }
	(export SIWX_VM_TIMEOUT=4321 SIWX_PAIR_TIMEOUT=1234; dry_run) > "$TMP/dry2" || return 1
	grep -q '^boot single (.*limit 4321s' "$TMP/dry2" ||
		{ echo "SIWX_VM_TIMEOUT=4321 not the single boot's limit"; grep '^boot single ' "$TMP/dry2"; bad=1; }
	grep -q '^boot pair-.*limit 1234s' "$TMP/dry2" ||
		{ echo "SIWX_PAIR_TIMEOUT=1234 not a pair boot's limit"; grep '^boot pair' "$TMP/dry2"; bad=1; }
	return "$bad"
}

# ulp_fixture DIR [TEST KIND]: samples of the whole ULP matrix (2
# repetitions; siwx twice as fast as every other kind in repetition 1,
# three times in 2), without TEST for KIND
ulp_fixture() {
	(
	# shellcheck source=tools/bench/bench.conf
	. "$TOP/tools/bench/bench.conf"
	bench_config quick
	local rep k p j rw bs qd t v seq=0 kinds
	printf '%s\n' mode=quick ulp_reps=2 "ulp_nvme_kinds=$BENCH_ULP_NVME_KINDS" \
		"ulp_nfs_kinds=$BENCH_ULP_NFS_KINDS" "ulp_jobs=$BENCH_ULP_JOBS" ulp_runtime=3 \
		ulp_ramp=1 ulp_disk_mb=256 > "$1/meta.txt"
	exec > "$1/samples.csv"
	echo "seq,rep,kind,test,size,metric,value,unit,wall_s,note"
	for rep in 1 2; do
		for p in nvme nfs; do
			kinds=$BENCH_ULP_NVME_KINDS
			[ $p = nfs ] && kinds=$BENCH_ULP_NFS_KINDS
			for k in $kinds; do
				for j in $BENCH_ULP_JOBS; do
					IFS=: read -r rw bs qd <<< "$j"
					t=$p.${rw}_${bs}_qd$qd seq=$((seq + 1)) v=100
					[ $k = siwx ] && v=$((100 * (rep + 1)))
					if [ "$t $k" = "${2:-} ${3:-}" ]; then
						echo "$seq,$rep,$k,$t,4096,iops,,IOPS,1,fixture: fio failed"
						continue
					fi
					echo "$seq,$rep,$k,$t,4096,iops,$v,IOPS,1,"
					echo "$seq,$rep,$k,$t,4096,mib_s,$v,MiB/s,1,"
					echo "$seq,$rep,$k,$t,4096,clat_mean_us,50,us,1,"
					echo "$seq,$rep,$k,$t,4096,clat_p99_us,90,us,1,"
				done
			done
		done
	done
	)
}
t_ulp_report() {
	local d=$TMP/ulp bad=0 r
	rm -rf "$d"; mkdir -p "$d/ok" "$d/miss"
	ulp_fixture "$d/ok" || return 1
	python3 "$TOP/tools/bench/ulp-report.py" "$d/ok" || { echo "ok: ulp-report.py failed"; bad=1; }
	r=$d/ok/ulp-report.md
	for pat in '^## NVMe over Fabrics: siwx, upstream, rxe, tcp$' '^## NFS 4.2: siwx, tcp$' '^## Targets$' \
		   '^| randread_4k_qd1 | IOPS | 250 (200..300, n=2) | 100 (100..100, n=2) | 100 (100..100, n=2) | 100 (100..100, n=2) | 2.50 (2.00..3.00, n=2) | 2.50 (2.00..3.00, n=2) | 2.50 (2.00..3.00, n=2) |$' \
		   '^| write_128k_qd16 | MiB/s | 250 (200..300, n=2) | 100 (100..100, n=2) | 2.50 (2.00..3.00, n=2) |$' \
		   '^| nvme: NVMe over siwx >= NVMe/TCP, 128 KiB sequential | read_128k_qd16 | 2.50 (2.00..3.00, n=2) | met |$'; do
		grep -q "$pat" "$r" || { echo "ok: no line /$pat/ in ulp-report.md"; bad=1; }
	done
	[ "$(grep -c '^| [a-z]*_[0-9]*k_qd[0-9]* | \(IOPS\|MiB/s\) |' "$r")" = 12 ] ||
		{ echo "ok: not 12 throughput rows"; bad=1; }
	if command -v gnuplot > /dev/null && [ ! -s "$d/ok/ulp-ratio.png" ]; then
		echo "ok: no ulp-ratio.png"; bad=1
	fi
	ulp_fixture "$d/miss" nvme.randwrite_4k_qd16 rxe || return 1
	if python3 "$TOP/tools/bench/ulp-report.py" "$d/miss" 2> /dev/null; then
		echo "miss: ulp-report.py passed with a point missing"; bad=1
	fi
	grep -q '^- nvme.randwrite_4k_qd16 rxe iops: fixture: fio failed$' "$d/miss/ulp-report.md" ||
		{ echo "miss: the missing point is not named"; bad=1; }
	return "$bad"
}

t_docs() {
	local doc=$TOP/Documentation/testing.md
	"$HERE/run.sh" --table > "$TMP/table.want" || return 1
	sed -n '/^| suite | settings |/,/^$/p' "$doc" | sed '/^$/d' > "$TMP/table.doc"
	diff -u --label "testing.md" --label "run.sh --table" "$TMP/table.doc" "$TMP/table.want"
}

t_kernel_problems() {
	local bad=0 l n
	# shellcheck source=../tools/vm/kernel-problems.sh
	. "$TOP/tools/vm/kernel-problems.sh"
	while IFS= read -r l; do
		[[ $l =~ $KERNEL_PROBLEMS ]] || { echo "not caught: $l"; bad=1; }
	done <<-'EOF'
	[   12.3] WARNING: CPU: 1 PID: 523 at drivers/infiniband/sw/siw/siw_qp.c:100 siw_qp_modify+0x1/0x2 [siw]
	[   12.3] BUG: kernel NULL pointer dereference, address: 0000000000000008
	[   12.3] Oops: general protection fault, probably for non-canonical address 0xdead: 0000 [#1] PREEMPT SMP NOPTI
	[   12.3] general protection fault: 0000 [#1] SMP
	[   12.3] refcount_t: underflow; use-after-free.
	[   12.3] list_add corruption. prev->next should be next (ffff), but was ffff. (prev=ffff).
	[   12.3] list_del corruption, ffff->next is LIST_POISON1 (dead000000000100)
	[   12.3] Call Trace:
	[   12.3] Kernel panic - not syncing: Fatal exception in interrupt
	[   12.3] BUG: KASAN: slab-use-after-free in siw_rx_pbl+0x1/0x2 [siw]
	[   12.3] UBSAN: shift-out-of-bounds in drivers/infiniband/sw/siw/siw_mem.c:1:2
	[   12.3] BUG: KFENCE: use-after-free read in siw_free_qp+0x1/0x2
	[   12.3] INFO: task kworker/0:1:12 blocked for more than 120 seconds.
	[   12.3] rcu: INFO: rcu_preempt detected stalls on CPUs/tasks:
	[   12.3] rcu: INFO: rcu_preempt self-detected stall on CPU
	[   12.3] watchdog: BUG: soft lockup - CPU#1 stuck for 26s! [siw_tx/1:99]
	[   12.3] NMI watchdog: Watchdog detected hard LOCKUP on cpu 1
	EOF
	while IFS= read -r l; do
		[[ ! $l =~ $KERNEL_PROBLEMS ]] || { echo "harmless, but caught: $l"; bad=1; }
	done <<-'EOF'
	[    5.086076] 9pnet: Installing 9P2000 support
	[    0.2] rcu: 	RCU CPU stall warnings timeout set to 100 (rcu_task_stall_timeout).
	[    0.9] watchdog: Delayed init of the lockup detector failed: -19
	[    1.1] Freeing unused kernel image (initmem) memory: 3000K
	[    5.5] SoftiWARP attached
	[    5.6] siwx-vm: running command (role single, uptime 5.6s)
	[  107.0] traps: ib_atomic_bw[674] general protection fault ip:7f72e8aa7b51 sp:7ffc0848e020 error:0 in librdmacm.so.1.3.56.1[9b51,7f72e8aa2000+11000]
	EOF
	# one definition: the runner, the VM harness and the suites spell no
	# list of their own (Python suites read it through kernel_problems.py)
	n=$(grep -lE "(KERNEL_PROBLEMS=|PROBLEMS *=|Oops\|BUG:)" "$HERE"/*.sh "$HERE"/*/*.sh \
		"$HERE"/*/*.py "$HERE"/lib/* "$TOP"/tools/vm/* 2>/dev/null |
		grep -v -e '/kernel-problems.sh$' -e '/check-runner.sh$' -e '/kernel_problems.py$')
	[ -z "$n" ] || { echo "kernel problem patterns defined outside tools/vm/kernel-problems.sh: $n"; bad=1; }
	# the Python view is the same list
	local py
	py=$(PYTHONPATH=$HERE/lib python3 -c 'import kernel_problems as k; print("|".join(k.PATTERNS))') ||
		{ echo "kernel_problems.py does not load"; bad=1; }
	[ "$py" = "$KERNEL_PROBLEMS" ] ||
		{ echo "kernel_problems.py reads '$py', the shell has '$KERNEL_PROBLEMS'"; bad=1; }
	return "$bad"
}

# tap.sh's report: a failure's diagnostics are shown with it, whether the
# producer writes them before the "not ok" line (kselftest) or after it
# (check-report.sh, Test::More, YAML); a passing test's are not, and a
# short stream is a failure of its own.
t_tap_report() {
	local bad=0 out
	# shellcheck source=../lib/tap.sh
	. "$HERE/lib/tap.sh"
	cat > "$TMP/t.tap" <<-'EOF'
	TAP version 13
	1..5
	# before-one
	ok 1 one
	# before-two
	not ok 2 two
	#   after-two
	  ---
	  yaml-two
	  ...
	#  RUN           fix.three ...
	# before-three
	not ok 3 three
	ok 4 four # SKIP no device
	EOF
	out=$(
		P=0 F=0 S=0
		pass() { echo "PASS  $1"; }
		fail() { echo "FAIL  $1"; }
		skip() { echo "SKIP  $1: $2"; }
		report x "$TMP/t.tap"
	)
	cat > "$TMP/t.want" <<-'EOF'
	PASS  x/one
	FAIL  x/two
	        # before-two
	        #   after-two
	          ---
	          yaml-two
	          ...
	FAIL  x/three
	        # before-three
	SKIP  x/four: no device
	FAIL  x: 1 of 5 tests did not report (crash or timeout)
	EOF
	diff -u --label want --label got "$TMP/t.want" <(printf '%s\n' "$out") || bad=1
	return "$bad"
}

# bench_fixture DIR [KIND TEST]: DIR/meta.txt and DIR/samples.csv of a
# BENCH=quick run in which every point was measured, except that upstream
# lacks what a device may lack (n/a) and KIND's TEST is n/a too.
bench_fixture() {
	(
	# shellcheck source=tools/bench/bench.conf
	. "$TOP/tools/bench/bench.conf"
	bench_config quick
	bench_meta > "$1/meta.txt"
	local rep k t s m ms seq=0
	exec > "$1/samples.csv"
	echo "seq,rep,kind,test,size,metric,value,unit,wall_s,note"
	for ((rep = 1; rep <= BENCH_REPS; rep++)); do
		for k in $BENCH_KINDS; do
			while read -r t s; do
				seq=$((seq + 1))
				if { [ "$k" = upstream ] && bench_may_be_na "$t"; } ||
				   [ "$k $t" = "${2:-} ${3:-}" ]; then
					echo "$seq,$rep,$k,$t,$s,$(bench_main_metric "$t"),n/a,,1.0,fixture: not supported"
					continue
				fi
				case $t in
				tcp_rtt) ms="oneway_median_us rtt_median_us rtt_min_us rtt_p99_us" ;;
				tcp_bw) ms=bw_MiBps ;;
				*_lat) ms="lat_typical_us lat_avg_us lat_min_us lat_p99_us" ;;
				*) ms="bw_avg_MiBps msg_rate_Mpps" ;;
				esac
				for m in $ms; do
					echo "$seq,$rep,$k,$t,$s,$m,$((seq % 90 + 10)).$rep,x,1.0,fixture"
				done
			done <<< "$(bench_points "$k")"
		done
	done
	) && python3 "$TOP/tools/bench/report.py" "$1" > /dev/null
}

t_check_report() {
	local bad=0 d=$TMP/bench out v
	# cr DIR pass|fail [PATTERN]: check-report's verdict on DIR; a failure
	# must be a "not ok" line matching PATTERN
	cr() {
		local rc
		out=$("$TOP/tools/bench/check-report.sh" "$1" 2>&1)
		rc=$?
		if [ "$2" = pass ] && [ "$rc" != 0 ]; then
			echo "$1: check-report fails a complete report:"
			grep -A3 '^not ok' <<< "$out"
			bad=1
		elif [ "$2" = fail ] && [ "$rc" = 0 ]; then
			echo "$1: check-report passes it ($3)"
			bad=1
		elif [ "$2" = fail ] && ! grep -q "^not ok .*$3" <<< "$out"; then
			echo "$1: check-report fails, but not on '$3':"
			grep '^not ok' <<< "$out"
			bad=1
		fi
	}
	mkdir -p "$d/ok" "$d/na-flush" "$d/na-read8" || return 1
	bench_fixture "$d/ok" || { echo "cannot make the fixture"; return 1; }
	cr "$d/ok" pass
	grep -q '^| pipe_p_lat/read8_lat | ≤ 1.3 | [0-9][^|]* | n/a | [0-9][^|]* |$' "$d/ok/report.md" ||
		{ echo "ok: no pipe_p_lat/read8_lat ratio row with siwx, upstream (n/a), rxe"; bad=1; }
	for v in "no-section:/^### RDMA Flush and Atomic Write (tools\/bench\/flush_bench)\$/d:flush_bench section" \
		 "no-ratio:/^| pipe_p_lat\/read8_lat |/d:flush_bench ratio table complete" \
		 "no-cell:s/^\(| flush_g_lat\/read8_lat | .*\) | [^|]* |\$/\1 |/:flush_bench ratio table complete" \
		 "no-row:/^| atomic_write_lat | 8 B |/d:atomic_write_lat 8 B: row in report.md"; do
		IFS=: read -r n e p <<< "$v"
		cp -r "$d/ok" "$d/$n"
		sed -i "$e" "$d/$n/report.md"
		cmp -s "$d/ok/report.md" "$d/$n/report.md" && { echo "$n: sed '$e' changed nothing"; bad=1; }
		cr "$d/$n" fail "$p"
	done
	bench_fixture "$d/na-flush" siwx flush_g_lat && cr "$d/na-flush" pass
	bench_fixture "$d/na-read8" siwx read8_lat && cr "$d/na-read8" fail "siwx read8_lat 8 B: n/a allowed"
	return "$bad"
}

# scale_fixture DIR [KIND TEST N]: DIR/meta.txt and DIR/samples.csv of a
# BENCH=quick make bench-scale run in which every point was measured, but
# KIND's TEST with N objects or QPs, which failed
scale_fixture() {
	(
	# shellcheck source=tools/bench/scale.conf
	. "$TOP/tools/bench/scale.conf"
	scale_config quick
	scale_meta > "$1/meta.txt"
	local k t s p n m seq=0 fail="${2:-} ${3:-} ${4:-}"
	exec > "$1/samples.csv"
	echo "seq,rep,kind,test,size,n,procs,metric,value,unit,wall_s,note"
	for k in $SCALE_KINDS; do
		while read -r t s p n; do
			seq=$((seq + 1))
			for m in bw_avg_MiBps msg_rate_Mpps; do
				if [ "$k $t $n" = "$fail" ]; then
					echo "$seq,1,$k,$t,$s,$n,$p,$m,fail,,1.0,fixture: failed"
				else
					echo "$seq,1,$k,$t,$s,$n,$p,$m,$((seq % 90 + 10)).5,x,1.0,fixture"
				fi
			done
		done <<< "$(scale_bw_points)"
		while read -r t s n; do
			seq=$((seq + 1))
			for m in per_kernel_B per_kernel_min_B per_kernel_max_B per_sunreclaim_B \
				 per_vmalloc_B residual_kernel_B; do
				if [ "$k $t $n" = "$fail" ]; then
					echo "$seq,1,$k,$t,$s,$n,1,$m,fail,,1.0,fixture: failed"
				else
					echo "$seq,1,$k,$t,$s,$n,1,$m,$((1000 + seq)),B,1.0,fixture"
				fi
			done
		done <<< "$(scale_mem_points)"
	done
	for k in $SCALE_CONN_KINDS; do
		seq=$((seq + 1))
		for m in conn_per_s connect_median_ms connect_p90_ms cycle_median_ms; do
			echo "$seq,1,$k,conn_rate,0,$SCALE_CONNS,1,$m,$((seq + 10)).5,x,1.0,fixture"
		done
		echo "$seq,1,$k,conn_rate,0,$SCALE_CONNS,1,conn_failed,0,count,1.0,fixture"
	done
	) && python3 "$TOP/tools/bench/scale-report.py" "$1" > /dev/null
}

t_scale_report() {
	local bad=0 d=$TMP/scale out v n e p
	# csr DIR pass|fail [PATTERN]: check-scale-report's verdict on DIR; a
	# failure must be a "not ok" line matching PATTERN
	csr() {
		local rc
		out=$("$TOP/tools/bench/check-scale-report.sh" "$1" 2>&1)
		rc=$?
		if [ "$2" = pass ] && [ "$rc" != 0 ]; then
			echo "$1: check-scale-report fails a complete report:"
			grep -A3 '^not ok' <<< "$out"
			bad=1
		elif [ "$2" = fail ] && [ "$rc" = 0 ]; then
			echo "$1: check-scale-report passes it ($3)"
			bad=1
		elif [ "$2" = fail ] && ! grep -q "^not ok .*$3" <<< "$out"; then
			echo "$1: check-scale-report fails, but not on '$3':"
			grep '^not ok' <<< "$out"
			bad=1
		fi
	}
	mkdir -p "$d/ok" "$d/failed" || return 1
	scale_fixture "$d/ok" || { echo "cannot make the fixture"; return 1; }
	csr "$d/ok" pass
	for v in "no-bw-row:/^| 64 | 4 |/d:bandwidth tables complete" \
		 "no-conn-row:/^| raw TCP | /d:connection rate table complete" \
		 "no-mem-row:/^| MR of 1 MiB | 256 |/d:memory tables complete" \
		 "no-verdict:/^\*\*Scale targets/d:scale targets verdict"; do
		IFS=: read -r n e p <<< "$v"
		cp -r "$d/ok" "$d/$n"
		sed -i "$e" "$d/$n/report.md"
		cmp -s "$d/ok/report.md" "$d/$n/report.md" && { echo "$n: sed '$e' changed nothing"; bad=1; }
		csr "$d/$n" fail "$p"
	done
	scale_fixture "$d/failed" siwx write_bw 64 || return 1
	csr "$d/failed" fail "siwx write_bw size 65536 n 64 procs 1: measured"
	grep -q '^| 64 | 1 | FAILED \[1\] |' "$d/failed/report.md" ||
		{ echo "failed: no '| 64 | 1 | FAILED [1] |' row"; bad=1; }
	out=$(SCALE_CHECK_ALLOW_FAIL="fixture: failed" "$TOP/tools/bench/check-scale-report.sh" "$d/failed" 2>&1) ||
		{ echo "failed: SCALE_CHECK_ALLOW_FAIL does not allow it:"; grep -A3 '^not ok' <<< "$out"; bad=1; }
	return "$bad"
}

echo "TAP version 13"
echo "1..10"
check settings.valid t_settings
check env.reaches_guest t_env
check env.runner_vars_stay t_runner_vars
check env.boot_limits t_boot_limits
check docs.suite_table t_docs
check kernel_problems.patterns t_kernel_problems
check tap.report t_tap_report
check bench.check_report t_check_report
check bench.ulp_report t_ulp_report
check bench.scale_report t_scale_report
if [ "$FAILED" = 0 ]; then
	echo "# runner checks ok"
else
	echo "# $FAILED of $N runner checks failed"
fi
[ "$FAILED" = 0 ]
