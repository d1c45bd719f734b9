#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Install the Debian 12 packages siwx needs to build, test and demo.
# Idempotent: installs only what is missing.
#
#   tools/deps.sh           install what is missing
#   tools/deps.sh --check   exit 1 if anything is missing, install nothing
#   tools/deps.sh --server-units
#                           the units of the server packages, masked here
#
# rdma-core 56.1 comes as a Debian *source* package from the trixie suite,
# so a deb-src entry for trixie is added, pointing at the same mirror the
# machine already uses for bookworm.
set -euo pipefail

pkgs=(
	# build: kernel module
	linux-image-6.12-amd64 linux-headers-6.12-amd64 linux-source-6.12
	gcc make bc flex bison libelf-dev kmod xz-utils rsync patch perl
	# build: rdma-core 56.1 and the tests
	cmake ninja-build cython3 python3-dev pkg-config dpkg-dev
	libnl-3-dev libnl-route-3-dev libudev-dev
	# Debian's stock rdma-core 44, for compatibility tests
	rdma-core ibverbs-providers ibverbs-utils rdmacm-utils
	libibverbs-dev librdmacm-dev
	# test VMs and tools run inside them
	qemu-system-x86 busybox-static iproute2 perftest tshark tcpdump iperf3
	# emulated NVDIMMs in the test VMs (tools/vm/run --pmem): the guest runs the host's ndctl
	ndctl
	# make bench plots
	gnuplot-nox
	# kernel storage ULPs over siwx (suite nvme): the host side and the I/O verifier
	nvme-cli fio
	# suite nvme_faults: offloads off on the veth pair for tc pedit/csum corruption
	ethtool
	# suite ipcm: siwx-ipcm.1 rendered and checked for groff warnings
	man-db groff-base
	# make deb and suite deb: the packages' checker; DKMS, which the test VM
	# (sharing this root) runs when it installs siwx-dkms
	lintian dkms
)
# Servers the test VMs run (they share this machine's root read-only): the
# packages are installed here, their services never started here. During
# their install a policy-rc.d refuses every start (unless the machine has
# one already), and afterwards their units are masked.
server_pkgs=(
	nfs-kernel-server	# suite nfs: rpc.nfsd, rpc.mountd, exportfs (and rpcbind)
	targetcli-fb open-iscsi	# suite iser: LIO's targetcli, iscsid and iscsiadm
)
server_units=(
	nfs-server.service nfs-kernel-server.service nfs-mountd.service nfsdcld.service
	nfs-idmapd.service nfs-blkmap.service rpc-statd.service rpc-statd-notify.service
	rpc-svcgssd.service rpc-gssd.service rpcbind.service rpcbind.socket
	iscsid.service iscsid.socket open-iscsi.service
	targetclid.service targetclid.socket rtslib-fb-targetctl.service
)
pkgs+=("${server_pkgs[@]}")
src_list=/etc/apt/sources.list.d/siwx-trixie-src.sources

missing() {
	local p
	for p in "${pkgs[@]}"; do
		case "$p" in '#'*) continue ;; esac
		dpkg-query -W -f='${db:Status-Status}\n' "$p" 2>/dev/null |
			grep -qx installed || echo "$p"
	done
}

have_src() {
	grep -rqs 'trixie' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null &&
		grep -rqs 'deb-src' /etc/apt/sources.list.d/*.sources /etc/apt/sources.list 2>/dev/null
}

if [ "${1:-}" = --server-units ]; then	# for the host_services suite
	printf '%s\n' "${server_units[@]}"
	exit 0
fi
need=$(missing | tr '\n' ' ')
if [ "${1:-}" = --check ]; then
	[ -z "$need" ] && have_src && exit 0
	echo "deps: missing: ${need:-deb-src trixie entry}"
	exit 1
fi

[ "$(id -u)" = 0 ] || { echo "deps: must run as root (apt-get)" >&2; exit 1; }

if ! have_src; then
	# The mirror this machine already uses for Debian (first URIs: or deb line).
	mirror=$(awk '/^URIs:/ { print $2; exit }' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
	[ -n "$mirror" ] || mirror=$(awk '$1 == "deb" && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) { print $i; exit } }' /etc/apt/sources.list 2>/dev/null || true)
	[ -n "$mirror" ] || { echo "deps: cannot find the Debian mirror in the apt sources" >&2; exit 1; }
	printf 'Types: deb-src\nURIs: %s\nSuites: trixie\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
		"$mirror" >"$src_list"
	echo "deps: added deb-src trixie entry ($src_list)"
	need="$need "
fi

if [ -n "$need" ]; then
	echo "deps: installing:$need"
	apt-get update -q
	ours_policy=
	if [ ! -e /usr/sbin/policy-rc.d ]; then
		printf '#!/bin/sh\n# tools/deps.sh: no service starts while siwx installs\nexit 101\n' \
			>/usr/sbin/policy-rc.d
		chmod 755 /usr/sbin/policy-rc.d
		ours_policy=1
	fi
	# shellcheck disable=SC2086
	DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $(missing) ||
		{ [ -z "$ours_policy" ] || rm -f /usr/sbin/policy-rc.d; exit 1; }
	[ -z "$ours_policy" ] || rm -f /usr/sbin/policy-rc.d
fi
# the server packages' units: masked, so that nothing starts them here
if command -v systemctl >/dev/null; then
	for u in "${server_units[@]}"; do
		[ "$(systemctl is-enabled "$u" 2>/dev/null)" = masked ] ||
			systemctl mask "$u" >/dev/null 2>&1 || true
	done
fi
echo "deps: all present"
