#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# bench.sh: siwx against upstream siw, rxe and raw TCP, side by side in one
# QEMU/TCG guest (make bench).  See Documentation/performance.md.
#
#   BENCH=full|quick  (default full)  matrix and repetitions, tools/bench/bench.conf
#   KVER=...          guest kernel (default: tools/vm/run's default)
#   BENCH_OUT=DIR     report directory (default build/bench)
#   BENCH_QUIET=1     do not stream the guest console
#   BENCH_PMEM=SIZE   the guest's emulated NVDIMM (devdax) for flush_bench's
#                     persistent points (default 128M; 0: none, those are n/a)
#   SIWX_VM_TCG_THREAD=single|multi  QEMU's TCG threading (default here:
#                     multi, one host thread per vCPU; tools/vm/run's own
#                     default single makes every hand-off between two busy
#                     vCPUs wait for a guest timer tick, 4 ms, which is all a
#                     latency point then measures; make check's suite bench,
#                     a harness check, keeps single)
#
# Needs build/siwx/siw.ko, build/upstream/siw.ko, build/rdma-core/prefix
# (make modules rdma-core), perftest, iperf3, cc, python3; gnuplot for plots.
# Builds build/bench/tcp_pingpong, build/bench/imm_bench and
# build/bench/flush_bench, boots one VM (tools/vm/run --netns) that runs
# tools/bench/guest-bench.sh, then writes into BENCH_OUT:
#   samples.csv  every raw sample        summary.csv  median/min/max per point
#   report.md    the tables              summary.txt  what is printed at the end
#   *.png        plots                   meta.txt, machine.txt, guest.txt
#   logs ->      every tool's output (in the VM results directory)
# and prints the summary.  Exit status: 0 if every point was measured (n/a
# for unsupported operations is fine), non-zero otherwise.

set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${BENCH:-full}
OUT=${BENCH_OUT:-$TOP/build/bench}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# shellcheck source=tools/bench/bench.conf
. "$TOP/tools/bench/bench.conf"
bench_config "$BENCH" || exit 2
# shellcheck source=tools/bench/host-lib.sh
. "$TOP/tools/bench/host-lib.sh"

export SIWX_VM_TCG_THREAD=${SIWX_VM_TCG_THREAD:-multi}

die() { echo "bench: $*" >&2; exit 2; }
for f in build/siwx/siw.ko build/upstream/siw.ko build/rdma-core/prefix/lib/libibverbs.so.1; do
	[ -e "$TOP/$f" ] || die "missing $f (make modules rdma-core)"
done
for c in ib_write_lat ib_write_bw ib_atomic_lat iperf3 cc; do
	command -v "$c" >/dev/null || die "missing $c (make deps)"
done

# The persistent Flush points need a devdax device at flush_bench's server:
# tools/vm/run --pmem (an emulated NVDIMM; it needs ndctl on the host).
# Without one they are n/a, with flush_bench's reason.
BENCH_PMEM=${BENCH_PMEM-128M}
PMARGS=()
if [ -z "$BENCH_PMEM" ] || [ "$BENCH_PMEM" = 0 ]; then
	PMEM_NOTE="none (BENCH_PMEM=0)"
elif [[ $("$TOP/tools/vm/run" --help 2>&1) != *"--pmem SIZE"* ]]; then
	PMEM_NOTE="none (tools/vm/run has no --pmem)"
elif ! command -v ndctl > /dev/null; then
	PMEM_NOTE="none (no ndctl on the host, make deps)"
else
	PMARGS=(--pmem "$BENCH_PMEM")
	PMEM_NOTE="emulated NVDIMM of $BENCH_PMEM as devdax (tools/vm/run --pmem)"
fi

mkdir -p "$OUT"
cc -O2 -Wall -Wextra -o "$OUT/tcp_pingpong" "$TOP/tools/bench/tcp_pingpong.c" ||
	die "cannot build tcp_pingpong"
RP=$TOP/build/rdma-core/prefix
# imm_bench and flush_bench link the selftests' connection layer, rdma_util
for p in imm_bench flush_bench; do
	cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -I"$RP/include" -I"$TOP/selftests/lib" \
		-o "$OUT/$p" "$TOP/tools/bench/$p.c" "$TOP/selftests/lib/rdma_util.c" \
		-L"$RP/lib" -Wl,-rpath,"$RP/lib" \
		-Wl,--disable-new-dtags -lrdmacm -libverbs || die "cannot build $p"
done
# The guest looks for the ping-pong, imm_bench and flush_bench under
# build/bench (the host root is shared read-only, at the same path).
if [ "$OUT" != "$TOP/build/bench" ]; then
	mkdir -p "$TOP/build/bench"
	cp "$OUT/tcp_pingpong" "$OUT/imm_bench" "$OUT/flush_bench" "$TOP/build/bench/"
fi

case $BENCH in
quick) TIMEOUT=1800 ;;
*) TIMEOUT=3600 ;;
esac
VMOUT=$TOP/build/vm/results/bench-$BENCH
rm -rf "$VMOUT"
rm -f "$OUT"/samples.csv "$OUT"/summary.csv "$OUT"/summary.txt "$OUT"/report.md \
	"$OUT"/*.png "$OUT"/*.dat "$OUT"/plots.gp "$OUT"/guest.txt "$OUT"/meta.txt \
	"$OUT"/machine.txt "$OUT"/hostload.txt "$OUT"/plots.txt "$OUT"/logs

{
	bench_meta
	echo "pmem=$PMEM_NOTE"
} > "$OUT/meta.txt"

{
	bench_machine "$TOP" "pmem: $PMEM_NOTE"
	echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "iperf3: $(dpkg-query -W -f='${Version}' iperf3 2>/dev/null)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"

echo "bench: BENCH=$BENCH: $BENCH_REPS repetitions; one VM, results in $VMOUT"
bench_vm bench bench --netns "${PMARGS[@]}" \
	-- bash "$TOP/tools/bench/guest-bench.sh" "$BENCH" "$BENCH_REPS"

"$PY" "$TOP/tools/bench/report.py" "$OUT" || { echo "bench: report generation failed" >&2; RC=${RC:-1}; [ "$RC" != 0 ] || RC=1; }
[ -s "$OUT/summary.txt" ] && cat "$OUT/summary.txt"
echo "bench: BENCH=$BENCH took ${SECS}s; report $OUT/report.md, samples $OUT/samples.csv"
[ "$RC" = 0 ] || echo "bench: FAILED: VM/guest exit status $RC (3: some points failed); console $VMOUT/console.log" >&2
exit "$RC"
