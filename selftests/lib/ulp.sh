# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# ulp.sh - sourced by the kernel ULP suites (nvme, nfs): two siwx devices
# in one VM whose traffic really crosses a veth pair, the RDMA resource
# counts, module loading.
#
# Kernel ULPs open their rdma_cm ids in the initial network namespace, so
# both ends have local addresses there: vn0 $TA with siwn0 (the server),
# vn1 $HA with siwn1 (the client). Without help the kernel would route
# between them over lo and rdma_cm would put both ends on one device;
# policy routing looks up "local" only for what came in on the veth pair
# and sends what is for the other address out of it (as the bench does
# for rxe). The caller sets TA and HA (default 192.168.79.1 and .2) and
# LOG.
#
#   net_up              the pair, the rules, siwn0 and siwn1
#   net_down            all of it undone (the "local" rule back at 0)
#   rdma_res            "DEV.pd=N DEV.cq=N ..." of the devices RES_DEVS
#                       (an awk regex) matches
#   nocq LINE           that line without the CQ counts
#   load_modules M...   modprobe each (brd as a 64 MiB /dev/ram0)
#   unload_modules M... rmmod each one that is loaded

TA=${TA:-192.168.79.1}
HA=${HA:-192.168.79.2}

net_up() {
	ip -batch - <<-EOF || return 1
	link add vn0 type veth peer name vn1
	addr add $TA/24 dev vn0
	addr add $HA/24 dev vn1
	link set vn0 up
	link set vn1 up
	EOF
	local f
	for f in all vn0 vn1; do
		echo 0 >/proc/sys/net/ipv4/conf/$f/rp_filter
		echo 1 >/proc/sys/net/ipv4/conf/$f/accept_local
	done
	# Both addresses are local: look up "local" only for what came in on
	# the veth pair; what is for the other address goes out of it.
	ip -batch - <<-EOF || return 1
	rule add pref 10 iif vn0 lookup local
	rule add pref 11 iif vn1 lookup local
	route add $TA dev vn1 src $HA table 201
	route add $HA dev vn0 src $TA table 202
	rule add pref 20 to $TA lookup 201
	rule add pref 21 to $HA lookup 202
	rule add pref 100 lookup local
	rule del pref 0
	EOF
	rdma link add siwn0 type siw netdev vn0 || return 1
	rdma link add siwn1 type siw netdev vn1 || return 1
	ip route get "$TA" from "$HA" | grep -q 'dev vn1' || return 1
	{ ip rule; ip route get "$TA" from "$HA"; rdma link show; } >>"$LOG"
}
net_down() {
	rdma link delete siwn1 2>/dev/null
	rdma link delete siwn0 2>/dev/null
	ip -batch - 2>/dev/null <<-EOF
	rule add pref 0 lookup local
	rule del pref 10
	rule del pref 11
	rule del pref 20
	rule del pref 21
	rule del pref 100
	link del vn0
	EOF
}
# rdma_res: "pd cq qp cm_id mr" of the devices RES_DEVS matches
rdma_res() {
	rdma res show | awk -v re="^(${RES_DEVS}):\$" '$2 ~ re {
		for (i = 3; i < NF; i += 2) if ($i ~ /^(pd|cq|qp|cm_id|mr)$/) printf "%s.%s=%s ", $2, $i, $(i + 1)
	}'
}
# after the first controller, the RDMA core's CQ pool keeps its CQs until
# the device goes: nocq drops the CQ counts from an rdma_res line
nocq() { echo "$1" | tr ' ' '\n' | grep -v '\.cq=' | tr '\n' ' '; }

# load_modules MODULE...: brd as a 64 MiB RAM disk (/dev/ram0); with
# nvmet, configfs mounted
load_modules() {
	local m
	for m in "$@"; do
		case $m in
		brd) modprobe brd rd_nr=1 rd_size=65536 && [ -b /dev/ram0 ] || return 1 ;;
		*) modprobe "$m" || return 1 ;;
		esac
	done
	mountpoint -q /sys/kernel/config || mount -t configfs none /sys/kernel/config
	case " $* " in *" nvmet "*) [ -d "$CFS" ] ;; esac
}
unload_modules() {	# MODULE...: each one that is loaded
	local m rc=0
	for m in "$@"; do
		[ ! -d "/sys/module/$m" ] || rmmod "$m" >>"$LOG" 2>&1 || rc=1
	done
	return $rc
}
