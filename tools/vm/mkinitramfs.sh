#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# mkinitramfs.sh [KVER] [OUT]
#
# Build the tiny initramfs used by tools/vm/run: a static busybox, the stage-1
# init (tools/vm/init) and the decompressed modules needed to mount the host
# root over virtio-9p as the lower layer of an overlay:
#     netfs 9pnet 9p 9pnet_virtio overlay   (+ their modules.dep dependencies)
#
# KVER defaults to the newest installed 6.12 kernel, OUT to
# <repo top>/build/vm/initramfs-$KVER.cpio.gz.  The image is rebuilt only when
# one of its inputs (this script, init, busybox, the module files) changed;
# the checksum of the inputs is kept in OUT.stamp.  Prints OUT on stdout.
#
# Exit status: 0 ok, 2 missing prerequisites, 1 other errors.

set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

INITRD_MODULES="netfs 9pnet 9p 9pnet_virtio overlay"

die() { echo "mkinitramfs: $*" >&2; exit "${RC:-1}"; }

newest_kver() {
	# Newest installed 6.12 kernel that has modules and an image.
	# shellcheck disable=SC2012  # names are plain kernel versions
	ls -d /lib/modules/6.12.* 2>/dev/null | sed 's|.*/||' | grep -v siwx-debug | sort -V |
	while read -r k; do
		[ -e "/boot/vmlinuz-$k" ] && echo "$k"
	done | tail -n 1
}

KVER=${1:-}
[ -n "$KVER" ] || KVER=$(newest_kver)
[ -n "$KVER" ] || RC=2 die "no 6.12 kernel installed (/lib/modules/6.12.*, /boot/vmlinuz-6.12.*); apt-get install linux-image-6.12-amd64"
OUT=${2:-$TOP/build/vm/initramfs-$KVER.cpio.gz}

MODDIR=/lib/modules/$KVER
[ -r "$MODDIR/modules.dep" ] || RC=2 die "missing $MODDIR/modules.dep (kernel $KVER not installed?)"

BUSYBOX=
for b in /bin/busybox /usr/bin/busybox; do
	if [ -x "$b" ] && file -L "$b" 2>/dev/null | grep -q 'statically linked'; then
		BUSYBOX=$b; break
	fi
done
if [ -z "$BUSYBOX" ] && [ -x /bin/busybox ] && ! command -v file >/dev/null; then
	BUSYBOX=/bin/busybox	# cannot check; busybox-static is the usual one
fi
[ -n "$BUSYBOX" ] || RC=2 die "static busybox not found; apt-get install busybox-static"
for t in cpio gzip xz sha256sum; do
	command -v "$t" >/dev/null || RC=2 die "missing host tool '$t'"
done
[ -r "$HERE/init" ] || RC=2 die "missing $HERE/init"

# Resolve module names to modules.dep paths, dependencies first, no dups.
resolve() {
	local name=$1 line path dep
	line=$(grep -E "(^|/)${name}\.ko(\.[a-z]+)?:" "$MODDIR/modules.dep" | head -n 1)
	[ -n "$line" ] || RC=2 die "module '$name' not in $MODDIR/modules.dep"
	path=${line%%:*}
	# modules.dep lists the full transitive closure, in an order where
	# loading from the end to the start works.
	for dep in $(echo "${line#*:}" | tr ' ' '\n' | tac); do
		case " $ORDER " in *" $dep "*) ;; *) ORDER="$ORDER $dep" ;; esac
	done
	case " $ORDER " in *" $path "*) ;; *) ORDER="$ORDER $path" ;; esac
}
ORDER=
for m in $INITRD_MODULES; do resolve "$m"; done

# Cache check: checksum of everything that goes into the image.
STAMP=$( {
	echo "kver=$KVER modules=$INITRD_MODULES"
	sha256sum "$HERE/mkinitramfs.sh" "$HERE/init" "$BUSYBOX"
	for p in $ORDER; do sha256sum "$MODDIR/$p"; done
} | sha256sum | cut -d' ' -f1)
if [ -s "$OUT" ] && [ "$(cat "$OUT.stamp" 2>/dev/null)" = "$STAMP" ]; then
	echo "$OUT"
	exit 0
fi

mkdir -p "$(dirname "$OUT")"
STAGE=$(mktemp -d "${TMPDIR:-/tmp}/siwx-initramfs.XXXXXX")
trap 'rm -rf "$STAGE" "$OUT.tmp.$$"' EXIT

mkdir -p "$STAGE"/bin "$STAGE"/dev "$STAGE"/proc "$STAGE"/sys \
	"$STAGE"/lower "$STAGE"/rw "$STAGE"/newroot "$STAGE"/modules
cp "$BUSYBOX" "$STAGE/bin/busybox"
ln -s busybox "$STAGE/bin/sh"
install -m 0755 "$HERE/init" "$STAGE/init"
: > "$STAGE/modules/load.order"
for p in $ORDER; do
	base=$(basename "$p")
	case $base in
	*.ko.xz)  xz -dc "$MODDIR/$p" > "$STAGE/modules/${base%.xz}"; base=${base%.xz} ;;
	*.ko.gz)  gzip -dc "$MODDIR/$p" > "$STAGE/modules/${base%.gz}"; base=${base%.gz} ;;
	*.ko.zst) zstd -qdc "$MODDIR/$p" > "$STAGE/modules/${base%.zst}"; base=${base%.zst} ;;
	*.ko)     cp "$MODDIR/$p" "$STAGE/modules/$base" ;;
	*)        die "unexpected module file $p" ;;
	esac
	echo "$base" >> "$STAGE/modules/load.order"
done
echo "$KVER" > "$STAGE/kver"

(cd "$STAGE" && find . -mindepth 1 | LC_ALL=C sort |
	cpio -o -H newc -R 0:0 --quiet) | gzip -n -6 > "$OUT.tmp.$$"
mv -f "$OUT.tmp.$$" "$OUT"
echo "$STAMP" > "$OUT.stamp.tmp.$$" && mv -f "$OUT.stamp.tmp.$$" "$OUT.stamp"
echo "mkinitramfs: built $OUT ($(tr '\n' ' ' < "$STAGE/modules/load.order"))" >&2
echo "$OUT"
