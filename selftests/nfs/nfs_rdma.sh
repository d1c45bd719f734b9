#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# nfs_rdma.sh - suite "nfs": NFS over RDMA over siwx in one VM: Debian's
# knfsd (nfsd, rpcrdma, nfs-kernel-server's rpc.nfsd, rpc.mountd and
# exportfs) with the RDMA listener on port 20049, and the kernel NFS client
# mounting with proto=rdma. TAP output.
#
# The server side is vn0 192.168.79.1 with siwn0, the client vn1
# 192.168.79.2 with siwn1, policy routing in between (selftests/lib/ulp.sh),
# so that the mount's QPs sit on siwn1 and siwn0 and the traffic crosses
# the veth pair. The export is an ext4 file system on a brd RAM disk. The
# guest starts what the server needs (rpcbind, rpc.mountd, rpc.nfsd); the
# host only has the packages (tools/deps.sh masks their units).
#
# Tests: mount over RDMA (NFS 4.2), the QPs on the two devices, fio with
# --verify=crc32c (random 4 KiB and sequential 1 MiB writes), a file
# written with dd reads back the same (sha256) after a remount over RDMA
# and over TCP (port 2049) from the same export, NFS_CYCLES mount/umount
# cycles over RDMA with rdma res back to the same counts, and the teardown
# (nfsd stopped, modules unloaded). guest.sh and tools/vm/run check the
# kernel log of the whole boot.
#
# Environment: SIWX_RESULTS (logs, fio JSON), NFS_CYCLES (10),
# NFS_FIO_SIZE (4M per fio job).

set -u
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
CYCLES=${NFS_CYCLES:-10}
FSIZE=${NFS_FIO_SIZE:-4M}
TA=192.168.79.1 HA=192.168.79.2
EXPORT=/srv/siwx-nfs
MNT=/mnt/siwx-nfs
LOG=$OUT/nfs.log
RES_DEVS='siwn0|siwn1'
TAP_PREFIX=nfs
HERE=$(cd "$(dirname "$0")" && pwd)

TESTS=(
	setup.modules setup.network setup.server mount.rdma path.veth
	fio.randwrite_4k_qd16 fio.write_1m_qd4 file.write remount.rdma
	remount.tcp cycles leak.rdma_res cleanup
)
echo "TAP version 13"
echo "1..${#TESTS[@]}"
# shellcheck source=selftests/lib/tap_out.sh
. "$HERE/../lib/tap_out.sh"
# shellcheck source=selftests/lib/ulp.sh
. "$HERE/../lib/ulp.sh"
# shellcheck source=selftests/nfs/nfs_lib.sh
. "$HERE/nfs_lib.sh"
: >"$LOG"

for t in rpc.nfsd rpc.mountd exportfs rpcbind mount.nfs fio mkfs.ext4; do
	command -v "$t" >/dev/null || PATH=$PATH:/usr/sbin:/sbin
	command -v "$t" >/dev/null || skip_rest "$t missing (make deps: nfs-kernel-server, fio)"
done

check setup.modules load_modules brd nfsd rpcrdma nfsv4
[ "$fails" = 0 ] || skip_rest "modules missing"
check setup.network net_up
[ "$fails" = 0 ] || skip_rest "network setup failed"

check setup.server server_up
[ "$fails" = 0 ] || { server_down >/dev/null 2>&1; net_down; skip_rest "server setup failed"; }
BASE=$(rdma_res)
say "rdma res with the server listening: $BASE"
say "$(grep -E '^(rdma|tcp)' /proc/fs/nfsd/portlist | tr '\n' ' ')"

if nfs_mount rdma; then
	ok mount.rdma
	say "$(grep " $MNT " /proc/mounts)"
else
	nok mount.rdma "mount -t nfs -o vers=4.2,proto=rdma,port=20049 failed (see $LOG)"
	server_down >>"$LOG" 2>&1; net_down; skip_rest "not mounted"
fi

path_test "the mount"

# fio_file NAME RW BS QD: a job on a file of the mount, crc32c verified
fio_file() {
	fio_run "$OUT/fio-nfs-$1.json" --name="$1" --filename="$MNT/fio-$1" --direct=1 \
		--ioengine=libaio --rw="$2" --bs="$3" --iodepth="$4" --size="$FSIZE" \
		--verify=crc32c --do_verify=1 --verify_fatal=1
}
for spec in "randwrite_4k_qd16 randwrite 4k 16" "write_1m_qd4 write 1m 4"; do
	set -- $spec
	if fio_file "$@"; then
		ok "fio.$1"
		say "$(tail -n 1 "$LOG")"
	else
		nok "fio.$1" "fio $* failed or did not verify (see $OUT/fio-nfs-$1.json, $LOG)"
	fi
done

# file.write: 8 MiB of random data written with dd over RDMA, its sha256
SUM=
file_write() {
	dd if=/dev/urandom of="$OUT/nfs-data" bs=1M count=8 status=none || return 1
	SUM=$(sha256sum <"$OUT/nfs-data" | cut -d' ' -f1)
	dd if="$OUT/nfs-data" of="$MNT/data" bs=64k conv=fsync status=none || return 1
	say "wrote $MNT/data over rdma, sha256 $SUM"
}
check file.write file_write
# same_data: the file reads back with the same sha256 (after a remount,
# so from the server, not the client's page cache)
same_data() {
	local sum
	sum=$(sha256sum <"$MNT/data" | cut -d' ' -f1)
	say "read $MNT/data over $1: sha256 $sum"
	[ -n "$SUM" ] && [ "$sum" = "$SUM" ]
}
remount() {	# TRANSPORT
	nfs_umount || return 1
	nfs_mount "$1" && same_data "$1"
}
check remount.rdma remount rdma
check remount.tcp remount tcp
nfs_umount >>"$LOG" 2>&1

# cycles: mount over RDMA, read the file's first block, umount; rdma res
# back to the same counts each time (the first mount made the CQ pool)
mount_read() { nfs_mount rdma && head -c 4096 "$MNT/data" >/dev/null; }
cycles() { res_pooled && res_cycles "$CYCLES" mount_read nfs_umount; }
check cycles cycles
res_leak_test

cleanup() {
	local rc=0
	server_down || rc=1
	net_down
	unload_modules nfsv4 rpcrdma nfsd brd || rc=1
	return $rc
}
check cleanup cleanup
[ "$fails" = 0 ]
