/* SPDX-License-Identifier: Apache-2.0 */
/*
 * io_fwd.c: bare io-forward reference loop. rx_burst on the RX port, tx_burst the same mbufs on
 * the TX port, free what TX did not take (common.h). No per-packet work at all: the ceiling
 * every ironclos pipeline is compared with.
 */
#define CONTENDER "c-io"
#include "common.h"

static int
bench_init(const struct bench_args *args)
{
	(void)args;
	return 0;
}

static inline uint16_t
bench_work(struct rte_mbuf **pkts, uint16_t nb, uint64_t *dropped)
{
	(void)pkts;
	(void)dropped;
	return nb;
}

static void
bench_fini(void)
{
}
