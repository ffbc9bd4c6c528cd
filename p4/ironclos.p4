/* -*- P4_16 -*- */
/*
 * ironclos.p4: the ironclos pipeline, described in P4_16 for the v1model
 * architecture.
 *
 * ironclos itself is Rust on DPDK; this program is its contract with the
 * control plane. The table and action names below are the names the Rust
 * dataplane uses, and the `p4` crate parses this file at compile time so a
 * test can hold the two together (see p4/src/lib.rs: SWITCH_TABLES).
 *
 * What lives outside P4:
 *   v1model places a fixed-function traffic manager between Ingress and
 *   Egress. In ironclos that block is Rust code in `dataplane` (QoS) and is
 *   not expressible in P4: buffer accounting per (ingress port, TC) and
 *   (egress port, TC), the eight queues per egress port, ECN marking on
 *   enqueue, PFC generation and reception (and its watchdog), the scheduler
 *   (strict priority + DWRR) and the per-port shaper at line rate. Port I/O,
 *   RX/TX bursts and the poll-mode engine are DPDK, also outside P4. So are
 *   link state (flood copies skip ports that are down, ECMP members behind a
 *   down port leave their groups), MAC aging and the rate limit on
 *   neighbour-resolution requests: the control plane does them here. So is
 *   the egress MTU check (Rust: `Forwarder::exceeds_mtu`, drop reason
 *   `mtu_exceeded` with ICMP Fragmentation Needed / Packet Too Big) and IPv4
 *   fragmentation (dataplane/src/fragment.rs): fragments are new packets
 *   and the errors are built on the CPU, neither described here. In Rust
 *   the MTU check comes before the neighbour's (Forwarder::resolve_target,
 *   as Linux's ip_forward / ip6_forward): a packet too big for its egress
 *   interface is answered while its neighbour is unresolved and asks no
 *   resolution; this program, without the check, would resolve and drop
 *   it as neighbor_unresolved.
 *
 * What this program describes:
 *   - the parser: Ethernet, one or two 802.1Q/802.1ad tags (TPID 0x8100 or
 *     0x88a8), ARP, IPv4 (with options, a source route in their first word
 *     dropped), IPv6, ICMPv6 with the Neighbor
 *     Solicitation/Advertisement target, UDP and TCP;
 *   - the IPv4 header checksum;
 *   - forwarding mode `io`: every packet received on a port leaves,
 *     unchanged, through its paired port (table `io_forward`);
 *   - forwarding mode `switch` (Rust: dataplane/src/pipeline/forward.rs,
 *     `Forwarder::process`): VLAN classification per port role, MAC learning
 *     and bridging with flooding, the router MAC, IPv4/IPv6 LPM per VRF,
 *     ECMP, nexthop rewrite with TTL/hop limit, egress VLAN tagging, and
 *     punts of ARP/ND/local traffic to the CPU.
 * The control plane picks the mode by what it installs: in `switch` mode
 * every port has a `port_vlan` entry, in `io` mode none has one.
 *
 * Comments of the form `Rust: A -> B` name the Rust function (in
 * dataplane/src/pipeline/forward.rs unless another file is named) that does
 * what the P4 table or action next to them does. Drops name the Rust
 * `DropReason` (counters.rs) by its counter name, e.g. `ttl_expired`.
 *
 * SRv6 (Rust: dataplane/src/pipeline/forward/srv6.rs): the SRH parser, the
 * `my_sid` table (End, End.X, End.DT4/DT6/DT46, uN, uA with PSP/USP) and
 * the `srv6_policy` table (H.Encaps, H.Encaps.Red) reached from the LPM
 * action `set_srv6_policy`. Differences from Rust, because a v1model pass
 * applies each table once: one local SID per pass (Rust also processes a
 * following local SID, e.g. uN then the same node's uA, up to
 * MAX_LOCAL_SIDS); the policy carries the route of its first segment as
 * resolved by the control plane (Rust looks it up in the FIB); SRHs with
 * more than SRH_MAX_SEGMENTS segments fail to parse (Rust takes any);
 * ICMPv6 errors are a punt to the CPU with the error in packet_in.
 *
 * Flowlet ECMP (Rust: dataplane/src/tables/flowlet.rs) is here as register
 * arrays indexed by the flow hash and a timestamp comparison (table
 * `ecmp_balance`, registers `flowlet_last_seen` and `flowlet_id`). The
 * `least-loaded` choice reads egress queue depths, which v1model does not
 * give the ingress pipeline: like the traffic manager it is Rust only, and
 * a target of this program places new flowlets at random (LetFlow).
 */

#include <core.p4>
#include <v1model.p4>

/*************************************************************************
 * Constants
 *************************************************************************/

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_ARP  = 0x0806;
const bit<16> ETHERTYPE_VLAN = 0x8100;  // 802.1Q C-tag
const bit<16> ETHERTYPE_QINQ = 0x88a8;  // 802.1ad S-tag
const bit<16> ETHERTYPE_IPV6 = 0x86dd;
const bit<16> ETHERTYPE_MAC_CONTROL = 0x8808;  // PAUSE and PFC frames

const bit<8> IP_PROTO_TCP    = 6;
const bit<8> IP_PROTO_UDP    = 17;
const bit<8> IP_PROTO_ICMPV6 = 58;

/* IPv4 option types (RFC 791 3.1; Rust: wire::ipv4::option): the source
 * routes the switch drops (RFC 7126 4.3, 4.4), and the padding before them. */
const bit<8> IPV4_OPTION_NOP  = 1;
const bit<8> IPV4_OPTION_LSRR = 131;
const bit<8> IPV4_OPTION_SSRR = 137;

const bit<8> ICMPV6_NEIGHBOR_SOLICIT = 135;
const bit<8> ICMPV6_NEIGHBOR_ADVERT  = 136;

const bit<16> ARP_OP_REQUEST = 1;

const bit<48> BROADCAST_MAC = 0xffffffffffff;

/* The port through which the switch hands packets to its control plane.
 * BMv2 drops what is sent to port 511, so the CPU port is the one below.
 * In Rust a punted frame is not sent anywhere: the engine gives it to the
 * slow path (Verdict::Punt, engine/switch.rs). */
const bit<9> CPU_PORT = 510;

/* Receivers of the digests, i.e. messages to the control plane that carry
 * no packet. A packet may ask for two (a new source MAC, then a neighbour
 * to resolve); BMv2 keeps only the last digest of a packet, so such a
 * source MAC is learned from the host's next frame. */
const bit<32> MAC_LEARN_RECEIVER = 1;  // mac_learn_digest_t
const bit<32> RESOLVE_RECEIVER   = 2;  // resolve_digest_t
const bit<32> GLEAN_RECEIVER     = 3;  // glean_digest_t

/* Port roles, set by the actions of `port_vlan` (Rust: spec::PortRole). */
const bit<2> PORT_MODE_ACCESS = 1;
const bit<2> PORT_MODE_TRUNK  = 2;
const bit<2> PORT_MODE_ROUTED = 3;

/* What an LPM entry points at (Rust: spec::RouteTarget). ROUTE_NONE is a
 * miss: no route. */
/* Flowlet balancing modes (Rust: tables::flowlet::BalanceMode). */
const bit<2> BALANCE_HASH       = 0;
const bit<2> BALANCE_FLOWLET    = 1;
const bit<2> BALANCE_PER_PACKET = 2;
/* Entries of the flowlet registers over all groups (Rust: one
 * FlowletTable per group; here each group has a slice, `flowlet_base`). */
#define FLOWLET_ENTRIES 65536

const bit<3> ROUTE_NONE      = 0;
const bit<3> ROUTE_NEXTHOP   = 1;  // RouteTarget::Nexthop
const bit<3> ROUTE_GROUP     = 2;  // RouteTarget::Group
const bit<3> ROUTE_CONNECTED = 3;  // RouteTarget::Connected
const bit<3> ROUTE_LOCAL     = 4;  // RouteTarget::Local
const bit<3> ROUTE_BLACKHOLE = 5;  // RouteTarget::Blackhole
const bit<3> ROUTE_SRV6_POLICY = 6;  // RouteTarget::Srv6Policy

/* SRv6 (RFC 8754, RFC 8986, RFC 9800). */
const bit<8> IP_PROTO_IPV4    = 4;
const bit<8> IP_PROTO_IPV6    = 41;
const bit<8> IP_PROTO_ROUTING = 43;
const bit<8> ROUTING_TYPE_SRH = 4;
#define SRH_MAX_SEGMENTS 8
/* my_sid behaviours (Rust: spec::SidBehavior). */
const bit<3> SRV6_NONE  = 0;
const bit<3> SRV6_END   = 1;  // End, uN
const bit<3> SRV6_END_X = 2;  // End.X, uA
const bit<3> SRV6_DT4   = 3;
const bit<3> SRV6_DT6   = 4;
const bit<3> SRV6_DT46  = 5;
/* ICMPv6 errors asked for by RFC 8986 (Rust: Verdict::DropWithIcmpError),
 * sent by the CPU: the packet is punted with this reason. */
const bit<8> PUNT_ICMPV6_ERROR = 4;

/* Which address the LPM tables look up, and why. */
const bit<2> LOOKUP_NONE = 0;
const bit<2> LOOKUP_IPV4 = 1;
const bit<2> LOOKUP_IPV6 = 2;
const bit<1> PURPOSE_ROUTE = 0;       // the destination of a routed packet
const bit<1> PURPOSE_PUNT_CHECK = 1;  // the target of an ARP request or ND

/* Why a packet goes to the CPU (Rust: pipeline::PuntReason). */
const bit<8> PUNT_NONE  = 0;
const bit<8> PUNT_ARP   = 1;  // PuntReason::Arp
const bit<8> PUNT_ND    = 2;  // PuntReason::NeighborDiscovery
const bit<8> PUNT_LOCAL = 3;  // PuntReason::Local
const bit<8> PUNT_ANNOUNCEMENT = 4;  // PuntReason::Announcement

/* Drop reasons, named after Rust's DropReason counter names
 * (DropReason::as_str in dataplane/src/counters.rs). The numbers are this
 * program's own: they index `drop_counter`. */
const bit<8> DROP_NO_EGRESS_PORT         = 1;   // no_egress_port
const bit<8> DROP_TRUNCATED              = 2;   // truncated
const bit<8> DROP_UNSUPPORTED_VLAN_STACK = 3;   // unsupported_vlan_stack
const bit<8> DROP_VLAN_NOT_ALLOWED       = 4;   // vlan_not_allowed
const bit<8> DROP_INVALID_SOURCE_MAC     = 5;   // invalid_source_mac
const bit<8> DROP_MAC_CONTROL            = 6;   // mac_control
const bit<8> DROP_SAME_PORT              = 7;   // same_port
const bit<8> DROP_NOT_FOR_US             = 8;   // not_for_us
const bit<8> DROP_BAD_IPV4_HEADER        = 9;   // bad_ipv4_header
const bit<8> DROP_BAD_IPV4_CHECKSUM      = 10;  // bad_ipv4_checksum
const bit<8> DROP_BAD_IPV6_HEADER        = 11;  // bad_ipv6_header
const bit<8> DROP_NOT_IP                 = 12;  // not_ip
const bit<8> DROP_TTL_EXPIRED            = 13;  // ttl_expired
const bit<8> DROP_NO_ROUTE               = 14;  // no_route
const bit<8> DROP_BLACKHOLE              = 15;  // blackhole
const bit<8> DROP_NEIGHBOR_UNRESOLVED    = 16;  // neighbor_unresolved
const bit<8> DROP_LINK_LOCAL             = 17;  // link_local
const bit<8> DROP_ECMP_NO_LIVE_MEMBER    = 18;  // ecmp_no_live_member
const bit<8> DROP_SRV6_HOP_LIMIT         = 24;  // srv6_hop_limit
const bit<8> DROP_SRV6_BAD_SRH           = 25;  // srv6_bad_srh
const bit<8> DROP_SRV6_SEGMENTS_LEFT_NOT_ZERO = 26;  // srv6_segments_left_not_zero
const bit<8> DROP_SRV6_UPPER_LAYER       = 27;  // srv6_upper_layer
const bit<8> DROP_SRV6_MALFORMED_HEADERS = 28;  // srv6_malformed_headers
const bit<8> DROP_MARTIAN_SOURCE         = 29;  // martian_source
const bit<8> DROP_RESERVED_MULTICAST     = 30;  // reserved_multicast
const bit<8> DROP_MARTIAN_DESTINATION    = 31;  // martian_destination
const bit<8> DROP_OWN_SOURCE_MAC         = 32;  // own_source_mac
const bit<8> DROP_SOURCE_ROUTE_OPTION    = 33;  // source_route_option
const bit<32> DROP_REASONS = 34;  // size of drop_counter

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

/* Prepended to every packet sent to CPU_PORT (P4Runtime PacketIn). Rust:
 * the fields of Verdict::Punt plus the ingress port the engine knows. */
@controller_header("packet_in")
header packet_in_t {
    bit<9>  ingress_port;
    bit<7>  padding;
    bit<16> interface;  // the L3 interface the packet arrived on
    bit<8>  reason;     // PUNT_*
}

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

/* ARP for IPv4 over Ethernet (28 bytes). Like Rust, the hardware and
 * protocol types are not checked: the opcode and the target address are
 * what the punt decision reads. */
/* IEEE 802.1Qbb PFC (opcode 0x0101) or 802.3x PAUSE (opcode 0x0001):
 * REFERENCE.md 1.1. Rust: qos::pfc::parse / encode. PAUSE carries only
 * time0. */
header mac_control_t {
    bit<16> opcode;
    bit<8>  reserved;
    bit<8>  class_enable;  // bit n: time n is valid for priority (TC) n
    bit<16> time0;
    bit<16> time1;
    bit<16> time2;
    bit<16> time3;
    bit<16> time4;
    bit<16> time5;
    bit<16> time6;
    bit<16> time7;
}

header arp_t {
    bit<16>     hw_type;
    bit<16>     proto_type;
    bit<8>      hw_addr_len;
    bit<8>      proto_addr_len;
    bit<16>     opcode;
    mac_addr_t  sender_hw_addr;
    ipv4_addr_t sender_ip;
    mac_addr_t  target_hw_addr;
    ipv4_addr_t target_ip;
}

/* The fixed 20 bytes of an IPv4 header. */
header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;  // reserved, DF, MF (flags[0:0] is MF)
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

/* Segment Routing Header, fixed part (RFC 8754 section 2). */
header srh_t {
    bit<8>  next_hdr;
    bit<8>  hdr_ext_len;
    bit<8>  routing_type;
    bit<8>  segments_left;
    bit<8>  last_entry;
    bit<8>  flags;
    bit<16> tag;
}

/* One entry of the Segment List. */
header srh_segment_t {
    ipv6_addr_t sid;
}

/* The TLVs after Segment List[Last Entry], up to Hdr Ext Len. */
header srh_tlvs_t {
    varbit<2048> data;
}

/* The first four bytes of every ICMPv6 message. Like Rust, only an ICMPv6
 * header right after the IPv6 header is seen (no extension-header walk). */
header icmpv6_t {
    bit<8>  icmp_type;
    bit<8>  icmp_code;
    bit<16> checksum;
}

/* The body of a Neighbor Solicitation (reserved) or Advertisement (R, S, O
 * flags, reserved) up to the target address; options stay in the payload. */
header ndp_t {
    bit<32>     flags;
    ipv6_addr_t target_addr;
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
    packet_in_t    packet_in;
    ethernet_t     ethernet;
    vlan_tag_t     vlan_outer;
    vlan_tag_t     vlan_inner;
    mac_control_t  mac_control;
    arp_t          arp;
    ipv4_t         ipv4;
    ipv4_options_t ipv4_options;
    /* H.Encaps: the outer IPv6 header and SRH pushed in front. */
    ipv6_t         encap_ipv6;
    srh_t          encap_srh;
    srh_segment_t[4] encap_segments;
    ipv6_t         ipv6;
    srh_t          srh;
    srh_segment_t[SRH_MAX_SEGMENTS] srh_segments;
    srh_tlvs_t     srh_tlvs;
    /* A packet inside IPv6 (next header 4 or 41, after the SRH if any). */
    ipv4_t         inner_ipv4;
    ipv6_t         inner_ipv6;
    icmpv6_t       icmpv6;
    ndp_t          ndp;
    udp_t          udp;
    tcp_t          tcp;
}

/* Digest: a source MAC to learn, or one that moved (Rust:
 * tables::mac::MacTable::learn). */
struct mac_learn_digest_t {
    mac_addr_t src_addr;
    bit<12>    vid;
    bit<9>     ingress_port;
}

/* Digest: resolve this nexthop's MAC (Rust: ControlRequest::Resolve with
 * the nexthop's interface and address). */
struct resolve_digest_t {
    bit<32> nexthop;
}

/* Digest: resolve a host on a connected subnet (Rust: Forwarder::glean,
 * which sends ControlRequest::Resolve { interface, ip }). An IPv4 address
 * is in the low 32 bits of `ip`. */
struct glean_digest_t {
    bit<16>     interface;
    bit<8>      ip_version;  // 4 or 6
    ipv6_addr_t ip;
}

struct metadata_t {
    /* Set when a stage rewrote the IPv4 header (TTL). The checksum is only
     * recomputed then, so a packet forwarded in `io` mode with a bad
     * checksum leaves exactly as it came. */
    bit<1>  ipv4_rewritten;
    /* The parser saw a source route (LSRR or SSRR) as the first IPv4 option
     * after up to three NOPs (parse_ipv4_options). */
    bit<1>  ipv4_source_route;
    /* 1 once `port_vlan` knows the port: the packet takes the switch
     * pipeline, not `io`. */
    bit<1>  switch_mode;
    bit<2>  port_mode;          // PORT_MODE_*
    bit<16> ether_type;         // after the tag, if any
    bit<32> l2_len;             // 14, or 18 with a tag
    /* The VLAN of a bridged frame after classification; for a routed
     * packet, the VLAN it leaves in (0 for a routed port). */
    bit<12> vid;
    bit<16> port_interface;     // set_routed_interface: the port's interface
    bit<16> l3_interface;       // route_packet: the receiving L3 interface
    bit<16> vrf;
    bit<1>  flooded;
    bit<1>  routed;
    /* LPM lookup: which table, which address, and why. */
    bit<2>  lookup;             // LOOKUP_*
    bit<1>  purpose;            // PURPOSE_*
    ipv4_addr_t lookup_ipv4;
    ipv6_addr_t lookup_ipv6;
    bit<3>  route_kind;         // ROUTE_*
    bit<32> ecmp_group_id;
    /* Flowlet balancing of the group (Rust: tables::flowlet::BalanceSpec),
     * from `ecmp_balance`. */
    bit<2>  balance_mode;       // BALANCE_*
    bit<48> flowlet_timeout;    // microseconds (v1model timestamps)
    bit<32> flowlet_base;       // the group's first entry in the registers
    bit<32> flowlet_mask;       // its table size - 1 (a power of two)
    bit<32> flowlet_index;
    /* Rust: the flowlet entry's id; part of the member selection, so a new
     * flowlet re-draws its member and a continuing one keeps it. */
    bit<16> flowlet_id;
    bit<32> nexthop_id;
    /* The ECMP flow key (Rust: tables::flowhash::FlowKey). IPv4 addresses
     * are zero-extended; ports are 0 for other protocols and fragments. */
    ipv6_addr_t flow_src;
    ipv6_addr_t flow_dst;
    bit<8>  flow_protocol;
    bit<16> flow_src_port;
    bit<16> flow_dst_port;
    bit<20> flow_label;         // IPv6 only, 0 for IPv4
    bit<8>  punt_reason;        // PUNT_*
    bit<8>  drop_reason;        // DROP_*
    /* Classification (Rust: qos::classify). */
    bit<1>  trust_pcp;          // qos_trust: 0 DSCP, 1 PCP
    bit<6>  dscp;
    bit<3>  pcp;                // of the outer tag, 0 when untagged
    bit<3>  tc;                 // traffic class = egress queue = PFC priority
    bit<1>  lossless;           // lossless_tc: never RED- or tail-dropped
    /* ECN profile of (egress port, tc) (Rust: qos::ecn::EcnCurve). */
    bit<19> ecn_kmin;
    bit<19> ecn_kmax;
    bit<32> ecn_slope;          // pmax * 2^32 / (kmax - kmin), per depth unit
    /* SRv6: my_sid's result and what the behaviour decided. */
    bit<3>  srv6_behavior;      // SRV6_*
    bit<1>  srv6_processed;     // the endpoint already took a hop
    bit<1>  srv6_adjacency;     // End.X / uA: the target is set, no LPM
    bit<1>  srv6_psp;
    bit<1>  srv6_usp;
    bit<1>  srv6_csid;          // NEXT-C-SID (uN, uA)
    bit<8>  other_routing_segments_left;  // a Routing header of another type than 4
    ipv6_addr_t srv6_block_mask;
    ipv6_addr_t srv6_argument_mask;
    bit<8>  srv6_shift;
    bit<16> srv6_table;         // End.DT*: VRF of the inner lookup
    bit<8>  srh_segments_to_parse;
    bit<32> icmp_pointer;
    mac_learn_digest_t learn;
    resolve_digest_t   resolve;
    glean_digest_t     glean;
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
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            ETHERTYPE_MAC_CONTROL: parse_mac_control;
            default: accept;
        }
    }

    state parse_mac_control {
        packet.extract(hdr.mac_control);
        transition accept;
    }

    state parse_vlan_outer {
        packet.extract(hdr.vlan_outer);
        transition select(hdr.vlan_outer.ether_type) {
            ETHERTYPE_VLAN: parse_vlan_inner;
            ETHERTYPE_QINQ: parse_vlan_inner;
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    /* At most two tags are parsed; a third one is left in the payload. The
     * switch pipeline drops double-tagged frames (unsupported_vlan_stack);
     * `io` forwards them. */
    state parse_vlan_inner {
        packet.extract(hdr.vlan_inner);
        transition select(hdr.vlan_inner.ether_type) {
            ETHERTYPE_ARP: parse_arp;
            ETHERTYPE_IPV4: parse_ipv4;
            ETHERTYPE_IPV6: parse_ipv6;
            default: accept;
        }
    }

    state parse_arp {
        packet.extract(hdr.arp);
        transition accept;
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

    /* Source routes (Rust: wire::ipv4::scan_options, called from
     * Forwarder::route_ipv4; drop reason source_route_option). Rust walks the
     * whole option list; a v1model parser cannot walk inside the varbit
     * below, so this looks at the first option word only (there is one:
     * ihl > 5): an LSRR or SSRR type as its first byte, or after one, two or
     * three NOPs, which is where senders put it (Linux pads LSRR with one NOP
     * in front). Not seen here, and only dropped by Rust: a source route
     * after another option or after four or more NOPs, and a malformed
     * option list (Rust: bad_ipv4_header); nor are the options of an IPv4
     * packet inside SRv6 (inner_ipv4 has none parsed), which Rust checks when
     * End.DT4 routes it. */
    state parse_ipv4_options {
        transition select(packet.lookahead<bit<32>>()[31:24],
                          packet.lookahead<bit<32>>()[23:16],
                          packet.lookahead<bit<32>>()[15:8],
                          packet.lookahead<bit<32>>()[7:0]) {
            (IPV4_OPTION_LSRR, _, _, _): parse_ipv4_source_route;
            (IPV4_OPTION_SSRR, _, _, _): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_LSRR, _, _): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_SSRR, _, _): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_LSRR, _): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_SSRR, _): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_LSRR): parse_ipv4_source_route;
            (IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_NOP, IPV4_OPTION_SSRR): parse_ipv4_source_route;
            default: parse_ipv4_option_bytes;
        }
    }

    state parse_ipv4_source_route {
        meta.ipv4_source_route = 1;
        transition parse_ipv4_option_bytes;
    }

    state parse_ipv4_option_bytes {
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
            IP_PROTO_ICMPV6: parse_icmpv6;
            IP_PROTO_ROUTING: parse_routing;
            IP_PROTO_IPV4: parse_inner_ipv4;
            IP_PROTO_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    /* A Routing header: only type 4 (SRH) is parsed. Rust:
     * wire::walk_extension_headers, wire::srh::SrhPacket. */
    state parse_routing {
        transition select(packet.lookahead<bit<24>>()[7:0]) {
            ROUTING_TYPE_SRH: parse_srh;
            default: parse_other_routing;
        }
    }

    /* Another Routing type: only its Segments Left is kept, for RFC 8200
     * 4.4 (Rust: srv6::unrecognized_routing_header, which also walks
     * chains this parser does not). */
    state parse_other_routing {
        meta.other_routing_segments_left = packet.lookahead<bit<32>>()[7:0];
        transition accept;
    }

    state parse_srh {
        packet.extract(hdr.srh);
        meta.srh_segments_to_parse = hdr.srh.last_entry + 1;
        transition parse_srh_segment;
    }

    /* Segment List[0..Last Entry]. More than SRH_MAX_SEGMENTS is a parser
     * error (StackOutOfBounds). */
    state parse_srh_segment {
        packet.extract(hdr.srh_segments.next);
        meta.srh_segments_to_parse = meta.srh_segments_to_parse - 1;
        transition select(meta.srh_segments_to_parse) {
            0: parse_srh_tlvs;
            default: parse_srh_segment;
        }
    }

    /* (Hdr Ext Len + 1) * 8 bytes in all; a Last Entry past that is a
     * negative length here, which fails the extract (Rust: the drop and
     * Parameter Problem of RFC 8986 S05 come from the apply block when the
     * header parsed). */
    state parse_srh_tlvs {
        packet.extract(hdr.srh_tlvs,
                       (bit<32>)(((bit<16>)hdr.srh.hdr_ext_len * 8
                                  - ((bit<16>)hdr.srh.last_entry + 1) * 16) * 8));
        transition select(hdr.srh.next_hdr) {
            IP_PROTO_IPV4: parse_inner_ipv4;
            IP_PROTO_IPV6: parse_inner_ipv6;
            default: accept;
        }
    }

    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        transition accept;
    }

    state parse_inner_ipv6 {
        packet.extract(hdr.inner_ipv6);
        transition accept;
    }

    state parse_icmpv6 {
        packet.extract(hdr.icmpv6);
        transition select(hdr.icmpv6.icmp_type) {
            ICMPV6_NEIGHBOR_SOLICIT: parse_ndp;
            ICMPV6_NEIGHBOR_ADVERT: parse_ndp;
            default: accept;
        }
    }

    /* Rust reads the target at bytes 24..40 after the IPv6 header and does
     * not punt a shorter message; here a short one leaves `ndp` invalid. */
    state parse_ndp {
        packet.extract(hdr.ndp);
        transition accept;
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
 * standard_metadata.checksum_error: `io` forwards such packets anyway, the
 * switch pipeline drops them when it would route them (bad_ipv4_checksum),
 * and bridges them unchanged like Rust. */
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

    /* Packets dropped by the switch pipeline, per reason (Rust:
     * counters::WorkerCounters::drop_packets, one counter per DropReason). */
    counter(DROP_REASONS, CounterType.packets) drop_counter;
    /* PFC frames received per (ingress port, priority): index port * 8 + n.
     * Rust: QueueCounters::pfc_rx_frames. */
    counter(4096, CounterType.packets) pfc_rx_counter;
    /* Routed packets flooded in their neighbour's VLAN because its MAC
     * missed `mac_table` (Rust: WorkerCounters::routed_flooded). Not a drop.
     * Learn digests the control plane cannot install for a full table are
     * its count (Rust: WorkerCounters::mac_table_full). */
    counter(1, CounterType.packets) routed_flood_counter;
    /* The router MAC, written once by the control plane (index 0): frames
     * from it are the switch's own come back, or a spoof (Rust:
     * SwitchSpec::router_mac; the router_mac table matches it as a
     * destination). */
    register<bit<48>>(1) router_mac_value;

    /* ----------------------------------------------------------------
     * Common actions
     * ---------------------------------------------------------------- */

    /* Send the packet out of `port`. */
    action forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    /* Drop the packet. As a table's default it is the miss: the apply
     * block names the reason. */
    action drop_packet() {
        mark_to_drop(standard_metadata);
    }

    /* Drop the packet and count it under `reason` (DROP_*). Rust: a
     * Verdict::Drop(reason), counted by the engine. */
    action drop_with_reason(bit<8> reason) {
        meta.drop_reason = reason;
        drop_counter.count((bit<32>)reason);
        mark_to_drop(standard_metadata);
    }

    /* Hand the packet to the control plane through CPU_PORT, with the
     * reason (meta.punt_reason, set before) and the L3 interface it arrived
     * on in a packet_in header. The packet is not forwarded.
     * Rust: Verdict::Punt { reason, interface }. */
    action punt_to_cpu() {
        standard_metadata.egress_spec = CPU_PORT;
        hdr.packet_in.setValid();
        hdr.packet_in.ingress_port = standard_metadata.ingress_port;
        hdr.packet_in.padding = 0;
        hdr.packet_in.interface = meta.l3_interface;
        hdr.packet_in.reason = meta.punt_reason;
    }

    /* ----------------------------------------------------------------
     * Forwarding mode `io`
     * ---------------------------------------------------------------- */

    /* Forwarding mode `io`: one entry per port, ingress port -> its paired
     * port. A port without a pair drops what it receives.
     * Rust: engine/io.rs (ports in pairs, frames not looked at). */
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

    /* ----------------------------------------------------------------
     * VLAN classification
     * ---------------------------------------------------------------- */

    /* Rust: Forwarder::process -> match port.mode, PortMode::Access. */
    action set_access_vlan(bit<12> vid) {
        meta.port_mode = PORT_MODE_ACCESS;
        meta.vid = vid;
    }

    /* Rust: Forwarder::process -> match port.mode, PortMode::Trunk. The VID
     * comes from the tag; `vlan_membership` checks it. */
    action set_trunk() {
        meta.port_mode = PORT_MODE_TRUNK;
    }

    /* Rust: Forwarder::process -> match port.mode, PortMode::Routed ->
     * Forwarder::routed_port_ingress. */
    action set_routed_interface(bit<16> interface) {
        meta.port_mode = PORT_MODE_ROUTED;
        meta.port_interface = interface;
    }

    /* The role of each port (Rust: spec::PortRole, kept in
     * Forwarder::ports). A port without an entry is not a switch port: the
     * packet takes `io_forward`, whose default drops it (Rust: a port the
     * forwarder does not know drops with no_egress_port). */
    table port_vlan {
        key = {
            standard_metadata.ingress_port : exact;
        }
        actions = {
            set_access_vlan;
            set_trunk;
            set_routed_interface;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = 512;
    }

    /* The tagged VLAN is allowed on this trunk.
     * Rust: Forwarder::process -> `allowed` bitmap of PortMode::Trunk. */
    action allow_vlan() {
    }

    /* An untagged or priority-tagged (VID 0) frame on a trunk belongs to
     * its native VLAN. Installed with key (port, 0).
     * Rust: Forwarder::process -> PortMode::Trunk `native`. */
    action set_native_vlan(bit<12> vid) {
        meta.vid = vid;
    }

    /* Trunk membership: (port, vid) -> allow_vlan for each allowed VLAN,
     * (port, 0) -> set_native_vlan(native) if the trunk has one. A miss
     * drops: vlan_not_allowed. */
    table vlan_membership {
        key = {
            standard_metadata.ingress_port : exact;
            meta.vid                       : exact;
        }
        actions = {
            allow_vlan;
            set_native_vlan;
            drop_packet;
        }
        default_action = drop_packet();
        size = 16384;
    }

    /* ----------------------------------------------------------------
     * MAC learning and bridging
     * ---------------------------------------------------------------- */

    /* The source MAC is known on this VLAN.
     * Rust: Forwarder::process -> macs.learn (LearnOutcome::Refreshed). */
    action mac_known() {
    }

    /* Tell the control plane to learn (vid, src MAC) -> ingress port: it
     * installs a `mac_table` entry and a `mac_learn` entry.
     * Rust: Forwarder::process -> macs.learn (LearnOutcome::Learned; a full
     * table refuses it, counted in mac_table_full: the frame is still
     * forwarded). */
    action learn_mac() {
        meta.learn.src_addr = hdr.ethernet.src_addr;
        meta.learn.vid = meta.vid;
        meta.learn.ingress_port = standard_metadata.ingress_port;
        digest<mac_learn_digest_t>(MAC_LEARN_RECEIVER, meta.learn);
    }

    /* Source MACs already learned. Hits refresh the entry's idle time,
     * which is how the control plane ages MACs (Rust:
     * Forwarder::age_macs). The key has no port, so a station that moves
     * to another port is relearned when its entry ages out; Rust
     * relearns at once (LearnOutcome::Moved, counted in mac_moves).
     * Static MACs (Rust: spec::StaticMac) are entries that never age. */
    table mac_learn {
        key = {
            meta.vid               : exact;
            hdr.ethernet.src_addr  : exact;
        }
        actions = {
            mac_known;
            learn_mac;
        }
        default_action = learn_mac();
        support_timeout = true;
        size = 65536;
    }

    /* The destination is behind `port`.
     * Rust: Forwarder::process -> macs.lookup -> Verdict::Forward. */
    action l2_forward(bit<9> port) {
        standard_metadata.egress_spec = port;
    }

    /* Copy to every member of the VLAN but the ingress port: multicast
     * group N holds the ports of VLAN N (egress drops the copy to the
     * ingress port and tags each copy per its port).
     * Rust: Verdict::Flood { vlan, .. } -> SwitchWorker::flood
     * (engine/switch.rs). */
    action flood() {
        standard_metadata.mcast_grp = (bit<16>)meta.vid;
        meta.flooded = 1;
    }

    /* (vid, dst MAC) -> port. Also looked up for a packet routed into a
     * VLAN (after `nexthop` set meta.vid and the destination MAC).
     * Rust: Forwarder::process -> macs.lookup, Forwarder::egress_l2 ->
     * macs.lookup. */
    table mac_table {
        key = {
            meta.vid              : exact;
            hdr.ethernet.dst_addr : exact;
        }
        actions = {
            l2_forward;
            flood;
        }
        default_action = flood();
        size = 65536;
    }

    /* ----------------------------------------------------------------
     * Router MAC and L3 interfaces
     * ---------------------------------------------------------------- */

    /* The frame is for L3 interface `interface`: the VLAN's SVI or the
     * routed port's interface.
     * Rust: Forwarder::process -> self.vlans[vlan].interface with
     * dst == router_mac -> Forwarder::route; Forwarder::routed_port_ingress. */
    action route_packet(bit<16> interface) {
        meta.l3_interface = interface;
    }

    /* Which frames an L3 interface receives. Key: the VLAN (bridged ports,
     * port_interface 0) or the routed port's interface (vid 0), and the
     * destination MAC. Per L3 interface two entries:
     *   - the router MAC, exact: route the packet;
     *   - multicast (01:00:00:00:00:00 &&& 01:00:00:00:00:00): look for
     *     ARP/ND for the switch (Rust: Forwarder::punt_if_for_us), flood the
     *     rest in a VLAN, drop it on a routed port (not_for_us).
     * A miss bridges (VLAN) or drops (routed port: not_for_us). */
    table router_mac {
        key = {
            meta.vid              : exact;
            meta.port_interface   : exact;
            hdr.ethernet.dst_addr : ternary;
        }
        actions = {
            route_packet;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = 8192;
    }

    /* Rust: InterfaceSpec::vrf, read in Forwarder::route. */
    action set_vrf(bit<16> vrf) {
        meta.vrf = vrf;
    }

    /* L3 interface -> VRF. An interface without an entry is in VRF 0. */
    table l3_interface {
        key = {
            meta.l3_interface : exact;
        }
        actions = {
            set_vrf;
        }
        default_action = set_vrf(0);
        size = 4096;
    }

    /* ----------------------------------------------------------------
     * Routing: LPM per VRF, ECMP, nexthops
     *
     * The LPM actions only record the target (Rust: route_value::decode);
     * the apply block acts on it in Rust's order
     * (Forwarder::route_ipv4/route_ipv6, then Forwarder::resolve_target).
     * ---------------------------------------------------------------- */

    /* Rust: RouteTarget::Nexthop(id). Also the action of `ecmp_group`
     * members (Rust: EcmpGroup::select returns a nexthop id). */
    action set_nexthop(bit<32> nexthop) {
        meta.route_kind = ROUTE_NEXTHOP;
        meta.nexthop_id = nexthop;
    }

    /* Rust: RouteTarget::Group(id). */
    action set_ecmp_group(bit<32> group) {
        meta.route_kind = ROUTE_GROUP;
        meta.ecmp_group_id = group;
    }

    /* A connected subnet on `interface`: a host in it whose MAC is not
     * known (no host route yet) is resolved on demand.
     * Rust: RouteTarget::Connected(interface) -> Forwarder::glean. */
    action glean(bit<16> interface) {
        meta.route_kind = ROUTE_CONNECTED;
        meta.glean.interface = interface;
    }

    /* One of the switch's own addresses (a /32 or /128 per interface
     * address). Rust: RouteTarget::Local -> PuntReason::Local. */
    action punt_local() {
        meta.route_kind = ROUTE_LOCAL;
    }

    /* A null route. Rust: RouteTarget::Blackhole -> blackhole. */
    action blackhole() {
        meta.route_kind = ROUTE_BLACKHOLE;
    }

    /* Rust: Forwarder::route_ipv4 -> self.fib4[vrf].lookup (tables::Lpm4).
     * A miss is no_route (default drop_packet). Also looked up with the
     * target of an ARP request: a punt_local hit means "for the switch". */
    table ipv4_lpm {
        key = {
            meta.vrf         : exact;
            meta.lookup_ipv4 : lpm;
        }
        actions = {
            set_nexthop;
            set_ecmp_group;
            glean;
            punt_local;
            blackhole;
            set_srv6_policy;
            drop_packet;
        }
        default_action = drop_packet();
        size = 65536;
    }

    /* Rust: Forwarder::route_ipv6 -> self.fib6[vrf].lookup (tables::Lpm6).
     * A miss is no_route. Also looked up with the target of a Neighbor
     * Solicitation/Advertisement. */
    table ipv6_lpm {
        key = {
            meta.vrf         : exact;
            meta.lookup_ipv6 : lpm;
        }
        actions = {
            set_nexthop;
            set_ecmp_group;
            glean;
            punt_local;
            blackhole;
            set_srv6_policy;
            drop_packet;
        }
        default_action = drop_packet();
        size = 16384;
    }

    /* ----------------------------------------------------------------
     * Flowlets (Rust: tables::flowlet). Per entry: the time of the last
     * packet and the flowlet id (the P4 reference programs' layout). A
     * packet of a group in flowlet mode uses entry
     * base + (hash(flow) & mask); if more than the timeout has passed since
     * that entry's last packet, a new flowlet starts with a new random id.
     * The id is hashed into the member selection, so a flowlet keeps its
     * member and a new one draws again (Rust: `random` choice). A member
     * that goes down leaves the selector group (control plane), so its
     * flowlets move at once, as in Rust.
     * ---------------------------------------------------------------- */
    register<bit<48>>(FLOWLET_ENTRIES) flowlet_last_seen;
    register<bit<16>>(FLOWLET_ENTRIES) flowlet_id;

    /* Rust: BalanceMode::Hash (the default: a miss leaves it). */
    action balance_hash() {
        meta.balance_mode = BALANCE_HASH;
    }

    /* Rust: BalanceMode::Flowlet with BalanceSpec::timeout and table_size. */
    action balance_flowlet(bit<48> timeout, bit<32> base, bit<32> mask) {
        meta.balance_mode = BALANCE_FLOWLET;
        meta.flowlet_timeout = timeout;
        meta.flowlet_base = base;
        meta.flowlet_mask = mask;
    }

    /* Rust: BalanceMode::PerPacket. */
    action balance_per_packet() {
        meta.balance_mode = BALANCE_PER_PACKET;
    }

    /* Rust: GroupBalancer (one per group, `Forwarder::balancers`). */
    table ecmp_balance {
        key = {
            meta.ecmp_group_id : exact;
        }
        actions = {
            balance_hash;
            balance_flowlet;
            balance_per_packet;
        }
        default_action = balance_hash();
        size = 1024;
    }

    /* Rust: GroupBalancer::select_flowlet -> FlowletTable::lookup/record.
     * Read, compare and write one entry; `@atomic` keeps two packets of the
     * entry from interleaving on targets that run packets in parallel. */
    action flowlet_step() {
        bit<32> h;
        hash(h, HashAlgorithm.crc32, 32w0,
             { meta.flow_src, meta.flow_dst, meta.flow_protocol,
               meta.flow_src_port, meta.flow_dst_port, meta.flow_label },
             32w0xffffffff);
        meta.flowlet_index = meta.flowlet_base + (h & meta.flowlet_mask);
        bit<48> last;
        bit<16> id;
        @atomic {
            flowlet_last_seen.read(last, meta.flowlet_index);
            flowlet_id.read(id, meta.flowlet_index);
            bit<48> now = standard_metadata.ingress_global_timestamp;
            /* A gap equal to the timeout does not end the flowlet. */
            if (now - last > meta.flowlet_timeout) {
                random(id, 16w0, 16w0xffff);
                flowlet_id.write(meta.flowlet_index, id);
            }
            flowlet_last_seen.write(meta.flowlet_index, now);
        }
        meta.flowlet_id = id;
    }

    /* Group -> one member nexthop, chosen by a hash of the flow.
     * Rust: Forwarder::resolve_target -> EcmpGroup::select(flow_hash(..)).
     * Rust hashes the same fields (tables::flowhash::FlowKey: addresses,
     * protocol, ports, and the IPv6 flow label) with a seeded CRC-32C and a
     * finaliser into weighted buckets; here the target hashes them with CRC32 and a
     * weight is a member repeated in the group. A group with no live member
     * misses: ecmp_no_live_member. No default_action: p4c's BMv2 back end
     * ignores it (with a warning) on tables with an action selector. */
    table ecmp_group {
        key = {
            meta.ecmp_group_id : exact;
            meta.flow_src      : selector;
            meta.flow_dst      : selector;
            meta.flow_protocol : selector;
            meta.flow_src_port : selector;
            meta.flow_dst_port : selector;
            meta.flow_label    : selector;
            meta.flowlet_id    : selector;
        }
        actions = {
            set_nexthop;
        }
        implementation = action_selector(HashAlgorithm.crc32, 32w1024, 32w16);
        size = 1024;
    }

    /* The nexthop is a neighbour on a routed port: send it there.
     * The new source MAC is the router MAC, which is the destination the
     * packet arrived with (router_mac matched it).
     * Rust: Forwarder::egress_l2 with Attachment::Port (TagOp::Pop if the
     * frame came tagged, done at egress here). */
    action rewrite_to_port(bit<9> port, bit<48> dst_mac) {
        standard_metadata.egress_spec = port;
        meta.vid = 0;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
    }

    /* The nexthop is a neighbour in VLAN `vid` (behind an SVI): the port
     * comes from `mac_table`.
     * Rust: Forwarder::egress_l2 with Attachment::Vlan -> macs.lookup. */
    action rewrite_to_vlan(bit<12> vid, bit<48> dst_mac) {
        meta.vid = vid;
        hdr.ethernet.src_addr = hdr.ethernet.dst_addr;
        hdr.ethernet.dst_addr = dst_mac;
    }

    /* The nexthop's MAC is not known: ask the control plane to resolve it
     * and drop the packet (neighbor_unresolved), which is what Rust does:
     * it never holds or forwards the packet while resolving. Rust sends the
     * request at most once per RESOLVE_INTERVAL per nexthop; the control
     * plane rate-limits digests the same way.
     * Rust: Forwarder::resolve_target -> ControlRequest::Resolve. */
    action resolve_nexthop() {
        meta.resolve.nexthop = meta.nexthop_id;
        digest<resolve_digest_t>(RESOLVE_RECEIVER, meta.resolve);
        mark_to_drop(standard_metadata);
    }

    /* Nexthop id -> where and to which MAC. An entry exists once the
     * neighbour is resolved (Rust: Forwarder::neighbor_resolved; removed by
     * neighbor_lost).
     * Rust: Forwarder::resolve_target -> self.nexthops[id].mac. */
    table nexthop {
        key = {
            meta.nexthop_id : exact;
        }
        actions = {
            rewrite_to_port;
            rewrite_to_vlan;
            resolve_nexthop;
        }
        default_action = resolve_nexthop();
        size = 16384;
    }

    /* -- Classification (Rust: qos::classify, qos::PortQos) ---------- */

    /* Which field gives the traffic class on this port (Rust: qos::Trust). */
    action trust_dscp() {
        meta.trust_pcp = 0;
    }

    action trust_pcp() {
        meta.trust_pcp = 1;
    }

    table qos_trust {
        key = {
            standard_metadata.ingress_port : exact;
        }
        actions = {
            trust_dscp;
            trust_pcp;
        }
        default_action = trust_dscp();
        size = 512;
    }

    action set_tc(bit<3> tc) {
        meta.tc = tc;
    }

    /* Rust: PortQos::dscp_to_tc (default DSCP 3 -> 3, 4 -> 4, 48 -> 6,
     * the rest 0; the control plane installs all 64 per port). */
    table dscp_to_tc {
        key = {
            standard_metadata.ingress_port : exact;
            meta.dscp                      : exact;
        }
        actions = {
            set_tc;
        }
        default_action = set_tc(0);
        size = 32768;
    }

    /* Rust: PortQos::pcp_to_tc (default PCP n -> TC n). */
    table pcp_to_tc {
        key = {
            standard_metadata.ingress_port : exact;
            meta.pcp                       : exact;
        }
        actions = {
            set_tc;
        }
        default_action = set_tc(0);
        size = 4096;
    }

    /* Rust: PortQos::lossless, a bit per TC of the ingress port. */
    action set_lossless() {
        meta.lossless = 1;
    }

    table lossless_tc {
        key = {
            standard_metadata.ingress_port : exact;
            meta.tc                        : exact;
        }
        actions = {
            set_lossless;
            NoAction;
        }
        default_action = NoAction();
        size = 4096;
    }

    /* ----------------------------------------------------------------
     * SRv6 (Rust: pipeline/forward/srv6.rs)
     * ---------------------------------------------------------------- */

    /* Rust: RouteTarget::Srv6Policy(id), from ipv4_lpm or ipv6_lpm. */
    action set_srv6_policy(bit<32> policy) {
        meta.route_kind = ROUTE_SRV6_POLICY;
        meta.nexthop_id = policy;
    }

    /* Common part of the my_sid actions. */
    action srv6_sid(bit<3> behavior, bit<1> psp, bit<1> usp) {
        meta.srv6_behavior = behavior;
        meta.srv6_psp = psp;
        meta.srv6_usp = usp;
        meta.srv6_csid = 0;
    }

    /* RFC 8986 4.1 End. Rust: SidBehavior::End. */
    action end(bit<1> psp, bit<1> usp) {
        srv6_sid(SRV6_END, psp, usp);
    }

    /* RFC 8986 4.2 End.X to a nexthop or an ECMP group (route_kind as the
     * LPM actions set it). Rust: SidBehavior::EndX. */
    action end_x(bit<1> psp, bit<1> usp, bit<3> route_kind, bit<32> target) {
        srv6_sid(SRV6_END_X, psp, usp);
        meta.route_kind = route_kind;
        meta.nexthop_id = target;
        meta.ecmp_group_id = target;
    }

    /* RFC 9800 NEXT-C-SID flavour, masks as Rust's Csid computes them from
     * block_bits and shift_bits: block_mask keeps the Locator-Block,
     * argument_mask the bits after block + shift. */
    action un(bit<1> psp, bit<1> usp, ipv6_addr_t block_mask,
              ipv6_addr_t argument_mask, bit<8> shift) {
        srv6_sid(SRV6_END, psp, usp);
        meta.srv6_csid = 1;
        meta.srv6_block_mask = block_mask;
        meta.srv6_argument_mask = argument_mask;
        meta.srv6_shift = shift;
    }

    action ua(bit<1> psp, bit<1> usp, ipv6_addr_t block_mask,
              ipv6_addr_t argument_mask, bit<8> shift,
              bit<3> route_kind, bit<32> target) {
        end_x(psp, usp, route_kind, target);
        meta.srv6_csid = 1;
        meta.srv6_block_mask = block_mask;
        meta.srv6_argument_mask = argument_mask;
        meta.srv6_shift = shift;
    }

    /* RFC 8986 4.6-4.8: decapsulate, look the inner destination up in
     * VRF `table`. Rust: SidBehavior::EndDt4/EndDt6/EndDt46. */
    action end_dt4(bit<16> vrf) {
        srv6_sid(SRV6_DT4, 0, 0);
        meta.srv6_table = vrf;
    }

    action end_dt6(bit<16> vrf) {
        srv6_sid(SRV6_DT6, 0, 0);
        meta.srv6_table = vrf;
    }

    action end_dt46(bit<16> vrf) {
        srv6_sid(SRV6_DT46, 0, 0);
        meta.srv6_table = vrf;
    }

    /* Local SIDs: longest prefix match on the destination, per VRF, before
     * the FIB. Rust: Srv6State::lookup_sid (tables::Lpm6 per VRF). */
    table my_sid {
        key = {
            meta.vrf         : exact;
            meta.lookup_ipv6 : lpm;
        }
        actions = {
            end;
            end_x;
            un;
            ua;
            end_dt4;
            end_dt6;
            end_dt46;
            @defaultonly NoAction;
        }
        default_action = NoAction();
        size = 4096;
    }

    /* Drop with an ICMPv6 error for the CPU to send (Rust:
     * Verdict::DropWithIcmpError: the drop is counted under `reason` and
     * the slow path builds the error). */
    action srv6_error(bit<8> reason, bit<32> pointer) {
        drop_counter.count((bit<32>)reason);
        meta.drop_reason = reason;
        meta.icmp_pointer = pointer;
        meta.punt_reason = PUNT_ICMPV6_ERROR;
        punt_to_cpu();
    }

    /* The SRH leaves the packet (PSP, USP; RFC 8986 4.16). Rust:
     * Forwarder::srv6_remove_srh. */
    action srv6_pop_srh() {
        hdr.ipv6.next_hdr = hdr.srh.next_hdr;
        hdr.ipv6.payload_len = hdr.ipv6.payload_len
            - (((bit<16>)hdr.srh.hdr_ext_len + 1) << 3);
        hdr.srh.setInvalid();
        hdr.srh_segments[0].setInvalid();
        hdr.srh_segments[1].setInvalid();
        hdr.srh_segments[2].setInvalid();
        hdr.srh_segments[3].setInvalid();
        hdr.srh_segments[4].setInvalid();
        hdr.srh_segments[5].setInvalid();
        hdr.srh_segments[6].setInvalid();
        hdr.srh_segments[7].setInvalid();
        hdr.srh_tlvs.setInvalid();
    }

    /* RFC 8986 5.1 H.Encaps: outer IPv6 from `source` to the first
     * segment, SRH with `srh_segments` entries (Segment List[0] = seg0 is
     * the last segment), Segments Left and Last Entry as the control plane
     * computed them (Rust: Srv6State::new). Traffic class copied from the
     * inner packet, flow label from its flow hash (set in the apply block).
     * The outer route (route_kind, target) is the first segment's, resolved
     * by the control plane. */
    action h_encaps(ipv6_addr_t source, bit<8> hop_limit, ipv6_addr_t first_segment,
                    bit<8> segments_left, bit<8> last_entry, bit<8> srh_segments,
                    ipv6_addr_t seg0, ipv6_addr_t seg1, ipv6_addr_t seg2,
                    ipv6_addr_t seg3, bit<3> route_kind, bit<32> target) {
        hdr.encap_ipv6.setValid();
        hdr.encap_ipv6.version = 6;
        hdr.encap_ipv6.hop_limit = hop_limit;
        hdr.encap_ipv6.src_addr = source;
        hdr.encap_ipv6.dst_addr = first_segment;
        hdr.encap_ipv6.next_hdr = IP_PROTO_ROUTING;
        hdr.encap_srh.setValid();
        hdr.encap_srh.hdr_ext_len = srh_segments << 1;
        hdr.encap_srh.routing_type = ROUTING_TYPE_SRH;
        hdr.encap_srh.segments_left = segments_left;
        hdr.encap_srh.last_entry = last_entry;
        hdr.encap_srh.flags = 0;
        hdr.encap_srh.tag = 0;
        hdr.encap_segments[0].setValid();
        hdr.encap_segments[0].sid = seg0;
        if (srh_segments > 1) {
            hdr.encap_segments[1].setValid();
            hdr.encap_segments[1].sid = seg1;
        }
        if (srh_segments > 2) {
            hdr.encap_segments[2].setValid();
            hdr.encap_segments[2].sid = seg2;
        }
        if (srh_segments > 3) {
            hdr.encap_segments[3].setValid();
            hdr.encap_segments[3].sid = seg3;
        }
        meta.route_kind = route_kind;
        meta.nexthop_id = target;
        meta.ecmp_group_id = target;
    }

    /* RFC 8986 5.2 H.Encaps.Red: as h_encaps without the first segment in
     * the SRH (Last Entry = Segments Left - 1), and no SRH at all for a
     * single segment (srh_segments = 0). */
    action h_encaps_red(ipv6_addr_t source, bit<8> hop_limit, ipv6_addr_t first_segment,
                        bit<8> segments_left, bit<8> last_entry, bit<8> srh_segments,
                        ipv6_addr_t seg0, ipv6_addr_t seg1, ipv6_addr_t seg2,
                        ipv6_addr_t seg3, bit<3> route_kind, bit<32> target) {
        h_encaps(source, hop_limit, first_segment, segments_left, last_entry,
                 srh_segments, seg0, seg1, seg2, seg3, route_kind, target);
        if (srh_segments == 0) {
            hdr.encap_srh.setInvalid();
            hdr.encap_segments[0].setInvalid();
        }
    }

    /* Policy id (from set_srv6_policy) -> the encapsulation.
     * Rust: Forwarder::srv6_encapsulate. */
    table srv6_policy {
        key = {
            meta.nexthop_id : exact;
        }
        actions = {
            h_encaps;
            h_encaps_red;
            drop_packet;
        }
        default_action = drop_packet();
        size = 4096;
    }

    apply {
        meta.ipv4_rewritten = 0;
        meta.srv6_behavior = SRV6_NONE;
        meta.srv6_processed = 0;
        meta.srv6_adjacency = 0;
        meta.switch_mode = 0;
        meta.port_mode = 0;
        meta.vid = 0;
        meta.port_interface = 0;
        meta.l3_interface = 0;
        meta.vrf = 0;
        meta.flooded = 0;
        meta.routed = 0;
        meta.lookup = LOOKUP_NONE;
        meta.purpose = PURPOSE_ROUTE;
        meta.route_kind = ROUTE_NONE;
        meta.punt_reason = PUNT_NONE;
        meta.drop_reason = 0;

        /* -- Forwarding mode ------------------------------------------ */
        /* Rust: engine::ForwardingMode. A port with a role is a switch
         * port; any other port is an `io` port. */
        if (!port_vlan.apply().hit) {
            io_forward.apply();
            return;
        }
        meta.switch_mode = 1;

        /* -- Frames no port takes ------------------------------------- */
        /* Rust: Forwarder::process, before the port's role. */
        if (!hdr.ethernet.isValid()) {
            drop_with_reason(DROP_TRUNCATED);
            return;
        }
        if (hdr.ethernet.ether_type == ETHERTYPE_QINQ) {
            drop_with_reason(DROP_UNSUPPORTED_VLAN_STACK);
            return;
        }
        if (hdr.ethernet.ether_type == ETHERTYPE_VLAN) {
            if (!hdr.vlan_outer.isValid()) {
                drop_with_reason(DROP_TRUNCATED);
                return;
            }
            if (hdr.vlan_outer.ether_type == ETHERTYPE_VLAN
                    || hdr.vlan_outer.ether_type == ETHERTYPE_QINQ) {
                drop_with_reason(DROP_UNSUPPORTED_VLAN_STACK);
                return;
            }
        }
        if (hdr.ethernet.ether_type == ETHERTYPE_MAC_CONTROL) {
            /* PAUSE/PFC are consumed by the port, never forwarded
             * (Rust: SwitchWorker::handle -> TrafficManager::
             * receive_mac_control). What v1model can express: the parse
             * and a count per (port, priority) of the PFC frames that
             * enable it. What lives in the traffic manager (Rust qos::tm,
             * tm_pfc), outside P4: holding the egress queue of each
             * enabled TC for time x 512 bit times (BMv2's queues cannot be
             * paused per class), XOFF/XON/refresh generation from the
             * ingress occupancy of lossless TCs (lossless_tc marks them
             * here), the headroom check and the watchdog's timers. */
            if (hdr.mac_control.isValid() && hdr.mac_control.opcode == 0x0101) {
                bit<32> base = (bit<32>)standard_metadata.ingress_port * 8;
                if (hdr.mac_control.class_enable[0:0] == 1) { pfc_rx_counter.count(base); }
                if (hdr.mac_control.class_enable[1:1] == 1) { pfc_rx_counter.count(base + 1); }
                if (hdr.mac_control.class_enable[2:2] == 1) { pfc_rx_counter.count(base + 2); }
                if (hdr.mac_control.class_enable[3:3] == 1) { pfc_rx_counter.count(base + 3); }
                if (hdr.mac_control.class_enable[4:4] == 1) { pfc_rx_counter.count(base + 4); }
                if (hdr.mac_control.class_enable[5:5] == 1) { pfc_rx_counter.count(base + 5); }
                if (hdr.mac_control.class_enable[6:6] == 1) { pfc_rx_counter.count(base + 6); }
                if (hdr.mac_control.class_enable[7:7] == 1) { pfc_rx_counter.count(base + 7); }
            }
            drop_with_reason(DROP_MAC_CONTROL);
            return;
        }
        if (hdr.ethernet.src_addr[40:40] == 1 || hdr.ethernet.src_addr == 0) {
            /* The group bit of the first octet, or 00:00:00:00:00:00: no
             * station sends from either. */
            drop_with_reason(DROP_INVALID_SOURCE_MAC);
            return;
        }
        bit<48> own_mac;
        router_mac_value.read(own_mac, 0);
        if (hdr.ethernet.src_addr == own_mac) {
            /* The switch's own frames come back (a loop), or a spoof; learned,
             * it would draw the VLAN's frames to the router MAC to one port.
             * Rust: Forwarder::process -> bad_source. */
            drop_with_reason(DROP_OWN_SOURCE_MAC);
            return;
        }
        meta.ether_type = hdr.ethernet.ether_type;
        meta.l2_len = 14;
        if (hdr.vlan_outer.isValid()) {
            meta.ether_type = hdr.vlan_outer.ether_type;
            meta.l2_len = 18;
        }

        /* -- Classification ------------------------------------------- */
        /* Rust: qos::classify, on the frame as it arrived. Trust DSCP
         * reads IP; a non-IP frame falls back to its tag's PCP, else TC 0.
         * Trust PCP reads the outer tag (PCP 0 when untagged). */
        meta.tc = 0;
        meta.lossless = 0;
        meta.pcp = 0;
        if (hdr.vlan_outer.isValid()) {
            meta.pcp = hdr.vlan_outer.pcp;
        }
        qos_trust.apply();
        if (meta.trust_pcp == 0 && hdr.ipv4.isValid()) {
            meta.dscp = hdr.ipv4.dscp;
            dscp_to_tc.apply();
        } else if (meta.trust_pcp == 0 && hdr.ipv6.isValid()) {
            meta.dscp = hdr.ipv6.dscp;
            dscp_to_tc.apply();
        } else if (meta.trust_pcp == 1 || hdr.vlan_outer.isValid()) {
            pcp_to_tc.apply();
        }
        lossless_tc.apply();
        /* The egress queue. BMv2 serves priority queues strictly; ironclos's
         * traffic manager (Rust: qos::tm, qos::dwrr) adds DWRR, byte queue
         * limits, the shared buffer and the line-rate shaper, none of which
         * v1model can express. */
        standard_metadata.priority = meta.tc;

        /* -- Port role ------------------------------------------------ */
        if (meta.port_mode == PORT_MODE_ROUTED) {
            /* Rust: PortMode::Routed: untagged or priority-tagged. */
            if (hdr.vlan_outer.isValid() && hdr.vlan_outer.vid != 0) {
                drop_with_reason(DROP_VLAN_NOT_ALLOWED);
                return;
            }
        } else {
            if (meta.port_mode == PORT_MODE_ACCESS) {
                /* Rust: PortMode::Access: untagged or priority-tagged. */
                if (hdr.vlan_outer.isValid() && hdr.vlan_outer.vid != 0) {
                    drop_with_reason(DROP_VLAN_NOT_ALLOWED);
                    return;
                }
            } else {
                /* Rust: PortMode::Trunk: an allowed VID, or the native
                 * VLAN for untagged and priority-tagged frames. */
                if (hdr.vlan_outer.isValid()) {
                    meta.vid = hdr.vlan_outer.vid;
                }
                switch (vlan_membership.apply().action_run) {
                    drop_packet: {
                        drop_with_reason(DROP_VLAN_NOT_ALLOWED);
                        return;
                    }
                }
            }
            /* Rust: Forwarder::process -> macs.learn. */
            mac_learn.apply();
        }

        /* -- Router MAC ----------------------------------------------- */
        if (router_mac.apply().hit) {
            /* Rust: Forwarder::route -> self.interfaces[in_iface].vrf. */
            l3_interface.apply();
            if (hdr.ethernet.dst_addr[40:40] == 0) {
                /* To the router MAC. Rust: Forwarder::route. */
                if (meta.ether_type == ETHERTYPE_IPV4) {
                    /* Rust: Forwarder::route_ipv4, header checks. */
                    if (!hdr.ipv4.isValid()) {
                        drop_with_reason(DROP_TRUNCATED);
                        return;
                    }
                    /* Bad version, header length < 20, total length <
                     * header length, or options cut short. */
                    if (standard_metadata.parser_error == error.IPv4IncorrectVersion
                            || standard_metadata.parser_error == error.IPv4HeaderTooShort
                            || hdr.ipv4.total_len < ((bit<16>)hdr.ipv4.ihl << 2)
                            || (hdr.ipv4.ihl > 5 && !hdr.ipv4_options.isValid())) {
                        drop_with_reason(DROP_BAD_IPV4_HEADER);
                        return;
                    }
                    if ((bit<32>)hdr.ipv4.total_len + meta.l2_len
                            > standard_metadata.packet_length) {
                        drop_with_reason(DROP_TRUNCATED);
                        return;
                    }
                    if (standard_metadata.checksum_error == 1) {
                        drop_with_reason(DROP_BAD_IPV4_CHECKSUM);
                        return;
                    }
                    meta.lookup = LOOKUP_IPV4;
                    meta.lookup_ipv4 = hdr.ipv4.dst_addr;
                } else if (meta.ether_type == ETHERTYPE_IPV6) {
                    /* Rust: Forwarder::route_ipv6, header checks. */
                    if (!hdr.ipv6.isValid()) {
                        drop_with_reason(DROP_TRUNCATED);
                        return;
                    }
                    if (standard_metadata.parser_error == error.IPv6IncorrectVersion) {
                        drop_with_reason(DROP_BAD_IPV6_HEADER);
                        return;
                    }
                    if (40 + (bit<32>)hdr.ipv6.payload_len + meta.l2_len
                            > standard_metadata.packet_length) {
                        drop_with_reason(DROP_TRUNCATED);
                        return;
                    }
                    meta.lookup = LOOKUP_IPV6;
                    meta.lookup_ipv6 = hdr.ipv6.dst_addr;
                } else if (meta.ether_type == ETHERTYPE_ARP) {
                    /* Any ARP to the router MAC (e.g. a reply).
                     * Rust: Forwarder::route -> PuntReason::Arp. */
                    meta.punt_reason = PUNT_ARP;
                    punt_to_cpu();
                    return;
                } else {
                    drop_with_reason(DROP_NOT_IP);
                    return;
                }
            } else {
                /* Multicast to an L3 interface: ARP requests and ND for
                 * one of the switch's addresses go to the CPU.
                 * Rust: Forwarder::punt_if_for_us. Rust compares the
                 * target with the receiving interface's own addresses;
                 * here it is looked up among the VRF's local routes. */
                meta.purpose = PURPOSE_PUNT_CHECK;
                if (hdr.arp.isValid() && hdr.ethernet.dst_addr == BROADCAST_MAC
                        && hdr.arp.opcode == ARP_OP_REQUEST) {
                    meta.punt_reason = PUNT_ARP;
                    meta.lookup = LOOKUP_IPV4;
                    meta.lookup_ipv4 = hdr.arp.target_ip;
                } else if (hdr.ndp.isValid()) {
                    meta.punt_reason = PUNT_ND;
                    meta.lookup = LOOKUP_IPV6;
                    meta.lookup_ipv6 = hdr.ndp.target_addr;
                }
            }
        } else if (meta.port_mode == PORT_MODE_ROUTED) {
            /* Rust: Forwarder::routed_port_ingress -> not_for_us. */
            drop_with_reason(DROP_NOT_FOR_US);
            return;
        }

        /* -- SRv6 endpoint -------------------------------------------- */
        /* Rust: Forwarder::route_ipv6 -> srv6_endpoint, before the FIB. */
        if (meta.lookup == LOOKUP_IPV6 && meta.purpose == PURPOSE_ROUTE) {
            my_sid.apply();
        }
        if (meta.srv6_behavior != SRV6_NONE
                && (hdr.ipv6.src_addr[127:1] == 0 || hdr.ipv6.src_addr[127:120] == 0xff
                    || hdr.ipv6.src_addr[127:32] == 96w0xffff)) {
            /* Rust: route_ipv6 refuses a martian source before the endpoint
             * (is_martian_v6_source; Linux's ip6_rcv_core on input). */
            drop_with_reason(DROP_MARTIAN_SOURCE);
            return;
        }
        if (meta.srv6_behavior != SRV6_NONE) {
            /* RFC 8200 4.4: an unknown Routing type with segments left is a
             * Parameter Problem at its Routing Type (right after the IPv6
             * header here: 40 + 2), after a uSID shift's chance, as Rust's
             * Forwarder::srv6_behavior. */
            if (meta.other_routing_segments_left != 0
                    && !(meta.srv6_csid == 1
                         && (hdr.ipv6.dst_addr & meta.srv6_argument_mask) != 0)) {
                srv6_error(DROP_SRV6_BAD_SRH, 42);
                return;
            }
            if (meta.srv6_behavior == SRV6_END || meta.srv6_behavior == SRV6_END_X) {
                if (meta.srv6_csid == 1
                        && (hdr.ipv6.dst_addr & meta.srv6_argument_mask) != 0) {
                    /* RFC 9800: shift, Segments Left untouched. */
                    if (hdr.ipv6.hop_limit <= 1) {
                        srv6_error(DROP_SRV6_HOP_LIMIT, 0);
                        return;
                    }
                    hdr.ipv6.dst_addr = (hdr.ipv6.dst_addr & meta.srv6_block_mask)
                        | ((hdr.ipv6.dst_addr & meta.srv6_argument_mask) << meta.srv6_shift);
                    hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                } else if (!hdr.srh.isValid() || hdr.srh.segments_left == 0) {
                    /* Upper-layer processing (RFC 8986 4.1.1): ICMPv6 is for
                     * the switch; anything else is Parameter Problem code 4. */
                    if (hdr.ipv6.next_hdr == IP_PROTO_ICMPV6
                            || (hdr.srh.isValid() && hdr.srh.next_hdr == IP_PROTO_ICMPV6)) {
                        if (meta.srv6_usp == 1 && hdr.srh.isValid()) {
                            srv6_pop_srh();
                        }
                        meta.punt_reason = PUNT_LOCAL;
                        punt_to_cpu();
                        return;
                    }
                    if (hdr.srh.isValid()) {
                        srv6_error(DROP_SRV6_UPPER_LAYER,
                                   48 + ((bit<32>)hdr.srh.hdr_ext_len << 3));
                    } else {
                        srv6_error(DROP_SRV6_UPPER_LAYER, 40);
                    }
                    return;
                } else {
                    /* RFC 8986 S03-S09. */
                    if (hdr.ipv6.hop_limit <= 1) {
                        srv6_error(DROP_SRV6_HOP_LIMIT, 0);
                        return;
                    }
                    if (hdr.srh.last_entry > (hdr.srh.hdr_ext_len >> 1) - 1
                            || hdr.srh.hdr_ext_len < 2
                            || hdr.srh.segments_left > hdr.srh.last_entry + 1) {
                        srv6_error(DROP_SRV6_BAD_SRH, 43);
                        return;
                    }
                    hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                    hdr.srh.segments_left = hdr.srh.segments_left - 1;
                    hdr.ipv6.dst_addr = hdr.srh_segments[hdr.srh.segments_left].sid;
                    if (meta.srv6_psp == 1 && hdr.srh.segments_left == 0) {
                        srv6_pop_srh();
                    }
                }
                meta.srv6_processed = 1;
                meta.lookup_ipv6 = hdr.ipv6.dst_addr;
                meta.srv6_adjacency = (bit<1>)(meta.srv6_behavior == SRV6_END_X);
            } else {
                /* End.DT4 / DT6 / DT46. */
                if (hdr.srh.isValid() && hdr.srh.segments_left != 0) {
                    srv6_error(DROP_SRV6_SEGMENTS_LEFT_NOT_ZERO, 43);
                    return;
                }
                if (hdr.inner_ipv4.isValid() && meta.srv6_behavior != SRV6_DT6) {
                    hdr.ipv4 = hdr.inner_ipv4;
                    hdr.inner_ipv4.setInvalid();
                    hdr.ipv6.setInvalid();
                    meta.lookup = LOOKUP_IPV4;
                    meta.lookup_ipv4 = hdr.ipv4.dst_addr;
                    if (hdr.vlan_outer.isValid()) {
                        hdr.vlan_outer.ether_type = ETHERTYPE_IPV4;
                    } else {
                        hdr.ethernet.ether_type = ETHERTYPE_IPV4;
                    }
                } else if (hdr.inner_ipv6.isValid() && meta.srv6_behavior != SRV6_DT4) {
                    hdr.ipv6 = hdr.inner_ipv6;
                    hdr.inner_ipv6.setInvalid();
                    meta.lookup_ipv6 = hdr.ipv6.dst_addr;
                } else {
                    srv6_error(DROP_SRV6_UPPER_LAYER, 40);
                    return;
                }
                if (hdr.srh.isValid()) {
                    srv6_pop_srh();
                }
                meta.vrf = meta.srv6_table;
            }
        }

        /* -- LPM ------------------------------------------------------ */
        if (meta.lookup == LOOKUP_IPV4) {
            ipv4_lpm.apply();
        } else if (meta.lookup == LOOKUP_IPV6 && meta.srv6_adjacency == 0) {
            ipv6_lpm.apply();
        }

        if (meta.purpose == PURPOSE_PUNT_CHECK) {
            if (meta.route_kind == ROUTE_LOCAL) {
                /* PuntReason::Arp or PuntReason::NeighborDiscovery. */
                punt_to_cpu();
                return;
            }
            if (meta.port_mode == PORT_MODE_ROUTED) {
                /* Rust: Forwarder::routed_port_ingress. A neighbour's
                 * announcement (an ARP whose sender is its target, a
                 * Neighbor Advertisement to a multicast address) goes to
                 * the CPU, which listens for a new MAC (is_announcement);
                 * anything else is not_for_us. */
                if ((hdr.arp.isValid() && hdr.arp.sender_ip == hdr.arp.target_ip)
                        || (hdr.ndp.isValid()
                            && hdr.icmpv6.icmp_type == ICMPV6_NEIGHBOR_ADVERT
                            && hdr.ipv6.hop_limit == 255
                            && hdr.ipv6.dst_addr[127:120] == 0xff)) {
                    meta.punt_reason = PUNT_ANNOUNCEMENT;
                    punt_to_cpu();
                    return;
                }
                /* The link's own protocols (LLDP, LACP, STP):
                 * Rust: is_ieee_reserved_multicast. */
                if (hdr.ethernet.dst_addr[47:4] == 0x0180c200000) {
                    drop_with_reason(DROP_RESERVED_MULTICAST);
                    return;
                }
                drop_with_reason(DROP_NOT_FOR_US);
                return;
            }
            /* In a VLAN it is bridged (flooded) below. If the lookup
             * missed, its default drop_packet ran; flood() sets mcast_grp
             * afterwards, which v1model lets override mark_to_drop. */
            meta.punt_reason = PUNT_NONE;
        } else if (meta.lookup != LOOKUP_NONE) {
            /* Routing. Rust: Forwarder::route_ipv4 / route_ipv6 after the
             * lookup, then Forwarder::resolve_target. */
            /* Destinations nothing is routed to, whatever the routes say
             * (Rust checks before its lookup): as the martian sources below. */
            if ((meta.lookup == LOOKUP_IPV4
                    && (hdr.ipv4.dst_addr[31:24] == 0 || hdr.ipv4.dst_addr[31:24] == 127
                        || hdr.ipv4.dst_addr[31:29] == 7))
                    || (meta.lookup == LOOKUP_IPV6
                        && (hdr.ipv6.dst_addr[127:1] == 0 || hdr.ipv6.dst_addr[127:120] == 0xff))) {
                drop_with_reason(DROP_MARTIAN_DESTINATION);
                return;
            }
            /* A source route (parse_ipv4_options), whatever the route says:
             * to forward, none (no ICMP error), or the switch itself, as
             * Linux drops them on input with accept_source_route=0.
             * Rust: Forwarder::route_ipv4 -> ipv4_options_drop, before its
             * lookup. After End.DT4, hdr.ipv4 is the inner header, whose
             * options this program does not parse: not checked here. */
            if (meta.lookup == LOOKUP_IPV4 && hdr.ipv4_options.isValid()
                    && meta.ipv4_source_route == 1) {
                drop_with_reason(DROP_SOURCE_ROUTE_OPTION);
                return;
            }
            if (meta.route_kind == ROUTE_NONE) {
                /* Rust also has its slow path send ICMP Destination
                 * Unreachable / ICMPv6 no route to the source
                 * (Verdict::DropWithRouterError); this program only
                 * drops (a target would punt like PUNT_ICMPV6_ERROR). */
                drop_with_reason(DROP_NO_ROUTE);
                return;
            }
            if (meta.route_kind == ROUTE_LOCAL) {
                /* Before the TTL check: the switch answers a ping with
                 * TTL 1. */
                meta.punt_reason = PUNT_LOCAL;
                punt_to_cpu();
                return;
            }
            /* Sources nothing may be routed from (Rust: is_martian_v4,
             * is_martian_v6_source): IPv4 0/8, 127/8, 224/3; IPv6 ::, ::1,
             * ff00::/8 and IPv4-mapped ::ffff:0:0/96 (RFC 4291 2.5.5.2; Linux's
             * ip6_rcv_core drops it as a source only: an IPv4-mapped
             * destination is routed by the FIB, as above). */
            if ((meta.lookup == LOOKUP_IPV4
                    && (hdr.ipv4.src_addr[31:24] == 0 || hdr.ipv4.src_addr[31:24] == 127
                        || hdr.ipv4.src_addr[31:29] == 7))
                    || (meta.lookup == LOOKUP_IPV6
                        && (hdr.ipv6.src_addr[127:1] == 0 || hdr.ipv6.src_addr[127:120] == 0xff
                            || hdr.ipv6.src_addr[127:32] == 96w0xffff))) {
                drop_with_reason(DROP_MARTIAN_SOURCE);
                return;
            }
            if (meta.lookup == LOOKUP_IPV6) {
                /* fe80::/10 is never routed (Rust: is_link_local). */
                if (hdr.ipv6.src_addr[127:118] == 0x3fa
                        || hdr.ipv6.dst_addr[127:118] == 0x3fa) {
                    drop_with_reason(DROP_LINK_LOCAL);
                    return;
                }
                /* Rust drop reason `ttl_expired` (DropReason::TtlExpired):
                 * a hop limit of 0 or 1 would reach 0 here. Rust's slow
                 * path also sends ICMPv6 Time Exceeded; here it is only
                 * dropped, as for no_route above. */
                if (meta.srv6_processed == 0 && hdr.ipv6.hop_limit <= 1) {
                    drop_with_reason(DROP_TTL_EXPIRED);
                    return;
                }
            } else {
                /* Rust drop reason `ttl_expired` (DropReason::TtlExpired):
                 * a TTL of 0 or 1 would reach 0 here. Rust's slow path
                 * also sends ICMP Time Exceeded; here it is only dropped,
                 * as for no_route above. */
                if (hdr.ipv4.ttl <= 1) {
                    drop_with_reason(DROP_TTL_EXPIRED);
                    return;
                }
            }

            if (meta.route_kind == ROUTE_SRV6_POLICY) {
                /* Headend (Rust: Forwarder::srv6_encapsulate): the inner
                 * packet's TTL / hop limit was checked above and is
                 * decremented below; the outer header copies its traffic
                 * class and takes a flow label from its flow (CRC32 of the
                 * addresses here, Rust's flow hash there). */
                srv6_policy.apply();
                if (hdr.encap_ipv6.isValid()) {
                    bit<16> inner_len;
                    if (meta.lookup == LOOKUP_IPV4) {
                        hdr.encap_ipv6.dscp = hdr.ipv4.dscp;
                        hdr.encap_ipv6.ecn = hdr.ipv4.ecn;
                        inner_len = hdr.ipv4.total_len;
                        hdr.encap_srh.next_hdr = IP_PROTO_IPV4;
                        hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                        meta.ipv4_rewritten = 1;
                    } else {
                        hdr.encap_ipv6.dscp = hdr.ipv6.dscp;
                        hdr.encap_ipv6.ecn = hdr.ipv6.ecn;
                        inner_len = hdr.ipv6.payload_len + 40;
                        hdr.encap_srh.next_hdr = IP_PROTO_IPV6;
                        hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
                    }
                    hash(hdr.encap_ipv6.flow_label, HashAlgorithm.crc32, 20w0,
                         { meta.lookup_ipv4, hdr.ipv6.src_addr, hdr.ipv6.dst_addr },
                         20w0xfffff);
                    if (hdr.encap_srh.isValid()) {
                        hdr.encap_ipv6.payload_len = inner_len
                            + (((bit<16>)hdr.encap_srh.hdr_ext_len + 1) << 3);
                    } else {
                        hdr.encap_ipv6.next_hdr = hdr.encap_srh.next_hdr;
                        hdr.encap_ipv6.payload_len = inner_len;
                    }
                    if (hdr.vlan_outer.isValid()) {
                        hdr.vlan_outer.ether_type = ETHERTYPE_IPV6;
                    } else {
                        hdr.ethernet.ether_type = ETHERTYPE_IPV6;
                    }
                    /* An ECMP group below hashes the inner flow, as Rust's
                     * outer route does. */
                    meta.srv6_processed = 1;
                    meta.lookup = LOOKUP_IPV6;
                } else {
                    drop_with_reason(DROP_NO_ROUTE);
                    return;
                }
            }
            if (meta.route_kind == ROUTE_GROUP) {
                /* The flow key. Rust: route_ipv4/route_ipv6 `hash`
                 * closures, l4_ports. */
                meta.flow_src_port = 0;
                meta.flow_dst_port = 0;
                if (meta.lookup == LOOKUP_IPV4) {
                    meta.flow_src = (bit<128>)hdr.ipv4.src_addr;
                    meta.flow_dst = (bit<128>)hdr.ipv4.dst_addr;
                    meta.flow_protocol = hdr.ipv4.protocol;
                    meta.flow_label = 0;
                    /* Fragments (MF set or an offset) hash without ports. */
                    if (hdr.ipv4.flags[0:0] == 0 && hdr.ipv4.frag_offset == 0) {
                        if (hdr.tcp.isValid()) {
                            meta.flow_src_port = hdr.tcp.src_port;
                            meta.flow_dst_port = hdr.tcp.dst_port;
                        } else if (hdr.udp.isValid()) {
                            meta.flow_src_port = hdr.udp.src_port;
                            meta.flow_dst_port = hdr.udp.dst_port;
                        }
                    }
                } else {
                    meta.flow_src = hdr.ipv6.src_addr;
                    meta.flow_dst = hdr.ipv6.dst_addr;
                    meta.flow_protocol = hdr.ipv6.next_hdr;
                    meta.flow_label = hdr.ipv6.flow_label;
                    if (hdr.tcp.isValid()) {
                        meta.flow_src_port = hdr.tcp.src_port;
                        meta.flow_dst_port = hdr.tcp.dst_port;
                    } else if (hdr.udp.isValid()) {
                        meta.flow_src_port = hdr.udp.src_port;
                        meta.flow_dst_port = hdr.udp.dst_port;
                    }
                }
                /* Rust: GroupBalancer::select. Hash mode keeps flowlet_id
                 * 0, so the selection is the flow's alone. */
                meta.flowlet_id = 0;
                ecmp_balance.apply();
                if (meta.balance_mode == BALANCE_FLOWLET) {
                    flowlet_step();
                } else if (meta.balance_mode == BALANCE_PER_PACKET) {
                    random(meta.flowlet_id, 16w0, 16w0xffff);
                }
                /* A hit runs set_nexthop: route_kind becomes NEXTHOP. */
                if (!ecmp_group.apply().hit) {
                    drop_with_reason(DROP_ECMP_NO_LIVE_MEMBER);
                    return;
                }
            }
            if (meta.route_kind == ROUTE_CONNECTED) {
                /* Rust: Forwarder::glean: ask for the host's MAC (the
                 * control plane then installs a host route to a nexthop)
                 * and drop the packet. */
                if (meta.lookup == LOOKUP_IPV4) {
                    meta.glean.ip_version = 4;
                    meta.glean.ip = (bit<128>)meta.lookup_ipv4;
                } else {
                    meta.glean.ip_version = 6;
                    meta.glean.ip = meta.lookup_ipv6;
                }
                digest<glean_digest_t>(GLEAN_RECEIVER, meta.glean);
                drop_with_reason(DROP_NEIGHBOR_UNRESOLVED);
                return;
            }
            if (meta.route_kind == ROUTE_BLACKHOLE) {
                drop_with_reason(DROP_BLACKHOLE);
                return;
            }

            /* ROUTE_NEXTHOP, directly or from the group. TTL / hop limit
             * minus one. Rust changes them only when the packet really
             * leaves; here a later drop discards the change, which is the
             * same. Rust updates the IPv4 checksum incrementally (RFC 1624,
             * wire::checksum::update_u16); IroncComputeChecksum recomputes
             * it, which gives the same value since a packet with a bad
             * checksum was dropped above. */
            if (meta.lookup == LOOKUP_IPV4) {
                hdr.ipv4.ttl = hdr.ipv4.ttl - 1;
                meta.ipv4_rewritten = 1;
            } else if (meta.srv6_processed == 0) {
                /* An SRv6 endpoint already took its hop (RFC 8986 S07). */
                hdr.ipv6.hop_limit = hdr.ipv6.hop_limit - 1;
            }
            meta.routed = 1;
            switch (nexthop.apply().action_run) {
                rewrite_to_port: {
                    /* The port is chosen: no MAC lookup. */
                    return;
                }
                resolve_nexthop: {
                    drop_with_reason(DROP_NEIGHBOR_UNRESOLVED);
                    return;
                }
            }
            /* rewrite_to_vlan: the port comes from mac_table below. */
        }

        /* -- Bridging (and routing into a VLAN) ----------------------- */
        if (meta.routed == 0 && hdr.ethernet.dst_addr[40:40] == 1) {
            /* 01-80-C2-00-00-00..0F belong to the link (802.1Q): never
             * forwarded. Rust: IEEE_RESERVED_MULTICAST. */
            if (hdr.ethernet.dst_addr[47:4] == 0x0180c200000) {
                drop_with_reason(DROP_RESERVED_MULTICAST);
                return;
            }
            /* Broadcast and multicast flood without a lookup.
             * Rust: Forwarder::process -> Verdict::Flood. */
            flood();
            return;
        }
        switch (mac_table.apply().action_run) {
            l2_forward: {
                if (meta.routed == 0
                        && standard_metadata.egress_spec == standard_metadata.ingress_port) {
                    /* Rust: Forwarder::process -> same_port. */
                    drop_with_reason(DROP_SAME_PORT);
                    return;
                }
            }
            flood: {
                if (meta.routed == 1) {
                    /* The neighbour is resolved but the VLAN's table lacks
                     * its MAC (aged out before the neighbour did, flushed
                     * with its port's link): flood() sends the rewritten
                     * packet to the VLAN's members, as an unknown unicast
                     * (egress tags each copy per its port and makes none
                     * for the ingress port). The nexthop is asked for
                     * again: its answer relearns the MAC's port.
                     * Rust: Forwarder::egress_l2 -> flood_routed. */
                    meta.resolve.nexthop = meta.nexthop_id;
                    digest<resolve_digest_t>(RESOLVE_RECEIVER, meta.resolve);
                    routed_flood_counter.count(0);
                }
            }
        }
    }
}

/*************************************************************************
 * Egress
 *************************************************************************/

/* Between Ingress and Egress sits the traffic manager, which in ironclos is
 * Rust (see the top of this file). Egress gives each copy the VLAN tagging
 * of its port. */
control IroncEgress(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {

    /* Frames of meta.vid leave this port tagged.
     * Rust: Forwarder::egress_tagged is true (a trunk, not its native). */
    action egress_tagged() {
    }

    /* Frames of meta.vid leave this port untagged: access ports, a trunk's
     * native VLAN, routed ports. */
    action egress_untagged() {
    }

    /* (egress port, VLAN) -> tagged, for each trunk and each VLAN it
     * carries but its native one. Everything else is untagged. */
    table egress_vlan {
        key = {
            standard_metadata.egress_port : exact;
            meta.vid                      : exact;
        }
        actions = {
            egress_tagged;
            egress_untagged;
        }
        default_action = egress_untagged();
        size = 16384;
    }

    /* ECN marking at enqueue (Rust: qos::TrafficManager::enqueue with
     * qos::ecn::EcnCurve): v1model gives the depth the packet found when it
     * was enqueued, standard_metadata.enq_qdepth. BMv2 counts it in
     * packets, Rust in bytes: the control plane installs thresholds in the
     * unit of its target. The slope is pmax * 2^32 / (kmax - kmin), since P4
     * cannot divide by a variable. */
    action set_ecn_profile(bit<19> kmin, bit<19> kmax, bit<32> slope) {
        meta.ecn_kmin = kmin;
        meta.ecn_kmax = kmax;
        meta.ecn_slope = slope;
    }

    table ecn_profile {
        key = {
            standard_metadata.egress_port : exact;
            meta.tc                       : exact;
        }
        actions = {
            set_ecn_profile;
            NoAction;
        }
        default_action = NoAction();
        size = 4096;
    }

    apply {
        /* `io` packets leave unchanged; punted ones carry packet_in. */
        if (meta.switch_mode == 0 || standard_metadata.egress_port == CPU_PORT) {
            return;
        }
        /* Flood copies go to every member but the ingress port (Rust:
         * SwitchWorker::flood makes no copy for it). */
        if (meta.flooded == 1
                && standard_metadata.egress_port == standard_metadata.ingress_port) {
            mark_to_drop(standard_metadata);
            return;
        }
        /* ECN: below kmin nothing, at or above kmax always, in between with
         * probability slope * (depth - kmin) / 2^32. CE only on ECT(0) and
         * ECT(1); Not-ECT of a lossy class is dropped instead (Rust drop
         * reason `red_drop`), of a lossless class admitted. */
        if (ecn_profile.apply().hit) {
            bit<19> depth = standard_metadata.enq_qdepth;
            bit<1> congested = 0;
            if (depth >= meta.ecn_kmax) {
                congested = 1;
            } else if (depth >= meta.ecn_kmin) {
                bit<32> draw;
                random(draw, 0, 0xffffffff);
                if (draw < meta.ecn_slope * (bit<32>)(depth - meta.ecn_kmin)) {
                    congested = 1;
                }
            }
            if (congested == 1) {
                if (hdr.ipv4.isValid() && (hdr.ipv4.ecn == 1 || hdr.ipv4.ecn == 2)) {
                    hdr.ipv4.ecn = 3;
                    meta.ipv4_rewritten = 1;
                } else if (hdr.ipv6.isValid() && (hdr.ipv6.ecn == 1 || hdr.ipv6.ecn == 2)) {
                    hdr.ipv6.ecn = 3;
                } else if (!(hdr.ipv4.isValid() && hdr.ipv4.ecn == 3)
                        && !(hdr.ipv6.isValid() && hdr.ipv6.ecn == 3)
                        && meta.lossless == 0) {
                    mark_to_drop(standard_metadata);
                    return;
                }
            }
        }
        /* Rust: Forwarder::tag_op and SwitchWorker::flood (TagOp). */
        switch (egress_vlan.apply().action_run) {
            egress_tagged: {
                if (hdr.vlan_outer.isValid()) {
                    /* Rewrite the VID (a priority tag gets the VLAN's);
                     * PCP and DEI stay. */
                    hdr.vlan_outer.vid = meta.vid;
                } else {
                    /* TagOp::Push: PCP 0, DEI 0 (dpdk::mbuf::PacketMut::push_vlan). */
                    hdr.vlan_outer.setValid();
                    hdr.vlan_outer.pcp = 0;
                    hdr.vlan_outer.dei = 0;
                    hdr.vlan_outer.vid = meta.vid;
                    hdr.vlan_outer.ether_type = hdr.ethernet.ether_type;
                    hdr.ethernet.ether_type = ETHERTYPE_VLAN;
                }
            }
            egress_untagged: {
                if (hdr.vlan_outer.isValid()) {
                    /* TagOp::Pop. */
                    hdr.ethernet.ether_type = hdr.vlan_outer.ether_type;
                    hdr.vlan_outer.setInvalid();
                }
            }
        }
    }
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
 * combination the parser produces (and packet_in, valid only toward the
 * CPU port). */
control IroncDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.packet_in);
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan_outer);
        packet.emit(hdr.vlan_inner);
        packet.emit(hdr.arp);
        packet.emit(hdr.encap_ipv6);
        packet.emit(hdr.encap_srh);
        packet.emit(hdr.encap_segments);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.ipv6);
        packet.emit(hdr.srh);
        packet.emit(hdr.srh_segments);
        packet.emit(hdr.srh_tlvs);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_ipv6);
        packet.emit(hdr.icmpv6);
        packet.emit(hdr.ndp);
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
