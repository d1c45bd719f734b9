#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# kulp.sh - suite "kulp": siw driven by a kernel ULP. Loads
# siwx_ktest.ko (selftests/kulp/siwx_ktest.c), which runs all its cases in
# module_init through rdma_cm and logs TAP lines "siwx_ktest: ok N - name"
# to the kernel log. A kernel ULP's rdma_cm ids live in the initial network
# namespace, where siw1's address is not when the VM keeps siw1 in a
# namespace of its own (tools/vm/run --netns): the module gets a pair of its
# own, siwn0 and siwn1 on the veth pair vn0/vn1 (lib/ulp.sh, as the nvme
# and nfs suites), whose traffic crosses the pair: listener on TA, client
# bound to HA. This script re-emits the module's TAP and adds four checks
# of its own:
#   module.network          the pair came up (and traffic between its
#                           addresses is routed over it)
#   module.output_complete  the module's plan line came and every test in
#                           it reported
#   module.insmod_result    insmod succeeded exactly when no case failed;
#                           a failing run must be refused with EIO
#                           ("Input/output error"), any other load
#                           failure is a failure of its own
#   module.unload           rmmod of a loaded module works, and a refused
#                           load leaves nothing behind
# Runs in the test VM after siw.ko is loaded (guest.sh).
#
# Environment: SIWX_RESULTS (kernel log excerpt, kulp-net.log),
# SIWX_KTEST_KO (default: SIWX_BIN/../kmod/siwx_ktest.ko),
# SIWX_KULP_ITERATIONS (atomic cases, 2000), SIWX_KULP_SEED (0: random),
# SIWX_KULP_GROUPS (basic,imm,atomic,flush,zread; see README.md),
# SIWX_KULP_PORT (18990),
# SIWX_KULP_TIMEOUT_MS (per wait, 10000), SIWX_KULP_LIMIT (insmod, 240 s).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
LOG=$OUT/kulp-net.log
# shellcheck source=../lib/ulp.sh
. "$HERE/../lib/ulp.sh"
A0=$TA A1=$HA
BIN=${SIWX_BIN:-$TOP/build/selftests/bin}
KO=${SIWX_KTEST_KO:-$(dirname "$BIN")/kmod/siwx_ktest.ko}
LIMIT=${SIWX_KULP_LIMIT:-240}
MOD=siwx_ktest

echo "TAP version 13"

if [ ! -r "$KO" ]; then
	echo "1..1"
	echo "# $KO missing (make selftests)"
	echo "not ok 1 module.present"
	exit 1
fi
: > "$LOG"
if ! net_up >>"$LOG" 2>&1; then
	echo "1..1"
	echo "# the veth pair, its rules or siwn0/siwn1 did not come up:"
	sed 's/^/#   /' "$LOG"
	net_down
	echo "not ok 1 module.network"
	exit 1
fi
trap net_down EXIT

params=(
	"server_addr=$A0" "client_addr=$A1"
	"port=${SIWX_KULP_PORT:-18990}"
	"iterations=${SIWX_KULP_ITERATIONS:-2000}"
	"seed=${SIWX_KULP_SEED:-0}"
	"groups=${SIWX_KULP_GROUPS:-basic,imm,atomic,flush,zread}"
	"timeout_ms=${SIWX_KULP_TIMEOUT_MS:-10000}"
)

pre=()
if [ -d /sys/module/$MOD ]; then
	pre+=("# $MOD was loaded before the run: removing it")
	rmmod $MOD 2>&1 | sed 's/^/# /'
fi
modprobe rdma_cm 2>/dev/null

# everything after this marker in the kernel log belongs to this run
token="kulp-$$-$(date +%s%N)"
echo "<6>siwx-kulp: $token start" > /dev/kmsg
t0=$(date +%s)
errf=$OUT/kulp-insmod.err
# SIGKILL makes the module's waits give up early (fatal_signal_pending)
timeout -s KILL "$LIMIT" insmod "$KO" "${params[@]}" > "$errf" 2>&1
rc=$?
secs=$(( $(date +%s) - t0 ))
loaded=0
[ -d /sys/module/$MOD ] && loaded=1

klog=$OUT/kulp-dmesg.txt
dmesg --notime 2>/dev/null | sed -n "/siwx-kulp: $token start/,\$p" > "$klog"
[ -s "$klog" ] || dmesg | sed 's/^\[[^]]*\] //' | sed -n "/siwx-kulp: $token start/,\$p" > "$klog"

# ---------------------------------------------------------------- module TAP
lines=() n=0 fails=0 plan='' bail=''
while IFS= read -r l; do
	case $l in
	"$MOD: "*) l=${l#"$MOD: "} ;;
	*) continue ;;
	esac
	case $l in
	"TAP version"*) ;;
	"1.."*) plan=${l#1..} ;;
	"ok "*|"not ok "*)
		n=$((n + 1))
		if [[ $l == "not ok "* ]]; then
			st="not ok" rest=${l#not ok }
			fails=$((fails + 1))
		else
			st=ok rest=${l#ok }
		fi
		rest=${rest#* }		# the module's number
		rest=${rest#- }
		lines+=("$st $n $rest")
		;;
	"Bail out!"*) bail=$l; lines+=("# module: $l") ;;
	"#"*) lines+=("$l") ;;
	*) lines+=("# $l") ;;
	esac
done < "$klog"

echo "1..$((n + 4))"
printf '%s\n' "${pre[@]}" "${lines[@]}"
echo "# insmod $(basename "$KO") ${params[*]}: exit $rc after ${secs}s"
sed 's/^/# insmod: /' "$errf"

k=$n own_fail=0
ok() { k=$((k + 1)); echo "ok $k $1"; }
nok() { k=$((k + 1)); echo "not ok $k $1"; own_fail=1; }

ok module.network

# the module's own plan must have come, and cover exactly what reported
if [ -n "$plan" ] && [ "$plan" = "$n" ] && [ "$n" -gt 0 ]; then
	ok module.output_complete
else
	echo "# module plan '${plan:-none}', $n results${bail:+, $bail} (log: $klog)"
	nok module.output_complete
fi

# insmod must succeed exactly when every case passed
complete=0
[ -n "$plan" ] && [ "$plan" = "$n" ] && [ "$n" -gt 0 ] && complete=1
if [ "$rc" = 0 ]; then
	if [ "$fails" = 0 ] && [ "$complete" = 1 ] && [ "$loaded" = 1 ]; then
		ok module.insmod_result
	else
		echo "# insmod succeeded, but $fails case(s) failed, output complete: $complete, loaded: $loaded"
		nok module.insmod_result
	fi
elif grep -q "Input/output error" "$errf" && [ "$fails" -gt 0 ] &&
     [ "$complete" = 1 ]; then
	echo "# insmod refused with EIO after $fails failed case(s), as it must be"
	ok module.insmod_result
else
	echo "# insmod failed unexpectedly (exit $rc, $fails failed case(s), output complete: $complete)"
	nok module.insmod_result
fi

# unload
if [ "$loaded" = 1 ]; then
	out=$(rmmod $MOD 2>&1)
	r=$?
	[ -z "$out" ] || echo "# rmmod: ${out//$'\n'/ }"
	if [ "$r" = 0 ] && [ ! -d /sys/module/$MOD ]; then
		ok module.unload
	else
		nok module.unload
	fi
elif [ -d /sys/module/$MOD ]; then
	nok module.unload
else
	ok module.unload
fi

[ "$fails" = 0 ] && [ "$own_fail" = 0 ]
