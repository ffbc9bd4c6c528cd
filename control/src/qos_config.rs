//! The QoS part of the config file: `[qos.<profile>]` tables (trust, maps, lossless classes,
//! per-TC scheduling, queue limits, ECN), the ports' `speed_gbps`/`shaper`/`qos` keys and the
//! switch-wide buffer, validated into the dataplane's `QosSpec` with located errors.

use crate::config::{ConfigError, Locator};
use dataplane::clock::PICOS_PER_MICRO;
use dataplane::clock::Picos;
use dataplane::qos::pfc::{self, HeadroomInputs, PfcThresholds};
use dataplane::qos::{
    EcnProfile, PortQos, PortSpeed, QosSpec, Sched, TC_COUNT, TcSpec, Trust, WatchdogAction,
    WatchdogSpec,
};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// Port speeds the shaper knows (Gb/s); each divides 8000, so wire times are exact.
pub const SPEEDS_GBPS: [i64; 7] = [10, 25, 40, 50, 100, 200, 400];
pub const DEFAULT_SPEED_GBPS: i64 = 100;
/// The largest buffer, and the largest PFC threshold (`pfc::MAX_PFC_BYTES`).
pub const MAX_BUFFER_BYTES: u64 = pfc::MAX_PFC_BYTES;

/// A byte count: an integer, or a string with a unit (B, KB, MB, GB = powers of 1000; KiB,
/// MiB, GiB = powers of 1024).
#[derive(Debug, Clone)]
pub(crate) enum RawSize {
    Bytes(i64),
    Text(String),
}

/// By hand rather than `untagged`, so that `xoff = 1.5` or `xoff = true` says what a size is
/// instead of "data did not match any variant".
impl<'de> Deserialize<'de> for RawSize {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = RawSize;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a byte count: an integer, or a string like \"100KB\" or \"1MiB\"")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<RawSize, E> {
                Ok(RawSize::Bytes(v))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<RawSize, E> {
                i64::try_from(v)
                    .map(RawSize::Bytes)
                    .map_err(|_| E::custom(format!("{v} bytes is too large")))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<RawSize, E> {
                Err(E::custom(format!(
                    "{v} is not a whole number of bytes: write an integer, or a string with a \
                     smaller unit (\"1500KB\", not \"1.5MB\")"
                )))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawSize, E> {
                Ok(RawSize::Text(v.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQosProfile {
    trust: Option<Spanned<String>>,
    lossless: Option<Spanned<Vec<Spanned<i64>>>>,
    dscp_to_tc: Option<Spanned<BTreeMap<String, Spanned<i64>>>>,
    pcp_to_tc: Option<Spanned<BTreeMap<String, Spanned<i64>>>>,
    tc: Option<Spanned<BTreeMap<String, Spanned<RawTc>>>>,
    pfc_watchdog: Option<Spanned<RawWatchdog>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWatchdog {
    enabled: Option<Spanned<bool>>,
    action: Option<Spanned<String>>,
    detection_ms: Option<Spanned<i64>>,
    restoration_ms: Option<Spanned<i64>>,
}

/// A PFC threshold: a byte count, or "auto" (computed from the port, REFERENCE.md 1.2).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPfc {
    xoff: Option<Spanned<RawSize>>,
    xon: Option<Spanned<RawSize>>,
    headroom: Option<Spanned<RawSize>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTc {
    sched: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    queue_limit: Option<Spanned<RawSize>>,
    ecn: Option<Spanned<RawEcn>>,
    watermarks: Option<Vec<Spanned<RawSize>>>,
    pfc: Option<Spanned<RawPfc>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEcn {
    kmin: Spanned<RawSize>,
    kmax: Spanned<RawSize>,
    pmax: Option<Spanned<f64>>,
}

/// The QoS keys of one `[[port]]`.
pub(crate) struct PortQosKeys<'r> {
    pub speed_gbps: Option<&'r Spanned<i64>>,
    pub shaper: Option<&'r Spanned<bool>>,
    pub qos: Option<&'r Spanned<String>>,
    pub cable_m: Option<&'r Spanned<i64>>,
    /// The port's validated MTU, if set.
    pub mtu: Option<u16>,
}

/// PFC thresholds as written: `None` is "auto".
#[derive(Debug, Clone, Copy, Default)]
struct PfcSetting {
    xoff: Option<u64>,
    xon: Option<u64>,
    headroom: Option<u64>,
}

/// A profile before it meets a port: PFC thresholds may depend on the port.
#[derive(Debug, Clone)]
struct Profile {
    qos: PortQos,
    pfc: [Option<PfcSetting>; TC_COUNT],
}

/// The smallest frame with its FCS: no queue limit or PFC headroom may be smaller.
pub const MIN_FRAME_BYTES: u64 = 64;
pub const DEFAULT_CABLE_M: i64 = PortQos::DEFAULT_CABLE_M as i64;
pub const MAX_CABLE_M: i64 = 100_000;

/// Parses a byte count; `Err` says what is wrong.
pub(crate) fn parse_size(raw: &RawSize) -> Result<u64, String> {
    match raw {
        RawSize::Bytes(n) if *n >= 0 => Ok(*n as u64),
        RawSize::Bytes(n) => Err(format!("{n} is negative")),
        RawSize::Text(text) => {
            let t = text.trim();
            if t.starts_with('-') {
                return Err(format!("`{text}` is negative"));
            }
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
            if !digits.is_empty() && unit.starts_with(['.', ',']) {
                return Err(format!(
                    "`{text}` is not a whole number: use a smaller unit (\"1500KB\", not \"1.5MB\")"
                ));
            }
            let unit = unit.trim();
            let scale: u64 = match unit {
                "" | "B" => 1,
                "KB" => 1_000,
                "MB" => 1_000_000,
                "GB" => 1_000_000_000,
                "KiB" => 1 << 10,
                "MiB" => 1 << 20,
                "GiB" => 1 << 30,
                _ => {
                    return Err(format!(
                        "`{text}`: unknown unit `{unit}` (use B, KB, MB, GB, KiB, MiB or GiB)"
                    ));
                }
            };
            let value: u64 = digits
                .parse()
                .map_err(|_| format!("`{text}` is not a byte count like 100KB or 1MiB"))?;
            value
                .checked_mul(scale)
                .ok_or_else(|| format!("`{text}` is too large"))
        }
    }
}

struct QosBuilder<'a> {
    loc: &'a Locator<'a>,
}

impl QosBuilder<'_> {
    fn size(&self, value: &Spanned<RawSize>, field: &str) -> Result<u64, ConfigError> {
        parse_size(value.get_ref()).map_err(|m| self.loc.at(value.span(), field, m))
    }

    fn err(&self, span: Range<usize>, field: &str, message: impl Into<String>) -> ConfigError {
        self.loc.at(span, field, message)
    }

    /// A threshold: `None` for "auto".
    fn auto_or_size(
        &self,
        value: &Spanned<RawSize>,
        field: &str,
    ) -> Result<Option<u64>, ConfigError> {
        match value.get_ref() {
            RawSize::Text(t) if t.trim() == "auto" => Ok(None),
            _ => self.size(value, field).map(Some),
        }
    }

    fn watchdog(&self, raw: &RawWatchdog, base: &str) -> Result<Option<WatchdogSpec>, ConfigError> {
        if raw.enabled.as_ref().is_some_and(|e| !*e.get_ref()) {
            return Ok(None);
        }
        let mut spec = WatchdogSpec::default();
        if let Some(action) = &raw.action {
            spec.action = match action.get_ref().as_str() {
                "drop" => WatchdogAction::Drop,
                "forward" => WatchdogAction::Forward,
                "alert" => WatchdogAction::Alert,
                other => {
                    return Err(self.err(
                        action.span(),
                        &format!("{base}.action"),
                        format!("`{other}` is not a watchdog action: use \"drop\", \"forward\" or \"alert\""),
                    ));
                }
            };
        }
        let ms = |value: &Option<Spanned<i64>>, key: &str, default: Picos| match value {
            None => Ok(default),
            Some(v) if (1..=60_000).contains(v.get_ref()) => {
                Ok(*v.get_ref() as u64 * 1000 * PICOS_PER_MICRO)
            }
            Some(v) => Err(self.err(
                v.span(),
                &format!("{base}.{key}"),
                format!("{} is out of range 1..=60000 (milliseconds)", v.get_ref()),
            )),
        };
        spec.detection = ms(&raw.detection_ms, "detection_ms", spec.detection)?;
        spec.restoration = ms(&raw.restoration_ms, "restoration_ms", spec.restoration)?;
        Ok(Some(spec))
    }

    fn profile(&self, name: &str, raw: &RawQosProfile) -> Result<Profile, ConfigError> {
        let base = format!("qos.{name}");
        let mut qos = PortQos::default();
        let mut pfc: [Option<PfcSetting>; TC_COUNT] = [None; TC_COUNT];
        if let Some(trust) = &raw.trust {
            qos.trust = match trust.get_ref().as_str() {
                "dscp" => Trust::Dscp,
                "pcp" => Trust::Pcp,
                other => {
                    return Err(self.err(
                        trust.span(),
                        &format!("{base}.trust"),
                        format!("`{other}` is not a trust mode: use \"dscp\" or \"pcp\""),
                    ));
                }
            };
        }
        if let Some(list) = &raw.lossless {
            for tc in list.get_ref() {
                let field = format!("{base}.lossless");
                let t = self.tc_number(tc, &field)?;
                if qos.lossless & (1 << t) != 0 {
                    return Err(self.err(tc.span(), &field, format!("TC {t} is listed twice")));
                }
                qos.lossless |= 1 << t;
            }
        }
        if let Some(map) = &raw.dscp_to_tc {
            self.class_map(map, &format!("{base}.dscp_to_tc"), 63, &mut qos.dscp_to_tc)?;
        }
        if let Some(map) = &raw.pcp_to_tc {
            self.class_map(map, &format!("{base}.pcp_to_tc"), 7, &mut qos.pcp_to_tc)?;
        }
        if let Some(tcs) = &raw.tc {
            for (key, tc) in tcs.get_ref() {
                let field = format!("{base}.tc.{key}");
                let index = match key.parse::<usize>() {
                    Ok(i) if i < TC_COUNT => i,
                    _ => {
                        return Err(self.err(
                            tc.span(),
                            &field,
                            format!("`{key}` is not a traffic class: use 0..=7"),
                        ));
                    }
                };
                qos.tcs[index] = self.tc(tc.get_ref(), &field)?;
                if let Some(raw_pfc) = &tc.get_ref().pfc {
                    if !qos.is_lossless(index as u8) {
                        return Err(self.err(
                            raw_pfc.span(),
                            &format!("{field}.pfc"),
                            format!(
                                "TC {index} is not lossless: add it to {base}.lossless for PFC"
                            ),
                        ));
                    }
                    pfc[index] = Some(self.pfc(raw_pfc.get_ref(), &format!("{field}.pfc"))?);
                }
            }
        }
        // Every lossless TC has PFC, with automatic thresholds unless written.
        for (tc, setting) in pfc.iter_mut().enumerate() {
            if qos.is_lossless(tc as u8) && setting.is_none() {
                *setting = Some(PfcSetting::default());
            }
        }
        if let Some(w) = &raw.pfc_watchdog {
            qos.watchdog = self.watchdog(w.get_ref(), &format!("{base}.pfc_watchdog"))?;
        }
        Ok(Profile { qos, pfc })
    }

    /// A TC's written PFC thresholds. Written sizes must make sense on their own (DESIGN.md:
    /// XOFF when the ingress bytes reach `xoff`, XON when they fall below `xon`, drops beyond
    /// `xoff + headroom`); what depends on the port (a headroom below one of its frames) is a
    /// `check-config` warning, see `pfc_warnings`.
    fn pfc(&self, r: &RawPfc, field: &str) -> Result<PfcSetting, ConfigError> {
        // Each key given is held to the rules the control API and the traffic manager apply
        // (`pfc::check_xoff` and the others); "auto" values meet them by construction.
        let get = |v: &Option<Spanned<RawSize>>,
                   key: &str,
                   rule: fn(u64) -> Result<(), String>|
         -> Result<Option<u64>, ConfigError> {
            let Some(v) = v else { return Ok(None) };
            let size = self.auto_or_size(v, &format!("{field}.{key}"))?;
            if let Some(bytes) = size {
                rule(bytes).map_err(|message| {
                    self.err(
                        v.span(),
                        &format!("{field}.{key}"),
                        format!("{message}; \"auto\" computes it from the link"),
                    )
                })?;
            }
            Ok(size)
        };
        let setting = PfcSetting {
            xoff: get(&r.xoff, "xoff", pfc::check_xoff)?,
            xon: get(&r.xon, "xon", pfc::check_xon)?,
            headroom: get(&r.headroom, "headroom", pfc::check_headroom)?,
        };
        if let (Some(xoff), Some(xon), Some(span)) =
            (setting.xoff, setting.xon, r.xon.as_ref().map(Spanned::span))
        {
            pfc::check_xon_below_xoff(xoff, xon)
                .map_err(|message| self.err(span, &format!("{field}.xon"), message))?;
        }
        Ok(setting)
    }

    fn tc_number(&self, tc: &Spanned<i64>, field: &str) -> Result<u8, ConfigError> {
        match *tc.get_ref() {
            t @ 0..=7 => Ok(t as u8),
            t => Err(self.err(
                tc.span(),
                field,
                format!("{t} is not a traffic class (0..=7)"),
            )),
        }
    }

    fn class_map<const N: usize>(
        &self,
        map: &Spanned<BTreeMap<String, Spanned<i64>>>,
        field: &str,
        max_key: usize,
        into: &mut [u8; N],
    ) -> Result<(), ConfigError> {
        for (key, tc) in map.get_ref() {
            let index = match key.parse::<usize>() {
                Ok(k) if k <= max_key => k,
                _ => {
                    return Err(self.err(
                        tc.span(),
                        &format!("{field}.{key}"),
                        format!("`{key}` is not a code point (0..={max_key})"),
                    ));
                }
            };
            into[index] = self.tc_number(tc, &format!("{field}.{key}"))?;
        }
        Ok(())
    }

    fn tc(&self, raw: &RawTc, base: &str) -> Result<TcSpec, ConfigError> {
        let mut tc = TcSpec::default();
        let weight = match &raw.weight {
            None => TcSpec::DEFAULT_DWRR_WEIGHT,
            Some(w) if (1..=1_000_000).contains(w.get_ref()) => *w.get_ref() as u32,
            Some(w) => {
                return Err(self.err(
                    w.span(),
                    &format!("{base}.weight"),
                    format!(
                        "{} is out of range 1..=1000000 (bytes per round)",
                        w.get_ref()
                    ),
                ));
            }
        };
        tc.sched = match raw.sched.as_ref().map(|s| (s.get_ref().as_str(), s.span())) {
            None | Some(("dwrr", _)) => Sched::Dwrr { weight },
            Some(("strict", span)) => {
                if let Some(w) = &raw.weight {
                    return Err(self.err(
                        w.span(),
                        &format!("{base}.weight"),
                        "a strict queue has no weight; remove it or use sched = \"dwrr\"",
                    ));
                }
                let _ = span;
                Sched::Strict
            }
            Some((other, span)) => {
                return Err(self.err(
                    span,
                    &format!("{base}.sched"),
                    format!("`{other}` is not a scheduler: use \"strict\" or \"dwrr\""),
                ));
            }
        };
        if let Some(limit) = &raw.queue_limit {
            let field = format!("{base}.queue_limit");
            tc.queue_limit = self.size(limit, &field)?;
            if tc.queue_limit < MIN_FRAME_BYTES {
                return Err(self.err(limit.span(), &field, "must hold at least one 64-byte frame"));
            }
        }
        if let Some(ecn) = &raw.ecn {
            let field = format!("{base}.ecn");
            let e = ecn.get_ref();
            let kmin = self.size(&e.kmin, &format!("{field}.kmin"))?;
            let kmax = self.size(&e.kmax, &format!("{field}.kmax"))?;
            if kmax < kmin {
                return Err(self.err(
                    e.kmax.span(),
                    &format!("{field}.kmax"),
                    format!("{kmax} is below kmin ({kmin}); a step marker has kmin = kmax"),
                ));
            }
            let pmax = match &e.pmax {
                None => 1.0,
                Some(p) if (0.0..=1.0).contains(p.get_ref()) => *p.get_ref(),
                Some(p) => {
                    return Err(self.err(
                        p.span(),
                        &format!("{field}.pmax"),
                        format!("{} is not a probability (0.0..=1.0)", p.get_ref()),
                    ));
                }
            };
            tc.ecn = Some(EcnProfile { kmin, kmax, pmax });
        }
        if let Some(marks) = &raw.watermarks {
            for (i, mark) in marks.iter().enumerate() {
                tc.watermarks
                    .push(self.size(mark, &format!("{base}.watermarks[{i}]"))?);
            }
        }
        Ok(tc)
    }
}

/// Builds the switch's QoS from the `[qos.*]` profiles, each port's keys and the buffer size.
pub(crate) fn build_qos(
    loc: &Locator,
    profiles: Option<&Spanned<BTreeMap<String, Spanned<RawQosProfile>>>>,
    ports: &[PortQosKeys],
    buffer: Option<&Spanned<RawSize>>,
    ecn_seed: Option<&Spanned<i64>>,
) -> Result<QosSpec, ConfigError> {
    let builder = QosBuilder { loc };
    let mut built: BTreeMap<&str, Profile> = BTreeMap::new();
    if let Some(profiles) = profiles {
        for (name, raw) in profiles.get_ref() {
            built.insert(name, builder.profile(name, raw.get_ref())?);
        }
    }
    let mut spec = QosSpec::new(ports.len());
    for (index, keys) in ports.iter().enumerate() {
        let profile = match keys.qos {
            None => Profile {
                qos: PortQos::default(),
                pfc: [None; TC_COUNT],
            },
            Some(name) => match built.get(name.get_ref().as_str()) {
                Some(q) => q.clone(),
                None => {
                    let known: Vec<&str> = built.keys().copied().collect();
                    return Err(loc.at(
                        name.span(),
                        &format!("port[{index}].qos"),
                        format!(
                            "no profile [qos.{}] is defined{}",
                            name.get_ref(),
                            if known.is_empty() {
                                String::new()
                            } else {
                                format!(" (defined: {})", known.join(", "))
                            }
                        ),
                    ));
                }
            },
        };
        let gbps = match keys.speed_gbps {
            None => DEFAULT_SPEED_GBPS,
            Some(s) if SPEEDS_GBPS.contains(s.get_ref()) => *s.get_ref(),
            Some(s) => {
                return Err(loc.at(
                    s.span(),
                    &format!("port[{index}].speed_gbps"),
                    format!(
                        "{} is not a supported speed (10, 25, 40, 50, 100, 200 or 400)",
                        s.get_ref()
                    ),
                ));
            }
        };
        let mut qos = profile.qos;
        qos.speed = match keys.shaper.map(|s| *s.get_ref()) {
            Some(false) => PortSpeed::Unlimited,
            _ => PortSpeed::Gbps(gbps as u32),
        };
        let cable_m = match keys.cable_m {
            None => DEFAULT_CABLE_M,
            Some(c) if (0..=MAX_CABLE_M).contains(c.get_ref()) => *c.get_ref(),
            Some(c) => {
                return Err(loc.at(
                    c.span(),
                    &format!("port[{index}].cable_m"),
                    format!("{} is out of range 0..={MAX_CABLE_M} (metres)", c.get_ref()),
                ));
            }
        };
        let inputs = HeadroomInputs {
            gbps: gbps as u32,
            cable_m: cable_m as u32,
            mtu: max_frame(keys.mtu),
        };
        qos.peer_delay = inputs.peer_delay();
        let auto = inputs.auto();
        for (tc, setting) in profile.pfc.iter().enumerate() {
            qos.pfc[tc] = setting.map(|s| {
                let xoff = s.xoff.unwrap_or(auto.xoff);
                PfcThresholds {
                    xoff,
                    xon: s.xon.unwrap_or(auto.xon.min(xoff)),
                    headroom: s.headroom.unwrap_or(auto.headroom),
                }
            });
            // Both written: checked with the profile; xon automatic: at most xoff. Left: an
            // xon written above this port's automatic XOFF.
            if let Some(th) = qos.pfc[tc]
                && th.xon > th.xoff
            {
                return Err(loc.at(
                    keys.qos.map_or(0..0, |q| q.span()),
                    &format!("port[{index}].qos"),
                    format!(
                        "TC {tc}: the xon given ({}) is above this port's automatic XOFF ({}); \
                         give xoff too, or a smaller xon",
                        th.xon, th.xoff
                    ),
                ));
            }
        }
        spec.ports[index] = qos;
    }
    if let Some(buffer) = buffer {
        let bytes = builder.size(buffer, "dataplane.buffer")?;
        if !(64..=MAX_BUFFER_BYTES).contains(&bytes) {
            return Err(loc.at(
                buffer.span(),
                "dataplane.buffer",
                format!("{bytes} bytes is out of range 64..={MAX_BUFFER_BYTES}"),
            ));
        }
        spec.buffer_bytes = bytes;
    }
    if let Some(seed) = ecn_seed {
        if *seed.get_ref() < 0 {
            return Err(loc.at(seed.span(), "dataplane.ecn_seed", "must not be negative"));
        }
        spec.ecn_seed = *seed.get_ref() as u64;
    }
    Ok(spec)
}

/// The largest frame a port carries, as the automatic PFC thresholds assume: its MTU plus 18
/// bytes of Ethernet header and FCS, or SONiC's 9100 without an MTU.
pub fn max_frame(mtu: Option<u16>) -> u32 {
    mtu.map_or(PortQos::DEFAULT_LOSSLESS_MTU, |m| u32::from(m) + 18)
}

/// `check-config` warnings about PFC thresholds that are valid but lose frames: a headroom
/// below one of the port's largest frames (such a frame arriving as the ingress bytes near
/// XOFF is dropped: the TC is lossless only for smaller frames), and `xoff + headroom` beyond
/// the shared buffer (lossless frames are dropped as `buffer_full` first). Tests that show
/// "too little headroom, counted drops" use such values on purpose, so they are not errors.
pub fn pfc_warnings(spec: &QosSpec, ports: &[crate::config::PortConfig]) -> Vec<String> {
    let mut lines = Vec::new();
    for (port, qos) in ports.iter().zip(&spec.ports) {
        let frame = u64::from(max_frame(port.mtu));
        let frame_is = match port.mtu {
            Some(mtu) => format!("MTU {mtu} + 18"),
            None => "no mtu: 9100 assumed".to_owned(),
        };
        for (tc, th) in qos.pfc.iter().enumerate() {
            let Some(th) = th else { continue };
            if th.headroom < frame {
                lines.push(format!(
                    "warning: port {} TC {tc}: PFC headroom {} B is less than one {frame}-byte \
                     frame ({frame_is}): a frame that size is dropped (headroom_full) once the \
                     ingress bytes pass xoff - {} B, before XOFF is even sent; headroom = \
                     \"auto\" holds what is in flight",
                    port.name,
                    th.headroom,
                    frame - th.headroom
                ));
            }
            let limit = th.xoff.saturating_add(th.headroom);
            if limit > spec.buffer_bytes {
                lines.push(format!(
                    "warning: port {} TC {tc}: PFC xoff + headroom ({} B) is more than the shared \
                     buffer ({} B): lossless frames can be dropped as buffer_full before the \
                     headroom is used; raise dataplane.buffer",
                    port.name, limit, spec.buffer_bytes
                ));
            }
        }
    }
    lines
}

/// `check-config` lines: the buffer, then each port's speed, trust, lossless set and every
/// traffic class that differs from the defaults.
pub fn summary(spec: &QosSpec, port_names: &[String]) -> Vec<String> {
    let mut lines = vec![format!(
        "qos: shared buffer {} bytes, ECN seed {}",
        spec.buffer_bytes, spec.ecn_seed
    )];
    let default = PortQos::default();
    for (name, qos) in port_names.iter().zip(&spec.ports) {
        let speed = match qos.speed {
            PortSpeed::Gbps(g) => format!("{g} Gb/s"),
            PortSpeed::Unlimited => "unshaped".to_owned(),
        };
        let trust = match qos.trust {
            Trust::Dscp => "dscp",
            Trust::Pcp => "pcp",
        };
        let lossless: Vec<String> = (0..TC_COUNT as u8)
            .filter(|&t| qos.is_lossless(t))
            .map(|t| t.to_string())
            .collect();
        let mut line = format!(
            "qos port {name}: {speed}, trust {trust}, lossless TCs [{}]",
            lossless.join(", ")
        );
        if qos.dscp_to_tc != default.dscp_to_tc || qos.pcp_to_tc != default.pcp_to_tc {
            line.push_str(", custom class maps");
        }
        for (tc, t) in qos.tcs.iter().enumerate() {
            if *t == TcSpec::default() {
                continue;
            }
            let sched = match t.sched {
                Sched::Strict => "strict".to_owned(),
                Sched::Dwrr { weight } => format!("dwrr weight {weight}"),
            };
            line.push_str(&format!("; tc{tc} {sched}, limit {} B", t.queue_limit));
            if let Some(e) = &t.ecn {
                line.push_str(&format!(", ecn {}..{} B pmax {}", e.kmin, e.kmax, e.pmax));
            }
        }
        for (tc, th) in qos.pfc.iter().enumerate() {
            if let Some(th) = th {
                line.push_str(&format!(
                    "; tc{tc} pfc xoff {} B, xon {} B, headroom {} B",
                    th.xoff, th.xon, th.headroom
                ));
            }
        }
        if qos.pfc.iter().any(Option::is_some) {
            line.push_str(&format!(
                "; peer delay {} ns; watchdog {}",
                qos.peer_delay / 1000,
                match qos.watchdog {
                    None => "off".to_owned(),
                    Some(w) => format!(
                        "{:?} after {} ms, restore after {} ms",
                        w.action,
                        w.detection / (1000 * PICOS_PER_MICRO),
                        w.restoration / (1000 * PICOS_PER_MICRO)
                    )
                    .to_lowercase(),
                }
            ));
        }
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use std::path::Path;

    const BASE: &str = r#"[switch]
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
[[vlan]]
id = 10
[[port]]
name = "p0"
devargs = "net_null0"
vlan = { mode = "access", id = 10 }
"#;

    fn parse(extra_port: &str, tables: &str) -> Result<Config, crate::config::ConfigError> {
        Config::parse(
            Path::new("q.toml"),
            &format!(
                "{BASE}{extra_port}
{tables}"
            ),
        )
    }

    fn qos_of(extra_port: &str, tables: &str) -> PortQos {
        let config = parse(extra_port, tables).unwrap_or_else(|e| panic!("{e}"));
        config.switch_spec().unwrap().qos.ports[0].clone()
    }

    #[test]
    fn a_profile_sets_trust_maps_lossless_scheduling_limits_and_ecn() {
        let q = qos_of(
            "speed_gbps = 25
qos = \"rdma\"",
            r#"[qos.rdma]
trust = "pcp"
lossless = [3, 4]
pcp_to_tc = { 1 = 0 }
dscp_to_tc = { 46 = 5 }
[qos.rdma.tc.3]
weight = 4000
queue_limit = "2MiB"
ecn = { kmin = "100KB", kmax = "400KB", pmax = 0.2 }
watermarks = ["50KB"]
[qos.rdma.tc.6]
sched = "strict"
"#,
        );
        assert_eq!(q.speed, PortSpeed::Gbps(25));
        assert_eq!(q.trust, Trust::Pcp);
        assert_eq!(q.lossless, (1 << 3) | (1 << 4));
        assert_eq!(q.pcp_to_tc, [0, 0, 2, 3, 4, 5, 6, 7]);
        assert_eq!(q.dscp_to_tc[46], 5);
        assert_eq!(q.dscp_to_tc[48], 6, "defaults kept");
        assert_eq!(q.tcs[3].sched, Sched::Dwrr { weight: 4000 });
        assert_eq!(q.tcs[3].queue_limit, 2 << 20);
        assert_eq!(
            q.tcs[3].ecn,
            Some(EcnProfile {
                kmin: 100_000,
                kmax: 400_000,
                pmax: 0.2
            })
        );
        assert_eq!(q.tcs[3].watermarks, vec![50_000]);
        assert_eq!(q.tcs[6].sched, Sched::Strict);
        assert_eq!(q.tcs[0], TcSpec::default());
    }

    #[test]
    fn ports_default_to_100g_dscp_trust_and_no_lossless_class() {
        let q = qos_of("", "");
        assert_eq!(q, PortQos::default());
        assert_eq!(qos_of("shaper = false", "").speed, PortSpeed::Unlimited);
        let config = parse("", "").unwrap();
        assert_eq!(
            config.switch_spec().unwrap().qos.buffer_bytes,
            QosSpec::DEFAULT_BUFFER_BYTES
        );
    }

    #[test]
    fn qos_errors_name_line_and_field() {
        let cases: [(&str, &str, &str, &str); 10] = [
            (
                "speed_gbps = 33",
                "",
                "port[0].speed_gbps",
                "not a supported speed",
            ),
            (
                "qos = \"nope\"",
                "[qos.rdma]\n",
                "port[0].qos",
                "no profile [qos.nope]",
            ),
            (
                "qos = \"q\"",
                "[qos.q]\ntrust = \"ip\"\n",
                "qos.q.trust",
                "not a trust mode",
            ),
            (
                "qos = \"q\"",
                "[qos.q]\nlossless = [8]\n",
                "qos.q.lossless",
                "not a traffic class",
            ),
            (
                "qos = \"q\"",
                "[qos.q]\nlossless = [3, 3]\n",
                "qos.q.lossless",
                "TC 3 is listed twice",
            ),
            (
                "qos = \"q\"",
                "[qos.q]\ndscp_to_tc = { 64 = 1 }\n",
                "qos.q.dscp_to_tc.64",
                "not a code point",
            ),
            (
                "qos = \"q\"",
                "[qos.q.tc.9]\n",
                "qos.q.tc.9",
                "not a traffic class",
            ),
            (
                "qos = \"q\"",
                "[qos.q.tc.1]\necn = { kmin = \"9KB\", kmax = \"1KB\" }\n",
                "qos.q.tc.1.ecn.kmax",
                "below kmin",
            ),
            (
                "qos = \"q\"",
                "[qos.q.tc.1]\nsched = \"strict\"\nweight = 5\n",
                "qos.q.tc.1.weight",
                "strict queue has no weight",
            ),
            (
                "qos = \"q\"",
                "[qos.q.tc.1]\nqueue_limit = \"1QB\"\n",
                "qos.q.tc.1.queue_limit",
                "unknown unit",
            ),
        ];
        for (port, tables, field, message) in cases {
            let e = parse(port, tables).expect_err(field);
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(message), "{e}");
            assert!(e.line > 0, "{e}");
        }
    }

    #[test]
    fn lossless_tcs_get_pfc_thresholds_computed_the_sonic_way() {
        // REFERENCE.md 1.2's worked example: 100G, 100 m, 9100-byte frames (MTU 9082 + 18):
        // headroom 56320 bytes.
        let q = qos_of(
            "mtu = 9082\ncable_m = 100\nqos = \"rdma\"",
            "[qos.rdma]\nlossless = [3]\n",
        );
        let th = q.pfc[3].expect("a lossless TC has PFC");
        assert_eq!(th.headroom, 56_320);
        assert_eq!(th.xoff, 56_320);
        assert_eq!(th.xon, 56_320 - 2 * 9100);
        assert!(q.pfc[0].is_none() && q.pfc[4].is_none());
        assert_eq!(q.peer_delay, 1_010_101 + 2_017_280);
        // Written values win; the rest stay automatic.
        let q = qos_of(
            "qos = \"rdma\"",
            "[qos.rdma]\nlossless = [3]\n[qos.rdma.tc.3]\npfc = { xoff = \"20KB\", xon = \"10KB\" }\n",
        );
        let th = q.pfc[3].unwrap();
        assert_eq!((th.xoff, th.xon), (20_000, 10_000));
        assert_eq!(
            th.headroom,
            HeadroomInputs {
                gbps: 100,
                cable_m: 5,
                mtu: 9100
            }
            .headroom()
        );
        let config = parse("qos = \"rdma\"", "[qos.rdma]\nlossless = [3]\n").unwrap();
        assert!(
            config
                .summary()
                .iter()
                .any(|l| l.contains("tc3 pfc xoff 45056 B, xon 26856 B, headroom 45056 B")),
            "check-config prints the computed values: {:?}",
            config.summary()
        );
    }

    #[test]
    fn pfc_and_watchdog_errors_name_the_field() {
        let cases: [(&str, &str, &str); 4] = [
            (
                "[qos.q.tc.2]\npfc = { xoff = 100 }\n",
                "qos.q.tc.2.pfc",
                "not lossless",
            ),
            (
                "lossless = [2]\n[qos.q.tc.2]\npfc = { xoff = 100, xon = 200 }\n",
                "qos.q.tc.2.pfc.xon",
                "above xoff",
            ),
            (
                "pfc_watchdog = { action = \"panic\" }\n",
                "qos.q.pfc_watchdog.action",
                "not a watchdog action",
            ),
            (
                "pfc_watchdog = { detection_ms = 0 }\n",
                "qos.q.pfc_watchdog.detection_ms",
                "out of range",
            ),
        ];
        for (table, field, message) in cases {
            let text = format!("[qos.q]\n{table}");
            let e = parse("qos = \"q\"", &text).expect_err(field);
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(message), "{e}");
        }
    }

    /// A `[qos.q]` profile with lossless TC 3 and `pfc` as given, on port p0 (`port` adds keys
    /// to it): the error, checked to be in q.toml at the `pfc` line (the port's `qos` line for
    /// `port[0].qos`).
    fn pfc_error(port: &str, pfc: &str) -> crate::config::ConfigError {
        let port = format!("{port}\nqos = \"q\"");
        let tables = format!("[qos.q]\nlossless = [3]\n[qos.q.tc.3]\npfc = {pfc}\n");
        let e = parse(&port, &tables).expect_err(pfc);
        let text = format!("{BASE}{port}\n{tables}");
        // What depends on the port is reported at the port's `qos` key.
        let key = if e.field.starts_with("port[") {
            "qos ="
        } else {
            "pfc ="
        };
        let line = text.lines().position(|l| l.starts_with(key)).unwrap() + 1;
        assert_eq!(e.line, line, "{e}");
        assert!(e.file.ends_with("q.toml"), "{e}");
        e
    }

    #[test]
    fn pfc_xoff_of_zero_is_refused() {
        // On its own (xon automatic, so at most 0) and with the exploratory test's zeros.
        for pfc in [
            "{ xoff = 0 }",
            "{ xoff = \"0KB\" }",
            "{ xoff = \"0\", xon = \"0\", headroom = \"0\" }",
        ] {
            let e = pfc_error("", pfc);
            assert_eq!(e.field, "qos.q.tc.3.pfc.xoff", "{e}");
            assert!(
                e.message.starts_with(
                    "0 bytes: XOFF is sent when the ingress bytes reach xoff, so the peer would be paused with nothing held"
                ),
                "{e}"
            );
            assert!(
                e.message
                    .contains("give at least 1 byte; \"auto\" computes it from the link"),
                "{e}"
            );
        }
        assert_eq!(qos_of_pfc("{ xoff = 1 }").xoff, 1, "1 byte is a threshold");
    }

    #[test]
    fn pfc_xon_of_zero_is_refused_because_xon_would_never_be_sent() {
        for pfc in [
            "{ xon = 0 }",
            "{ xon = \"0B\" }",
            "{ xoff = \"20KB\", xon = \"0MiB\" }",
        ] {
            let e = pfc_error("", pfc);
            assert_eq!(e.field, "qos.q.tc.3.pfc.xon", "{e}");
            assert!(
                e.message.contains(
                    "nothing is below 0, so XON would never be sent and the peer would stay paused (until the watchdog)"
                ),
                "{e}"
            );
        }
        let th = qos_of_pfc("{ xon = 1 }");
        assert_eq!(th.xon, 1, "1 byte resumes the peer when the TC is empty");
    }

    #[test]
    fn pfc_headroom_must_hold_one_minimum_frame() {
        for pfc in [
            "{ headroom = 0 }",
            "{ headroom = \"0KiB\" }",
            "{ headroom = 63 }",
        ] {
            let e = pfc_error("", pfc);
            assert_eq!(e.field, "qos.q.tc.3.pfc.headroom", "{e}");
            assert!(
                e.message
                    .contains("cannot hold one 64-byte frame above xoff: every frame still in flight after XOFF would be dropped"),
                "{e}"
            );
        }
        // From one minimum frame up a small headroom is allowed (tests show its drops); below
        // one of the port's frames, check-config warns (pfc_warnings_name_port_and_tc).
        assert_eq!(qos_of_pfc("{ headroom = 64 }").headroom, 64);
    }

    #[test]
    fn pfc_thresholds_beyond_the_largest_buffer_are_refused() {
        for key in ["xoff", "xon", "headroom"] {
            let e = pfc_error("", &format!("{{ {key} = \"17GiB\" }}"));
            assert_eq!(e.field, format!("qos.q.tc.3.pfc.{key}"), "{e}");
            assert_eq!(
                e.message,
                "18253611008 bytes is above the largest buffer (17179869184); \"auto\" computes it from the link"
            );
        }
        let th = qos_of_pfc("{ xoff = \"16GiB\", xon = \"16GiB\", headroom = \"16GiB\" }");
        assert_eq!(th.xoff + th.headroom, 2 * MAX_BUFFER_BYTES);
    }

    #[test]
    fn an_xon_above_the_ports_automatic_xoff_says_which_is_which() {
        // 100G, 5 m, 9100-byte frames: automatic XOFF 45056.
        let e = pfc_error("", "{ xon = \"100KB\" }");
        assert_eq!(e.field, "port[0].qos");
        assert_eq!(
            e.message,
            "TC 3: the xon given (100000) is above this port's automatic XOFF (45056); give xoff too, or a smaller xon"
        );
    }

    #[test]
    fn pfc_sizes_that_are_not_byte_counts_say_what_a_size_is() {
        for (pfc, field, message) in [
            ("{ xoff = -5 }", "qos.q.tc.3.pfc.xoff", "-5 is negative"),
            (
                "{ xoff = \"-5KB\" }",
                "qos.q.tc.3.pfc.xoff",
                "`-5KB` is negative",
            ),
            (
                "{ xon = \"1.5KB\" }",
                "qos.q.tc.3.pfc.xon",
                "`1.5KB` is not a whole number: use a smaller unit (\"1500KB\", not \"1.5MB\")",
            ),
            (
                "{ headroom = \"lots\" }",
                "qos.q.tc.3.pfc.headroom",
                "unknown unit `lots`",
            ),
            (
                "{ headroom = \"\" }",
                "qos.q.tc.3.pfc.headroom",
                "`` is not a byte count like 100KB or 1MiB",
            ),
            // TOML's own types: the reader names the table.
            (
                "{ xoff = 1.5 }",
                "qos.q.tc.3.pfc",
                "1.5 is not a whole number of bytes",
            ),
            (
                "{ xoff = true }",
                "qos.q.tc.3.pfc",
                "expected a byte count: an integer, or a string like \"100KB\" or \"1MiB\"",
            ),
        ] {
            let e = pfc_error("", pfc);
            assert_eq!(e.field, field, "{e}");
            assert!(e.message.contains(message), "{e}");
        }
    }

    /// TC 3's thresholds on p0 for a `pfc` table.
    fn qos_of_pfc(pfc: &str) -> PfcThresholds {
        let q = qos_of(
            "qos = \"q\"",
            &format!("[qos.q]\nlossless = [3]\n[qos.q.tc.3]\npfc = {pfc}\n"),
        );
        q.pfc[3].unwrap()
    }

    #[test]
    fn automatic_pfc_thresholds_are_never_zero_or_inverted() {
        for gbps in SPEEDS_GBPS {
            for cable in [0, 1, DEFAULT_CABLE_M, 100, MAX_CABLE_M] {
                for mtu in [None, Some(68), Some(1500), Some(9000), Some(9600)] {
                    let mut port = format!("qos = \"q\"\nspeed_gbps = {gbps}\ncable_m = {cable}");
                    if let Some(mtu) = mtu {
                        port.push_str(&format!("\nmtu = {mtu}"));
                    }
                    let q = qos_of(&port, "[qos.q]\nlossless = [3]\n");
                    let th = q.pfc[3].unwrap();
                    let frame = u64::from(max_frame(mtu));
                    let at = format!("{gbps}G {cable} m mtu {mtu:?}: {th:?}");
                    assert!(th.xon >= frame, "XON at least one frame: {at}");
                    assert!(th.xon <= th.xoff, "{at}");
                    assert!(th.xoff - th.xon <= 2 * frame, "{at}");
                    assert!(th.headroom >= 2 * frame, "{at}");
                    assert_eq!(th.headroom % 1024, 0, "{at}");
                    assert!(th.xoff + th.headroom <= 2 * MAX_BUFFER_BYTES, "{at}");
                    // A written xoff below the automatic XON pulls XON down with it, never to 0.
                    let q = qos_of(
                        &port,
                        "[qos.q]\nlossless = [3]\n[qos.q.tc.3]\npfc = { xoff = 1 }\n",
                    );
                    assert_eq!(q.pfc[3].map(|t| (t.xoff, t.xon)), Some((1, 1)), "{at}");
                }
            }
        }
    }

    #[test]
    fn pfc_warnings_name_port_and_tc() {
        let warnings = |port: &str, pfc: &str, buffer: &str| {
            let text = format!(
                "{}{port}\nqos = \"q\"\n[qos.q]\nlossless = [3]\n[qos.q.tc.3]\npfc = {pfc}\n",
                BASE.replace("mode = \"switch\"", &format!("mode = \"switch\"\n{buffer}"))
            );
            let config =
                Config::parse(Path::new("q.toml"), &text).unwrap_or_else(|e| panic!("{e}"));
            pfc_warnings(&config.switch_spec().unwrap().qos, &config.ports)
        };
        assert_eq!(
            warnings("mtu = 9000", "{ headroom = 8000 }", ""),
            [
                "warning: port p0 TC 3: PFC headroom 8000 B is less than one 9018-byte frame (MTU 9000 + 18): a frame that size is dropped (headroom_full) once the ingress bytes pass xoff - 1018 B, before XOFF is even sent; headroom = \"auto\" holds what is in flight"
            ]
        );
        let w = warnings("", "{ headroom = 9099 }", "");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].contains("less than one 9100-byte frame (no mtu: 9100 assumed)"),
            "{w:?}"
        );
        assert!(warnings("", "{ headroom = 9100 }", "").is_empty());
        assert!(warnings("mtu = 1500", "{ headroom = 1518 }", "").is_empty());
        assert!(
            warnings("mtu = 9600", "{ xoff = \"auto\" }", "").is_empty(),
            "auto never warns"
        );
        // 100G, 5 m: automatic XOFF and headroom 45056 each, 90112 in all.
        assert_eq!(
            warnings("", "{}", "buffer = \"64KB\""),
            [
                "warning: port p0 TC 3: PFC xoff + headroom (90112 B) is more than the shared buffer (64000 B): lossless frames can be dropped as buffer_full before the headroom is used; raise dataplane.buffer"
            ]
        );
        assert!(warnings("", "{}", "buffer = 90112").is_empty());
    }

    #[test]
    fn qos_keys_are_switch_mode_only() {
        let text = "[dataplane]\nmode = \"io\"\n[[port]]\nname = \"p0\"\ndevargs = \"net_null0\"\nspeed_gbps = 100\n";
        let e = Config::parse(Path::new("io.toml"), text).unwrap_err();
        assert_eq!(e.field, "port[0].speed_gbps");
        assert_eq!(e.line, 6);
    }

    #[test]
    fn sizes_take_decimal_and_binary_units() {
        let p = |t: &str| parse_size(&RawSize::Text(t.to_owned()));
        assert_eq!(p("100KB"), Ok(100_000));
        assert_eq!(p("1MiB"), Ok(1 << 20));
        assert_eq!(p("1500"), Ok(1500));
        assert_eq!(p("64 B"), Ok(64));
        assert_eq!(parse_size(&RawSize::Bytes(9000)), Ok(9000));
        assert!(p("12XB").unwrap_err().contains("unknown unit"));
        assert!(p("KB").is_err());
        assert!(parse_size(&RawSize::Bytes(-1)).is_err());
        assert_eq!(p("-5KB"), Err("`-5KB` is negative".to_owned()));
        assert_eq!(p(" -0 "), Err("` -0 ` is negative".to_owned()));
        assert!(p("1.5MB").unwrap_err().contains("is not a whole number"));
        assert!(p("1,5MB").unwrap_err().contains("is not a whole number"));
        assert!(p("lots").unwrap_err().contains("unknown unit `lots`"));
        assert!(p("1 parsec").unwrap_err().contains("unknown unit `parsec`"));
        assert!(p("99999999999999999999GB").is_err());
    }
}
