# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# cm_swap.sh - sourced by the suites that run the RDMA core's connection
# managers of build/rdma_cm/ (patches/linux-cma) instead of Debian's:
#
#   swap_cm MODULE KO|stock  MODULE (rdma_cm or iw_cm) replaced by KO, or
#                            Debian's back; what sits above it (rdma_ucm,
#                            rdma_cm) unloaded first and rdma_ucm loaded
#                            again. Nothing else may use rdma_cm then.
#                            Ours is out of tree: the kernel marks it O,
#                            Debian's not; checked both ways.
#
# Needs say (lib/tap_out.sh).

swap_cm() {
	local mod=$1 ko=$2 m taint chain=(rdma_ucm rdma_cm)
	[ "$mod" = iw_cm ] && chain+=(iw_cm)
	for m in "${chain[@]}"; do
		if [ -d "/sys/module/$m" ]; then rmmod "$m" || return 1; fi
	done
	if [ "$ko" = stock ]; then
		modprobe rdma_ucm || return 1
	else
		insmod "$ko" && modprobe rdma_ucm || return 1
	fi
	taint=$(cat "/sys/module/$mod/taint")
	say "$mod: ${ko##*/}, taint '$taint'"
	case $ko:$taint in
	stock:*O*) say "$mod still out of tree"; return 1 ;;
	stock:*) ;;
	*:*O*) ;;
	*) say "$mod not ours"; return 1 ;;
	esac
}
