#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/debug-kernel/gcov-report.sh VMDIR [OUTDIR]
#
# Line coverage of siw.ko from one VM run on the debug kernel with a
# gcov-profiled module (make check KERNEL=debug GCOV=1): VMDIR is the VM's
# results directory (the one with gcov/ in it, e.g.
# build/debug-kernel/selftests/results/<stamp>/single). Pairs each .gcda
# there with the .gcno that run's build made (VMDIR/../gcno/, saved by
# make check, else the build path the .gcda was copied under),
# runs gcov and prints one line per source file of siw plus a total.
# The annotated sources (*.c.gcov) are left in OUTDIR (default VMDIR/gcov-report).
# See Documentation/debug-kernel.md.
set -euo pipefail

vmdir=${1:?usage: gcov-report.sh VMDIR [OUTDIR]}
out=${2:-$vmdir/gcov-report}
[ -d "$vmdir/gcov" ] || { echo "gcov-report: no $vmdir/gcov (a run with GCOV=1 on the debug kernel?)" >&2; exit 2; }
command -v gcov >/dev/null || { echo "gcov-report: gcov not found (gcc)" >&2; exit 2; }

rm -rf "$out"; mkdir -p "$out"
snap=$(cd "$vmdir/.." && pwd)/gcno
n=0
while IFS= read -r -d '' gcda; do
	obj=${gcda#"$vmdir/gcov"}		# the build path of the object
	gcno=${obj%.gcda}.gcno
	# the copy make check KERNEL=debug GCOV=1 put next to the results,
	# else the build tree's (replaced by any later build)
	[ ! -r "$snap/${gcno##*/}" ] || gcno=$snap/${gcno##*/}
	[ -r "$gcno" ] || { echo "gcov-report: $gcno missing (rebuilt since the run?)" >&2; continue; }
	cp "$gcda" "$out/"; cp "$gcno" "$out/"
	n=$((n + 1))
done < <(find "$vmdir/gcov" -name '*.gcda' -print0)
[ "$n" -gt 0 ] || { echo "gcov-report: no .gcda files under $vmdir/gcov" >&2; exit 1; }

cd "$out"
for gcno in *.gcno; do
	# the source file is named in the .gcno; gcov finds it by its absolute path
	gcov -o . "${gcno%.gcno}.c" 2>/dev/null
done | awk '
	/^File / { f = $2; gsub(/\047/, "", f); next }
	/^Lines executed:/ && f ~ /\/siw\/[^\/]+\.c$/ {
		split($2, a, ":"); pct = a[2]; sub(/%/, "", pct); n = $4
		hit = int(pct * n / 100 + 0.5); H += hit; N += n
		sub(/.*\//, "", f); printf "%-24s %6.2f%% of %5d lines\n", f, pct, n
		f = ""
	}
	END { if (N) printf "%-24s %6.2f%% of %5d lines\n", "total", 100 * H / N, N }'
