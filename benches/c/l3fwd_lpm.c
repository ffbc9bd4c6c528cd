/* SPDX-License-Identifier: Apache-2.0 */
/*
 * l3fwd_lpm.c: a minimal IPv4 L3 forwarder, the reference for ironclos' L3v4 workloads.
 *
 * Per packet: EtherType must be IPv4 (else drop); look the destination up in an rte_fib table
 * (DIR24_8, 4-byte nexthops; one rte_fib_lookup_bulk per burst); drop if there is no route or
 * TTL <= 1; decrement TTL and update the header checksum incrementally (RFC 1624, eqn. 3);
 * rewrite the destination MAC to the nexthop's MAC and the source MAC to the output port's
 * MAC; send out of the nexthop's port. The common loop (common.h) is unidirectional, so every
 * nexthop points to the TX port; a nexthop on another port would be dropped.
 *
 * rte_fib rather than rte_lpm: rte_lpm_add is quadratic in the number of rules (1M routes took
 * 6-7 minutes to load); rte_fib keeps its rules in a RIB tree and loads 1M routes in seconds.
 * The lookup structure is the same DIR-24-8.
 *
 * Route table: the default route 0.0.0.0/0 to nexthop 0, always, so every IPv4 packet matches
 * (added as 0.0.0.0/1 + 128.0.0.0/1 should rte_fib refuse depth 0), plus either
 *
 * --routes N (default 1): N pseudo-random prefixes. The generator is fixed so that other
 * contenders can load the very same table:
 *   state = 0x1c105eed2024ULL; next() = splitmix64(state)
 *   for i in 0..N:  r = next()
 *                   depth  = (r & 31) == 0 ? 25 + ((r >> 5) & 7) : 24   (~97% /24, rest /25../32)
 *                   prefix = (uint32_t)(r >> 32) & mask(depth)           (host byte order)
 *                   nexthop = 1 + i % (NB_NEXTHOPS - 1)
 *   added in that order with rte_fib_add (a repeated prefix just takes the later nexthop).
 * or
 * --routes-file FILE: one prefix `a.b.c.d/len` per line, every one to nexthop 1. Blank lines
 * and lines starting with `#` are ignored, as is anything after the prefix on its line (e.g.
 * `group uplinks`, `via 10.0.0.1`); host bits are cleared.
 *
 * Nexthop h has MAC 02:1c:00:00:hh:hh (h big-endian) and port = the TX port. The FIB gets one
 * tbl8 group per route longer than /24 (an upper bound on what it can need), so it never runs
 * out. The route-load time goes to stderr.
 */
#define CONTENDER "c-l3"
#include "common.h"

#include <ctype.h>

#include <rte_byteorder.h>
#include <rte_fib.h>
#include <rte_ip.h>

#define PREFETCH_OFFSET 3
#define NB_NEXTHOPS 256
/* The FIB's answer when no route matches (its default_nh): beyond every real nexthop. */
#define NO_ROUTE 0x7fffffffULL
/* Nexthop of every --routes-file route. */
#define FILE_NEXTHOP 1
#define ROUTE_SEED 0x1c105eed2024ULL

struct nexthop {
	struct rte_ether_addr mac;
	uint16_t port;
};

struct route {
	uint32_t prefix; /* host byte order, host bits clear */
	uint8_t depth;
	uint8_t nh;
};

static struct rte_fib *fib;
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

static inline uint32_t
depth_mask(uint8_t depth)
{
	return depth == 0 ? 0 : ~UINT32_C(0) << (32 - depth);
}

/* Appends a route to *routes (n used of *cap), growing it. 0, or -1 when out of memory. */
static int
push_route(struct route **routes, uint32_t *n, uint32_t *cap, uint32_t prefix, uint8_t depth,
	   uint8_t nh)
{
	if (*n == *cap) {
		const uint32_t new_cap = *cap == 0 ? 1024 : *cap * 2;
		struct route *grown = realloc(*routes, (size_t)new_cap * sizeof(**routes));

		if (grown == NULL)
			return -1;
		*routes = grown;
		*cap = new_cap;
	}
	(*routes)[(*n)++] = (struct route){ .prefix = prefix & depth_mask(depth), .depth = depth,
					    .nh = nh };
	return 0;
}

/* Parses "a.b.c.d/len" at *p (decimal only), advancing *p past it. 0 on success. */
static int
parse_prefix(const char **p, uint32_t *prefix, uint8_t *depth)
{
	const char *s = *p;
	uint32_t addr = 0;
	unsigned long v;
	int part;

	for (part = 0; part < 5; part++) {
		const char *digits = s;

		v = 0;
		while (isdigit((unsigned char)*s) && s - digits < 3)
			v = v * 10 + (unsigned long)(*s++ - '0');
		if (s == digits || isdigit((unsigned char)*s))
			return -1;
		if (part < 4) {
			if (v > 255 || *s != (part < 3 ? '.' : '/'))
				return -1;
			addr = addr << 8 | (uint32_t)v;
			s++;
		} else if (v > 32) {
			return -1;
		}
	}
	if (*s != '\0' && !isspace((unsigned char)*s))
		return -1;
	*prefix = addr;
	*depth = (uint8_t)v;
	*p = s;
	return 0;
}

/* Reads --routes-file into *routes. 0, or -1 after saying why on stderr. */
static int
read_routes_file(const char *path, struct route **routes, uint32_t *n, uint32_t *cap)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t line_cap = 0;
	unsigned long lineno = 0;
	int ret = 0;

	if (f == NULL) {
		fprintf(stderr, "%s: --routes-file %s: %s\n", CONTENDER, path, strerror(errno));
		return -1;
	}
	while (getline(&line, &line_cap, f) != -1) {
		const char *p = line;
		uint32_t prefix;
		uint8_t depth;

		lineno++;
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '\0' || *p == '#')
			continue;
		if (parse_prefix(&p, &prefix, &depth) != 0) {
			const size_t len = strcspn(line, "\r\n");

			fprintf(stderr, "%s: %s:%lu: not an IPv4 prefix a.b.c.d/len: '%.*s'\n",
				CONTENDER, path, lineno, (int)(len > 80 ? 80 : len), line);
			ret = -1;
			break;
		}
		if (push_route(routes, n, cap, prefix, depth, FILE_NEXTHOP) != 0) {
			fprintf(stderr, "%s: %s: out of memory after %u routes\n", CONTENDER, path,
				*n);
			ret = -1;
			break;
		}
	}
	if (ret == 0 && ferror(f)) {
		fprintf(stderr, "%s: reading %s: %s\n", CONTENDER, path, strerror(errno));
		ret = -1;
	}
	free(line);
	fclose(f);
	return ret;
}

/* rte_fib_add, with depth 0 as its two /1s when depth0 is 0. */
static int
fib_add(uint32_t prefix, uint8_t depth, uint64_t nh, int depth0)
{
	int ret;

	if (depth > 0 || depth0)
		return rte_fib_add(fib, prefix, depth, nh);
	ret = rte_fib_add(fib, 0, 1, nh);
	return ret != 0 ? ret : rte_fib_add(fib, UINT32_C(0x80000000), 1, nh);
}

static int
bench_init(const struct bench_args *args)
{
	struct rte_fib_conf cfg;
	struct route *routes = NULL;
	uint32_t nb_routes = 0, cap = 0, long_routes = 0;
	uint64_t state = ROUTE_SEED;
	uint64_t t0, t1, t2;
	int depth0 = 1;
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

	/* The routes, before the FIB: their count sizes it. */
	t0 = rte_rdtsc();
	if (args->routes_file != NULL) {
		if (read_routes_file(args->routes_file, &routes, &nb_routes, &cap) != 0)
			goto fail;
	}
	for (i = 0; i < args->routes; i++) {
		const uint64_t r = splitmix64(&state);
		const uint8_t depth = (r & 31) == 0 ? (uint8_t)(25 + ((r >> 5) & 7)) : 24;
		const uint32_t nh = 1 + i % (NB_NEXTHOPS - 1);

		if (push_route(&routes, &nb_routes, &cap, (uint32_t)(r >> 32), depth,
			       (uint8_t)nh) != 0) {
			fprintf(stderr, "%s: out of memory generating %u routes\n", CONTENDER,
				args->routes);
			goto fail;
		}
	}
	for (i = 0; i < nb_routes; i++)
		long_routes += routes[i].depth > 24;

	memset(&cfg, 0, sizeof(cfg));
	cfg.type = RTE_FIB_DIR24_8;
	cfg.default_nh = NO_ROUTE;
	cfg.max_routes = (int)(nb_routes + 2); /* + the default route (or its two halves) */
	cfg.dir24_8.nh_sz = RTE_FIB_DIR24_8_4B;
	/* One tbl8 group per /24 holding longer prefixes: at most one per such route. */
	cfg.dir24_8.num_tbl8 = long_routes + 256;
	fib = rte_fib_create("cbench_fib", (int)rte_socket_id(), &cfg);
	if (fib == NULL) {
		fprintf(stderr, "%s: rte_fib_create(max_routes %d, tbl8s %u): %s "
			"(tbl24 + tbl8s + RIB need about 64 MB + 1 KB per tbl8 + ~100 B per route "
			"of DPDK memory: raise -m)\n",
			CONTENDER, cfg.max_routes, cfg.dir24_8.num_tbl8, rte_strerror(rte_errno));
		goto fail;
	}

	t1 = rte_rdtsc();
	/* The default route, first: every later route is then a more specific one. */
	ret = rte_fib_add(fib, 0, 0, 0);
	if (ret != 0) {
		depth0 = 0;
		ret = fib_add(0, 0, 0, depth0);
	}
	if (ret != 0) {
		fprintf(stderr, "%s: rte_fib_add(default route 0.0.0.0/0, or as 0.0.0.0/1 + "
			"128.0.0.0/1): %s\n", CONTENDER, rte_strerror(-ret));
		goto fail;
	}
	for (i = 0; i < nb_routes; i++) {
		const struct route *rt = &routes[i];

		ret = fib_add(rt->prefix, rt->depth, rt->nh, depth0);
		if (ret != 0) {
			fprintf(stderr, "%s: rte_fib_add(route %u: %u.%u.%u.%u/%u): %s\n", CONTENDER,
				i, rt->prefix >> 24, (rt->prefix >> 16) & 255,
				(rt->prefix >> 8) & 255, rt->prefix & 255, rt->depth,
				rte_strerror(-ret));
			goto fail;
		}
	}
	t2 = rte_rdtsc();
	fprintf(stderr, "%s: loaded %u routes%s%s + default%s into rte_fib (dir24_8, 4-byte "
		"nexthops, max_routes %d, tbl8s %u) in %.3f s (%s %.3f s)\n", CONTENDER, nb_routes,
		args->routes_file != NULL ? " from " : "",
		args->routes_file != NULL ? args->routes_file : "",
		depth0 ? "" : " (as two /1s)", cfg.max_routes, cfg.dir24_8.num_tbl8,
		(double)(t2 - t1) / (double)rte_get_tsc_hz(),
		args->routes_file != NULL ? "reading the file and creating the FIB:" :
					    "generating them and creating the FIB:",
		(double)(t1 - t0) / (double)rte_get_tsc_hz());
	free(routes);
	return 0;
fail:
	free(routes);
	return -1;
}

static inline uint16_t
bench_work(struct rte_mbuf **pkts, uint16_t nb, uint64_t *dropped)
{
	struct rte_mbuf *drop[BENCH_MAX_BURST];
	uint32_t ips[BENCH_MAX_BURST];
	uint64_t nhs[BENCH_MAX_BURST];
	uint8_t is_ipv4[BENCH_MAX_BURST];
	uint16_t nb_drop = 0, nb_fwd = 0, i;

	/* Pass 1: classify and gather the destinations (a non-IPv4 packet looks up 0.0.0.0). */
	for (i = 0; i < nb && i < PREFETCH_OFFSET; i++)
		rte_prefetch0(rte_pktmbuf_mtod(pkts[i], void *));
	for (i = 0; i < nb; i++) {
		const struct rte_mbuf *m = pkts[i];

		if (i + PREFETCH_OFFSET < nb)
			rte_prefetch0(rte_pktmbuf_mtod(pkts[i + PREFETCH_OFFSET], void *));

		const struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, const struct rte_ether_hdr *);
		const struct rte_ipv4_hdr *ip = (const struct rte_ipv4_hdr *)(eth + 1);
		const int ok = eth->ether_type == RTE_BE16(RTE_ETHER_TYPE_IPV4) &&
			       rte_pktmbuf_data_len(m) >= sizeof(*eth) + sizeof(*ip);

		is_ipv4[i] = (uint8_t)ok;
		ips[i] = ok ? rte_be_to_cpu_32(ip->dst_addr) : 0;
	}

	/* One FIB lookup for the whole burst. */
	rte_fib_lookup_bulk(fib, ips, nhs, nb);

	/* Pass 2: TTL, checksum, MACs; compact the forwarded packets in order. */
	for (i = 0; i < nb; i++) {
		struct rte_mbuf *m = pkts[i];
		struct rte_ether_hdr *eth = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
		struct rte_ipv4_hdr *ip = (struct rte_ipv4_hdr *)(eth + 1);
		const uint64_t nh = nhs[i];

		if (unlikely(!is_ipv4[i]))
			goto drop;
		if (unlikely(nh >= NB_NEXTHOPS)) /* NO_ROUTE */
			goto drop;
		const uint8_t ttl = ip->time_to_live;
		if (unlikely(ttl <= 1))
			goto drop;
		const struct nexthop *hop = &nexthops[nh];
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
	rte_fib_free(fib);
	fib = NULL;
}
