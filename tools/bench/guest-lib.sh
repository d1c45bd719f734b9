# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# guest-lib.sh - the helpers of the benchmarks' guest sides, sourced by
# tools/bench/guest-bench.sh and tools/bench/guest-scale.sh (run by
# tools/vm/run --netns, which shares the host root read-only at the same
# path: $SIWX_TOP/tools/bench/guest-lib.sh). Under TCG every exec costs
# 0.1 s or more: they sleep and parse with builtins where they can (and use
# no process substitution: the guest has no /dev/fd).
#
# The devices: siw0 on veth0 $SIW_A0 (initial netns, servers), siw1 on veth1
# $SIW_A1 (netns $NS1, clients), set up by tools/vm/run; rxe0 on vr0
# $RXE_A0 and rxe1 on vr1 $RXE_A1, both in the initial netns (setup_rxe).
#
#   guest_init TAG DIR       what every guest side starts with: P (our
#                            rdma-core, in LD_LIBRARY_PATH), KO_siwx,
#                            KO_upstream, NS1, OUT ($SIWX_RESULTS/DIR),
#                            LOGS (made), CSV, INFO; this shell and its
#                            children at nice 19; TAG (say's prefix), SEQ,
#                            FAILS, T0, CUR_SIW (siwx: tools/vm/run loaded
#                            it); nap_open DIR
#   nap_open NAME            open the FIFO /run/NAME-nap that nap reads
#   nap SECS                 sleep SECS (fractions too) without an exec
#   elapsed                  REPLY: seconds since T0 (an $EPOCHREALTIME),
#                            0.1 s resolution, no exec
#   say TEXT                 "TAG [Ns] TEXT" on stdout, "[Ns] TEXT" into
#                            $INFO
#   csv_row FIELDS [NOTE]    the line "$SEQ,FIELDS,WALL_S,NOTE" of $CSV
#                            (NOTE's commas become ';', its double quotes
#                            single ones)
#   tcp_listening PORT       a TCP socket listens on PORT in this netns
#   cm_listening PORT        an rdma_cm id listens on PORT (rxe: no socket)
#   wait_listen KIND PORT PID  until PID listens on PORT (max ~30 s); false
#                            if it does not or is gone
#   reap PID SEC             wait for PID at most SEC seconds, then kill it;
#                            RC its exit status
#   serve KIND PORT LOG CMD...  CMD as a server in the background (SPID),
#                            output into LOG, until it listens; false (the
#                            server reaped) if it does not
#   status_text STATUS       what an exit status of timeout(1) CMD means
#   kind_env KIND            D0 D1 (server's and client's device), A0 A1
#                            (their addresses), PRE (the client's command
#                            prefix: into $NS1 for siw and tcp)
#   use_siw KIND             make KIND (siwx|upstream) the loaded siw module,
#                            siw0/siw1 on it (KIND_BROKEN[KIND] the reason if
#                            that fails)
#   setup_rxe                rxe0/rxe1 on a veth pair of their own, policy
#                            routing across it
#   guest_info MODE LINE...  $INFO anew: the mode, kernel, CPUs, the
#                            LINEs, rdma-core ($P) and the two modules
#   exception_trace_off      no kernel log lines for user-space crashes
#   run_reps REPS "KINDS"    kind_block REP KIND for every repetition and
#                            kind, the kinds in their order in odd
#                            repetitions and reversed in even ones
#   guest_done               rxe0/rxe1 gone, the last line; exit 3 if
#                            FAILS, else 0
#
# The caller sets TOP (tools/vm/run's SIWX_TOP) before it sources this,
# calls guest_init first, counts SEQ and FAILS, and defines kind_block REP
# KIND.

SIW_A0=192.168.77.1 SIW_A1=192.168.77.2
RXE_A0=192.168.79.1 RXE_A1=192.168.79.2
# shellcheck disable=SC2034  # the caller's: it skips a broken kind's points
declare -A KIND_BROKEN=()	# kind -> reason, when its setup failed

# shellcheck disable=SC2034  # LOGS is the caller's
guest_init() {
	TAG=$1
	P=$TOP/build/rdma-core/prefix
	export LD_LIBRARY_PATH=$P/lib
	KO_siwx=$TOP/build/siwx/siw.ko
	KO_upstream=$TOP/build/upstream/siw.ko
	NS1=${SIWX_NETNS1:?run me with tools/vm/run --netns}
	OUT=$SIWX_RESULTS/$2
	LOGS=$OUT/logs
	CSV=$OUT/samples.csv
	INFO=$OUT/guest.txt
	mkdir -p "$LOGS"
	# Every benchmark process runs at nice 19 (this script renices itself,
	# the tools inherit it).  perftest and tcp_pingpong busy-poll; at the
	# same priority as the kernel threads that carry the traffic
	# (ksoftirqd, siw's and rxe's workers) a busy guest waits for the next
	# scheduler tick (4 ms) instead of the network.  The same for all kinds.
	renice -n 19 -p $$ > /dev/null
	SEQ=0 FAILS=0 T0=$EPOCHREALTIME
	CUR_SIW=siwx
	nap_open "$2"
}

nap_open() {
	mkfifo "/run/$1-nap" 2>/dev/null
	exec {NAPFD}<>"/run/$1-nap"
}
nap() { read -r -t "$1" -u "$NAPFD" _; }
elapsed() {
	local d=$(( (${EPOCHREALTIME/./} - ${T0/./}) / 100000 ))
	printf -v REPLY '%d.%d' $((d / 10)) $((d % 10))
}
say() { elapsed; echo "$TAG [${REPLY}s] $*"; echo "[${REPLY}s] $*" >> "$INFO"; }

csv_row() {
	local note=${2:-}
	note=${note//,/;}
	note=${note//\"/\'}
	elapsed
	echo "$SEQ,$1,$REPLY,$note" >> "$CSV"
}

tcp_listening() {
	local hex l st
	printf -v hex ':%04X' "$1"
	while read -r _ l _ st _; do
		[[ $l == *"$hex" && $st == 0A ]] && return 0
	done < /proc/net/tcp
	return 1
}
cm_listening() {
	local line
	while read -r line; do
		[[ $line == *LISTEN* && $line == *":$1 "* ]] && return 0
		[[ $line == *LISTEN* && $line == *":$1" ]] && return 0
	done <<< "$(rdma res show cm_id 2>/dev/null)"
	return 1
}
wait_listen() {
	local i
	for ((i = 0; i < 150; i++)); do
		kill -0 "$3" 2>/dev/null || return 1
		case $1 in
		rxe) cm_listening "$2" && return 0; nap 0.2 ;;
		*) tcp_listening "$2" && return 0; nap 0.1 ;;
		esac
	done
	return 1
}
# shellcheck disable=SC2034  # RC is the caller's result
reap() {
	local n=$(($2 * 10))
	while kill -0 "$1" 2>/dev/null && ((n-- > 0)); do nap 0.1; done
	if kill -0 "$1" 2>/dev/null; then
		kill -TERM "$1" 2>/dev/null
		nap 0.5
		kill -KILL "$1" 2>/dev/null
	fi
	wait "$1"
	RC=$?
}
# (no timeout(1) for a server: reap kills it; execs are dear)
serve() {
	local kind=$1 port=$2 log=$3
	shift 3
	"$@" > "$log" 2>&1 &
	SPID=$!
	if ! wait_listen "$kind" "$port" "$SPID"; then
		reap "$SPID" 1
		return 1
	fi
	# rxe (IB CM): a REQ right after the listen shows up is sometimes
	# rejected (invalid service ID), and perftest then crashes.
	[ "$kind" = rxe ] && nap 0.5
	return 0
}
status_text() {
	case $1 in
	0) echo "ok" ;;
	124) echo "timed out" ;;
	13[4-9] | 1[4-9][0-9]) echo "killed by signal $(($1 - 128))" ;;
	*) echo "status $1" ;;
	esac
}

# shellcheck disable=SC2034  # D0 D1 A0 A1 PRE are the caller's
kind_env() {
	case $1 in
	siwx | upstream | tcp) D0=siw0 D1=siw1 A0=$SIW_A0 A1=$SIW_A1 PRE=(ip netns exec "$NS1") ;;
	rxe) D0=rxe0 D1=rxe1 A0=$RXE_A0 A1=$RXE_A1 PRE=() ;;
	esac
}

siw_links_del() {
	[ -e /sys/class/infiniband/siw1 ] && ip netns exec "$NS1" rdma link delete siw1
	[ -e /sys/class/infiniband/siw0 ] && rdma link delete siw0
	return 0
}
siw_links_add() {
	rdma link add siw0 type siw netdev veth0 &&
		ip netns exec "$NS1" rdma link add siw1 type siw netdev veth1
}
# in place: rdma link delete, rmmod, insmod, link add
# shellcheck disable=SC2034  # KIND_BROKEN is read by the caller
use_siw() {
	local want=$1 ko v
	[ "$CUR_SIW" = "$want" ] && return 0
	ko=KO_$want
	ko=${!ko}
	say "swapping siw: $CUR_SIW -> $want ($ko)"
	CUR_SIW=none
	siw_links_del || { KIND_BROKEN[$want]="rdma link delete failed"; return 1; }
	if [ -e /sys/module/siw ] && ! rmmod siw; then
		KIND_BROKEN[$want]="rmmod siw failed"
		return 1
	fi
	insmod "$ko" || { KIND_BROKEN[$want]="insmod $ko failed"; return 1; }
	siw_links_add || { KIND_BROKEN[$want]="rdma link add failed"; return 1; }
	unset "KIND_BROKEN[$want]"
	CUR_SIW=$want
	v=
	[ -r /sys/module/siw/version ] && read -r v < /sys/module/siw/version
	say "loaded $want: siw version '${v:-none}'"
}

# rxe in 6.12 only works in the initial netns: both ends there, and policy
# routing sends the traffic between the two addresses across the veth pair
# instead of through lo
setup_rxe() {
	local f
	modprobe rdma_rxe || return 1
	ip -batch - <<-EOF || return 1
	link add vr0 type veth peer name vr1
	addr add $RXE_A0/24 dev vr0
	addr add $RXE_A1/24 dev vr1
	link set vr0 up
	link set vr1 up
	EOF
	# Both addresses are local: without help the kernel would route
	# between them over lo.  Look up "local" only for packets that came in
	# on vr0/vr1, send everything for the other address out of the veth.
	for f in all vr0 vr1; do
		echo 0 > /proc/sys/net/ipv4/conf/$f/rp_filter
		echo 1 > /proc/sys/net/ipv4/conf/$f/accept_local
	done
	ip -batch - <<-EOF || return 1
	rule add pref 10 iif vr0 lookup local
	rule add pref 11 iif vr1 lookup local
	route add $RXE_A0 dev vr1 src $RXE_A1 table 101
	route add $RXE_A1 dev vr0 src $RXE_A0 table 102
	rule add pref 20 to $RXE_A0 lookup 101
	rule add pref 21 to $RXE_A1 lookup 102
	rule add pref 100 lookup local
	rule del pref 0
	EOF
	rdma link add rxe0 type rxe netdev vr0 || return 1
	rdma link add rxe1 type rxe netdev vr1 || return 1
	{ ip rule; ip route get "$RXE_A0"; rdma link show; } >> "$INFO" 2>&1
}

guest_info() {
	local l
	{
		echo "mode: $1"
		echo "kernel: $(uname -r)"
		echo "cpus: $(nproc)"
		shift
		for l in "$@"; do echo "$l"; done
		echo "rdma-core: $P"
		echo "siwx module: $KO_siwx version '$(modinfo -F version "$KO_siwx")'"
		# the data-path parameters of the siw loaded now (the VM boots
		# with siwx's)
		echo "siw parameters: $(cd /sys/module/siw/parameters 2>/dev/null &&
			for l in tx_* rx_* mpa_crc; do [ -r "$l" ] && printf '%s=%s ' "$l" "$(cat "$l")"; done)"
		echo "upstream module: $KO_upstream"
	} > "$INFO"
}

# perftest 4.5 with librdmacm 56.1 sometimes crashes (general protection
# fault in rdma_resolve_addr2, seen 3 times in ~115 rxe runs, never on siw)
# after an rxe connection request was rejected.  The kernel's
# "traps: ... general protection fault" line for such a user-space crash
# would make tools/vm/run call the whole run a kernel problem: turn those
# lines off.  The crash is still seen by the caller (exit status, retried,
# noted in samples.csv) and real kernel oopses are still logged.
exception_trace_off() {
	echo 0 > /proc/sys/debug/exception-trace 2>/dev/null ||
		say "cannot turn off debug.exception-trace"
}

# A B C D D C B A ...: linear drift hits all kinds equally, and the siw
# module is swapped once per repetition
run_reps() {
	local reps=$1 rep i order kinds kind
	read -r -a order <<< "$2"
	for ((rep = 1; rep <= reps; rep++)); do
		if ((rep % 2)); then
			kinds=("${order[@]}")
		else
			kinds=()
			for ((i = ${#order[@]} - 1; i >= 0; i--)); do kinds+=("${order[i]}"); done
		fi
		say "repetition $rep/$reps: ${kinds[*]}"
		for kind in "${kinds[@]}"; do
			kind_block "$rep" "$kind"
		done
	done
}

# tools/vm/run's teardown removes siw0/siw1 and whichever siw is loaded
guest_done() {
	local d
	for d in rxe1 rxe0; do
		[ -e "/sys/class/infiniband/$d" ] && rdma link delete "$d"
	done
	say "done: $SEQ runs, $FAILS failed"
	[ "$FAILS" = 0 ] || exit 3
	exit 0
}
