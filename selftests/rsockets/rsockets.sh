#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# rsockets.sh - rsockets (librdmacm/rsocket.c) over siw: which path it takes
# on the wire, and that the data arrives intact. TAP output. Single-VM
# topology: server on SIWX_ADDR0 (siw0), client bound to SIWX_ADDR1 (siw1).
#
# rsockets sends every message as an RDMA Write with Immediate on
# InfiniBand/RoCE, and as an RDMA Write plus a 4-byte inline Send on iWARP
# (RS_OPT_MSG_SEND). patches/rdma-core/0009 makes it take the InfiniBand
# path on iWARP when both ends' devices support RDMA Write with Immediate
# (RFC 7306) and both rsockets say so in their connection data.
#
# Each case runs rstream or riostream (-T v: the receiver checks every byte
# of the counting pattern the sender writes) with our rdma-core
# (RDMA_PREFIX/bin with LD_LIBRARY_PATH=RDMA_PREFIX/lib: the tools carry no
# rpath) or Debian's stock rdmacm-utils/librdmacm 44 (/usr/bin without
# LD_LIBRARY_PATH; always the send path on iWARP), while dumpcap records lo
# (traffic between the two local veth addresses flows over lo).
# rsockets_wire.py then counts the RDMAP messages of each connection from
# the raw bytes: the IB path has Immediate Data messages (opcode 0x8) in
# both directions and no Send; the send path has 4-byte Sends (0x3) in both
# directions and no Immediate Data.
#
#   SIWX_RSOCKETS_MODE=siwx (default; suite rsockets): our rsockets on both
#     ends over siwx takes the IB path; against a stock rsockets, either
#     side the server, the send path.
#   SIWX_RSOCKETS_MODE=upstream (suite rsockets_upstream, booted with
#     build/upstream/siw.ko): our rsockets on both ends falls back to the
#     send path (libsiw refuses RDMA Write with Immediate there).
#
# Two results per case: rsockets.CASE.data (both ends exit 0, nothing
# failed verification) and rsockets.CASE.PATH_path (the wire).
#
# The inline80 case gives our rsockets (both ends) an inline size of 80
# bytes (rsocket's inline_default configuration file, bind-mounted over
# RDMA_PREFIX/etc/rdma in a private mount namespace of each tool) and sends
# 70-byte messages, which go out inline: more than a write with immediate
# carries inline on siw (64 bytes; the send path has 80). It may take either
# path, but not fail: the capability check of 0009 asks the provider for a
# QP with that inline size and write with immediate, which a provider must
# refuse when it cannot carry that much inline with immediate data (then
# it is the send path).
#
# SIWX_RSOCKETS_REPEAT=N (default 0; the long form of issue 14's "rstream
# hung once in about 80 runs") then runs one case N more times, on the port
# after the cases' and outside the capture: SIWX_RSOCKETS_REPEAT_CASE
# (default rstream_nonblock, rstream_inline80 in upstream mode). One more
# result, rsockets.CASE.repeat: every run passed; each failed run's logs
# are kept as rsockets-repeat-K-{server,client}.log.
#
# Environment: SIWX_ADDR0/1, SIWX_RESULTS (capture and logs),
# RDMA_PREFIX, SIWX_RSOCKETS_MODE, SIWX_RSOCKETS_PORT (first port, 42100),
# SIWX_RSOCKETS_STOCK (directory of the stock tools, /usr/bin),
# SIWX_RSOCKETS_REPEAT, SIWX_RSOCKETS_REPEAT_CASE.

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
A0=${SIWX_ADDR0:-192.168.77.1}
A1=${SIWX_ADDR1:-192.168.77.2}
# the client in siw1's namespace when it has one (tools/vm/run --netns)
CLI_NS=()
[ -z "${SIWX_NETNS1:-}" ] || CLI_NS=(ip netns exec "$SIWX_NETNS1")
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
MODE=${SIWX_RSOCKETS_MODE:-siwx}
PORT0=${SIWX_RSOCKETS_PORT:-42100}
PREFIX=${RDMA_PREFIX:-$HERE/../../build/rdma-core/prefix}
OURS=$PREFIX/bin
STOCK=${SIWX_RSOCKETS_STOCK:-/usr/bin}
PY=$(command -v /usr/bin/python3 || command -v python3)
LIMIT=150	# seconds per tool run

# name  server  client  tool  path  options
# (server/client: ours or stock; path: imm = IB path, send = fallback,
# any = either, consistently; inline=N: our rsockets' inline_default)
case $MODE in
siwx)
	CASES=(
		"ours_ours.rstream_64k    ours  ours  rstream   imm  -S 65536 -C 40"
		"ours_ours.rstream_37b    ours  ours  rstream   imm  -S 37 -C 400"
		"ours_ours.rstream_nonblock ours ours rstream   imm  -S 4097 -C 100 -T n"
		"ours_ours.riostream_64k  ours  ours  riostream imm  -S 65536 -C 8 -I 5"
		"ours_ours.rstream_inline80 ours ours rstream   any  -S 70 -C 200 inline=80"
		"stock_ours.rstream       stock ours  rstream   send -S 65536 -C 40"
		"ours_stock.rstream       ours  stock rstream   send -S 65536 -C 40"
		"stock_ours.riostream     stock ours  riostream send -S 65536 -C 8 -I 5"
		"ours_stock.riostream     ours  stock riostream send -S 65536 -C 8 -I 5"
	)
	;;
upstream)
	CASES=(
		"upstream.ours_ours.rstream_64k   ours ours rstream   send -S 65536 -C 40"
		"upstream.ours_ours.rstream_37b   ours ours rstream   send -S 37 -C 400"
		"upstream.ours_ours.riostream_64k ours ours riostream send -S 65536 -C 8 -I 5"
		"upstream.ours_ours.rstream_inline80 ours ours rstream send -S 70 -C 200 inline=80"
	)
	;;
*)
	echo "Bail out! SIWX_RSOCKETS_MODE=$MODE (siwx or upstream)"
	exit 1
	;;
esac

REPEAT=${SIWX_RSOCKETS_REPEAT:-0}
case $REPEAT in ''|*[!0-9]*) echo "Bail out! SIWX_RSOCKETS_REPEAT=$REPEAT"; exit 1 ;; esac
RCASE=
if [ "$REPEAT" -gt 0 ]; then
	rname=${SIWX_RSOCKETS_REPEAT_CASE:-}
	[ -n "$rname" ] || { [ "$MODE" = siwx ] && rname=rstream_nonblock || rname=rstream_inline80; }
	for c in "${CASES[@]}"; do
		set -- $c
		case $1 in *".$rname") RCASE=$c ;; esac
	done
	[ -n "$RCASE" ] || { echo "Bail out! no case $rname in mode $MODE"; exit 1; }
fi

echo "TAP version 13"
echo "1..$(( ${#CASES[@]} * 2 + (REPEAT > 0) ))"

. "$HERE/../lib/capture.sh"
missing=
for t in rstream riostream; do
	[ -x "$OURS/$t" ] || missing="$missing $OURS/$t (make rdma-core)"
	case " ${CASES[*]} " in *" stock "*)
		[ -x "$STOCK/$t" ] || missing="$missing $STOCK/$t (apt-get install rdmacm-utils)" ;;
	esac
done
[ -x "$DUMPCAP" ] || missing="$missing dumpcap (apt-get install tshark)"
[ -n "$PY" ] || missing="$missing python3"
if [ -n "$missing" ]; then
	echo "# missing:$missing"
	i=1
	for c in "${CASES[@]}"; do
		set -- $c
		echo "not ok $i rsockets.$1.data # prerequisites"
		echo "not ok $((i + 1)) rsockets.$1.${5}_path # prerequisites"
		i=$((i + 2))
	done
	exit 1
fi

OURS_ENV=(env "LD_LIBRARY_PATH=$PREFIX/lib")
STOCK_ENV=(env -u LD_LIBRARY_PATH)
echo "# mode $MODE; module: $(cat /sys/module/siw/version 2>/dev/null || echo 'no version (upstream)')"
# which librdmacm each side loads: ours must be the prefix's, or the test
# would silently run the stock library on both ends
ours_lib=$("${OURS_ENV[@]}" ldd "$OURS/rstream" | awk '/librdmacm/ {print $3}')
echo "# ours: $OURS/{rstream,riostream} with $ours_lib"
case $(readlink -f "$ours_lib") in
"$(readlink -f "$PREFIX")"/*) ;;
*) echo "Bail out! our rstream does not load $PREFIX/lib/librdmacm.so"; exit 1 ;;
esac
case " ${CASES[*]} " in *" stock "*)
	echo "# stock: $STOCK/{rstream,riostream} with $("${STOCK_ENV[@]}" ldd "$STOCK/rstream" | awk '/librdmacm/ {print $3}')" ;;
esac

# per-command rsocket configuration (with_inline)
WORKDIR=$(mktemp -d "${TMPDIR:-/tmp}/rsockets.XXXXXX")
trap 'rm -rf "$WORKDIR"' EXIT
last=$((PORT0 + ${#CASES[@]} - 1))
# -P: libpcap format (rsockets_wire.py reads it)
capture_ok=1
if ! cap_start "rsockets-$MODE" "tcp portrange $PORT0-$last" -P; then
	echo "# dumpcap did not start: $(tr '\n' ' ' < "$CAP_LOG")"
	capture_ok=0
fi

binof() {	# ours|stock TOOL
	if [ "$1" = ours ]; then echo "$OURS/$2"; else echo "$STOCK/$2"; fi
}

# the rdma_cm listener of siw is a kernel TCP socket: wait for it
wait_listen() {	# PORT PID
	for _ in $(seq 150); do
		ss -Hltn "sport = :$1" 2>/dev/null | grep -q . && return 0
		kill -0 "$2" 2>/dev/null || return 1
		sleep 0.2
	done
	return 1
}

# verified bytes per end: rstream checks everything it receives (16 bytes
# of handshake, then count x size); riostream checks the last transfer of
# each iteration (size - 1 bytes)
verified() {	# TOOL ARGS...
	local tool=$1 s=0 c=0 it=1
	shift
	while [ $# -gt 0 ]; do
		case $1 in
		-S) s=$2; shift ;;
		-C) c=$2; shift ;;
		-I) it=$2; shift ;;
		esac
		shift
	done
	if [ "$tool" = rstream ]; then
		echo $(( 16 + s * c * it ))
	else
		echo $(( (s - 1) * it ))
	fi
}

# command prefix: RDMA_PREFIX/etc/rdma/rsocket/inline_default = $1 for
# the command alone
with_inline() {	# N -> INL array
	local d=$WORKDIR/etc-inline$1
	mkdir -p "$d/rsocket" && echo "$1" > "$d/rsocket/inline_default"
	INL=(unshare -m --propagation private sh -c
	     'mount --bind "$1" "$2" && shift 2 && exec "$@"' sh "$d" "$PREFIX/etc/rdma")
}

# hang_watch PID TOOL LOG: if PID still runs HANG_AFTER seconds from now,
# append what both ends of TOOL are doing to LOG.hang (user stacks by gdb,
# kernel stacks, siw's QPs, the TCP connections): the diagnosis of a hang
# the timeout then ends
HANG_AFTER=$((LIMIT - 20))
hang_watch() {
	local i p
	for ((i = 0; i < HANG_AFTER * 5; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.2
	done
	{
		echo "== $2 still running after ${HANG_AFTER}s: $(date)"
		for p in $(pgrep -x "$2"); do
			echo "== pid $p: $(tr '\0' ' ' < "/proc/$p/cmdline")"
			for t in /proc/"$p"/task/*; do
				echo "-- task ${t##*/} ($(cat "$t/comm")), kernel stack:"
				cat "$t/stack" 2>/dev/null
			done
			command -v gdb > /dev/null &&
				timeout 60 gdb -q -batch -p "$p" -ex 'thread apply all bt' 2>&1 | grep -v '^\[New LWP'
		done
		echo "== rdma res show qp -dd"; rdma res show qp -dd 2>&1
		echo "== rdma res show cm_id"; rdma res show cm_id 2>&1
		echo "== ss -tnoie (both namespaces)"; ss -tnoie 2>&1; "${CLI_NS[@]}" ss -tnoie 2>&1
	} >> "$3.hang" 2>&1
}

# run_case PORT NAME SRV CLI TOOL PATH OPTIONS...: one server and client
# run; sets why (empty: both ends exit 0, data verified), d (diagnostics),
# opts and inl
run_case() {
	local port=$1 name=$2 srv=$3 cli=$4 tool=$5
	shift 6
	opts=() INL=() inl=
	for o in "$@"; do
		case $o in
		inline=*) inl=${o#inline=}; with_inline "$inl" ;;
		*) opts+=("$o") ;;
		esac
	done
	slog=$OUT/rsockets-$name-server.log
	clog=$OUT/rsockets-$name-client.log
	senv=("${INL[@]}" "${OURS_ENV[@]}") cenv=("${INL[@]}" "${OURS_ENV[@]}")
	[ "$srv" = stock ] && senv=("${STOCK_ENV[@]}")
	[ "$cli" = stock ] && cenv=("${STOCK_ENV[@]}")
	t0=$(date +%s)
	timeout "$LIMIT" "${senv[@]}" "$(binof "$srv" "$tool")" -b "$A0" -p "$port" -T v "${opts[@]}" \
		>"$slog" 2>&1 &
	spid=$!
	wait_listen "$port" "$spid" || echo "# $name: server not listening on $port (yet)"
	rm -f "$clog.hang"
	try=0
	while :; do
		try=$((try + 1))
		# line-buffered: a client killed by timeout still shows how far
		# it got
		"${CLI_NS[@]}" timeout "$LIMIT" "${cenv[@]}" stdbuf -oL "$(binof "$cli" "$tool")" -s "$A0" -b "$A1" -p "$port" -T v \
			"${opts[@]}" >"$clog" 2>&1 &
		cpid=$!
		hang_watch "$cpid" "$tool" "$clog" &
		wpid=$!
		wait "$cpid"
		crc=$?
		kill "$wpid" 2>/dev/null
		wait "$wpid" 2>/dev/null
		[ "$crc" = 0 ] && break
		# retry only a connection that was refused while the server waits
		[ "$try" -lt 5 ] && kill -0 "$spid" 2>/dev/null &&
			grep -qiE "refused|rconnect|unreachable" "$clog" || break
		sleep 2
	done
	# a server whose client failed may wait for ever: 30 s more at most
	for _ in $(seq 150); do kill -0 "$spid" 2>/dev/null || break; sleep 0.2; done
	kill -TERM "$spid" 2>/dev/null
	wait "$spid"
	src=$?
	secs=$(( $(date +%s) - t0 ))
	why=
	[ "$src" = 0 ] || why="$why server exit $src;"
	[ "$crc" = 0 ] || why="$why client exit $crc;"
	grep -qi "verification failed" "$slog" "$clog" && why="$why data verification failed;"
	grep -q '^custom ' "$clog" || why="$why no result line from the client;"
	v=$(verified "$tool" "${opts[@]}")
	d="# $name: $srv $tool server, $cli $tool client, port $port, ${opts[*]}${inl:+ (inline_default $inl)}: server exit $src, client exit $crc ($try tries), ${secs}s; -T v checks $v bytes at each end"
	d="$d"$'\n'"# $name: client result: $(grep '^custom ' "$clog" | tail -n 1 | tr -s ' ')"
	[ ! -f "$clog.hang" ] || d="$d"$'\n'"# $name: the hung client's state: $clog.hang"
}

declare -A DATA_OK DATA_DIAG
WIRE_ARGS=()
port=$PORT0
for c in "${CASES[@]}"; do
	set -- $c
	name=$1 path=$5
	run_case "$port" "$@"
	if [ -z "$why" ]; then
		DATA_OK[$name]=1
	else
		DATA_OK[$name]=0
		d="$d"$'\n'"# $name:$why"
		d="$d"$'\n'"# --- server log ($slog):"$'\n'"$(tail -n 8 "$slog" | sed 's/^/#   /')"
		d="$d"$'\n'"# --- client log ($clog):"$'\n'"$(tail -n 8 "$clog" | sed 's/^/#   /')"
	fi
	DATA_DIAG[$name]=$d
	# the data both tools move: the 16-byte handshake, count x size x iterations
	WIRE_ARGS+=("$port=$path=$(verified rstream "${opts[@]}")")
	port=$((port + 1))
done

# rsockets_wire.py checks that every connection's end is there
cap_stop
PCAP=$CAP_PCAP
[ -z "$CAP_SUMMARY" ] || echo "$CAP_SUMMARY"

declare -A WIRE
if [ "$capture_ok" = 1 ]; then
	"$PY" "$HERE/rsockets_wire.py" "$PCAP" "${WIRE_ARGS[@]}" > "$OUT/rsockets-$MODE.wire" 2>&1
	while read -r tag p verdict _; do
		[ "$tag" = RESULT ] && WIRE[$p]=$verdict
	done < "$OUT/rsockets-$MODE.wire"
	grep -q '^RESULT' "$OUT/rsockets-$MODE.wire" || sed 's/^/# wire: /' "$OUT/rsockets-$MODE.wire"
fi
echo "# capture: $PCAP"

i=1 fails=0 port=$PORT0
for c in "${CASES[@]}"; do
	set -- $c
	name=$1 path=$5
	printf '%s\n' "${DATA_DIAG[$name]}"
	if [ "${DATA_OK[$name]}" = 1 ]; then
		echo "ok $i rsockets.$name.data"
	else
		echo "not ok $i rsockets.$name.data"
		fails=$((fails + 1))
	fi
	grep "^# port $port[ :]" "$OUT/rsockets-$MODE.wire" 2>/dev/null
	if [ "${WIRE[$port]:-}" = ok ]; then
		echo "ok $((i + 1)) rsockets.$name.${path}_path"
	else
		[ "$capture_ok" = 1 ] || echo "# $name: no capture"
		echo "not ok $((i + 1)) rsockets.$name.${path}_path"
		fails=$((fails + 1))
	fi
	i=$((i + 2)) port=$((port + 1))
done

if [ "$REPEAT" -gt 0 ]; then
	set -- $RCASE
	rn=$1 bad=0 hung=0 t0r=$(date +%s)
	for k in $(seq "$REPEAT"); do
		run_case "$((last + 1))" $RCASE
		if [ -n "$why" ]; then
			bad=$((bad + 1))
			{ [ "$src" = 124 ] || [ "$crc" = 124 ]; } && hung=$((hung + 1))
			echo "# $rn repeat $k:$why"
			cp "$slog" "$OUT/rsockets-repeat-$k-server.log"
			cp "$clog" "$OUT/rsockets-repeat-$k-client.log"
			[ ! -f "$clog.hang" ] || mv "$clog.hang" "$OUT/rsockets-repeat-$k-client.log.hang"
		fi
		[ $((k % 10)) = 0 ] &&
			echo "# $rn repeat: $k of $REPEAT runs, $bad failed, $((  $(date +%s) - t0r )) s"
	done
	echo "# $rn repeated $REPEAT times on port $((last + 1)): $bad failed ($hung timed out), $(( $(date +%s) - t0r )) s"
	if [ "$bad" = 0 ]; then
		echo "ok $i rsockets.$rn.repeat"
	else
		echo "not ok $i rsockets.$rn.repeat"
		fails=$((fails + 1))
	fi
fi
[ "$fails" = 0 ]
