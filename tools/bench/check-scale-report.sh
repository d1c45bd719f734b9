#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check-scale-report.sh [DIR]: validate a report written by
# tools/bench/scale.sh (make bench-scale; default DIR: build/bench-scale).
# Prints TAP and exits non-zero if any check fails.  It checks that the
# report is complete and well-formed, never how fast anything was nor
# whether a target was met:
#   - samples.csv: the header, 12 fields a line, known kinds/tests, integer
#     seq/rep/size/n/procs, value numeric, "n/a" or "fail" (with a reason);
#   - every point of the matrix (tools/bench/scale.conf, for the mode in
#     meta.txt) of every kind has a row in summary.csv, and every one that
#     failed is listed (with its reason) -- failed points are reported as
#     "not ok" unless SCALE_CHECK_ALLOW_FAIL names a pattern they match
#     (e.g. 'prepare QP mapping failed', a known siw limit);
#   - report.md has the bandwidth, message rate, connection rate and memory
#     tables with a row per point and a cell per kind, and the verdict line
#     "**Scale targets: N of M met**".

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DIR=${1:-$TOP/build/bench-scale}
ALLOW=${SCALE_CHECK_ALLOW_FAIL:-}

# shellcheck source=tools/bench/check-lib.sh
. "$HERE/check-lib.sh"
# shellcheck source=tools/bench/scale.conf
. "$HERE/scale.conf"

check_files meta.txt samples.csv summary.csv report.md summary.txt
# the repetitions the run made (SCALE_REPEAT may have set them)
check_mode scale_config SCALE_REPEAT

# ---- samples.csv well-formed
check_header "seq,rep,kind,test,size,n,procs,metric,value,unit,wall_s,note"
bad=$(awk -F, -v reps="$SCALE_REPS" -v kinds="$SCALE_CONN_KINDS" '
	BEGIN {
		split(kinds, a, " "); for (i in a) K[a[i]] = 1
		split("write_bw conn_rate mem_qp mem_mr mem_conn qp_probe", a, " ")
		for (i in a) T[a[i]] = 1
	}
	NR == 1 { next }
	{
		why = ""
		if (NF != 12) why = "expected 12 fields, got " NF
		else if ($1 !~ /^[0-9]+$/) why = "seq not an integer"
		else if ($2 !~ /^[0-9]+$/ || $2 < 1 || $2 > reps) why = "rep not in 1.." reps
		else if (!($3 in K)) why = "unknown kind"
		else if (!($4 in T)) why = "unknown test"
		else if ($5 !~ /^[0-9]+$/ || $6 !~ /^[0-9]+$/ || $7 !~ /^[0-9]+$/) why = "size/n/procs not integers"
		else if ($9 == "n/a" || $9 == "fail") {
			if ($12 == "") why = $9 " without a reason"
		} else if ($9 !~ /^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$/) why = "value not numeric"
		if (why == "" && $11 !~ /^[0-9]+(\.[0-9]+)?$/) why = "wall_s not a number"
		if (why != "") { print NR ": " why ": " $0; n++ }
	}
	END { exit n > 0 }' "$DIR/samples.csv")
rc=$?
check "samples.csv well-formed ($(($(wc -l < "$DIR/samples.csv") - 1)) samples)" "$rc" "${bad:-}"

# ---- every point: a measured median, or a failure with its reason
# summary.csv: kind,test,size,n,procs,metric,status,count,median,min,max,note
declare -A SUM=()
while IFS=, read -r kind test size n procs metric status _ med _ _ note; do
	SUM["$kind $test $size $n $procs $metric"]="$status|$med|$note"
done < "$DIR/summary.csv"
# point KIND TEST SIZE N PROCS METRIC
point() {
	local e=${SUM["$*"]:-} status med note d="$1 $2 size $3 n $4 procs $5"
	IFS='|' read -r status med note <<< "$e"
	if [ -z "$e" ]; then
		nok "$d: row present" "no '$6' row in summary.csv"
	elif [ "$status" = ok ] && [[ $med =~ ^-?[0-9] ]]; then
		ok "$d: $6 $med"
	elif [ "$status" = fail ] && [ -n "$ALLOW" ] && [[ $note == *$ALLOW* ]]; then
		ok "$d: failed, allowed (SCALE_CHECK_ALLOW_FAIL): $note"
	else
		nok "$d: measured" "status=$status median='$med' note='$note'"
	fi
}
for kind in $SCALE_KINDS; do
	while read -r t s p n; do
		point "$kind" "$t" "$s" "$n" "$p" bw_avg_MiBps
	done <<< "$(scale_bw_points)"
	while read -r t s n; do
		point "$kind" "$t" "$s" "$n" 1 per_kernel_B
	done <<< "$(scale_mem_points)"
done
for kind in $SCALE_CONN_KINDS; do
	point "$kind" conn_rate 0 "$SCALE_CONNS" 1 conn_per_s
done

# ---- report.md
R=$DIR/report.md
nk=$(wc -w <<< "$SCALE_KINDS")
for h in "### RDMA Write 64 KiB, aggregate MiB/s" "### RDMA Write 64 B, aggregate message rate, Mmsg/s" \
	"## Connection setup rate (scale_tool connect / connserve)" \
	"## Kernel memory per object (scale_tool mem / memconn)" "## Scale targets"; do
	check "report.md: '$h'" "$(grep -qxF "$h" "$R"; echo $?)" "no line '$h'"
done
# bandwidth rows: "| N | P | kind cells... | ratios... |"
bad=''
while read -r _ s p n; do
	c=$(grep -cE "^\| $n \| $p \|" "$R")
	# two tables (64 KiB, 64 B)
	[ "$c" -ge 2 ] || bad+="no row '| $n | $p |' in both bandwidth tables"$'\n'
done <<< "$(scale_bw_points | sort -u -k3,4)"
while read -r line; do
	IFS='|' read -r -a c <<< "$line"
	[ "${#c[@]}" = $((3 + 2 * nk)) ] || bad+="${#c[@]} fields, expected $((3 + 2 * nk)): $line"$'\n'
done <<< "$(grep -E '^\| [0-9]+ \| [0-9]+ \|' "$R")"
bad=${bad%$'\n'}
check "report.md: bandwidth tables complete" "$([ -z "$bad" ]; echo $?)" "$bad"
bad=''
for kind in $SCALE_CONN_KINDS; do
	case $kind in
	upstream) l="upstream siw" ;;
	tcp) l="raw TCP" ;;
	*) l=$kind ;;
	esac
	grep -qE "^\| $l \| " "$R" || bad+="no connection rate row '$l' "
done
check "report.md: connection rate table complete" "$([ -z "$bad" ]; echo $?)" "$bad"
n=$(grep -cE '^\| (QP \(with its CQ\)|MR of 4 KiB|MR of 1 MiB|connection \(both ends\)) \| [0-9]+ \|' "$R")
want=$(( $(scale_mem_points | wc -l) + 4 ))	# and the residual table's 4 rows
check "report.md: memory tables complete ($n rows)" "$([ "$n" = "$want" ]; echo $?)" "expected $want rows"
v=$(grep -E '^\*\*Scale targets: [0-9]+ of [0-9]+ met\*\*' "$R")
check "report.md: scale targets verdict" "$([ -n "$v" ]; echo $?)" "no '**Scale targets: N of M met**' line"

finish
