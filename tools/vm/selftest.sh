#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# shellcheck disable=SC2016  # single-quoted $ is meant literally in this file
#
# selftest.sh [--module PATH] [--quick|--full] [--kver KVER]
#
# Self-check of the VM harness (tools/vm/run).  Boots:
#   basic     rdma link show + ibv_devices, environment, argv passed verbatim
#   status    a failing command's exit status comes back (exit 7 -> 7)
#   oops      a "WARNING:" in dmesg fails the run (-> 125)
#   perftest  ib_send_bw -R: server on siw0/192.168.77.1, client on siw1
#   pair      ib_send_bw -R between VM a (server) and VM b (client)
#   retry     a guest that crashes before its command is booted once more
#             (SIWX_VM_TEST_DIE_EARLY): single, and VM b of a pair
# --full adds:
#   timeout   a hanging command hits the guest limit (-> 124), teardown runs
#   hang      a guest that cannot end its command (PID 1 frozen): the
#             monitor dump and SysRq output before the hard limit (-> 124)
#   netns     ib_send_bw -R with siw1 in its own namespace (--netns)
# --quick runs basic, status and oops only.
#
# Results: build/vm/results/selftest-<stamp>/<test>.  Exit status 0 if all
# checks passed.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
RUN=$HERE/run

MODULE=$TOP/build/siwx/siw.ko
LEVEL=normal
KVER_ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--module) MODULE=${2:?--module needs a path}; shift ;;
	--kver)   KVER_ARGS=(--kver "${2:?--kver needs a version}"); shift ;;
	--quick)  LEVEL=quick ;;
	--full)   LEVEL=full ;;
	*) sed -n '4,/^# checks passed/s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
	esac
	shift
done

BASE=$TOP/build/vm/results/selftest-$(date +%Y%m%d-%H%M%S)
mkdir -p "$BASE"
FAILED=0
SUMMARY=()

# check NAME WANT_STATUS [run options] -- CMD...: one boot, expect a status.
check() {
	local name=$1 want=$2 t0 rc; shift 2
	echo "=== selftest $name (expect exit $want)"
	t0=$(date +%s)
	SIWX_VM_NO_LATEST=1 "$RUN" --quiet "${KVER_ARGS[@]}" --module "$MODULE" --out "$BASE/$name" "$@"
	rc=$?
	if [ "$rc" = "$want" ]; then
		LAST=ok
	else
		LAST="FAILED (exit $rc, wanted $want)"
	fi
	SUMMARY+=("$(printf '%-9s %-26s %4ss' "$name" "$LAST" $(( $(date +%s) - t0 )))")
	[ "$LAST" = ok ] || FAILED=1
	[ "$LAST" = ok ]
}
# expect NAME FILE REGEXP: a further check on a result file.
expect() {
	if ! grep -q -E -- "$3" "$2" 2>/dev/null; then
		echo "selftest $1: '$3' not found in $2"
		SUMMARY+=("$(printf '%-9s %s' "$1" "FAILED: no '$3' in ${2#"$BASE"/}")")
		FAILED=1
	fi
}

# --- basic: devices, environment, argv passed verbatim (quotes, $, ;, newline)
BASIC='rdma link show; ibv_devices
printf "%s\n" "$@" > "$SIWX_RESULTS/args.txt"
env | grep ^SIWX_ | sort > "$SIWX_RESULTS/env.txt"
pwd > "$SIWX_RESULTS/pwd.txt"
test "$(cat /proc/sys/kernel/hostname)" = siwx-single'
check basic 0 -- bash -c "$BASIC" argv0 'a b' '$HOME' "it's;\"x\"" $'two\nlines'
expect basic "$BASE/basic/console.log" 'link siw0/1 .*netdev veth0'
expect basic "$BASE/basic/console.log" 'link siw1/1 .*netdev veth1'
expect basic "$BASE/basic/console.log" 'siw1[[:space:]]+[0-9a-f]{16}'
printf '%s\n' 'a b' '$HOME' "it's;\"x\"" 'two' 'lines' > "$BASE/args.want"
cmp -s "$BASE/args.want" "$BASE/basic/args.txt" ||
	{ echo "selftest basic: argv not passed verbatim"; SUMMARY+=("basic     FAILED: argv mangled"); FAILED=1; }
expect basic "$BASE/basic/env.txt" '^SIWX_ADDR0=192\.168\.77\.1$'
expect basic "$BASE/basic/env.txt" '^SIWX_ADDR1=192\.168\.77\.2$'
expect basic "$BASE/basic/env.txt" '^SIWX_DEV1=siw1$'
expect basic "$BASE/basic/env.txt" "^SIWX_TOP=$TOP\$"
expect basic "$BASE/basic/pwd.txt" "^$TOP\$"
expect basic "$BASE/basic/guest-info.txt" '^uptime-at-command: '

# --- status: the command's exit status is propagated
check status 7 -- 'echo "failing on purpose"; exit 7'

# --- oops: a kernel problem in dmesg fails an otherwise clean run
check oops 125 -- 'echo "WARNING: CPU: 0 PID: 1 at selftest injected" > /dev/kmsg'
expect oops "$BASE/oops/verdict" 'kernel problem in dmesg: .*selftest injected'

if [ "$LEVEL" != quick ]; then
	# --- perftest: the acceptance test, single VM
	check perftest 0 --timeout 300 -- tools/vm/perftest-run single ib_send_bw
	expect perftest "$BASE/perftest/perftest-client.txt" '^ *65536 +1000 '

	# --- pair: two VMs over the QEMU socket link
	check pair 0 --timeout 400 --pair --peer-cmd 'tools/vm/perftest-run client ib_send_bw' \
		-- tools/vm/perftest-run server ib_send_bw
	expect pair "$BASE/pair/b/perftest-client.txt" '^ *65536 +1000 '

	# --- retry: a crash before the command is a boot failure, booted again
	SIWX_VM_TEST_DIE_EARLY=single check retry 0 -- 'echo second boot > "$SIWX_RESULTS/ran"'
	expect retry "$BASE/retry/boot-failure.log" 'test: crashing before the command'
	expect retry "$BASE/retry/ran" '^second boot$'
	SIWX_VM_TEST_DIE_EARLY=b check retry-pair 0 --timeout 400 --pair \
		--peer-cmd 'echo b > "$SIWX_RESULTS/ran"' -- 'echo a > "$SIWX_RESULTS/ran"'
	expect retry-pair "$BASE/retry-pair/b/boot-failure.log" 'test: crashing before the command'
	expect retry-pair "$BASE/retry-pair/a/ran" '^a$'
	expect retry-pair "$BASE/retry-pair/b/ran" '^b$'
	# the second crash is not retried: exit 125, a stopped at once
	SIWX_VM_TEST_DIE_EARLY=b SIWX_VM_TEST_DIE_TWICE=1 check retry-twice 125 --timeout 400 --pair \
		--peer-cmd 'true' -- 'sleep 300'
	expect retry-twice "$BASE/retry-twice/a/vm-verdict" 'stopped: VM b died before running its command'
fi

if [ "$LEVEL" = full ]; then
	# --- timeout: guest-side limit (--timeout minus margin), teardown still runs
	check timeout 124 --timeout 45 -- 'sleep 1000 & sleep 1000'
	expect timeout "$BASE/timeout/verdict" 'timed out'
	expect timeout "$BASE/timeout/dmesg.txt" 'SoftiWARP detached'

	# --- hang: a guest whose guest-run (PID 1) is frozen never ends its
	# command; 15 s before the hard limit run asks QEMU's monitor what it
	# does and sends SysRq l and w
	check hang 124 --timeout 90 -- 'mount -t cgroup2 none /sys/fs/cgroup &&
		mkdir /sys/fs/cgroup/hang && echo 1 > /sys/fs/cgroup/hang/cgroup.procs &&
		echo 1 > /sys/fs/cgroup/hang/cgroup.freeze; sleep 1000'
	expect hang "$BASE/hang/hang-dump.txt" 'VM status: running'
	expect hang "$BASE/hang/hang-dump.txt" '^RIP='
	expect hang "$BASE/hang/console.log" 'sysrq: Show Blocked State'
	expect hang "$BASE/hang/vm-verdict" 'hang-dump.txt'

	# --- netns: siw1 in its own namespace, traffic over the veth pair
	check netns 0 --timeout 300 --netns -- tools/vm/perftest-run single ib_send_bw
	expect netns "$BASE/netns/perftest-client.txt" '^ *65536 +1000 '
fi

echo
echo "selftest summary ($BASE):"
printf '  %s\n' "${SUMMARY[@]}"
for f in "$BASE"/perftest/perftest-client.txt "$BASE"/pair/b/perftest-client.txt \
	"$BASE"/netns/perftest-client.txt; do
	[ -r "$f" ] || continue
	bw=$(awk '/^ *65536 /{print $4 " MB/s"}' "$f")
	echo "  ib_send_bw 64 KiB ${f#"$BASE"/}: ${bw:-?}"
done
for d in "$BASE"/basic "$BASE"/perftest "$BASE"/pair/a; do
	[ -r "$d/guest-info.txt" ] &&
		echo "  guest uptime at first command (${d#"$BASE"/}): $(sed -n 's/^uptime-at-command: //p' "$d/guest-info.txt") s"
done
if [ "$FAILED" = 0 ]; then
	echo "selftest: all checks passed"
else
	echo "selftest: FAILED"
fi
exit "$FAILED"
