//! The switch worker's side of `crate::ctl`: one request served per poll loop, between bursts.

use super::SwitchWorker;
use crate::ctl::{Reply, Request, Update};
use crate::qos::ecn::EcnCurve;

impl SwitchWorker {
    /// Serves the next control request, if one is waiting (one atomic load when none is).
    #[inline]
    pub(super) fn serve_control(&mut self) {
        let Some((id, request)) = self.shared.ctl.next_request() else {
            return;
        };
        let reply = match request {
            Request::Dump(kinds) => {
                Reply::Dump(kinds.into_iter().map(|k| self.forwarder.dump(k)).collect())
            }
            Request::Apply(updates) => self.apply_batch(&updates),
        };
        self.shared.ctl.answer(id, reply);
    }

    /// Validates the whole batch, then applies it; a failure while applying undoes what was
    /// applied, so the batch takes effect entirely or not at all.
    fn apply_batch(&mut self, updates: &[Update]) -> Reply {
        if let Err((index, error)) = self.forwarder.validate_updates(updates) {
            return Reply::Rejected { index, error };
        }
        let mut undo = Vec::new();
        let mut ecn_undo: Vec<(u16, u8, Option<EcnCurve>)> = Vec::new();
        for (index, update) in updates.iter().enumerate() {
            let result = match *update {
                Update::SetEcn { port, tc, ecn } => {
                    ecn_undo.push((port, tc, self.tm.set_ecn(port, tc, ecn)));
                    Ok(())
                }
                _ => self.forwarder.apply_update(update, &mut undo),
            };
            if let Err(error) = result {
                self.forwarder.undo_updates(undo);
                for (port, tc, curve) in ecn_undo.into_iter().rev() {
                    self.tm.restore_ecn_curve(port, tc, curve);
                }
                return Reply::Rejected { index, error };
            }
        }
        Reply::Applied {
            count: updates.len(),
        }
    }
}
