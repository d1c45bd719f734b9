#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# faults.sh - suite "faults" (host): mixed verified traffic under netem
# faults, MPA CRC corruption and TCP resets, in a VM of its own
# (tools/vm/run --netns: siw1 in namespace siwx1, traffic across the veth
# pair), because the faults on the veth pair would hit any other suite's
# traffic in the shared single-VM boot. The guest side is
# faults_guest.sh; this prints its TAP and the VM's own verdict (no kernel
# problem, every link deleted, rmmod siw clean).
#
# Environment: SIWX_MODULE, SIWX_RESULTS, RDMA_PREFIX, SELFTEST_DIR (the
# program: $SELFTEST_DIR/bin/faults_traffic), SIWX_FAULTS_SECS (4: traffic
# seconds of a netem case), SIWX_FAULTS_CORRUPT_N, SIWX_FAULTS_BOUND,
# SIWX_FAULTS_PEER_TIMEOUT (the guest's knobs), SIWX_FAULTS_TIMEOUT (the
# VM's limit), SIWX_VM_KVER.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
BIN=${SELFTEST_DIR:-$TOP/build/selftests}/bin/faults_traffic
SECS=${SIWX_FAULTS_SECS:-4}
# TCG: the boot about 40 s, a case its seconds and a few of connecting
LIMIT=$((330 + SECS * 30))
case ${SIWX_VM_KVER:-} in *siwx-debug*) LIMIT=$((LIMIT * 5)) ;; esac
ENV="SIWX_FAULTS_SECS=$SECS"
[ -z "${SIWX_FAULTS_CORRUPT_N:-}" ] || ENV="$ENV SIWX_FAULTS_CORRUPT_N=$SIWX_FAULTS_CORRUPT_N"
[ -z "${SIWX_FAULTS_BOUND:-}" ] || ENV="$ENV SIWX_FAULTS_BOUND=$SIWX_FAULTS_BOUND"
[ -z "${SIWX_FAULTS_PEER_TIMEOUT:-}" ] || ENV="$ENV SIWX_FAULTS_PEER_TIMEOUT=$SIWX_FAULTS_PEER_TIMEOUT"
# shellcheck source=selftests/lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
own_vm_suite faults 15 "${SIWX_FAULTS_TIMEOUT:-$LIMIT}" \
	"RDMA_PREFIX=$PREFIX FT=$BIN $ENV bash $HERE/faults_guest.sh > \$SIWX_RESULTS/faults.tap" \
	--netns --share "$PREFIX" --share "$(dirname "$BIN")"
