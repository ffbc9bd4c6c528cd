//! The balancing keys of a `[[nexthop_group]]`: `mode` (hash, flowlet, per-packet), `choice`
//! (random, least-loaded), `flowlet_timeout_us`, `flowlet_table_size` and `avoid_ecn`,
//! validated into the dataplane's `BalanceSpec` with located errors. A key that cannot take
//! effect in the group's mode is an error rather than silently ignored.

use crate::config::{ConfigError, Locator};
use dataplane::clock::PICOS_PER_MICRO;
use dataplane::tables::flowlet::{
    BalanceMode, BalanceSpec, MAX_BALANCED_MEMBERS, MAX_TABLE_SIZE, PathChoice,
};
use std::ops::Range;
use toml::Spanned;

/// Flowlet timeouts accepted, in microseconds (up to one second).
pub const TIMEOUT_US: std::ops::RangeInclusive<i64> = 1..=1_000_000;

/// The balancing keys of one `[[nexthop_group]]`.
pub(crate) struct BalanceKeys<'r> {
    pub mode: Option<&'r Spanned<String>>,
    pub choice: Option<&'r Spanned<String>>,
    pub flowlet_timeout_us: Option<&'r Spanned<i64>>,
    pub flowlet_table_size: Option<&'r Spanned<i64>>,
    pub avoid_ecn: Option<&'r Spanned<bool>>,
    /// How many members the group has, and where they are written.
    pub members: usize,
    pub members_span: Range<usize>,
}

/// A balancing key, for errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BalanceKey {
    Mode,
    Choice,
    FlowletTimeoutUs,
    FlowletTableSize,
    AvoidEcn,
}

impl BalanceKey {
    /// The key's name in the config and in the API.
    pub fn name(self) -> &'static str {
        match self {
            BalanceKey::Mode => "mode",
            BalanceKey::Choice => "choice",
            BalanceKey::FlowletTimeoutUs => "flowlet_timeout_us",
            BalanceKey::FlowletTableSize => "flowlet_table_size",
            BalanceKey::AvoidEcn => "avoid_ecn",
        }
    }
}

/// The balancing the keys given ask for, defaults filling in the others: the one rule the
/// config's `[[nexthop_group]]` and the API's `add_group` / `set_group` share. A key that
/// cannot take effect in the group's mode is refused; the error names the key.
pub fn balance_spec(
    mode: Option<&str>,
    choice: Option<&str>,
    timeout_us: Option<i64>,
    table_size: Option<i64>,
    avoid_ecn: Option<bool>,
) -> Result<BalanceSpec, (BalanceKey, String)> {
    let mut spec = BalanceSpec::default();
    if let Some(mode) = mode {
        spec.mode = match mode {
            "hash" => BalanceMode::Hash,
            "flowlet" => BalanceMode::Flowlet,
            "per-packet" => BalanceMode::PerPacket,
            other => {
                return Err((
                    BalanceKey::Mode,
                    format!(
                        "`{other}` is not a balancing mode: use \"hash\", \"flowlet\" or \"per-packet\""
                    ),
                ));
            }
        };
    }
    if let Some(choice) = choice {
        if spec.mode == BalanceMode::Hash {
            return Err((
                BalanceKey::Choice,
                "applies to mode \"flowlet\" or \"per-packet\"; with hashing the flow hash chooses"
                    .to_owned(),
            ));
        }
        spec.choice = match choice {
            "random" => PathChoice::Random,
            "least-loaded" => PathChoice::LeastLoaded,
            other => {
                return Err((
                    BalanceKey::Choice,
                    format!("`{other}` is not a path choice: use \"random\" or \"least-loaded\""),
                ));
            }
        };
    }
    let flowlet_only = |key| {
        Err((
            key,
            format!(
                "applies to mode \"flowlet\" only (this group is \"{}\")",
                spec.mode.as_str()
            ),
        ))
    };
    if let Some(us) = timeout_us {
        if spec.mode != BalanceMode::Flowlet {
            return flowlet_only(BalanceKey::FlowletTimeoutUs);
        }
        if !TIMEOUT_US.contains(&us) {
            return Err((
                BalanceKey::FlowletTimeoutUs,
                format!(
                    "{us} is out of range {}..={} (microseconds)",
                    TIMEOUT_US.start(),
                    TIMEOUT_US.end()
                ),
            ));
        }
        spec.timeout = us as u64 * PICOS_PER_MICRO;
    }
    if let Some(n) = table_size {
        if spec.mode != BalanceMode::Flowlet {
            return flowlet_only(BalanceKey::FlowletTableSize);
        }
        if n < 1 || n as u64 > MAX_TABLE_SIZE as u64 || !(n as u64).is_power_of_two() {
            return Err((
                BalanceKey::FlowletTableSize,
                format!("{n}: must be a power of two in 1..={MAX_TABLE_SIZE}"),
            ));
        }
        spec.table_size = n as usize;
    }
    if let Some(avoid) = avoid_ecn {
        if spec.choice != PathChoice::LeastLoaded || spec.mode == BalanceMode::Hash {
            return Err((
                BalanceKey::AvoidEcn,
                "applies to choice \"least-loaded\"".to_owned(),
            ));
        }
        spec.avoid_ecn = avoid;
    }
    Ok(spec)
}

/// Validates a group's balancing keys; `base` is the group's field path
/// (`nexthop_group[2]`).
pub(crate) fn build_balance(
    loc: &Locator,
    base: &str,
    keys: &BalanceKeys,
) -> Result<BalanceSpec, ConfigError> {
    let spec = balance_spec(
        keys.mode.map(|m| m.get_ref().as_str()),
        keys.choice.map(|c| c.get_ref().as_str()),
        keys.flowlet_timeout_us.map(|t| *t.get_ref()),
        keys.flowlet_table_size.map(|n| *n.get_ref()),
        keys.avoid_ecn.map(|a| *a.get_ref()),
    )
    .map_err(|(key, message)| {
        let span = match key {
            BalanceKey::Mode => keys.mode.map(Spanned::span),
            BalanceKey::Choice => keys.choice.map(Spanned::span),
            BalanceKey::FlowletTimeoutUs => keys.flowlet_timeout_us.map(Spanned::span),
            BalanceKey::FlowletTableSize => keys.flowlet_table_size.map(Spanned::span),
            BalanceKey::AvoidEcn => keys.avoid_ecn.map(Spanned::span),
        };
        loc.at(
            span.unwrap_or_else(|| keys.members_span.clone()),
            &format!("{base}.{}", key.name()),
            message,
        )
    })?;
    if spec.mode != BalanceMode::Hash && keys.members > MAX_BALANCED_MEMBERS {
        return Err(loc.at(
            keys.members_span.clone(),
            &format!("{base}.members"),
            format!(
                "{} members: a \"{}\" group takes at most {MAX_BALANCED_MEMBERS}",
                keys.members,
                spec.mode.as_str()
            ),
        ));
    }
    Ok(spec)
}

/// One line per group that does not use plain hashing, for `check-config`.
pub fn summary(groups: &[(String, BalanceSpec)]) -> Vec<String> {
    groups
        .iter()
        .filter(|(_, b)| b.mode != BalanceMode::Hash)
        .map(|(name, b)| match b.mode {
            BalanceMode::Flowlet => format!(
                "group {name}: flowlet, timeout {} us, {} entries, choice {}{}",
                b.timeout / PICOS_PER_MICRO,
                b.table_size,
                b.choice.as_str(),
                if b.avoid_ecn { ", avoids ECN" } else { "" }
            ),
            _ => format!(
                "group {name}: {}, choice {}{}",
                b.mode.as_str(),
                b.choice.as_str(),
                if b.avoid_ecn { ", avoids ECN" } else { "" }
            ),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::config::{Config, ConfigError};
    use dataplane::clock::PICOS_PER_MICRO;
    use dataplane::tables::flowlet::{BalanceMode, BalanceSpec, PathChoice};
    use std::path::Path;

    const BASE: &str = r#"[switch]
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
[[port]]
name = "a"
devargs = "net_null0"
ipv4 = ["10.255.0.1/31"]
[[port]]
name = "b"
devargs = "net_null1"
ipv4 = ["10.255.0.3/31"]
"#;

    fn group(keys: &str) -> String {
        format!(
            "{BASE}[[nexthop_group]]\nname = \"g\"\nmembers = [{{ port = \"a\", via = \"10.255.0.0\" }}, {{ port = \"b\", via = \"10.255.0.2\" }}]\n{keys}"
        )
    }

    fn balance_of(keys: &str) -> BalanceSpec {
        let config =
            Config::parse(Path::new("t.toml"), &group(keys)).unwrap_or_else(|e| panic!("{e}"));
        config.switch_spec().unwrap().groups[0].balance
    }

    fn error_of(keys: &str) -> ConfigError {
        Config::parse(Path::new("t.toml"), &group(keys)).unwrap_err()
    }

    #[test]
    fn defaults_are_hash_and_flowlet_defaults_fill_in() {
        assert_eq!(balance_of(""), BalanceSpec::default());
        let b = balance_of("mode = \"flowlet\"\n");
        assert_eq!(b.mode, BalanceMode::Flowlet);
        assert_eq!(b.choice, PathChoice::Random);
        assert_eq!(b.timeout, 100 * PICOS_PER_MICRO);
        assert_eq!(b.table_size, 4096);
        assert!(!b.avoid_ecn);
    }

    #[test]
    fn every_key_is_read() {
        let b = balance_of(
            "mode = \"flowlet\"\nchoice = \"least-loaded\"\nflowlet_timeout_us = 250\nflowlet_table_size = 512\navoid_ecn = true\n",
        );
        assert_eq!(
            b,
            BalanceSpec {
                mode: BalanceMode::Flowlet,
                choice: PathChoice::LeastLoaded,
                timeout: 250 * PICOS_PER_MICRO,
                table_size: 512,
                avoid_ecn: true,
            }
        );
        let p = balance_of("mode = \"per-packet\"\nchoice = \"random\"\n");
        assert_eq!(
            (p.mode, p.choice),
            (BalanceMode::PerPacket, PathChoice::Random)
        );
    }

    #[test]
    fn errors_name_the_line_the_field_and_the_problem() {
        // BASE has 12 lines, then the group's header, name and members: keys start on line 16.
        assert_eq!(BASE.lines().count(), 12);
        for (keys, field, line, words) in [
            ("mode = \"conga\"\n", "mode", 16, "not a balancing mode"),
            ("choice = \"random\"\n", "choice", 16, "applies to mode"),
            (
                "mode = \"flowlet\"\nchoice = \"best\"\n",
                "choice",
                17,
                "not a path choice",
            ),
            (
                "flowlet_timeout_us = 50\n",
                "flowlet_timeout_us",
                16,
                "flowlet",
            ),
            (
                "mode = \"flowlet\"\nflowlet_timeout_us = 0\n",
                "flowlet_timeout_us",
                17,
                "out of range",
            ),
            (
                "mode = \"flowlet\"\nflowlet_table_size = 1000\n",
                "flowlet_table_size",
                17,
                "power of two",
            ),
            (
                "mode = \"per-packet\"\nflowlet_table_size = 1024\n",
                "flowlet_table_size",
                17,
                "flowlet",
            ),
            (
                "mode = \"flowlet\"\navoid_ecn = true\n",
                "avoid_ecn",
                17,
                "least-loaded",
            ),
            ("mode = 3\n", "", 16, ""),
        ] {
            let e = error_of(keys);
            assert_eq!(e.line, line, "{keys}: {e}");
            assert!(
                e.field.starts_with("nexthop_group[0]") && e.field.contains(field),
                "{keys}: {e}"
            );
            assert!(e.message.contains(words), "{keys}: {e}");
        }
    }
}
