# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# host-lib.sh - the host side of the benchmarks, sourced by
# tools/bench/bench.sh, tools/bench/ulp-bench.sh and tools/bench/scale.sh.
#
#   bench_machine TOP [GUEST_NOTE]  the host, QEMU and the modules, as
#                            machine.txt has them
#   bench_load_start FILE    sample the host's load into FILE every 10 s
#                            while the guest runs (the host is often
#                            shared: a noisy run is recognised as such)
#   bench_load_stop FILE     stop that; print the load now and the summary
#                            line of FILE
#   bench_vm NAME SUB RUN-OPTION... -- COMMAND...
#                            one VM (tools/vm/run) that runs COMMAND, the
#                            host's load sampled meanwhile: RC its exit
#                            status, SECS its duration (both in
#                            $OUT/machine.txt); then the guest's
#                            $VMOUT/SUB/samples.csv and guest.txt copied
#                            into $OUT and its logs/ linked as $OUT/logs.
#                            Without samples it says so (as NAME) and exits
#
# bench_vm uses the caller's TOP, OUT, VMOUT (tools/vm/run --out), TIMEOUT
# (--timeout), BENCH (the mode), KVER (--kver, when set) and BENCH_QUIET
# (--quiet when 1).

bench_machine() {
	echo "date: $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
	echo "host: $(. /etc/os-release && echo "$PRETTY_NAME"), $(uname -r)"
	echo "cpu: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1), $(nproc) cores"
	echo "memory: $(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)"
	echo "qemu: $(qemu-system-x86_64 --version | head -n 1), ${SIWX_VM_ACCEL:-tcg}, thread=${SIWX_VM_TCG_THREAD:-single}"
	echo "guest: 2 vCPUs, 2048 MiB (tools/vm/run defaults)${2:+; $2}"
	echo "siwx: $(/sbin/modinfo -F version "$1/build/siwx/siw.ko") sha256 $(sha256sum < "$1/build/siwx/siw.ko" | cut -c1-16)"
	echo "upstream: sha256 $(sha256sum < "$1/build/upstream/siw.ko" | cut -c1-16)"
}

bench_load_start() {
	( while :; do cut -d' ' -f1 /proc/loadavg; sleep 10; done ) > "$1" 2>/dev/null &
	BENCH_LOAD_PID=$!
}
bench_load_stop() {
	echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
	kill "$BENCH_LOAD_PID" 2>/dev/null
	wait "$BENCH_LOAD_PID" 2>/dev/null
	sort -n "$1" | awk -v cores="$(nproc)" '{ v[NR] = $1 } END { if (NR) printf "host load during the run (1-min average, every 10 s): min %s, median %s, max %s (%d samples, %d cores)\n", v[1], v[int((NR + 1) / 2)], v[NR], NR, cores }'
}

# shellcheck disable=SC2034  # RC and SECS are the caller's results
bench_vm() {
	local name=$1 sub=$2 t0 kargs=() qargs=()
	shift 2
	t0=$(date +%s)
	[ -z "${KVER:-}" ] || kargs=(--kver "$KVER")
	[ "${BENCH_QUIET:-0}" = 1 ] && qargs=(--quiet)
	bench_load_start "$OUT/hostload.txt"
	"$TOP/tools/vm/run" "${qargs[@]}" "${kargs[@]}" --timeout "$TIMEOUT" --out "$VMOUT" "$@"
	RC=$?
	SECS=$(( $(date +%s) - t0 ))
	{
		bench_load_stop "$OUT/hostload.txt"
		echo "duration: ${SECS}s (boot to power-off, mode $BENCH)"
	} >>"$OUT/machine.txt"
	if [ ! -s "$VMOUT/$sub/samples.csv" ]; then
		echo "$name: no samples (VM exit status $RC); console: $VMOUT/console.log" >&2
		exit "$(( RC ? RC : 1 ))"
	fi
	cp "$VMOUT/$sub/samples.csv" "$VMOUT/$sub/guest.txt" "$OUT/"
	ln -sfn "$VMOUT/$sub/logs" "$OUT/logs"
}
