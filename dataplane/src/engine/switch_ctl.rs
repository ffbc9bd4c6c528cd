//! The switch worker's side of `crate::ctl`: one request served per poll loop, between bursts.

use super::SwitchWorker;
use crate::clock::Picos;
use crate::ctl::{Dump, Reply, Request, Update};
use crate::tables::neighbor::NeighborState;

impl SwitchWorker {
    /// Serves the next control request, if one is waiting (two plain loads when none is),
    /// at `now()`.
    #[inline]
    pub(super) fn serve_control(&mut self, now: impl FnOnce() -> Picos) {
        let Some((id, request)) = self.shared.ctl.next_request() else {
            return;
        };
        let now = now();
        let reply = match request {
            Request::Dump(kinds) => Reply::Dump(
                kinds
                    .into_iter()
                    .map(|k| self.with_reachability(self.forwarder.dump(k)))
                    .collect(),
            ),
            Request::Apply(updates) => self.apply_batch(&updates, now),
        };
        self.shared.ctl.answer(id, reply);
        // New PFC thresholds may have paused or resumed a peer: tell it now, not with the
        // next burst (an idle switch may not have one).
        if self.tm.has_pfc_frames() {
            self.transmit_due(now, true);
        }
    }

    /// A nexthop dump with each learned neighbour's reachability: `stale` while the worker
    /// asks it again.
    fn with_reachability(&self, dump: Dump) -> Dump {
        let Dump::Nexthops(mut nexthops) = dump else {
            return dump;
        };
        for entry in nexthops.iter_mut().filter(|e| e.state == "reachable") {
            let state = self
                .neighbors
                .find(entry.ip, entry.interface)
                .and_then(|id| self.neighbors.state(id));
            if matches!(state, Some(NeighborState::Stale { .. })) {
                entry.state = "stale";
            }
        }
        Dump::Nexthops(nexthops)
    }

    /// Validates the whole batch, then applies it; a failure while applying undoes what was
    /// applied, so the batch takes effect entirely or not at all. The traffic manager's
    /// changes (ECN, PFC), which cannot fail once validated, apply last, when the tables'
    /// changes have all taken: a PFC frame they cause is never taken back.
    pub(super) fn apply_batch(&mut self, updates: &[Update], now: Picos) -> Reply {
        if let Err((index, error)) = self.forwarder.validate_updates(updates) {
            return Reply::Rejected { index, error };
        }
        for (index, update) in updates.iter().enumerate() {
            if let Update::SetPfc {
                port,
                tc,
                thresholds,
            } = *update
                && let Err(error) = self.tm.check_pfc(port, tc, thresholds)
            {
                return Reply::Rejected { index, error };
            }
        }
        let mut undo = Vec::new();
        let mut replaced = Vec::new();
        for (index, update) in updates.iter().enumerate() {
            if matches!(update, Update::SetEcn { .. } | Update::SetPfc { .. }) {
                continue;
            }
            if self.forwarder.replaces_entry(update) {
                replaced.push(index);
            }
            if let Err(error) = self.forwarder.apply_update(update, &mut undo) {
                self.forwarder.undo_updates(undo);
                return Reply::Rejected { index, error };
            }
        }
        // The slow path sends ARP/ND and answers out of a VLAN's member ports, tagged per
        // port: it follows membership changes.
        if updates
            .iter()
            .any(|u| matches!(u, Update::SetPortVlans { .. }))
        {
            self.slow.set_port_roles(self.forwarder.port_roles());
        }
        // A neighbour the operator pins or deletes is no longer the wire's to age.
        for update in updates {
            if let Update::AddNeighbor { interface, ip, .. }
            | Update::DelNeighbor { interface, ip } = *update
            {
                self.forget_neighbor(interface, ip);
            }
        }
        for update in updates {
            match *update {
                Update::SetEcn { port, tc, ecn } => {
                    self.tm.set_ecn(port, tc, ecn);
                }
                Update::SetPfc {
                    port,
                    tc,
                    thresholds,
                } => self.tm.set_pfc(now, port, tc, thresholds),
                _ => {}
            }
        }
        Reply::Applied {
            count: updates.len(),
            replaced,
        }
    }
}
