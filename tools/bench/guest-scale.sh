#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-scale.sh MODE [REPS]: the guest side of tools/bench/scale.sh (make
# bench-scale; run by tools/vm/run --netns, build/siwx/siw.ko loaded).  MODE
# is quick or full (tools/bench/scale.conf).
#
# The devices and helpers of tools/bench/guest-lib.sh, as guest-bench.sh
# has them: siw0 on veth0 192.168.77.1 (initial netns, servers), siw1 on
# veth1 192.168.77.2 (netns $SIWX_NETNS1, clients), the two siw modules
# swapped in place; rxe0/rxe1 on vr0/vr1 (192.168.79.1/2, initial netns,
# policy routing across the veth).
#
# Per repetition and kind (order reversed every other repetition):
#   memory     scale_tool mem (QPs, MRs of 4 KiB and 1 MiB, on the server's
#              device) and scale_tool memconn (connections held open)
#   conn rate  scale_tool connserve / connect: SCALE_CONNS sequential
#              connections; the kind "tcp" is the same with plain sockets
#              on the siw addresses
#   bandwidth  ib_write_bw -R -F -D SECS -f MARGIN -q N, one process, and
#              SCALE_PROCS pairs at once with N/SCALE_PROCS QPs each
#              (distinct ports), their results summed; the spread of the
#              clients' ends is recorded (end_spread_s); a run is retried
#              as guest-bench.sh does, but not a third time after the same
#              failure twice; a sum of 0 (nothing completed in the window)
#              is a result, recorded with that note
#
# Output in $SIWX_RESULTS/scale/: samples.csv (every raw sample;
# seq,rep,kind,test,size,n,procs,metric,value,unit,wall_s,note; value a
# number or "fail" with the reason), guest.txt (environment, progress),
# logs/ (every tool's output).
# Exit status: 0 if every point was measured, 3 if some failed.

set -u
MODE=${1:?usage: guest-scale.sh quick|full [REPS]}
TOP=${SIWX_TOP:?run me with tools/vm/run}
# shellcheck source=tools/bench/scale.conf
. "$TOP/tools/bench/scale.conf"
SCALE_REPEAT=${2:-} scale_config "$MODE" || exit 2
# shellcheck source=tools/bench/guest-lib.sh
. "$TOP/tools/bench/guest-lib.sh"

guest_init bench-scale scale	# into $SIWX_RESULTS/scale, at nice 19
# rdma-core's providers say why they refuse something (e.g. libsiw's
# "prepare QP mapping failed") only at this log level
export VERBS_LOG_LEVEL=1
TOOL=${SCALE_TOOL:-$TOP/build/bench/scale_tool}
PORT=20000

echo "seq,rep,kind,test,size,n,procs,metric,value,unit,wall_s,note" > "$CSV"
# sample REP KIND TEST SIZE N PROCS METRIC VALUE UNIT [NOTE]
sample() { csv_row "$1,$2,$3,$4,$5,$6,$7,$8,$9" "${10:-}"; }
# main_metric TEST: the metric of TEST's table (a failed point's row)
main_metric() {
	case $1 in
	write_bw) echo bw_avg_MiBps ;;
	conn_rate) echo conn_per_s ;;
	mem_*) echo per_kernel_B ;;
	esac
}
# fail_point REP KIND TEST SIZE N PROCS NOTE
fail_point() {
	sample "$1" "$2" "$3" "$4" "$5" "$6" "$(main_metric "$3")" fail "" "$7"
	[ "$3" = write_bw ] && sample "$1" "$2" "$3" "$4" "$5" "$6" msg_rate_Mpps fail "" "$7"
	FAILS=$((FAILS + 1))
}

# ---------------------------------------------------------------- memory
# mem_record REP KIND LOG WHY POINTS...: record scale_tool's result lines
# of LOG for the "test size n" POINTS; a point without one fails (with its
# error line's reason, else WHY).
mem_record() {
	local rep=$1 kind=$2 log=$3 why=$4 kw t s n rest k p note=''
	case $kind in
	siwx | upstream) note="; with a spacer CQ taking the first 1 MiB of mmap keys (scale_tool -S)" ;;
	esac
	local -A r=() seen=() err=()
	shift 4
	while read -r kw t s n rest; do
		t=${t#test=} s=${s#size=} n=${n#n=}
		if [ "$t" = qp_probe ]; then
			k=${rest#created=}
			k=${k%% *}
			rest=${rest#"created=$k"}
			rest=${rest# reason=}
			sample "$rep" "$kind" qp_probe "$s" "$n" 1 qps_created "$k" count "${rest:-no failure}"
			say "$kind: $k of $n QPs created in one context${rest:+; then: $rest}"
			continue
		fi
		case $kw in
		result)
			r=()
			for k in $rest; do r[${k%%=*}]=${k#*=}; done
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_kernel_B "${r[per_kernel]:-}" B \
				"SUnreclaim+radix_tree_node+VmallocUsed+Percpu per object; d_kernel=${r[d_kernel]:-}$note"
			k=${r[cycles]:-1}
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_kernel_min_B "$(( ${r[d_kernel_min]:-0} / n ))" B \
				"the lowest of $k cycles"
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_kernel_max_B "$(( ${r[d_kernel_max]:-0} / n ))" B \
				"the highest of $k cycles"
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_sunreclaim_B "${r[per_sunreclaim]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_vmalloc_B "${r[per_vmalloc]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 per_slabinfo_active_B "${r[per_slabinfo_active]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_kernel_B "${r[d_kernel]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_excluded_B "${r[d_excluded]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_included_B "${r[d_included]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_sunreclaim_B "${r[d_sunreclaim]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_percpu_B "${r[d_percpu]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 d_slabinfo_total_B "${r[d_slabinfo_total]:-}" B
			sample "$rep" "$kind" "$t" "$s" "$n" 1 residual_kernel_B "${r[residual_kernel]:-}" B \
				"after destroying them; against before creating them"
			sample "$rep" "$kind" "$t" "$s" "$n" 1 secs_create "${r[secs_create]:-}" s
			say "$kind $t ${s}B n=$n: ${r[per_kernel]:-?} B per object (slab ${r[per_sunreclaim]:-?}, vmalloc ${r[per_vmalloc]:-?}), residual ${r[residual_kernel]:-?} B"
			seen["$t $s $n"]=1
			;;
		error)
			err["$t $s $n"]=${rest#reason=}
			;;
		esac
	done < "$log"
	for p in "$@"; do
		read -r t s n <<< "$p"
		[ -n "${seen["$p"]:-}" ] && continue
		k=${err["$p"]:-}
		[ -n "$k" ] || k=$why
		say "FAILED: $kind $t ${s}B n=$n: $k"
		fail_point "$rep" "$kind" "$t" "$s" "$n" 1 "$k"
	done
}

mem_point() {
	local rep=$1 kind=$2 f rc pts=() qp=() conn=() t s n sp=()
	kind_env "$kind"
	while read -r t s n; do
		if [ "$t" = mem_conn ]; then conn+=("$t $s $n"); else qp+=("$t $s $n"); fi
	done <<< "$(scale_mem_points)"
	SEQ=$((SEQ + 1))
	printf -v f '%s/%04d-r%d-%s-mem.txt' "$LOGS" "$SEQ" "$rep" "$kind"
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		pts=("${qp[@]}" "${conn[@]}")
		for t in "${pts[@]}"; do
			read -r t s n <<< "$t"
			fail_point "$rep" "$kind" "$t" "$s" "$n" 1 "${KIND_BROKEN[$kind]}"
		done
		return
	fi
	say "$kind: memory per QP and MR ($D0)"
	n=${SCALE_MEM_QPS// /,}
	# siw: -S, a spacer against its mmap key collision (scale_tool.c);
	# -P: how many QPs one context gets without it
	sp=()
	case $kind in siwx | upstream) sp=(-S) ;; esac
	timeout -k 5 600 "$TOOL" mem -d "$D0" -n "$n" -k qp -s "$SCALE_SQ" -r "$SCALE_RQ" \
		-C "$SCALE_MEM_CYCLES" -P "${SCALE_MEM_QPS##* }" "${sp[@]}" > "$f" 2>&1
	rc=$?
	n=${SCALE_MEM_MRS// /,}
	s=
	for t in $SCALE_MEM_MR_SIZES; do
		case $t in 4096) s+=,mr4k ;; 1048576) s+=,mr1m ;; esac
	done
	timeout -k 5 600 "$TOOL" mem -d "$D0" -n "$n" -k "${s#,}" -C "$SCALE_MEM_CYCLES" \
		"${sp[@]}" >> "$f" 2>&1
	rc=$((rc ? rc : $?))
	mem_record "$rep" "$kind" "$f" "scale_tool mem $(status_text "$rc"), no result (log $f)" "${qp[@]}"
	SEQ=$((SEQ + 1))
	printf -v f '%s/%04d-r%d-%s-memconn.txt' "$LOGS" "$SEQ" "$rep" "$kind"
	say "$kind: memory per connection ($A1 -> $A0)"
	timeout -k 5 600 "$TOOL" memconn -a "$A0" -b "$A1" -n "${SCALE_MEM_CONNS// /,}" \
		-s "$SCALE_SQ" -r "$SCALE_RQ" -C "$SCALE_MEM_CYCLES" "${sp[@]}" > "$f" 2>&1
	rc=$?
	mem_record "$rep" "$kind" "$f" "scale_tool memconn $(status_text "$rc"), no result (log $f)" "${conn[@]}"
}

# ---------------------------------------------------------------- conn rate
# conn_point REP KIND: SCALE_CONNS sequential connections (kind tcp: plain
# TCP on the siw addresses), server in the initial netns, client as the
# other tests' clients.
conn_point() {
	local rep=$1 kind=$2 f slog clog crc try note='' t=() kw rest k lim
	local -A r=()
	kind_env "$kind"
	[ "$kind" = tcp ] && t=(-t)
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		fail_point "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 "${KIND_BROKEN[$kind]}"
		return
	fi
	# at least 2 connections a second, or it is broken
	lim=$((SCALE_CONNS / 2 + 60))
	for ((try = 1; try <= 3; try++)); do
		SEQ=$((SEQ + 1))
		PORT=$((PORT + 1))
		printf -v f '%s/%04d-r%d-%s-conn_rate' "$LOGS" "$SEQ" "$rep" "$kind"
		slog=$f.server.txt clog=$f.client.txt
		if ! serve "$kind" "$PORT" "$slog" \
			"$TOOL" connserve "${t[@]}" -a "$A0" -p "$PORT" -n "$SCALE_CONNS"; then
			note="server did not listen (try $try)"
			continue
		fi
		say "$kind: $SCALE_CONNS connections ($A1 -> $A0:$PORT)"
		timeout -k 5 "$lim" "${PRE[@]}" "$TOOL" connect "${t[@]}" -c "$A0" -p "$PORT" \
			-n "$SCALE_CONNS" -b "$A1" > "$clog" 2>&1
		crc=$?
		reap "$SPID" 40
		note=
		r=()
		while read -r kw _ _ _ rest; do
			[ "$kw" = result ] || continue
			for k in $rest; do r[${k%%=*}]=${k#*=}; done
		done < "$clog"
		[ -n "${r[conn_per_s]:-}" ] && break
		note="client $(status_text "$crc"), server $(status_text "$RC"), no result (try $try)"
		say "$kind conn_rate rep $rep: $note; logs $f.*"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind conn_rate rep $rep: $note"
		fail_point "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 "$note; logs $f.*"
		return
	fi
	note="ok=${r[ok]} failed=${r[failed]} secs=${r[secs]}"
	[ "$try" -gt 1 ] && note+="; try $try"
	[ "${r[failed]}" != 0 ] && note+="; $(grep -m1 '^failures' "$clog")"
	[ "$crc" = 0 ] || note+="; client $(status_text "$crc")"
	[ "$RC" = 0 ] || note+="; server $(status_text "$RC")"
	sample "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 conn_per_s "${r[conn_per_s]}" conn/s "$note"
	sample "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 connect_median_ms "${r[connect_median_ms]}" ms "$note"
	sample "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 connect_p90_ms "${r[connect_p90_ms]}" ms "$note"
	sample "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 cycle_median_ms "${r[cycle_median_ms]}" ms "$note"
	sample "$rep" "$kind" conn_rate 0 "$SCALE_CONNS" 1 conn_failed "${r[failed]}" count "$note"
	say "$kind conn_rate: ${r[conn_per_s]} conn/s, connect ${r[connect_median_ms]} ms median, ${r[failed]} failed (rep $rep)"
}

# ---------------------------------------------------------------- bandwidth
# why LOG: the first two error lines of a perftest log in REPLY ('|'
# between them); false if there are none
why() {
	local l n=0
	REPLY=
	while read -r l; do
		case $l in
		*libsiw:* | *librxe:* | Couldn\'t* | *[Ff]ailed* | Unable* | ERRNO:*)
			REPLY+="${REPLY:+ | }$l"
			((++n == 2)) && break ;;
		esac
	done < "$1"
	[ -n "$REPLY" ]
}

# bw_point REP KIND SIZE PROCS N: PROCS ib_write_bw pairs at once, N/PROCS
# QPs each, -D SCALE_SECS; the sum of their results.
bw_point() {
	local rep=$1 kind=$2 size=$3 procs=$4 n=$5 q f try maxtry=3 i note='' lim
	local spids=() cpids=() ports=() slogs=() clogs=() ends=() line hdr w
	local bw mr bws mrs skew c0 c1 calib last=
	q=$((n / procs))
	kind_env "$kind"
	if [ -n "${KIND_BROKEN[$kind]:-}" ]; then
		SEQ=$((SEQ + 1))
		fail_point "$rep" "$kind" write_bw "$size" "$n" "$procs" "${KIND_BROKEN[$kind]}"
		return
	fi
	# connection setup of up to 64 QPs under TCG, then -D seconds
	lim=$((SCALE_SECS + 120 + 2 * q))
	for ((try = 1; try <= maxtry; try++)); do
		SEQ=$((SEQ + 1))
		printf -v f '%s/%04d-r%d-%s-write_bw-%s-q%d-p%d' "$LOGS" "$SEQ" "$rep" "$kind" "$size" "$n" "$procs"
		spids=() cpids=() ports=() slogs=() clogs=() note=
		for ((i = 0; i < procs; i++)); do
			PORT=$((PORT + 1))
			ports+=("$PORT")
			slogs+=("$f.$i.server.txt")
			clogs+=("$f.$i.client.txt")
			ib_write_bw -R -F -d "$D0" -p "$PORT" -q "$q" -s "$size" -D "$SCALE_SECS" \
				-f "$SCALE_MARGIN" > "${slogs[i]}" 2>&1 &
			spids+=($!)
		done
		for ((i = 0; i < procs; i++)); do
			wait_listen "$kind" "${ports[i]}" "${spids[i]}" && continue
			note="server $i did not listen (try $try)"
		done
		if [ -n "$note" ]; then
			for i in "${spids[@]}"; do reap "$i" 1; done
			say "$kind write_bw ${size}B q$n p$procs: $note"
			continue
		fi
		[ "$kind" = rxe ] && nap 0.5
		for ((i = 0; i < procs; i++)); do
			timeout -k 5 "$lim" "${PRE[@]}" ib_write_bw -R -F -d "$D1" -p "${ports[i]}" \
				-q "$q" -s "$size" -D "$SCALE_SECS" -f "$SCALE_MARGIN" "$A0" \
				> "${clogs[i]}" 2>&1 &
			cpids+=($!)
		done
		# every client's end (0.1 s): all run -D seconds after they
		# connected, so the spread of the ends is that of their windows
		ends=()
		while :; do
			for ((i = 0; i < procs; i++)); do
				[ -n "${ends[i]:-}" ] && continue
				kill -0 "${cpids[i]}" 2>/dev/null && continue
				elapsed
				ends[i]=${REPLY/./}
			done
			[ "${#ends[@]}" = "$procs" ] && break
			nap 0.1
		done
		calib=0
		for ((i = 0; i < procs; i++)); do
			wait "${cpids[i]}"
			w=$?
			# a failed client leaves its server waiting: no grace
			if [ "$w" = 0 ]; then reap "${spids[i]}" 20; else reap "${spids[i]}" 1; fi
			if [ "$w" != 0 ] || [ "$RC" != 0 ]; then
				note+="${note:+; }pair $i: client $(status_text "$w"), server $(status_text "$RC")"
				why "${clogs[i]}" && note+=": client: $REPLY"
			elif grep -q 'Correlation coefficient' "${clogs[i]}"; then
				calib=1
			fi
		done
		if [ -z "$note" ] && [ "$calib" = 1 ]; then
			# perftest's clock calibration failed (TCG): not the device's
			# fault, one more try (at most 6 in all), as guest-bench.sh
			note="perftest could not calibrate its clock (try $try)"
			((maxtry < 6)) && maxtry=$((maxtry + 1))
			say "$kind write_bw ${size}B q$n p$procs: $note, again"
			nap 2
			continue
		fi
		[ -z "$note" ] && break
		# the same failure twice in a row is not a fluke: no third try
		[ "$note" = "$last" ] && { note+=" (try $try, as try $((try - 1)))"; break; }
		last=$note
		note+=" (try $try)"
		say "$kind write_bw ${size}B q$n p$procs rep $rep: $note; logs $f.*"
	done
	if [ -n "$note" ]; then
		say "FAILED: $kind write_bw ${size}B q$n p$procs rep $rep: $note"
		fail_point "$rep" "$kind" write_bw "$size" "$n" "$procs" "$note; logs $f.*"
		return
	fi
	# every client's result line follows the "#bytes" header:
	# bytes iterations bw_peak bw_avg msg_rate
	bw=0 mr=0 bws='' mrs=''
	for ((i = 0; i < procs; i++)); do
		hdr=0 line=()
		while read -r -a w; do
			if [ "$hdr" = 1 ] && [[ ${w[0]:-} =~ ^[0-9]+$ ]]; then
				line=("${w[@]}")
				break
			fi
			[ "${w[0]:-}" = "#bytes" ] && hdr=1
		done < "${clogs[i]}"
		if [ ${#line[@]} -lt 5 ] || ! [[ ${line[3]} =~ ^[0-9.]+$ && ${line[4]} =~ ^[0-9.]+$ ]]; then
			note="no result line in ${clogs[i]}"
			break
		fi
		bws+="${bws:+ }${line[3]}" mrs+="${mrs:+ }${line[4]}"
	done
	if [ -z "$note" ]; then
		# sum with awk: bash has no floating point (one exec per point)
		read -r bw mr <<< "$(awk -v a="$bws" -v b="$mrs" 'BEGIN {
			n = split(a, x, " "); for (i = 1; i <= n; i++) s += x[i]
			n = split(b, y, " "); for (i = 1; i <= n; i++) t += y[i]
			printf "%.2f %.6f\n", s, t }')"
	fi
	if [ -n "$note" ]; then
		say "FAILED: $kind write_bw ${size}B q$n p$procs rep $rep: $note"
		fail_point "$rep" "$kind" write_bw "$size" "$n" "$procs" "$note"
		return
	fi
	c0=${ends[0]} c1=${ends[0]}
	for ((i = 1; i < procs; i++)); do
		((ends[i] < c0)) && c0=${ends[i]}
		((ends[i] > c1)) && c1=${ends[i]}
	done
	skew=$((c1 - c0))
	note="qps_per_proc=$q"
	((procs > 1)) && note+="; per process MiB/s: $bws; clients ended within $((skew / 10)).$((skew % 10)) s"
	# a measured 0 is a result, not a failure: no RDMA Write completed in
	# any client's window (e.g. 64 QPs x 128 outstanding 64 KiB writes)
	[[ $bw =~ ^0*\.?0*$ ]] &&
		note+="; no RDMA Write completed in the measured window (s $SCALE_MARGIN..$((SCALE_SECS - SCALE_MARGIN)))"
	[ "$try" -gt 1 ] && note+="; try $try"
	sample "$rep" "$kind" write_bw "$size" "$n" "$procs" bw_avg_MiBps "$bw" MiB/s "$note"
	sample "$rep" "$kind" write_bw "$size" "$n" "$procs" msg_rate_Mpps "$mr" Mpps "$note"
	((procs > 1)) && sample "$rep" "$kind" write_bw "$size" "$n" "$procs" end_spread_s \
		"$((skew / 10)).$((skew % 10))" s "$note"
	say "$kind write_bw ${size}B $n QPs in $procs process(es): $bw MiB/s, $mr Mpps (rep $rep)"
}

# kind_block REP KIND: every point of KIND once.
kind_block() {
	local rep=$1 kind=$2 t s p n
	case $kind in
	siwx | upstream) use_siw "$kind" ;;
	tcp) conn_point "$rep" tcp; return ;;
	esac
	mem_point "$rep" "$kind"
	conn_point "$rep" "$kind"
	while read -r t s p n; do
		bw_point "$rep" "$kind" "$s" "$p" "$n"
	done <<< "$(scale_bw_points)"
}

# ---------------------------------------------------------------- main
guest_info "$MODE" "memory: $(awk '/MemTotal/ { printf "%.0f MiB", $2 / 1024 }' /proc/meminfo)" \
	"perftest: $(dpkg-query -W -f='${Version}' perftest 2>/dev/null)"
say "mode $MODE: $SCALE_REPS repetitions, QPs $SCALE_QPS, $SCALE_PROCS processes, ib_write_bw -D $SCALE_SECS"
exception_trace_off
[ -x "$TOOL" ] || { say "missing $TOOL (built by scale.sh)"; exit 2; }
[ -r /proc/slabinfo ] || say "no /proc/slabinfo: the memory points will fail"
if ! setup_rxe >> "$LOGS/setup-rxe.txt" 2>&1; then
	KIND_BROKEN[rxe]="rxe setup failed (see logs/setup-rxe.txt)"
	say "rxe setup FAILED"
fi
say "setup done"

run_reps "$SCALE_REPS" "$SCALE_CONN_KINDS"
guest_done
