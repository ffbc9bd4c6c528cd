/* SPDX-License-Identifier: Apache-2.0 */
/*
 * macswap.c: io-forward plus the cheapest real per-packet work, like testpmd's macswap mode:
 * read each packet's Ethernet header and swap its source and destination MAC addresses.
 */
#define CONTENDER "c-macswap"
#include "common.h"

/* Prefetch the packet data this many packets ahead (as DPDK's l3fwd does). */
#define PREFETCH_OFFSET 3

static int
bench_init(const struct bench_args *args)
{
	(void)args;
	return 0;
}

static inline uint16_t
bench_work(struct rte_mbuf **pkts, uint16_t nb, uint64_t *dropped)
{
	uint16_t i;

	(void)dropped;
	for (i = 0; i < nb && i < PREFETCH_OFFSET; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (i = 0; i < nb; i++) {
		if (i + PREFETCH_OFFSET < nb)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + PREFETCH_OFFSET], void *));
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(pkts[i], struct rte_ether_hdr *);
		struct rte_ether_addr tmp = eth->dst_addr;

		eth->dst_addr = eth->src_addr;
		eth->src_addr = tmp;
	}
	return nb;
}

static void
bench_fini(void)
{
}
