#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# profile.sh: where the time of siwx's RFC 7306 paths goes, in one QEMU/TCG
# guest (Documentation/performance.md, "Profiling the atomic and immediate
# paths").
#
#   tools/bench/profile.sh [--reps N] [--iters N] [--out DIR] [--no-perf]
#                          [--only EXP,EXP...]
#
# In one boot (tools/vm/run --netns, build/siwx/siw.ko, our rdma-core):
#  1. measurement, N repetitions (default 3), the experiments taking turns
#     (A B C ... then ... C B A): an 8-byte RDMA Read against a FetchAdd
#     (ib_read_lat/ib_atomic_lat, ib_read_bw/ib_atomic_bw) and RDMA Write
#     with Immediate against RDMA Write and Write + Send (imm_bench, latency
#     at 8 B and streaming at 64 B, one mode per run), and 64 KiB RDMA Write,
#     Read and Send streams (ib_write_bw, ib_read_bw, ib_send_bw: N messages,
#     the data path of large transfers), no profiler running.
#     Per run: the tool's figure and the TCP segments each side sent
#     (/proc/net/snmp of each network namespace).
#  2. profile: every experiment once more under `perf record -a -g -e
#     cpu-clock -F 1999` (system wide: both ends, kernel threads, softirqs)
#     with three times the operations; `perf report` flat (per process and
#     symbol, with sample counts) and inclusive (children) profiles are
#     saved.
# Then summarises (tools/bench/profile-summary.py) into DIR/summary.md.
# Output (DIR, default build/profile): runs.csv, summary.md, perf/*.txt,
# logs/.  perf.data files stay in the guest (tmpfs).
#
# Needs make modules rdma-core, perftest, perf (Debian linux-perf).

set -uo pipefail
TOP=$(cd "$(dirname "$0")/../.." && pwd)

if [ "${1:-}" = --guest ]; then
	shift
	REPS=$1 ITERS=$2 PERF=$3 ONLY=${4:-}
	OUT=$SIWX_RESULTS/profile
	mkdir -p "$OUT/logs" "$OUT/perf"
	export LD_LIBRARY_PATH=$TOP/build/rdma-core/prefix/lib
	IMM=$TOP/build/bench/imm_bench
	NS1=${SIWX_NETNS1:?run with --netns}
	A0=192.168.77.1
	renice -n 19 -p $$ > /dev/null
	echo 0 > /proc/sys/kernel/kptr_restrict
	echo -1 > /proc/sys/kernel/perf_event_paranoid
	echo 0 > /proc/sys/debug/exception-trace 2>/dev/null
	{
		echo "kernel: $(uname -r)"
		echo "clocksource: $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
		echo "siw: $(cat /sys/module/siw/version 2>/dev/null)"
		echo "perf: $(perf --version 2>&1)"
		"$TOP/build/rdma-core/prefix/bin/ibv_devinfo" -v -d siw0 | grep -E 'atomic_cap|max_qp_rd_atom|fw_ver'
	} > "$OUT/guest.txt" 2>&1
	cat "$OUT/guest.txt"
	# exps N: the experiments with N latency round trips, 2N messages for rates
	exps() {
	local ITERS=$1 BW_N=$(($1 * 2))
	# name|kind|operations|server args|client args
	EXPS=(
		"read_lat|lat|$ITERS|ib_read_lat -R -F -d siw0 -s 8 -n $ITERS|ib_read_lat -R -F -d siw1 -s 8 -n $ITERS"
		"fadd_lat|lat|$ITERS|ib_atomic_lat -R -F -d siw0 -A FETCH_AND_ADD -n $ITERS|ib_atomic_lat -R -F -d siw1 -A FETCH_AND_ADD -n $ITERS"
		"read_bw|bw|$BW_N|ib_read_bw -R -F -d siw0 -s 8 -n $BW_N|ib_read_bw -R -F -d siw1 -s 8 -n $BW_N"
		"fadd_bw|bw|$BW_N|ib_atomic_bw -R -F -d siw0 -A FETCH_AND_ADD -n $BW_N|ib_atomic_bw -R -F -d siw1 -A FETCH_AND_ADD -n $BW_N"
		"wpoll_lat|imm|$ITERS|$IMM -s|$IMM -x write -l 8 -b '' -n $ITERS -r 1"
		"wimm_lat|imm|$ITERS|$IMM -s|$IMM -x imm -l 8 -b '' -n $ITERS -r 1"
		"wsend_lat|imm|$ITERS|$IMM -s|$IMM -x send -l 8 -b '' -n $ITERS -r 1"
		"wplain_bw|imm|$BW_N|$IMM -s|$IMM -x write -l '' -b 64 -m $BW_N -M $BW_N -r 1"
		"wimm_bw|imm|$BW_N|$IMM -s|$IMM -x imm -l '' -b 64 -m $BW_N -M $BW_N -r 1"
		"wsend_bw|imm|$BW_N|$IMM -s|$IMM -x send -l '' -b 64 -m $BW_N -M $BW_N -r 1"
		"write64k_bw|bw|$ITERS|ib_write_bw -R -F -d siw0 -s 65536 -n $ITERS|ib_write_bw -R -F -d siw1 -s 65536 -n $ITERS"
		"read64k_bw|bw|$ITERS|ib_read_bw -R -F -d siw0 -s 65536 -n $ITERS|ib_read_bw -R -F -d siw1 -s 65536 -n $ITERS"
		"send64k_bw|bw|$ITERS|ib_send_bw -R -F -d siw0 -s 65536 -n $ITERS|ib_send_bw -R -F -d siw1 -s 65536 -n $ITERS"
	)
	local e keep=()
	[ -n "$ONLY" ] || return 0
	for e in "${EXPS[@]}"; do
		[[ ",$ONLY," == *",${e%%|*},"* ]] && keep+=("$e")
	done
	EXPS=("${keep[@]}")
	}
	segs() { # segs [NS]: TCP OutSegs of this namespace (or NS)
		local f=/proc/net/snmp
		if [ -n "${1:-}" ]; then
			ip netns exec "$1" awk '/^Tcp:/ { if (h) print $12; h = 1 }' $f
		else
			awk '/^Tcp:/ { if (h) print $12; h = 1 }' $f
		fi
	}
	SEQ=0
	echo "phase,rep,exp,value,unit,min,ops,client_segs,server_segs,secs,note" > "$OUT/runs.csv"
	# run PHASE REP EXP: one run, perf record around the client in phase 2
	run() {
		local phase=$1 rep=$2 e=$3 name kind ops sargs cargs port spid s0 c0 s1 c1 t0 v unit log rc hp i mn="" 
		IFS='|' read -r name kind ops sargs cargs <<< "$e"
		SEQ=$((SEQ + 1))
		port=$((21000 + SEQ))
		log=$OUT/logs/$(printf '%03d' $SEQ)-$phase-r$rep-$name
		if [ "$kind" = imm ]; then
			eval "$sargs -a $A0 -p $port" > "$log.server.txt" 2>&1 &
		else
			eval "$sargs -p $port" > "$log.server.txt" 2>&1 &
		fi
		spid=$!
		# wait until the server listens (siw: a kernel TCP socket)
		printf -v hp ':%04X' "$port"
		for ((i = 0; i < 100; i++)); do
			grep -q "$hp 00000000:0000 0A" /proc/net/tcp && break
			sleep 0.2
		done
		s0=$(segs) c0=$(segs "$NS1")
		t0=$EPOCHREALTIME
		if [ "$kind" = imm ]; then
			cargs="$cargs -c $A0 -p $port"
		else
			cargs="$cargs -p $port $A0"
		fi
		if [ "$phase" = profile ]; then
			eval "perf record -a -g -e cpu-clock -F 1999 -o /tmp/$name.data -- \
				ip netns exec $NS1 $cargs" > "$log.client.txt" 2> "$log.perf.txt"
		else
			eval "timeout 300 ip netns exec $NS1 $cargs" > "$log.client.txt" 2>&1
		fi
		rc=$?
		t0=$(awk -v a="$t0" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.2f", b - a }')
		wait "$spid"
		s1=$(segs) c1=$(segs "$NS1")
		# the tool's figure
		v=
		case $kind in
		lat) v=$(awk 'h && $1 ~ /^[0-9]+$/ { print $5; exit } $1 == "#bytes" { h = 1 }' "$log.client.txt") unit=us_typical
		     mn=$(awk 'h && $1 ~ /^[0-9]+$/ { print $3; exit } $1 == "#bytes" { h = 1 }' "$log.client.txt") ;;
		bw) v=$(awk 'h && $1 ~ /^[0-9]+$/ { print $5 * 1e6; exit } $1 == "#bytes" { h = 1 }' "$log.client.txt") unit=msg_per_s ;;
		imm) if [[ $name == *_lat ]]; then
			v=$(awk '$1 == "result" { for (i = 2; i <= NF; i++) if ($i ~ /^lat_typical_us=/) { sub(/.*=/, "", $i); print $i } }' "$log.client.txt") unit=us_typical
			mn=$(awk '$1 == "result" { for (i = 2; i <= NF; i++) if ($i ~ /^lat_min_us=/) { sub(/.*=/, "", $i); print $i } }' "$log.client.txt")
		     else
			v=$(awk '$1 == "result" { for (i = 2; i <= NF; i++) if ($i ~ /^msg_rate_Mpps=/) { sub(/.*=/, "", $i); print $i * 1e6 } }' "$log.client.txt") unit=msg_per_s
		     fi ;;
		esac
		[ "$rc" = 0 ] || v=fail
		echo "$phase,$rep,$name,${v:-none},$unit,$mn,$ops,$((c1 - c0)),$((s1 - s0)),$t0,rc=$rc" >> "$OUT/runs.csv"
		echo "profile: $phase rep $rep $name: ${v:-none} $unit; segments client $((c1 - c0)) server $((s1 - s0)); ${t0}s"
		if [ "$phase" = profile ] && [ "$rc" = 0 ]; then
			perf report -i "/tmp/$name.data" --no-children -g none \
				-F overhead,sample,pid,dso,sym --stdio > "$OUT/perf/$name.flat.txt" 2>/dev/null
			perf report -i "/tmp/$name.data" --children --sort sym -g none \
				--percent-limit 0.5 --stdio > "$OUT/perf/$name.children.txt" 2>/dev/null
			perf report -i "/tmp/$name.data" --no-children --sort sym -g caller,0.5,callee \
				--percent-limit 2 --stdio > "$OUT/perf/$name.graph.txt" 2>/dev/null
			rm -f "/tmp/$name.data"
		fi
	}
	exps "$ITERS"
	for ((r = 1; r <= REPS; r++)); do
		if ((r % 2)); then
			for e in "${EXPS[@]}"; do run measure "$r" "$e"; done
		else
			for ((i = ${#EXPS[@]} - 1; i >= 0; i--)); do run measure "$r" "${EXPS[i]}"; done
		fi
	done
	if [ "$PERF" = 1 ]; then
		# more operations, so that process start-up weighs little
		exps $((ITERS * 3))
		for e in "${EXPS[@]}"; do run profile 1 "$e"; done
	fi
	exit 0
fi

REPS=3 ITERS=1000 OUT=$TOP/build/profile PERF=1 ONLY=
while [ $# -gt 0 ]; do
	case $1 in
	--reps) REPS=$2; shift ;;
	--iters) ITERS=$2; shift ;;
	--out) OUT=$2; shift ;;
	--no-perf) PERF=0 ;;
	--only) ONLY=$2; shift ;;
	*) echo "usage: $0 [--reps N] [--iters N] [--out DIR] [--no-perf] [--only EXP,...]" >&2; exit 2 ;;
	esac
	shift
done
RP=$TOP/build/rdma-core/prefix
mkdir -p "$TOP/build/bench" "$OUT"
# imm_bench links the selftests' connection layer, rdma_util
cc -std=gnu11 -O2 -g -Wall -Wextra -Werror -I"$RP/include" -I"$TOP/selftests/lib" \
	-o "$TOP/build/bench/imm_bench" "$TOP/tools/bench/imm_bench.c" "$TOP/selftests/lib/rdma_util.c" \
	-L"$RP/lib" -Wl,-rpath,"$RP/lib" \
	-Wl,--disable-new-dtags -lrdmacm -libverbs || exit 2
VMOUT=$OUT/vm
rm -rf "$VMOUT" "$OUT/perf" "$OUT/logs" "$OUT/runs.csv"
echo "profile: load before $(cut -d' ' -f1-3 /proc/loadavg)"
LOADS=$(mktemp)
( while :; do cut -d' ' -f1 /proc/loadavg; sleep 10; done ) > "$LOADS" 2>/dev/null &
SAMPLER=$!
T0=$(date +%s)
"$TOP/tools/vm/run" --netns --quiet --timeout 3000 --out "$VMOUT" \
	-- bash "$TOP/tools/bench/profile.sh" --guest "$REPS" "$ITERS" "$PERF" "$ONLY"
RC=$?
kill "$SAMPLER" 2>/dev/null
wait "$SAMPLER" 2>/dev/null
echo "profile: load after $(cut -d' ' -f1-3 /proc/loadavg)"
[ -s "$VMOUT/profile/runs.csv" ] || { echo "profile: no results (VM status $RC)" >&2; exit 1; }
cp -r "$VMOUT/profile/." "$OUT/"
{
	echo "date: $(date -u -d "@$T0" '+%Y-%m-%d %H:%M UTC'), $(( $(date +%s) - T0 )) s"
	echo "siwx: $(/sbin/modinfo -F version "$TOP/build/siwx/siw.ko"); libsiw $(stat -L -c %y "$TOP/build/rdma-core/prefix/lib/libibverbs/libsiw-rdmav34.so" | cut -c1-16)"
	sort -n "$LOADS" | awk '{ v[NR] = $1 } END { if (NR) printf "host load (1-min average, every 10 s): min %s, median %s, max %s\n", v[1], v[int((NR + 1) / 2)], v[NR] }'
} > "$OUT/machine.txt"
rm -f "$LOADS"
python3 "$TOP/tools/bench/profile-summary.py" "$OUT" > "$OUT/summary.md"
cat "$OUT/summary.md"
exit "$RC"
