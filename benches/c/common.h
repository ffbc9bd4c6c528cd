/* SPDX-License-Identifier: Apache-2.0 */
/*
 * common.h: everything the three C reference loops share (argument parsing, port setup, the
 * timed rx -> work -> tx loop and the one-line JSON report), so that io_fwd.c, macswap.c and
 * l3fwd_lpm.c differ only in their per-packet work.
 *
 * A program defines CONTENDER (the "contender" name in the report), then includes this file,
 * then defines the three hooks declared below. main() lives here.
 *
 *   PROG [EAL args] -- --rx-port 0 --tx-port 1 --burst 32 --duration 5 [--routes N]
 *        [--routes-file FILE] [--mbufs N]
 *
 * --routes and --routes-file are for the L3 loop (the others accept and ignore them); they
 * exclude each other.
 *
 * Unidirectional: rx only on the RX port, tx only on the TX port, one lcore (the main one).
 * stdout carries exactly one JSON line (and nothing at all on error); DPDK's log, its usage
 * text and every diagnostic go to stderr.
 * Errors exit with status 1.
 */
#ifndef IRONCLOS_CBENCH_COMMON_H
#define IRONCLOS_CBENCH_COMMON_H

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_lcore.h>
#include <rte_log.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_prefetch.h>

#ifndef CONTENDER
#error "define CONTENDER before including common.h"
#endif

#define BENCH_MAX_BURST 512
#define BENCH_NB_DESC 1024
#define BENCH_MBUF_CACHE 256
/* Check the clock (and the stop flag) once every this many loop iterations (power of two). */
#define BENCH_CLOCK_EVERY 64

struct bench_args {
	uint16_t rx_port;
	uint16_t tx_port;
	uint16_t burst;
	double duration_s;
	uint32_t routes;
	/* --routes-file: one IPv4 prefix per line (see l3fwd_lpm.c), or NULL. */
	const char *routes_file;
	uint32_t mbufs;
};

/* ---- Hooks each program provides (after including this file). ---- */

/* Called once the ports are started and before the clock starts. Non-zero: fail (exit 1). */
static int bench_init(const struct bench_args *args);
/*
 * The per-packet work for one received burst. Packets to transmit are left (compacted, in
 * order) in pkts[0..return); the function frees the packets it drops itself and adds them to
 * *dropped.
 */
static inline uint16_t bench_work(struct rte_mbuf **pkts, uint16_t nb, uint64_t *dropped);
/* Called after the loop, before the ports are closed. */
static void bench_fini(void);

/* ---- Shared helpers ---- */

static int bench_eal_up;
static volatile sig_atomic_t bench_stop;

static void
bench_on_signal(int sig)
{
	(void)sig;
	bench_stop = 1;
}

static void __rte_noreturn __rte_format_printf(1, 2)
bench_die(const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: error: ", CONTENDER);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	if (bench_eal_up)
		rte_eal_cleanup();
	exit(1);
}

static void
bench_usage(const char *prog)
{
	fprintf(stderr,
		"usage: %s [EAL args] -- --rx-port P --tx-port P [--burst N (1..%d, default 32)]\n"
		"          [--duration SECONDS (default 5)] [--routes N (default 1)]\n"
		"          [--routes-file FILE (instead of --routes)] [--mbufs N (default 16383)]\n",
		prog, BENCH_MAX_BURST);
}

static uint64_t
bench_parse_u64(const char *opt, const char *val, uint64_t min, uint64_t max)
{
	char *end = NULL;
	unsigned long long v;

	if (val == NULL || *val == '\0' || *val == '-')
		bench_die("%s needs a number, got '%s'", opt, val ? val : "");
	errno = 0;
	v = strtoull(val, &end, 0);
	if (errno != 0 || end == val || *end != '\0' || v < min || v > max)
		bench_die("%s: '%s' is not a number in %" PRIu64 "..%" PRIu64, opt, val, min, max);
	return v;
}

static void
bench_parse_args(int argc, char **argv, struct bench_args *a)
{
	enum {
		OPT_RX = 256, OPT_TX, OPT_BURST, OPT_DURATION, OPT_ROUTES, OPT_ROUTES_FILE,
		OPT_MBUFS, OPT_HELP
	};
	static const struct option longopts[] = {
		{ "rx-port", required_argument, NULL, OPT_RX },
		{ "tx-port", required_argument, NULL, OPT_TX },
		{ "burst", required_argument, NULL, OPT_BURST },
		{ "duration", required_argument, NULL, OPT_DURATION },
		{ "routes", required_argument, NULL, OPT_ROUTES },
		{ "routes-file", required_argument, NULL, OPT_ROUTES_FILE },
		{ "mbufs", required_argument, NULL, OPT_MBUFS },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	int have_rx = 0, have_tx = 0, have_routes = 0;
	int opt;

	a->rx_port = 0;
	a->tx_port = 0;
	a->burst = 32;
	a->duration_s = 5.0;
	a->routes = 1;
	a->routes_file = NULL;
	a->mbufs = 16383;

	optind = 1; /* EAL used getopt before us */
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (opt) {
		case OPT_RX:
			a->rx_port = (uint16_t)bench_parse_u64("--rx-port", optarg, 0, RTE_MAX_ETHPORTS - 1);
			have_rx = 1;
			break;
		case OPT_TX:
			a->tx_port = (uint16_t)bench_parse_u64("--tx-port", optarg, 0, RTE_MAX_ETHPORTS - 1);
			have_tx = 1;
			break;
		case OPT_BURST:
			a->burst = (uint16_t)bench_parse_u64("--burst", optarg, 1, BENCH_MAX_BURST);
			break;
		case OPT_DURATION: {
			char *end = NULL;

			errno = 0;
			a->duration_s = strtod(optarg, &end);
			if (errno != 0 || end == optarg || *end != '\0' ||
			    !(a->duration_s > 0.0 && a->duration_s <= 86400.0))
				bench_die("--duration: '%s' is not a number of seconds in (0, 86400]",
					  optarg);
			break;
		}
		case OPT_ROUTES:
			a->routes = (uint32_t)bench_parse_u64("--routes", optarg, 0, 16u << 20);
			have_routes = 1;
			break;
		case OPT_ROUTES_FILE:
			if (optarg == NULL || *optarg == '\0')
				bench_die("--routes-file needs a file name");
			a->routes_file = optarg;
			break;
		case OPT_MBUFS:
			a->mbufs = (uint32_t)bench_parse_u64("--mbufs", optarg, 1024, 1u << 24);
			break;
		case OPT_HELP:
			bench_usage(argv[0]);
			bench_die("--help given");
		default:
			bench_usage(argv[0]);
			if (optopt != 0)
				bench_die("unknown option or missing value near '%s'",
					  argv[optind - 1]);
			bench_die("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc) {
		bench_usage(argv[0]);
		bench_die("unexpected argument '%s'", argv[optind]);
	}
	if (a->routes_file != NULL) {
		if (have_routes)
			bench_die("--routes and --routes-file exclude each other");
		a->routes = 0; /* no generated routes: the file's only */
	}
	if (!have_rx || !have_tx) {
		bench_usage(argv[0]);
		bench_die("--rx-port and --tx-port are required");
	}
}

static void
bench_check_port(uint16_t port)
{
	if (!rte_eth_dev_is_valid_port(port))
		bench_die("port %u does not exist (%u ports available; create them with --vdev)",
			  port, rte_eth_dev_count_avail());
}

static void
bench_port_setup(uint16_t port, struct rte_mempool *pool)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t nb_rxd = BENCH_NB_DESC, nb_txd = BENCH_NB_DESC;
	int socket, ret;

	bench_check_port(port);
	socket = rte_eth_dev_socket_id(port); /* 22.11 does not check the port id here */
	if (socket < 0)
		socket = (int)rte_socket_id();

	ret = rte_eth_dev_info_get(port, &info);
	if (ret != 0)
		bench_die("port %u: rte_eth_dev_info_get: %s", port, rte_strerror(-ret));

	memset(&conf, 0, sizeof(conf));
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret != 0)
		bench_die("port %u (%s): rte_eth_dev_configure: %s", port, info.driver_name,
			  rte_strerror(-ret));
	ret = rte_eth_dev_adjust_nb_rx_tx_desc(port, &nb_rxd, &nb_txd);
	if (ret != 0)
		bench_die("port %u: rte_eth_dev_adjust_nb_rx_tx_desc: %s", port, rte_strerror(-ret));
	ret = rte_eth_rx_queue_setup(port, 0, nb_rxd, (unsigned int)socket, NULL, pool);
	if (ret != 0)
		bench_die("port %u (%s): rte_eth_rx_queue_setup(%u desc): %s "
			  "(net_pcap infinite_rx needs --mbufs >= packets in the file + --burst)",
			  port, info.driver_name, nb_rxd, rte_strerror(-ret));
	ret = rte_eth_tx_queue_setup(port, 0, nb_txd, (unsigned int)socket, NULL);
	if (ret != 0)
		bench_die("port %u (%s): rte_eth_tx_queue_setup(%u desc): %s", port,
			  info.driver_name, nb_txd, rte_strerror(-ret));
	ret = rte_eth_dev_start(port);
	if (ret != 0)
		bench_die("port %u (%s): rte_eth_dev_start: %s", port, info.driver_name,
			  rte_strerror(-ret));
	(void)rte_eth_promiscuous_enable(port); /* not every vdev supports it: ignore */
}

static void
bench_port_close(uint16_t port)
{
	int ret = rte_eth_dev_stop(port);

	if (ret != 0)
		fprintf(stderr, "%s: warning: port %u: rte_eth_dev_stop: %s\n", CONTENDER, port,
			rte_strerror(-ret));
	ret = rte_eth_dev_close(port);
	if (ret != 0)
		fprintf(stderr, "%s: warning: port %u: rte_eth_dev_close: %s\n", CONTENDER, port,
			rte_strerror(-ret));
}

int
main(int argc, char **argv)
{
	struct rte_mbuf *pkts[BENCH_MAX_BURST];
	struct bench_args args;
	struct rte_mempool *pool;
	uint64_t rx = 0, tx = 0, dropped = 0;
	uint64_t hz, start, stop_at, end;
	uint32_t iter = 0;
	double elapsed;
	int report_fd, ret;

	/*
	 * stdout carries exactly one JSON line. EAL logs to stdout on Linux by default and some
	 * DPDK code printf()s (EAL's usage text): send the log to stderr and point fd 1 at stderr
	 * for the whole run; the report is written to a duplicate of the original stdout.
	 */
	fflush(stdout);
	report_fd = dup(STDOUT_FILENO);
	if (report_fd < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		fprintf(stderr, "%s: error: cannot redirect stdout: %s\n", CONTENDER, strerror(errno));
		return 1;
	}
	rte_openlog_stream(stderr);
	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "%s: error: rte_eal_init: %s\n", CONTENDER, rte_strerror(rte_errno));
		return 1;
	}
	bench_eal_up = 1;
	argc -= ret;
	argv += ret;
	bench_parse_args(argc, argv, &args);
	bench_check_port(args.rx_port);
	bench_check_port(args.tx_port);

	signal(SIGINT, bench_on_signal);
	signal(SIGTERM, bench_on_signal);

	pool = rte_pktmbuf_pool_create("cbench_pool", args.mbufs, BENCH_MBUF_CACHE, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (pool == NULL)
		bench_die("rte_pktmbuf_pool_create(%u mbufs): %s", args.mbufs,
			  rte_strerror(rte_errno));

	bench_port_setup(args.rx_port, pool);
	if (args.tx_port != args.rx_port)
		bench_port_setup(args.tx_port, pool);

	if (bench_init(&args) != 0)
		bench_die("setup of the per-packet work failed");

	const uint16_t rx_port = args.rx_port, tx_port = args.tx_port, burst = args.burst;

	hz = rte_get_tsc_hz();
	start = rte_rdtsc();
	stop_at = start + (uint64_t)(args.duration_s * (double)hz);
	for (;;) {
		if ((++iter & (BENCH_CLOCK_EVERY - 1)) == 0 &&
		    (rte_rdtsc() >= stop_at || bench_stop))
			break;
		const uint16_t nb_rx = rte_eth_rx_burst(rx_port, 0, pkts, burst);
		if (nb_rx == 0)
			continue;
		rx += nb_rx;
		const uint16_t nb_fwd = bench_work(pkts, nb_rx, &dropped);
		const uint16_t nb_tx = rte_eth_tx_burst(tx_port, 0, pkts, nb_fwd);
		tx += nb_tx;
		if (unlikely(nb_tx < nb_fwd)) {
			rte_pktmbuf_free_bulk(&pkts[nb_tx], nb_fwd - nb_tx);
			dropped += nb_fwd - nb_tx;
		}
	}
	end = rte_rdtsc();
	elapsed = (double)(end - start) / (double)hz;

	bench_fini();
	if (rx == 0)
		fprintf(stderr, "%s: warning: received no packet in %.3f s (net_pcap infinite_rx "
			"returns nothing, silently, unless --mbufs >= packets in the file + --burst)\n",
			CONTENDER, elapsed);

	fflush(stdout);
	if (dprintf(report_fd,
		    "{\"contender\":\"%s\",\"rx_packets\":%" PRIu64 ",\"tx_packets\":%" PRIu64
		    ",\"dropped\":%" PRIu64 ",\"elapsed_s\":%.6f,\"mpps\":%.4f}\n",
		    CONTENDER, rx, tx, dropped, elapsed, (double)tx / elapsed / 1e6) < 0)
		bench_die("cannot write the report to stdout: %s", strerror(errno));
	close(report_fd);

	bench_port_close(args.rx_port);
	if (args.tx_port != args.rx_port)
		bench_port_close(args.tx_port);
	rte_mempool_free(pool);
	rte_eal_cleanup();
	return 0;
}

#endif /* IRONCLOS_CBENCH_COMMON_H */
