#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# mpa_pair.sh - RFC 6581 enhanced MPA connection setup between siwx and the
# unmodified upstream siw, in the pair topology (two VMs). TAP output.
#
# Both VMs run this script (SIWX_ROLE=a|b) and walk the same fixed list of
# cases. VM a is always the rdma_cm server (MPA responder), VM b the client
# (MPA initiator), both with selftests/mpa/mpa_conn. So
#   SIWX_PAIR_ORDER=ours-upstream (a siwx, b upstream): siwx as RESPONDER,
#     cases R1..R3;
#   SIWX_PAIR_ORDER=upstream-ours (a upstream, b siwx): siwx as INITIATOR,
#     cases I1..I6.
# Other orders (ours-ours) have nothing to compare here: plan 1..0, skipped.
#
# Per case the server starts 'mpa_conn server --count 1' on its own port
# (SIWX_MPA_PAIR_PORT + case index); the client retries while the server
# does not listen yet ('client connect rc=-111'). Each side holds the
# connection 1.5 s (--hold-ms 1500). In a case that checks 'rdma resource',
# the siwx side holds it until its snapshot of the live QP is taken
# (--hold-file, created by snap_res) and then 1.5 s, and the other side
# until the siwx side disconnects (--hold-peer): under load the snapshot
# may take longer than any fixed hold.
#
# Only the VM running siwx (it has /sys/module/siw/parameters/mpa_rev) sets
# the module parameters of a case (and resets all of them to the defaults
# after it), captures its pair interface with tcpdump and checks
#   CASE.ulp   what its mpa_conn reports (CM events with initiator_depth =
#              local IRD and responder_resources = local ORD on
#              ESTABLISHED; on CONNECT_REQUEST the peer's IRD and ORD;
#              accept rc; traffic; exit status),
#   CASE.res   the MPA details of its QP in 'rdma -dd resource show qp'
#              (mpa-role, mpa-rev, mpa-enhanced, mpa-model, mpa-rtr,
#              mpa-crc, ird, ord), taken while the connection is held,
#   CASE.wire  the MPA Request/Reply words and the first FPDUs decoded from
#              the raw bytes by mpa_pair_wire.py (Rev, S, A/B/C/D, the
#              14-bit IRD/ORD, the zero-length RTR, a Terminate's
#              layer/etype/code).
# The upstream VM only checks CASE.ulp (its own observations).
#
# Cases (server a, client b; values are --ird/--ord of mpa_conn):
#  R1 default        srv 4/4, cli 4/4: Request rev 2 S=1 A=0 IRD 4 ORD 4,
#                    Reply IRD 4 ORD 4, no RTR; established, traffic ok.
#  R2 relaxed_clamp  srv ird 2 ord 8, cli ird 2 ord 6: responder ORD
#                    clamped to 2, IRD raised to 6; Reply IRD 6 ORD 2.
#  R3 strict_ird     mpa_ird_ord=strict, srv ord 8, cli ird 2: accept
#                    fails with -ENOMEM after a Reply (IRD 4 ORD 2) and a
#                    Terminate (QN 2) of layer 2 / etype 0 / code 6; the
#                    client gets no working connection.
#  I1 default        Request rev 2 S=1 A=0 IRD 4 ORD 4; client-server, no
#                    RTR (the first initiator FPDU is the 64-byte Send).
#  I2 p2p_write      mpa_p2p=1 mpa_rtr_offer=write: Request and Reply A=1
#                    C=1; first initiator FPDU a zero-length RDMA Write.
#  I3 p2p_read       mpa_p2p=1 mpa_rtr_offer=read: A=1 D=1; zero-length
#                    Read Request (read size 0) as RTR, answered by a
#                    zero-length Read Response.
#  I4 ulp_rev1       mpa_ird_ord=ulp: an unenhanced Rev 1 Request (S=0),
#                    cli ird 3 ord 2 kept as they are.
#  I5 ulp_p2p        mpa_ird_ord=ulp mpa_p2p=1 mpa_rtr_offer=write: Request
#                    IRD/ORD 0x3FFF with A, C; upstream answers numbers,
#                    siwx keeps cli ird 5 ord 6.
#  I6 p2p_send_nomatch  not run: upstream would BUG() (see the SKIP).
#
# Environment: SIWX_ROLE, SIWX_PAIR_ORDER, SIWX_LOCAL, SIWX_PEER,
# SIWX_NETDEV0 (the pair interface), SIWX_BIN (mpa_conn), SIWX_RESULTS
# (logs, capture), SIWX_MPA_PAIR_PORT (first port, 47500).

set -u
HERE=$(cd "$(dirname "$0")" && pwd)
BIN=${SIWX_BIN:-$HERE/../../build/selftests/bin}
MPA_CONN=$BIN/mpa_conn
ROLE=${SIWX_ROLE:-}
ORDER=${SIWX_PAIR_ORDER:-}
OUT=${SIWX_RESULTS:-${TMPDIR:-/tmp}}
PORT0=${SIWX_MPA_PAIR_PORT:-47500}
PARAMS=/sys/module/siw/parameters
PY=$(command -v /usr/bin/python3 || command -v python3)
HOLD=1500
# the waits for the peer VM, times SIWX_SUITE_TIMEOUT_SCALE (6 on the debug
# kernel, where a case's client ran over the server's 30 s)
SCALE=${SIWX_SUITE_TIMEOUT_SCALE:-1}
ALL_CASES=(R1 R2 R3 I1 I2 I3 I4 I5 I6)
PARAM_NAMES=(mpa_rev mpa_p2p mpa_rtr_offer mpa_rtr_accept mpa_ird_ord
	     mpa_rev1_retry mpa_crc mpa_crc_strict)
PARAM_DEFAULTS=(2 N 'write,read' 'send,write,read' relaxed N N N)

echo "TAP version 13"

case $ROLE in
a) LOCAL=${SIWX_LOCAL:-192.168.78.1} PEER=${SIWX_PEER:-192.168.78.2} ;;
b) LOCAL=${SIWX_LOCAL:-192.168.78.2} PEER=${SIWX_PEER:-192.168.78.1} ;;
*) echo "1..0 # SKIP pair topology only (SIWX_ROLE '$ROLE' is not a or b)"; exit 0 ;;
esac
case $ORDER in
ours-upstream) CASES=(R1 R2 R3) SIWX_ROLE_IS=a ;;
upstream-ours) CASES=(I1 I2 I3 I4 I5 I6) SIWX_ROLE_IS=b ;;
*) echo "1..0 # SKIP needs siwx in one VM and upstream siw in the other (SIWX_PAIR_ORDER '$ORDER')"; exit 0 ;;
esac

SIWX=0
[ -e "$PARAMS/mpa_rev" ] && SIWX=1

# ---------------------------------------------------------------- cases
# case_def ID sets: NAME PSET (module parameters, siwx side) SARGS CARGS
# SRV_EXP/CLI_EXP (';'-separated extended regexes that must match a line
# of that side's mpa_conn output), SRV_NOT/CLI_NOT (must match none),
# SRV_RC/CLI_RC (exit status: N or !0), RES (rdma resource expectations of
# the siwx QP, empty: no .res test), WIRE (mpa_pair_wire.py expectations)
# and SKIPR (reason: the case is not run).
est() {	# ROLE IRD ORD: the ESTABLISHED event with the local IRD/ORD
	echo "^$1 event=ESTABLISHED status=0 initiator_depth=$2 responder_resources=$3 "
}
creq() {	# PEER_IRD PEER_ORD: the CONNECT_REQUEST event
	echo "^server event=CONNECT_REQUEST status=0 initiator_depth=$1 responder_resources=$2 "
}
res() {	# ROLE REV ENHANCED MODEL RTR IRD ORD
	echo "res.mpa-role=$1 res.mpa-rev=$2 res.mpa-enhanced=$3 res.mpa-model=$4" \
	     "res.mpa-rtr=$5 res.mpa-crc=0 res.ird=$6 res.ord=$7"
}
# Request/Reply of an enhanced setup without CRC and markers
mpa2() {	# req|rep A B C D IRD ORD
	echo "$1.key=1 $1.rev=2 $1.S=1 $1.marker=0 $1.crc=0 $1.rej=0" \
	     "$1.A=$2 $1.B=$3 $1.C=$4 $1.D=$5 $1.IRD=$6 $1.ORD=$7"
}
SEND_FIRST="i1.op=3 i1.T=0 i1.len=64"	# the client's 64-byte hello Send

case_def() {
	NAME='' PSET='' SARGS='' CARGS='' SRV_EXP='' SRV_NOT='' SRV_RC=0
	CLI_EXP='' CLI_NOT='' CLI_RC=0 RES='' WIRE='' SKIPR=''
	case $1 in
	R1)
		NAME=default SARGS="--ird 4 --ord 4" CARGS="--ird 4 --ord 4"
		SRV_EXP="$(creq 4 4);^server accept rc=0\$;$(est server 4 4);^server traffic ok\$"
		CLI_EXP="$(est client 4 4);^client traffic ok send=1 read=4 write=1\$"
		RES=$(res responder 2 1 client-server none 4 4)
		WIRE="$(mpa2 req 0 0 0 0 4 4) $(mpa2 rep 0 0 0 0 4 4) $SEND_FIRST rterm.seen=0"
		;;
	R2)
		NAME=relaxed_clamp SARGS="--ird 2 --ord 8" CARGS="--ird 2 --ord 6"
		SRV_EXP="$(creq 2 6);^server accept rc=0\$;$(est server 6 2);^server traffic ok\$"
		CLI_EXP="$(est client 2 6);^client traffic ok send=1 read=6 write=1\$"
		RES=$(res responder 2 1 client-server none 6 2)
		WIRE="$(mpa2 req 0 0 0 0 2 6) $(mpa2 rep 0 0 0 0 6 2) $SEND_FIRST rterm.seen=0"
		;;
	R3)
		NAME=strict_ird PSET="mpa_ird_ord=strict" SARGS="--ord 8" CARGS="--ird 2"
		SRV_EXP="$(creq 2 4);^server accept rc=-12\$"
		SRV_NOT="event=ESTABLISHED;traffic ok"
		SRV_RC=1
		CLI_NOT="^client traffic ok"
		CLI_RC='!0'
		# Reply with what would fit, then the Terminate
		WIRE="$(mpa2 req 0 0 0 0 2 4) $(mpa2 rep 0 0 0 0 4 2) r1.op=7 r1.T=0 r1.qn=2 r1.layer=2 r1.etype=0 r1.code=6"
		;;
	I1)
		NAME=default SARGS="--ird 4 --ord 4" CARGS="--ird 4 --ord 4"
		SRV_EXP="$(creq 4 4);^server accept rc=0\$;$(est server 4 4);^server traffic ok\$"
		CLI_EXP="$(est client 4 4);^client traffic ok send=1 read=4 write=1\$"
		RES=$(res initiator 2 1 client-server none 4 4)
		WIRE="$(mpa2 req 0 0 0 0 4 4) $(mpa2 rep 0 0 0 0 4 4) $SEND_FIRST iterm.seen=0 rterm.seen=0"
		;;
	I2)
		NAME=p2p_write PSET="mpa_p2p=1 mpa_rtr_offer=write"
		SARGS="--ird 4 --ord 4" CARGS="--ird 4 --ord 4"
		SRV_EXP="$(creq 4 4);^server accept rc=0\$;$(est server 4 4);^server traffic ok\$"
		CLI_EXP="$(est client 4 4);^client traffic ok send=1 read=4 write=1\$"
		RES=$(res initiator 2 1 peer-to-peer write 4 4)
		WIRE="$(mpa2 req 1 0 1 0 4 4) $(mpa2 rep 1 0 1 0 4 4) i1.op=0 i1.T=1 i1.L=1 i1.len=0 i2.op=3 i2.len=64 iterm.seen=0 rterm.seen=0"
		;;
	I3)
		NAME=p2p_read PSET="mpa_p2p=1 mpa_rtr_offer=read"
		SARGS="--ird 4 --ord 4" CARGS="--ird 4 --ord 4"
		SRV_EXP="$(creq 4 4);^server accept rc=0\$;$(est server 4 4);^server traffic ok\$"
		CLI_EXP="$(est client 4 4);^client traffic ok send=1 read=4 write=1\$"
		RES=$(res initiator 2 1 peer-to-peer read 4 4)
		WIRE="$(mpa2 req 1 0 0 1 4 4) $(mpa2 rep 1 0 0 1 4 4) i1.op=1 i1.T=0 i1.qn=1 i1.rsize=0 i2.op=3 i2.len=64 r1.op=2 r1.T=1 r1.len=0 iterm.seen=0 rterm.seen=0"
		;;
	I4)
		NAME=ulp_rev1 PSET="mpa_ird_ord=ulp"
		SARGS="--ird 4 --ord 4" CARGS="--ird 3 --ord 2"
		# upstream answers a Rev 1 request without IRD/ORD: its
		# ESTABLISHED carries the values it accepted with
		SRV_EXP="^server event=CONNECT_REQUEST status=0 ;^server accept rc=0\$;$(est server 4 4);^server traffic ok\$"
		CLI_EXP="$(est client 3 2);^client traffic ok send=1 read=2 write=1\$"
		RES=$(res initiator 1 0 client-server none 3 2)
		WIRE="req.key=1 req.rev=1 req.S=0 req.marker=0 req.crc=0 req.pdlen=0 rep.key=1 rep.rev=1 rep.S=0 rep.rej=0 $SEND_FIRST iterm.seen=0 rterm.seen=0"
		;;
	I5)
		NAME=ulp_p2p PSET="mpa_ird_ord=ulp mpa_p2p=1 mpa_rtr_offer=write"
		SARGS="--ird 4 --ord 4" CARGS="--ird 5 --ord 6"
		# upstream takes 0x3FFF as a number (clamped to its maximum
		# of 128) and raises its IRD to it (relaxed)
		SRV_EXP="$(creq 128 128);^server accept rc=0\$;$(est server 128 4);^server traffic ok\$"
		CLI_EXP="$(est client 5 6);^client traffic ok send=1 read=6 write=1\$"
		RES=$(res initiator 2 1 peer-to-peer write 5 6)
		WIRE="$(mpa2 req 1 0 1 0 16383 16383) rep.key=1 rep.rev=2 rep.S=1 rep.A=1 rep.B=0 rep.C=1 rep.D=0 rep.IRD!=16383 rep.ORD!=16383 i1.op=0 i1.T=1 i1.len=0 i2.op=3 i2.len=64 iterm.seen=0 rterm.seen=0"
		;;
	I6)
		NAME=p2p_send_nomatch
		SKIPR="upstream responder BUG()s on a Terminate in place of the RTR (iwcm cm_close_handler)"
		;;
	esac
}

case_index() {	# ID -> its position in ALL_CASES (port offset)
	local i
	for i in "${!ALL_CASES[@]}"; do
		[ "${ALL_CASES[$i]}" = "$1" ] && { echo "$i"; return; }
	done
}

# ---------------------------------------------------------------- plan
n=0
for c in "${CASES[@]}"; do
	case_def "$c"
	if [ -n "$SKIPR" ] || [ "$ROLE" != "$SIWX_ROLE_IS" ]; then
		n=$((n + 1))
	else
		n=$((n + 2))
		[ -z "$RES" ] || n=$((n + 1))
	fi
done
[ "$ROLE" != "$SIWX_ROLE_IS" ] || n=$((n + 1))	# params_reset
echo "1..$n"

T=0 FAILS=0
tap() {	# OK NAME [DIRECTIVE]
	T=$((T + 1))
	if [ "$1" = 1 ]; then
		echo "ok $T - $2${3:+ # $3}"
	else
		echo "not ok $T - $2"
		FAILS=$((FAILS + 1))
	fi
}
all_fail() {	# REASON: every planned test fails
	echo "# $1"
	while [ "$T" -lt "$n" ]; do
		tap 0 "setup"
	done
	exit 1
}

if [ "$ROLE" = "$SIWX_ROLE_IS" ] && [ "$SIWX" != 1 ]; then
	echo "Bail out! VM $ROLE should run siwx in order $ORDER, but $PARAMS/mpa_rev is missing"
	exit 1
fi
if [ "$ROLE" != "$SIWX_ROLE_IS" ] && [ "$SIWX" = 1 ]; then
	echo "Bail out! VM $ROLE should run upstream siw in order $ORDER, but it has $PARAMS/mpa_rev"
	exit 1
fi
[ -x "$MPA_CONN" ] || all_fail "$MPA_CONN missing (make selftests)"

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mpa_pair.XXXXXX")
TCPDUMP_PID=
cleanup() {
	[ -z "$TCPDUMP_PID" ] || kill -INT "$TCPDUMP_PID" 2>/dev/null
	rm -rf "$WORK"
}
trap cleanup EXIT

echo "# role $ROLE ($([ "$SIWX" = 1 ] && echo siwx || echo upstream siw)), order $ORDER," \
     "local $LOCAL, peer $PEER, cases ${CASES[*]}"

# ---------------------------------------------------------------- siwx side
param_show() {
	local p v s=
	for p in "${PARAM_NAMES[@]}"; do
		v=$(cat "$PARAMS/$p" 2>/dev/null || echo '?')
		s="$s $p=$v"
	done
	echo "${s# }"
}
params_default() {	# all parameters back to the defaults; 0 ok
	local i bad=0
	for i in "${!PARAM_NAMES[@]}"; do
		echo "${PARAM_DEFAULTS[$i]}" > "$PARAMS/${PARAM_NAMES[$i]}" 2>/dev/null || bad=1
	done
	return $bad
}
params_set() {	# K=V...; prints what failed
	local kv
	for kv in "$@"; do
		echo "${kv#*=}" > "$PARAMS/${kv%%=*}" 2>/dev/null ||
			echo "cannot set ${kv%%=*}=${kv#*=}"
	done
}

RESET_WHY=
CAP=$WORK/mpa_pair.pcap
if [ "$SIWX" = 1 ]; then
	params_default || RESET_WHY="initial reset to the defaults failed;"
	DEFAULTS_SHOWN=$(param_show)
	echo "# siwx parameters at the start: $DEFAULTS_SHOWN"
	# the pair interface carries the connections (SIWX_NETDEV0)
	NETDEV=${SIWX_NETDEV0:-}
	if [ -z "$NETDEV" ]; then
		NETDEV=$(ip -o -4 addr show | awk -v a="$LOCAL" '$4 ~ "^"a"/" {print $2; exit}')
	fi
	last=$((PORT0 + ${#ALL_CASES[@]} - 1))
	TCPDUMP=$(command -v tcpdump || echo /usr/bin/tcpdump)
	# -Z root: write the file as root (tcpdump drops to user tcpdump
	# otherwise); --immediate-mode -U: every packet reaches the file at
	# once, mpa_pair_wire.py reads it while the capture goes on; -B: 64 MiB
	# of kernel buffer (the default 2 MiB holds only a few frames of -s 0)
	"$TCPDUMP" -i "$NETDEV" -n -s 0 -B 65536 -U --immediate-mode -Z root -w "$CAP" \
		"tcp portrange $PORT0-$last" 2> "$WORK/tcpdump.log" &
	TCPDUMP_PID=$!
	for _ in $(seq 300); do	# up to 30 s under TCG
		grep -q "listening on" "$WORK/tcpdump.log" && break
		kill -0 "$TCPDUMP_PID" 2>/dev/null || break
		sleep 0.1
	done
	if grep -q "listening on" "$WORK/tcpdump.log"; then
		echo "# capture: tcpdump on $NETDEV, tcp ports $PORT0-$last"
	else
		echo "# tcpdump did not start: $(tr '\n' ' ' < "$WORK/tcpdump.log")"
	fi
	[ -n "$PY" ] || echo "# python3 missing: no wire decoding"
fi

# snap_res PID OUTFILE: once mpa_conn prints its QP number (after
# ESTABLISHED), save 'rdma -dd -j resource show qp' (and the text form) to
# OUTFILE.res.json/.res.txt, the QP number to OUTFILE.qpn and, for the
# diagnostics, the driver attributes straight from netlink to
# OUTFILE.res.json.nl
snap_res() {
	local pid=$1 f=$2 q nlpid='' rc=1
	# what the kernel sent, decoded without the rdma tool; started now
	# (it waits for the QP number itself): the interpreter's start-up
	# under TCG may take longer than the connection is held
	if [ -n "$PY" ]; then
		"$PY" "$HERE/mpa_pair_wire.py" --netlink "$f" "$pid" > "$f.res.json.nl" 2>&1 &
		nlpid=$!
	fi
	while kill -0 "$pid" 2>/dev/null; do
		q=$(sed -n 's/^[a-z]* qpn=\([0-9][0-9]*\)$/\1/p' "$f" 2>/dev/null | head -n 1)
		if [ -n "$q" ]; then
			rdma -dd -j resource show qp > "$f.res.json" 2>&1
			rdma -dd resource show qp > "$f.res.txt" 2>&1
			echo "$q" > "$f.qpn"
			: > "$f.snapped"	# mpa_conn --hold-file may go on
			rc=0
			break
		fi
		sleep 0.1
	done
	[ -z "$nlpid" ] || wait "$nlpid"
	return $rc
}

# ulp_check FILE RC EXP NOT RC_EXPECTED: prints the reasons of a mismatch
ulp_check() {
	local f=$1 rc=$2 exp=$3 not=$4 want=$5 p
	local -a pats
	IFS=';' read -r -a pats <<< "$exp"
	for p in "${pats[@]}"; do
		[ -n "$p" ] || continue
		grep -Eq -- "$p" "$f" || echo "no line matches /$p/;"
	done
	IFS=';' read -r -a pats <<< "$not"
	for p in "${pats[@]}"; do
		[ -n "$p" ] || continue
		! grep -Eq -- "$p" "$f" || echo "a line matches /$p/ (must not);"
	done
	case $want in
	'!0') [ "$rc" != 0 ] || echo "exit status 0, expected a failure;" ;;
	*) [ "$rc" = "$want" ] || echo "exit status $rc, expected $want;" ;;
	esac
}

# the client gave up before MPA: refused (server not listening yet),
# address/route resolution not (yet) possible
refused() {	# FILE
	! grep -q 'event=ESTABLISHED' "$1" &&
		grep -Eq '^client (resolve_addr|resolve_route|connect) rc=-|event=(ADDR_ERROR|ROUTE_ERROR|UNREACHABLE)|status=-111 ' "$1"
}

# ---------------------------------------------------------------- run
first=1
for c in "${CASES[@]}"; do
	case_def "$c"
	id="$c.$NAME"
	if [ -n "$SKIPR" ]; then
		tap 1 "$id" "SKIP $SKIPR"
		continue
	fi
	port=$((PORT0 + $(case_index "$c")))
	mine=0
	[ "$ROLE" = "$SIWX_ROLE_IS" ] && mine=1
	pset_why=
	if [ "$mine" = 1 ]; then
		# shellcheck disable=SC2086  # a list of K=V
		pset_why=$(params_set $PSET)
		echo "# $id: siwx parameters: $(param_show)"
		kmsg_lines=$(dmesg 2>/dev/null | wc -l)
	fi
	t0=$SECONDS refusals=
	f=$WORK/$c.client
	[ "$ROLE" = a ] && f=$WORK/$c.server
	hold=(--hold-ms "$HOLD")
	if [ -n "$RES" ] && [ "$mine" = 1 ]; then
		hold=(--hold-file "$f.snapped" --hold-ms "$HOLD")
	elif [ -n "$RES" ]; then
		hold=(--hold-peer --hold-ms 30000)
	fi
	if [ "$ROLE" = a ]; then
		to=$((30000 * SCALE))
		[ "$first" = 1 ] && to=$((120000 * SCALE))	# the peer VM may boot later
		# shellcheck disable=SC2086  # option lists
		timeout -k 5 $((to / 1000 + 60)) "$MPA_CONN" server --addr "$LOCAL" --port "$port" \
			--count 1 "${hold[@]}" --timeout-ms "$to" $SARGS > "$f" 2>&1 &
		pid=$!
		[ "$mine" = 0 ] || [ -z "$RES" ] || snap_res "$pid" "$f"
		wait "$pid"
		rc=$?
		tries=1
		exp=$SRV_EXP not=$SRV_NOT want=$SRV_RC
		args="server --port $port $SARGS"
	else
		window=$((60 * SCALE))
		[ "$first" = 1 ] && window=$((150 * SCALE))
		deadline=$((SECONDS + window))
		tries=0 refusals=
		while :; do
			tries=$((tries + 1))
			rm -f "$f.qpn" "$f.res.json" "$f.res.txt" "$f.res.json.nl" "$f.snapped"
			# shellcheck disable=SC2086  # option lists
			timeout -k 5 $((90 * SCALE)) "$MPA_CONN" client --addr "$PEER" --port "$port" \
				"${hold[@]}" --timeout-ms $((20000 * SCALE)) $CARGS > "$f" 2>&1 &
			pid=$!
			[ "$mine" = 0 ] || [ -z "$RES" ] || snap_res "$pid" "$f"
			wait "$pid"
			rc=$?
			if refused "$f" && [ "$SECONDS" -lt "$deadline" ]; then
				refusals=$(grep -E 'rc=-|status=-' "$f" | tail -n 1)
				sleep 1
				continue
			fi
			break
		done
		exp=$CLI_EXP not=$CLI_NOT want=$CLI_RC
		args="client --port $port $CARGS"
	fi
	secs=$((SECONDS - t0))
	first=0
	cp "$f" "$OUT/mpa_pair-$c-$ROLE.out" 2>/dev/null

	# --- ulp
	if [ "$mine" = 1 ]; then
		params_default || RESET_WHY="$RESET_WHY after $c: cannot write a default;"
		now=$(param_show)
		[ "$now" = "$DEFAULTS_SHOWN" ] || RESET_WHY="$RESET_WHY after $c: $now;"
	fi
	why=$(ulp_check "$f" "$rc" "$exp" "$not" "$want")
	[ -z "$pset_why" ] || why="$why $pset_why"
	echo "# $id: mpa_conn $args: exit $rc after ${secs}s, $tries attempt(s)${refusals:+ (last refusal: $refusals)}"
	grep -v -E 'event=(ADDR|ROUTE)_RESOLVED' "$f" | head -n 30 | sed 's/^/#   /'
	[ -z "$why" ] || echo "# $id: $why"
	if [ "$mine" = 1 ]; then
		dmesg 2>/dev/null | tail -n +$((kmsg_lines + 1)) | grep -iE 'siw|mpa|iw_cm|rdma' |
			head -n 12 | sed 's/^/# kernel: /'
	fi
	if [ -z "$why" ]; then tap 1 "$id.ulp"; else tap 0 "$id.ulp"; fi
	[ "$mine" = 1 ] || continue

	# --- res and wire (siwx side)
	qpn=-
	[ -s "$f.qpn" ] && qpn=$(cat "$f.qpn")
	resf=-
	[ -s "$f.res.json" ] && resf=$f.res.json
	# shellcheck disable=SC2206  # lists of expectations
	exps=($WIRE $RES)
	dec=$WORK/$c.wire
	if [ -z "$PY" ]; then
		printf '# wire: python3 missing\nRESULT wire fail\nRESULT res fail\n' > "$dec"
	else
		# the capture may trail the connection a little: once more
		# after a pause when something does not match
		sleep 0.5
		for _ in 1 2; do
			"$PY" "$HERE/mpa_pair_wire.py" "$CAP" "$port" "$resf" "$qpn" "${exps[@]}" > "$dec" 2>&1 &&
				break
			grep -q '^RESULT wire ok' "$dec" && break	# a res mismatch stays
			sleep 2
		done
	fi
	cp "$dec" "$OUT/mpa_pair-$c.wire" 2>/dev/null
	if [ "$resf" != - ]; then
		cp "$resf" "$OUT/mpa_pair-$c.res.json" 2>/dev/null
		cp "$resf.nl" "$OUT/mpa_pair-$c.res.nl.json" 2>/dev/null
	fi
	if [ -n "$RES" ]; then
		grep '^# res: ' "$dec"
		if [ "$resf" = - ]; then
			echo "# res: no snapshot: mpa_conn printed no QP number while running"
		else
			[ -s "$f.res.txt" ] && sed 's/^/# res: rdma: /' "$f.res.txt" | head -n 8
		fi
		if grep -q '^RESULT res ok' "$dec"; then tap 1 "$id.res"; else tap 0 "$id.res"; fi
	fi
	grep '^# wire: ' "$dec"
	grep -v -E '^# (wire|res): |^RESULT ' "$dec" | head -n 10 | sed 's/^/# decoder: /'
	if grep -q '^RESULT wire ok' "$dec"; then tap 1 "$id.wire"; else tap 0 "$id.wire"; fi
done

if [ "$ROLE" = "$SIWX_ROLE_IS" ]; then
	if [ -n "$TCPDUMP_PID" ]; then
		kill -INT "$TCPDUMP_PID" 2>/dev/null
		for _ in $(seq 100); do kill -0 "$TCPDUMP_PID" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$TCPDUMP_PID" 2>/dev/null
		wait "$TCPDUMP_PID" 2>/dev/null
		TCPDUMP_PID=
		grep -E 'captured|dropped' "$WORK/tcpdump.log" | sed 's/^/# tcpdump: /'
		cp "$CAP" "$OUT/mpa_pair.pcap" 2>/dev/null && echo "# capture: $OUT/mpa_pair.pcap"
	fi
	echo "# siwx parameters at the end: $(param_show)"
	[ -z "$RESET_WHY" ] || echo "# params_reset: defaults are '$DEFAULTS_SHOWN';$RESET_WHY"
	if [ -z "$RESET_WHY" ]; then tap 1 "params_reset"; else tap 0 "params_reset"; fi
fi
[ "$FAILS" = 0 ]
