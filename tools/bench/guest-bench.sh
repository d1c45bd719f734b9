#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-bench.sh MODE: the guest side of tools/bench/bench.sh (run by
# tools/vm/run --netns, build/siwx/siw.ko loaded).  MODE is quick or full
# (tools/bench/bench.conf).
#
# Devices, each on its own veth pair and subnet, so that rdma_cm cannot pick
# the wrong one and traffic really crosses a veth pair:
#   siwx/upstream  siw0 on veth0 192.168.77.1 (initial netns, servers)
#                  siw1 on veth1 192.168.77.2 (netns siwx1, clients)
#                  -- set up by tools/vm/run; the two modules are swapped
#                  in place (rdma link delete, rmmod, insmod, link add)
#   rxe            rxe0 on vr0 192.168.79.1, rxe1 on vr1 192.168.79.2, both
#                  in the initial netns (rxe in 6.12 only works there); policy
#                  routing sends traffic between the two addresses across the
#                  veth pair instead of through lo
#   tcp            iperf3 and tcp_pingpong between 192.168.77.1 and
#                  192.168.77.2 (netns siwx1): the path siw uses
#
# Every RDMA kind runs its perftest points, then one tools/bench/imm_bench
# (RDMA Write with Immediate against RDMA Write and Write + Send, all on one
# connection) that yields all of its write_imm/write_poll/write_send points,
# then one tools/bench/flush_bench (RDMA Flush, Atomic Write and the commit
# pipeline against Read, Write and the emulation, on one connection; on the
# first devdax device, if there is one) that yields all of its points.
#
# Repetition r runs the kinds in the order of BENCH_KINDS when r is odd and in
# the reverse order when r is even (A B C D D C B A ...): linear drift hits all
# kinds equally and the siw module is swapped once per repetition.
#
# Output in $SIWX_RESULTS/bench/: samples.csv (every raw sample), guest.txt
# (environment, device attributes), logs/ (every tool's output).
# Exit status: 0 if every point was measured (or is n/a), 3 if some failed.

set -u
MODE=${1:?usage: guest-bench.sh quick|full [REPS]}
TOP=${SIWX_TOP:?run me with tools/vm/run}
# shellcheck source=tools/bench/bench.conf
. "$TOP/tools/bench/bench.conf"
BENCH_REPEAT=${2:-} bench_config "$MODE" || exit 2

P=$TOP/build/rdma-core/prefix
export LD_LIBRARY_PATH=$P/lib
KO_siwx=$TOP/build/siwx/siw.ko
KO_upstream=$TOP/build/upstream/siw.ko
PP=$TOP/build/bench/tcp_pingpong
IMM=$TOP/build/bench/imm_bench
FLUSH=$TOP/build/bench/flush_bench
NS1=${SIWX_NETNS1:?run me with tools/vm/run --netns}
OUT=$SIWX_RESULTS/bench
LOGS=$OUT/logs
CSV=$OUT/samples.csv
INFO=$OUT/guest.txt
mkdir -p "$LOGS"

SIW_A0=192.168.77.1	# siw1/veth1 in $NS1 is 192.168.77.2
RXE_A0=192.168.79.1 RXE_A1=192.168.79.2

# Every benchmark process runs at nice 19 (this script renices itself, the
# tools inherit it).  perftest and tcp_pingpong busy-poll; at the same
# priority as the kernel threads that carry the traffic (ksoftirqd, siw's
# and rxe's workers) a busy guest waits for the next scheduler tick (4 ms)
# instead of the network.  The same for all kinds.
renice -n 19 -p $$ > /dev/null

SEQ=0 FAILS=0 T0=$EPOCHREALTIME
CUR_SIW=siwx	# tools/vm/run loaded build/siwx/siw.ko
declare -A ATOMIC_NA=()	# kind -> reason, when the device has no atomics
declare -A KIND_BROKEN=()	# kind -> reason, when its setup failed

# Under TCG every exec costs 0.1 s or more: sleep and parse with builtins.
# (No process substitution: the guest has no /dev/fd.)
mkfifo /run/bench-nap 2>/dev/null
exec {NAPFD}<>/run/bench-nap
nap() { read -r -t "$1" -u "$NAPFD" _; }
elapsed() { # seconds since the start, 0.1 s resolution, no exec
	local d=$(( (${EPOCHREALTIME/./} - ${T0/./}) / 100000 ))
	printf -v REPLY '%d.%d' $((d / 10)) $((d % 10))
}
say() { elapsed; echo "bench [${REPLY}s] $*"; echo "[${REPLY}s] $*" >> "$INFO"; }

echo "seq,rep,kind,test,size,metric,value,unit,wall_s,note" > "$CSV"
# sample REP KIND TEST SIZE METRIC VALUE UNIT [NOTE]
sample() {
	local note=${8:-}
	note=${note//,/;}
	note=${note//\"/\'}
	elapsed
	echo "$SEQ,$1,$2,$3,$4,$5,$6,$7,$REPLY,$note" >> "$CSV"
}

# tcp_listening PORT: a TCP socket listens on PORT in this netns (bash only).
tcp_listening() {
	local hex l st
	printf -v hex ':%04X' "$1"
	while read -r _ l _ st _; do
		[[ $l == *"$hex" && $st == 0A ]] && return 0
	done < /proc/net/tcp
	return 1
}
# cm_listening PORT: an rdma_cm id listens on PORT (rxe: no TCP socket).
cm_listening() {
	local line
	while read -r line; do
		[[ $line == *LISTEN* && $line == *":$1 "* ]] && return 0
		[[ $line == *LISTEN* && $line == *":$1" ]] && return 0
	done <<< "$(rdma res show cm_id 2>/dev/null)"
	return 1
}
# wait_listen KIND PORT PID: wait until the server listens (max ~30 s).
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
# reap PID SEC: wait for PID at most SEC seconds, then kill it; RC = status.
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

# status_text STATUS: what an exit status of timeout(1) CMD means.
status_text() {
	case $1 in
	0) echo "ok" ;;
	124) echo "timed out" ;;
	13[4-9] | 1[4-9][0-9]) echo "killed by signal $(($1 - 128))" ;;
	*) echo "status $1" ;;
	esac
}

# ---------------------------------------------------------------- setup
siw_links_del() {
	[ -e /sys/class/infiniband/siw1 ] && ip netns exec "$NS1" rdma link delete siw1
	[ -e /sys/class/infiniband/siw0 ] && rdma link delete siw0
	return 0
}
siw_links_add() {
	rdma link add siw0 type siw netdev veth0 &&
		ip netns exec "$NS1" rdma link add siw1 type siw netdev veth1
}

# atomic_check KIND DEV: note whether DEV supports atomics.
atomic_check() {
	local cap
	cap=$("$P/bin/ibv_devinfo" -v -d "$2" 2>&1)
	{ echo "== $1: ibv_devinfo -v -d $2"; echo "$cap"; } >> "$LOGS/devinfo-$1.txt"
	cap=${cap#*atomic_cap:}
	read -r cap _ <<< "$cap"
	if [ "$cap" = ATOMIC_NONE ] || [ -z "$cap" ]; then
		ATOMIC_NA[$1]="device reports atomic_cap ${cap:-?} (no atomic operations)"
	else
		unset "ATOMIC_NA[$1]"
	fi
	say "$1: $2 atomic_cap ${cap:-?}"
}

# use_siw KIND: make KIND (siwx|upstream) the loaded siw module.
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
	[ -n "${ATOMIC_CHECKED[$want]:-}" ] || { atomic_check "$want" siw0; ATOMIC_CHECKED[$want]=1; }
}
declare -A ATOMIC_CHECKED=()

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
	atomic_check rxe rxe0
}

# ---------------------------------------------------------------- runs
# bw_iters SIZE: iterations for a bandwidth point (byte budget, bounded).
bw_iters() {
	local n=$((BENCH_BW_BYTES / $1))
	((n < BENCH_BW_MIN_ITERS)) && n=$BENCH_BW_MIN_ITERS
	((n > BENCH_BW_MAX_ITERS)) && n=$BENCH_BW_MAX_ITERS
	REPLY=$n
}

# perftest_point REP KIND TEST SIZE
perftest_point() {
	local rep=$1 kind=$2 test=$3 size=$4
	local prog args=() d0 d1 a0 pre=() port slog clog try spid crc lim f hdr line note=
	case $test in
	write_lat) prog=ib_write_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	read_lat) prog=ib_read_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	send_lat) prog=ib_send_lat args=(-s "$size" -n "$BENCH_LAT_ITERS") ;;
	atomic_fadd_lat) prog=ib_atomic_lat args=(-A FETCH_AND_ADD -n "$BENCH_LAT_ITERS") ;;
	atomic_cas_lat) prog=ib_atomic_lat args=(-A CMP_AND_SWAP -n "$BENCH_LAT_ITERS") ;;
	write_bw | read_bw | send_bw)
		bw_iters "$size"
		prog=ib_$test args=(-s "$size" -n "$REPLY") ;;
	atomic_fadd_bw) prog=ib_atomic_bw args=(-A FETCH_AND_ADD -n "$BENCH_ATOMIC_BW_ITERS") ;;
	atomic_cas_bw) prog=ib_atomic_bw args=(-A CMP_AND_SWAP -n "$BENCH_ATOMIC_BW_ITERS") ;;
	*) echo "bench: unknown test $test" >&2; return 1 ;;
	esac
	case $kind in
	siwx | upstream) d0=siw0 d1=siw1 a0=$SIW_A0 pre=(ip netns exec "$NS1") ;;
	rxe) d0=rxe0 d1=rxe1 a0=$RXE_A0 ;;
	esac
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" \
			"${KIND_BROKEN[$kind]}"
		FAILS=$((FAILS + 1))
		return
	fi
	if bench_is_atomic "$test" && [ -n "${ATOMIC_NA[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" n/a "" \
			"${ATOMIC_NA[$kind]}"
		return
	fi
	bench_is_lat "$test" && lim=90 || lim=180
	# A failed clock calibration is perftest's, not the device's: each one
	# buys one more try (at most 6 in all), after a pause that lets the
	# guest's load settle. It failed 3 times in a row on rxe in one CI run.
	local maxtry=3
	for ((try = 1; try <= maxtry; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		printf -v f '%s/%04d-r%d-%s-%s-%s' "$LOGS" "$SEQ" "$rep" "$kind" "$test" "$size"
		slog=$f.server.txt clog=$f.client.txt
		# (no timeout(1) for the server: reap kills it; execs are dear)
		"$prog" -R -F -d "$d0" -p "$port" "${args[@]}" > "$slog" 2>&1 &
		spid=$!
		if ! wait_listen "$kind" "$port" "$spid"; then
			note="server did not listen (try $try)"
			reap "$spid" 1
			continue
		fi
		# rxe (IB CM): a REQ right after the listen shows up is sometimes
		# rejected (invalid service ID), and perftest then crashes.
		[ "$kind" = rxe ] && nap 0.5
		timeout -k 5 "$lim" "${pre[@]}" "$prog" -R -F -d "$d1" -p "$port" "${args[@]}" "$a0" \
			> "$clog" 2>&1
		crc=$?
		reap "$spid" 20
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			# perftest converts cycles to time with a CPU clock it
			# measures first; under TCG that can fail (r^2 < 0.9),
			# and then every figure is 0.
			if ! grep -q 'Correlation coefficient' "$clog"; then
				note=
				break
			fi
			note="perftest could not calibrate its clock (try $try)"
			((maxtry < 6)) && maxtry=$((maxtry + 1))
			say "$kind $test $size rep $rep: $note, again"
			nap 2
			continue
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "$kind $test $size rep $rep: $note; logs $f.*"
		[ "$try" -lt "$maxtry" ] && say "$kind $test $size rep $rep: again"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind $test $size rep $rep: $note; logs $f.*"
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" "$note"
		FAILS=$((FAILS + 1))
		return
	fi
	# The result line follows the "#bytes" header.
	hdr=0 line=()
	while read -r -a f; do
		if [ "$hdr" = 1 ] && [[ ${f[0]:-} =~ ^[0-9]+$ ]]; then
			line=("${f[@]}")
			break
		fi
		[ "${f[0]:-}" = "#bytes" ] && hdr=1
	done < "$clog"
	if [ ${#line[@]} -lt 5 ]; then
		say "FAILED: $kind $test $size rep $rep: no result line in $clog"
		sample "$rep" "$kind" "$test" "$size" "$(bench_main_metric "$test")" fail "" "no result line"
		FAILS=$((FAILS + 1))
		return
	fi
	note="iters=${line[1]}"
	[ "$try" -gt 1 ] && note="$note; try $try"
	if bench_is_lat "$test"; then
		# bytes iters t_min t_max t_typical t_avg t_stdev 99% 99.9%
		sample "$rep" "$kind" "$test" "$size" lat_typical_us "${line[4]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_avg_us "${line[5]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_min_us "${line[2]}" us "$note"
		sample "$rep" "$kind" "$test" "$size" lat_p99_us "${line[7]:-}" us "$note"
		say "$kind $test ${size}B: typical ${line[4]} us (rep $rep)"
	else
		# bytes iters bw_peak bw_avg msg_rate
		sample "$rep" "$kind" "$test" "$size" bw_avg_MiBps "${line[3]}" MiB/s "$note"
		sample "$rep" "$kind" "$test" "$size" msg_rate_Mpps "${line[4]}" Mpps "$note"
		say "$kind $test ${size}B: ${line[3]} MiB/s, ${line[4]} Mpps (rep $rep)"
	fi
}

# owns TOOL TEST: TEST is one of the points TOOL (imm_bench, flush_bench)
# measures in one run.
owns() {
	case $1 in
	imm_bench) bench_is_imm "$2" ;;
	flush_bench) bench_is_flush "$2" ;;
	*) return 1 ;;
	esac
}

# tool_fail TOOL REP KIND NOTE: every TOOL point of KIND failed.
tool_fail() {
	local t s
	while read -r t s; do
		owns "$1" "$t" || continue
		sample "$2" "$3" "$t" "$s" "$(bench_main_metric "$t")" fail "" "$4"
	done <<< "$(bench_points "$3")"
	FAILS=$((FAILS + 1))
}

# tool_point TOOL REP KIND: one run of our own TOOL (server on the kind's
# address 0, client on address 1), every point of KIND it measures:
#   imm_bench    the write_imm/write_poll/write_send points
#   flush_bench  the Flush/Atomic Write points (server -P $PMEM if the
#                guest has a devdax device)
tool_point() {
	local tool=$1 rep=$2 kind=$3 a0 pre=() port slog clog try spid crc f kw tt ss rest note=
	local t s k n=0 lim prog=$TOP/build/bench/$1 sargs=() cargs=()
	local -A r=() seen=()
	case $kind in
	siwx | upstream) a0=$SIW_A0 pre=(ip netns exec "$NS1") ;;
	rxe) a0=$RXE_A0 ;;
	esac
	case $tool in
	imm_bench)
		lim=$BENCH_IMM_TIMEOUT
		cargs=(-l "${BENCH_IMM_LAT_SIZES// /,}" -n "$BENCH_LAT_ITERS"
			-b "${BENCH_BW_SIZES// /,}" -B "$BENCH_BW_BYTES"
			-m "$BENCH_BW_MIN_ITERS" -M "$BENCH_BW_MAX_ITERS" -r "$BENCH_IMM_ROUNDS") ;;
	flush_bench)
		lim=$BENCH_FLUSH_TIMEOUT
		[ -n "$PMEM" ] && sargs=(-P "$PMEM")
		cargs=(-n "$BENCH_LAT_ITERS" -r "$BENCH_FLUSH_ROUNDS") ;;
	esac
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		tool_fail "$tool" "$rep" "$kind" "${KIND_BROKEN[$kind]}"
		return
	fi
	for ((try = 1; try <= 3; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		printf -v f '%s/%04d-r%d-%s-%s' "$LOGS" "$SEQ" "$rep" "$kind" "$tool"
		slog=$f.server.txt clog=$f.client.txt
		"$prog" -s -a "$a0" -p "$port" "${sargs[@]}" > "$slog" 2>&1 &
		spid=$!
		if ! wait_listen "$kind" "$port" "$spid"; then
			note="server did not listen (try $try)"
			reap "$spid" 1
			continue
		fi
		[ "$kind" = rxe ] && nap 0.5
		timeout -k 5 "$lim" "${pre[@]}" "$prog" -c "$a0" -p "$port" "${cargs[@]}" > "$clog" 2>&1
		crc=$?
		reap "$spid" 20
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			note=
			break
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "$kind $tool rep $rep: $note; logs $f.*"
		[ "$try" -lt 3 ] && say "$kind $tool rep $rep: again"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind $tool rep $rep: $note; logs $f.*"
		tool_fail "$tool" "$rep" "$kind" "$note"
		return
	fi
	[ "$try" -gt 1 ] && note="; try $try"
	# result test=T size=S iters=N key=value ...  /  na test=T size=S reason=...
	while read -r kw tt ss rest; do
		t=${tt#test=} s=${ss#size=}
		case $kw in
		result)
			r=()
			for k in $rest; do r[${k%%=*}]=${k#*=}; done
			if [[ $t == *_lat ]]; then
				for k in lat_typical_us lat_avg_us lat_min_us lat_p99_us; do
					sample "$rep" "$kind" "$t" "$s" "$k" "${r[$k]:-}" us "iters=${r[iters]:-}$note"
				done
				say "$kind $t ${s}B: typical ${r[lat_typical_us]:-} us (rep $rep)"
			else
				sample "$rep" "$kind" "$t" "$s" bw_avg_MiBps "${r[bw_avg_MiBps]:-}" MiB/s "iters=${r[iters]:-}$note"
				sample "$rep" "$kind" "$t" "$s" msg_rate_Mpps "${r[msg_rate_Mpps]:-}" Mpps "iters=${r[iters]:-}$note"
				say "$kind $t ${s}B: ${r[bw_avg_MiBps]:-} MiB/s (rep $rep)"
			fi
			seen["$t $s"]=1
			;;
		na)
			rest=${rest#reason=}
			sample "$rep" "$kind" "$t" "$s" "$(bench_main_metric "$t")" n/a "" "${rest:-no reason given}"
			seen["$t $s"]=1
			;;
		ratio) say "$kind $tool: $tt $ss $rest" ;;
		esac
	done < "$clog"
	while read -r t s; do
		owns "$tool" "$t" || continue
		[ -n "${seen["$t $s"]:-}" ] && continue
		sample "$rep" "$kind" "$t" "$s" "$(bench_main_metric "$t")" fail "" "no result line in $clog"
		n=$((n + 1))
	done <<< "$(bench_points "$kind")"
	if [ "$n" != 0 ]; then
		say "FAILED: $kind $tool rep $rep: $n points without a result"
		FAILS=$((FAILS + 1))
	fi
}

# tcp_point REP TEST: iperf3 (tcp_bw) or tcp_pingpong (tcp_rtt), server in
# the initial netns on veth0, client in $NS1 on veth1.
tcp_point() {
	local rep=$1 test=$2 port spid crc f slog clog size kv k v bps='' try note=''
	local -A r=()
	for ((try = 1; try <= 3; try++)); do
		SEQ=$((SEQ + 1))
		port=$((20000 + SEQ))
		case $test in
		tcp_rtt) size=$BENCH_LAT_SIZE ;;
		tcp_bw) size=$BENCH_TCP_BW_SIZE ;;
		esac
		printf -v f '%s/%04d-r%d-tcp-%s-%s' "$LOGS" "$SEQ" "$rep" "$test" "$size"
		slog=$f.server.txt clog=$f.client.txt
		case $test in
		tcp_rtt) "$PP" -s -b "$SIW_A0" -p "$port" > "$slog" 2>&1 & ;;
		tcp_bw) iperf3 -s -1 -B "$SIW_A0" -p "$port" > "$slog" 2>&1 & ;;
		esac
		spid=$!
		if ! wait_listen tcp "$port" "$spid"; then
			note="server did not listen (try $try)"
			reap "$spid" 1
			continue
		fi
		case $test in
		tcp_rtt) timeout -k 5 90 ip netns exec "$NS1" "$PP" -c "$SIW_A0" -p "$port" \
				-z "$size" -n "$BENCH_PP_ITERS" > "$clog" 2>&1 ;;
		tcp_bw) timeout -k 5 90 ip netns exec "$NS1" iperf3 -c "$SIW_A0" -p "$port" \
				-t "$BENCH_TCP_SECS" -J > "$clog" 2>&1 ;;
		esac
		crc=$?
		reap "$spid" 10
		if [ "$crc" = 0 ] && [ "$RC" = 0 ]; then
			note=
			break
		fi
		note="client $(status_text "$crc"), server $(status_text "$RC") (try $try)"
		say "tcp $test rep $rep: $note; logs $f.*"
	done
	if [ -z "$note" ]; then
		if [ "$test" = tcp_rtt ]; then
			read -r -a kv < "$clog"
			for k in "${kv[@]}"; do r[${k%%=*}]=${k#*=}; done
			[ -n "${r[oneway_median_us]:-}" ] || note="no result in $clog"
		else
			# "sum_received": { ... "bits_per_second": N, ...
			k=0
			while read -r v; do
				[[ $v == '"sum_received":'* ]] && k=1
				if [ "$k" = 1 ] && [[ $v == '"bits_per_second":'* ]]; then
					bps=${v#*:}
					bps=${bps%,}
					bps=${bps// /}
					break
				fi
			done < "$clog"
			[ -n "$bps" ] || note="no sum_received in $clog"
		fi
	fi
	if [ -n "$note" ]; then
		say "FAILED: tcp $test rep $rep: $note"
		sample "$rep" tcp "$test" "$size" "$(bench_main_metric "$test")" fail "" "$note"
		FAILS=$((FAILS + 1))
		return
	fi
	if [ "$test" = tcp_rtt ]; then
		note="iters=${r[iters]}"
		sample "$rep" tcp tcp_rtt "$size" oneway_median_us "${r[oneway_median_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_median_us "${r[rtt_median_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_min_us "${r[rtt_min_us]}" us "$note"
		sample "$rep" tcp tcp_rtt "$size" rtt_p99_us "${r[rtt_p99_us]}" us "$note"
		say "tcp rtt ${size}B: median ${r[rtt_median_us]} us (rep $rep)"
	else
		# bits/s (SI) -> MiB/s, as perftest reports
		v=$(awk -v b="$bps" 'BEGIN { printf "%.2f", b / 8 / 1048576 }')
		sample "$rep" tcp tcp_bw "$size" bw_MiBps "$v" MiB/s "secs=$BENCH_TCP_SECS"
		say "tcp bw: $v MiB/s (rep $rep)"
	fi
}

# kind_block REP KIND: every point of KIND once.
kind_block() {
	local rep=$1 kind=$2 t s
	case $kind in
	siwx | upstream) use_siw "$kind" ;;
	esac
	while read -r t s; do
		if [ "$kind" = tcp ]; then
			tcp_point "$rep" "$t"
		elif ! owns imm_bench "$t" && ! owns flush_bench "$t"; then
			perftest_point "$rep" "$kind" "$t" "$s"
		fi
	done <<< "$(bench_points "$kind")"
	[ "$kind" = tcp ] && return
	tool_point imm_bench "$rep" "$kind"
	tool_point flush_bench "$rep" "$kind"
}

# ---------------------------------------------------------------- main
{
	echo "mode: $MODE"
	echo "kernel: $(uname -r)"
	echo "cpus: $(nproc)"
	echo "perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
	echo "iperf3: $(iperf3 --version 2>&1 | head -n 1)"
	echo "rdma-core: $P"
	echo "siwx module: $KO_siwx version '$(modinfo -F version "$KO_siwx")'"
	echo "upstream module: $KO_upstream"
} > "$INFO"
say "mode $MODE: $BENCH_REPS repetitions, sizes $BENCH_BW_SIZES"
# perftest 4.5 with librdmacm 56.1 sometimes crashes (general protection
# fault in rdma_resolve_addr2, seen 3 times in ~115 rxe runs, never on siw)
# after an rxe connection request was rejected.  The kernel's
# "traps: ... general protection fault" line for such a user-space crash
# would make tools/vm/run call the whole run a kernel problem: turn those
# lines off.  The crash is still seen here (exit status, retried, noted in
# samples.csv) and real kernel oopses are still logged.
echo 0 > /proc/sys/debug/exception-trace 2>/dev/null ||
	say "cannot turn off debug.exception-trace"

[ -x "$PP" ] || { say "missing $PP (built by bench.sh)"; exit 2; }
[ -x "$IMM" ] || { say "missing $IMM (built by bench.sh)"; exit 2; }
[ -x "$FLUSH" ] || { say "missing $FLUSH (built by bench.sh)"; exit 2; }
# flush_bench's server memory: a devdax device (tools/vm/run --pmem, an
# emulated NVDIMM: $SIWX_PMEM_DEV; else the first there is) makes the
# persistent Flush points measurable; without one they are n/a with
# flush_bench's reason.
PMEM=${SIWX_PMEM_DEV:-}
[ -c "$PMEM" ] || PMEM=
for f in /dev/dax*; do
	[ -z "$PMEM" ] && [ -c "$f" ] && PMEM=$f
done
say "flush_bench server memory: ${PMEM:-anonymous (no devdax device: persistent Flush n/a)}"
ATOMIC_CHECKED[siwx]=1
atomic_check siwx siw0
if ! setup_rxe >> "$LOGS/setup-rxe.txt" 2>&1; then
	KIND_BROKEN[rxe]="rxe setup failed (see logs/setup-rxe.txt)"
	say "rxe setup FAILED"
fi
say "setup done"

read -r -a ORDER <<< "$BENCH_KINDS"
for ((rep = 1; rep <= BENCH_REPS; rep++)); do
	if ((rep % 2)); then
		kinds=("${ORDER[@]}")
	else
		kinds=()
		for ((i = ${#ORDER[@]} - 1; i >= 0; i--)); do kinds+=("${ORDER[i]}"); done
	fi
	say "repetition $rep/$BENCH_REPS: ${kinds[*]}"
	for kind in "${kinds[@]}"; do
		kind_block "$rep" "$kind"
	done
done

# tools/vm/run's teardown removes siw0/siw1 and whichever siw is loaded.
for d in rxe1 rxe0; do
	[ -e "/sys/class/infiniband/$d" ] && rdma link delete "$d"
done
say "done: $SEQ runs, $FAILS failed"
[ "$FAILS" = 0 ] || exit 3
exit 0
