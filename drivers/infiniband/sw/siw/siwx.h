/* SPDX-License-Identifier: GPL-2.0 or BSD-3-Clause */

/*
 * siwx: what siwx's own files share with each other and upstream siw's
 * files do not call (their hooks are declared in siw.h).
 */

#ifndef _SIWX_H
#define _SIWX_H

#include "siw.h"

/* an FPDU's bytes besides its payload: MPA length, DDP/RDMAP header, pad, CRC */
#define SIWX_FPDU_OVERHEAD 64

/* siwx_pack.c */
int siwx_sqe_payload(const struct siw_sqe *sqe);

/* siwx_flush.c */
bool siwx_flush_resp_within(struct siw_sqe *irqe, u64 max);

#endif
