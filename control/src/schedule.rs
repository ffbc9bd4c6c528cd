//! Scripted events for replays (`ironclos run --schedule FILE`), at given trace times, so
//! failover and run-time changes are testable deterministically (DESIGN.md "Scripted
//! events"). A TOML file of events, each with `at_us` and exactly one action:
//!
//! ```toml
//! [[event]]
//! at_us = 1000150      # trace time in microseconds (the pcap timestamps' clock)
//! port = "uplink2"     # a [[port]] name
//! link = "down"        # "down" or "up"
//!
//! [[event]]
//! at_us = 1000200      # a batch of table updates, written as the control API's `updates`
//! updates = [{ op = "add_route", prefix = "10.9.0.0/16", via = "10.255.0.2", dev = "uplink1" }]
//!
//! [[event]]
//! at_us = 1000300      # the difference to another config file, as `ironclos reload` applies it
//! config = "leaf-v2.toml"   # relative to the schedule file's directory
//! ```
//!
//! Events apply in time order (ties in file order) before the frames that arrive at the same
//! time. Names in an event (groups, policies, SIDs) are those of the config and of the events
//! before it. A batch is applied all or nothing; one the switch refuses ends the run with
//! status 2, naming the event.

use crate::config::{Config, ConfigError};
use crate::server::Names;
use dataplane::clock::PICOS_PER_MICRO;
use dataplane::ctl::Update;
use dataplane::engine::{ScheduledAction, ScheduledEvent};
use serde::Deserialize;
use std::path::Path;
use toml::Spanned;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    #[serde(default)]
    event: Vec<RawEvent>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEvent {
    at_us: Spanned<u64>,
    port: Option<Spanned<String>>,
    link: Option<Spanned<String>>,
    updates: Option<Spanned<Vec<toml::Value>>>,
    config: Option<Spanned<String>>,
}

fn located(
    path: &Path,
    source: &str,
    offset: usize,
    field: String,
    message: String,
) -> ConfigError {
    let before = &source[..offset.min(source.len())];
    ConfigError {
        file: path.to_owned(),
        line: before.matches('\n').count() + 1,
        column: before
            .rfind('\n')
            .map_or(before.len(), |nl| before.len() - nl - 1)
            + 1,
        field,
        message,
    }
}

/// Reads and validates a schedule against the config's ports; events come back sorted by time
/// (ties in file order), at virtual times: `at_us` less `origin_us`, the replay's time origin
/// (`replay_origin_us`).
pub fn load(
    path: &Path,
    config: &Config,
    origin_us: u64,
) -> Result<Vec<ScheduledEvent>, ConfigError> {
    let source = crate::config::read_toml_text(path)?;
    parse(path, &source, config, origin_us)
}

/// Where a replay of `config`'s inputs starts its virtual time, in pcap microseconds
/// (`dataplane::clock::trace_origin_us` of the earliest first frame of the ports' `rx_pcap`
/// files). An input that cannot be read is left to DPDK, which names it when it fails.
pub fn replay_origin_us(config: &Config) -> u64 {
    let earliest_ns = config
        .ports
        .iter()
        .filter_map(|port| {
            port.devargs
                .split(',')
                .find_map(|arg| arg.trim().strip_prefix("rx_pcap="))
        })
        .filter_map(|file| {
            crate::pcap::first_timestamp_ns(Path::new(file))
                .ok()
                .flatten()
        })
        .min();
    earliest_ns.map_or(0, |ns| dataplane::clock::trace_origin_us(ns / 1_000))
}

/// Validates schedule text; `path` only names it in errors.
pub fn parse(
    path: &Path,
    source: &str,
    config: &Config,
    origin_us: u64,
) -> Result<Vec<ScheduledEvent>, ConfigError> {
    let raw: RawSchedule = toml::from_str(source).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        located(
            path,
            source,
            offset,
            crate::config::field_at(source, offset),
            e.message().trim().to_owned(),
        )
    })?;
    let mut order: Vec<usize> = (0..raw.event.len()).collect();
    order.sort_by_key(|&i| *raw.event[i].at_us.get_ref());
    let mut names = Names::of(config);
    let mut current = config.clone();
    let mut events = Vec::with_capacity(raw.event.len());
    for index in order {
        let event = &raw.event[index];
        let at_field = format!("event[{index}].at_us");
        let at_us = *event.at_us.get_ref();
        if at_us < origin_us {
            return Err(located(
                path,
                source,
                event.at_us.span().start,
                at_field,
                format!(
                    "{at_us} is before the replay's time origin, {origin_us} us (midnight UTC of \
                     the day the input traces start): at_us is in the pcap timestamps' clock"
                ),
            ));
        }
        let at = (at_us - origin_us)
            .checked_mul(PICOS_PER_MICRO)
            .ok_or_else(|| {
                located(
                    path,
                    source,
                    event.at_us.span().start,
                    at_field.clone(),
                    "is too far after the traces' start (more than 213 days)".to_owned(),
                )
            })?;
        let actions = usize::from(event.link.is_some())
            + usize::from(event.updates.is_some())
            + usize::from(event.config.is_some());
        if actions != 1 {
            return Err(located(
                path,
                source,
                event.at_us.span().start,
                format!("event[{index}]"),
                "needs exactly one of `link` (with `port`), `updates` or `config`".to_owned(),
            ));
        }
        let action = if let Some(link) = &event.link {
            link_action(path, source, config, index, event.port.as_ref(), link)?
        } else if event.port.is_some() {
            return Err(located(
                path,
                source,
                event.port.as_ref().map_or(0, |p| p.span().start),
                format!("event[{index}].port"),
                "goes with `link` only".to_owned(),
            ));
        } else if let Some(updates) = &event.updates {
            let at_updates = |message: String| {
                located(
                    path,
                    source,
                    updates.span().start,
                    format!("event[{index}].updates"),
                    message,
                )
            };
            let items: Vec<serde_json::Value> = updates
                .get_ref()
                .iter()
                .map(|v| serde_json::to_value(v).map_err(|e| at_updates(e.to_string())))
                .collect::<Result<_, _>>()?;
            let ops = crate::api::parse_update_list(&items).map_err(at_updates)?;
            let mut batch = Vec::with_capacity(ops.len());
            for (i, op) in ops.iter().enumerate() {
                let (update, group_name) = crate::resolve::resolve(&names, op)
                    .map_err(|e| at_updates(format!("updates[{i}]: {e}")))?;
                note(&mut names, &update, group_name.as_deref());
                batch.push(update);
            }
            ScheduledAction::Apply(batch)
        } else {
            let file = event.config.as_ref().expect("one action is given");
            let at_config = |message: String| {
                located(
                    path,
                    source,
                    file.span().start,
                    format!("event[{index}].config"),
                    message,
                )
            };
            let target = path.parent().unwrap_or(Path::new(".")).join(file.get_ref());
            let new = Config::load(&target).map_err(|e| at_config(e.to_string()))?;
            let (batch, group_names) =
                crate::reload::diff(&current, &new, &names).map_err(at_config)?;
            for update in &batch {
                let group_name = match update {
                    Update::AddGroup { slot, .. } => group_names.get(slot).map(String::as_str),
                    _ => None,
                };
                note(&mut names, update, group_name);
            }
            current = new;
            ScheduledAction::Apply(batch)
        };
        events.push(ScheduledEvent { at, index, action });
    }
    Ok(events)
}

/// Keeps `names` in step with an update the switch will have applied.
fn note(names: &mut Names, update: &Update, group_name: Option<&str>) {
    if crate::resolve::renames(update) {
        names.note(update, group_name);
    }
}

fn link_action(
    path: &Path,
    source: &str,
    config: &Config,
    index: usize,
    port: Option<&Spanned<String>>,
    link: &Spanned<String>,
) -> Result<ScheduledAction, ConfigError> {
    let Some(port_name) = port else {
        return Err(located(
            path,
            source,
            link.span().start,
            format!("event[{index}].port"),
            "is missing: `link` needs the port it changes".to_owned(),
        ));
    };
    let Some(port) = config
        .ports
        .iter()
        .position(|p| &p.name == port_name.get_ref())
    else {
        return Err(located(
            path,
            source,
            port_name.span().start,
            format!("event[{index}].port"),
            format!("no [[port]] is named `{}`", port_name.get_ref()),
        ));
    };
    let up = match link.get_ref().as_str() {
        "up" => true,
        "down" => false,
        other => {
            return Err(located(
                path,
                source,
                link.span().start,
                format!("event[{index}].link"),
                format!("`{other}` is neither \"up\" nor \"down\""),
            ));
        }
    };
    Ok(ScheduledAction::Link {
        port: port as u16,
        up,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> Config {
        Config::parse(
            Path::new("c.toml"),
            "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"b\"\ndevargs = \"net_null1\"\n",
        )
        .unwrap()
    }

    #[test]
    fn a_schedule_that_is_not_utf8_is_reported_at_its_line() {
        let path = std::env::temp_dir().join(format!("ironclos-sched-{}.toml", std::process::id()));
        std::fs::write(
            &path,
            b"[[event]]\nat_us = 10\nport = \"b\xe9\"\nlink = \"up\"\n",
        )
        .unwrap();
        let error = load(&path, &config(), 0).unwrap_err();
        std::fs::remove_file(&path).unwrap();
        assert_eq!((error.line, error.column), (3, 10), "{error}");
        assert_eq!(error.field, "event[0].port", "{error}");
        assert!(error.message.contains("byte 0xE9"), "{error}");
    }

    #[test]
    fn events_are_resolved_to_ports_and_sorted() {
        let text = "[[event]]\nat_us = 20\nport = \"b\"\nlink = \"up\"\n[[event]]\nat_us = 10\nport = \"b\"\nlink = \"down\"\n";
        let events = parse(Path::new("s.toml"), text, &config(), 0).unwrap();
        assert_eq!(
            events,
            vec![
                ScheduledEvent {
                    at: 10 * PICOS_PER_MICRO,
                    index: 1,
                    action: ScheduledAction::Link { port: 1, up: false }
                },
                ScheduledEvent {
                    at: 20 * PICOS_PER_MICRO,
                    index: 0,
                    action: ScheduledAction::Link { port: 1, up: true }
                },
            ]
        );
    }

    #[test]
    fn event_times_count_from_the_replay_origin() {
        // gen-trace's traces start at 1_700_000_000 s, 80_000 s into their UTC day.
        let origin = dataplane::clock::trace_origin_us(1_700_000_000_000_000);
        let text = "[[event]]\nat_us = 1700000000000200\nport = \"b\"\nlink = \"down\"\n";
        let events = parse(Path::new("s.toml"), text, &config(), origin).unwrap();
        assert_eq!(events[0].at, (80_000 * 1_000_000 + 200) * PICOS_PER_MICRO);
        // An event given in time since the trace's start, not pcap time, is before the origin.
        let text = "[[event]]\nat_us = 200\nport = \"b\"\nlink = \"down\"\n";
        let error = parse(Path::new("s.toml"), text, &config(), origin).unwrap_err();
        assert_eq!((error.line, error.field.as_str()), (2, "event[0].at_us"));
        assert!(
            error
                .message
                .contains("before the replay's time origin, 1699920000000000 us"),
            "{error}"
        );
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases = [
            (
                "[[event]]\nat_us = 1\nport = \"zz\"\nlink = \"up\"\n",
                3,
                "event[0].port",
                "no [[port]]",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"sideways\"\n",
                4,
                "event[0].link",
                "neither",
            ),
            (
                "[[event]]\nat_us = -1\nport = \"a\"\nlink = \"up\"\n",
                2,
                "event[0].at_us",
                "invalid value",
            ),
            (
                "[[event]]\nat_us = 1.5\nport = \"a\"\nlink = \"up\"\n",
                2,
                "event[0].at_us",
                "invalid type",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"up\"\n\n[[event]]\nat_us = -1\nport = \"a\"\nlink = \"down\"\n",
                7,
                "event[1].at_us",
                "invalid value",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"up\"\nextra = 1\n",
                5,
                "event[0].extra",
                "unknown field `extra`",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"up\"\n[[event]]\nat_us = 2\n foo = 1\n",
                7,
                "event[1].foo",
                "unknown field `foo`",
            ),
            ("foo = 1\n", 1, "foo", "unknown field `foo`"),
            (
                "[[event]]\nport = \"a\"\nlink = \"up\"\n",
                1,
                "event[0]",
                "missing field `at_us`",
            ),
        ];
        for (text, line, field, message) in cases {
            let error = parse(Path::new("s.toml"), text, &config(), 0).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert_eq!(error.field, field, "{text:?}: {error}");
            assert!(error.message.contains(message), "{text:?}: {error}");
        }
    }

    /// Two routed ports with addresses, for updates that name interfaces and neighbours.
    const ROUTED: &str = "[switch]\nrouter_mac = \"02:00:00:00:00:01\"\n[dataplane]\nmode = \"switch\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nipv4 = [\"10.0.0.1/31\"]\n[[port]]\nname = \"b\"\ndevargs = \"net_null1\"\nipv4 = [\"10.0.0.3/31\"]\n";

    fn routed() -> Config {
        Config::parse(Path::new("c.toml"), ROUTED).unwrap()
    }

    #[test]
    fn update_events_become_batches_and_later_events_see_earlier_names() {
        // The route event comes first in the file but later in time: it resolves the group
        // the earlier event creates.
        let text = r#"
[[event]]
at_us = 20
updates = [{ op = "add_route", prefix = "10.9.0.0/16", group = "spine" }]
[[event]]
at_us = 10
updates = [
  { op = "add_group", group = "spine", members = [{ via = "10.0.0.0", dev = "a" }, { via = "10.0.0.2", dev = "b" }] },
  { op = "add_route", prefix = "10.8.0.0/16", via = "10.0.0.2", dev = "b" },
]
"#;
        let events = parse(Path::new("s.toml"), text, &routed(), 0).unwrap();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].at, 10 * PICOS_PER_MICRO);
        let ScheduledAction::Apply(first) = &events[0].action else {
            panic!("an update batch: {:?}", events[0].action);
        };
        let Update::AddGroup { slot, .. } = first[0] else {
            panic!("the group first: {first:?}");
        };
        assert_eq!(
            first[1],
            Update::AddRoute {
                vrf: 0,
                prefix: "10.8.0.0".parse().unwrap(),
                len: 16,
                target: dataplane::ctl::Target::Via {
                    interface: 1,
                    ip: "10.0.0.2".parse().unwrap(),
                },
            }
        );
        assert_eq!(
            events[1].action,
            ScheduledAction::Apply(vec![Update::AddRoute {
                vrf: 0,
                prefix: "10.9.0.0".parse().unwrap(),
                len: 16,
                target: dataplane::ctl::Target::Group(slot),
            }])
        );
    }

    #[test]
    fn config_events_apply_the_difference_to_the_config_as_it_then_stands() {
        let dir = std::env::temp_dir().join(format!("ironclos-schedule-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let route = "[[route]]\nprefix = \"10.7.0.0/16\"\nvia = \"10.0.0.0\"\nport = \"a\"\n";
        std::fs::write(dir.join("v2.toml"), format!("{ROUTED}{route}")).unwrap();
        std::fs::write(dir.join("v3.toml"), ROUTED).unwrap();
        let text = "[[event]]\nat_us = 5\nconfig = \"v2.toml\"\n[[event]]\nat_us = 6\nconfig = \"v3.toml\"\n";
        let events = parse(&dir.join("s.toml"), text, &routed(), 0).unwrap();
        let prefix = "10.7.0.0".parse().unwrap();
        assert_eq!(
            events[0].action,
            ScheduledAction::Apply(vec![Update::AddRoute {
                vrf: 0,
                prefix,
                len: 16,
                target: dataplane::ctl::Target::Via {
                    interface: 0,
                    ip: "10.0.0.0".parse().unwrap(),
                },
            }])
        );
        // v3 drops the route again: compared with v2, not with the starting config.
        assert_eq!(
            events[1].action,
            ScheduledAction::Apply(vec![Update::DelRoute {
                vrf: 0,
                prefix,
                len: 16
            }])
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn bad_update_and_config_events_name_line_and_field() {
        let cases = [
            (
                "[[event]]\nat_us = 1\nupdates = [{ op = \"nuke\" }]\n",
                3,
                "event[0].updates",
                "unknown op",
            ),
            (
                "[[event]]\nat_us = 1\nupdates = [{ op = \"add_route\", prefix = \"10.9.0.0/16\", group = \"nope\" }]\n",
                3,
                "event[0].updates",
                "nope",
            ),
            (
                "[[event]]\nat_us = 1\nupdates = []\n",
                3,
                "event[0].updates",
                "empty",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"up\"\nupdates = [{ op = \"del_route\", prefix = \"10.0.0.0/8\" }]\n",
                2,
                "event[0]",
                "exactly one",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\n",
                2,
                "event[0]",
                "exactly one",
            ),
            (
                "[[event]]\nat_us = 1\nconfig = \"/nonexistent/ironclos.toml\"\n",
                3,
                "event[0].config",
                "cannot read",
            ),
        ];
        for (text, line, field, message) in cases {
            let error = parse(Path::new("s.toml"), text, &routed(), 0).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.field.starts_with(field), "{text:?}: {error}");
            assert!(error.message.contains(message), "{text:?}: {error}");
        }
    }
}
