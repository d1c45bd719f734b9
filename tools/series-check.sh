#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Bisectability check of the kernel patch series (patches/linux/series).
#
#   tools/series-check.sh [BUILD_DIR]
#
# In one scratch tree, BUILD_DIR/series-check/src, starting from the
# pristine siw of BUILD_DIR/linux/pristine (make stage), for every patch
# of the series in order:
#
#   1. apply it (patch -p1 -F0, as tools/stage-linux.sh does),
#   2. run the kernel's checkpatch.pl --strict on it (the options of
#      tools/checkpatch.sh plus --strict),
#   3. rebuild siw.ko against the kernel headers: W=1, warnings are errors.
#
# The tree is built incrementally: after patch n only what it touched is
# recompiled. What is built is the series: upstream's patched Makefile
# and the patched uapi header ahead of the kernel's. Our own files from
# drivers/infiniband/sw/siw/ are in the tree from the start, but only those
# the patched Makefile names at that point of the series are compiled: a
# feature patch whose logic lives in a file of ours adds its object to
# siw's Makefile (siw-y += siwx_atomic.o) next to its hooks. Our Kbuild's
# own objects (siwx_main.o, siwx_wire_check.o) are not part of the series.
#
# Fails on a patch that does not apply, on any compiler or modpost
# warning, and on any checkpatch complaint.
#
# A prefix of the series that passed is remembered (BUILD_DIR/series-check.ok,
# keyed by the content of the patches, this script and the kernel tree):
# the next run applies it without checking it again and starts checking
# at the first patch that changed. SERIES_FORCE=1 checks everything.
#
# Environment: KDIR (kernel build tree, default: newest installed 6.12),
# SERIES_DIR (the patches and their series file, default patches/linux),
# SERIES_OWN_FILES=0 (no files of ours in the tree: for the series
# tools/upstream-series.sh exports, which carries them), SERIES_WORK
# (scratch directory, default BUILD_DIR/series-check),
# SERIES_WERROR=0 (report warnings, do not fail on them), SERIES_JOBS
# (make -j, default: nproc), SERIES_FORCE=1.
set -uo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
pdir=${SERIES_DIR:-$top/patches/linux}
own_files=${SERIES_OWN_FILES:-1}
series=$pdir/series
pristine=$build/linux/pristine
work=${SERIES_WORK:-$build/series-check}
okdir=$build/series-check.ok
src=$work/src
siw=$src/drivers/infiniband/sw/siw
werror=${SERIES_WERROR:-1}
jobs=${SERIES_JOBS:-$(nproc)}
force=${SERIES_FORCE:-0}

if [ -z "${KDIR:-}" ]; then
	kver=$(ls -1d /lib/modules/6.12.* 2>/dev/null | sed 's|.*/||' | grep -v siwx-debug | sort -V | tail -n 1)
	KDIR=/lib/modules/$kver/build
fi

die() { echo "series-check: $*" >&2; exit 2; }
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
hash() { sha256sum | cut -c1-32; }

[ -d "$KDIR" ] || die "no kernel build tree '$KDIR' (make deps)"
[ -f "$pristine/scripts/checkpatch.pl" ] || die "pristine tree not staged (make stage)"
[ -f "$series" ] || die "$series not found"

# --- the series -------------------------------------------------------
patches=()
while read -r p _; do
	case "$p" in ''|'#'*) continue ;; esac
	[ -f "$pdir/$p" ] || die "series names missing patch $p"
	patches+=("$p")
done <"$series"
n=${#patches[@]}
[ "$n" -gt 0 ] || die "empty series"

# Every patch file is in the series (the cover letter, cover-letter.txt,
# is not a patch: it carries no diff).
# (No "printf | grep -q" here: under pipefail, grep -q leaving at its
# first match can kill the writer with SIGPIPE and fail a good series; CI
# saw it once.)
declare -A in_series=()
for p in "${patches[@]}"; do in_series[$p]=1; done
for f in "$pdir"/*.patch; do
	b=${f##*/}
	[ -n "${in_series[$b]:-}" ] || die "$b is in $pdir but not in the series"
done

# --- checkpatch -------------------------------------------------------
cp_opts=(--no-tree --quiet --show-types --strict --no-signoff
	 --ignore FILE_PATH_CHANGES --ignore UNKNOWN_COMMIT_ID)

# checkpatch_one PATCH: complaints on stdout; returns 0 if there are none.
checkpatch_one() {
	local out rc
	out=$(perl "$pristine/scripts/checkpatch.pl" "${cp_opts[@]}" "$1" 2>&1)
	rc=$?
	[ $rc = 0 ] && [ -z "$out" ] && return 0
	printf '%s\n' "$out"
	return 1
}

# --- build ------------------------------------------------------------
# kbuild: problems on stdout; returns non-zero on a failed build, or on a
# warning unless SERIES_WERROR=0.
kbuild() {
	local log=$work/build.log rc warn
	make -C "$KDIR" M="$siw" W=1 ${werror:+KCFLAGS=-Werror} -j"$jobs" \
		modules >"$log" 2>&1
	rc=$?
	warn=$(grep -E 'warning:|^WARNING:' "$log")
	if [ $rc != 0 ]; then
		grep -E 'error|warning|Error' "$log" | head -n 40
		echo "(full log: $log)"
		return 1
	fi
	[ -f "$siw/siw.ko" ] || { echo "no siw.ko built"; return 1; }
	if [ -n "$warn" ]; then
		printf '%s\n' "$warn"
		[ -n "$werror" ] && return 1
	fi
	return 0
}

[ "$werror" = 0 ] && werror=
start=$(now)

# Prefix keys: h[0] covers everything but the patches, h[i] adds patch i.
h=()
h[0]=$({
	cat "$0"
	echo "$KDIR $(cat "$KDIR/include/config/kernel.release" 2>/dev/null)"
	echo "werror=$werror"
	cat "$build/linux/pristine.stamp" 2>/dev/null
	echo "own_files=$own_files"
	[ "$own_files" = 0 ] || cat "$top"/drivers/infiniband/sw/siw/* 2>/dev/null
} | hash)
for ((i = 1; i <= n; i++)); do
	h[i]=$({ echo "${h[i - 1]}"; cat "$pdir/${patches[i - 1]}"; } | hash)
done
mkdir -p "$okdir"
done_to=0
if [ "$force" != 1 ]; then
	while [ $done_to -lt $n ] && [ -f "$okdir/${h[done_to + 1]}" ]; do
		done_to=$((done_to + 1))
	done
fi

rm -rf "$work"
mkdir -p "$siw" "$src/include/uapi/rdma"
cp -r "$pristine/drivers/infiniband/sw/siw/." "$siw/"
cp "$pristine/include/uapi/rdma/siw-abi.h" "$src/include/uapi/rdma/"
[ "$own_files" = 0 ] || cp "$top"/drivers/infiniband/sw/siw/* "$siw/"
cat >"$siw/Kbuild" <<'EOF'
# generated by tools/series-check.sh: the series alone
CONFIG_RDMA_SIW := m
include $(src)/Makefile
LINUXINCLUDE := -I$(src)/../../../../include/uapi $(LINUXINCLUDE)
EOF

echo "  SERIES  $n patches; KDIR=$KDIR; W=1${werror:+ -Werror}; checkpatch --strict"

apply() {
	patch -d "$src" -p1 -F0 -N -s --no-backup-if-mismatch \
		-i "$pdir/$1" >"$work/patch.log" 2>&1 && return 0
	sed 's/^/    /' "$work/patch.log"
	return 1
}

row() { printf '  SERIES  [%2d/%d] %-52.52s %s\n' "$@"; }
indent() { sed 's/^/    /'; }

if [ $done_to = "$n" ]; then
	echo "  SERIES  all $n prefixes passed before, unchanged (SERIES_FORCE=1 to check them again)"
elif [ $done_to = 0 ]; then
	t0=$(now)
	out=$(kbuild)
	rc=$?
	row 0 "$n" "(pristine siw)" "build $([ $rc = 0 ] && echo ok || echo FAIL) $(secs "$t0" "$(now)")s"
	[ -n "$out" ] && printf '%s\n' "$out" | indent
	[ $rc = 0 ] || { echo "  SERIES  FAILED: pristine siw does not build"; exit 1; }
fi

fail=0
times=()
for ((i = 1; i <= n; i++)); do
	p=${patches[i - 1]}
	if [ $done_to = "$n" ]; then
		# nothing changed since every prefix passed: no need to rebuild
		continue
	fi
	if [ $i -le $done_to ]; then
		apply "$p" || { row "$i" "$n" "$p" "does not apply"; exit 1; }
		row "$i" "$n" "$p" "passed before"
		continue
	fi
	t0=$(now)
	apply "$p" || { row "$i" "$n" "$p" "does not apply"; fail=1; break; }
	cp_out=$(checkpatch_one "$pdir/$p")
	cp_rc=$?
	t1=$(now)
	b_out=$(kbuild)
	b_rc=$?
	t2=$(now)
	times+=("$(secs "$t0" "$t2") $p")
	row "$i" "$n" "$p" "$(printf 'checkpatch %-4s %4ss  build %-4s %5ss' \
		"$([ $cp_rc = 0 ] && echo ok || echo FAIL)" "$(secs "$t0" "$t1")" \
		"$([ $b_rc = 0 ] && echo ok || echo FAIL)" "$(secs "$t1" "$t2")")"
	[ -n "$cp_out" ] && printf '%s\n' "$cp_out" | indent
	[ -n "$b_out" ] && printf '%s\n' "$b_out" | indent
	if [ $cp_rc = 0 ] && [ $b_rc = 0 ]; then
		: >"$okdir/${h[i]}"
	else
		fail=1
	fi
	if [ $b_rc != 0 ]; then
		echo "  SERIES  build broken by $p"
		break
	fi
done

if [ ${#times[@]} -gt 0 ]; then
	echo "  SERIES  slowest: $(printf '%s\n' "${times[@]}" | sort -rn | head -n 3 |
		awk '{ printf "%s%s %ss", (NR > 1 ? ", " : ""), substr($2, 1, 4), $1 }')"
fi
if [ $fail = 0 ]; then
	echo "  SERIES  ok: each of the $n prefixes builds, every patch checkpatch --strict clean ($(secs "$start" "$(now)")s)"
else
	echo "  SERIES  FAILED ($(secs "$start" "$(now)")s)"
fi

# --- the rdma_cm series (patches/linux-cma) ---------------------------
# The same for the RDMA core's CMs: each prefix on the pristine core
# files builds rdma_cm.ko and iw_cm.ko (W=1, -Werror), each patch
# checkpatch --strict.
cdir=$top/patches/linux-cma
if [ -f "$cdir/series" ]; then
	cwork=$work/cma
	core=$cwork/drivers/infiniband/core
	rm -rf "$cwork"
	mkdir -p "$core"
	cp "$pristine/drivers/infiniband/core"/cma*.c \
		"$pristine/drivers/infiniband/core"/iwcm.c \
		"$pristine/drivers/infiniband/core"/iwpm_*.c \
		"$pristine/drivers/infiniband/core"/*.h "$core/"
	cp "$top/tools/rdma_cm/Kbuild" "$core/Kbuild"
	cpatches=()
	while read -r p _; do
		case "$p" in ''|'#'*) continue ;; esac
		cpatches+=("$p")
	done <"$cdir/series"
	cn=${#cpatches[@]}
	for ((i = 0; i <= cn; i++)); do
		t0=$(now)
		p="(pristine cma)" cp_rc=0 cp_out=
		if [ $i -gt 0 ]; then
			p=${cpatches[i - 1]}
			if ! patch -d "$cwork" -p1 -F0 -N -s --no-backup-if-mismatch \
				-i "$cdir/$p" >"$cwork.log" 2>&1; then
				row "$i" "$cn" "$p" "does not apply"
				fail=1
				break
			fi
			cp_out=$(checkpatch_one "$cdir/$p")
			cp_rc=$?
		fi
		make -C "$KDIR" M="$core" W=1 ${werror:+KCFLAGS=-Werror} \
			-j"$jobs" modules >"$cwork.log" 2>&1
		b_rc=$?
		warn=$(grep -E 'warning:|^WARNING:' "$cwork.log")
		[ -z "$warn" ] || [ -z "$werror" ] || b_rc=1
		printf '  CMA     [%2d/%d] %-52.52s checkpatch %-4s build %-4s %5ss\n' \
			"$i" "$cn" "$p" "$([ $cp_rc = 0 ] && echo ok || echo FAIL)" \
			"$([ $b_rc = 0 ] && echo ok || echo FAIL)" "$(secs "$t0" "$(now)")"
		[ -z "$cp_out" ] || printf '%s\n' "$cp_out" | indent
		[ $b_rc = 0 ] || { grep -E 'error|warning' "$cwork.log" | head -n 20 | indent; }
		[ $cp_rc = 0 ] && [ $b_rc = 0 ] || fail=1
	done
	[ $fail = 0 ] && echo "  CMA     ok: each of the $cn prefixes builds rdma_cm.ko and iw_cm.ko, every patch checkpatch --strict clean"
fi
exit $fail
