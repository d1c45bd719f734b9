#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-ulp-bench.sh MODE [REPS]: the guest side of tools/bench/ulp-bench.sh
# (run by tools/vm/run, build/siwx/siw.ko loaded). MODE is quick or full
# (tools/bench/bench.conf, BENCH_ULP_*); REPS overrides its repetitions.
#
# The kernel's storage protocols, each through every transport a user would
# pick, on the same RAM disk (brd, BENCH_ULP_DISK_MB) and the same path: a
# veth pair in the initial network namespace with policy routing
# (selftests/lib/ulp.sh: vn0 192.168.79.1 the server, vn1 192.168.79.2 the
# client; kernel ULPs open their rdma_cm ids in the initial namespace).
#   NVMe over Fabrics (nvmet, nvme-cli): nvme-rdma over siwx, over the
#     unmodified upstream siw (the module swapped in place), over rxe (rxen0,
#     rxen1 on the same veth pair), and nvme-tcp; the raw namespace
#   NFS 4.2 (knfsd, the kernel client): proto=rdma over siwx, proto=tcp;
#     a file on an ext4 export
# Every fio job of BENCH_ULP_JOBS runs BENCH_ULP_RUNTIME seconds (after
# BENCH_ULP_RAMP) with O_DIRECT and libaio, one job, no verification (the
# suites nvme, nvme_pair and nfs verify the same paths). Repetition r runs
# the kinds in order when r is odd, reversed when even.
#
# Output in $SIWX_RESULTS/ulp-bench/: samples.csv (the columns of
# tools/bench's: seq,rep,kind,test,size,metric,value,unit,wall_s,note; test
# is PROTO.JOB, metrics iops, mib_s, clat_mean_us, clat_p99_us), guest.txt,
# logs/ (every fio JSON, the setup log).
# Exit status: 0 if every point was measured, 3 if some failed.

set -u
MODE=${1:?usage: guest-ulp-bench.sh quick|full [REPS]}
TOP=${SIWX_TOP:?run me with tools/vm/run}
# shellcheck source=tools/bench/bench.conf
. "$TOP/tools/bench/bench.conf"
BENCH_REPEAT=${2:-} bench_config "$MODE" || exit 2
[ -z "${2:-}" ] || BENCH_ULP_REPS=$2

OUT=$SIWX_RESULTS/ulp-bench
LOGS=$OUT/logs
CSV=$OUT/samples.csv
INFO=$OUT/guest.txt
LOG=$LOGS/setup.log
mkdir -p "$LOGS"
: >"$LOG"
KO_siwx=$TOP/build/siwx/siw.ko
KO_upstream=$TOP/build/upstream/siw.ko
TA=192.168.79.1 HA=192.168.79.2
NQN=nqn.2026-12.org.siwx:ulp-bench
EXPORT=/srv/siwx-bench MNT=/mnt/siwx-bench
PORT_rdma=4420 PORT_tcp=4421
# nvme_lib.sh brings lib/ulp.sh (net_up, load_modules) and lib/tap_out.sh
TAP_PREFIX=ulp-bench
# shellcheck source=selftests/nvme/nvme_lib.sh
. "$TOP/selftests/nvme/nvme_lib.sh"
# shellcheck source=selftests/nfs/nfs_lib.sh
. "$TOP/selftests/nfs/nfs_lib.sh"
PATH=$PATH:/usr/sbin:/sbin

SEQ=0 FAILS=0 T0=$EPOCHSECONDS
CUR_SIW=siwx	# tools/vm/run loaded build/siwx/siw.ko
LINKS=		# the RDMA devices on vn0/vn1 now: siw, rxe or none
declare -A KIND_BROKEN=()

say() { echo "ulp-bench [$((EPOCHSECONDS - T0))s] $*"; echo "[$((EPOCHSECONDS - T0))s] $*" >>"$INFO"; }
echo "seq,rep,kind,test,size,metric,value,unit,wall_s,note" >"$CSV"
# sample REP KIND TEST SIZE METRIC VALUE UNIT [NOTE]
sample() {
	local note=${8:-}
	note=${note//,/;}
	echo "$SEQ,$1,$2,$3,$4,$5,$6,$7,$((EPOCHSECONDS - T0)),$note" >>"$CSV"
}

# ---------------------------------------------------------------- devices
links_del() {
	case $LINKS in
	siw) rdma link delete siwn1; rdma link delete siwn0 ;;
	rxe) rdma link delete rxen1; rdma link delete rxen0 ;;
	esac
	LINKS=
}
# links KIND: the RDMA devices KIND needs on vn0/vn1 (tcp: whatever is
# there, the TCP transports do not care)
links() {
	local want
	case $1 in siwx | upstream) want=siw ;; rxe) want=rxe ;; *) return 0 ;; esac
	[ "$want" = "$LINKS" ] && return 0
	links_del >>"$LOG" 2>&1
	case $want in
	siw) rdma link add siwn0 type siw netdev vn0 && rdma link add siwn1 type siw netdev vn1 || return 1 ;;
	rxe) rdma link add rxen0 type rxe netdev vn0 && rdma link add rxen1 type rxe netdev vn1 || return 1 ;;
	esac
	LINKS=$want
}
# use_siw KIND: KIND (siwx|upstream) the loaded siw module, nothing using it
use_siw() {
	local ko=KO_$1 v
	[ "$CUR_SIW" = "$1" ] && return 0
	[ "$LINKS" != siw ] || links_del >>"$LOG" 2>&1
	CUR_SIW=none
	if [ -e /sys/module/siw ] && ! rmmod siw; then return 1; fi
	insmod "${!ko}" || return 1
	CUR_SIW=$1
	v=none
	[ -r /sys/module/siw/version ] && read -r v </sys/module/siw/version
	say "loaded $1: siw version '$v'"
}
# kind_up KIND: its module and devices
kind_up() {
	case $1 in
	siwx | upstream) use_siw "$1" ;;
	esac || return 1
	links "$1"
}

# ---------------------------------------------------------------- points
# fio_point REP KIND PROTO JOB FILE: one fio job of BENCH_ULP_JOBS
# (RW:BS:QD) on FILE, its numbers into samples.csv
fio_point() {
	local rep=$1 kind=$2 proto=$3 rw bs qd file=$5 test json out rc
	IFS=: read -r rw bs qd <<<"$4"
	test=$proto.${rw}_${bs}_qd$qd
	json=$LOGS/$test-$kind-r$rep.json
	SEQ=$((SEQ + 1))
	local perf=()
	[ "${BENCH_ULP_PERF:-0}" != 1 ] ||
		perf=(perf record -q -a -g -e cpu-clock -F 999 -o "/tmp/perf-$test-$kind-r$rep.data" --)
	"${perf[@]}" fio --name="$test" --filename="$file" --direct=1 --ioengine=libaio \
		--rw="$rw" --bs="$bs" --iodepth="$qd" --size="${BENCH_ULP_FILE_MB}M" \
		--time_based --runtime="$BENCH_ULP_RUNTIME" --ramp_time="$BENCH_ULP_RAMP" \
		--norandommap --randrepeat=0 --output-format=json --output="$json" \
		>>"$LOG" 2>&1
	rc=$?
	[ ${#perf[@]} = 0 ] || perf_reports "/tmp/perf-$test-$kind-r$rep.data" "$LOGS/perf-$test-$kind-r$rep"
	out=$(python3 "$TOP/tools/bench/fio_numbers.py" "$json" 2>&1)
	if [ $rc != 0 ] || [ -z "$out" ] || [[ $out == error* ]]; then
		FAILS=$((FAILS + 1))
		sample "$rep" "$kind" "$test" "$(bs_bytes "$bs")" iops "" IOPS "fio failed (status $rc): ${out:0:120}"
		say "$kind $test: FAILED (fio status $rc) ${out:0:120}"
		return 1
	fi
	# out: IOPS MIB_S CLAT_MEAN_US CLAT_P99_US
	read -r iops mib mean p99 <<<"$out"
	sample "$rep" "$kind" "$test" "$(bs_bytes "$bs")" iops "$iops" IOPS
	sample "$rep" "$kind" "$test" "$(bs_bytes "$bs")" mib_s "$mib" MiB/s
	sample "$rep" "$kind" "$test" "$(bs_bytes "$bs")" clat_mean_us "$mean" us
	sample "$rep" "$kind" "$test" "$(bs_bytes "$bs")" clat_p99_us "$p99" us
	say "$kind $test: $iops IOPS, $mib MiB/s, clat mean $mean us, p99 $p99 us"
}
# perf_reports DATA PREFIX: the profiles of a BENCH_ULP_PERF run: per
# command (PREFIX-comm.txt), per command and symbol (PREFIX.txt),
# inclusive per symbol (PREFIX-children.txt) and the callers of every
# symbol above 1 % (PREFIX-callers.txt); the data file removed
perf_reports() {
	perf report -i "$1" --no-children --sort comm -g none --stdio >"$2-comm.txt" 2>&1
	perf report -i "$1" --no-children --sort comm,sym -g none --percent-limit 0.3 \
		--stdio >"$2.txt" 2>&1
	perf report -i "$1" --children --sort sym -g none --percent-limit 1 \
		--stdio >"$2-children.txt" 2>&1
	perf report -i "$1" --no-children --sort sym -g caller,0.5,callee --percent-limit 1 \
		--stdio >"$2-callers.txt" 2>&1
	rm -f "$1"
}
bs_bytes() {
	case $1 in
	*k) echo $((${1%k} * 1024)) ;;
	*m) echo $((${1%m} * 1048576)) ;;
	*) echo "$1" ;;
	esac
}
# na_points REP KIND PROTO WHY: every job of PROTO failed for KIND
na_points() {
	local j rw bs qd
	for j in $BENCH_ULP_JOBS; do
		IFS=: read -r rw bs qd <<<"$j"
		SEQ=$((SEQ + 1)) FAILS=$((FAILS + 1))
		sample "$1" "$2" "$3.${rw}_${bs}_qd$qd" "$(bs_bytes "$bs")" iops "" IOPS "$4"
	done
	say "$2 $3: FAILED: $4"
}

# rdma_port_down: nvmet's RDMA port (1) gone; nvmet-rdma binds a port to
# the device of its address when the port is made, so each RDMA kind makes
# its own once its devices are there
rdma_port_down() {
	[ -e "$CFS/ports/1" ] || return 0
	rm -f "$CFS/ports/1/subsystems/$NQN" && rmdir "$CFS/ports/1"
}
# nvme_block REP KIND: connect over KIND, every job on the namespace
nvme_block() {
	local rep=$1 kind=$2 tr=rdma j
	[ "$kind" = tcp ] && tr=tcp
	[ -z "${KIND_BROKEN[$kind]:-}" ] || { na_points "$rep" "$kind" nvme "${KIND_BROKEN[$kind]}"; return; }
	kind_up "$kind" >>"$LOG" 2>&1 || { na_points "$rep" "$kind" nvme "$kind setup failed"; return; }
	if [ "$tr" = rdma ]; then
		port_add 1 rdma "$PORT_rdma" >>"$LOG" 2>&1 ||
			{ na_points "$rep" "$kind" nvme "nvmet rdma port on $kind failed"; rdma_port_down >>"$LOG" 2>&1; return; }
	fi
	CTRL='' DEV=''
	connect "$tr" "$(port_of "$tr")" || {
		na_points "$rep" "$kind" nvme "nvme connect -t $tr failed"
		disconnect; rdma_port_down >>"$LOG" 2>&1; return
	}
	say "$kind: $CTRL $DEV over $(cat "/sys/class/nvme/$CTRL/transport")$( [ "$tr" = rdma ] &&
		rdma res show qp | awk '/link (siwn|rxen)1\// { printf " on %s", $2; exit }')"
	for j in $BENCH_ULP_JOBS; do
		fio_point "$rep" "$kind" nvme "$j" "$DEV"
	done
	disconnect || say "$kind: nvme disconnect failed"
	rdma_port_down >>"$LOG" 2>&1 || say "$kind: nvmet rdma port removal failed"
}
port_of() { local p=PORT_$1; echo "${!p}"; }

# nfs_block REP KIND: mount over KIND (siwx: rdma, tcp), every job on a file
nfs_block() {
	local rep=$1 kind=$2 tr=rdma j
	[ "$kind" = tcp ] && tr=tcp
	[ -z "${KIND_BROKEN[$kind]:-}" ] || { na_points "$rep" "$kind" nfs "${KIND_BROKEN[$kind]}"; return; }
	kind_up "$kind" >>"$LOG" 2>&1 || { na_points "$rep" "$kind" nfs "$kind setup failed"; return; }
	nfs_mount "$tr" >>"$LOG" 2>&1 || { na_points "$rep" "$kind" nfs "mount proto=$tr failed"; return; }
	for j in $BENCH_ULP_JOBS; do
		fio_point "$rep" "$kind" nfs "$j" "$MNT/bench.dat"
	done
	nfs_umount >>"$LOG" 2>&1 || say "$kind: umount $MNT failed"
}

# order KIND...: the kinds of repetition $rep (reversed when even)
order() {
	local i
	ORDER=("$@")
	((rep % 2)) && return
	ORDER=()
	for ((i = $#; i >= 1; i--)); do ORDER+=("${!i}"); done
}

# ---------------------------------------------------------------- main
{
	echo "mode: $MODE"
	echo "kernel: $(uname -r)"
	echo "cpus: $(nproc)"
	echo "fio: $(fio --version)"
	echo "nvme-cli: $(nvme version 2>&1 | head -n 1)"
	echo "siwx module: $KO_siwx version '$(modinfo -F version "$KO_siwx")'"
	echo "upstream module: $KO_upstream"
	echo "jobs: $BENCH_ULP_JOBS; ${BENCH_ULP_RUNTIME}s each after ${BENCH_ULP_RAMP}s ramp; file ${BENCH_ULP_FILE_MB} MiB"
	[ "${BENCH_ULP_PERF:-0}" != 1 ] || echo "perf: $(perf --version 2>&1) (every job under perf record)"
} >"$INFO"
say "mode $MODE: $BENCH_ULP_REPS repetitions; NVMe: $BENCH_ULP_NVME_KINDS; NFS: $BENCH_ULP_NFS_KINDS"

# The harness's siw0/siw1 go: the module is swapped, and nothing else may
# share it (tools/vm/run's teardown skips links that are gone).
for d in siw1 siw0; do
	[ ! -e "/sys/class/infiniband/$d" ] || rdma link delete "$d" >>"$LOG" 2>&1
done
modprobe brd rd_nr=1 rd_size=$((BENCH_ULP_DISK_MB * 1024)) >>"$LOG" 2>&1 &&
	load_modules brd nvmet nvmet_rdma nvmet_tcp nvme_fabrics nvme_rdma nvme_tcp rdma_rxe \
		nfsd rpcrdma nfsv4 >>"$LOG" 2>&1 || { say "modules missing (see $LOG)"; exit 2; }
net_up >>"$LOG" 2>&1 || { say "network setup failed (see $LOG)"; exit 2; }
LINKS=siw	# net_up added siwn0 and siwn1 (siwx's)
# the data the reads find: the whole disk written once
dd if=/dev/urandom of=/dev/ram0 bs=1M count="$BENCH_ULP_DISK_MB" oflag=direct status=none ||
	{ say "cannot fill /dev/ram0"; exit 2; }
target_up "2:tcp:$PORT_tcp" >>"$LOG" 2>&1 || { say "nvmet target setup failed (see $LOG)"; exit 2; }
say "setup done: /dev/ram0 ${BENCH_ULP_DISK_MB} MiB, nvmet $NQN on $TA:$PORT_tcp (tcp), $TA:$PORT_rdma (rdma, per kind)"

for ((rep = 1; rep <= BENCH_ULP_REPS; rep++)); do
	# shellcheck disable=SC2086 # kinds are words
	order $BENCH_ULP_NVME_KINDS
	say "repetition $rep/$BENCH_ULP_REPS: nvme ${ORDER[*]}"
	for kind in "${ORDER[@]}"; do nvme_block "$rep" "$kind"; done
done
target_down >>"$LOG" 2>&1 || say "nvmet target teardown failed"

# NFS: the same disk as an ext4 export, the file the jobs use laid out
# on the server; siwx's devices there when the RDMA listener starts
if [ -z "$BENCH_ULP_NFS_KINDS" ]; then
	say "NFS: no kinds, skipped"
elif kind_up siwx >>"$LOG" 2>&1 && server_up >>"$LOG" 2>&1 &&
   dd if=/dev/urandom of="$EXPORT/bench.dat" bs=1M count="$BENCH_ULP_FILE_MB" conv=fsync status=none; then
	for ((rep = 1; rep <= BENCH_ULP_REPS; rep++)); do
		# shellcheck disable=SC2086 # kinds are words
		order $BENCH_ULP_NFS_KINDS
		say "repetition $rep/$BENCH_ULP_REPS: nfs ${ORDER[*]}"
		for kind in "${ORDER[@]}"; do nfs_block "$rep" "$kind"; done
	done
else
	for ((rep = 1; rep <= BENCH_ULP_REPS; rep++)); do
		for kind in $BENCH_ULP_NFS_KINDS; do na_points "$rep" "$kind" nfs "NFS server setup failed"; done
	done
fi
[ -z "$BENCH_ULP_NFS_KINDS" ] || server_down >>"$LOG" 2>&1 || say "NFS server teardown failed"

links_del >>"$LOG" 2>&1
net_down >>"$LOG" 2>&1
unload_modules nfsv4 rpcrdma nfsd nvme_rdma nvme_tcp nvmet_rdma nvmet_tcp nvmet rdma_rxe brd ||
	say "some modules would not unload (see $LOG)"
say "done: $SEQ runs, $FAILS failed"
[ "$FAILS" = 0 ] || exit 3
exit 0
