#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-bench.sh MODE: the guest side of tools/bench/bench.sh (run by
# tools/vm/run --netns, build/siwx/siw.ko loaded).  MODE is quick or full
# (tools/bench/bench.conf).  The helpers it shares with guest-scale.sh
# (devices, servers, the module swap, rxe) are tools/bench/guest-lib.sh's.
#
# Devices, each on its own veth pair and subnet, so that rdma_cm cannot pick
# the wrong one and traffic really crosses a veth pair:
#   siwx/upstream  siw0 on veth0 192.168.77.1 (initial netns, servers)
#                  siw1 on veth1 192.168.77.2 (netns siwx1, clients)
#                  -- set up by tools/vm/run; the two modules are swapped
#                  in place (rdma link delete, rmmod, insmod, link add)
#   rxe            rxe0 on vr0 192.168.79.1, rxe1 on vr1 192.168.79.2, both
#                  in the initial netns (rxe in 6.12 only works there); policy
#                  routing sends traffic between the two addresses across the
#                  veth pair instead of through lo
#   tcp            iperf3 and tcp_pingpong between 192.168.77.1 and
#                  192.168.77.2 (netns siwx1): the path siw uses
#
# Every RDMA kind runs its perftest points, then one tools/bench/imm_bench
# (RDMA Write with Immediate against RDMA Write and Write + Send, all on one
# connection) that yields all of its write_imm/write_poll/write_send points,
# then one tools/bench/flush_bench (RDMA Flush, Atomic Write and the commit
# pipeline against Read, Write and the emulation, on one connection; on the
# first devdax device, if there is one) that yields all of its points.
#
# Repetition r runs the kinds in the order of BENCH_KINDS when r is odd and in
# the reverse order when r is even (A B C D D C B A ...): linear drift hits all
# kinds equally and the siw module is swapped once per repetition.
#
# Output in $SIWX_RESULTS/bench/: samples.csv (every raw sample), guest.txt
# (environment, device attributes), logs/ (every tool's output).
# Exit status: 0 if every point was measured (or is n/a), 3 if some failed.

set -u
MODE=${1:?usage: guest-bench.sh quick|full [REPS]}
TOP=${SIWX_TOP:?run me with tools/vm/run}
# shellcheck source=tools/bench/bench.conf
. "$TOP/tools/bench/bench.conf"
BENCH_REPEAT=${2:-} bench_config "$MODE" || exit 2

# shellcheck source=tools/bench/guest-lib.sh
. "$TOP/tools/bench/guest-lib.sh"

guest_init bench bench	# into $SIWX_RESULTS/bench, at nice 19
PP=$TOP/build/bench/tcp_pingpong
IMM=$TOP/build/bench/imm_bench
FLUSH=$TOP/build/bench/flush_bench
declare -A ATOMIC_NA=()	# kind -> reason, when the device has no atomics
declare -A ATOMIC_CHECKED=()	# kind -> 1, once atomic_check saw its device

echo "seq,rep,kind,test,size,metric,value,unit,wall_s,note" > "$CSV"
# sample REP KIND TEST SIZE METRIC VALUE UNIT [NOTE]
sample() { csv_row "$1,$2,$3,$4,$5,$6,$7" "${8:-}"; }

# ---------------------------------------------------------------- setup
# atomic_check KIND DEV: note whether DEV supports atomics.
atomic_check() {
	local cap
	cap=$("$P/bin/ibv_devinfo" -v -d "$2" 2>&1)
	{ echo "== $1: ibv_devinfo -v -d $2"; echo "$cap"; } >> "$LOGS/devinfo-$1.txt"
	cap=${cap#*atomic_cap:}
	read -r cap _ <<< "$cap"
	if [ "$cap" = ATOMIC_NONE ] || [ -z "$cap" ]; then
		ATOMIC_NA[$1]="device reports atomic_cap ${cap:-?} (no atomic operations)"
	else
		unset "ATOMIC_NA[$1]"
	fi
	say "$1: $2 atomic_cap ${cap:-?}"
}

# ---------------------------------------------------------------- runs
# Bandwidth and message-rate points in perftest's duration mode: the
# whole run -D, measured from -f seconds in to -f seconds before its end
# (BENCH_BW_SECS of a running stream, as iperf3 measures BENCH_TCP_SECS).
# A fixed count (-n) timed a burst from the connection's first message,
# TCP's slow start and the queue filling and draining in it: 1.5 times
# below the stream's rate at 64 KiB (performance.md, 2026-12-07).
BW_DURATION=(-D "$((BENCH_BW_SECS + 2 * BENCH_BW_MARGIN))" -f "$BENCH_BW_MARGIN")

# perftest_point REP KIND TEST SIZE
perftest_point() {
	local rep=$1 kind=$2 test=$3 size=$4
	local prog args=() port slog clog try crc lim f hdr line note=
	case $test in
	write_lat) prog=ib_write_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	read_lat) prog=ib_read_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	send_lat) prog=ib_send_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	atomic_fadd_lat) prog=ib_atomic_lat args=(-A FETCH_AND_ADD -n "$BENCH_LAT_ITERS") ;;
	atomic_cas_lat) prog=ib_atomic_lat args=(-A CMP_AND_SWAP -n "$BENCH_LAT_ITERS") ;;
	write_bw | read_bw | send_bw)
		prog=ib_$test args=(-s "$size" "${BW_DURATION[@]}") ;;
	atomic_fadd_bw) prog=ib_atomic_bw args=(-A FETCH_AND_ADD "${BW_DURATION[@]}") ;;
	atomic_cas_bw) prog=ib_atomic_bw args=(-A CMP_AND_SWAP "${BW_DURATION[@]}") ;;
	*) echo "bench: unknown test $test" >&2; return 1 ;;
	esac
	kind_env "$kind"
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" \
			"${KIND_BROKEN[$kind]}"
		FAILS=$((FAILS + 1))
		return
	fi
	if bench_is_atomic "$test" && [ -n "${ATOMIC_NA[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" n/a "" \
			"${ATOMIC_NA[$kind]}"
		return
	fi
	bench_is_lat "$test" && lim=90 || lim=180
	# A failed clock calibration is perftest's, not the device's: each one
	# buys one more try (at most 6 in all), after a pause that lets the
	# guest's load settle. It failed 3 times in a row on rxe in one CI run.
	local maxtry=3
	for ((try = 1; try <= maxtry; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		printf -v f '%s/%04d-r%d-%s-%s-%s' "$LOGS" "$SEQ" "$rep" "$kind" "$test" "$size"
		slog=$f.server.txt clog=$f.client.txt
		if ! serve "$kind" "$port" "$slog" "$prog" -R -F -d "$D0" -p "$port" "${args[@]}"; then
			note="server did not listen (try $try)"
			continue
		fi
		timeout -k 5 "$lim" "${PRE[@]}" "$prog" -R -F -d "$D1" -p "$port" "${args[@]}" "$A0" \
			> "$clog" 2>&1
		crc=$?
		reap "$SPID" 20
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			# perftest converts cycles to time with a CPU clock it
			# measures first; under TCG that can fail (r^2 < 0.9),
			# and then every figure is 0. A bandwidth point needs no
			# clock: its iterations over the window are the rate
			# (below).
			if ! grep -q 'Correlation coefficient' "$clog" ||
				! bench_is_lat "$test"; then
				note=
				break
			fi
			note="perftest could not calibrate its clock (try $try)"
			((maxtry < 6)) && maxtry=$((maxtry + 1))
			say "$kind $test $size rep $rep: $note, again"
			nap 2
			continue
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "$kind $test $size rep $rep: $note; logs $f.*"
		[ "$try" -lt "$maxtry" ] && say "$kind $test $size rep $rep: again"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind $test $size rep $rep: $note; logs $f.*"
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" "$note"
		FAILS=$((FAILS + 1))
		return
	fi
	# The result line follows the "#bytes" header.
	hdr=0 line=()
	while read -r -a f; do
		if [ "$hdr" = 1 ] && [[ ${f[0]:-} =~ ^[0-9]+$ ]]; then
			line=("${f[@]}")
			break
		fi
		[ "${f[0]:-}" = "#bytes" ] && hdr=1
	done < "$clog"
	if [ ${#line[@]} -lt 5 ]; then
		say "FAILED: $kind $test $size rep $rep: no result line in $clog"
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" "no result line"
		FAILS=$((FAILS + 1))
		return
	fi
	note="iters=${line[1]}"
	[ "$try" -gt 1 ] && note="$note; try $try"
	if bench_is_lat "$test"; then
		# bytes iters t_min t_max t_typical t_avg t_stdev 99% 99.9%
		sample "$rep" "$kind" "$test" "$size" lat_typical_us "${line[4]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_avg_us "${line[5]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_min_us "${line[2]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_p99_us "${line[7]:-}" us "$note"
		say "$kind $test ${size}B: typical ${line[4]} us (rep $rep)"
	else
		# bytes iters bw_peak bw_avg msg_rate; the iterations are those
		# of the measured window. perftest measures its CPU clock for
		# the report after the window, while up to 128 work requests
		# still drain, the benchmark at nice 19 beside the kernel's
		# transmit threads: under TCG that fails often (every figure
		# 0, upstream siw's 64 KiB points in every try), so the rate
		# is then the iterations over the window's length.
		if grep -q 'Correlation coefficient' "$clog"; then
			line[3]=$(awk -v n="${line[1]}" -v s="$size" -v t="$BENCH_BW_SECS" \
				'BEGIN { printf "%.2f", n * s / t / 1048576 }')
			line[4]=$(awk -v n="${line[1]}" -v t="$BENCH_BW_SECS" \
				'BEGIN { printf "%.6f", n / t / 1e6 }')
			note="$note; perftest could not calibrate its clock: iterations / ${BENCH_BW_SECS} s"
		fi
		sample "$rep" "$kind" "$test" "$size" bw_avg_MiBps "${line[3]}" MiB/s "$note"
		sample "$rep" "$kind" "$test" "$size" msg_rate_Mpps "${line[4]}" Mpps "$note"
		say "$kind $test ${size}B: ${line[3]} MiB/s, ${line[4]} Mpps (rep $rep)"
	fi
}

# owns TOOL TEST: TEST is one of the points TOOL (imm_bench, flush_bench)
# measures in one run.
owns() {
	case $1 in
	imm_bench) bench_is_imm "$2" ;;
	flush_bench) bench_is_flush "$2" ;;
	*) return 1 ;;
	esac
}

# tool_fail TOOL REP KIND NOTE: every TOOL point of KIND failed.
tool_fail() {
	local t s
	while read -r t s; do
		owns "$1" "$t" || continue
		sample "$2" "$3" "$t" "$s" "$(bench_main_metric "$t")" fail "" "$4"
	done <<< "$(bench_points "$3")"
	FAILS=$((FAILS + 1))
}

# tool_point TOOL REP KIND: one run of our own TOOL (server on the kind's
# address 0, client on address 1), every point of KIND it measures:
#   imm_bench    the write_imm/write_poll/write_send points
#   flush_bench  the Flush/Atomic Write points (server -P $PMEM if the
#                guest has a devdax device)
tool_point() {
	local tool=$1 rep=$2 kind=$3 port slog clog try crc f kw tt ss rest note=
	local t s k n=0 lim prog=$TOP/build/bench/$1 sargs=() cargs=()
	local -A r=() seen=()
	kind_env "$kind"
	case $tool in
	imm_bench)
		lim=$BENCH_IMM_TIMEOUT
		cargs=(-l "${BENCH_IMM_LAT_SIZES// /,}" -n "$BENCH_LAT_ITERS"
			-b "${BENCH_BW_SIZES// /,}" -B "$BENCH_BW_BYTES"
			-m "$BENCH_BW_MIN_ITERS" -M "$BENCH_BW_MAX_ITERS" -r "$BENCH_IMM_ROUNDS") ;;
	flush_bench)
		lim=$BENCH_FLUSH_TIMEOUT
		[ -n "$PMEM" ] && sargs=(-P "$PMEM")
		cargs=(-n "$BENCH_LAT_ITERS" -r "$BENCH_FLUSH_ROUNDS") ;;
	esac
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		tool_fail "$tool" "$rep" "$kind" "${KIND_BROKEN[$kind]}"
		return
	fi
	for ((try = 1; try <= 3; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		printf -v f '%s/%04d-r%d-%s-%s' "$LOGS" "$SEQ" "$rep" "$kind" "$tool"
		slog=$f.server.txt clog=$f.client.txt
		if ! serve "$kind" "$port" "$slog" "$prog" -s -a "$A0" -p "$port" "${sargs[@]}"; then
			note="server did not listen (try $try)"
			continue
		fi
		timeout -k 5 "$lim" "${PRE[@]}" "$prog" -c "$A0" -p "$port" "${cargs[@]}" > "$clog" 2>&1
		crc=$?
		reap "$SPID" 20
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			note=
			break
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "$kind $tool rep $rep: $note; logs $f.*"
		[ "$try" -lt 3 ] && say "$kind $tool rep $rep: again"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind $tool rep $rep: $note; logs $f.*"
		tool_fail "$tool" "$rep" "$kind" "$note"
		return
	fi
	[ "$try" -gt 1 ] && note="; try $try"
	# result test=T size=S iters=N key=value ...  /  na test=T size=S reason=...
	while read -r kw tt ss rest; do
		t=${tt#test=} s=${ss#size=}
		case $kw in
		result)
			r=()
			for k in $rest; do r[${k%%=*}]=${k#*=}; done
			if [[ $t == *_lat ]]; then
				for k in lat_typical_us lat_avg_us lat_min_us lat_p99_us; do
					sample "$rep" "$kind" "$t" "$s" "$k" "${r[$k]:-}" us "iters=${r[iters]:-}$note"
				done
				say "$kind $t ${s}B: typical ${r[lat_typical_us]:-} us (rep $rep)"
			else
				sample "$rep" "$kind" "$t" "$s" bw_avg_MiBps "${r[bw_avg_MiBps]:-}" MiB/s "iters=${r[iters]:-}$note"
				sample "$rep" "$kind" "$t" "$s" msg_rate_Mpps "${r[msg_rate_Mpps]:-}" Mpps "iters=${r[iters]:-}$note"
				say "$kind $t ${s}B: ${r[bw_avg_MiBps]:-} MiB/s (rep $rep)"
			fi
			seen["$t $s"]=1
			;;
		na)
			rest=${rest#reason=}
			sample "$rep" "$kind" "$t" "$s" "$(bench_main_metric "$t")" n/a "" "${rest:-no reason given}"
			seen["$t $s"]=1
			;;
		ratio) say "$kind $tool: $tt $ss $rest" ;;
		esac
	done < "$clog"
	while read -r t s; do
		owns "$tool" "$t" || continue
		[ -n "${seen["$t $s"]:-}" ] && continue
		sample "$rep" "$kind" "$t" "$s" "$(bench_main_metric "$t")" fail "" "no result line in $clog"
		n=$((n + 1))
	done <<< "$(bench_points "$kind")"
	if [ "$n" != 0 ]; then
		say "FAILED: $kind $tool rep $rep: $n points without a result"
		FAILS=$((FAILS + 1))
	fi
}

# tcp_point REP TEST: iperf3 (tcp_bw) or tcp_pingpong (tcp_rtt), server in
# the initial netns on veth0, client in $NS1 on veth1.
tcp_point() {
	local rep=$1 test=$2 port crc f slog clog size kv k v bps='' try note='' srv
	local -A r=()
	for ((try = 1; try <= 3; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		case $test in
		tcp_rtt) size=$BENCH_LAT_SIZE ;;
		tcp_bw) size=$BENCH_TCP_BW_SIZE ;;
		esac
		printf -v f '%s/%04d-r%d-tcp-%s-%s' "$LOGS" "$SEQ" "$rep" "$test" "$size"
		slog=$f.server.txt clog=$f.client.txt
		case $test in
		tcp_rtt) srv=("$PP" -s -b "$SIW_A0" -p "$port") ;;
		tcp_bw) srv=(iperf3 -s -1 -B "$SIW_A0" -p "$port") ;;
		esac
		if ! serve tcp "$port" "$slog" "${srv[@]}"; then
			note="server did not listen (try $try)"
			continue
		fi
		case $test in
		tcp_rtt) timeout -k 5 90 ip netns exec "$NS1" "$PP" -c "$SIW_A0" -p "$port" \
				-z "$size" -n "$BENCH_PP_ITERS" > "$clog" 2>&1 ;;
		tcp_bw) timeout -k 5 90 ip netns exec "$NS1" iperf3 -c "$SIW_A0" -p "$port" \
				-t "$BENCH_TCP_SECS" -J > "$clog" 2>&1 ;;
		esac
		crc=$?
		reap "$SPID" 10
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			note=
			break
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "tcp $test rep $rep: $note; logs $f.*"
	done
	if [ -z "$note" ]; then
		if [ "$test" = tcp_rtt ]; then
			read -r -a kv < "$clog"
			for k in "${kv[@]}"; do r[${k%%=*}]=${k#*=}; done
			[ -n "${r[oneway_median_us]:-}" ] || note="no result in $clog"
		else
			# "sum_received": { ... "bits_per_second": N, ...
			k=0
			while read -r v; do
				[[ $v == '"sum_received":'* ]] && k=1
				if [ "$k" = 1 ] && [[ $v == '"bits_per_second":'* ]]; then
					bps=${v#*:}
					bps=${bps%,}
					bps=${bps// /}
					break
				fi
			done < "$clog"
			[ -n "$bps" ] || note="no sum_received in $clog"
		fi
	fi
	if [ -n "$note" ]; then
		say "FAILED: tcp $test rep $rep: $note"
		sample "$rep" tcp "$test" "$size" "$(bench_main_metric "$test")" fail "" "$note"
		FAILS=$((FAILS + 1))
		return
	fi
	if [ "$test" = tcp_rtt ]; then
		note="iters=${r[iters]}"
		sample "$rep" tcp tcp_rtt "$size" oneway_median_us "${r[oneway_median_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_median_us "${r[rtt_median_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_min_us "${r[rtt_min_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_p99_us "${r[rtt_p99_us]}" us "$note"
		say "tcp rtt ${size}B: median ${r[rtt_median_us]} us (rep $rep)"
	else
		# bits/s (SI) -> MiB/s, as perftest reports
		v=$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1048576 }')
		sample "$rep" tcp tcp_bw "$size" bw_MiBps "$v" MiB/s "secs=$BENCH_TCP_SECS"
		say "tcp bw: $v MiB/s (rep $rep)"
	fi
}

# kind_block REP KIND: every point of KIND once.
kind_block() {
	local rep=$1 kind=$2 t s
	case $kind in
	siwx | upstream)
		# the first time a module is loaded: whether its device has atomics
		use_siw "$kind" && [ -z "${ATOMIC_CHECKED[$kind]:-}" ] &&
			{ atomic_check "$kind" siw0; ATOMIC_CHECKED[$kind]=1; } ;;
	esac
	while read -r t s; do
		if [ "$kind" = tcp ]; then
			tcp_point "$rep" "$t"
		elif ! owns imm_bench "$t" && ! owns flush_bench "$t"; then
			perftest_point "$rep" "$kind" "$t" "$s"
		fi
	done <<< "$(bench_points "$kind")"
	[ "$kind" = tcp ] && return
	tool_point imm_bench "$rep" "$kind"
	tool_point flush_bench "$rep" "$kind"
}

# ---------------------------------------------------------------- main
guest_info "$MODE" "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)" \
	"iperf3: $(iperf3 --version 2>&1 | head -n 1)"
say "mode $MODE: $BENCH_REPS repetitions, sizes $BENCH_BW_SIZES"
exception_trace_off

[ -x "$PP" ] || { say "missing $PP (built by bench.sh)"; exit 2; }
[ -x "$IMM" ] || { say "missing $IMM (built by bench.sh)"; exit 2; }
[ -x "$FLUSH" ] || { say "missing $FLUSH (built by bench.sh)"; exit 2; }
# flush_bench's server memory: a devdax device (tools/vm/run --pmem, an
# emulated NVDIMM: $SIWX_PMEM_DEV; else the first there is) makes the
# persistent Flush points measurable; without one they are n/a with
# flush_bench's reason.
PMEM=${SIWX_PMEM_DEV:-}
[ -c "$PMEM" ] || PMEM=
for f in /dev/dax*; do
	[ -z "$PMEM" ] && [ -c "$f" ] && PMEM=$f
done
say "flush_bench server memory: ${PMEM:-anonymous (no devdax device: persistent Flush n/a)}"
ATOMIC_CHECKED[siwx]=1
atomic_check siwx siw0
if ! { setup_rxe && atomic_check rxe rxe0; } >> "$LOGS/setup-rxe.txt" 2>&1; then
	KIND_BROKEN[rxe]="rxe setup failed (see logs/setup-rxe.txt)"
	say "rxe setup FAILED"
fi
say "setup done"

run_reps "$BENCH_REPS" "$BENCH_KINDS"
guest_done
