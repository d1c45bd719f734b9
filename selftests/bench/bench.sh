#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# bench.sh - suite bench, run on the host by run.sh: the benchmark harness
# in quick mode with one repetition (BENCH=quick BENCH_REPEAT=1
# tools/bench/bench.sh, into $SIWX_RESULTS/bench) must produce every row
# of its report;
# tools/bench/check-report.sh turns the report into TAP. Never asserts on
# speed. bench.sh's own output goes to stderr (run.sh keeps it as
# bench.log), the TAP to stdout; the exit status is bench.sh's.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
OUT=${SIWX_RESULTS:?run me through selftests/run.sh}/bench

# single-threaded TCG, tools/vm/run's default: multi-threaded TCG now and
# then lets a vCPU execute a breakpoint the kernel already removed
# (Documentation/vm.md), and this suite only checks the harness
SIWX_VM_TCG_THREAD=${SIWX_VM_TCG_THREAD:-single} \
BENCH=quick BENCH_REPEAT=${BENCH_REPEAT:-1} BENCH_QUIET=1 BENCH_OUT=$OUT KVER=${KVER:-} "$TOP/tools/bench/bench.sh" >&2
rc=$?
"$TOP/tools/bench/check-report.sh" "$OUT" 2>&1
exit "$rc"
