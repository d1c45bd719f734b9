# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# tap_out.sh - TAP output of shell suites with a fixed plan: the caller
# sets TESTS (the names, in order), TAP_PREFIX (e.g. "nfs") and LOG, and
# prints "1..${#TESTS[@]}" itself.
#
#   ok NAME [SKIP_REASON]    nok NAME [DIAGNOSTIC]
#   check NAME CMD...        ok when CMD succeeds (its output into LOG; on
#                            failure, the last say of CMD is the diagnostic)
#   skip_rest REASON         every test not reported yet fails; exit 1
#   say TEXT                 a TAP comment, and the line in LOG

n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n ${TAP_PREFIX:?}.$1${2:+ # SKIP $2}"; }
nok() {
	n=$((n + 1)); fails=$((fails + 1))
	[ -z "${2:-}" ] || echo "# $2"
	echo "not ok $n ${TAP_PREFIX:?}.$1"
}
check() {	# NAME CMD...: ok when CMD succeeds
	local name=$1 at why; shift
	at=$(stat -c %s "$LOG" 2>/dev/null || echo 0)
	if "$@" >>"$LOG" 2>&1; then ok "$name"; return 0; fi
	why=$(tail -c +$((at + 1)) "$LOG" 2>/dev/null | sed -n 's/^== //p' | tail -n 1)
	nok "$name" "$* failed${why:+: $why} (see $LOG)"
	return 1
}
# skip_rest REASON: every test not reported yet fails with REASON
skip_rest() {
	while [ "$n" -lt "${#TESTS[@]}" ]; do nok "${TESTS[$n]}" "$1"; done
	exit 1
}
say() { echo "# $*"; echo "== $*" >>"$LOG"; }
