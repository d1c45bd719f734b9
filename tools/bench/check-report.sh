#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-report.sh [DIR]: validate a benchmark report written by
# tools/bench/bench.sh (default DIR: build/bench).  Prints TAP and exits
# non-zero if any check fails.  It checks that the report is complete and
# well-formed, never how fast anything was:
#   - samples.csv: the header, 10 fields a line, known kinds/tests/metrics,
#     integer seq/rep/size, value numeric (> 0), "n/a" or "fail";
#   - every point of the matrix (tools/bench/bench.conf, for the mode in
#     meta.txt) of every kind: a numeric median in summary.csv, or n/a with
#     a reason, and n/a only for operations a device may lack (atomics,
#     RDMA Write with Immediate, RDMA Flush and Atomic Write: flush_bench's
#     flush_*, atomic_write_*, pipe_g_*, pipe_p_*);
#   - no run failed for good (guest-bench retries a run three times);
#   - report.md has a table row for every point and the ratio columns,
#     the write-with-immediate ratio table, and the flush_bench section:
#     its latency table (a row per point, above) and a ratio row for every
#     ratio of BENCH_FLUSH_RATIOS with a cell per RDMA kind;
#   - the plots listed in plots.txt exist (skipped if gnuplot was missing).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DIR=${1:-$TOP/build/bench}

# shellcheck source=tools/bench/check-lib.sh
. "$HERE/check-lib.sh"
# shellcheck source=tools/bench/bench.conf
. "$HERE/bench.conf"

check_files meta.txt samples.csv summary.csv report.md
# the repetitions the run made (BENCH_REPEAT may have set them)
check_mode bench_config BENCH_REPEAT

# ---- samples.csv well-formed
check_header "seq,rep,kind,test,size,metric,value,unit,wall_s,note"

bad=$(awk -F, -v reps="$BENCH_REPS" -v kinds="$BENCH_KINDS" \
	-v tests="$BENCH_LAT_TESTS $BENCH_BW_TESTS $BENCH_TCP_TESTS $BENCH_IMM_LAT_TESTS $BENCH_IMM_BW_TESTS $BENCH_FLUSH_TESTS" '
	BEGIN {
		split(kinds, a, " "); for (i in a) K[a[i]] = 1
		split(tests, a, " "); for (i in a) T[a[i]] = 1
		split("lat_typical_us lat_avg_us lat_min_us lat_p99_us bw_avg_MiBps msg_rate_Mpps " \
		      "bw_MiBps oneway_median_us rtt_median_us rtt_min_us rtt_p99_us", a, " ")
		for (i in a) M[a[i]] = 1
		# the metrics the tables use must be positive
		split("lat_typical_us bw_avg_MiBps bw_MiBps oneway_median_us rtt_median_us", a, " ")
		for (i in a) MAIN[a[i]] = 1
	}
	NR == 1 { next }
	{
		why = ""
		if (NF != 10) why = "expected 10 fields, got " NF
		else if ($1 !~ /^[0-9]+$/) why = "seq not an integer"
		else if ($2 !~ /^[0-9]+$/ || $2 < 1 || $2 > reps) why = "rep not in 1.." reps
		else if (!($3 in K)) why = "unknown kind"
		else if (!($4 in T)) why = "unknown test"
		else if ($5 !~ /^[0-9]+$/) why = "size not an integer"
		else if (!($6 in M)) why = "unknown metric"
		else if ($7 == "n/a" || $7 == "fail") {
			if ($10 == "") why = $7 " without a reason"
		} else if ($7 !~ /^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) why = "value not numeric"
		else if (($6 in MAIN) && $7 + 0 <= 0) why = "value not positive"
		if (why == "" && $9 !~ /^[0-9]+(\.[0-9]+)?$/) why = "wall_s not a number"
		if (why != "") { print NR ": " why ": " $0; n++ }
	}
	END { exit n > 0 }' "$DIR/samples.csv")
rc=$?
check "samples.csv well-formed ($(($(wc -l < "$DIR/samples.csv") - 1)) samples)" "$rc" \
	"${bad:-}"

fails=$(awk -F, 'NR > 1 && $7 == "fail" { print $3 " " $4 " " $5 " rep " $2 ": " $10 }' "$DIR/samples.csv")
check "no run failed (after retries)" "$([ -z "$fails" ]; echo $?)" "$fails"

# ---- every point: numeric median or n/a with a reason
# summary.csv: kind,test,size,metric,status,n,median,min,max,spread_pct,note
declare -A SUM=()
while IFS=, read -r kind test size metric status n med min max _ note; do
	SUM["$kind $test $size $metric"]="$status|$n|$med|$min|$max|$note"
done < "$DIR/summary.csv"

human() {
	local n=$1
	if ((n >= 1048576 && n % 1048576 == 0)); then echo "$((n / 1048576)) MiB"
	elif ((n >= 1024 && n % 1024 == 0)); then echo "$((n / 1024)) KiB"
	else echo "$n B"; fi
}
numeric() { [[ $1 =~ ^[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$ ]] && [[ ! $1 =~ ^0+(\.0+)?$ ]]; }

for kind in $BENCH_KINDS; do
	while read -r test size; do
		metric=$(bench_main_metric "$test")
		entry=${SUM["$kind $test $size $metric"]:-}
		desc="$kind $test $(human "$size"): "
		IFS='|' read -r status n med min max note <<< "$entry"
		if [ -z "$entry" ]; then
			nok "${desc}row present" "no $metric row in summary.csv"
		elif [ "$status" = ok ] && numeric "$med" && numeric "$min" && numeric "$max"; then
			ok "${desc}median $med (n=$n, $min..$max)"
		elif [ "$status" = n/a ] && [ -n "$note" ] && bench_may_be_na "$test"; then
			ok "${desc}n/a ($note)"
		elif [ "$status" = n/a ]; then
			nok "${desc}n/a allowed" "n/a is only allowed, with a reason, for operations a device may lack (atomics, write with immediate, flush, atomic write); note='$note'"
		else
			nok "${desc}numeric median" "status=$status median='$med' note='$note'"
		fi
		# the table row
		if [ "$kind" != tcp ] && ! grep -qF "| $test | $(human "$size") |" "$DIR/report.md"; then
			nok "${desc}row in report.md" "no line starting '| $test | $(human "$size") |'"
		fi
	done <<< "$(bench_points "$kind")"
done
# The reference rows the ratios need.
entry=${SUM["tcp tcp_rtt $BENCH_LAT_SIZE rtt_median_us"]:-}
IFS='|' read -r status n med _ <<< "$entry"
check "tcp tcp_rtt rtt_median_us median ($med)" "$(numeric "${med:-}"; echo $?)" "entry='$entry'"

# ---- report.md tables
for h in "siwx/upstream" "siwx/rxe" "siwx/raw TCP"; do
	n=$(grep -c "^| test | size | .*| $h |" "$DIR/report.md")
	check "report.md: latency and bandwidth tables have a '$h' column" "$([ "$n" -ge 2 ]; echo $?)" "found in $n table headers"
done

# The write-with-immediate ratio table: a row per RDMA kind and point.
n=0
for kind in $BENCH_RDMA_KINDS; do
	for s in $BENCH_IMM_LAT_SIZES; do
		grep -q "^| $kind | latency | $(human "$s") |" "$DIR/report.md" || n=$((n + 1))
	done
	for s in $BENCH_BW_SIZES; do
		grep -q "^| $kind | bandwidth | $(human "$s") |" "$DIR/report.md" || n=$((n + 1))
	done
done
check "report.md: write-with-immediate ratio table complete" "$([ "$n" = 0 ]; echo $?)" "$n rows missing"

# The flush_bench section: its heading, and a row per ratio with a cell
# (a number, n/a or -) per RDMA kind.
h="### RDMA Flush and Atomic Write (tools/bench/flush_bench)"
check "report.md: flush_bench section" "$(grep -qxF "$h" "$DIR/report.md"; echo $?)" "no line '$h'"
read -r -a kinds <<< "$BENCH_RDMA_KINDS"
bad=
for r in $BENCH_FLUSH_RATIOS; do
	line=$(grep -F "| $r |" "$DIR/report.md" | head -n 1)
	IFS='|' read -r -a c <<< "$line"
	# "| ratio | target | kind... |": c[0] is empty, the kinds from c[3]
	if [ -z "$line" ]; then
		bad+="$r: no row"$'\n'
	elif [ "${#c[@]}" != $((3 + ${#kinds[@]})) ]; then
		bad+="$r: ${#c[@]} fields, expected $((3 + ${#kinds[@]})): $line"$'\n'
	fi
done
bad=${bad%$'\n'}
check "report.md: flush_bench ratio table complete ($(wc -w <<< "$BENCH_FLUSH_RATIOS") ratios)" \
	"$([ -z "$bad" ]; echo $?)" "$bad"

# The data path's targets: the section and its verdict line.
h="### The data path's targets"
check "report.md: data path targets section" "$(grep -qxF "$h" "$DIR/report.md"; echo $?)" "no line '$h'"
v=$(grep -E '^\*\*Data path targets: [0-9]+ of [0-9]+ met' "$DIR/report.md")
check "report.md: data path targets verdict" "$([ -n "$v" ]; echo $?)" "no '**Data path targets: N of M met' line"

# ---- plots
if [ ! -s "$DIR/plots.txt" ]; then
	nok "plots.txt exists"
elif grep -q '^none: ' "$DIR/plots.txt"; then
	skip "plots" "$(sed -n 's/^none: //p' "$DIR/plots.txt")"
else
	while read -r p; do
		if [ -s "$DIR/$p" ] && [ "$(head -c 4 "$DIR/$p" | od -An -c | tr -d ' ')" = '211PNG' ]; then
			ok "plot $p"
		else
			nok "plot $p" "missing, empty or not a PNG: $DIR/$p"
		fi
	done < "$DIR/plots.txt"
fi

finish
