//! Run-time changes to the traffic manager (`crate::ctl`): ECN profiles per (port, TC).

use super::{EcnCurve, TrafficManager};
use crate::qos::EcnProfile;

impl<P> TrafficManager<P> {
    /// Replaces the ECN curve of (port, tc) and returns the one it had, so a refused batch can
    /// put it back with [`Self::restore_ecn_curve`]. Out-of-range ports or TCs change nothing.
    pub fn set_ecn(&mut self, port: u16, tc: u8, ecn: Option<EcnProfile>) -> Option<EcnCurve> {
        self.restore_ecn_curve(port, tc, ecn.as_ref().map(EcnCurve::new))
    }

    /// Sets the curve as it was (see [`Self::set_ecn`]); returns the replaced one.
    pub fn restore_ecn_curve(
        &mut self,
        port: u16,
        tc: u8,
        curve: Option<EcnCurve>,
    ) -> Option<EcnCurve> {
        let config = self
            .ports
            .get_mut(usize::from(port))?
            .tcs
            .get_mut(usize::from(tc))?;
        std::mem::replace(&mut config.ecn, curve)
    }
}
