#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# tools/debug-kernel/build.sh: build and install the siwx debug kernel
# (KASAN, lockdep, kmemleak, fault injection, gcov) for the test VMs.
# See Documentation/debug-kernel.md.
#
#   tools/debug-kernel/build.sh [--config-only] [--no-install]
#   tools/debug-kernel/build.sh --kver | --dir | --status | --uninstall
#
# Builds Debian's kernel source (/usr/src/linux-source-6.12.tar.xz, package
# linux-source-6.12) with `make defconfig` + kvm_guest.config +
# tools/debug-kernel/debug.config, outside the repo:
#
#   $CACHE/src-<tarball sha256>/   the unpacked source (shared, never written to)
#   $CACHE/<key>/                  the build tree (make O=), key = hash of the
#                                  tarball's sha256, debug.config and this script
#
# and installs it as kernel release 6.12.<n>+0-siwx-debug:
#   /boot/vmlinuz-<kver>, /lib/modules/<kver>/ (make modules_install),
#   /lib/modules/<kver>/build -> the build tree, .../source -> the source.
# Everything is skipped that is already there for the same key, so a second
# call is cheap: it prints the kernel release and exits. A new key starts
# from the newest built tree of the same source, so that a changed option
# rebuilds only the objects it reaches.
#
# Prints the kernel release on stdout (the last line); progress goes to
# stderr, the build log to <key>/build.log.
#
#   --config-only  stop after writing and checking .config
#   --no-install   build, do not install
#   --kver         print the kernel release of the current key (needs a
#                  configured build tree) and exit
#   --dir          print the build tree of the current key and exit
#   --status       exit 0 if the current key is built and installed
#   --uninstall    remove /boot/vmlinuz-<kver> and /lib/modules/<kver> of the
#                  current key (the cached tree stays)
#   --prune        remove the cached build trees of other keys and unpacked
#                  sources no tree of the current key uses
#
# Environment: SIWX_DEBUG_KERNEL_TARBALL (default /usr/src/linux-source-6.12.tar.xz),
# SIWX_DEBUG_KERNEL_CACHE (default /var/cache/siwx/debug-kernel),
# SIWX_DEBUG_KERNEL_JOBS (make -j, default 2), SIWX_DEBUG_KERNEL_NICE
# (default 19: the build runs next to the test VMs).
#
# Exit status: 0 ok, 1 build/config failure, 2 missing prerequisites/usage.

set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
ME=debug-kernel
TARBALL=${SIWX_DEBUG_KERNEL_TARBALL:-/usr/src/linux-source-6.12.tar.xz}
CACHE=${SIWX_DEBUG_KERNEL_CACHE:-/var/cache/siwx/debug-kernel}
JOBS=${SIWX_DEBUG_KERNEL_JOBS:-2}
NICE=${SIWX_DEBUG_KERNEL_NICE:-19}
FRAGMENT=$HERE/debug.config

die() { echo "$ME: error: $*" >&2; exit "${RC:-1}"; }
msg() { echo "$ME: $*" >&2; }

MODE=build
case ${1:-} in
'') ;;
--config-only) MODE=config ;;
--no-install) MODE=noinstall ;;
--kver) MODE=kver ;;
--dir) MODE=dir ;;
--status) MODE=status ;;
--uninstall) MODE=uninstall ;;
--prune) MODE=prune ;;
-h|--help) sed -n '/^# tools\/debug-kernel/,/^# Exit status/s/^# \{0,1\}//p' "$0"; exit 0 ;;
*) RC=2 die "unknown argument '$1' (see --help)" ;;
esac

[ -r "$TARBALL" ] || RC=2 die "$TARBALL missing (apt-get install linux-source-6.12)"
[ -r "$FRAGMENT" ] || RC=2 die "$FRAGMENT missing"

# The tarball's checksum, remembered by size and mtime (hashing 150 MB on
# every `make check KERNEL=debug` is not free).
tarball_sum() {
	local id sumfile=$CACHE/tarball.sha256 line
	id="$(readlink -f "$TARBALL") $(stat -c '%s %Y' "$TARBALL")"
	if line=$(grep -F -x -- "$id" -A1 "$sumfile" 2>/dev/null | tail -n 1) && [ -n "$line" ] &&
	   [ "$line" != "$id" ]; then
		echo "$line"; return
	fi
	line=$(sha256sum < "$TARBALL" | cut -d' ' -f1)
	if mkdir -p "$CACHE" 2>/dev/null; then
		printf '%s\n%s\n' "$id" "$line" > "$sumfile.$$" && mv -f "$sumfile.$$" "$sumfile"
	fi
	echo "$line"
}
TSUM=$(tarball_sum)
KEY=$( { echo "tarball $TSUM"; sha256sum < "$FRAGMENT"; sha256sum < "$0"; } | sha256sum | cut -c1-16)
SRC=$CACHE/src-${TSUM:0:16}
OBJ=$CACHE/$KEY
# make arguments for every call: LOCALVERSION set (empty) stops
# setlocalversion from appending "+"; the release is CONFIG_LOCALVERSION's
MK=(make -C "$SRC" O="$OBJ" ARCH=x86_64 LOCALVERSION=)

kver() { cat "$OBJ/include/config/kernel.release" 2>/dev/null; }

installed() {	# the current key's kernel is installed and points at OBJ
	local k
	k=$(kver) && [ -n "$k" ] && [ -e "$OBJ/.built" ] &&
	cmp -s "$OBJ/arch/x86/boot/bzImage" "/boot/vmlinuz-$k" &&
	[ -s "/lib/modules/$k/modules.dep" ] &&
	[ "$(readlink "/lib/modules/$k/build")" = "$OBJ" ]
}

case $MODE in
dir) echo "$OBJ"; exit 0 ;;
kver) k=$(kver) || RC=1 die "no build tree for key $KEY yet ($OBJ); run $0"; echo "$k"; exit 0 ;;
status) installed; exit $? ;;
uninstall)
	k=$(kver) || RC=1 die "no build tree for key $KEY ($OBJ)"
	case $k in *siwx-debug*) ;; *) die "refusing to remove '$k' (not a siwx-debug kernel)" ;; esac
	rm -rf "/lib/modules/$k" "/boot/vmlinuz-$k"
	msg "removed /boot/vmlinuz-$k and /lib/modules/$k (the tree $OBJ stays)"
	exit 0 ;;
prune)
	for d in "$CACHE"/*/; do
		d=${d%/}
		case $d in "$OBJ"|"$SRC") continue ;; esac
		case ${d##*/} in src-*|[0-9a-f]*) ;; *) continue ;; esac
		msg "removing $d"
		rm -rf "$d"
	done
	exit 0 ;;
esac

if [ "$MODE" = build ] && installed; then
	kver
	exit 0
fi

for t in make gcc bc bison flex perl xz tar; do
	command -v "$t" >/dev/null || RC=2 die "missing host tool '$t' (apt-get install build-essential bc bison flex libssl-dev libelf-dev)"
done
[ -e /usr/include/libelf.h ] || RC=2 die "libelf headers missing (apt-get install libelf-dev)"
[ -e /usr/include/openssl/ssl.h ] || RC=2 die "openssl headers missing (apt-get install libssl-dev)"
mkdir -p "$CACHE" || RC=2 die "cannot create $CACHE"

# ---------------------------------------------------------------- source
if [ ! -e "$SRC/.unpacked" ]; then
	msg "unpacking $TARBALL into $SRC"
	rm -rf "$SRC.tmp"
	mkdir -p "$SRC.tmp"
	tar -xJf "$TARBALL" -C "$SRC.tmp" --strip-components=1
	rm -rf "$SRC"
	mv "$SRC.tmp" "$SRC"
	touch "$SRC/.unpacked"
fi

# ---------------------------------------------------------------- config
# A new key (the fragment or this script changed) starts from the newest
# built tree of the same source when there is one: make then rebuilds only
# what the changed options reach (fixdep records every object's CONFIG_
# symbols), minutes instead of the full build.
if [ ! -e "$OBJ" ]; then
	# (the loop's status is its last test's: false on a machine without a
	# built tree, which pipefail and set -e would make the script's end)
	seed=$(for d in "$CACHE"/[0-9a-f]*/; do
		d=${d%/}
		if [ -e "$d/.built" ] && [ "$(readlink -f "$d/source" 2>/dev/null)" = "$SRC" ]; then
			echo "$(stat -c %Y "$d/.built") $d"
		fi
	done | sort -rn | head -n 1 | cut -d' ' -f2-)
	if [ -n "$seed" ]; then
		msg "starting $OBJ from the tree of key ${seed##*/} (same source; only what changed is rebuilt)"
		rm -rf "$OBJ.tmp"
		cp -a --reflink=auto "$seed" "$OBJ.tmp"
		rm -f "$OBJ.tmp/.configured" "$OBJ.tmp/.built" "$OBJ.tmp/build-time"
		mv "$OBJ.tmp" "$OBJ"
	fi
fi
mkdir -p "$OBJ"
LOG=$OBJ/build.log
if [ ! -e "$OBJ/.configured" ]; then
	msg "configuring $OBJ (defconfig + kvm_guest.config + $(basename "$FRAGMENT"))"
	{
		"${MK[@]}" defconfig &&
		cp "$OBJ/.config" "$OBJ/.config.base" &&
		"$SRC/scripts/kconfig/merge_config.sh" -m -O "$OBJ" "$OBJ/.config.base" \
			"$SRC/kernel/configs/kvm_guest.config" "$FRAGMENT" &&
		"${MK[@]}" olddefconfig
	} > "$LOG" 2>&1 || { tail -n 30 "$LOG" >&2; die "configuring failed (log $LOG)"; }
	# Every value of the fragment must have survived olddefconfig.
	bad=0
	while IFS= read -r line; do
		case $line in
		CONFIG_*=*) sym=${line%%=*} want=$line ;;
		"# CONFIG_"*" is not set") sym=${line#\# }; sym=${sym%% *}; want=$line ;;
		*) continue ;;
		esac
		got=$(grep -E "^(# )?${sym}[= ]" "$OBJ/.config" || true)
		if [ "$got" != "$want" ]; then
			# "not set" is also fulfilled by a symbol that does not appear at all
			case $want in "# "*) [ -z "$got" ] && continue ;; esac
			msg "config: wanted '$want', got '${got:-<absent>}'"
			bad=1
		fi
	done < "$FRAGMENT"
	[ "$bad" = 0 ] || die "the config fragment did not stick (see above; $OBJ/.config)"
	touch "$OBJ/.configured"
fi
KVER=$(kver || true)
if [ -z "$KVER" ]; then
	"${MK[@]}" -s include/config/kernel.release >> "$LOG" 2>&1 || die "make include/config/kernel.release failed (log $LOG)"
	KVER=$(kver)
fi
case $KVER in *siwx-debug*) ;; *) die "unexpected kernel release '$KVER'" ;; esac
if [ "$MODE" = config ]; then
	echo "$KVER"
	exit 0
fi

# ---------------------------------------------------------------- build
if [ ! -e "$OBJ/.built" ]; then
	msg "building $KVER in $OBJ (nice -n $NICE, -j$JOBS; log $LOG)"
	t0=$(date +%s)
	nice -n "$NICE" "${MK[@]}" -j"$JOBS" bzImage modules >> "$LOG" 2>&1 ||
		{ tail -n 40 "$LOG" >&2; die "build failed (log $LOG)"; }
	t1=$(date +%s)
	echo "$((t1 - t0)) s wall clock (-j$JOBS, nice $NICE, $(date -Is))" > "$OBJ/build-time"
	msg "built in $(( (t1 - t0) / 60 ))m$(( (t1 - t0) % 60 ))s"
	touch "$OBJ/.built"
fi
if [ "$MODE" = noinstall ]; then
	echo "$KVER"
	exit 0
fi

# ---------------------------------------------------------------- install
if ! [ -w /boot ] || ! [ -w /lib/modules ]; then
	RC=2 die "installing needs root (/boot, /lib/modules)"
fi
msg "installing /boot/vmlinuz-$KVER and /lib/modules/$KVER"
rm -rf "/lib/modules/$KVER"
nice -n "$NICE" "${MK[@]}" INSTALL_MOD_PATH= modules_install >> "$LOG" 2>&1 ||
	{ tail -n 20 "$LOG" >&2; die "modules_install failed (log $LOG)"; }
ln -sfn "$OBJ" "/lib/modules/$KVER/build"
ln -sfn "$SRC" "/lib/modules/$KVER/source"
install -m 0644 "$OBJ/arch/x86/boot/bzImage" "/boot/vmlinuz-$KVER.tmp.$$"
mv -f "/boot/vmlinuz-$KVER.tmp.$$" "/boot/vmlinuz-$KVER"
installed || die "installation check failed"
echo "$KVER"
