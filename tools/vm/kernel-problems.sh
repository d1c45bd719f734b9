# SPDX-License-Identifier: GPL-2.0
#
# tools/vm/kernel-problems.sh: the kernel log lines that fail a test VM run.
# The one definition, sourced (bash) by tools/vm/guest-run, which scans the
# guest's dmesg with it, and by tools/vm/run, which scans the console of a
# guest that died before it could. See Documentation/vm.md.
#
# Sets KERNEL_PROBLEMS: one extended regexp (case-sensitive), the patterns
# below joined with '|'. Builtins only: guest-run sources it under TCG,
# where every exec counts.
#
# Deliberately absent: bare "stall" and "lockup". Every boot logs
# "9pnet: Installing 9P2000 support", and the watchdog and RCU log
# harmless lines about their "lockup detector" and "stall warnings":
# they would fail every run.

KERNEL_PROBLEM_PATTERNS=(
	'Oops'
	'BUG:'
	'WARNING:'
	'refcount_t'
	'list_add corruption'
	'list_del corruption'
	'general protection fault[,:]'	# the kernel's, not a user-space trap (fault ip:)
	'Call Trace'
	'Kernel panic'
	'KASAN:'
	'UBSAN:'
	'KFENCE:'
	'blocked for more than'		# hung task
	'detected stalls? on CPU'	# RCU
	'self-detected stall'		# RCU
	'soft lockup'
	'hard lockup'
	'hard LOCKUP'
)
printf -v KERNEL_PROBLEMS '%s|' "${KERNEL_PROBLEM_PATTERNS[@]}"
KERNEL_PROBLEMS=${KERNEL_PROBLEMS%|}
