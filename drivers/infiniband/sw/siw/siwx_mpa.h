/* SPDX-License-Identifier: GPL-2.0 or BSD-3-Clause */

/*
 * siwx: the MPA negotiation rules (RFC 5044, RFC 6581) of siw's
 * connection manager, see siwx_mpa.c. siw_cm.c keeps the handshake
 * (sockets, timers, IWCM events, QP state); these functions decide.
 */

#ifndef _SIWX_MPA_H
#define _SIWX_MPA_H

#include "siw.h"
#include "siw_cm.h"

/*
 * Rate-limited report of a refused MPA frame or handshake: the peer
 * controls how often this happens.
 */
#define siw_mpa_warn(cep, fmt, ...)					\
	do {								\
		const struct siw_cep *__cep = (cep);			\
									\
		pr_warn_ratelimited("siw: MPA %s %pISp: " fmt,		\
				    __cep->neg.initiator ?		\
				    "initiator" : "responder",		\
				    &__cep->peer_addr, ##__VA_ARGS__);	\
	} while (0)

/* RTR types (SIW_RTR_* sets) and the A/B/C/D bits of the IRD/ORD word */
u8 siwx_mpa_rtr_from_ctrl(const struct mpa_v2_data *v2);
void siwx_mpa_rtr_to_ctrl(struct mpa_v2_data *v2, u8 set);
u8 siwx_mpa_rtr_pick(u8 set);

/* Initiator */
int siwx_mpa_request(const struct siw_mpa_conf *conf, int rev, int ird,
		     int ord, struct mpa_v2_data *v2, u8 *rtr_offer);
bool siwx_mpa_reply_rev_ok(const struct siw_cep *cep);
int siwx_mpa_proc_reply(struct siw_cep *cep, u8 *rtr, u8 *ecode);

/* Responder */
int siwx_mpa_check_request(const struct siw_cep *cep);
void siwx_mpa_request_ird_ord(const struct mpa_v2_data *req,
			      const struct siw_dev_cap *attrs, int *ird,
			      int *ord);
bool siwx_mpa_accept(const struct siw_mpa_conf *conf,
		     const struct siw_dev_cap *attrs,
		     const struct mpa_v2_data *req, u32 *ird, u32 *ord,
		     struct mpa_v2_data *rep, u8 *rtr_expect);

#endif
