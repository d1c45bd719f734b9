#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# module_identity.sh - the siw module loaded in this VM is the file the run
# was asked to test (not a stale or distribution module). TAP output.
#
# Compares the loaded module's GNU build ID (/sys/module/siw/notes) and
# /sys/module/siw/{srcversion,version} with the module file named by
# SIWX_MODULE_PATH (or SIWX_MODULE, which tools/vm/run exports in the
# guest). srcversion/version are skipped when neither side has one
# (upstream siw declares no MODULE_VERSION); at least one identity must
# have been compared.

set -u
MOD=${SIWX_MODULE_PATH:-${SIWX_MODULE:-}}

echo "TAP version 13"
echo "1..4"

n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n identity.$1${2:+ # SKIP $2}"; }
nok() { n=$((n + 1)); echo "not ok $n identity.$1"; fails=$((fails + 1)); }

if [ -d /sys/module/siw ]; then
	ok module_loaded
else
	echo "# /sys/module/siw does not exist: siw is not loaded"
	nok module_loaded
fi

if [ -z "$MOD" ] || [ ! -r "$MOD" ]; then
	echo "# module file '${MOD:-<unset>}' not readable (set SIWX_MODULE_PATH)"
	nok build_id
	nok srcversion
	nok version
	exit 1
fi
echo "# module file: $MOD"
echo "# sha256: $(sha256sum < "$MOD" | cut -d' ' -f1)"

compared=0
# the build ID of the file (readelf) and of the loaded module (sysfs note:
# namesz, descsz, type, "GNU\0", then the ID)
want=$(readelf -n "$MOD" 2>/dev/null | sed -n 's/^ *Build ID: *//p' | head -n 1)
have=
note=/sys/module/siw/notes/.note.gnu.build-id
if [ -r "$note" ]; then
	have=$(od -An -v -tx1 "$note" | tr -d ' \n' | cut -c33-)
fi
echo "# build id: file '$want', loaded '$have'"
if [ -z "$want" ] && [ -z "$have" ]; then
	ok build_id "neither the file nor the loaded module carries a build ID"
elif [ -n "$want" ] && [ "$want" = "$have" ]; then
	ok build_id; compared=1
else
	nok build_id
fi

# cmp_field NAME: modinfo field NAME of the file against /sys/module/siw/NAME
cmp_field() {
	local want have
	want=$(modinfo -F "$1" "$MOD" 2>/dev/null)
	have=$(cat "/sys/module/siw/$1" 2>/dev/null)
	echo "# $1: file '$want', loaded '$have'"
	if [ -z "$want" ] && [ -z "$have" ]; then
		ok "$1" "the module declares no $1 (upstream siw has no MODULE_VERSION)"
	elif [ "$want" = "$have" ]; then
		ok "$1"; compared=1
	else
		nok "$1"
	fi
}
cmp_field srcversion
cmp_field version
if [ "$compared" = 0 ]; then
	echo "# nothing identified the loaded module (no build ID, srcversion or version)"
	fails=$((fails + 1))
	echo "Bail out! module identity could not be checked"
fi
[ "$fails" = 0 ]
