/* SPDX-License-Identifier: Apache-2.0 */
/*
 * l3fwd_lpm.c: a minimal IPv4 L3 forwarder, the reference for ironclos' L3v4 workloads.
 *
 * Per packet: EtherType must be IPv4 (else drop); look the destination up in an rte_lpm table;
 * drop if TTL <= 1; decrement TTL and update the header checksum incrementally (RFC 1624,
 * eqn. 3); rewrite the destination MAC to the nexthop's MAC and the source MAC to the output
 * port's MAC; send out of the nexthop's port. The common loop (common.h) is unidirectional, so
 * every nexthop points to the TX port; a nexthop on another port would be dropped.
 *
 * Route table (--routes N, default 1): N pseudo-random prefixes plus a default route to
 * nexthop 0, so every IPv4 packet matches (rte_lpm rejects depth 0, so the default route is
 * added first as 0.0.0.0/1 and 128.0.0.0/1; max_rules = N + 2). The generator is fixed so that other contenders can load the very
 * same table:
 *   state = 0x1c105eed2024ULL; next() = splitmix64(state)
 *   for i in 0..N:  r = next()
 *                   depth  = (r & 31) == 0 ? 25 + ((r >> 5) & 7) : 24   (~97% /24, rest /25../32)
 *                   prefix = (uint32_t)(r >> 32) & mask(depth)           (host byte order)
 *                   nexthop = 1 + i % (NB_NEXTHOPS - 1)
 *   added in that order with rte_lpm_add (a repeated prefix just takes the later nexthop).
 * Nexthop h has MAC 02:1c:00:00:hh:hh (h big-endian) and port = the TX port.
 * The /25../32 share is what keeps 1M routes within 65536 tbl8 groups (about 31k are used).
 */
#define CONTENDER "c-l3"
#include "common.h"

#include <rte_byteorder.h>
#include <rte_ip.h>
#include <rte_lpm.h>

#define PREFETCH_OFFSET 3
#define NB_NEXTHOPS 256
#define LPM_TBL8S 65536
#define ROUTE_SEED 0x1c105eed2024ULL

struct nexthop {
	struct rte_ether_addr mac;
	uint16_t port;
};

static struct rte_lpm *lpm;
static struct nexthop nexthops[NB_NEXTHOPS];
static struct rte_ether_addr out_mac;
static uint16_t out_port;

static inline uint64_t
splitmix64(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int
bench_init(const struct bench_args *args)
{
	struct rte_lpm_config cfg;
	uint64_t state = ROUTE_SEED;
	uint64_t t0, t1;
	uint32_t i;
	int ret;

	out_port = args->tx_port;
	ret = rte_eth_macaddr_get(out_port, &out_mac);
	if (ret != 0) {
		fprintf(stderr, "%s: rte_eth_macaddr_get(port %u): %s\n", CONTENDER, out_port,
			rte_strerror(-ret));
		return -1;
	}
	for (i = 0; i < NB_NEXTHOPS; i++) {
		nexthops[i].mac = (struct rte_ether_addr){
			.addr_bytes = { 0x02, 0x1c, 0x00, 0x00, (uint8_t)(i >> 8), (uint8_t)i }
		};
		nexthops[i].port = args->tx_port;
	}

	memset(&cfg, 0, sizeof(cfg));
	cfg.max_rules = args->routes + 2; /* + the default route's two halves */
	cfg.number_tbl8s = LPM_TBL8S;
	lpm = rte_lpm_create("cbench_lpm", (int)rte_socket_id(), &cfg);
	if (lpm == NULL) {
		fprintf(stderr, "%s: rte_lpm_create(max_rules %u, tbl8s %u): %s "
			"(tbl24 + tbl8s need about 130 MB of DPDK memory: raise -m)\n",
			CONTENDER, cfg.max_rules, cfg.number_tbl8s, rte_strerror(rte_errno));
		return -1;
	}

	t0 = rte_rdtsc();
	/* The default route: rte_lpm rejects depth 0, so 0.0.0.0/0 is added as its two /1s. */
	ret = rte_lpm_add(lpm, 0, 1, 0);
	if (ret == 0)
		ret = rte_lpm_add(lpm, UINT32_C(0x80000000), 1, 0);
	if (ret != 0) {
		fprintf(stderr, "%s: rte_lpm_add(default route as 0.0.0.0/1 + 128.0.0.0/1): %s\n",
			CONTENDER, rte_strerror(-ret));
		return -1;
	}
	for (i = 0; i < args->routes; i++) {
		const uint64_t r = splitmix64(&state);
		const uint8_t depth = (r & 31) == 0 ? (uint8_t)(25 + ((r >> 5) & 7)) : 24;
		const uint32_t mask = ~UINT32_C(0) << (32 - depth);
		const uint32_t prefix = (uint32_t)(r >> 32) & mask;
		const uint32_t nh = 1 + i % (NB_NEXTHOPS - 1);

		ret = rte_lpm_add(lpm, prefix, depth, nh);
		if (ret != 0) {
			fprintf(stderr, "%s: rte_lpm_add(route %u: %u.%u.%u.%u/%u): %s\n", CONTENDER,
				i, prefix >> 24, (prefix >> 16) & 255, (prefix >> 8) & 255,
				prefix & 255, depth, rte_strerror(-ret));
			return -1;
		}
	}
	t1 = rte_rdtsc();
	fprintf(stderr, "%s: loaded %u routes + default into rte_lpm (max_rules %u, tbl8s %u) in "
		"%.3f s\n", CONTENDER, args->routes, cfg.max_rules, cfg.number_tbl8s,
		(double)(t1 - t0) / (double)rte_get_tsc_hz());
	return 0;
}

static inline uint16_t
bench_work(struct rte_mbuf **pkts, uint16_t nb, uint64_t *dropped)
{
	struct rte_mbuf *drop[BENCH_MAX_BURST];
	uint16_t nb_drop = 0, nb_fwd = 0, i;

	for (i = 0; i < nb && i < PREFETCH_OFFSET; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = pkts[i];

		if (i + PREFETCH_OFFSET < nb)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + PREFETCH_OFFSET], void *));

		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
		uint32_t nh;

		if (unlikely(eth->ether_type != RTE_BE16(RTE_ETHER_TYPE_IPV4) ||
			     rte_pktmbuf_data_len(m) < sizeof(*eth) + sizeof(*ip)))
			goto drop;
		if (unlikely(rte_lpm_lookup(lpm, rte_be_to_cpu_32(ip->dst_addr), &nh) != 0))
			goto drop;
		const uint8_t ttl = ip->time_to_live;
		if (unlikely(ttl <= 1))
			goto drop;
		const struct nexthop *hop = &nexthops[nh & (NB_NEXTHOPS - 1)];
		if (unlikely(hop->port != out_port))
			goto drop;

		/* RFC 1624 eqn. 3: HC' = ~(~HC + ~m + m'), m = the 16-bit word TTL|protocol. */
		const uint16_t old_word = (uint16_t)(ttl << 8 | ip->next_proto_id);
		const uint16_t new_word = (uint16_t)(old_word - 0x0100);
		uint32_t sum = (uint16_t)~rte_be_to_cpu_16(ip->hdr_checksum);
		sum += (uint16_t)~old_word;
		sum += new_word;
		sum = (sum & 0xffff) + (sum >> 16);
		sum = (sum & 0xffff) + (sum >> 16);
		ip->hdr_checksum = rte_cpu_to_be_16((uint16_t)~sum);
		ip->time_to_live = (uint8_t)(ttl - 1);

		eth->dst_addr = hop->mac;
		eth->src_addr = out_mac;
		pkts[nb_fwd++] = m;
		continue;
drop:
		drop[nb_drop++] = m;
	}
	if (nb_drop != 0) {
		rte_pktmbuf_free_bulk(drop, nb_drop);
		*dropped += nb_drop;
	}
	return nb_fwd;
}

static void
bench_fini(void)
{
	rte_lpm_free(lpm);
	lpm = NULL;
}
