#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# failinject.sh - suite "failinject" (host): allocation failures injected
# into siw (the kernel's failslab and fail_page_alloc, restricted to call
# chains through siw's code) while verbs objects are created, connections
# set up and mixed verified traffic runs, in a VM of its own (tools/vm/run
# --netns, as the single-VM boot). The guest side is failinject_guest.sh;
# this prints its TAP and the VM's own verdict (no kernel problem, every
# link deleted, rmmod siw clean, kmemleak: no suspected leak with a siw
# frame).
#
# Fault injection needs CONFIG_FAILSLAB, CONFIG_FAIL_PAGE_ALLOC and
# CONFIG_FAULT_INJECTION_STACKTRACE_FILTER: the debug kernel has them
# (make check KERNEL=debug SUITES=failinject), Debian's kernel none. On a
# kernel without them the suite skips without booting.
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SELFTEST_DIR (the
# programs failinject_verbs, churn, faults_traffic), SIWX_FI_VERBS,
# SIWX_FI_CYCLES, SIWX_FI_SECS (the guest's knobs), SIWX_FI_TIMEOUT (the
# VM's limit), SIWX_VM_KVER (the guest kernel; tools/vm/run).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
BIN=${SELFTEST_DIR:-$TOP/build/selftests}/bin
KV=${SIWX_VM_KVER:-$(ls -1d /lib/modules/6.12.* 2>/dev/null | sed 's|.*/||' |
	grep -v siwx-debug | sort -V | tail -n 1)}
CFG=/boot/config-$KV
[ -r "$CFG" ] || CFG=/lib/modules/$KV/build/.config
for c in FAILSLAB FAIL_PAGE_ALLOC FAULT_INJECTION_DEBUG_FS FAULT_INJECTION_STACKTRACE_FILTER; do
	if ! grep -q "^CONFIG_$c=y" "$CFG" 2>/dev/null; then
		echo "TAP version 13"
		echo "1..1"
		echo "ok 1 failinject.fault_injection # SKIP kernel $KV has no CONFIG_$c (the debug kernel has: make check KERNEL=debug SUITES=failinject)"
		exit 0
	fi
done
VERBS=${SIWX_FI_VERBS:-200}
CYCLES=${SIWX_FI_CYCLES:-60}
SECS=${SIWX_FI_SECS:-15}
# the debug kernel under TCG: an iteration about 0.3 s, a connection
# cycle 1-2 s and up to 15 s for one that a failure made wait out a
# timeout, the traffic its seconds and reconnects; with room to spare
LIMIT=$((600 + VERBS * 2 + CYCLES * 20 + SECS * 20))
ENV="SIWX_FI_VERBS=$VERBS SIWX_FI_CYCLES=$CYCLES SIWX_FI_SECS=$SECS"
# shellcheck source=selftests/lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
own_vm_suite failinject 11 "${SIWX_FI_TIMEOUT:-$LIMIT}" \
	"RDMA_PREFIX=$PREFIX FIBIN=$BIN $ENV bash $HERE/failinject_guest.sh > \$SIWX_RESULTS/failinject.tap" \
	--netns --share "$PREFIX" --share "$BIN"
