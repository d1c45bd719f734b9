# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# nfs_lib.sh - sourced by suite nfs (nfs_rdma.sh) and the ULP benchmark
# (tools/bench/guest-ulp-bench.sh): knfsd with the RDMA listener on 20049
# exporting an ext4 file system on a RAM disk, the kernel client's mount.
#
#   server_up           mkfs NFS_DEV (default /dev/ram0), mount it on EXPORT,
#                       rpcbind, rpc.mountd, rpc.nfsd 4 with "rdma 20049"
#                       added to the TCP listener; the export for TA's /24
#   server_down         all of it stopped, EXPORT unmounted (MNT first)
#   nfs_mount rdma|tcp  NFS 4.2 from TA:/ on MNT over the transport
#   nfs_umount
#
# The caller sets TA, EXPORT, MNT (see lib/ulp.sh for the addresses).

NFS_DEV=${NFS_DEV:-/dev/ram0}

server_up() {
	mkfs.ext4 -q -F "$NFS_DEV" || return 1
	mkdir -p "$EXPORT" "$MNT" /var/lib/nfs/v4recovery || return 1
	mount "$NFS_DEV" "$EXPORT" || return 1
	chmod 1777 "$EXPORT"
	mountpoint -q /proc/fs/nfsd || mount -t nfsd nfsd /proc/fs/nfsd || return 1
	# a short grace period: a fresh server refuses OPENs during it
	echo 10 >/proc/fs/nfsd/nfsv4leasetime
	echo 10 >/proc/fs/nfsd/nfsv4gracetime
	rpcbind -w || return 1
	# fsid=0: the export is NFSv4's root; the guest's / is an overlay,
	# which knfsd cannot walk through to reach a deeper export
	exportfs -o rw,no_root_squash,insecure,no_subtree_check,fsid=0 "${TA%.*}.0/24:$EXPORT" || return 1
	rpc.mountd || return 1
	rpc.nfsd 4 || return 1
	echo "rdma 20049" >/proc/fs/nfsd/portlist || return 1
	cat /proc/fs/nfsd/portlist /proc/fs/nfsd/versions
	exportfs -v
}
server_down() {
	local rc=0
	umount -f "$MNT" 2>/dev/null
	rpc.nfsd 0 || rc=1
	exportfs -ua
	pkill -x rpc.mountd
	pkill -x rpcbind
	umount /proc/fs/nfsd 2>/dev/null
	umount "$EXPORT" || rc=1
	return $rc
}
# nfs_mount rdma|tcp: NFS 4.2 over the transport; the grace period of a
# fresh server can hold the first OPEN for up to its 10 s
nfs_mount() {
	local o=vers=4.2,proto=$1
	[ "$1" = rdma ] && o=$o,port=20049
	mount -t nfs -o "$o" "$TA:/" "$MNT" || return 1
	grep " $MNT nfs4 " /proc/mounts | grep -q "proto=$1" || return 1
}
nfs_umount() { umount "$MNT" && ! mountpoint -q "$MNT"; }
