#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build librpma (remote persistent memory access) from Debian 13's source
# package against our rdma-core, with its examples.
#
#   tools/build-rpma.sh WORKDIR RDMA_PREFIX PREFIX
#
# WORKDIR/src     the pristine release
# WORKDIR/build   cmake/ninja build directory (incremental)
# PREFIX          install prefix: lib/librpma.so*, include/librpma.h
# WORKDIR/build/examples/NN-*/{server,client}: the examples (not installed)
#
# The version is pinned: the tarball's SHA-256 must match (the value is
# the one in trixie's Sources index for rpma 1.3.0-2). rpma 1.3.0 is the
# first release that uses ibv_wr_flush()/ibv_wr_atomic_write() when the
# device reports them, and emulates them otherwise (see
# Documentation/flush.md, "pmem setup").
set -euo pipefail

RPMA_VERSION=1.3.0
RPMA_SHA256=71999a5536e9568dc0d5547d988ff3d4c9d386a9af56184f2dfd083b96c88d00

top=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: build-rpma.sh WORKDIR RDMA_PREFIX PREFIX"
work=${1:?$usage}
rdma=${2:?$usage}
prefix=${3:?$usage}
dl=$top/build/dl
tarball=$dl/rpma_$RPMA_VERSION.orig.tar.gz

die() { echo "build-rpma: $*" >&2; exit 1; }

[ -f "$rdma/lib/pkgconfig/libibverbs.pc" ] || die "no rdma-core in $rdma (make rdma-core)"
mkdir -p "$dl" "$work"
if ! echo "$RPMA_SHA256  $tarball" | sha256sum -c --status 2>/dev/null; then
	echo "  FETCH   rpma $RPMA_VERSION (Debian source package, trixie)"
	rm -f "$tarball"
	(cd "$dl" && apt-get source -q --tar-only --download-only "rpma/trixie") >"$dl/fetch-rpma.log" 2>&1 ||
		{ cat "$dl/fetch-rpma.log" >&2; die "apt-get source rpma/trixie failed (make deps adds the deb-src entry)"; }
	[ -f "$tarball" ] || die "trixie no longer has rpma $RPMA_VERSION; update the pin in $0"
	echo "$RPMA_SHA256  $tarball" | sha256sum -c --status || die "$tarball: SHA-256 mismatch"
fi

if [ "$(cat "$work/src.stamp" 2>/dev/null)" != "$RPMA_SHA256" ]; then
	echo "  STAGE   rpma $RPMA_VERSION"
	rm -rf "$work/src"
	mkdir -p "$work/src"
	tar -xzf "$tarball" -C "$work/src" --strip-components=1
	echo "$RPMA_SHA256" >"$work/src.stamp"
	rm -rf "$work/build"
fi

# the examples map a pmem path (a devdax device) only when built with
# libpmem (USE_LIBPMEM); without it they use DRAM
pkg-config --exists libpmem || die "libpmem not found (apt-get install libpmem-dev): the examples need it for a pmem path"
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_INSTALL_PREFIX="$prefix"
	-DBUILD_TESTS=OFF -DBUILD_DOC=OFF -DBUILD_EXAMPLES=ON -DBUILD_DEVELOPER_MODE=OFF
	-DCMAKE_INSTALL_RPATH="$prefix/lib;$rdma/lib" -DCMAKE_BUILD_RPATH="$rdma/lib")
if [ ! -f "$work/build/build.ninja" ] || [ "$(cat "$work/build/.args" 2>/dev/null)" != "${cmake_args[*]}" ]; then
	rm -rf "$work/build"
	mkdir -p "$work/build"
	echo "  CMAKE   rpma -> $prefix (rdma-core $rdma)"
	(cd "$work/build" && PKG_CONFIG_PATH=$rdma/lib/pkgconfig cmake "${cmake_args[@]}" "$work/src") \
		>"$work/cmake.log" 2>&1 ||
		{ tail -30 "$work/cmake.log" >&2; die "cmake failed (log: $work/cmake.log)"; }
	echo "${cmake_args[*]}" >"$work/build/.args"
fi
echo "  NINJA   rpma"
ninja -C "$work/build" >"$work/ninja.log" 2>&1 ||
	{ tail -40 "$work/ninja.log" >&2; die "build failed (log: $work/ninja.log)"; }
ninja -C "$work/build" install >"$work/install.log" 2>&1 ||
	{ tail -20 "$work/install.log" >&2; die "install failed"; }
echo "  RPMA    rpma $RPMA_VERSION in $prefix"
