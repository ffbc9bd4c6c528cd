/* The DPDK headers ironclos binds to. Only declarations: no logic lives here. */
#include <rte_config.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>
#include <rte_launch.h>
#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_dev.h>
#include <rte_bus.h>
#include <rte_mbuf.h>
#include <rte_mbuf_dyn.h>
#include <rte_mempool.h>
#include <rte_ring.h>
#include <rte_ether.h>
#include <rte_malloc.h>

/* rte_errno is a per-lcore TLS variable behind a macro; Rust cannot name it. */
int ironclos_rte_errno(void);
