#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deb.sh - suite "deb" (host): the Debian packages of `make deb`
# (build/deb/out, Documentation/install.md). Here: lintian reports no
# error or warning (pedantic and experimental tags included; the overrides
# shipped in the packages say why each is there). Then a VM of its own runs
# deb_guest.sh: install with apt, DKMS builds siw.ko for the running kernel,
# modprobe, rdma link, perftest and a siwdv program through the package's
# rdma-core, Debian's rdma-core alongside, tshark with the dissector, removal. Its TAP follows, and the
# VM's own verdict.
#
# Without SIWX_DEB_DIR it first builds the packages itself (`make deb`,
# deb.build; its log in RESULTS/deb-build.log): make check no longer waits
# for them before the VMs start, the suite builds them in the early lane,
# alongside the single-VM boot (about 4 minutes off the critical path).
#
# Environment: SIWX_MODULE, SIWX_RESULTS, SIWX_DEB_DIR (build/deb/out,
# taken as it is),
# SIWX_DEB_TIMEOUT (1800 s, the VM's limit: the DKMS build runs under TCG;
# next to make check's other VMs it took 584-778 s, once over 900, and
# 1,079 s with two more VMs running on the 2-core host, when the 1,200 s
# limit then cut the suite off during its last test).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
DEB_DIR=${SIWX_DEB_DIR:-$TOP/build/deb/out}
OUT=${SIWX_RESULTS:-$TOP/build/selftests/results}
mkdir -p "$OUT"

build_rc=0 build_note="SIWX_DEB_DIR given: not built here"
if [ -z "${SIWX_DEB_DIR:-}" ]; then
	t0=$(date +%s)
	make -C "$TOP" --no-print-directory deb > "$OUT/deb-build.log" 2>&1 || build_rc=1
	build_note="make deb: $(( $(date +%s) - t0 )) s, log deb-build.log"
fi

# lintian first, as its own TAP stream
lint_rc=0
if [ "$build_rc" != 0 ]; then
	lint="make deb failed (see deb-build.log)"; lint_rc=1
elif ! ls "$DEB_DIR"/siwx-dkms_*_all.deb "$DEB_DIR"/siwx-rdma-core_*.deb >/dev/null 2>&1; then
	lint="no packages in $DEB_DIR (make deb)"; lint_rc=1
elif ! command -v lintian >/dev/null; then
	lint="lintian not installed (make deps)"; lint_rc=1
else
	lintian --pedantic -I -E --tag-display-limit 0 "$DEB_DIR"/siwx-dkms_*_all.deb \
		"$DEB_DIR"/siwx-rdma-core_*.deb "$DEB_DIR"/siwx-wireshark_*.deb \
		> "$OUT/deb-lintian.txt" 2>&1
	lint=$(grep -E '^[EWIPX]: ' "$OUT/deb-lintian.txt" | head -n 20)
	[ -z "$lint" ] || lint_rc=1
fi

# shellcheck source=../lib/own_vm.sh
. "$HERE/../lib/own_vm.sh"
own_vm_suite deb 14 "${SIWX_DEB_TIMEOUT:-1800}" \
	"bash $HERE/deb_guest.sh $DEB_DIR > \$SIWX_RESULTS/deb.tap" > "$OUT/deb-vm.tap"
vm_rc=$?
# one stream: the lintian test, then the VM's, renumbered
planned=$(grep -m1 -oE '^1\.\.[0-9]+' "$OUT/deb-vm.tap" | cut -c4-)
echo "TAP version 13"
echo "1..$(( ${planned:-15} + 2 ))"
if [ "$build_rc" = 0 ]; then
	echo "ok 1 deb.build # $build_note"
else
	echo "not ok 1 deb.build"
	tail -n 15 "$OUT/deb-build.log" | sed 's/^/#   /'
fi
if [ "$lint_rc" = 0 ]; then
	echo "ok 2 deb.lintian_clean"
else
	echo "not ok 2 deb.lintian_clean"
	printf '%s\n' "$lint" | sed 's/^/#   /'
fi
awk '/^(not )?ok [0-9]+ / { n = $0; sub(/ok [0-9]+ /, "ok " ($1 == "not" ? $3 : $2) + 2 " ", n); print n; next }
	/^#/ { print }' "$OUT/deb-vm.tap"
[ "$build_rc" = 0 ] && [ "$lint_rc" = 0 ] && [ "$vm_rc" = 0 ]
