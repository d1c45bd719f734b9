// SPDX-License-Identifier: GPL-2.0 OR BSD-3-Clause

/*
 * siwx: memory regions on persistent memory, for RDMA Flush.
 *
 * A region registered with IB_ACCESS_FLUSH_PERSISTENT must lie in
 * persistent memory entirely (as rxe requires): siw_umem_is_pmem() and
 * siw_pbl_is_pmem() check every page of a user or kernel region.
 *
 * With the module parameter pmem_nocache, such a region (registered
 * while it is set) is written with cache-bypassing stores
 * (siw_rx_nocache()), so that a persistent Flush of it needs no cache
 * write-back.
 *
 * The hooks calling into this file are in siw_verbs.c, siw_qp_tx.c and
 * siw_qp_rx.c; the prototypes are in siw.h.
 */

#include <linux/errno.h>
#include <linux/types.h>
#include <linux/highmem.h>
#include <linux/ioport.h>
#include <linux/mm.h>
#include <linux/skbuff.h>
#include <linux/string.h>
#include <linux/vmalloc.h>

#include <rdma/ib_verbs.h>

#include "siw.h"
#include "siw_mem.h"

static bool siw_page_is_pmem(struct page *p)
{
	return p && region_intersects(page_to_phys(p), PAGE_SIZE,
				      IORESOURCE_MEM,
				      IORES_DESC_PERSISTENT_MEMORY) ==
		    REGION_INTERSECTS;
}

/*
 * siw_umem_is_pmem()
 *
 * Whether every page of the user memory @umem is persistent memory.
 */
bool siw_umem_is_pmem(struct siw_umem *umem)
{
	int i;

	for (i = 0; i < umem->num_pages; i++) {
		struct page *p = umem->page_chunk[i >> CHUNK_SHIFT]
					 .plist[i & ~CHUNK_MASK];

		if (!siw_page_is_pmem(p))
			return false;
	}
	return umem->num_pages > 0;
}

static struct page *siw_kva_to_page(const void *kva)
{
	if (is_vmalloc_addr(kva))
		return vmalloc_to_page(kva);
	if (virt_addr_valid(kva))
		return virt_to_page(kva);
	return NULL;
}

/*
 * siw_pbl_is_pmem()
 *
 * Whether every page of the @len bytes the kernel memory region @mem
 * (a PBL of kernel virtual addresses) maps is persistent memory.
 */
bool siw_pbl_is_pmem(struct siw_mem *mem, u64 len)
{
	struct siw_pbl *pbl = mem->pbl;
	u64 done = 0;
	unsigned int i;

	if (!mem->is_pbl || !pbl || !len)
		return false;

	for (i = 0; i < pbl->num_buf && done < len; i++) {
		u8 *kva = ib_virt_dma_to_ptr(pbl->pbe[i].addr);
		u8 *p, *end = kva + pbl->pbe[i].size;

		for (p = PTR_ALIGN_DOWN(kva, PAGE_SIZE); p < end;
		     p += PAGE_SIZE)
			if (!siw_page_is_pmem(siw_kva_to_page(p)))
				return false;
		done += pbl->pbe[i].size;
	}
	return done >= len;
}

/*
 * siw_rx_nocache()
 *
 * Place @len bytes of the current skb at @addr of @mem (checked by the
 * caller) with cache-bypassing stores (memcpy_flushcache()), one page
 * or PBL buffer at a time. Maintains the stream's skb position and CRC
 * as siw_rx_data() does. Returns the bytes placed, or -EFAULT.
 */
int siw_rx_nocache(struct siw_rx_stream *srx, struct siw_mem *mem,
		   unsigned int *pbl_idx, u64 addr, int len)
{
	int copied = 0;

	while (len > 0) {
		int chunk = min_t(int, len, PAGE_SIZE - offset_in_page(addr));
		unsigned int consumed = 0;
		struct skb_seq_state st;
		struct page *p = NULL;
		const u8 *data;
		u8 *dst;

		if (!mem->mem_obj) {
			dst = ib_virt_dma_to_ptr(addr);
		} else if (mem->is_pbl) {
			int buf_len;
			dma_addr_t buf = siw_pbl_get_buffer(mem->pbl,
							    addr - mem->va,
							    &buf_len, pbl_idx);

			if (!buf)
				return -EFAULT;
			chunk = min(chunk, buf_len);
			dst = ib_virt_dma_to_ptr(buf);
		} else {
			p = siw_get_upage(mem->umem, addr);
			if (!p)
				return -EFAULT;
			dst = kmap_local_page(p) + offset_in_page(addr);
		}
		skb_prepare_seq_read(srx->skb, srx->skb_offset,
				     srx->skb_offset + chunk, &st);
		while (consumed < chunk) {
			unsigned int n = skb_seq_read(consumed, &data, &st);

			if (!n)
				break;
			n = min_t(unsigned int, n, chunk - consumed);
			memcpy_flushcache(dst + consumed, data, n);
			consumed += n;
		}
		skb_abort_seq_read(&st);
		if (p)
			kunmap_local(dst);
		if (consumed < chunk)
			return -EFAULT;

		if (srx->mpa_crc_hd)
			siw_crc_skb(srx, chunk);

		srx->skb_offset += chunk;
		srx->skb_copied += chunk;
		srx->skb_new -= chunk;
		copied += chunk;
		addr += chunk;
		len -= chunk;
	}
	return copied;
}
