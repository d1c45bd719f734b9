#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ulp-bench.sh: the kernel's storage protocols over siwx against the other
# transports a user would pick, side by side in one QEMU/TCG guest (make
# bench-ulp; make bench runs it after tools/bench/bench.sh). NVMe over
# Fabrics over siwx, the unmodified upstream siw, rxe and NVMe/TCP; NFS over
# RDMA over siwx and NFS over TCP. See Documentation/performance.md.
#
#   BENCH=full|quick  (default full)  tools/bench/bench.conf, BENCH_ULP_*
#   BENCH_REPEAT=N    N repetitions instead of the mode's
#   KVER=...          guest kernel (default: tools/vm/run's default)
#   BENCH_OUT=DIR     report directory (default build/bench-ulp)
#   BENCH_QUIET=1     do not stream the guest console
#   BENCH_ULP_NVME_KINDS, BENCH_ULP_NFS_KINDS, BENCH_ULP_JOBS
#                     narrow what is run (bench.conf; "" skips a protocol)
#   BENCH_ULP_PERF=1  profile: every fio job under `perf record -a -g`
#                     (both ends, all contexts); flat reports per job and
#                     kind in logs/perf-*.txt. perf costs throughput: the
#                     numbers of such a run are not the bench's
#
# Needs build/siwx/siw.ko, build/upstream/siw.ko (make modules); in the
# guest Debian's nvme-cli, fio, nfs-kernel-server (make deps); gnuplot for
# the plot. Boots one VM (tools/vm/run) that runs
# tools/bench/guest-ulp-bench.sh, then writes into BENCH_OUT: samples.csv,
# ulp-report.md, ulp-summary.csv, ulp-ratio.png, meta.txt, machine.txt,
# guest.txt, logs -> every fio JSON. Exit status: 0 if every point was
# measured.

set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${BENCH:-full}
OUT=${BENCH_OUT:-$TOP/build/bench-ulp}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# shellcheck source=tools/bench/bench.conf
. "$TOP/tools/bench/bench.conf"
bench_config "$BENCH" || exit 2
# shellcheck source=tools/bench/host-lib.sh
. "$TOP/tools/bench/host-lib.sh"
[ -z "${BENCH_REPEAT:-}" ] || BENCH_ULP_REPS=$BENCH_REPEAT

die() { echo "ulp-bench: $*" >&2; exit 2; }
for f in build/siwx/siw.ko build/upstream/siw.ko; do
	[ -e "$TOP/$f" ] || die "missing $f (make modules)"
done
for c in nvme fio rpc.nfsd; do
	command -v "$c" >/dev/null || [ -x "/usr/sbin/$c" ] || die "missing $c (make deps)"
done

mkdir -p "$OUT"
rm -rf "$OUT"/samples.csv "$OUT"/ulp-report.md "$OUT"/ulp-summary.csv "$OUT"/ulp-ratio.* \
	"$OUT"/meta.txt "$OUT"/machine.txt "$OUT"/guest.txt "$OUT"/hostload.txt "$OUT"/logs
{
	echo "mode=$BENCH"
	echo "ulp_reps=$BENCH_ULP_REPS"
	echo "ulp_nvme_kinds=$BENCH_ULP_NVME_KINDS"
	echo "ulp_nfs_kinds=$BENCH_ULP_NFS_KINDS"
	echo "ulp_jobs=$BENCH_ULP_JOBS"
	echo "ulp_runtime=$BENCH_ULP_RUNTIME"
	echo "ulp_ramp=$BENCH_ULP_RAMP"
	echo "ulp_disk_mb=$BENCH_ULP_DISK_MB"
	echo "ulp_file_mb=$BENCH_ULP_FILE_MB"
	echo "ulp_perf=${BENCH_ULP_PERF:-0}"
} >"$OUT/meta.txt"
{
	bench_machine "$TOP"
	echo "fio: $(dpkg-query -W -f='${Version}' fio 2>/dev/null), nvme-cli: $(dpkg-query -W -f='${Version}' nvme-cli 2>/dev/null), nfs-kernel-server: $(dpkg-query -W -f='${Version}' nfs-kernel-server 2>/dev/null)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$OUT/machine.txt"

# a point is ~(runtime + ramp + 3) s under TCG; the setup about 2 minutes
n_points=$(( $(wc -w <<<"$BENCH_ULP_JOBS") * ( $(wc -w <<<"$BENCH_ULP_NVME_KINDS") + $(wc -w <<<"$BENCH_ULP_NFS_KINDS") ) * BENCH_ULP_REPS ))
TIMEOUT=$(( 600 + n_points * (BENCH_ULP_RUNTIME + BENCH_ULP_RAMP + 20) ))
VMOUT=$TOP/build/vm/results/bench-ulp-$BENCH
rm -rf "$VMOUT"
echo "ulp-bench: BENCH=$BENCH: $BENCH_ULP_REPS repetitions, $n_points points; one VM (limit ${TIMEOUT}s), results in $VMOUT"
bench_vm ulp-bench ulp-bench \
	-- env BENCH_ULP_NVME_KINDS="$BENCH_ULP_NVME_KINDS" BENCH_ULP_NFS_KINDS="$BENCH_ULP_NFS_KINDS" \
	BENCH_ULP_JOBS="$BENCH_ULP_JOBS" BENCH_ULP_PERF="${BENCH_ULP_PERF:-0}" \
	bash "$TOP/tools/bench/guest-ulp-bench.sh" "$BENCH" "$BENCH_ULP_REPS"
"$PY" "$TOP/tools/bench/ulp-report.py" "$OUT" || { [ "$RC" != 0 ] || RC=1; }
[ -s "$OUT/ulp-report.md" ] && cat "$OUT/ulp-report.md"
echo "ulp-bench: BENCH=$BENCH took ${SECS}s; report $OUT/ulp-report.md, plot $OUT/ulp-ratio.png"
[ "$RC" = 0 ] || echo "ulp-bench: FAILED: status $RC (3: some points failed); console $VMOUT/console.log" >&2
exit "$RC"
