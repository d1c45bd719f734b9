# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# guest_checks.sh - sourced by the guest sides of the suites with a VM of
# their own (churn, failinject): the checks after a phase, as TAP tests.
# The sourcing script defines ok NAME [COMMENT], nok NAME [DIAG], say
# TEXT, OUT (its results directory) and sources
# tools/vm/kernel-problems.sh (KERNEL_PROBLEMS) first.
#
#   dmesg_mark, dmesg_new MARK, kernel_log_test WHAT MARK
#   kmemleak_test WHAT PATTERN DESCRIPTION (KMEMLEAK: the debugfs file,
#       empty without kmemleak)
#   res_left

KMEMLEAK=/sys/kernel/debug/kmemleak
[ -w "$KMEMLEAK" ] || KMEMLEAK=

# dmesg_mark: the kernel log's length now; dmesg_new MARK: problem lines
# logged since MARK (empty: none)
dmesg_mark() { dmesg | wc -l; }
dmesg_new() { dmesg | tail -n "+$(($1 + 1))" | grep -E "$KERNEL_PROBLEMS" | head -n 10; }

# kmemleak_test WHAT PATTERN: test WHAT_kmemleak_clean (skipped without
# kmemleak): two scans (an object is reported only once its checksum held
# still for a scan), the suspected leaks since the last clear saved to
# OUT/kmemleak.WHAT; fails on any with a backtrace line matching PATTERN
# (awk); then clears for the next phase
kmemleak_test() {
	local f=$OUT/kmemleak.$1 all bad
	if [ -z "$KMEMLEAK" ]; then
		ok "$1_kmemleak_clean" "SKIP no kmemleak (debug kernel only)"
		return
	fi
	echo scan > "$KMEMLEAK"; echo scan > "$KMEMLEAK"
	cat "$KMEMLEAK" > "$f"
	echo clear > "$KMEMLEAK"
	all=$(grep -c '^unreferenced object' "$f")
	bad=$(awk -v pat="$2" '/^unreferenced object/ { if (hit) n++; hit = 0; next }
		$0 ~ pat { hit = 1 }
		END { if (hit) n++; print n + 0 }' "$f")
	say "$1: kmemleak: $all suspected leaks, $bad of them with $3"
	[ "$all" != 0 ] || rm -f "$f"
	if [ "$bad" = 0 ]; then
		ok "$1_kmemleak_clean"
	else
		nok "$1_kmemleak_clean" "$bad suspected leaks with $3 (kmemleak.$1):"
		head -n 20 "$f" | sed 's/^/#   /'
	fi
}

# kernel_log_test WHAT MARK: test WHAT_kernel_log_clean, no kernel problem
# line logged since MARK (dmesg_mark)
kernel_log_test() {
	local p
	p=$(dmesg_new "$2")
	if [ -z "$p" ]; then ok "$1_kernel_log_clean"; else nok "$1_kernel_log_clean" "${p//$'\n'/$'\n#   '}"; fi
}

# res_left: what rdma res still counts on siw devices ("" when nothing);
# waits up to 10 s (the last teardown may still be on its way)
res_left() {
	local i l left
	for ((i = 0; i < 20; i++)); do
		left=""
		while read -r l; do
			[[ $l == *" siw"* ]] || continue
			# "0: siw0: pd 0 cq 0 qp 0 cm_id 0 mr 0 ctx 0 srq 0"
			[[ $l =~ [a-z_]+\ [1-9] ]] && left="${left:+$left; }$l"
		done < <(rdma res show 2>&1)
		[ -z "$left" ] && return 0
		sleep 0.5
	done
	echo "$left"
}

