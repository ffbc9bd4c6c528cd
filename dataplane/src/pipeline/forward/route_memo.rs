//! Express repeats: the route of an express frame, reused by the express frames right after it
//! that repeat its flow (the burst stage's repeats, which share its staging). An elephant flow
//! fills whole bursts, and each of its frames would resolve to the same member, nexthop and
//! port: within one burst the instant is the same, so a flowlet continues (its gap is zero),
//! a hash picks the same bucket, and neighbours, links and routes change only between bursts.
//!
//! A repeat still does what resolution would have left behind for it: the member's counters
//! (`GroupBalancer::repeat`), the L2 rewrite and the TTL or hop limit. Only frames that leave
//! as they came, untagged (no trunk pushing a tag), are remembered, so a repeat's verdict is
//! always the plain one; never a per-packet choice (spraying picks again for every frame) or
//! an SRv6 endpoint's frame (which `route_express` hands on before). A nexthop behind a VLAN
//! interface's access port is remembered too: its port comes from the MAC table, which a
//! burst from a routed port does not change. Any frame that takes the full pipeline in
//! between (its ICMP error, say, may route and refresh a flowlet slot), the start of a burst
//! and every neighbour or link change forget the memo: the frames between the one remembered
//! and its repeats are then express frames of the same flow only.

use super::{Forwarder, StagedRoute, TagOp};

#[derive(Debug, Clone, Copy, Default)]
pub(super) struct RouteMemo {
    /// The burst index + 1 of the remembered frame (a repeat's staging names it as its
    /// head); 0: nothing is remembered.
    head_plus_one: u16,
    port: u16,
    /// The frame's new Ethernet addresses: the nexthop's MAC, then the router MAC.
    addresses: [u8; 12],
    /// The group and member index a repeat counts to (none for a nexthop).
    counted: Option<(u32, u32)>,
}

impl RouteMemo {
    #[inline(always)]
    pub(super) fn forget(&mut self) {
        self.head_plus_one = 0;
    }
}

impl Forwarder {
    /// The port of an express frame that repeats the remembered frame's flow (it leaves with
    /// its tag kept), with the frame rewritten and counted as `route_express` would; `None`
    /// when nothing remembered applies (the frame then resolves in full).
    #[inline(always)]
    pub(super) fn repeat_express(&mut self, frame: &mut [u8], staged: &StagedRoute) -> Option<u16> {
        let memo = &self.route_memo;
        if memo.head_plus_one != u16::from(staged.head()) + 1 {
            return None;
        }
        let (port, addresses, counted) = (memo.port, memo.addresses, memo.counted);
        if let Some((group, index)) = counted {
            self.balancers[group as usize].repeat(index, frame.len() as u32);
        }
        frame[..12].copy_from_slice(&addresses);
        super::decrement_hop_limit(&mut frame[super::stage::EXPRESS_L3..], staged.is_ipv6());
        #[cfg(test)]
        self.route_memo_hits.set(self.route_memo_hits.get() + 1);
        Some(port)
    }

    /// Remembers how an express frame, staged as `staged`, was forwarded: out of `port` with
    /// `tag`, to `dst_mac`, counted to `counted`. It holds until the burst ends
    /// (`begin_burst`, which the engine calls with each new instant) or the forwarder changes.
    #[inline(always)]
    pub(super) fn remember_route(
        &mut self,
        staged: &StagedRoute,
        port: u16,
        tag: TagOp,
        dst_mac: [u8; 6],
        counted: Option<(u32, u32)>,
    ) {
        debug_assert!(staged.sid().is_none(), "endpoint frames are not remembered");
        if matches!(tag, TagOp::Keep) {
            let mut addresses = [0; 12];
            addresses[..6].copy_from_slice(&dst_mac);
            addresses[6..].copy_from_slice(&self.router_mac);
            self.route_memo = RouteMemo {
                head_plus_one: u16::from(staged.head()) + 1,
                port,
                addresses,
                counted,
            };
        }
    }
}
