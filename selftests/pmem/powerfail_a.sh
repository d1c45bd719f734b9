#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# VM a of suite powerfail: pmem_flush (the initiator) with a capture of its
# connection on the pair link, $SIWX_RESULTS/powerfail.pcap, which the host
# decodes (powerfail.sh). TAP from pmem_flush on stdout.
#
#   powerfail_a.sh PROG [ARGS...]
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${SIWX_RESULTS:-/results}
PORT=${SIWX_PMEM_PORT:-18520}
# shellcheck source=../lib/capture.sh
. "$HERE/../lib/capture.sh"
# shellcheck disable=SC2034  # read by capture.sh
CAP_IFACE=${SIWX_NETDEV0:-eth0}
cap=0
cap_start powerfail "tcp port $PORT" -P && cap=1
"$@"
rc=$?
if [ "$cap" = 1 ]; then
	cap_stop "$OUT/powerfail.pcap"
	echo "$CAP_SUMMARY"
else
	echo "# dumpcap did not start: $(tr '\n' ' ' < "$CAP_LOG")"
fi
exit "$rc"
