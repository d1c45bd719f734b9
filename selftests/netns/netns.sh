#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# netns.sh - suite "netns" (host): siwx in network namespaces as containers
# use them, in a VM of its own (tools/vm/run, single topology without
# --netns): the RDMA core's exclusive mode can only be switched while no
# namespace but the initial one exists. The guest side is netns_guest.sh;
# this prints its TAP and the VM's own verdict (no kernel problem, every
# link deleted, rmmod siw clean).
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SIWX_NETNS_TIMEOUT
# (300 s, the VM's limit).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
# shellcheck source=../lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
# the debug kernel (SIWX_SUITE_TIMEOUT_SCALE 6) is about ten times slower:
# the VM's limit and the guest's waits for rping to go scale with it
SCALE=${SIWX_SUITE_TIMEOUT_SCALE:-1}
own_vm_suite netns 10 "$(( ${SIWX_NETNS_TIMEOUT:-300} * SCALE ))" \
	"RDMA_PREFIX=$PREFIX NETNS_GONE_S=$((30 * SCALE)) bash $HERE/netns_guest.sh > \$SIWX_RESULTS/netns.tap" \
	--share "$PREFIX"
