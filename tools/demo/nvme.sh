#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/demo/nvme.sh target|host: the NVMe over Fabrics part of `make demo`, run by
# tools/vm/run --pair (tools/demo/run.sh). VM b (target) exports a 64 MiB RAM disk with
# Debian's nvmet-rdma over siwx; VM a (host) connects with nvme-cli over siwx, makes an
# ext4 filesystem on the namespace, writes a file, remounts and checks it, disconnects.
# The target then mounts its RAM disk itself and shows the host's file with its checksum.
# The two sides take turns over plain TCP (selftests/nvme/pair_sync.py).
set -u
top=${SIWX_TOP:?}
report=$SIWX_RESULTS/demo-nvme.txt
OUT=$SIWX_RESULTS LOG=$SIWX_RESULTS/demo-nvme.log
NQN=nqn.2026-12.org.siwx:demo RPORT=4420 SYNC=18710
RES_DEVS=siw0 TAP_PREFIX=demo
PSYNC=(python3 "$top/selftests/nvme/pair_sync.py")
# shellcheck source=selftests/nvme/nvme_lib.sh
. "$top/selftests/nvme/nvme_lib.sh"
: >"$LOG"
say() { printf '%s\n' "$*" | tee -a "$report"; }
fail() { say "demo: FAILED: $* (log: $LOG)"; exit 1; }

case ${1:-} in
target)
	TA=$SIWX_LOCAL HA=$SIWX_PEER
	load_modules brd nvmet nvmet_rdma >>"$LOG" 2>&1 || fail "modules"
	target_up "1:rdma:$RPORT" >>"$LOG" 2>&1 || fail "nvmet target"
	say "target: /dev/ram0 (64 MiB RAM disk) as $NQN, nvmet-rdma on $(rdma link show | awk '/siw0/ {print $2, "netdev", $NF}') $TA:$RPORT"
	line=$("${PSYNC[@]}" serve "$TA" "$SYNC" ready 240 2>>"$LOG") || fail "no host came"
	line=$("${PSYNC[@]}" serve "$TA" $((SYNC + 1)) bye 240 2>>"$LOG") || fail "host did not finish"
	read -r word hsum <<<"$line"
	[ "$word" = "done" ] || fail "host: $line"
	target_down >>"$LOG" 2>&1
	mkdir -p /mnt/demo && mount -o ro /dev/ram0 /mnt/demo || fail "mount /dev/ram0"
	sum=$(sha256sum /mnt/demo/hello.bin | cut -d' ' -f1)
	say "target: its own RAM disk, mounted here: $(cat /mnt/demo/hello.txt)"
	say "target: hello.bin sha256 ${sum:0:16}... $([ "$sum" = "$hsum" ] && echo "= the host's" || echo "!= the host's $hsum")"
	umount /mnt/demo
	[ "$sum" = "$hsum" ] || fail "the file differs"
	;;
host)
	TA=$SIWX_PEER HA=$SIWX_LOCAL
	load_modules nvme_fabrics nvme_rdma >>"$LOG" 2>&1 || fail "modules"
	line=$("${PSYNC[@]}" ask "$TA" "$SYNC" 240 hello 2>>"$LOG") && [ "$line" = ready ] ||
		fail "the target is not ready"
	CTRL= DEV=
	connect rdma "$RPORT" || fail "nvme connect -t rdma -a $TA"
	say "host  : nvme connect -t rdma -a $TA -s $RPORT -n $NQN: $CTRL, $DEV" \
	    "($(cat "/sys/class/nvme/$CTRL/transport") on $(rdma res show qp | awk '/link siw0/ {print $2; exit}'))"
	mkfs.ext4 -q -F "$DEV" >>"$LOG" 2>&1 || fail "mkfs.ext4 $DEV"
	mkdir -p /mnt/demo && mount "$DEV" /mnt/demo || fail "mount $DEV"
	echo "written by $(hostname) at $HA over NVMe/RDMA (siwx $(cat /sys/module/siw/version))" \
		>/mnt/demo/hello.txt
	head -c 8M /dev/urandom >/mnt/demo/hello.bin
	sum=$(sha256sum /mnt/demo/hello.bin | cut -d' ' -f1)
	umount /mnt/demo && mount "$DEV" /mnt/demo || fail "remount"
	[ "$(sha256sum /mnt/demo/hello.bin | cut -d' ' -f1)" = "$sum" ] || fail "hello.bin changed across a remount"
	say "host  : ext4 on $DEV: $(df -h --output=size,used /mnt/demo | tail -n 1 | xargs)" \
	    "used; hello.bin (8 MiB random) sha256 ${sum:0:16}... the same after a remount"
	umount /mnt/demo
	disconnect || fail "nvme disconnect"
	say "host  : disconnected"
	"${PSYNC[@]}" ask "$TA" $((SYNC + 1)) 60 "done $sum" >>"$LOG" 2>&1 || fail "telling the target"
	;;
*)
	echo "usage: $0 target|host" >&2
	exit 2
	;;
esac
