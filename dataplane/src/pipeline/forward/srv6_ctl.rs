//! Run-time changes to SRv6 (crate::ctl): replacing a policy's encapsulation (the same checks
//! as at start, building the new SRH before anything changes; the policy keeps its index and
//! its counters, so routes pointing at it follow the new path with their next packet), and
//! adding and deleting policies and local SIDs in slots (a deleted one leaves its slot free
//! for the next addition; counters restart when a slot is reused).

use super::{MAX_POLICY_SRH_LEN, Policy, Sid, SidTable, Srv6State};
use crate::pipeline::ForwarderError;
use crate::pipeline::spec::{EncapMode, PolicySpec, SidSpec};
use crate::wire::srh;
use std::net::Ipv6Addr;

/// How to take back one SRv6 slot change.
#[derive(Debug, Clone)]
pub enum Srv6Undo {
    /// A SID was added in `slot` (pushed: the table grew by it).
    SidAdded {
        slot: u32,
        vrf: u16,
        prefix: Ipv6Addr,
        len: u8,
        pushed: bool,
    },
    /// The SID in `slot` was deleted.
    SidDeleted {
        slot: u32,
        vrf: u16,
        prefix: Ipv6Addr,
        len: u8,
        sid: Sid,
    },
    /// A policy was created in `slot`; `previous` is the dead policy it replaced (`None`:
    /// pushed).
    PolicyAdded {
        slot: u32,
        previous: Option<Box<Policy>>,
    },
    PolicyDeleted {
        slot: u32,
    },
}

impl Srv6State {
    /// The fast-path form of `spec`, or why it cannot be one.
    pub(crate) fn build_policy(spec: &PolicySpec, vrfs: usize) -> Result<Policy, ForwarderError> {
        let what = format!("SRv6 policy {}", spec.name);
        let err = |m: String| Err(ForwarderError(m));
        if usize::from(spec.outer_vrf) >= vrfs {
            return err(format!("{what}: VRF {} does not exist", spec.outer_vrf));
        }
        let Some(first) = spec.segments.first() else {
            return err(format!("{what}: no segments"));
        };
        // RFC 8986 5.1: Segment List[0] is the last segment; H.Encaps.Red leaves S1 out.
        let in_srh: Vec<[u8; 16]> = match spec.mode {
            EncapMode::Encaps => spec.segments.iter().rev().map(|a| a.octets()).collect(),
            EncapMode::EncapsRed => spec.segments[1..]
                .iter()
                .rev()
                .map(|a| a.octets())
                .collect(),
        };
        let mut srh_bytes = Vec::new();
        if !in_srh.is_empty() {
            if 8 + 16 * in_srh.len() > MAX_POLICY_SRH_LEN {
                return err(format!(
                    "{what}: {} segments do not fit an SRH (at most {} in it)",
                    spec.segments.len(),
                    (MAX_POLICY_SRH_LEN - 8) / 16
                ));
            }
            srh_bytes = vec![0u8; 8 + 16 * in_srh.len()];
            let segments_left = (spec.segments.len() - 1) as u8;
            let last_entry = (in_srh.len() - 1) as u8;
            srh::emit(&mut srh_bytes, 0, segments_left, last_entry, &in_srh)
                .map_err(|e| ForwarderError(format!("{what}: {e}")))?;
        }
        Ok(Policy {
            source: spec.source.octets(),
            first_segment: first.octets(),
            hop_limit: spec.hop_limit,
            outer_vrf: spec.outer_vrf,
            srh: srh_bytes,
        })
    }

    /// Every local SID, by VRF and prefix.
    pub(crate) fn sid_entries(&self) -> Vec<crate::ctl::SidEntry> {
        let mut entries = Vec::new();
        for (vrf, table) in self.my_sid.iter().enumerate() {
            let Some(table) = table else { continue };
            for (prefix, len, slot) in table.iter() {
                let Some(Some(sid)) = self.sids.get(slot as usize) else {
                    continue;
                };
                entries.push(crate::ctl::SidEntry {
                    slot,
                    vrf: vrf as u16,
                    prefix,
                    len,
                    behavior: sid.behavior,
                    csid: sid.csid.map(|c| c.masks()),
                    psp: sid.psp,
                    usp: sid.usp,
                });
            }
        }
        entries.sort_by_key(|e| (e.vrf, e.prefix, e.len));
        entries
    }

    /// Local SIDs and policies there is room for (counters are allocated at start).
    pub(crate) fn sid_capacity(&self) -> usize {
        self.counters.sids.len()
    }

    pub(crate) fn policy_capacity(&self) -> usize {
        self.counters.policies.len()
    }

    pub(crate) fn sid_slots(&self) -> usize {
        self.sids.len()
    }

    pub(crate) fn sid_used(&self, slot: u32) -> bool {
        matches!(self.sids.get(slot as usize), Some(Some(_)))
    }

    pub(crate) fn policy_slots(&self) -> usize {
        self.policies.len()
    }

    /// The SID slot installed for exactly `prefix/len` in `vrf`.
    pub(crate) fn sid_at(&self, vrf: u16, prefix: Ipv6Addr, len: u8) -> Option<u32> {
        self.my_sid
            .get(usize::from(vrf))?
            .as_ref()?
            .get(prefix, len)
    }

    /// Slots of the End.X / uA SIDs that point at `target` (a group is not deleted under
    /// them).
    pub(crate) fn sids_pointing_at(&self, target: crate::pipeline::spec::RouteTarget) -> Vec<u32> {
        self.sids
            .iter()
            .enumerate()
            .filter(|(_, s)| {
                matches!(s, Some(Sid { behavior: crate::pipeline::spec::SidBehavior::EndX { target: t }, .. }) if *t == target)
            })
            .map(|(i, _)| i as u32)
            .collect()
    }

    /// Adds SID `spec` in `slot` (checked with `check_sid_slot` and `build_sid`).
    pub(crate) fn add_sid(
        &mut self,
        slot: u32,
        spec: &SidSpec,
        sid: Sid,
    ) -> Result<Srv6Undo, ForwarderError> {
        let vrf = usize::from(spec.vrf);
        if self.sid_at(spec.vrf, spec.prefix, spec.len).is_some() {
            return Err(ForwarderError(format!(
                "SID {}: {}/{} is already a local SID",
                spec.name, spec.prefix, spec.len
            )));
        }
        let table = self
            .my_sid
            .get_mut(vrf)
            .ok_or_else(|| ForwarderError(format!("VRF {vrf} does not exist")))?
            .get_or_insert_with(SidTable::new);
        table
            .insert(spec.prefix, spec.len, slot)
            .map_err(|e| ForwarderError(format!("SID {}: {e}", spec.name)))?;
        let pushed = slot as usize == self.sids.len();
        if pushed {
            self.sids.push(Some(sid));
        } else {
            self.sids[slot as usize] = Some(sid);
        }
        if let Some(c) = self.counters.sids.get(slot as usize) {
            c.reset();
        }
        Ok(Srv6Undo::SidAdded {
            slot,
            vrf: spec.vrf,
            prefix: spec.prefix,
            len: spec.len,
            pushed,
        })
    }

    /// Deletes the SID in `slot`, which must be `prefix/len` in `vrf`.
    pub(crate) fn del_sid(
        &mut self,
        slot: u32,
        vrf: u16,
        prefix: Ipv6Addr,
        len: u8,
    ) -> Result<Srv6Undo, ForwarderError> {
        if self.sid_at(vrf, prefix, len) != Some(slot) {
            return Err(ForwarderError(format!(
                "no local SID {prefix}/{len} in VRF {vrf} at slot {slot}"
            )));
        }
        let Some(Some(sid)) = self.sids.get(slot as usize).copied() else {
            return Err(ForwarderError(format!("SID slot {slot} is free")));
        };
        if let Some(Some(table)) = self.my_sid.get_mut(usize::from(vrf)) {
            table.remove(prefix, len);
        }
        self.sids[slot as usize] = None;
        Ok(Srv6Undo::SidDeleted {
            slot,
            vrf,
            prefix,
            len,
            sid,
        })
    }

    /// Creates policy `spec` in `slot` (checked with `check_policy_slot`).
    pub(crate) fn add_policy(
        &mut self,
        slot: u32,
        spec: &PolicySpec,
        vrfs: usize,
    ) -> Result<Srv6Undo, ForwarderError> {
        let policy = Self::build_policy(spec, vrfs)?;
        let s = slot as usize;
        let previous = if s == self.policies.len() {
            self.policies.push(policy);
            self.policy_live.push(true);
            None
        } else if s < self.policies.len() && !self.policy_live[s] {
            self.policy_live[s] = true;
            Some(Box::new(std::mem::replace(&mut self.policies[s], policy)))
        } else {
            return Err(ForwarderError(format!("SRv6 policy slot {slot} is taken")));
        };
        if let Some(c) = self.counters.policies.get(s) {
            c.reset();
        }
        Ok(Srv6Undo::PolicyAdded { slot, previous })
    }

    /// Deletes policy `slot` (the caller checked that no route points at it).
    pub(crate) fn del_policy(&mut self, slot: u32) -> Result<Srv6Undo, ForwarderError> {
        if !self.policy_live(slot) {
            return Err(ForwarderError(format!("SRv6 policy {slot} does not exist")));
        }
        self.policy_live[slot as usize] = false;
        Ok(Srv6Undo::PolicyDeleted { slot })
    }

    /// Takes back one of the changes above.
    pub(crate) fn undo(&mut self, undo: Srv6Undo) {
        match undo {
            Srv6Undo::SidAdded {
                slot,
                vrf,
                prefix,
                len,
                pushed,
            } => {
                if let Some(Some(table)) = self.my_sid.get_mut(usize::from(vrf)) {
                    table.remove(prefix, len);
                }
                if pushed {
                    self.sids.truncate(slot as usize);
                } else if let Some(s) = self.sids.get_mut(slot as usize) {
                    *s = None;
                }
            }
            Srv6Undo::SidDeleted {
                slot,
                vrf,
                prefix,
                len,
                sid,
            } => {
                if let Some(table) = self.my_sid.get_mut(usize::from(vrf)) {
                    let _ = table
                        .get_or_insert_with(SidTable::new)
                        .insert(prefix, len, slot);
                }
                if let Some(s) = self.sids.get_mut(slot as usize) {
                    *s = Some(sid);
                }
            }
            Srv6Undo::PolicyAdded { slot, previous } => match previous {
                None => {
                    self.policies.truncate(slot as usize);
                    self.policy_live.truncate(slot as usize);
                }
                Some(p) => {
                    self.policies[slot as usize] = *p;
                    self.policy_live[slot as usize] = false;
                }
            },
            Srv6Undo::PolicyDeleted { slot } => self.policy_live[slot as usize] = true,
        }
    }

    /// Replaces policy `index` (checked with `check_policy`); returns the old form for undo.
    pub(crate) fn replace_policy(
        &mut self,
        index: u32,
        spec: &PolicySpec,
        vrfs: usize,
    ) -> Result<PolicyBackup, ForwarderError> {
        let policy = Self::build_policy(spec, vrfs)?;
        let slot = self
            .policies
            .get_mut(index as usize)
            .ok_or_else(|| ForwarderError(format!("SRv6 policy {index} does not exist")))?;
        Ok(PolicyBackup(std::mem::replace(slot, policy)))
    }

    /// Puts back what `replace_policy` replaced.
    pub(crate) fn restore_policy(&mut self, index: u32, backup: PolicyBackup) {
        if let Some(slot) = self.policies.get_mut(index as usize) {
            *slot = backup.0;
        }
    }
}

/// A policy as it was before a replacement.
#[derive(Debug, Clone)]
pub struct PolicyBackup(Policy);
