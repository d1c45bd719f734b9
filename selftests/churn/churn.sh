#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# churn.sh - suite "churn" (host): connect/disconnect cycles and siw module
# load/unload cycles with traffic, in a VM of its own (tools/vm/run
# --netns, as the single-VM boot: siw1 in namespace siwx1), because the
# guest side rmmods and insmods siw, which the shared single-VM boot
# cannot have. The guest side is churn_guest.sh; this prints its TAP and
# the VM's own verdict (no kernel problem, every link deleted, rmmod siw
# clean, on the debug kernel no kmemleak report with siw frames).
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SELFTEST_DIR (the
# churn program: $SELFTEST_DIR/bin/churn), SIWX_CHURN_CONNS (500),
# SIWX_CHURN_LOADS (30), SIWX_CHURN_SLAB_PER_CONN, SIWX_CHURN_SLAB_PER_LOAD,
# SIWX_CHURN_SLAB_SLACK (the guest's bounds), SIWX_CHURN_TIMEOUT (the VM's
# limit; default from the cycle counts), SIWX_VM_KVER (the guest kernel;
# tools/vm/run).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
BIN=${SELFTEST_DIR:-$TOP/build/selftests}/bin/churn
CONNS=${SIWX_CHURN_CONNS:-500}
LOADS=${SIWX_CHURN_LOADS:-30}
# TCG: a connection cycle takes 10-100 ms, a load cycle about 1.5 s, the
# wait for TIME_WAIT 60 s; with room to spare, and the debug kernel is
# about 5 times slower
LIMIT=$((240 + CONNS / 4 + LOADS * 6))
case ${SIWX_VM_KVER:-} in *siwx-debug*) LIMIT=$((LIMIT * 5)) ;; esac
# the guest gets the knobs on its command line (cmd.sh is all it runs)
ENV="SIWX_CHURN_CONNS=$CONNS SIWX_CHURN_LOADS=$LOADS"
[ -z "${SIWX_CHURN_SLAB_PER_CONN:-}" ] || ENV="$ENV SIWX_CHURN_SLAB_PER_CONN=$SIWX_CHURN_SLAB_PER_CONN"
[ -z "${SIWX_CHURN_SLAB_PER_LOAD:-}" ] || ENV="$ENV SIWX_CHURN_SLAB_PER_LOAD=$SIWX_CHURN_SLAB_PER_LOAD"
[ -z "${SIWX_CHURN_SLAB_SLACK:-}" ] || ENV="$ENV SIWX_CHURN_SLAB_SLACK=$SIWX_CHURN_SLAB_SLACK"
# shellcheck source=../lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
own_vm_suite churn 12 "${SIWX_CHURN_TIMEOUT:-$LIMIT}" \
	"RDMA_PREFIX=$PREFIX CHURN=$BIN $ENV bash $HERE/churn_guest.sh > \$SIWX_RESULTS/churn.tap" \
	--netns --share "$PREFIX" --share "$(dirname "$BIN")"
