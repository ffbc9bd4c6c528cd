//! The QoS part of the config file: `[qos.<profile>]` tables (trust, maps, lossless classes,
//! per-TC scheduling, queue limits, ECN), the ports' `speed_gbps`/`shaper`/`qos` keys and the
//! switch-wide buffer, validated into the dataplane's `QosSpec` with located errors.

use crate::config::{ConfigError, Locator};
use dataplane::qos::{EcnProfile, PortQos, PortSpeed, QosSpec, Sched, TC_COUNT, TcSpec, Trust};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::ops::Range;
use toml::Spanned;

/// Port speeds the shaper knows (Gb/s); each divides 8000, so wire times are exact.
pub const SPEEDS_GBPS: [i64; 7] = [10, 25, 40, 50, 100, 200, 400];
pub const DEFAULT_SPEED_GBPS: i64 = 100;
pub const MAX_BUFFER_BYTES: u64 = 1 << 34;

/// A byte count: an integer, or a string with a unit (B, KB, MB, GB = powers of 1000; KiB,
/// MiB, GiB = powers of 1024).
#[derive(Debug, Deserialize, Clone)]
#[serde(untagged)]
pub(crate) enum RawSize {
    Bytes(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RawQosProfile {
    trust: Option<Spanned<String>>,
    lossless: Option<Spanned<Vec<Spanned<i64>>>>,
    dscp_to_tc: Option<Spanned<BTreeMap<String, Spanned<i64>>>>,
    pcp_to_tc: Option<Spanned<BTreeMap<String, Spanned<i64>>>>,
    tc: Option<Spanned<BTreeMap<String, Spanned<RawTc>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTc {
    sched: Option<Spanned<String>>,
    weight: Option<Spanned<i64>>,
    queue_limit: Option<Spanned<RawSize>>,
    ecn: Option<Spanned<RawEcn>>,
    watermarks: Option<Vec<Spanned<RawSize>>>,
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
}

/// Parses a byte count; `Err` says what is wrong.
pub(crate) fn parse_size(raw: &RawSize) -> Result<u64, String> {
    match raw {
        RawSize::Bytes(n) if *n >= 0 => Ok(*n as u64),
        RawSize::Bytes(n) => Err(format!("{n} is negative")),
        RawSize::Text(text) => {
            let t = text.trim();
            let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
            let (digits, unit) = t.split_at(split);
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

    fn profile(&self, name: &str, raw: &RawQosProfile) -> Result<PortQos, ConfigError> {
        let base = format!("qos.{name}");
        let mut qos = PortQos::default();
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
                let t = self.tc_number(tc, &format!("{base}.lossless"))?;
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
            }
        }
        Ok(qos)
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
            if tc.queue_limit < 64 {
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
    let mut built: BTreeMap<&str, PortQos> = BTreeMap::new();
    if let Some(profiles) = profiles {
        for (name, raw) in profiles.get_ref() {
            built.insert(name, builder.profile(name, raw.get_ref())?);
        }
    }
    let mut spec = QosSpec::new(ports.len());
    for (index, keys) in ports.iter().enumerate() {
        let mut qos = match keys.qos {
            None => PortQos::default(),
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
        qos.speed = match keys.shaper.map(|s| *s.get_ref()) {
            Some(false) => PortSpeed::Unlimited,
            _ => PortSpeed::Gbps(gbps as u32),
        };
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

#[cfg(test)]
mod tests {
    use super::*;

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
        assert!(p("99999999999999999999GB").is_err());
    }
}
