#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# Build the Debian packages of siwx (`make deb`; Documentation/install.md).
#
#   tools/deb/build-debs.sh BUILD_DIR OUT_DIR SIWX_VERSION
#
# OUT_DIR/siwx-dkms_V_all.deb        the staged siw sources (patches/linux
#                                    applied, our files, Kbuild) with a
#                                    dkms.conf: DKMS builds siw.ko for every
#                                    installed 6.12 kernel with headers into
#                                    updates/dkms, and refuses other kernels
# OUT_DIR/siwx-rdma-core_V_ARCH.deb  the project's rdma-core (libibverbs,
#                                    librdmacm, the providers with libsiw and
#                                    siwdv.h, the utilities) in its own prefix,
#                                    /usr/lib/siwx, its programs RUNPATH'd to
#                                    it; siwx-env(1) runs any program with it.
#                                    Nothing outside /usr/lib/siwx but
#                                    /usr/bin/siwx-env and the docs: Debian's
#                                    rdma-core stays as it is.
# OUT_DIR/siwx-wireshark_V_ARCH.deb  the Lua dissector in Wireshark's
#                                    global plugin folder
# OUT_DIR/siwx-version               SIWX_VERSION, the module's version string
# OUT_DIR/lintian.txt                what lintian says about both (if present)
#
# V is SIWX_VERSION with '-' as '.' (a Debian upstream version without a
# revision). BUILD_DIR must hold the staged sources (make stage). The
# rdma-core build for the package prefix lives in BUILD_DIR/deb/rdma-core
# (incremental, like build/rdma-core).
set -euo pipefail

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tools/deb
build=${1:?usage: build-debs.sh BUILD_DIR OUT_DIR SIWX_VERSION}
out=${2:?usage: build-debs.sh BUILD_DIR OUT_DIR SIWX_VERSION}
modver=${3:?usage: build-debs.sh BUILD_DIR OUT_DIR SIWX_VERSION}
ver=${modver//-/.}
arch=$(dpkg --print-architecture)
work=$build/deb
prefix=/usr/lib/siwx
# the Maintainer field and changelog signature: DEBFULLNAME/DEBEMAIL as for
# dch(1), else the project (a reserved .invalid domain: no mail address)
maint="${DEBFULLNAME:-siwx developers} <${DEBEMAIL:-siwx@siwx.invalid}>"

die() { echo "build-debs: $*" >&2; exit 1; }

src=$build/siwx/src
[ -f "$src/drivers/infiniband/sw/siw/Kbuild" ] || die "no staged siwx sources in $src (make stage)"
case $ver in [0-9]*) ;; *) die "version '$ver' does not start with a digit" ;; esac

mkdir -p "$out" "$work"
# only this version's packages in OUT_DIR: suite deb installs siwx-*.deb
rm -f "$out"/siwx-dkms_*.deb "$out"/siwx-rdma-core_*.deb "$out"/siwx-wireshark_*.deb

# the common parts of a binary package's tree: docs, md5sums, size
doc_files() {	# ROOT PACKAGE
	local d=$1/usr/share/doc/$2
	install -d "$d"
	sed "s/@PACKAGE@/$2/" "$here/copyright" > "$d/copyright"
	{
		echo "$2 ($ver) unstable; urgency=medium"
		echo
		echo "  * Built from siwx $modver (make deb)."
		echo
		echo " -- $maint  $(date -R -d "@${SOURCE_DATE_EPOCH:-$(git -C "$top" log -1 --format=%ct 2>/dev/null || date +%s)}")"
	} | gzip -9n > "$d/changelog.gz"
}
finish() {	# ROOT: DEBIAN/md5sums, modes
	local r=$1
	find "$r" -path "$r/DEBIAN" -prune -o -type d -print0 | xargs -0 chmod 0755
	(cd "$r" && find . -path ./DEBIAN -prune -o -type f -print0 | sort -z |
		xargs -0 md5sum | sed 's| \./| |') > "$r/DEBIAN/md5sums"
	chmod 0644 "$r/DEBIAN/md5sums"
}
installed_size() { du -sk --exclude=DEBIAN "$1" | cut -f1; }
build_deb() {	# ROOT FILE
	dpkg-deb --root-owner-group -Zxz --build "$1" "$2" >/dev/null
	echo "  DEB     $2 ($(du -h "$2" | cut -f1))"
}

# ---------------------------------------------------------------- siwx-dkms
root=$work/siwx-dkms
rm -rf "$root"
usrc=$root/usr/src/siwx-$ver
install -d "$root/DEBIAN" "$usrc"
# the sources only: no objects or generated files of a local build
rsync -a --prune-empty-dirs --include='*/' --exclude='*.mod.c' \
	--include='*.c' --include='*.h' --include='Kbuild' --include='Makefile' \
	--include='Kconfig' --exclude='*' "$src/" "$usrc/"
find "$usrc" -type f -exec chmod 0644 {} +
sed -e "s/@VERSION@/$ver/g" -e "s/@MODVERSION@/$modver/g" "$here/dkms.conf.in" > "$usrc/dkms.conf"
chmod 0644 "$usrc/dkms.conf"
doc_files "$root" siwx-dkms
for s in postinst prerm; do
	sed -e "s/@VERSION@/$ver/g" "$here/siwx-dkms.$s" > "$root/DEBIAN/$s"
	chmod 0755 "$root/DEBIAN/$s"
done
finish "$root"
cat > "$root/DEBIAN/control" <<EOF
Package: siwx-dkms
Source: siwx
Version: $ver
Architecture: all
Maintainer: $maint
Installed-Size: $(installed_size "$root")
Depends: dkms (>= 3.0), kmod
Recommends: linux-headers-6.12-amd64 | linux-headers-6.12
Section: kernel
Priority: optional
Description: soft-iWARP RDMA driver with protocol extensions (DKMS)
 siwx extends siw, the Linux kernel's software iWARP driver: RFC 7306
 atomics and immediate data, complete RFC 6581 connection setup, RDMA
 Flush and Atomic Write, protocol counters, and fixes to upstream siw.
 .
 This package holds the module's sources; DKMS builds siw.ko for each
 installed Debian 6.12 kernel that has its headers. Other kernel series
 are refused. User space reaches the extensions through the rdma-core in
 siwx-rdma-core; Debian's rdma-core drives everything upstream siw does.
EOF
build_deb "$root" "$out/siwx-dkms_${ver}_all.deb"

# ----------------------------------------------------------- siwx-rdma-core
# The project's rdma-core for the package prefix, installed into a tree of
# its own; binaries find their libraries through RUNPATH.
rroot=$work/rdma-root
rm -rf "$rroot"
# Debian's build flags, hardening included (cmake takes no CPPFLAGS)
eval "$(DEB_BUILD_MAINT_OPTIONS=hardening=+all dpkg-buildflags --export=sh)"
CFLAGS="$CPPFLAGS $CFLAGS"
export CFLAGS
RDMA_CORE_CMAKE_EXTRA="-DCMAKE_INSTALL_RPATH=$prefix/lib" \
	"$top/tools/build-rdma-core.sh" "$work/rdma-core" "$prefix" "$rroot"
root=$work/siwx-rdma-core
rm -rf "$root"
install -d "$root/DEBIAN" "$root$prefix"
# pyverbs (Debian ships it as python3-pyverbs) and the init scripts, udev
# rules and systemd units under the prefix (inert there) stay out
rsync -a --exclude='/lib/python3' --exclude='/etc/init.d' --exclude='/lib/udev' \
	--exclude='/lib/systemd' --exclude='/share/doc' "$rroot$prefix/" "$root$prefix/"
# strip what is ELF (the debug info stays in the build)
elf_files() {	# DIR: its ELF files, one per line
	find "$1" -type f -print0 | while IFS= read -r -d '' f; do
		[ "$(head -c4 "$f" | od -An -c | tr -d ' ')" != '177ELF' ] || echo "$f"
	done
}
elf_files "$root$prefix" | while read -r f; do
	case $f in
	*.so*) strip --strip-unneeded --remove-section=.comment --remove-section=.note "$f" ;;
	*) strip --remove-section=.comment --remove-section=.note "$f" ;;
	esac
done
install -D -m 0755 "$here/siwx-env" "$root/usr/bin/siwx-env"
install -d "$root/usr/share/man/man1"
gzip -9n < "$here/siwx-env.1" > "$root/usr/share/man/man1/siwx-env.1.gz"
chmod 0644 "$root/usr/share/man/man1/siwx-env.1.gz"
doc_files "$root" siwx-rdma-core
install -D -m 0644 "$here/siwx-rdma-core.lintian-overrides" \
	"$root/usr/share/lintian/overrides/siwx-rdma-core"
# Depends: the shared libraries it needs from outside itself
deps=$(
	elf_files "$root" | xargs -r readelf -d | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort -u |
		while read -r lib; do
			find "$root$prefix/lib" -maxdepth 2 -name "$lib" | grep -q . && continue
			p=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64|x86_64/ { print $NF; exit }')
			[ -n "$p" ] || die "no package has $lib"
			pkg=$(dpkg -S "$(readlink -f "$p")" 2>/dev/null | head -n1 | cut -d: -f1) ||
				pkg=$(dpkg -S "$p" | head -n1 | cut -d: -f1)
			v=$(dpkg-query -W -f='${Version}' "$pkg" | sed 's/-[^-]*$//')
			echo "$pkg (>= $v)"
		done | sort -u | paste -sd, | sed 's/,/, /g'
)
finish "$root"
cat > "$root/DEBIAN/control" <<EOF
Package: siwx-rdma-core
Source: siwx
Version: $ver
Architecture: $arch
Maintainer: $maint
Installed-Size: $(installed_size "$root")
Depends: $deps
Recommends: siwx-dkms
Section: net
Priority: optional
Description: rdma-core with the siwx extensions, in its own prefix
 The rdma-core release siwx is built against, with the siwx patches:
 libibverbs and librdmacm with the RFC 7306, RDMA Flush and Atomic Write
 verbs, the providers including libsiw and its siwdv.h, and the utilities.
 .
 Everything lives under /usr/lib/siwx, beside Debian's rdma-core, which
 it neither replaces nor changes. Run a program with it through
 siwx-env(1), or build against it with
 PKG_CONFIG_PATH=/usr/lib/siwx/lib/pkgconfig.
EOF
build_deb "$root" "$out/siwx-rdma-core_${ver}_${arch}.deb"
# ----------------------------------------------------------- siwx-wireshark
# the Lua dissector (Documentation/wireshark.md) in Wireshark's global Lua
# plugin folder (where make install-wireshark puts it on Debian)
"$top/tools/wireshark/wire-lua.py" --check >/dev/null ||
	die "tools/wireshark/siwx.lua does not match include/siwx/wire.h (wire-lua.py)"
root=$work/siwx-wireshark
rm -rf "$root"
install -d "$root/DEBIAN"
lua_dir=/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/wireshark/plugins
install -D -m 0644 "$top/tools/wireshark/siwx.lua" "$root$lua_dir/siwx.lua"
doc_files "$root" siwx-wireshark
finish "$root"
cat > "$root/DEBIAN/control" <<EOF
Package: siwx-wireshark
Source: siwx
Version: $ver
Architecture: $arch
Maintainer: $maint
Installed-Size: $(installed_size "$root")
Depends: wireshark-common
Enhances: tshark, wireshark
Section: net
Priority: optional
Description: Wireshark dissector for the siwx iWARP extensions
 A Lua dissector that adds to Wireshark's iWARP dissectors what they show
 as unknown: RFC 7306 Immediate Data, the RFC 6581 IRD/ORD word and RTR
 bits of the MPA private data, RDMA Flush and Atomic Write, as siwx.*
 fields. Wireshark and tshark load it from their global Lua plugin folder.
EOF
build_deb "$root" "$out/siwx-wireshark_${ver}_${arch}.deb"

echo "$modver" > "$out/siwx-version"

if command -v lintian >/dev/null; then
	lintian --pedantic -I -E --tag-display-limit 0 "$out/siwx-dkms_${ver}_all.deb" \
		"$out/siwx-rdma-core_${ver}_${arch}.deb" "$out/siwx-wireshark_${ver}_${arch}.deb" \
		> "$out/lintian.txt" 2>&1 || true
	echo "  LINTIAN $(grep -c '^[EWIPX]:' "$out/lintian.txt") tags ($out/lintian.txt)"
fi
