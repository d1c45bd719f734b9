# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# check-lib.sh - TAP for the report checks, sourced by
# tools/bench/check-report.sh and tools/bench/check-scale-report.sh. The
# results are kept until finish prints them after the plan ("1..N"); a
# failure's details follow its "not ok" line as "#   " comments.
#
#   ok DESCRIPTION           a passed check
#   nok DESCRIPTION [DETAIL...]  a failed check, each DETAIL line a comment
#   skip DESCRIPTION REASON  a skipped check
#   check DESCRIPTION STATUS [DETAIL...]  ok if STATUS is 0, else nok
#   finish                   print the TAP and the summary line; exit 0 if
#                            no check failed, else 1
#   check_files FILE...      DIR/FILE exists and is not empty, for each;
#                            finish if one is not
#   check_mode CONFIG REPEAT  the mode DIR/meta.txt names is known to
#                            CONFIG (bench_config, scale_config), called
#                            with the variable REPEAT (BENCH_REPEAT,
#                            SCALE_REPEAT) set to the repetitions the run
#                            made; finish if it is not
#   check_header HEADER      the first line of DIR/samples.csv is HEADER
#
# The caller sets DIR, the report's directory.

N=0 FAILED=0
RESULTS=()
ok() { N=$((N + 1)); RESULTS+=("ok $N - $1"); }
nok() {
	N=$((N + 1)); FAILED=$((FAILED + 1))
	RESULTS+=("not ok $N - $1")
	shift
	local l x
	for l in "$@"; do
		while IFS= read -r x; do RESULTS+=("#   $x"); done <<< "$l"
	done
}
skip() { N=$((N + 1)); RESULTS+=("ok $N - $1 # SKIP $2"); }
check() {
	local d=$1 s=$2
	shift 2
	if [ "$s" = 0 ]; then ok "$d"; else nok "$d" "$@"; fi
}
finish() {
	echo "TAP version 13"
	echo "1..$N"
	printf '%s\n' "${RESULTS[@]}"
	echo "# $((N - FAILED)) passed, $FAILED failed ($DIR)"
	[ "$FAILED" = 0 ]
	exit
}

check_files() {
	local f
	for f in "$@"; do
		if [ -s "$DIR/$f" ]; then ok "$f exists"; else nok "$f exists" "missing or empty: $DIR/$f"; fi
	done
	[ "$FAILED" = 0 ] || finish
}
check_mode() {
	local mode
	mode=$(sed -n 's/^mode=//p' "$DIR/meta.txt")
	printf -v "$2" '%s' "$(sed -n 's/^reps=//p' "$DIR/meta.txt")"
	if "$1" "$mode" 2>/dev/null; then
		ok "meta.txt names a known mode ($mode)"
	else
		nok "meta.txt names a known mode" "mode='$mode'"
		finish
	fi
}
check_header() {
	local h
	read -r h < "$DIR/samples.csv"
	check "samples.csv header" "$([ "$h" = "$1" ]; echo $?)" "got: $h"
}
