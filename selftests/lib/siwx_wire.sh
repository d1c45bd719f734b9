# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# siwx_wire.sh - the numeric wire constants of include/siwx/wire.h as
# shell variables of the same names (SIWX_RDMAP_OP_FLUSH_REQ=12, ...),
# for shell suites that must take expected values from the one home of
# the wire facts (rawpeer.sh). Sourced; bash builtins only (process
# creation is slow under TCG). String #defines (the MPA keys) are left
# out. test_siwx_wire.py compares every value with siwx_wire.py's.
#
#   . selftests/lib/siwx_wire.sh
#
# reads SIWX_WIRE_H, default the repository's include/siwx/wire.h (found
# relative to this file; the caller's arguments are not looked at).
#
# Returns non-zero (and sets nothing further) at a #define it cannot
# evaluate.

siwx_wire_load() {
	local h=$1 line name val

	[ -r "$h" ] || { echo "siwx_wire.sh: cannot read $h" >&2; return 1; }
	while IFS= read -r line; do
		[[ $line =~ ^[[:space:]]*#[[:space:]]*define[[:space:]]+(SIWX_[A-Za-z0-9_]+)[[:space:]]+(.*)$ ]] ||
			continue
		name=${BASH_REMATCH[1]} val=${BASH_REMATCH[2]}
		val=${val%%/\**}		# a trailing comment
		val=${val%"${val##*[![:space:]]}"}
		[[ $val == \"* ]] && continue	# a string
		# wire.h's values are literals and SIWX_ names joined by
		# + - * << >> | & ~ and parentheses: bash arithmetic reads them
		[[ $val =~ ^[][()A-Za-z0-9_+*\<\>\|\&~[:space:]-]+$ ]] || {
			echo "siwx_wire.sh: $name: cannot read '$val'" >&2
			return 1
		}
		declare -g "$name=$((val))" || return 1
	done <"$h"
}

siwx_wire_load "${SIWX_WIRE_H:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/include/siwx/wire.h}"
