/* -*- P4_16 -*- */
/*
 * ironclos.p4: the ironclos pipeline, described in P4_16 for the v1model
 * architecture.
 *
 * ironclos itself is Rust on DPDK; this program is its contract with the
 * control plane. The table and action names below are the names the Rust
 * dataplane uses, and the `p4` crate parses this file at compile time so a
 * test can hold the two together (see p4/src/lib.rs).
 *
 * What lives outside P4:
 *   v1model places a fixed-function traffic manager between Ingress and
 *   Egress. In ironclos that block is Rust code in `dataplane` (QoS) and is
 *   not expressible in P4: buffer accounting per (ingress port, TC) and
 *   (egress port, TC), the eight queues per egress port, ECN marking on
 *   enqueue, PFC generation and reception (and its watchdog), the scheduler
 *   (strict priority + DWRR) and the per-port shaper at line rate. Port I/O,
 *   RX/TX bursts and the poll-mode engine are DPDK, also outside P4.
 *
 * What this program describes today:
 *   - the parser: Ethernet, one or two 802.1Q/802.1ad tags (TPID 0x8100 or
 *     0x88a8), IPv4 (with options), IPv6, UDP and TCP;
 *   - the IPv4 header checksum;
 *   - the one forwarding mode that exists, `io`: every packet received on a
 *     port leaves, unchanged, through its paired port (table `io_forward`).
 * The L2/L3/ECMP/SRv6 tables of DESIGN.md are added here as the Rust
 * pipeline grows them.
 */

#include <core.p4>
#include <v1model.p4>

/*************************************************************************
 * Constants
 *************************************************************************/

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_VLAN = 0x8100;  // 802.1Q C-tag
const bit<16> ETHERTYPE_QINQ = 0x88a8;  // 802.1ad S-tag
const bit<16> ETHERTYPE_IPV6 = 0x86dd;

const bit<8> IP_PROTO_TCP = 6;
const bit<8> IP_PROTO_UDP = 17;

typedef bit<48>  mac_addr_t;
typedef bit<32>  ipv4_addr_t;
typedef bit<128> ipv6_addr_t;

error {
    IPv4IncorrectVersion,
    IPv4HeaderTooShort,
    IPv6IncorrectVersion
}

/*************************************************************************
 * Headers
 *************************************************************************/

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

/* One 802.1Q / 802.1ad tag. The TPID is the preceding header's
 * ether_type; `ether_type` here is the type of what follows the tag. */
header vlan_tag_t {
    bit<3>  pcp;
    bit<1>  dei;
    bit<12> vid;
    bit<16> ether_type;
}

/* The fixed 20 bytes of an IPv4 header. */
header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

/* IPv4 options: (ihl - 5) * 4 bytes, at most 40. */
header ipv4_options_t {
    varbit<320> options;
}

header ipv6_t {
    bit<4>      version;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<20>     flow_label;
    bit<16>     payload_len;
    bit<8>      next_hdr;
    bit<8>      hop_limit;
    ipv6_addr_t src_addr;
    ipv6_addr_t dst_addr;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> len;
    bit<16> checksum;
}

/* TCP options are not parsed: they stay in the payload. */
header tcp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<32> seq_no;
    bit<32> ack_no;
    bit<4>  data_offset;
    bit<4>  res;
    bit<8>  flags;
    bit<16> window;
    bit<16> checksum;
    bit<16> urgent_ptr;
}

struct headers_t {
    ethernet_t     ethernet;
    vlan_tag_t     vlan_outer;
    vlan_tag_t     vlan_inner;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    ipv6_t         ipv6;
    udp_t          udp;
    tcp_t          tcp;
}

struct metadata_t {
    /* Set by a stage that rewrites the IPv4 header (none exists yet: `io`
     * sends packets unchanged). The checksum is only recomputed then, so a
     * packet that arrived with a bad checksum leaves exactly as it came. */
    bit<1> ipv4_rewritten;
}

/*************************************************************************
 * Parser
 *************************************************************************/

parser IroncParser(packet_in packet,
                   out headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {

    state start {
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan_outer;
            ETHERTYPE_QINQ: parse_vlan_outer;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_vlan_outer {
        packet.extract(hdr.vlan_outer);
        transition select(hdr.vlan_outer.ether_type) {
            ETHERTYPE_VLAN: parse_vlan_inner;
            ETHERTYPE_QINQ: parse_vlan_inner;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    /* At most two tags are parsed; a third one is left in the payload. */
    state parse_vlan_inner {
        packet.extract(hdr.vlan_inner);
        transition select(hdr.vlan_inner.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4IncorrectVersion);
        verify(hdr.ipv4.ihl >= 5, error.IPv4HeaderTooShort);
        transition select(hdr.ipv4.ihl) {
            5: parse_ipv4_l4;
            default: parse_ipv4_options;
        }
    }

    state parse_ipv4_options {
        /* The options are ihl - 5 32-bit words. */
        packet.extract(hdr.ipv4_options,
                       (bit<32>)(((bit<16>)hdr.ipv4.ihl - 5) * 32));
        transition parse_ipv4_l4;
    }

    /* Only the first fragment carries the L4 header. */
    state parse_ipv4_l4 {
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, IP_PROTO_TCP): parse_tcp;
            (0, IP_PROTO_UDP): parse_udp;
            default: accept;
        }
    }

    state parse_ipv6 {
        packet.extract(hdr.ipv6);
        verify(hdr.ipv6.version == 6, error.IPv6IncorrectVersion);
        transition select(hdr.ipv6.next_hdr) {
            IP_PROTO_TCP: parse_tcp;
            IP_PROTO_UDP: parse_udp;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition accept;
    }

    state parse_tcp {
        packet.extract(hdr.tcp);
        transition accept;
    }
}

/*************************************************************************
 * Checksum verification
 *************************************************************************/

/* The IPv4 header checksum, with and without options. A mismatch sets
 * standard_metadata.checksum_error; `io` forwards such packets anyway. */
control IroncVerifyChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        verify_checksum(
            hdr.ipv4.isValid() && !hdr.ipv4_options.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.total_len,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.frag_offset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
        verify_checksum(
            hdr.ipv4.isValid() && hdr.ipv4_options.isValid(),
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.total_len,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.frag_offset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

/*************************************************************************
 * Ingress
 *************************************************************************/

control IroncIngress(inout headers_t hdr,
                     inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {

    /* Send the packet out of `port`. */
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    /* Drop the packet. */
    action drop_packet() {
        mark_to_drop(standard_metadata);
    }

    /* Forwarding mode `io`: one entry per port, ingress port -> its paired
     * port. A port without a pair drops what it receives. */
    table io_forward {
        key = {
            standard_metadata.ingress_port : exact;
        }
        actions = {
            forward;
            drop_packet;
        }
        default_action = drop_packet();
        size = 512;
    }

    apply {
        meta.ipv4_rewritten = 0;
        io_forward.apply();
    }
}

/*************************************************************************
 * Egress
 *************************************************************************/

/* Between Ingress and Egress sits the traffic manager, which in ironclos is
 * Rust (see the top of this file). Nothing is done at egress today. */
control IroncEgress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

/*************************************************************************
 * Checksum computation
 *************************************************************************/

control IroncComputeChecksum(inout headers_t hdr, inout metadata_t meta) {
    apply {
        update_checksum(
            hdr.ipv4.isValid() && !hdr.ipv4_options.isValid()
                && meta.ipv4_rewritten == 1,
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.total_len,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.frag_offset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
        update_checksum(
            hdr.ipv4.isValid() && hdr.ipv4_options.isValid()
                && meta.ipv4_rewritten == 1,
            { hdr.ipv4.version,
              hdr.ipv4.ihl,
              hdr.ipv4.dscp,
              hdr.ipv4.ecn,
              hdr.ipv4.total_len,
              hdr.ipv4.identification,
              hdr.ipv4.flags,
              hdr.ipv4.frag_offset,
              hdr.ipv4.ttl,
              hdr.ipv4.protocol,
              hdr.ipv4.src_addr,
              hdr.ipv4.dst_addr,
              hdr.ipv4_options.options },
            hdr.ipv4.hdr_checksum,
            HashAlgorithm.csum16);
    }
}

/*************************************************************************
 * Deparser
 *************************************************************************/

/* emit() writes a header only if it is valid, so one order covers every
 * combination the parser produces. */
control IroncDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan_outer);
        packet.emit(hdr.vlan_inner);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.udp);
        packet.emit(hdr.tcp);
    }
}

/*************************************************************************
 * Switch
 *************************************************************************/

V1Switch(
    IroncParser(),
    IroncVerifyChecksum(),
    IroncIngress(),
    IroncEgress(),
    IroncComputeChecksum(),
    IroncDeparser()
) main;
