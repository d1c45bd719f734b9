// SPDX-License-Identifier: GPL-2.0 or BSD-3-Clause

/*
 * siwx: the MPA negotiation rules of the enhanced connection setup
 * (RFC 6581) on top of RFC 5044, for both roles.
 *
 * siw_cm.c runs the handshake (sockets, timers, IWCM events, moving the
 * QP to RTS, sending Replies and Terminates) and calls in here where a
 * rule decides: what the initiator's Request asks for, whether a
 * Request or Reply is acceptable, the IRD/ORD each side ends up with
 * and the RTR type. The inputs are the connection's configuration
 * snapshot (struct siw_mpa_conf), the device limits and the peer's
 * MPA header and IRD/ORD word; the outputs are a decision, the values
 * to use and, for the initiator, the RFC 6581 Terminate Error Code.
 * The functions that take a connection endpoint read it, and those of
 * the initiator's Reply write only its negotiated IRD/ORD and model
 * (struct siw_mpa_neg); refusals are logged with siw_mpa_warn().
 *
 * The rules, parameter by parameter: Documentation/rfc6581.md.
 */

#include "siwx_mpa.h"

static __be16 siwx_mpa_rtr_to_ord_flags(unsigned int set)
{
	__be16 flags = 0;

	if (set & SIW_RTR_WRITE)
		flags |= MPA_V2_RDMA_WRITE_RTR;
	if (set & SIW_RTR_READ)
		flags |= MPA_V2_RDMA_READ_RTR;
	return flags;
}

/* The RTR types a peer's IRD/ORD word (B, C, D) names */
u8 siwx_mpa_rtr_from_ctrl(const struct mpa_v2_data *v2)
{
	u8 set = 0;

	if (v2->ird & MPA_V2_SEND_RTR)
		set |= SIW_RTR_SEND;
	if (v2->ord & MPA_V2_RDMA_WRITE_RTR)
		set |= SIW_RTR_WRITE;
	if (v2->ord & MPA_V2_RDMA_READ_RTR)
		set |= SIW_RTR_READ;
	return set;
}

void siwx_mpa_rtr_to_ctrl(struct mpa_v2_data *v2, u8 set)
{
	if (set & SIW_RTR_SEND)
		v2->ird |= MPA_V2_SEND_RTR;
	v2->ord |= siwx_mpa_rtr_to_ord_flags(set);
}

/* The initiator's choice among mutually supported RTR types */
u8 siwx_mpa_rtr_pick(u8 set)
{
	if (set & SIW_RTR_WRITE)
		return SIW_RTR_WRITE;
	if (set & SIW_RTR_SEND)
		return SIW_RTR_SEND;
	if (set & SIW_RTR_READ)
		return SIW_RTR_READ;
	return 0;
}

/*
 * Initiator: the MPA Request of revision @rev for the ULP's @ird and
 * @ord. Without any enhanced feature to ask for (IRD/ORD negotiation,
 * the peer-to-peer model) the Request is unenhanced, of revision 1.
 * For an enhanced Request, fills in the IRD/ORD word @v2 (zeroed by the
 * caller) and the RTR types offered, @rtr_offer (0 without any).
 *
 * Returns the revision to send: MPA_REVISION_2 for an enhanced Request,
 * MPA_REVISION_1 otherwise.
 */
int siwx_mpa_request(const struct siw_mpa_conf *conf, int rev, int ird,
		     int ord, struct mpa_v2_data *v2, u8 *rtr_offer)
{
	bool p2p = conf->p2p && rev == MPA_REVISION_2;
	bool enhanced = rev == MPA_REVISION_2 &&
			(p2p || conf->ird_ord != SIW_IRD_ORD_ULP);

	*rtr_offer = 0;
	if (!enhanced)
		return MPA_REVISION_1;

	if (conf->ird_ord == SIW_IRD_ORD_ULP) {
		v2->ird = htons(MPA_IRD_ORD_NO_NEGOTIATION);
		v2->ord = htons(MPA_IRD_ORD_NO_NEGOTIATION);
	} else {
		v2->ird = htons(ird & MPA_IRD_ORD_MASK);
		v2->ord = htons(ord & MPA_IRD_ORD_MASK);
	}
	if (p2p) {
		u8 rtr = conf->rtr_offer;

		/* A Read RTR needs an outbound Read credit */
		if (!ord)
			rtr &= ~SIW_RTR_READ;
		v2->ird |= MPA_V2_PEER_TO_PEER;
		siwx_mpa_rtr_to_ctrl(v2, rtr);
		*rtr_offer = rtr;
	}
	return MPA_REVISION_2;
}

/*
 * Initiator: the revision of the Reply, 1 up to the one requested.
 */
bool siwx_mpa_reply_rev_ok(const struct siw_cep *cep)
{
	int rev = __mpa_rr_revision(cep->mpa.hdr.params.bits);

	if (rev < MPA_REVISION_1 || rev > cep->mpa_rev_req) {
		siw_mpa_warn(cep, "MPA Reply revision %d to a revision %d Request\n",
			     rev, cep->mpa_rev_req);
		return false;
	}
	return true;
}

/*
 * Initiator: the enhanced part of the MPA Reply and the RFC 6581 rules
 * applied to it, after the Reply's Key, revision and flags passed.
 *
 * Sets the connection's IRD and ORD: the ULP's values if no negotiation
 * happened; otherwise our IRD raised to the responder's ORD (mode
 * relaxed, within the device limit) and our ORD lowered to the
 * responder's IRD, all ones leaving the local value as it is. For the
 * peer-to-peer model, picks the RTR (@rtr, cep->neg).
 *
 * Returns 0, or the error to report with the Terminate Error Code
 * @ecode the initiator sends: -EPROTO (Code 4, malformed Reply),
 * -ENOMEM (Code 6, our IRD cannot cover the responder's ORD),
 * -EOPNOTSUPP (Code 7, no RTR both sides support).
 */
int siwx_mpa_proc_reply(struct siw_cep *cep, u8 *rtr, u8 *ecode)
{
	struct mpa_rr *rep = &cep->mpa.hdr;
	int version = __mpa_rr_revision(rep->params.bits);
	u16 pd_len = be16_to_cpu(rep->params.pd_len);
	bool p2p_req = !!(cep->mpa.v2_ctrl_req.ird & MPA_V2_PEER_TO_PEER);
	bool enh_rep = !!(rep->params.bits & MPA_RR_FLAG_ENHANCED);

	*rtr = 0;
	*ecode = LLP_ECODE_INVALID_REQ_RESP;

	if (enh_rep && (version < MPA_REVISION_2 ||
			pd_len < sizeof(struct mpa_v2_data))) {
		siw_mpa_warn(cep, "enhanced Reply: rev %d, %u bytes private data\n",
			     version, pd_len);
		return -EPROTO;
	}
	if (enh_rep && !cep->enhanced_rdma_conn_est) {
		/* RFC 6581: an unenhanced Request gets an unenhanced Reply */
		siw_mpa_warn(cep, "enhanced Reply to an unenhanced Request\n");
		return -EPROTO;
	}
	if (pd_len - (enh_rep ? sizeof(struct mpa_v2_data) : 0) > U8_MAX) {
		siw_mpa_warn(cep, "%u bytes private data in the Reply\n",
			     pd_len);
		return -EPROTO;
	}
	if (cep->enhanced_rdma_conn_est && !enh_rep) {
		/*
		 * An unenhanced Reply: no negotiation happened, the ULP's
		 * values stand. Peer-to-peer is impossible without RTR.
		 */
		cep->enhanced_rdma_conn_est = false;
		if (p2p_req) {
			siw_mpa_warn(cep, "unenhanced Reply to a peer-to-peer Request\n");
			*ecode = LLP_ECODE_NO_MATCHING_RTR;
			return -EOPNOTSUPP;
		}
		cep->ird = cep->ird_ulp;
		cep->ord = cep->ord_ulp;
	}
	if (cep->enhanced_rdma_conn_est) {
		struct mpa_v2_data *v2 = (struct mpa_v2_data *)cep->mpa.pdata;
		u16 rep_ird = ntohs(v2->ird) & MPA_IRD_ORD_MASK;
		u16 rep_ord = ntohs(v2->ord) & MPA_IRD_ORD_MASK;
		bool p2p_rep = !!(v2->ird & MPA_V2_PEER_TO_PEER);
		u8 rtr_rep = siwx_mpa_rtr_from_ctrl(v2);
		int ird = cep->ird_ulp, ord = cep->ord_ulp;

		siw_dbg_cep(cep, "reply ird %u ord %u p2p %d rtr 0x%x\n",
			    rep_ird, rep_ord, p2p_rep, rtr_rep);
		/*
		 * RFC 6581: our IRD at least the responder's ORD, our ORD
		 * at most the responder's IRD. All ones: no negotiation,
		 * the local value stays.
		 */
		if (rep_ord != MPA_IRD_ORD_NO_NEGOTIATION && ird < rep_ord) {
			if (cep->conf.ird_ord == SIW_IRD_ORD_STRICT ||
			    rep_ord > cep->sdev->attrs.max_ird) {
				siw_mpa_warn(cep, "IRD %d below responder ORD %u\n",
					     ird, rep_ord);
				cep->ird = ird;
				cep->ord = ord;
				*ecode = LLP_ECODE_INSUFFICIENT_IRD;
				return -ENOMEM;
			}
			ird = rep_ord;
		}
		if (rep_ird != MPA_IRD_ORD_NO_NEGOTIATION && ord > rep_ird)
			ord = rep_ird;

		cep->ird = ird;
		cep->ord = ord;

		if (!p2p_req && !p2p_rep && rtr_rep) {
			siw_mpa_warn(cep, "client-server Reply with RTR flags 0x%x\n",
				     rtr_rep);
			return -EPROTO;
		}
		if (p2p_req || p2p_rep) {
			/*
			 * Peer-to-peer: pick among the types both support.
			 * A responder that answers a client-server Request
			 * with peer-to-peer (some do) gets the RTR it asks
			 * for, of any type we can send.
			 */
			u8 set = rtr_rep & (p2p_req ? cep->mpa_rtr_req :
						      SIW_RTR_ALL);

			if (!ord)
				set &= ~SIW_RTR_READ;
			*rtr = siwx_mpa_rtr_pick(set);
			if (!p2p_rep || !*rtr) {
				siw_mpa_warn(cep, "no matching RTR: offered 0x%x, reply %s0x%x\n",
					     cep->mpa_rtr_req,
					     p2p_rep ? "" : "client-server ",
					     rtr_rep);
				*ecode = LLP_ECODE_NO_MATCHING_RTR;
				return -EOPNOTSUPP;
			}
			cep->neg.p2p = true;
			cep->neg.rtr = *rtr;
		}
	}
	*ecode = 0;
	return 0;
}

/*
 * Responder: the enhanced part (S set) of an MPA Request whose Key and
 * revision passed. Returns 0 if it can be served, -EPROTO for a Request
 * to reject: S with revision 1 or less than the IRD/ORD word of private
 * data, RTR flags without A, A without any RTR type, or peer-to-peer
 * when we accept no RTR type.
 */
int siwx_mpa_check_request(const struct siw_cep *cep)
{
	const struct mpa_rr *req = &cep->mpa.hdr;
	const struct mpa_v2_data *v2 = (struct mpa_v2_data *)cep->mpa.pdata;
	int version = __mpa_rr_revision(req->params.bits);
	u16 pd_len = be16_to_cpu(req->params.pd_len);
	u8 rtr;

	/*
	 * MPA version 2 must signal IRD/ORD values and P2P mode
	 * in private data if header flag MPA_RR_FLAG_ENHANCED
	 * is set.
	 */
	if (version < MPA_REVISION_2 || pd_len < sizeof(struct mpa_v2_data)) {
		siw_mpa_warn(cep, "enhanced Request: rev %d, %u bytes private data\n",
			     version, pd_len);
		return -EPROTO;
	}
	rtr = siwx_mpa_rtr_from_ctrl(v2);

	if (!(v2->ird & MPA_V2_PEER_TO_PEER) && rtr) {
		siw_mpa_warn(cep, "client-server Request with RTR flags 0x%x\n",
			     rtr);
		return -EPROTO;
	}
	if ((v2->ird & MPA_V2_PEER_TO_PEER) && !rtr) {
		siw_mpa_warn(cep, "peer-to-peer Request without RTR type\n");
		return -EPROTO;
	}
	if ((v2->ird & MPA_V2_PEER_TO_PEER) && !cep->conf.rtr_accept) {
		siw_dbg_cep(cep, "peer-to-peer refused: no RTR accepted\n");
		return -EPROTO;
	}
	return 0;
}

/*
 * Responder: what to tell the ULP the initiator asks for: its IRD
 * limits our ORD, its ORD asks for our IRD. All ones leaves the choice
 * to the ULP: the device maximum.
 */
void siwx_mpa_request_ird_ord(const struct mpa_v2_data *req,
			      const struct siw_dev_cap *attrs, int *ird,
			      int *ord)
{
	u16 peer_ird = ntohs(req->ird) & MPA_IRD_ORD_MASK;
	u16 peer_ord = ntohs(req->ord) & MPA_IRD_ORD_MASK;

	*ord = min_t(int, peer_ird, attrs->max_ord);
	*ird = min_t(int, peer_ord, attrs->max_ird);
}

/*
 * Responder, accepting an enhanced Request @req with the ULP's @ird and
 * @ord: the RFC 6581 rules for the Reply's IRD/ORD word @rep and the
 * values the QP gets.
 *
 * Our ORD at most the initiator's IRD; our IRD raised to the
 * initiator's ORD where resources allow (relaxed). All ones: the ULP's
 * value stays, all ones goes back. Peer-to-peer: the Reply offers the
 * accepted RTR types the initiator offered, or all accepted ones if
 * none matches (the initiator then finds no match and says so, RFC 6581
 * Error Code 7); @rtr_expect is that set, 0 for client-server.
 *
 * Returns true if the initiator's IRD cannot serve the ORD the ULP
 * needs (mode strict): the Reply then carries what would fit and the
 * connection is refused with Error Code 6.
 */
bool siwx_mpa_accept(const struct siw_mpa_conf *conf,
		     const struct siw_dev_cap *attrs,
		     const struct mpa_v2_data *req, u32 *ird, u32 *ord,
		     struct mpa_v2_data *rep, u8 *rtr_expect)
{
	u16 req_ird = ntohs(req->ird) & MPA_IRD_ORD_MASK;
	u16 req_ord = ntohs(req->ord) & MPA_IRD_ORD_MASK;
	bool ird_insufficient = false;
	u16 rep_ird, rep_ord;

	*rtr_expect = 0;

	if (req_ird == MPA_IRD_ORD_NO_NEGOTIATION) {
		rep_ord = MPA_IRD_ORD_NO_NEGOTIATION;
	} else {
		if (*ord > req_ird) {
			if (conf->ird_ord == SIW_IRD_ORD_STRICT)
				ird_insufficient = true;
			*ord = req_ird;
		}
		rep_ord = *ord;
	}
	if (req_ord == MPA_IRD_ORD_NO_NEGOTIATION) {
		rep_ird = MPA_IRD_ORD_NO_NEGOTIATION;
	} else {
		if (*ird < req_ord && conf->ird_ord == SIW_IRD_ORD_RELAXED)
			*ird = min_t(u32, req_ord, attrs->max_ird);
		rep_ird = *ird;
	}
	rep->ird = htons(rep_ird);
	rep->ord = htons(rep_ord);

	if (req->ird & MPA_V2_PEER_TO_PEER) {
		u8 set = conf->rtr_accept;

		/* A Read RTR needs an inbound Read credit */
		if (!*ird)
			set &= ~SIW_RTR_READ;
		if (set & siwx_mpa_rtr_from_ctrl(req))
			set &= siwx_mpa_rtr_from_ctrl(req);
		if (!set)
			set = conf->rtr_accept;

		rep->ird |= MPA_V2_PEER_TO_PEER;
		siwx_mpa_rtr_to_ctrl(rep, set);
		*rtr_expect = set;
	}
	return ird_insufficient;
}
