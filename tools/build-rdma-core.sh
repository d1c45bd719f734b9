#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build rdma-core from Debian's source package plus patches/rdma-core.
#
#   tools/build-rdma-core.sh WORKDIR PREFIX [DESTDIR]
#
# WORKDIR/src     the pristine release with our series applied (re-staged
#                 whenever the tarball or a patch changes)
# WORKDIR/build   cmake/ninja build directory (incremental)
# PREFIX          install prefix (libibverbs, librdmacm, providers incl.
#                 siw and rxe, the utilities, pyverbs)
# RDMA_CORE_CMAKE_EXTRA  more cmake arguments (environment)
#
# The version is pinned: the tarball's SHA-256 must match.
set -euo pipefail

RDMA_CORE_VERSION=56.1
RDMA_CORE_SHA256=63ce7f2baa7242c2dbc76375dac957c420187dd27f8c5e148efc07971ee522a8

top=$(cd "$(dirname "$0")/.." && pwd)
work=${1:?usage: build-rdma-core.sh WORKDIR PREFIX [DESTDIR]}
prefix=${2:?usage: build-rdma-core.sh WORKDIR PREFIX [DESTDIR]}
destdir=${3:-}
dl=$top/build/dl
tarball=$dl/rdma-core_$RDMA_CORE_VERSION.orig.tar.gz

die() { echo "build-rdma-core: $*" >&2; exit 1; }

mkdir -p "$dl" "$work"
if ! echo "$RDMA_CORE_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
	echo "  FETCH   rdma-core $RDMA_CORE_VERSION (Debian source package, trixie)"
	rm -f "$tarball"
	(cd "$dl" && apt-get source -q --tar-only --download-only "rdma-core/trixie") >"$dl/fetch.log" 2>&1 ||
		{ cat "$dl/fetch.log" >&2; die "apt-get source failed (make deps adds the deb-src entry)"; }
	[ -f "$tarball" ] || die "trixie no longer has rdma-core $RDMA_CORE_VERSION (got: $(ls "$dl"/*.orig.tar.* 2>/dev/null | xargs -n1 basename 2>/dev/null)); update the pin in $0"
	echo "$RDMA_CORE_SHA256  $tarball" | sha256sum -c --status ||
		die "$tarball: SHA-256 mismatch"
fi

# Stage: extract + apply series when the inputs change.
series=$top/patches/rdma-core/series
patch_list() {
	[ -f "$series" ] || return 0
	grep -v '^#' "$series" | while read -r p _; do
		[ -z "$p" ] || echo "$top/patches/rdma-core/$p"
	done
}
inputs=$( { echo "$RDMA_CORE_SHA256"; patch_list | xargs -r cat; } | sha256sum)
if [ "$(cat "$work/src.stamp" 2>/dev/null)" != "$inputs" ]; then
	echo "  STAGE   rdma-core $RDMA_CORE_VERSION + patches/rdma-core"
	rm -rf "$work/src.tmp"
	mkdir -p "$work/src.tmp"
	tar -xzf "$tarball" -C "$work/src.tmp" --strip-components=1
	for p in $(patch_list); do
		patch -d "$work/src.tmp" -p1 -F0 -N -s --no-backup-if-mismatch -i "$p" ||
			die "patch $(basename "$p") does not apply"
	done
	mkdir -p "$work/src"
	# Sync by content so that ninja rebuilds only what a patch touched.
	rsync -rlc --delete "$work/src.tmp/" "$work/src/"
	rm -rf "$work/src.tmp"
	echo "$inputs" >"$work/src.stamp"
fi

cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix"
	-DCMAKE_INSTALL_PYTHON_ARCH_LIB="$prefix/lib/python3/dist-packages"
	-DPYTHON_EXECUTABLE=/usr/bin/python3 -DNO_MAN_PAGES=1 -DENABLE_RESOLVE_NEIGH=1)
# more cmake arguments, blank separated (tools/deb: the package's RUNPATH)
read -r -a extra <<< "${RDMA_CORE_CMAKE_EXTRA:-}"
cmake_args+=("${extra[@]}")
# cmake reads CFLAGS/LDFLAGS from the environment at configure time only: a
# change of them configures again
stamp="${cmake_args[*]} CFLAGS=${CFLAGS:-} LDFLAGS=${LDFLAGS:-}"
if [ ! -f "$work/build/build.ninja" ] || [ "$(cat "$work/build/.args" 2>/dev/null)" != "$stamp" ]; then
	rm -rf "$work/build"
	mkdir -p "$work/build"
	echo "  CMAKE   rdma-core -> $prefix"
	# Debian's python3 (with cython3), not a user's pyenv/virtualenv.
	(cd "$work/build" && PATH=/usr/sbin:/usr/bin:/sbin:/bin cmake "${cmake_args[@]}" "$work/src") \
		>"$work/cmake.log" 2>&1 ||
		{ tail -30 "$work/cmake.log" >&2; die "cmake failed (log: $work/cmake.log)"; }
	grep -q 'cython NOT found' "$work/cmake.log" && die "cython3 not found: pyverbs would be missing (make deps)"
	echo "$stamp" >"$work/build/.args"
fi
echo "  NINJA   rdma-core"
ninja -C "$work/build" >"$work/ninja.log" 2>&1 ||
	{ tail -40 "$work/ninja.log" >&2; die "build failed (log: $work/ninja.log)"; }
DESTDIR=$destdir ninja -C "$work/build" install >"$work/install.log" 2>&1 ||
	{ tail -20 "$work/install.log" >&2; die "install failed"; }
echo "  RDMA    rdma-core $RDMA_CORE_VERSION in $destdir$prefix"
