#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# iser_pair.sh - suite "iser_pair": iSER between two VMs. VM a is the
# target: LIO (targetcli-fb, ib_isert) exporting a brd RAM disk on its
# portal $SIWX_LOCAL:3260 with iSER enabled, on siwx with module parameter
# port_map and Debian's iwpmd (the portal's iSCSI/TCP listener keeps the
# port; siw listens on the one iwpmd maps it to). VM b is the initiator:
# Debian's open-iscsi (iscsid, iscsiadm, ib_iser) with iwpmd, which asks
# a's iwpmd for the mapped port. Pair orders ours-ours and ours-upstream:
# the initiator on siwx, and on the unmodified upstream siw (which
# connects to the mapped remote address as well). Upstream siw cannot be
# the target: it opts out of port mapping, and LIO's iSER listener cannot
# have the port (Documentation/ulps.md). TAP output; both VMs run this
# script (SIWX_ROLE=a|b).
#
# a: modules, iwpmd and port_map, siw0 added again (port_map applies to
#    devices added while it is set), the target, then tells b it is ready
#    (selftests/nvme/pair_sync.py, plain TCP on the pair's wire) and waits
#    for b's "done"; its RDMA resources back where they were; teardown.
# b: modules, iwpmd, waits for a, discovery, login over iser, the QP on
#    siw0, the connection on a's mapped port, fio with --verify=crc32c
#    (random 4 KiB at queue depth 16, sequential 128 KiB at 4), logout,
#    login and logout once more, tells a it is done.
#
# Usage (guest.sh): iser_pair.sh IW_CM_KO (build/rdma_cm/iw_cm.ko, with the
# port mapper's registration fix, in both VMs; Debian's back at the end)
# Environment: SIWX_ROLE, SIWX_LOCAL, SIWX_PEER, SIWX_RESULTS,
# SIWX_NETDEV0, ISER_FIO_SIZE (4M), SIWX_ISER_SYNC_PORT (18710).

set -u
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
ROLE=${SIWX_ROLE:-}
FSIZE=${ISER_FIO_SIZE:-4M}
SYNC=${SIWX_ISER_SYNC_PORT:-18710}
IQN=iqn.2026-12.org.siwx:iser-pair
LOG=$OUT/iser_pair.log
RES_DEVS=siw0
TAP_PREFIX=iser_pair
HERE=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin:/sbin
PY=$(command -v /usr/bin/python3 || command -v python3)
PSYNC=("$PY" "$HERE/../nvme/pair_sync.py")

echo "TAP version 13"
case $ROLE in
a) TA=${SIWX_LOCAL:-192.168.78.1} HA=${SIWX_PEER:-192.168.78.2}
   TESTS=(setup.iw_cm setup.modules setup.portmap setup.target peer.ready
	  peer.done leak.rdma_res cleanup stock_iw_cm) ;;
b) TA=${SIWX_PEER:-192.168.78.1} HA=${SIWX_LOCAL:-192.168.78.2}
   TESTS=(setup.iw_cm setup.modules setup.portmap peer.ready discovery login
	  path.siw0 path.mapped_port fio.randwrite_4k_qd16 fio.write_128k_qd4
	  logout relogin leak.rdma_res peer.done cleanup stock_iw_cm) ;;
*) echo "1..0 # SKIP pair topology only (SIWX_ROLE '$ROLE' is not a or b)"; exit 0 ;;
esac
echo "1..${#TESTS[@]}"
# shellcheck source=selftests/lib/tap_out.sh
. "$HERE/../lib/tap_out.sh"
# shellcheck source=selftests/lib/ulp.sh
. "$HERE/../lib/ulp.sh"
# shellcheck source=selftests/iser/iser_lib.sh
. "$HERE/iser_lib.sh"
: >"$LOG"
for t in $ISER_TOOLS; do
	command -v "$t" >/dev/null || skip_rest "$t missing (make deps: targetcli-fb, open-iscsi, fio, rdma-core, rdmacm-utils)"
done
say "role $ROLE, order ${SIWX_PAIR_ORDER:-?}, siw $(cat /sys/module/siw/version 2>/dev/null || echo upstream)"
trap portmap_down EXIT
IW_CM_KO=${1:-}
check setup.iw_cm swap_iw_cm "${IW_CM_KO:?usage: iser_pair.sh IW_CM_KO}"
# both waits times SIWX_SUITE_TIMEOUT_SCALE (the debug kernel)
scale=${SIWX_SUITE_TIMEOUT_SCALE:-1}

# ---------------------------------------------------------------- a
if [ "$ROLE" = a ]; then
	ready=ready
	check setup.modules load_modules "${TARGET_MODS[@]}" || ready=fail
	# port_map applies to devices added while it is set: siw0 again
	siw0_mapped() {
		portmap_up on || return 1
		rdma link delete siw0 || return 1
		rdma link add siw0 type siw netdev "${SIWX_NETDEV0:-veth0}"
	}
	check setup.portmap siw0_mapped || ready=fail
	if [ "$ready" = ready ]; then
		check setup.target target_up || ready=fail
	else
		nok setup.target "modules or port mapping missing"
	fi
	BASE=$(rdma_res)
	say "rdma res with the target listening: $BASE"
	pair_a_wait "$ready" 400
	a_cleanup() {
		target_down || return 1
		portmap_down
		unload_modules "${TARGET_UNLOAD[@]}"
	}
	check cleanup a_cleanup
	check stock_iw_cm swap_iw_cm stock
	[ "$fails" = 0 ]
	exit
fi

# ---------------------------------------------------------------- b
done_to_a() {	# tell a we are done (a waits for it before its teardown)
	"${PSYNC[@]}" ask "$TA" $((SYNC + 1)) 60 "done fails=$fails" >>"$LOG" 2>&1
}
check setup.modules load_modules "${INITIATOR_MODS[@]}"
# only iwpmd: an initiator's own ports need no mapping, and upstream siw
# has no port_map
check setup.portmap portmap_up
if line=$("${PSYNC[@]}" ask "$TA" "$SYNC" $((240 * scale)) hello 2>>"$LOG") && [ "$line" = ready ]; then
	ok peer.ready
else
	nok peer.ready "a is not ready (${line:-nothing})"
	while [ "$n" -lt $(( ${#TESTS[@]} - 3 )) ]; do nok "${TESTS[$n]}" "a is not ready"; done
	if done_to_a; then ok peer.done; else nok peer.done; fi
	nok cleanup "not run"
	nok stock_iw_cm "not run"
	exit 1
fi
BASE=$(rdma_res)
initiator_up >>"$LOG" 2>&1
discovery_test
check login login
qp_on_siw0() {
	local qps
	qps=$(rdma res show qp link siw0 2>/dev/null | grep -c 'state RTS')
	say "RTS QPs on siw0: $qps"
	[ "$qps" -ge 1 ]
}
check path.siw0 qp_on_siw0
check path.mapped_port mapped_port no
check fio.randwrite_4k_qd16 fio_job randwrite_4k_qd16 randwrite 4k 16
check fio.write_128k_qd4 fio_job write_128k_qd4 write 128k 4
check logout logout
# a second session: what the first one wrote, read back
relogin() {
	login || return 1
	fio_job write_128k_qd4 write 128k 4 --verify_only=1 || { logout; return 1; }
	logout
}
check relogin relogin
sleep 1
now=$(rdma_res)
if [ "$(nocq "$now")" = "$(nocq "$BASE")" ]; then
	ok leak.rdma_res
else
	nok leak.rdma_res "rdma res after logout: $now; before: $BASE"
fi
if done_to_a; then ok peer.done; else nok peer.done "a did not take 'done'"; fi
b_cleanup() {
	iscsiadm -m node -o delete >/dev/null 2>&1
	pkill -x iscsid
	portmap_down
	unload_modules "${INITIATOR_MODS[@]}"
}
check cleanup b_cleanup
check stock_iw_cm swap_iw_cm stock
[ "$fails" = 0 ]
