# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# selftests/lib/suites.sh - the suites and their settings. Sourced by
# selftests/run.sh (host) and selftests/guest.sh (guest); bash builtins
# only, for the guest runs under TCG, where every exec counts.
#
# A suite is a folder of selftests/. Its `settings` file describes the
# suite named like the folder; a `NAME.settings` file in the same folder
# describes one more suite, NAME (a folder may hold several suites). One
# key=value a line, '#' starts a comment line. kselftest's `timeout`, and:
#
#   timeout=SEC     time limit of the suite's command (default 120; 0: none)
#   cmd=PATH        what runs; it prints TAP on stdout (diagnostics too).
#                   $DIR is the suite's folder, $BIN and $STOCK the programs
#                   built against our and against Debian's rdma-core, $KMOD
#                   the test kernel modules, $TOOLS build/tools, $TOP the
#                   repository. Arguments may follow, split on blanks.
#   topology=T      single (default): the single-VM boot, our module;
#                   single-upstream: a single-VM boot with the upstream module;
#                   pair: two VMs, in every boot that pairs= names;
#                   host: on the host, after the VMs
#   pairs=ORDER...  pair suites: the boots they run in, MODULE_A-MODULE_B with
#                   ours or upstream (default: ours-upstream upstream-ours)
#   default=on|off  whether a run without suite names runs it (default on)
#   needs=PATH...   build outputs checked before anything boots, besides cmd
#   env=VAR...      the environment variables it reads (besides its SIWX_*
#                   ones, these reach the guest too)
#   order=N         place in the default run and in --list (default 1000;
#                   equal places by name)
#   pmem=SIZE       the boot it runs in gets an emulated NVDIMM of SIZE
#                   (e.g. 64M; tools/vm/run --pmem; in a pair boot VM b's):
#                   devdax $SIWX_PMEM_DEV, its backing file $SIWX_PMEM_FILE
#                   at $SIWX_PMEM_OFFSET. A boot of several such suites gets
#                   the largest; a boot of none, no NVDIMM (default: none)
#   early=yes|no    host suites: start it in the background when the run
#                   starts, alongside the VMs, instead of after them; its
#                   result is reported with the other host suites (for a
#                   suite that boots a VM of its own and needs nothing of
#                   the others; default no)
#
# suites_load DIR: reads DIR/*/settings and DIR/*/*.settings into
#   SUITE_NAMES   the suites, in no particular order
#   SUITE[NAME:KEY]  each key (defaults filled in), plus NAME:dir, NAME:file
# and returns 1 with the problems in SUITE_ERRORS if any file is wrong.
# suite_expand NAME STRING: STRING with $DIR, $BIN, $STOCK, $KMOD, $TOOLS
# and $TOP replaced, in REPLY (SUITE_BIN, SUITE_STOCK, SUITE_KMOD,
# SUITE_TOOLS and SUITE_TOP give the values).

SUITE_KEYS='timeout cmd topology pairs default needs env order pmem early'
SUITE_PAIR_ORDERS='ours-upstream upstream-ours ours-ours upstream-upstream'
declare -gA SUITE=()
SUITE_NAMES=() SUITE_ERRORS=()

suites_load() {
	local src=$1 f name line key val w
	SUITE=() SUITE_NAMES=() SUITE_ERRORS=()
	for f in "$src"/*/settings "$src"/*/*.settings; do
		[ -f "$f" ] || continue
		name=${f##*/}
		if [ "$name" = settings ]; then
			name=${f%/settings}
			name=${name##*/}
		else
			name=${name%.settings}
		fi
		case $name in
		''|*[!A-Za-z0-9_-]*)
			SUITE_ERRORS+=("$f: suite name '$name': letters, digits, '_' and '-' only")
			continue ;;
		esac
		if [ -n "${SUITE[$name:file]+x}" ]; then
			SUITE_ERRORS+=("$f: suite $name is already defined by ${SUITE[$name:file]}")
			continue
		fi
		SUITE[$name:file]=$f SUITE[$name:dir]=${f%/*}
		SUITE[$name:timeout]=120 SUITE[$name:cmd]= SUITE[$name:topology]=single
		SUITE[$name:pairs]='ours-upstream upstream-ours' SUITE[$name:default]=on
		SUITE[$name:needs]= SUITE[$name:env]= SUITE[$name:order]=1000
		SUITE[$name:pmem]= SUITE[$name:early]=no
		while IFS= read -r line || [ -n "$line" ]; do
			case $line in ''|'#'*) continue ;; esac
			key=${line%%=*} val=${line#*=}
			if [ "$key" = "$line" ]; then
				SUITE_ERRORS+=("$f: not key=value: '$line'")
				continue
			fi
			case " $SUITE_KEYS " in
			*" $key "*) SUITE[$name:$key]=$val ;;
			*) SUITE_ERRORS+=("$f: unknown key '$key' (keys: $SUITE_KEYS)") ;;
			esac
		done < "$f"
		case ${SUITE[$name:timeout]} in ''|*[!0-9]*)
			SUITE_ERRORS+=("$f: timeout=${SUITE[$name:timeout]}: seconds wanted") ;;
		esac
		case ${SUITE[$name:order]} in ''|*[!0-9]*)
			SUITE_ERRORS+=("$f: order=${SUITE[$name:order]}: a number wanted") ;;
		esac
		[ -n "${SUITE[$name:cmd]}" ] || SUITE_ERRORS+=("$f: no cmd=")
		case ${SUITE[$name:pmem]} in
		'') ;;
		*[!0-9]*[MG]|*[!0-9MG]*|[MG]) SUITE_ERRORS+=("$f: pmem=${SUITE[$name:pmem]}: a size like 64M or 1G") ;;
		esac
		[ -z "${SUITE[$name:pmem]}" ] || [ "${SUITE[$name:topology]}" != host ] ||
			SUITE_ERRORS+=("$f: pmem= is for suites that run in a VM")
		case ${SUITE[$name:topology]} in single|single-upstream|pair|host) ;;
		*) SUITE_ERRORS+=("$f: topology=${SUITE[$name:topology]}: single, single-upstream, pair or host") ;;
		esac
		for w in ${SUITE[$name:pairs]}; do
			case " $SUITE_PAIR_ORDERS " in *" $w "*) ;;
			*) SUITE_ERRORS+=("$f: pairs: '$w' is none of $SUITE_PAIR_ORDERS") ;;
			esac
		done
		case ${SUITE[$name:early]} in no) ;;
		yes) [ "${SUITE[$name:topology]}" = host ] ||
			SUITE_ERRORS+=("$f: early=yes is for host suites") ;;
		*) SUITE_ERRORS+=("$f: early=${SUITE[$name:early]}: yes or no") ;;
		esac
		case ${SUITE[$name:default]} in on|off) ;;
		*) SUITE_ERRORS+=("$f: default=${SUITE[$name:default]}: on or off") ;;
		esac
		for w in ${SUITE[$name:env]}; do
			[[ $w =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] ||
				SUITE_ERRORS+=("$f: env: '$w' is no variable name")
		done
		SUITE_NAMES+=("$name")
	done
	[ ${#SUITE_NAMES[@]} -gt 0 ] || SUITE_ERRORS+=("$src: no */settings or */*.settings")
	[ ${#SUITE_ERRORS[@]} -eq 0 ]
}

# suites_pmem SUITE...: the NVDIMM size their boot needs (the largest
# pmem= of them, in MB, as "NM"), or nothing, in REPLY
suites_pmem() {
	local s v mb=0
	for s in "$@"; do
		v=${SUITE[$s:pmem]}
		case $v in
		'') continue ;;
		*G) v=$(( ${v%G} * 1024 )) ;;
		*M) v=${v%M} ;;
		esac
		[ "$v" -le "$mb" ] || mb=$v
	done
	REPLY=
	[ "$mb" = 0 ] || REPLY=${mb}M
}

# suite_timeout SUITE: its limit in seconds in REPLY: SIWX_SUITE_TIMEOUT_<suite>
# if set, else its settings' timeout times SIWX_SUITE_TIMEOUT_SCALE (an
# integer, default 1; make check KERNEL=debug sets 6: everything is that
# much slower on the debug kernel). 0: none.
suite_timeout() {
	local v=SIWX_SUITE_TIMEOUT_${1//-/_}
	if [ -n "${!v:-}" ]; then
		REPLY=${!v}
	else
		REPLY=$(( ${SUITE[$1:timeout]} * ${SIWX_SUITE_TIMEOUT_SCALE:-1} ))
	fi
}

# suites_limit SUITE...: the limit, in seconds, of one boot running them
# in sequence: every suite's own (its settings' timeout or
# SIWX_SUITE_TIMEOUT_<suite>, which the guest enforces: suite_timeout) plus 300 s to boot,
# load and tear down, in REPLY. The boot's limit is only a backstop for a
# guest that stops answering; a hung suite is ended by its own limit. A
# suite without a limit (timeout=0) counts as 1800 s.
suites_limit() {
	local s v t=300
	for s in "$@"; do
		suite_timeout "$s"
		v=$REPLY
		[ "$v" != 0 ] || v=1800
		t=$((t + v))
	done
	REPLY=$t
}

suite_expand() {
	local s=$2
	s=${s//'$DIR'/"${SUITE[$1:dir]}"}
	s=${s//'$BIN'/"${SUITE_BIN:-}"}
	s=${s//'$STOCK'/"${SUITE_STOCK:-}"}
	s=${s//'$KMOD'/"${SUITE_KMOD:-}"}
	s=${s//'$TOOLS'/"${SUITE_TOOLS:-}"}
	s=${s//'$TOP'/"${SUITE_TOP:-}"}
	REPLY=$s
}
