#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# host_services.sh - suite "host_services": the server packages tools/deps.sh
# installs for the test VMs (knfsd's userspace, rpcbind, open-iscsi, LIO's
# targetcli) do not run their
# services on this machine. TAP output.
#
#   units.masked      each unit tools/deps.sh --server-units lists is masked
#                     (skipped without systemctl, or when the unit is not
#                     installed)
#   processes.none    no rpcbind, rpc.mountd, rpc.statd, rpc.idmapd,
#                     nfsdcld, iscsid or targetclid process runs here, no
#                     nfsd kernel thread
#   ports.none        nothing listens on 111 (rpcbind), 2049 or 20049 (nfsd)
#                     or 3260 (iSCSI)

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
echo "TAP version 13"
echo "1..3"
fails=0

mapfile -t units < <("$TOP/tools/deps.sh" --server-units)
if ! command -v systemctl >/dev/null; then
	echo "ok 1 host_services.units.masked # SKIP no systemctl"
else
	bad=() seen=0
	for u in "${units[@]}"; do
		st=$(systemctl is-enabled "$u" 2>/dev/null)
		case $st in
		masked|masked-runtime) seen=$((seen + 1)) ;;
		'') ;;	# not installed here
		*) bad+=("$u=$st") ;;
		esac
	done
	echo "# ${#units[@]} units, $seen masked${bad:+, not masked: ${bad[*]}}"
	if [ ${#bad[@]} = 0 ]; then echo "ok 1 host_services.units.masked"
	else echo "not ok 1 host_services.units.masked"; fails=$((fails + 1)); fi
fi

procs=$(ps -eo comm= | grep -xE 'rpcbind|rpc\.mountd|rpc\.statd|rpc\.idmapd|nfsdcld|nfsd|iscsid|targetclid' | sort | uniq -c)
if [ -z "$procs" ]; then
	echo "ok 2 host_services.processes.none"
else
	echo "# running here: $(echo "$procs" | tr -s ' \n' ' ')"
	echo "not ok 2 host_services.processes.none"; fails=$((fails + 1))
fi

ports=$(ss -Hltun 2>/dev/null | awk '{ print $5 }' | grep -E ':(111|2049|20049|3260)$' | sort -u)
if [ -z "$ports" ]; then
	echo "ok 3 host_services.ports.none"
else
	echo "# listening here: $(echo "$ports" | tr '\n' ' ')"
	echo "not ok 3 host_services.ports.none"; fails=$((fails + 1))
fi
[ "$fails" = 0 ]
