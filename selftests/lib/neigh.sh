# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
#
# neigh.sh - sourced by suites whose connections start with the RDMA CM's
# address resolution (ipcm_rxe, ipcm_pair).
#
# neigh_warm ADDR DEV [TRIES]: ADDR's neighbour entry on DEV resolved
# before rdma_cm needs it; TRIES rounds of 0.2 s (default 50, 10 s).
# rdma_resolve_ip() (drivers/infiniband/core/addr.c, 6.12) starts the
# neighbour resolution, then queues its request; an ARP or ND answer that
# comes in between finds no request to wake, and the resolution then
# waits out its whole timeout (seen: the client's 20 s wait for
# ADDR_RESOLVED ran out in ipcm_rxe; ADDR_ERROR -110 in ipcm_pair, CI of
# 2026-12-05). A datagram to ADDR (bash's /dev/udp, to the discard port)
# resolves it first.
neigh_warm() {
	local i
	for i in $(seq "${3:-50}"); do
		ip neigh show "$1" dev "$2" | grep -qE 'REACHABLE|STALE|DELAY|PROBE' &&
			return 0
		(echo x >"/dev/udp/$1/9") 2>/dev/null
		sleep 0.2
	done
	echo "== no neighbour entry for $1 on $2: $(ip neigh show "$1" dev "$2")"
	return 1
}
