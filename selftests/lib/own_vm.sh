# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# own_vm.sh - sourced by the host suites that need a test VM of their own
# (netns: no namespace but the initial one; deb: packages installed into
# the guest): boot it with tools/vm/run, relay the TAP the guest side wrote
# and add the VM's own verdict (no kernel problem, every link deleted,
# rmmod siw clean) as one more test.
#
#   own_vm_suite SUITE PLANNED TIMEOUT GUEST_CMD [tools/vm/run ARGS...]
#
# GUEST_CMD runs in the guest and writes its TAP to $SIWX_RESULTS/SUITE.tap;
# PLANNED is the test count to expect if the guest never printed its plan.
# Prints TAP; tools/vm/run's output goes to stderr (run.sh keeps it in
# RES/SUITE.log and shows its FAIL lines). Returns 1 if a test failed or
# went missing.
# Environment: SIWX_MODULE, SIWX_RESULTS (the run's results directory).

own_vm_suite() {
	local suite=$1 planned=$2 timeout=$3 cmd=$4 top out rc p n=0 failed=0 l
	shift 4
	top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
	out=${SIWX_RESULTS:-$top/build/selftests/results}/$suite
	mkdir -p "$out"
	"$top/tools/vm/run" --quiet --module "${SIWX_MODULE:-$top/build/siwx/siw.ko}" \
		--out "$out" --timeout "$timeout" "$@" -- "$cmd" >&2
	rc=$?
	echo "TAP version 13"
	echo "# tools/vm/run exit $rc (console $out/console.log, guest log $out/$suite.log)"
	p=$(grep -m1 -oE '^1\.\.[0-9]+' "$out/$suite.tap" 2>/dev/null | cut -c4-)
	planned=${p:-$planned}
	echo "1..$((planned + 1))"
	while IFS= read -r l; do
		case $l in
		"ok "*|"not ok "*)
			n=$((n + 1))
			# a TODO is a known defect, reported, not a failure (tap.sh)
			[[ $l == "not ok"* ]] && [[ $l != *" # TODO"* ]] && failed=1
			echo "$l" ;;
		"#"*) echo "$l" ;;
		esac
	done < <(cat "$out/$suite.tap" 2>/dev/null)
	while [ "$n" -lt "$planned" ]; do
		n=$((n + 1)) failed=1
		echo "not ok $n $suite.guest_test_$n # the guest did not report it"
	done
	n=$((n + 1))
	# tools/vm/run passes the command's status on when the run itself was
	# clean: the guest side's own 1 (a test failed) is counted above
	if [ "$rc" = 0 ] || { [ "$rc" = 1 ] && [ "$failed" = 1 ]; }; then
		echo "ok $n $suite.vm_run_clean"
	else
		failed=1
		echo "not ok $n $suite.vm_run_clean # tools/vm/run exit $rc"
		# shellcheck source=/dev/null
		. "$top/tools/vm/kernel-problems.sh"
		grep -E "siwx-vm: .*FAIL|$KERNEL_PROBLEMS" "$out/console.log" 2>/dev/null |
			head -n 10 | sed 's/^/#   /'
	fi
	return $failed
}
