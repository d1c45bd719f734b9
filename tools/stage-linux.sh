#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Stage the siw sources for building, from Debian's linux-source package.
#
#   tools/stage-linux.sh [BUILD_DIR]
#
# 1. Extract only the members siwx needs from $LINUX_TARBALL into
#    BUILD_DIR/linux/pristine (cached: redone only when the tarball changes).
# 2. BUILD_DIR/upstream/src: the pristine siw, unmodified (interop peer and
#    performance baseline; never shipped as siwx).
# 3. BUILD_DIR/siwx/src: the pristine siw + patches/linux/series applied in
#    order + our own files from drivers/ and include/ + the top-level Kbuild.
#
# Trees are rebuilt in a scratch directory and synced by content, so files
# whose content did not change keep their mtime and kbuild stays incremental,
# while a changed or removed patch or file always re-stages correctly.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
tarball=${LINUX_TARBALL:-/usr/src/linux-source-6.12.tar.xz}

members=(
	drivers/infiniband/sw/siw
	drivers/infiniband/core
	include/uapi/rdma/siw-abi.h
	scripts/checkpatch.pl
	scripts/spelling.txt
	scripts/const_structs.checkpatch
	tools/testing/selftests/kselftest_harness.h
	tools/testing/selftests/kselftest.h
)

die() { echo "stage-linux: $*" >&2; exit 1; }

[ -r "$tarball" ] || die "$tarball not found (install linux-source-6.12: make deps)"
command -v rsync >/dev/null || die "rsync not found (make deps)"

# --- 1. pristine extract --------------------------------------------------
pristine=$build/linux/pristine
stamp="$tarball $(stat -c '%s %Y' "$tarball") ${members[*]}"
if [ "$(cat "$pristine.stamp" 2>/dev/null)" != "$stamp" ]; then
	echo "  STAGE   extracting siw from $(basename "$tarball")"
	rm -rf "$pristine" "$pristine.tmp"
	mkdir -p "$pristine.tmp"
	# The tarball has one top directory (linux-source-6.12/).
	topdir=$(tar -tJf "$tarball" 2>/dev/null | head -n 1 | cut -d/ -f1) || true
	[ -n "$topdir" ] || die "cannot read $tarball"
	tar -xJf "$tarball" -C "$pristine.tmp" --strip-components=1 \
		"${members[@]/#/$topdir/}"
	mv "$pristine.tmp" "$pristine"
	echo "$stamp" >"$pristine.stamp"
fi

# Build outputs that live in the staged trees and must survive a re-stage.
sync_tree() {
	rsync -rlc --delete \
		--exclude='*.o' --exclude='*.ko' --exclude='*.mod' \
		--exclude='*.mod.c' --exclude='.*.cmd' --exclude='.*.d' \
		--exclude='Module.symvers' --exclude='modules.order' \
		--exclude='.tmp_*' --exclude='.module-common.o' \
		--exclude='*.gcno' --exclude='*.gcda' \
		"$1/" "$2/"
}

copy_pristine() {
	mkdir -p "$1/drivers/infiniband/sw" "$1/include/uapi/rdma"
	cp -r "$pristine/drivers/infiniband/sw/siw" "$1/drivers/infiniband/sw/"
	cp "$pristine/include/uapi/rdma/siw-abi.h" "$1/include/uapi/rdma/"
}

# apply_series NAME TREE: patches/NAME/series onto TREE, in order
apply_series() {
	local dir=$top/patches/$1 p
	[ -f "$dir/series" ] || return 0
	while read -r p _; do
		case "$p" in ''|'#'*) continue ;; esac
		[ -f "$dir/$p" ] || die "patches/$1/series names missing patch $p"
		if ! patch -d "$2" -p1 -F0 -N -s --no-backup-if-mismatch \
			-i "$dir/$p" >"$scratch/patch.log" 2>&1; then
			cat "$scratch/patch.log" >&2
			die "patch $p ($1) does not apply"
		fi
	done <"$dir/series"
}

# --- 2. upstream ----------------------------------------------------------
scratch=$build/.stage-tmp
rm -rf "$scratch"
mkdir -p "$scratch/upstream" "$build/upstream/src"
copy_pristine "$scratch/upstream"
sync_tree "$scratch/upstream" "$build/upstream/src"

# --- 3. siwx --------------------------------------------------------------
mkdir -p "$scratch/siwx" "$build/siwx/src"
copy_pristine "$scratch/siwx"
apply_series linux "$scratch/siwx"
# Our own files, laid out as in the kernel tree.
for d in drivers include; do
	[ -d "$top/$d" ] && cp -r "$top/$d/." "$scratch/siwx/$d/"
done
cp "$top/Kbuild" "$scratch/siwx/drivers/infiniband/sw/siw/Kbuild"
sync_tree "$scratch/siwx" "$build/siwx/src"

# --- 4. rdma_cm, iw_cm: the RDMA core's CMs with patches/linux-cma ---------
core=drivers/infiniband/core
mkdir -p "$scratch/rdma_cm/$core" "$build/rdma_cm/src"
cp "$pristine/$core"/cma*.c "$pristine/$core"/iwcm.c "$pristine/$core"/iwpm_*.c \
	"$pristine/$core"/*.h "$scratch/rdma_cm/$core/"
apply_series linux-cma "$scratch/rdma_cm"
cp "$top/tools/rdma_cm/Kbuild" "$scratch/rdma_cm/$core/Kbuild"
sync_tree "$scratch/rdma_cm" "$build/rdma_cm/src"
rm -rf "$scratch"
