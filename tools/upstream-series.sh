#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Export the kernel series as upstream would receive it.
#
#   tools/upstream-series.sh [BUILD_DIR]
#
# patches/linux/ keeps the logic of some features in files of our own
# (drivers/infiniband/sw/siw/siwx_*.c, .h): the patch that calls one adds
# its object to siw's Makefile, and the file itself is not in the patch.
# Upstream needs each file in the patch that first names it. This script
# applies the series to pristine siw in a scratch git repository
# (BUILD_DIR/upstream-series/git), and after every patch that adds
# "siw-y += siwx_NAME.o" to the Makefile it adds siwx_NAME.c (and
# siwx_NAME.h, if there is one, and siwx.h, the header our files share,
# with the first file that includes it) to that commit. It then writes the
# series, with diffstats, into BUILD_DIR/upstream-series/out: the
# patches and `series`. The cover letter stays patches/linux/cover-letter.txt
# (its diffstat counts the upstream files only; git format-patch
# --cover-letter in BUILD_DIR/upstream-series/git gives the full one).
#
# The result is checked by tools/series-check.sh like the series itself,
# but without our files in the tree: SERIES_DIR=.../out SERIES_OWN_FILES=0
# (make upstream-series does both). Needs git; nothing is committed to
# this repository.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
pdir=$top/patches/linux
own=$top/drivers/infiniband/sw/siw
pristine=$build/linux/pristine
work=$build/upstream-series
repo=$work/git
out=$work/out

die() { echo "upstream-series: $*" >&2; exit 2; }
[ -f "$pristine/drivers/infiniband/sw/siw/Makefile" ] || die "pristine tree not staged (make stage)"
command -v git >/dev/null || die "git not found"

rm -rf "$work"
mkdir -p "$repo/drivers/infiniband/sw" "$repo/include/uapi/rdma" "$out"
cp -r "$pristine/drivers/infiniband/sw/siw" "$repo/drivers/infiniband/sw/"
cp "$pristine/include/uapi/rdma/siw-abi.h" "$repo/include/uapi/rdma/"

g() { git -C "$repo" -c user.name=siwx -c user.email=siwx@localhost "$@"; }
g init -q
g add -A
g commit -q -m pristine
g tag pristine

n=0 added=()
while read -r p _; do
	case "$p" in ''|'#'*) continue ;; esac
	n=$((n + 1))
	g am -q --keep-cr "$pdir/$p" || die "$p does not apply (git am)"
	# the objects of ours this patch adds to siw's Makefile
	objs=$(sed -n '/^+++ b\/drivers\/infiniband\/sw\/siw\/Makefile/,/^diff --git/p' "$pdir/$p" |
		sed -n 's/^+siw-y[[:space:]]*+=[[:space:]]*\(siwx_[a-z0-9_]*\)\.o[[:space:]]*$/\1/p')
	[ -n "$objs" ] || continue
	for o in $objs; do
		[ -f "$own/$o.c" ] || die "$p adds $o.o, but drivers/infiniband/sw/siw/$o.c does not exist"
		cp "$own/$o.c" "$repo/drivers/infiniband/sw/siw/"
		[ ! -f "$own/$o.h" ] || cp "$own/$o.h" "$repo/drivers/infiniband/sw/siw/"
		if grep -q '^#include "siwx\.h"' "$own/$o.c" &&
			[ ! -f "$repo/drivers/infiniband/sw/siw/siwx.h" ]; then
			cp "$own/siwx.h" "$repo/drivers/infiniband/sw/siw/"
		fi
		added+=("$o ($p)")
	done
	g add -A
	g commit -q --amend --no-edit
done <"$pdir/series"

g format-patch -q --no-signature -n -o "$out" pristine..HEAD
(cd "$out" && ls 0*.patch >series)
echo "  UPSTREAM $n patches in $out; our files folded in: ${added[*]:-none}"
