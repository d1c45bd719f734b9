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
# seconds of a netem case), SIWX_FAULTS_CORRUPT_N,
# SIWX_FAULTS_CORRUPT_ROUNDS, SIWX_FAULTS_BOUND, SIWX_FAULTS_PEER_TIMEOUT,
# SIWX_FAULTS_SILENT_X10 (the guest's knobs), SIWX_FAULTS_TIMEOUT (the
# VM's limit), SIWX_VM_KVER.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
PREFIX=${RDMA_PREFIX:-$TOP/build/rdma-core/prefix}
BIN=${SELFTEST_DIR:-$TOP/build/selftests}/bin/faults_traffic
SECS=${SIWX_FAULTS_SECS:-4}
# TCG: the boot about 40 s, a case its seconds and a few of connecting
LIMIT=$((330 + SECS * 30))
# The debug kernel (KASAN, lockdep, kmemleak, gcov) moves a fiftieth of
# the traffic: more frames corrupted for a round to hit one, more slack
# for the silent peer's timer
case ${SIWX_VM_KVER:-} in *siwx-debug*)
	LIMIT=$((LIMIT * 5))
	: "${SIWX_FAULTS_CORRUPT_N:=100}" "${SIWX_FAULTS_SILENT_X10:=25}" ;;
esac
ENV="SIWX_FAULTS_SECS=$SECS"
for v in CORRUPT_N CORRUPT_ROUNDS BOUND PEER_TIMEOUT SILENT_X10; do
	v=SIWX_FAULTS_$v
	[ -z "${!v:-}" ] || ENV="$ENV $v=${!v}"
done
# shellcheck source=selftests/lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
own_vm_suite faults 15 "${SIWX_FAULTS_TIMEOUT:-$LIMIT}" \
	"RDMA_PREFIX=$PREFIX FT=$BIN $ENV bash $HERE/faults_guest.sh > \$SIWX_RESULTS/faults.tap" \
	--netns --share "$PREFIX" --share "$(dirname "$BIN")"
