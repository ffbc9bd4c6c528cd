//! Burst staging for routed IPv4: before a burst's frames go through the pipeline one by one,
//! three short passes over the whole burst start the memory reads their lookups will need, so
//! the cache misses of 32 frames overlap instead of stalling each frame in turn (the idea of
//! DPDK's l3fwd and VPP's vector nodes, kept outside the per-frame pipeline):
//!
//! 1. parse the destination and prefetch the FIB's first-level entry;
//! 2. prefetch the second-level entry the first level points to;
//! 3. look the route up (now cached); for an ECMP group, compute the frame's flow hash and
//!    prefetch the group's flowlet slot for it.
//!
//! The hash of pass 3 is handed to the frame's own route resolution (`set_staged_flow_hash`),
//! which then does not compute it again; hashing a burst in one loop also lets the CPU overlap
//! the hash chains of consecutive frames. Staging is only ever a hint: a frame it skips or
//! guesses wrong for (a VLAN interface's VRF, a malformed header) is routed exactly the same,
//! only without the head start. Debug builds check every staged hash against the one the
//! pipeline computes.

use super::{ETHERTYPE_IPV4, ETHERTYPE_VLAN, Forwarder, PortMode, flow_hash_ipv4, route_value};
use crate::dpdk::MAX_BURST;
use crate::pipeline::spec::RouteTarget;

#[derive(Clone, Copy, Default)]
struct Staged {
    /// VRF + 1 of the FIB the frame will most likely use; 0: not staged.
    vrf_plus_one: u16,
    /// Offset of the IPv4 header.
    l3: u8,
    dst: u32,
    hash: Option<u32>,
}

/// The staging state of one RX burst.
pub struct RouteStage {
    frames: [Staged; MAX_BURST],
}

impl Default for RouteStage {
    fn default() -> Self {
        RouteStage {
            frames: [Staged::default(); MAX_BURST],
        }
    }
}

impl RouteStage {
    /// Pass 1 for frame `index` of the burst (received on `in_port`).
    #[inline]
    pub fn parse_and_prefetch(
        &mut self,
        forwarder: &Forwarder,
        index: usize,
        frame: &[u8],
        in_port: u16,
    ) {
        let Some(staged) = self.frames.get_mut(index) else {
            return;
        };
        *staged = forwarder.stage_ipv4(frame, in_port).unwrap_or_default();
        if let Some(fib) = forwarder.staged_fib(staged) {
            fib.prefetch_first(staged.dst);
        }
    }

    /// Pass 2, after pass 1 ran over the whole burst.
    #[inline]
    pub fn prefetch_second_level(&self, forwarder: &Forwarder, index: usize) {
        if let Some(staged) = self.frames.get(index)
            && let Some(fib) = forwarder.staged_fib(staged)
        {
            fib.prefetch_second(staged.dst);
        }
    }

    /// Pass 3, after pass 2 ran over the whole burst: `frame` is the same frame as in pass 1.
    #[inline]
    pub fn hash_and_prefetch_flowlet(&mut self, forwarder: &Forwarder, index: usize, frame: &[u8]) {
        let Some(staged) = self.frames.get_mut(index) else {
            return;
        };
        staged.hash = None;
        let Some(fib) = forwarder.staged_fib(staged) else {
            return;
        };
        let Some(value) = fib.lookup(staged.dst) else {
            return;
        };
        let RouteTarget::Group(group) = route_value::decode(value) else {
            return;
        };
        let ip = &frame[usize::from(staged.l3)..];
        let header_len = usize::from(ip[0] & 0x0f) * 4;
        if header_len < 20 || header_len > ip.len() {
            return;
        }
        let hash = flow_hash_ipv4(ip, header_len, forwarder.flow_hash_seed);
        staged.hash = Some(hash);
        if let Some(balancer) = forwarder.balancers.get(group as usize) {
            balancer.prefetch_slot(hash);
        }
    }

    /// The flow hash pass 3 computed for frame `index`, if any.
    #[inline]
    pub fn flow_hash(&self, index: usize) -> Option<u32> {
        self.frames.get(index).and_then(|s| s.hash)
    }
}

impl Forwarder {
    /// The destination, header offset and likely VRF of an IPv4 frame to the router MAC (the
    /// VRF of a routed ingress port, else the default VRF: a wrong guess only wastes a
    /// prefetch).
    #[inline]
    fn stage_ipv4(&self, frame: &[u8], in_port: u16) -> Option<Staged> {
        if frame.len() < 34 || frame[0..6] != self.router_mac {
            return None;
        }
        let (ethertype, l3) = match u16::from_be_bytes([frame[12], frame[13]]) {
            ETHERTYPE_VLAN => (u16::from_be_bytes([frame[16], frame[17]]), 18),
            other => (other, 14),
        };
        if ethertype != ETHERTYPE_IPV4 || frame.len() < l3 + 20 {
            return None;
        }
        let vrf = match self.ports.get(usize::from(in_port)).map(|p| &p.mode) {
            Some(PortMode::Routed { interface }) => self
                .interfaces
                .get(usize::from(*interface))
                .map_or(0, |i| i.vrf),
            _ => 0,
        };
        let dst = u32::from_be_bytes([
            frame[l3 + 16],
            frame[l3 + 17],
            frame[l3 + 18],
            frame[l3 + 19],
        ]);
        Some(Staged {
            vrf_plus_one: vrf.checked_add(1)?,
            l3: l3 as u8,
            dst,
            hash: None,
        })
    }

    #[inline]
    fn staged_fib(&self, staged: &Staged) -> Option<&crate::tables::Lpm4> {
        let vrf = staged.vrf_plus_one.checked_sub(1)?;
        self.fib4.get(usize::from(vrf))
    }

    /// Hands the flow hash the burst stage computed for the next frame to its processing
    /// (`None` when it has none); the engine sets it right before each frame.
    #[inline]
    pub fn set_staged_flow_hash(&mut self, hash: Option<u32>) {
        self.staged_flow_hash = hash;
    }
}
