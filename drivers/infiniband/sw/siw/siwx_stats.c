// SPDX-License-Identifier: GPL-2.0 or BSD-3-Clause

/*
 * Protocol counters of a siw device, reported through the RDMA core's
 * hardware statistics: 'rdma statistic show link siwN/1' and
 * /sys/class/infiniband/siwN/ports/1/hw_counters/.
 *
 * Counted per CPU (this_cpu_*: the receive path runs in softirq, the
 * transmit path in process context and in siw_tx threads) and summed when
 * read. Documentation/counters.md describes each counter.
 *
 * Per QP ('rdma statistic qp', auto or manual mode): while a QP is bound
 * to an RDMA core counter, what it does is counted in that QP's own
 * atomic counters instead of the device's; the counter reports the sum
 * of its QPs', and keeps what QPs counted before they were unbound. The
 * RDMA core adds the counters to the device's for the link totals. The
 * MPA counters stay per device (a connection is set up before its QP
 * can be bound).
 *
 * FPDUs and bytes are counted per RDMAP opcode class. An FPDU counts as
 * sent once the whole of it went to TCP, as received once the whole of it
 * arrived with a good CRC (a Terminate: when its header arrived). Bytes are
 * the FPDU's MPA ULPDU Length: DDP and RDMAP headers plus payload, without
 * the MPA header, padding and CRC.
 */

#include <linux/percpu.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_counter.h>

#include "siw.h"

enum siwx_op_class {
	SIWX_CLS_WRITE,
	SIWX_CLS_READ_REQ,
	SIWX_CLS_READ_RESP,
	SIWX_CLS_SEND,
	SIWX_CLS_TERMINATE,
	SIWX_CLS_IMM,
	SIWX_CLS_ATOMIC_REQ,
	SIWX_CLS_ATOMIC_RESP,
	SIWX_CLS_FLUSH_REQ,
	SIWX_CLS_FLUSH_RESP,
	SIWX_CLS_ATOMIC_WRITE_REQ,
	SIWX_CLS_ATOMIC_WRITE_RESP,
	SIWX_NUM_CLS
};

/* Terminates by layer and error type */
enum siwx_term_kind {
	SIWX_TERM_RDMAP_CATASTROPHIC,
	SIWX_TERM_RDMAP_PROTECTION,
	SIWX_TERM_RDMAP_OPERATION,
	SIWX_TERM_DDP_CATASTROPHIC,
	SIWX_TERM_DDP_TAGGED,
	SIWX_TERM_DDP_UNTAGGED,
	SIWX_TERM_LLP,
	SIWX_TERM_OTHER,
	SIWX_NUM_TERM
};

enum siwx_counter {
	SIWX_CNT_TX_FPDUS = 0,
	SIWX_CNT_TX_BYTES = SIWX_CNT_TX_FPDUS + SIWX_NUM_CLS,
	SIWX_CNT_RX_FPDUS = SIWX_CNT_TX_BYTES + SIWX_NUM_CLS,
	SIWX_CNT_RX_BYTES = SIWX_CNT_RX_FPDUS + SIWX_NUM_CLS,
	SIWX_CNT_TERM_TX = SIWX_CNT_RX_BYTES + SIWX_NUM_CLS,
	SIWX_CNT_TERM_RX = SIWX_CNT_TERM_TX + SIWX_NUM_TERM,
	SIWX_CNT_EVENT = SIWX_CNT_TERM_RX + SIWX_NUM_TERM,
	SIWX_NUM_COUNTERS = SIWX_CNT_EVENT + SIWX_NUM_EVENTS
};

struct siwx_pcpu_stats {
	u64 cnt[SIWX_NUM_COUNTERS];
};

/* What a QP counts while it is bound to an RDMA core counter */
struct siwx_qp_stats {
	atomic64_t cnt[SIWX_NUM_COUNTERS];
	struct list_head list;		/* in siwx_core_counter.qps */
};

/* The driver's side of an RDMA core counter (struct rdma_counter) */
struct siwx_core_counter {
	struct rdma_counter *counter;
	struct list_head list;		/* in siw_device.counters */
	struct list_head qps;		/* siwx_qp_stats of the bound QPs */
	u64 unbound[SIWX_NUM_COUNTERS];	/* of the QPs no longer bound */
};

/* The counters in the order rdma statistic shows them */
static const struct rdma_stat_desc siwx_stat_descs[SIWX_NUM_COUNTERS] = {
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_WRITE].name = "tx_write_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_READ_REQ].name = "tx_read_req_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_READ_RESP].name = "tx_read_resp_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_SEND].name = "tx_send_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_TERMINATE].name = "tx_terminate_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_IMM].name = "tx_imm_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_ATOMIC_REQ].name = "tx_atomic_req_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_ATOMIC_RESP].name = "tx_atomic_resp_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_FLUSH_REQ].name = "tx_flush_req_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_FLUSH_RESP].name = "tx_flush_resp_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_ATOMIC_WRITE_REQ].name = "tx_atomic_write_req_fpdus",
	[SIWX_CNT_TX_FPDUS + SIWX_CLS_ATOMIC_WRITE_RESP].name = "tx_atomic_write_resp_fpdus",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_WRITE].name = "tx_write_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_READ_REQ].name = "tx_read_req_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_READ_RESP].name = "tx_read_resp_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_SEND].name = "tx_send_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_TERMINATE].name = "tx_terminate_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_IMM].name = "tx_imm_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_ATOMIC_REQ].name = "tx_atomic_req_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_ATOMIC_RESP].name = "tx_atomic_resp_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_FLUSH_REQ].name = "tx_flush_req_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_FLUSH_RESP].name = "tx_flush_resp_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_ATOMIC_WRITE_REQ].name = "tx_atomic_write_req_bytes",
	[SIWX_CNT_TX_BYTES + SIWX_CLS_ATOMIC_WRITE_RESP].name = "tx_atomic_write_resp_bytes",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_WRITE].name = "rx_write_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_READ_REQ].name = "rx_read_req_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_READ_RESP].name = "rx_read_resp_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_SEND].name = "rx_send_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_TERMINATE].name = "rx_terminate_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_IMM].name = "rx_imm_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_ATOMIC_REQ].name = "rx_atomic_req_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_ATOMIC_RESP].name = "rx_atomic_resp_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_FLUSH_REQ].name = "rx_flush_req_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_FLUSH_RESP].name = "rx_flush_resp_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_ATOMIC_WRITE_REQ].name = "rx_atomic_write_req_fpdus",
	[SIWX_CNT_RX_FPDUS + SIWX_CLS_ATOMIC_WRITE_RESP].name = "rx_atomic_write_resp_fpdus",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_WRITE].name = "rx_write_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_READ_REQ].name = "rx_read_req_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_READ_RESP].name = "rx_read_resp_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_SEND].name = "rx_send_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_TERMINATE].name = "rx_terminate_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_IMM].name = "rx_imm_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_ATOMIC_REQ].name = "rx_atomic_req_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_ATOMIC_RESP].name = "rx_atomic_resp_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_FLUSH_REQ].name = "rx_flush_req_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_FLUSH_RESP].name = "rx_flush_resp_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_ATOMIC_WRITE_REQ].name = "rx_atomic_write_req_bytes",
	[SIWX_CNT_RX_BYTES + SIWX_CLS_ATOMIC_WRITE_RESP].name = "rx_atomic_write_resp_bytes",
	[SIWX_CNT_TERM_TX + SIWX_TERM_RDMAP_CATASTROPHIC].name = "term_tx_rdmap_catastrophic",
	[SIWX_CNT_TERM_TX + SIWX_TERM_RDMAP_PROTECTION].name = "term_tx_rdmap_protection",
	[SIWX_CNT_TERM_TX + SIWX_TERM_RDMAP_OPERATION].name = "term_tx_rdmap_operation",
	[SIWX_CNT_TERM_TX + SIWX_TERM_DDP_CATASTROPHIC].name = "term_tx_ddp_catastrophic",
	[SIWX_CNT_TERM_TX + SIWX_TERM_DDP_TAGGED].name = "term_tx_ddp_tagged",
	[SIWX_CNT_TERM_TX + SIWX_TERM_DDP_UNTAGGED].name = "term_tx_ddp_untagged",
	[SIWX_CNT_TERM_TX + SIWX_TERM_LLP].name = "term_tx_llp",
	[SIWX_CNT_TERM_TX + SIWX_TERM_OTHER].name = "term_tx_other",
	[SIWX_CNT_TERM_RX + SIWX_TERM_RDMAP_CATASTROPHIC].name = "term_rx_rdmap_catastrophic",
	[SIWX_CNT_TERM_RX + SIWX_TERM_RDMAP_PROTECTION].name = "term_rx_rdmap_protection",
	[SIWX_CNT_TERM_RX + SIWX_TERM_RDMAP_OPERATION].name = "term_rx_rdmap_operation",
	[SIWX_CNT_TERM_RX + SIWX_TERM_DDP_CATASTROPHIC].name = "term_rx_ddp_catastrophic",
	[SIWX_CNT_TERM_RX + SIWX_TERM_DDP_TAGGED].name = "term_rx_ddp_tagged",
	[SIWX_CNT_TERM_RX + SIWX_TERM_DDP_UNTAGGED].name = "term_rx_ddp_untagged",
	[SIWX_CNT_TERM_RX + SIWX_TERM_LLP].name = "term_rx_llp",
	[SIWX_CNT_TERM_RX + SIWX_TERM_OTHER].name = "term_rx_other",
	[SIWX_CNT_EVENT + SIWX_EV_CRC_ERROR].name = "crc_errors",
	[SIWX_CNT_EVENT + SIWX_EV_IRD_EXHAUSTED].name = "ird_exhausted",
	[SIWX_CNT_EVENT + SIWX_EV_ORD_WAIT].name = "ord_waits",
	[SIWX_CNT_EVENT + SIWX_EV_SQ_FLUSHED].name = "sq_wrs_flushed",
	[SIWX_CNT_EVENT + SIWX_EV_RQ_FLUSHED].name = "rq_wrs_flushed",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_REV1].name = "mpa_rev1",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_REV2].name = "mpa_rev2",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_ENHANCED].name = "mpa_enhanced",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_RTR_SEND].name = "mpa_rtr_send",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_RTR_WRITE].name = "mpa_rtr_write",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_RTR_READ].name = "mpa_rtr_read",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_CRC].name = "mpa_crc",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_REJECT_SENT].name = "mpa_rejects_sent",
	[SIWX_CNT_EVENT + SIWX_EV_MPA_REJECT_RCVD].name = "mpa_rejects_rcvd",
};

/* RDMAP opcode -> class; -1: not one siw sends or accepts */
static const s8 siwx_op_class[RDMAP_NUM_OPCODES] = {
	[RDMAP_RDMA_WRITE] = SIWX_CLS_WRITE,
	[RDMAP_RDMA_READ_REQ] = SIWX_CLS_READ_REQ,
	[RDMAP_RDMA_READ_RESP] = SIWX_CLS_READ_RESP,
	[RDMAP_SEND] = SIWX_CLS_SEND,
	[RDMAP_SEND_INVAL] = SIWX_CLS_SEND,
	[RDMAP_SEND_SE] = SIWX_CLS_SEND,
	[RDMAP_SEND_SE_INVAL] = SIWX_CLS_SEND,
	[RDMAP_TERMINATE] = SIWX_CLS_TERMINATE,
	[RDMAP_IMM_DATA] = SIWX_CLS_IMM,
	[RDMAP_IMM_DATA_SE] = SIWX_CLS_IMM,
	[RDMAP_ATOMIC_REQ] = SIWX_CLS_ATOMIC_REQ,
	[RDMAP_ATOMIC_RESP] = SIWX_CLS_ATOMIC_RESP,
	[RDMAP_FLUSH_REQ] = SIWX_CLS_FLUSH_REQ,
	[RDMAP_FLUSH_RESP] = SIWX_CLS_FLUSH_RESP,
	[RDMAP_VERIFY_REQ] = -1,
	[RDMAP_VERIFY_RESP] = -1,
	[RDMAP_ATOMIC_WRITE_REQ] = SIWX_CLS_ATOMIC_WRITE_REQ,
	[RDMAP_ATOMIC_WRITE_RESP] = SIWX_CLS_ATOMIC_WRITE_RESP,
};

static inline void siwx_stats_add(struct siw_device *sdev, unsigned int i,
				  u64 val)
{
	if (likely(sdev->stats))
		this_cpu_add(sdev->stats->cnt[i], val);
}

/* To the counter the QP is bound to, if any, else to the device's */
static void siwx_stats_qp_add(struct siw_qp *qp, unsigned int i, u64 val)
{
	struct siwx_qp_stats *qs;

	rcu_read_lock();
	qs = rcu_dereference(qp->xstats);
	if (qs)
		atomic64_add(val, &qs->cnt[i]);
	else
		siwx_stats_add(qp->sdev, i, val);
	rcu_read_unlock();
}

/* per FPDU: one look at the QP's binding for both counts */
static void siwx_stats_fpdu(struct siw_qp *qp, struct iwarp_ctrl *ctrl,
			    unsigned int fpdus, unsigned int bytes)
{
	u8 op = __rdmap_get_opcode(ctrl);
	int cls = op < RDMAP_NUM_OPCODES ? siwx_op_class[op] : -1;
	u16 len = be16_to_cpu(ctrl->mpa_len);
	struct siwx_qp_stats *qs;

	if (cls < 0)
		return;
	rcu_read_lock();
	qs = rcu_dereference(qp->xstats);
	if (qs) {
		atomic64_inc(&qs->cnt[fpdus + cls]);
		atomic64_add(len, &qs->cnt[bytes + cls]);
	} else {
		siwx_stats_add(qp->sdev, fpdus + cls, 1);
		siwx_stats_add(qp->sdev, bytes + cls, len);
	}
	rcu_read_unlock();
}

/* A whole FPDU went to TCP; @ctrl is its header. */
void siwx_stats_tx_fpdu(struct siw_qp *qp, struct iwarp_ctrl *ctrl)
{
	siwx_stats_fpdu(qp, ctrl, SIWX_CNT_TX_FPDUS, SIWX_CNT_TX_BYTES);
}

/* A whole FPDU arrived, its CRC (if any) good; @ctrl is its header. */
void siwx_stats_rx_fpdu(struct siw_qp *qp, struct iwarp_ctrl *ctrl)
{
	siwx_stats_fpdu(qp, ctrl, SIWX_CNT_RX_FPDUS, SIWX_CNT_RX_BYTES);
}

static enum siwx_term_kind siwx_term_kind(struct iwarp_terminate *term)
{
	u8 etype = __rdmap_term_etype(term);

	switch (__rdmap_term_layer(term)) {
	case TERM_ERROR_LAYER_RDMAP:
		if (etype == RDMAP_ETYPE_CATASTROPHIC)
			return SIWX_TERM_RDMAP_CATASTROPHIC;
		if (etype == RDMAP_ETYPE_REMOTE_PROTECTION)
			return SIWX_TERM_RDMAP_PROTECTION;
		if (etype == RDMAP_ETYPE_REMOTE_OPERATION)
			return SIWX_TERM_RDMAP_OPERATION;
		break;
	case TERM_ERROR_LAYER_DDP:
		if (etype == DDP_ETYPE_CATASTROPHIC)
			return SIWX_TERM_DDP_CATASTROPHIC;
		if (etype == DDP_ETYPE_TAGGED_BUF)
			return SIWX_TERM_DDP_TAGGED;
		if (etype == DDP_ETYPE_UNTAGGED_BUF)
			return SIWX_TERM_DDP_UNTAGGED;
		break;
	case TERM_ERROR_LAYER_LLP:
		return SIWX_TERM_LLP;
	}
	return SIWX_TERM_OTHER;
}

/*
 * A Terminate went to TCP (@rx false) or its header arrived (@rx true):
 * counted as an FPDU of class terminate and by its layer and error type.
 */
void siwx_stats_term(struct siw_qp *qp, bool rx, struct iwarp_terminate *term)
{
	enum siwx_term_kind kind = siwx_term_kind(term);

	if (rx) {
		siwx_stats_rx_fpdu(qp, &term->ctrl);
		siwx_stats_qp_add(qp, SIWX_CNT_TERM_RX + kind, 1);
	} else {
		siwx_stats_tx_fpdu(qp, &term->ctrl);
		siwx_stats_qp_add(qp, SIWX_CNT_TERM_TX + kind, 1);
	}
}

void siwx_stats_event(struct siw_device *sdev, enum siwx_stat_event ev)
{
	siwx_stats_add(sdev, SIWX_CNT_EVENT + ev, 1);
}

/* An event of one QP's: counted for the QP's counter if it is bound */
void siwx_stats_qp_event(struct siw_qp *qp, enum siwx_stat_event ev)
{
	siwx_stats_qp_add(qp, SIWX_CNT_EVENT + ev, 1);
}

/* What a connection's MPA handshake negotiated, once it is established. */
void siwx_stats_mpa(struct siw_device *sdev, const struct siw_mpa_neg *neg)
{
	siwx_stats_event(sdev, neg->rev == MPA_REVISION_1 ?
			 SIWX_EV_MPA_REV1 : SIWX_EV_MPA_REV2);
	if (neg->enhanced)
		siwx_stats_event(sdev, SIWX_EV_MPA_ENHANCED);
	if (neg->crc)
		siwx_stats_event(sdev, SIWX_EV_MPA_CRC);
	switch (neg->rtr) {
	case SIW_RTR_SEND:
		siwx_stats_event(sdev, SIWX_EV_MPA_RTR_SEND);
		break;
	case SIW_RTR_WRITE:
		siwx_stats_event(sdev, SIWX_EV_MPA_RTR_WRITE);
		break;
	case SIW_RTR_READ:
		siwx_stats_event(sdev, SIWX_EV_MPA_RTR_READ);
		break;
	}
}

static struct rdma_hw_stats *
siwx_alloc_hw_port_stats(struct ib_device *ibdev, u32 port_num)
{
	return rdma_alloc_hw_stats_struct(siwx_stat_descs,
					  ARRAY_SIZE(siwx_stat_descs),
					  RDMA_HW_STATS_DEFAULT_LIFESPAN);
}

static int siwx_get_hw_stats(struct ib_device *ibdev,
			     struct rdma_hw_stats *stats, u32 port, int index)
{
	struct siw_device *sdev = to_siw_dev(ibdev);
	int cpu, i;

	if (!port || !stats || !sdev->stats)
		return -EINVAL;

	for (i = 0; i < SIWX_NUM_COUNTERS; i++)
		stats->value[i] = 0;
	for_each_possible_cpu(cpu) {
		struct siwx_pcpu_stats *s = per_cpu_ptr(sdev->stats, cpu);

		for (i = 0; i < SIWX_NUM_COUNTERS; i++)
			stats->value[i] += READ_ONCE(s->cnt[i]);
	}
	return SIWX_NUM_COUNTERS;
}

static struct rdma_hw_stats *
siwx_counter_alloc_stats(struct rdma_counter *counter)
{
	return siwx_alloc_hw_port_stats(counter->device, counter->port);
}

/*
 * The RDMA core calls the counter_* ops of one counter under its
 * counter->lock: that serialises the changes to and the walks of a
 * siwx_core_counter's QP list. sdev->counters_lock guards the device's list.
 */
static struct siwx_core_counter *
siwx_counter_find(struct siw_device *sdev, struct rdma_counter *counter)
{
	struct siwx_core_counter *c;

	mutex_lock(&sdev->counters_lock);
	list_for_each_entry(c, &sdev->counters, list) {
		if (c->counter == counter) {
			mutex_unlock(&sdev->counters_lock);
			return c;
		}
	}
	mutex_unlock(&sdev->counters_lock);
	return NULL;
}

static int siwx_counter_bind_qp(struct rdma_counter *counter,
				struct ib_qp *base_qp)
{
	struct siw_device *sdev = to_siw_dev(counter->device);
	struct siw_qp *qp = to_siw_qp(base_qp);
	struct siwx_qp_stats *qs;
	struct siwx_core_counter *c;

	if (rcu_access_pointer(qp->xstats))
		return -EBUSY;
	qs = kzalloc(sizeof(*qs), GFP_KERNEL);
	if (!qs)
		return -ENOMEM;
	c = siwx_counter_find(sdev, counter);
	if (!c) {
		c = kzalloc(sizeof(*c), GFP_KERNEL);
		if (!c) {
			kfree(qs);
			return -ENOMEM;
		}
		c->counter = counter;
		INIT_LIST_HEAD(&c->qps);
		mutex_lock(&sdev->counters_lock);
		list_add(&c->list, &sdev->counters);
		mutex_unlock(&sdev->counters_lock);
	}
	list_add(&qs->list, &c->qps);
	rcu_assign_pointer(qp->xstats, qs);
	base_qp->counter = counter;
	return 0;
}

static int siwx_counter_unbind_qp(struct ib_qp *base_qp)
{
	struct siw_qp *qp = to_siw_qp(base_qp);
	struct siwx_qp_stats *qs = rcu_access_pointer(qp->xstats);
	struct siwx_core_counter *c;
	int i;

	if (!qs || !base_qp->counter)
		return -EINVAL;
	c = siwx_counter_find(qp->sdev, base_qp->counter);
	RCU_INIT_POINTER(qp->xstats, NULL);
	/* no one adds to qs once every reader that saw it is done */
	synchronize_rcu();
	list_del(&qs->list);
	if (c)
		for (i = 0; i < SIWX_NUM_COUNTERS; i++)
			c->unbound[i] += atomic64_read(&qs->cnt[i]);
	kfree(qs);
	base_qp->counter = NULL;
	return 0;
}

static int siwx_counter_update_stats(struct rdma_counter *counter)
{
	struct siwx_core_counter *c;
	struct siwx_qp_stats *qs;
	int i;

	c = siwx_counter_find(to_siw_dev(counter->device), counter);
	for (i = 0; i < SIWX_NUM_COUNTERS; i++)
		counter->stats->value[i] = c ? c->unbound[i] : 0;
	if (!c)
		return 0;
	list_for_each_entry(qs, &c->qps, list)
		for (i = 0; i < SIWX_NUM_COUNTERS; i++)
			counter->stats->value[i] += atomic64_read(&qs->cnt[i]);
	return 0;
}

/* Every QP is unbound by now. */
static int siwx_counter_dealloc(struct rdma_counter *counter)
{
	struct siw_device *sdev = to_siw_dev(counter->device);
	struct siwx_core_counter *c = siwx_counter_find(sdev, counter);

	if (c) {
		mutex_lock(&sdev->counters_lock);
		list_del(&c->list);
		mutex_unlock(&sdev->counters_lock);
		kfree(c);
	}
	return 0;
}

static const struct ib_device_ops siwx_stats_ops = {
	.alloc_hw_port_stats = siwx_alloc_hw_port_stats,
	.get_hw_stats = siwx_get_hw_stats,
	.counter_alloc_stats = siwx_counter_alloc_stats,
	.counter_bind_qp = siwx_counter_bind_qp,
	.counter_dealloc = siwx_counter_dealloc,
	.counter_unbind_qp = siwx_counter_unbind_qp,
	.counter_update_stats = siwx_counter_update_stats,
};

/* Before the device is registered: the RDMA core asks for the layout then. */
int siwx_stats_init(struct siw_device *sdev)
{
	int i;

	for (i = 0; i < SIWX_NUM_COUNTERS; i++)
		if (WARN_ON(!siwx_stat_descs[i].name))
			return -EINVAL;

	INIT_LIST_HEAD(&sdev->counters);
	mutex_init(&sdev->counters_lock);
	sdev->stats = alloc_percpu(struct siwx_pcpu_stats);
	if (!sdev->stats)
		return -ENOMEM;
	ib_set_device_ops(&sdev->base_dev, &siwx_stats_ops);
	return 0;
}

void siwx_stats_free(struct siw_device *sdev)
{
	free_percpu(sdev->stats);
	sdev->stats = NULL;
}
