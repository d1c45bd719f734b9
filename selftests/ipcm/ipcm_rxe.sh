#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# suite ipcm_rxe: the IBTA RDMA IP CM Service annex where it lives, rdma_cm
# over RoCE (rxe), in the single VM:
#
# 1. Rejects. tools/ipcm/cm-inject.py, in a network namespace of its own,
#    sends hand-built CM REQs (RoCEv2: IP, UDP, BTH, DETH, MAD, ICRC) of
#    the annex's SID range to an rdma_cm listener (ipcm_conn) on an rxe
#    device, IPv4 and IPv6: well formed, and each malformation the annex
#    has an ARI code for. First under Debian's rdma_cm (every malformed
#    REQ gets a reason-28 REJ with no information at all: the finding),
#    then under build/rdma_cm/rdma_cm.ko (patches/linux-cma): the annex's
#    format, layer 0x00 and the ARI code in the REJ's Additional
#    Rejection Information. Well-formed REQs reach the application (it
#    rejects them itself, "ulp-reject") under both. siwx-ipcm decodes the
#    capture of each run; its REJ list must be what the injector saw, and
#    tshark's own annex decoder must read every REQ and REJ the same way.
# 2. One program, two transports: ipcm_conn's client and server connect
#    over rxe and over siwx (two veth pairs of their own, policy routing as
#    in lib/ulp.sh), under the patched rdma_cm; the server sees the
#    client's address and port as the client sees its own on both; on
#    RoCE, siwx-ipcm finds the same 5-tuple in the REQ's annex header.
# Debian's rdma_cm is back when the suite ends.
#
# Usage (guest.sh): ipcm_rxe.sh BUILD_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
BUILD=${1:-$TOP/build}
BIN=${SIWX_BIN:-$BUILD/selftests/bin}
CONN=$BIN/ipcm_conn
INJECT=$TOP/tools/ipcm/cm-inject.py
IPCM=$BUILD/tools/ipcm/siwx-ipcm
RDMA_CM_KO=$BUILD/rdma_cm/rdma_cm.ko
OUT=${SIWX_RESULTS:-/tmp}/ipcm_rxe
mkdir -p "$OUT"
LOG=$OUT/ipcm_rxe.log
: >"$LOG"
# ipcm_conn waits 20 s for each event; its servers start before the
# capture and the v4 injections, which took longer than that on the debug
# kernel (every case of the v6 server, and of both in the second half, then
# met no listener: REJ reason 8, invalid service ID). Scaled like the suite's
# own limit (SIWX_SUITE_TIMEOUT_SCALE, 6 on the debug kernel).
export IPCM_TIMEOUT_MS=${IPCM_TIMEOUT_MS:-$((20000 * ${SIWX_SUITE_TIMEOUT_SCALE:-1}))}
TAP_PREFIX=ipcm_rxe
# shellcheck source=../lib/tap_out.sh
. "$TOP/selftests/lib/tap_out.sh"
# shellcheck source=../lib/capture.sh
. "$TOP/selftests/lib/capture.sh"
# shellcheck source=../lib/ulp.sh
. "$TOP/selftests/lib/ulp.sh"	# routed_pair_up, routed_pair_down
# shellcheck source=../lib/neigh.sh
. "$TOP/selftests/lib/neigh.sh"	# neigh_warm
# shellcheck source=../lib/cm_swap.sh
. "$TOP/selftests/lib/cm_swap.sh"	# swap_cm

NS=ipcmx
X0=192.168.94.1 X1=192.168.94.2 X60=fd94::1 X61=fd94::2
PORT4=7174 PORT6=7176
CASES="good unknown_dst major_version minor_version ip_version ip_version_0 src_format dst_format src_mapped"
CASES6="good unknown_dst major_version minor_version ip_version"

# what each case must get: the REJ line of cm-inject.py (after "case X: ")
declare -A WANT_STOCK WANT_OURS
ulp="REJ reason=28 ari_len=0 ari=- pd=ulp-reject"
bare="REJ reason=28 ari_len=0 ari=- pd=-"
for c in $CASES; do WANT_STOCK[$c]=$bare; done
# Debian's rdma_cm reads IPv4 addresses from the last 4 bytes only: what
# it cannot tell from a good REQ goes to the application
for c in good src_format dst_format src_mapped; do WANT_STOCK[$c]=$ulp; done
# under the patched one, the annex's format: layer, ARI code, suggested
# value length, reserved, value; every number from include/siwx/ipcm.h
eval "$(python3 - "$TOP" <<'EOF'
import sys
sys.path.insert(0, sys.argv[1] + "/selftests/lib")
import siwx_wire
v = siwx_wire.parse(sys.argv[1] + "/include/siwx/ipcm.h")
for k, x in v.items():
    if k.startswith(("SIWX_IPCM_ARI_", "SIWX_IPCM_LAYER_",
                     "SIWX_IPCM_MAJOR", "SIWX_IPCM_MINOR",
                     "SIWX_IPCM_REJ_HDR", "SIWX_CM_REJ_REASON",
                     "SIWX_CM_REJ_PD_SIZE")):
        print("%s=%d" % (k, x))
EOF
)"
ari() {	# CODE [VALUE-BYTE]: the REJ line of an IP CM service reject
	local v=${2:+$(printf %02x "$2")}
	printf 'REJ reason=%d ari_len=%d ari=%02x%02x%02x00%s pd=-' \
		"$SIWX_CM_REJ_REASON_CONSUMER" \
		$((SIWX_IPCM_REJ_HDR_SIZE + ${#v} / 2)) "$SIWX_IPCM_LAYER_IPCM" \
		"$1" $((${#v} / 2)) "$v"
}
ulp1=$(printf 'REJ reason=%d ari_len=1 ari=%02x pd=ulp-reject' \
	"$SIWX_CM_REJ_REASON_CONSUMER" "$SIWX_IPCM_LAYER_ULP")
WANT_OURS=(
	[good]=$ulp1 [src_mapped]=$ulp1
	[unknown_dst]=$(ari "$SIWX_IPCM_ARI_UNKNOWN_ADDR")
	[major_version]=$(ari "$SIWX_IPCM_ARI_MAJOR_VERSION" "$SIWX_IPCM_MAJOR_VERSION")
	[minor_version]=$(ari "$SIWX_IPCM_ARI_MINOR_VERSION" "$SIWX_IPCM_MINOR_VERSION")
	[ip_version]=$(ari "$SIWX_IPCM_ARI_IP_VERSION")
	[ip_version_0]=$(ari "$SIWX_IPCM_ARI_IP_VERSION")
	[src_format]=$(ari "$SIWX_IPCM_ARI_SRC_ADDR")
	[dst_format]=$(ari "$SIWX_IPCM_ARI_DST_ADDR")
)

TESTS=(setup)
for m in stock ours; do
	[ "$m" = stock ] || TESTS+=(ours.loaded)
	for c in $CASES; do TESTS+=("$m.v4.$c"); done
	for c in $CASES6; do TESTS+=("$m.v6.$c"); done
	TESTS+=("$m.app_requests" "$m.capture_rejects" "$m.capture_deviations"
		"$m.tshark_agrees")
done
conn_tests() {	# TYPE V: the tests of one conn
	echo "conn.$1.v$2.connected conn.$1.v$2.same_5tuple"
	if [ "$1" = rxe ]; then
		echo "conn.$1.v$2.annex_header conn.$1.v$2.tshark_agrees" \
			"conn.$1.v$2.reject_ari_ulp conn.$1.v$2.reject_ari_unknown_addr"
	else
		echo "conn.$1.v$2.reject_no_ari"
	fi
}
for t in rxe siw; do
	for v in 4 6; do
		# shellcheck disable=SC2207  # names without blanks
		TESTS+=($(conn_tests $t $v))
	done
done
TESTS+=(stock_restored)
echo "1..${#TESTS[@]}"

# ---------------------------------------------------------------- setup
SRV_PID=
cleanup() {
	[ -z "$SRV_PID" ] || kill "$SRV_PID" 2>/dev/null
	[ -z "${CAP_PID:-}" ] || kill "$CAP_PID" 2>/dev/null
	rdma link delete rxi0 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	pair_down 2>/dev/null
}
trap cleanup EXIT

setup() {
	modprobe rdma_rxe || return 1
	ip netns add "$NS" || return 1
	ip -batch - <<-EOF || return 1
	link add xi0 type veth peer name xi1 netns $NS
	addr add $X0/24 dev xi0
	addr add $X60/64 dev xi0 nodad
	link set xi0 up
	EOF
	ip -n "$NS" -batch - <<-EOF || return 1
	addr add $X1/24 dev xi1
	addr add $X61/64 dev xi1 nodad
	link set xi1 up
	link set lo up
	EOF
	rdma link add rxi0 type rxe netdev xi0 || return 1
	carrier xi0 && carrier xi1 "$NS" || return 1
	rdma link show >>"$LOG"
}

# swap_rdma_cm KO|stock: rdma_cm (and rdma_ucm above it) reloaded
swap_rdma_cm() { swap_cm rdma_cm "$1"; }

# ---------------------------------------------------------------- rejects
# listening MODULE SRV: wait up to 60 s for server SRV's "listening" (under
# load the first listen of a boot took longer than the 10 s this waited
# once)
listening() {
	local n
	for n in $(seq 600); do
		grep -q listening "$OUT/$1.$2" && return 0
		sleep 0.1
	done
	say "$1: server $2 is not listening after 60 s (see $1.$2)"
}

# run_injects MODULE: server on X0 and X60, capture, every case both ways
run_injects() {
	local m=$1 c line got want
	local -n want_of=WANT_${m^^}
	# Each server starts right before its own cases: a server gives up
	# when no request came for IPCM_TIMEOUT_MS, and the v6 one, started
	# with the v4 one, waited through all the v4 cases first (under load
	# longer than that: it was gone, and every v6 case met no listener,
	# REJ reason 8, in one make check)
	"$CONN" server "$X0" "$PORT4" 100 reject >"$OUT/$m.srv4" 2>&1 &
	SRV_PID=$!
	listening "$m" srv4
	CAP_IFACE=xi0 cap_start "$m" "udp port 4791" -P ||
		say "capture did not start (see $CAP_LOG)"
	# shellcheck disable=SC2086  # case lists
	ip netns exec "$NS" python3 "$INJECT" --port "$PORT4" "$X0" $CASES \
		>"$OUT/$m.inject4" 2>&1
	"$CONN" server "$X60" "$PORT6" 100 reject >"$OUT/$m.srv6" 2>&1 &
	local srv6=$!
	listening "$m" srv6
	# shellcheck disable=SC2086
	ip netns exec "$NS" python3 "$INJECT" --port "$PORT6" "$X60" $CASES6 \
		>"$OUT/$m.inject6" 2>&1
	cap_stop "$OUT/$m.pcap"
	kill "$SRV_PID" "$srv6" 2>/dev/null
	wait "$SRV_PID" "$srv6" 2>/dev/null
	SRV_PID=
	cat "$OUT/$m.inject4" "$OUT/$m.inject6" "$OUT/$m.srv4" "$OUT/$m.srv6" >>"$LOG"
	for v in 4 6; do
		local list=$CASES
		[ $v = 4 ] || list=$CASES6
		for c in $list; do
			line=$(grep "^case $c: " "$OUT/$m.inject$v")
			got=${line#case "$c": }
			want=${want_of[$c]}
			if [ "$got" = "$want" ]; then
				ok "$m.v$v.$c"
			else
				nok "$m.v$v.$c" "got '${got:-no line}', want '$want'"
			fi
		done
	done
	# the application saw exactly the requests that reach it
	local wantreq=0 gotreq
	for c in $CASES $CASES6; do
		case ${want_of[$c]} in *pd=ulp-reject) wantreq=$((wantreq + 1)) ;; esac
	done
	gotreq=$(cat "$OUT/$m.srv4" "$OUT/$m.srv6" | grep -c '^request ')
	if [ "$gotreq" = "$wantreq" ]; then
		ok "$m.app_requests"
	else
		nok "$m.app_requests" "the listeners saw $gotreq requests, want $wantreq"
	fi
	check_capture "$m"
}

# check_capture MODULE: siwx-ipcm's view of the capture against the
# injector's: the same REJs (reason, ARI bytes), and a deviation for each
# malformed REQ (and, under Debian's rdma_cm, for its bare rejects)
check_capture() {
	local m=$1 rc
	"$IPCM" --json "$OUT/$m.pcap" >"$OUT/$m.json" 2>"$OUT/$m.json.err"
	rc=$?
	"$IPCM" "$OUT/$m.pcap" >"$OUT/$m.ipcm.txt" 2>&1
	cat "$OUT/$m.ipcm.txt" >>"$LOG"
	check "$m.capture_rejects" python3 "$HERE/ipcm_rxe_check.py" rejects \
		"$OUT/$m.json" "$OUT/$m.inject4" "$OUT/$m.inject6"
	if [ "$rc" = 1 ]; then
		check "$m.capture_deviations" python3 "$HERE/ipcm_rxe_check.py" \
			deviations "$m" "$OUT/$m.json"
	else
		nok "$m.capture_deviations" "siwx-ipcm exit $rc, want 1 (deviations)"
	fi
	check "$m.tshark_agrees" python3 "$HERE/ipcm_rxe_check.py" tshark \
		"$OUT/$m.json" "$OUT/$m.pcap"
}

# ---------------------------------------------------------------- 5-tuple
# pair_up TYPE: vp0 $PA (device ${TYPE}p0) and vp1 $PB (${TYPE}p1), the
# traffic between them over the pair (lib/ulp.sh's policy routing)
PA=192.168.95.1 PB=192.168.95.2 PA6=fd95::1 PB6=fd95::2
PA2=192.168.95.3 PA26=fd95::3	# vp0's second address: no listener there
pair_up() {
	routed_pair_up vp0 vp1 "$PA" "$PB" "$PA6" "$PB6" || return 1
	ip addr add "$PA2/24" dev vp0 && ip addr add "$PA26/64" dev vp0 nodad ||
		return 1
	rdma link add "${1}p0" type "$1" netdev vp0 || return 1
	rdma link add "${1}p1" type "$1" netdev vp1 || return 1
	ip route get "$PA" from "$PB" | grep -q 'dev vp1' || return 1
	carrier vp0 && carrier vp1 || return 1
	neigh_warm "$PA" vp1 && neigh_warm "$PA6" vp1
}
pair_down() {
	local d
	for d in rxep1 rxep0 siwp1 siwp0; do rdma link delete $d 2>/dev/null; done
	routed_pair_down vp0
}
# carrier DEV [NETNS]: wait (10 s at most) until DEV is up with carrier. A
# veth's carrier follows "link set up" late under TCG; an ARP request sent
# before is lost, and rdma_cm's address resolution then waits out its
# whole timeout (the neighbour's later failure wakes nobody)
carrier() {
	local i st
	for i in $(seq 100); do
		st=$(ip ${2:+-n "$2"} -o link show "$1" 2>/dev/null)
		case $st in *"state UP"*) return 0 ;; esac
		sleep 0.1
	done
	echo "== $1 has no carrier: $st"
	return 1
}
# conn TYPE V: ipcm_conn over the devices of TYPE on IPv4 or IPv6 (the
# pair is up); the 5-tuple both ends saw
conn() {
	local t=$1 v=$2 port=$((7180 + $2)) a=$PA b=$PB cli srv cl cp sp sl
	local name=conn.$t.v$v
	[ "$v" = 4 ] || a=$PA6 b=$PB6
	[ "$t" != rxe ] || CAP_IFACE=vp1 cap_start "$name" "udp port 4791" -P ||
		say "capture did not start (see $CAP_LOG)"
	"$CONN" server "$a" "$port" 1 accept >"$OUT/$name.srv" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 100); do grep -q listening "$OUT/$name.srv" && break; sleep 0.1; done
	"$CONN" client "$a" "$port" "$b" >"$OUT/$name.cli" 2>&1
	wait "$SRV_PID"
	SRV_PID=
	[ "$t" != rxe ] || cap_stop "$OUT/$name.pcap"
	cat "$OUT/$name.cli" "$OUT/$name.srv" >>"$LOG"
	cli=$(sed -n 's/^connected local=\([^ ]*\) peer=\([^ ]*\) device=\(.*\)/\1 \2 \3/p' "$OUT/$name.cli")
	srv=$(sed -n 's/^request peer=\([^ ]*\) local=\([^ ]*\) .*/\1 \2/p' "$OUT/$name.srv")
	if [ -n "$cli" ] && [ "${cli##* }" = "${t}p1" ] && grep -q '^established' "$OUT/$name.srv"; then
		ok "$name.connected"
	else
		nok "$name.connected" "client: '$(tail -n 1 "$OUT/$name.cli")' (device ${cli##* }, want ${t}p1)"
	fi
	# the server's peer is the client's local end, its local the client's peer
	read -r cl cp _ <<<"$cli"
	read -r sp sl <<<"$srv"
	if [ -n "$cl" ] && [ "$cl" = "$sp" ] && [ "$cp" = "$sl" ] &&
	   [ "${cp%:*}" = "$(br "$a")" ] && [ "${cl%:*}" = "$(br "$b")" ] &&
	   [ "${sl##*:}" = "$port" ]; then
		ok "$name.same_5tuple"
		echo "$cl $cp" >"$OUT/$name.tuple"
	else
		nok "$name.same_5tuple" "client local=$cl peer=$cp, server peer=$sp local=$sl"
	fi
	if [ "$t" = rxe ]; then
		if [ -s "$OUT/$name.tuple" ]; then
			"$IPCM" --json "$OUT/$name.pcap" >"$OUT/$name.json" 2>&1
			check "$name.annex_header" python3 "$HERE/ipcm_rxe_check.py" \
				header "$OUT/$name.json" "$(cat "$OUT/$name.tuple")"
			check "$name.tshark_agrees" python3 "$HERE/ipcm_rxe_check.py" \
				tshark "$OUT/$name.json" "$OUT/$name.pcap"
		else
			nok "$name.annex_header" "no connection over rxe"
			nok "$name.tshark_agrees" "no connection over rxe"
		fi
		if [ "$v" = 4 ]; then reject_ari "$name" "$a" "$b" "$PA2" "$port"
		else reject_ari "$name" "$a" "$b" "$PA26" "$port"; fi
	else
		reject_no_ari "$name" "$a" "$b" "$port"
	fi
}
# reject_no_ari NAME A B PORT: over iWARP an application's reject is an
# MPA Reply with the Reject bit: a negative errno as status (siw:
# -ECONNRESET), its private data, and rdma_consumer_reject_ari() must
# find no ARI (ENODATA)
reject_no_ari() {
	local name=$1 a=$2 b=$3 port=$(($4 + 10)) got
	"$CONN" server "$a" "$port" 1 reject >"$OUT/$name.rsrv" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 100); do grep -q listening "$OUT/$name.rsrv" && break; sleep 0.1; done
	"$CONN" client "$a" "$port" "$b" >"$OUT/$name.rcli" 2>&1
	wait "$SRV_PID"
	SRV_PID=
	got=$(grep '^rejected' "$OUT/$name.rcli")
	if [[ $got =~ ^rejected\ status=-[0-9]+\ pdata_len=[0-9]+\ pdata=ulp-reject\ ari=-$ ]]; then
		ok "$name.reject_no_ari"
	else
		nok "$name.reject_no_ari" "client: '$(tail -n 1 "$OUT/$name.rcli")', want 'rejected status=-ERRNO pdata_len=N pdata=ulp-reject ari=-'"
	fi
	cat "$OUT/$name.rcli" >>"$LOG"
}
# reject_ari NAME A B A2 PORT: the rejected client reads the reject's
# Additional Rejection Information (patch 0003: behind the REJ's private
# data): the application's reject (layer 0x01), and rdma_cm's own for a
# request to A while the only listener on the port is bound to A2
reject_ari() {
	local name=$1 a=$2 b=$3 a2=$4 port=$(($5 + 10)) got want
	"$CONN" server "$a" "$port" 1 reject >"$OUT/$name.rsrv" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 100); do grep -q listening "$OUT/$name.rsrv" && break; sleep 0.1; done
	"$CONN" client "$a" "$port" "$b" >"$OUT/$name.rcli" 2>&1
	wait "$SRV_PID"
	got=$(grep '^rejected' "$OUT/$name.rcli")
	want=$(printf 'rejected status=%d pdata_len=%d pdata=ulp-reject ari=%02x' \
		"$SIWX_CM_REJ_REASON_CONSUMER" $((SIWX_CM_REJ_PD_SIZE + 1)) \
		"$SIWX_IPCM_LAYER_ULP")
	if [ "$got" = "$want" ]; then ok "$name.reject_ari_ulp"
	else nok "$name.reject_ari_ulp" "client: '$(tail -n 1 "$OUT/$name.rcli")', want '$want'"; fi
	port=$((port + 1))
	"$CONN" server "$a2" "$port" 1 accept >"$OUT/$name.usrv" 2>&1 &
	SRV_PID=$!
	for _ in $(seq 100); do grep -q listening "$OUT/$name.usrv" && break; sleep 0.1; done
	"$CONN" client "$a" "$port" "$b" >"$OUT/$name.ucli" 2>&1
	kill "$SRV_PID" 2>/dev/null
	wait "$SRV_PID" 2>/dev/null
	SRV_PID=
	got=$(grep '^rejected' "$OUT/$name.ucli")
	want=$(printf 'rejected status=%d pdata_len=%d pdata=- ari=%02x%02x0000' \
		"$SIWX_CM_REJ_REASON_CONSUMER" \
		$((SIWX_CM_REJ_PD_SIZE + SIWX_IPCM_REJ_HDR_SIZE)) \
		"$SIWX_IPCM_LAYER_IPCM" "$SIWX_IPCM_ARI_UNKNOWN_ADDR")
	if [ "$got" = "$want" ]; then ok "$name.reject_ari_unknown_addr"
	else nok "$name.reject_ari_unknown_addr" "client: '$(tail -n 1 "$OUT/$name.ucli")', want '$want'"; fi
	cat "$OUT/$name.rcli" "$OUT/$name.ucli" >>"$LOG"
}
br() { case $1 in *:*) echo "[$1]" ;; *) echo "$1" ;; esac; }

# ---------------------------------------------------------------- main
if check setup setup; then :; else skip_rest "setup failed"; fi
run_injects stock
if check ours.loaded swap_rdma_cm "$RDMA_CM_KO"; then
	run_injects ours
	for t in rxe siw; do
		if pair_up "$t" >>"$LOG" 2>&1; then
			conn "$t" 4
			conn "$t" 6
		else
			for x in $(conn_tests "$t" 4) $(conn_tests "$t" 6); do
				nok "$x" "pair_up $t failed (see $LOG)"
			done
		fi
		pair_down
	done
else
	skip_rest "the patched rdma_cm did not load"
fi
check stock_restored swap_rdma_cm stock
exit $((fails > 0))
