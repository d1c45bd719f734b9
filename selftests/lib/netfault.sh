# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# shellcheck shell=bash
#
# netfault.sh - network faults on veth ends, sourced by suites nvme_faults
# and faults. A device is NAME, or NAME@NS for one in network namespace
# NS; each function takes a list of them in one word ("vn0 vn1",
# "veth0 veth1@siwx1") and acts on the egress of each.
#
#   nf_netem "DEVS" SPEC...     netem SPEC as the root qdisc ("none":
#                               removed)
#   nf_corrupt "DEVS" N|none    1 in N (1..10000) IPv4 packets of at least 256 bytes
#                               gets 4 bytes of TCP payload inverted
#                               (offset 200 of the IP packet) and a valid
#                               TCP checksum: offloads off, so that each
#                               frame is one linear TCP segment, pedit and
#                               csum actions on a clsact egress filter;
#                               only MPA's CRC can tell. Shorter packets
#                               (ACKs, small FPDUs) pass a filter before
#                               it: they hold no payload at that offset,
#                               and counting them would claim corruption
#                               that never reached an FPDU. "none": all of
#                               it undone
#   nf_corrupted "DEVS"         how many packets pedit changed (the sum)
#   nf_rounds "DEVS" MAX CMD... CMD (a round of traffic under nf_corrupt)
#                               again while it succeeded and no frame was
#                               corrupted yet, MAX rounds at most: 1 in N
#                               of a round's few thousand frames is a few
#                               on average, none now and then. CMD's last
#                               status; NF_ROUNDS the rounds run
#
# Needs sch_netem, sch_ingress (clsact), cls_u32, cls_matchall, act_gact,
# act_pedit, act_csum. ethtool's and tc's complaints go to NF_LOG
# (default /dev/null).

# nf_on DEV CMD...: CMD in DEV's namespace, with {} replaced by its name
nf_on() {
	local dev=$1 ns a args=()
	shift
	ns=${dev#*@}
	for a in "$@"; do args+=("${a//\{\}/${dev%@*}}"); done
	if [ "$ns" != "$dev" ]; then
		ip netns exec "$ns" "${args[@]}"
	else
		"${args[@]}"
	fi
}

nf_netem() {
	local d devs=$1
	shift
	for d in $devs; do
		nf_on "$d" tc qdisc del dev {} root 2>/dev/null
		[ "$1" = none ] || nf_on "$d" tc qdisc add dev {} root netem "$@" || return 1
	done
}

nf_corrupt() {
	local d devs=$1 n=$2 log=${NF_LOG:-/dev/null}
	# gact takes a probability of 1 in 1..10000
	if [ "$n" != none ] && ! { [ "$n" -ge 1 ] && [ "$n" -le 10000 ]; } 2>/dev/null; then
		echo "nf_corrupt: 1 in '$n' frames: N must be 1..10000" >>"$log"
		return 1
	fi
	for d in $devs; do
		if [ "$n" = none ]; then
			nf_on "$d" tc qdisc del dev {} clsact 2>/dev/null
			nf_on "$d" ethtool -K {} tx on sg on tso on gso on >/dev/null 2>&1
			continue
		fi
		nf_on "$d" ethtool -K {} tx off sg off tso off gso off >>"$log" 2>&1 &&
		nf_on "$d" tc qdisc add dev {} clsact &&
		nf_on "$d" tc filter add dev {} egress prio 1 protocol ip \
			u32 match u16 0 0xff00 at 2 action ok &&
		nf_on "$d" tc filter add dev {} egress prio 2 protocol ip matchall \
			action gact ok random netrand pipe "$n" \
			action pedit munge offset 200 u32 invert pipe \
			action csum tcp || return 1
	done
}

nf_corrupted() {
	local d sum=0 n
	for d in $1; do
		n=$(nf_on "$d" tc -s filter show dev {} egress | awk '/pedit/ { p = 1 } p && /Sent/ { print $4; exit }')
		sum=$((sum + ${n:-0}))
	done
	echo "$sum"
}

nf_rounds() {
	local devs=$1 max=$2 rc
	shift 2
	NF_ROUNDS=0
	while :; do
		NF_ROUNDS=$((NF_ROUNDS + 1))
		"$@"
		rc=$?
		if [ "$rc" != 0 ] || [ "$NF_ROUNDS" -ge "$max" ] ||
		   [ "$(nf_corrupted "$devs")" != 0 ]; then
			return "$rc"
		fi
	done
}
