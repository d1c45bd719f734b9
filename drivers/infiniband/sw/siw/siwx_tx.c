// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: several FPDUs of a message in one sendmsg().
 *
 * siw sizes every FPDU of a multi-segment message to one TCP MSS (RFC
 * 5044, section 8: each segment starts with an FPDU) and hands each to
 * TCP with a sendmsg() of its own. TCP sends a full MSS at once, so every
 * FPDU travels through the whole network stack as a packet of its own,
 * on both hosts: at MTU 1,500 a 64 KiB message is 46 packets where a
 * socket application's 64 KiB write() is one GSO packet.
 *
 * siwx_tx_fpdus() builds the headers, payloads and trailers of up to a
 * GSO packet's worth of such FPDUs (64 KiB) and gives them to TCP in one
 * call. TCP then builds one large packet and cuts it into segments of one
 * MSS each, that is at the FPDU boundaries: the byte stream and the
 * segments on the wire are those siw sends one FPDU at a time.
 *
 * The payload is copied by TCP from the pages of the work request (an
 * ITER_BVEC iterator; nothing is kmapped for longer than its CRC takes).
 * TCP may accept part of the call only (MSG_DONTWAIT, a full send
 * buffer): the state of the FPDU the accepted bytes end in is then set
 * up as if siw_tx_hdt() had sent that much of it, and siw_tx_hdt()
 * resumes there.
 *
 * The hook calling into this file is in siw_qp_tx.c, the prototypes are
 * in siw.h. Module parameter tx_batch (default Y) turns it off.
 */

#include <linux/bvec.h>
#include <linux/errno.h>
#include <linux/net.h>
#include <linux/socket.h>
#include <linux/slab.h>
#include <linux/uio.h>
#include <net/tcp.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siw_verbs.h"
#include "siw_mem.h"

static bool siw_tx_batch = true;
module_param_named(tx_batch, siw_tx_batch, bool, 0644);
MODULE_PARM_DESC(tx_batch,
		 "Give TCP up to 64 KiB of a message's MSS-sized FPDUs in one call (default: Y)");

#define SIWX_TXB_BYTES 65536
#define SIWX_TXB_FPDUS 48	/* 64 KiB holds 45 FPDUs of 1448 bytes */
#define SIWX_TXB_BVECS 192
#define SIWX_TXB_HDR 32		/* Send with Invalidate's: 20 bytes */

struct siwx_txb_fpdu {
	u8 hdr[SIWX_TXB_HDR] __aligned(8);
	struct mpa_trailer trl;
	/* transmit state at the start of this FPDU */
	u32 processed;
	u32 sge_off;
	int sge_idx;
	int pbl_idx;
	u16 hdr_len;
	u16 data_len;
	u8 pad;
};

struct siwx_tx_batch {
	struct bio_vec bv[SIWX_TXB_BVECS];
	/* one more: the SGE state after the last FPDU */
	struct siwx_txb_fpdu fpdu[SIWX_TXB_FPDUS + 1];
};

void siwx_tx_batch_free(struct siw_iwarp_tx *c_tx)
{
	kfree(c_tx->batch);
	c_tx->batch = NULL;
}

/* bio_vecs one FPDU of @data_len payload bytes can take at most */
static unsigned int siwx_txb_bvecs(unsigned int data_len)
{
	return 2 + (data_len >> PAGE_SHIFT) + 2 * SIW_MAX_SGE;
}

/*
 * siwx_tx_batch_ok()
 *
 * True if the FPDU just prepared (siw_prepare_fpdu()), none of it sent
 * nor its CRC computed yet, starts a run of at least two that fill one
 * MSS exactly each, from registered memory, and the batch buffer is there
 * (allocated with the first such message).
 */
bool siwx_tx_batch_ok(struct siw_iwarp_tx *c_tx, struct socket *s)
{
	struct siw_wqe *wqe = &c_tx->wqe_active;

	if (!READ_ONCE(siw_tx_batch) || c_tx->state != SIW_SEND_HDR ||
	    c_tx->ctrl_sent || (c_tx->mpa_crc_hd && !c_tx->do_crc) ||
	    c_tx->pkt.ctrl.ddp_rdmap_ctrl & DDP_FLAG_LAST ||
	    tx_flags(wqe) & SIW_WQE_INLINE || c_tx->ctrl_len > SIWX_TXB_HDR ||
	    c_tx->tcp_seglen != tcp_sk(s->sk)->mss_cache ||
	    2 * siwx_txb_bvecs(c_tx->tcp_seglen) > SIWX_TXB_BVECS ||
	    2 * c_tx->tcp_seglen > SIWX_TXB_BYTES)
		return false;

	BUILD_BUG_ON(sizeof(struct siwx_tx_batch) > 8192);
	if (unlikely(!c_tx->batch))
		c_tx->batch = kmalloc(sizeof(*c_tx->batch),
				      GFP_NOWAIT | __GFP_NOWARN);
	return !!c_tx->batch;
}

static void siwx_txb_crc(struct siw_iwarp_tx *c_tx, const void *addr,
			 unsigned int len)
{
	crypto_shash_update(c_tx->mpa_crc_hd, addr, len);
}

/*
 * siwx_txb_payload()
 *
 * Adds the bio_vecs of the current FPDU's payload (c_tx->bytes_unsent
 * bytes from c_tx->sge_idx/sge_off) to @b, feeds them to the CRC if
 * needed, and advances the SGE state and wqe->processed past them, as
 * siw_tx_hdt() does for an FPDU sent whole.
 */
static int siwx_txb_payload(struct siw_iwarp_tx *c_tx,
			    struct siwx_tx_batch *b, unsigned int *nbv)
{
	struct siw_wqe *wqe = &c_tx->wqe_active;
	unsigned int data_len = c_tx->bytes_unsent;
	unsigned int sge_idx = c_tx->sge_idx, sge_off = c_tx->sge_off;
	struct siw_sge *sge = &wqe->sqe.sge[sge_idx];
	int pbl_idx = c_tx->pbl_idx;

	wqe->processed += data_len;

	while (data_len) {
		unsigned int sge_len = min(sge->length - sge_off, data_len);
		unsigned int fp_off = (sge->laddr + sge_off) & ~PAGE_MASK;
		struct siw_mem *mem = wqe->mem[sge_idx];
		/* no memory is resolved for an SGE of length 0 */
		bool is_kva = sge_len && !mem->mem_obj;

		while (sge_len) {
			unsigned int plen = min_t(unsigned int,
						  PAGE_SIZE - fp_off, sge_len);
			struct bio_vec *bv = &b->bv[(*nbv)++];

			if (!is_kva) {
				struct page *p;

				p = siw_get_page(mem, sge, sge_off, &pbl_idx);
				if (unlikely(!p)) {
					wqe->processed -= c_tx->bytes_unsent;
					return -EFAULT;
				}
				bvec_set_page(bv, p, plen, fp_off);
				if (c_tx->do_crc) {
					void *kaddr = kmap_local_page(p);

					siwx_txb_crc(c_tx, kaddr + fp_off, plen);
					kunmap_local(kaddr);
				}
			} else {
				void *va = ib_virt_dma_to_ptr(sge->laddr +
							      sge_off);

				bvec_set_virt(bv, va, plen);
				if (c_tx->do_crc)
					siwx_txb_crc(c_tx, va, plen);
			}
			sge_len -= plen;
			sge_off += plen;
			data_len -= plen;
			fp_off = 0;
		}
		if (sge_off == sge->length &&
		    (data_len != 0 || wqe->processed < wqe->bytes)) {
			sge_idx++;
			sge++;
			sge_off = 0;
		}
	}
	c_tx->sge_idx = sge_idx;
	c_tx->sge_off = sge_off;
	c_tx->pbl_idx = pbl_idx;

	return 0;
}

/*
 * siwx_txb_resume()
 *
 * TCP took @sent bytes of FPDU @f, less than all of it: set up the
 * transmit state siw_tx_hdt() would have left after sending as much.
 */
static void siwx_txb_resume(struct siw_iwarp_tx *c_tx,
			    struct siwx_txb_fpdu *f, unsigned int sent)
{
	struct siw_wqe *wqe = &c_tx->wqe_active;

	memcpy(&c_tx->pkt, f->hdr, f->hdr_len);
	c_tx->ctrl_len = f->hdr_len;
	c_tx->pad = f->pad;
	c_tx->trailer = f->trl;
	c_tx->sge_idx = f->sge_idx;
	c_tx->sge_off = f->sge_off;
	c_tx->pbl_idx = f->pbl_idx;
	c_tx->bytes_unsent = f->data_len;
	wqe->processed = f->processed;

	if (sent < f->hdr_len) {
		c_tx->state = SIW_SEND_HDR;
		c_tx->ctrl_sent = sent;
	} else if (sent < f->hdr_len + f->data_len) {
		struct siw_sge *sge = &wqe->sqe.sge[c_tx->sge_idx];
		unsigned int done = sent - f->hdr_len, sge_unsent;

		c_tx->state = SIW_SEND_DATA;
		c_tx->bytes_unsent -= done;
		wqe->processed += done;

		sge_unsent = sge->length - c_tx->sge_off;
		while (sge_unsent <= done) {
			done -= sge_unsent;
			c_tx->sge_idx++;
			c_tx->sge_off = 0;
			sge++;
			sge_unsent = sge->length;
		}
		c_tx->sge_off += done;
	} else {
		/* all but (part of) the trailer: the SGE state after it */
		struct siwx_txb_fpdu *next = f + 1;

		c_tx->state = SIW_SEND_TRAILER;
		c_tx->ctrl_len = sizeof(struct mpa_trailer);
		c_tx->ctrl_sent = sent - f->hdr_len - f->data_len + 4 - f->pad;
		c_tx->bytes_unsent = 0;
		wqe->processed += f->data_len;
		c_tx->sge_idx = next->sge_idx;
		c_tx->sge_off = next->sge_off;
		c_tx->pbl_idx = next->pbl_idx;
	}
}

/*
 * siwx_tx_fpdus()
 *
 * Sends the FPDU prepared in @c_tx and as many of the message's next
 * FPDUs as fit into one GSO packet, in one sendmsg() call. Returns as
 * siw_tx_hdt() does: 0 if all went out, with @c_tx holding the last
 * FPDU sent (its header tells whether the message is complete);
 * -EAGAIN if TCP took part, with @c_tx set up to resume in the FPDU it
 * stopped in; another negative errno on failure.
 *
 * Every FPDU of the batch is charged to the QP's transmit burst
 * (@burst_len, the caller's count of FPDUs it may still send before the
 * transmit thread turns to the next QP), so that a QP's turn is as long
 * as without batching, at least one call: up to 100 calls of 64 KiB each
 * let one QP hold the thread for 6.4 MB, and 64 busy QPs then waited for
 * their turns for seconds.
 */
int siwx_tx_fpdus(struct siw_qp *qp, struct socket *s, int *burst_len)
{
	struct siw_iwarp_tx *c_tx = &qp->tx_ctx;
	struct siw_wqe *wqe = &c_tx->wqe_active;
	struct siwx_tx_batch *b = c_tx->batch;
	struct msghdr msg = { .msg_flags = MSG_DONTWAIT | MSG_EOR };
	unsigned int n = 0, nbv = 0, total = 0, limit, fpdu_len, i;
	struct siwx_txb_fpdu *f;
	int rv;

	limit = min_t(unsigned int, READ_ONCE(s->sk->sk_gso_max_size),
		      SIWX_TXB_BYTES);

	for (;;) {
		f = &b->fpdu[n];
		f->processed = wqe->processed;
		f->sge_idx = c_tx->sge_idx;
		f->sge_off = c_tx->sge_off;
		f->pbl_idx = c_tx->pbl_idx;
		f->hdr_len = c_tx->ctrl_len;
		f->data_len = c_tx->bytes_unsent;
		f->pad = c_tx->pad;
		memcpy(f->hdr, &c_tx->pkt, f->hdr_len);
		bvec_set_virt(&b->bv[nbv++], f->hdr, f->hdr_len);

		rv = siwx_txb_payload(c_tx, b, &nbv);
		if (unlikely(rv)) {
			/* nothing sent: back to the start of the first */
			f = &b->fpdu[0];
			wqe->processed = f->processed;
			c_tx->do_crc = 0;
			return rv;
		}
		/* trailer: pad, CRC */
		*(u32 *)f->trl.pad = 0;
		if (!c_tx->mpa_crc_hd) {
			f->trl.crc = 0;
		} else {
			if (f->pad)
				siwx_txb_crc(c_tx, f->trl.pad, f->pad);
			crypto_shash_final(c_tx->mpa_crc_hd, (u8 *)&f->trl.crc);
		}
		bvec_set_virt(&b->bv[nbv++], &f->trl.pad[4 - f->pad],
			      f->pad + MPA_CRC_SIZE);
		fpdu_len = f->hdr_len + f->data_len + f->pad + MPA_CRC_SIZE;
		total += fpdu_len;
		n++;

		if (c_tx->pkt.ctrl.ddp_rdmap_ctrl & DDP_FLAG_LAST ||
		    n == SIWX_TXB_FPDUS ||
		    total + c_tx->tcp_seglen > limit ||
		    nbv + siwx_txb_bvecs(c_tx->tcp_seglen) > SIWX_TXB_BVECS)
			break;

		siw_prepare_fpdu(qp, wqe);
	}
	f = &b->fpdu[n];
	f->sge_idx = c_tx->sge_idx;
	f->sge_off = c_tx->sge_off;
	f->pbl_idx = c_tx->pbl_idx;
	/*
	 * As in siw_tx_hdt(): a message's next FPDU, or the Immediate Data
	 * message of an RDMA Write with Immediate, follows at once.
	 */
	if (!(c_tx->pkt.ctrl.ddp_rdmap_ctrl & DDP_FLAG_LAST) ||
	    (tx_type(wqe) == SIW_OP_WRITE_WITH_IMM && !c_tx->imm_phase))
		msg.msg_flags = MSG_DONTWAIT | MSG_MORE;

	/* the caller charges one FPDU itself */
	*burst_len = max_t(int, *burst_len - (int)(n - 1), 1);

	iov_iter_bvec(&msg.msg_iter, ITER_SOURCE, b->bv, nbv, total);
	rv = sock_sendmsg(s, &msg);
	c_tx->do_crc = 0;

	if (rv == total) {
		/* the caller counts the last one */
		for (i = 0; i + 1 < n; i++)
			siwx_stats_tx_fpdu(qp, (struct iwarp_ctrl *)b->fpdu[i].hdr);
		return 0;
	}
	if (rv < 0 && rv != -EAGAIN) {
		f = &b->fpdu[0];
		wqe->processed = f->processed;
		return rv;
	}
	rv = max(rv, 0);
	for (i = 0, f = b->fpdu; i < n; i++, f++) {
		fpdu_len = f->hdr_len + f->data_len + f->pad + MPA_CRC_SIZE;
		if (rv < fpdu_len)
			break;
		rv -= fpdu_len;
		siwx_stats_tx_fpdu(qp, (struct iwarp_ctrl *)f->hdr);
	}
	siwx_txb_resume(c_tx, f, rv);

	return -EAGAIN;
}
