//! Run-time replacement of an SRv6 policy's encapsulation (crate::ctl): the same checks as at
//! start, building the new SRH before anything changes; the policy keeps its index and its
//! counters, so routes pointing at it follow the new path with their next packet.

use super::{MAX_POLICY_SRH_LEN, Policy, Srv6State};
use crate::pipeline::ForwarderError;
use crate::pipeline::spec::{EncapMode, PolicySpec};
use crate::wire::srh;

impl Srv6State {
    /// The fast-path form of `spec`, or why it cannot be one.
    fn build_policy(spec: &PolicySpec, vrfs: usize) -> Result<Policy, ForwarderError> {
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
                    "{what}: {} segments do not fit the mbuf headroom (at most {} in the SRH)",
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

    /// Checks that policy `index` exists and `spec` builds.
    pub(crate) fn check_policy(
        &self,
        index: u32,
        spec: &PolicySpec,
        vrfs: usize,
    ) -> Result<(), ForwarderError> {
        if index as usize >= self.policies.len() {
            return Err(ForwarderError(format!(
                "SRv6 policy {index} does not exist"
            )));
        }
        Self::build_policy(spec, vrfs).map(drop)
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
