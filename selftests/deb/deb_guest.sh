#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# deb_guest.sh DEB_DIR - suite "deb", the guest side (run by deb.sh in a VM
# of its own): the packages of `make deb` installed and removed the way a
# user would. The VM shares the host's root (overlay on tmpfs): dkms, the
# kernel headers and gcc are there, apt needs no network. TAP to stdout,
# the details in $SIWX_RESULTS/deb.log.
#
#   prereqs                dkms, the running kernel's headers, Debian's
#                          rdma-core; no siw.ko for the kernel yet
#   install                apt-get install ./siwx-dkms_*.deb
#                          ./siwx-rdma-core_*.deb ./siwx-wireshark_*.deb
#                          (nothing to download)
#   dkms_built             dkms status: siwx installed for the running kernel
#   module_version         modinfo siw: updates/dkms, the version of make deb
#   modprobe               modprobe siw, /sys/module/siw/version the same
#   rdma_link              rdma link add siw0/siw1 on the boot's veth pair
#   siwx_env               siwx-env runs Debian's ib_send_bw on the package's
#                          libibverbs; the package's ibv_devices (RUNPATH)
#                          lists both devices
#   perftest               siwx-env tools/vm/perftest-run single ib_send_bw
#   siwdv_program          a program built with the package's pkg-config,
#                          siwdv.h and libsiw sees immediate data and atomics
#   stock_rdma_core        Debian's own ibv_devinfo drives the module
#   wireshark_plugin       tshark lists siwx.lua and decodes Immediate Data,
#                          Flush and Atomic Write in a stored capture
#   refuses_other_kernel   dkms build for a 6.1 kernel: exit 77, the
#                          dkms.conf's message
#   remove                 apt-get remove: packages, DKMS entry, siw.ko,
#                          /usr/lib/siwx, siwx-env and the dissector gone
#   debian_rdma_core_intact  dpkg --verify of Debian's rdma-core packages is
#                          clean; Debian's ibv_devinfo on the project's
#                          siw.ko (insmod) still works
set -u
DEB_DIR=${1:?usage: deb_guest.sh DEB_DIR}
TOP=$(cd "$(dirname "$0")/../.." && pwd)
LOG=${SIWX_RESULTS:-/tmp}/deb.log
: > "$LOG"
K=$(uname -r)
VER=$(cat "$DEB_DIR/siwx-version" 2>/dev/null)
DKMS_VER=${VER//-/.}
N=0 FAILED=0
ok() { N=$((N + 1)); echo "ok $N deb.$1${2:+ # $2}"; }
nok() { N=$((N + 1)); FAILED=1; echo "not ok $N deb.$1"; [ -z "${2:-}" ] || echo "#   $2"; }
# shows IN's lines (to the log) and succeeds when one matches ERE
shows() { local o; o=$(cat); echo "$o"; grep -q -E "$1" <<< "$o"; }
check() {	# NAME CMD...: ok when CMD succeeds (its output in the log)
	local name=$1
	shift
	echo "== $name: $*" >> "$LOG"
	if "$@" >> "$LOG" 2>&1; then ok "$name"; else nok "$name" "see $LOG ($name)"; fi
}
say() { echo "# $*"; echo "== $*" >> "$LOG"; }
unload() {
	local l
	for l in siw0 siw1; do
		[ ! -e "/sys/class/infiniband/$l" ] || rdma link delete "$l"
	done
	[ ! -e /sys/module/siw ] || rmmod siw
}
debian_pkgs=(rdma-core ibverbs-providers ibverbs-utils libibverbs1 librdmacm1)

echo "TAP version 13"
echo "1..14"

# The guest stands for a fresh machine with one kernel, the running one.
# The host's /lib/modules may hold others (a debug kernel of
# tools/debug-kernel with its headers): the package's postinst would
# build siw.ko for each of them too, under TCG, and run into the suite's
# time limit. Hide them from DKMS behind an empty read-only tmpfs; the
# host's tree is not touched.
for d in /lib/modules/*; do
	[ "${d##*/}" != "$K" ] && [ -d "$d" ] || continue
	if mount -t tmpfs -o ro,size=4k siwx-hidden "$d"; then
		echo "# kernel ${d##*/} hidden from DKMS (not the running one)"
	else
		echo "# could not hide kernel ${d##*/} from DKMS"
	fi
done

prereqs() {
	dpkg -s dkms | grep -q '^Status: install ok installed' || { echo "dkms not installed"; return 1; }
	[ -e "/lib/modules/$K/build/Makefile" ] || { echo "no headers for $K"; return 1; }
	dpkg -s "${debian_pkgs[@]}" > /dev/null || return 1
	[ -n "$VER" ] && ls "$DEB_DIR"/siwx-dkms_*.deb "$DEB_DIR"/siwx-rdma-core_*.deb \
		"$DEB_DIR"/siwx-wireshark_*.deb || return 1
	! tshark -G plugins 2>/dev/null | grep -q siwx.lua || { echo "siwx.lua already installed"; return 1; }
	! modinfo -k "$K" -n siw 2>/dev/null || { echo "a siw.ko is already installed"; return 1; }
	unload
}
check prereqs prereqs

install_pkgs() {
	local t0=$EPOCHSECONDS
	# no man-db index rebuild: slow under TCG, nothing to check
	rm -f /var/lib/man-db/auto-update
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
		-o APT::Sandbox::User=root "$DEB_DIR/siwx-dkms_${DKMS_VER}_all.deb" \
		"$DEB_DIR"/siwx-rdma-core_"$DKMS_VER"_*.deb \
		"$DEB_DIR"/siwx-wireshark_"$DKMS_VER"_*.deb || return 1
	INSTALL_SECS=$((EPOCHSECONDS - t0))
}
INSTALL_SECS="?"
check install install_pkgs
echo "# apt-get install took ${INSTALL_SECS} s (the DKMS build of siw.ko under TCG included)"

dkms_built() {
	local o
	o=$(dkms status siwx)
	echo "$o"
	grep -qF "siwx/$DKMS_VER, $K, $(uname -m): installed" <<< "$o"
}
check dkms_built dkms_built

module_version() {
	local path v
	path=$(modinfo -k "$K" -n siw) || return 1
	v=$(modinfo -k "$K" -F version siw)
	echo "modinfo: $path version $v (make deb: $VER)"
	[[ $path == "/lib/modules/$K/updates/dkms/siw.ko"* ]] && [ "$v" = "$VER" ]
}
check module_version module_version

check modprobe bash -c "modprobe siw && [ \"\$(cat /sys/module/siw/version)\" = '$VER' ]"

check rdma_link bash -c 'rdma link add siw0 type siw netdev veth0 && rdma link add siw1 type siw netdev veth1 && rdma link show'

siwx_env() {
	local l
	# shellcheck disable=SC2016  # expanded by the inner shell, under siwx-env
	l=$(siwx-env sh -c 'ldd "$(command -v ib_send_bw)"') || return 1
	echo "$l"
	grep -q '/usr/lib/siwx/lib/libibverbs.so.1' <<< "$l" || return 1
	/usr/lib/siwx/bin/ibv_devices | shows siw1 || return 1
	ldd /usr/lib/siwx/bin/ibv_devices | grep -q '/usr/lib/siwx/lib/libibverbs.so.1'
}
check siwx_env siwx_env

check perftest siwx-env "$TOP/tools/vm/perftest-run" single ib_send_bw -n 200

siwdv_program() {
	local b=/tmp/siwdv_caps
	# shellcheck disable=SC2016  # expanded by the inner shell, under siwx-env
	siwx-env sh -c 'gcc -O2 -Wall -o "$1" "$2" $(pkg-config --cflags --libs libibverbs) -lsiw' \
		sh "$b" "$TOP/selftests/deb/siwdv_caps.c" || return 1
	siwx-env "$b" siw0
}
check siwdv_program siwdv_program

stock() { /usr/bin/ibv_devinfo -d siw0 | shows 'transport:.*iWARP'; }
check stock_rdma_core stock

# tshark finds the dissector by itself and decodes the stored capture's
# extensions with it
wireshark_plugin() {
	local names
	tshark -G plugins 2>/dev/null | shows 'siwx\.lua' || return 1
	names=$(tshark -n -o tcp.try_heuristic_first:TRUE --disable-heuristic rpcrdma_iwarp \
		--disable-heuristic smb_direct_iwarp -r "$TOP/selftests/wireshark/pcaps/siwx.pcap.gz" \
		-Y siwx -T fields -e siwx.rdmap.name 2>&1 | sort -u | tr '\n' ' ')
	echo "siwx.rdmap.name: $names"
	for n in IMM FLUSH_REQ ATOMIC_WRITE_REQ; do
		[[ " $names " == *" $n "* ]] || { echo "no $n"; return 1; }
	done
}
check wireshark_plugin wireshark_plugin

refuses() {
	local out rc
	out=$(dkms build -m siwx -v "$DKMS_VER" -k 6.1.0-99-amd64 2>&1)
	rc=$?
	echo "$out"
	echo "dkms build for 6.1.0-99-amd64: exit $rc"
	[ "$rc" = 77 ] && grep -q 'builds for 6.12 kernels only' <<< "$out"
}
check refuses_other_kernel refuses

remove_pkgs() {
	local s
	unload || return 1
	DEBIAN_FRONTEND=noninteractive apt-get remove -y -q siwx-dkms siwx-rdma-core siwx-wireshark ||
		return 1
	for p in siwx-dkms siwx-rdma-core siwx-wireshark; do
		s=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null)
		[ "$s" = not-installed ] || [ "$s" = config-files ] || [ -z "$s" ] ||
			{ echo "$p: $s"; return 1; }
	done
	[ -z "$(dkms status siwx)" ] || { dkms status siwx; return 1; }
	! ls /lib/modules/"$K"/updates/dkms/siw.ko* 2>/dev/null || return 1
	! modinfo -k "$K" siw 2>/dev/null || { echo "modinfo still finds siw"; return 1; }
	! tshark -G plugins 2>/dev/null | grep -q siwx.lua || { echo "siwx.lua still loaded"; return 1; }
	[ ! -e /usr/lib/siwx ] && [ ! -e /usr/bin/siwx-env ] && [ ! -e "/usr/src/siwx-$DKMS_VER" ]
}
check remove remove_pkgs

intact() {
	local v
	v=$(dpkg --verify "${debian_pkgs[@]}" 2>&1)
	[ -z "$v" ] || { echo "dpkg --verify: $v"; return 1; }
	insmod "$SIWX_MODULE" && rdma link add siw0 type siw netdev veth0 || return 1
	/usr/bin/ibv_devinfo -d siw0 | grep -q "transport:.*iWARP"
}
check debian_rdma_core_intact intact
exit "$FAILED"
