#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# scale.sh: how the cost of siwx grows with the number of QPs, connections
# and memory regions, against upstream siw and rxe, in one QEMU/TCG guest
# (make bench-scale; issue 15's "Scale" item).  See
# Documentation/performance.md.
#
#   BENCH=full|quick  (default full)  matrix and repetitions, tools/bench/scale.conf
#   SCALE_REPEAT=N    N repetitions instead of the mode's
#   KVER=...          guest kernel (default: tools/vm/run's default)
#   SCALE_OUT=DIR     report directory (default build/bench-scale)
#   BENCH_QUIET=1     do not stream the guest console
#
# Needs build/siwx/siw.ko, build/upstream/siw.ko, build/rdma-core/prefix
# (make modules rdma-core), perftest, cc, python3.  Builds
# build/bench/scale_tool, boots one VM (tools/vm/run --netns) that runs
# tools/bench/guest-scale.sh, then writes into SCALE_OUT:
#   samples.csv  every raw sample        summary.csv  median/min/max per point
#   report.md    the tables              summary.txt  what is printed at the end
#   meta.txt, machine.txt, guest.txt, hostload.txt
#   logs ->      every tool's output (in the VM results directory)
# and prints the summary.  Exit status: 0 if every point was measured,
# non-zero otherwise (the targets' verdicts never change it).

set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)
BENCH=${BENCH:-full}
OUT=${SCALE_OUT:-$TOP/build/bench-scale}
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3

# shellcheck source=tools/bench/scale.conf
. "$TOP/tools/bench/scale.conf"
scale_config "$BENCH" || exit 2
# shellcheck source=tools/bench/host-lib.sh
. "$TOP/tools/bench/host-lib.sh"

die() { echo "bench-scale: $*" >&2; exit 2; }
for f in build/siwx/siw.ko build/upstream/siw.ko build/rdma-core/prefix/lib/libibverbs.so.1; do
	[ -e "$TOP/$f" ] || die "missing $f (make modules rdma-core)"
done
for c in ib_write_bw cc; do
	command -v "$c" >/dev/null || die "missing $c (make deps)"
done

mkdir -p "$OUT" "$TOP/build/bench"
RP=$TOP/build/rdma-core/prefix
# the guest runs it from build/bench (the host root is shared read-only)
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -I"$RP/include" -I"$TOP/selftests/lib" \
	-o "$TOP/build/bench/scale_tool" "$TOP/tools/bench/scale_tool.c" \
	"$TOP/selftests/lib/rdma_util.c" -L"$RP/lib" -Wl,-rpath,"$RP/lib" \
	-Wl,--disable-new-dtags -lrdmacm -libverbs || die "cannot build scale_tool"

# quick: about 10-15 min under TCG
case $BENCH in
quick) TIMEOUT=$((2400 * SCALE_REPS)) ;;
*) TIMEOUT=$((3000 * SCALE_REPS)) ;;
esac
VMOUT=$TOP/build/vm/results/bench-scale-$BENCH
rm -rf "$VMOUT"
rm -f "$OUT"/samples.csv "$OUT"/summary.csv "$OUT"/summary.txt "$OUT"/report.md \
	"$OUT"/guest.txt "$OUT"/meta.txt "$OUT"/machine.txt "$OUT"/hostload.txt "$OUT"/logs

scale_meta > "$OUT/meta.txt"
{
	bench_machine "$TOP"
	echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "load before: $(cut -d' ' -f1-3 /proc/loadavg)"
} > "$OUT/machine.txt"

echo "bench-scale: BENCH=$BENCH: $SCALE_REPS repetition(s); one VM, results in $VMOUT"
bench_vm bench-scale scale --netns \
	-- bash "$TOP/tools/bench/guest-scale.sh" "$BENCH" "$SCALE_REPS"

"$PY" "$TOP/tools/bench/scale-report.py" "$OUT" || { echo "bench-scale: report generation failed" >&2; [ "$RC" != 0 ] || RC=1; }
[ -s "$OUT/summary.txt" ] && cat "$OUT/summary.txt"
echo "bench-scale: BENCH=$BENCH took ${SECS}s; report $OUT/report.md, samples $OUT/samples.csv"
[ "$RC" = 0 ] || echo "bench-scale: FAILED: VM/guest exit status $RC (3: some points failed); console $VMOUT/console.log" >&2
exit "$RC"
