//! Scripted events for replays (`ironclos run --schedule FILE`): link down/up at given trace
//! times, so failover is testable deterministically. A TOML file:
//!
//! ```toml
//! [[event]]
//! at_us = 1000150      # trace time in microseconds (the pcap timestamps' clock)
//! port = "uplink2"     # a [[port]] name
//! link = "down"        # "down" or "up"
//! ```

use crate::config::{Config, ConfigError};
use dataplane::clock::PICOS_PER_MICRO;
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
    port: Spanned<String>,
    link: Spanned<String>,
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

/// Reads and validates a schedule against the config's ports; events come back sorted by time.
pub fn load(path: &Path, config: &Config) -> Result<Vec<ScheduledEvent>, ConfigError> {
    let source = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: path.to_owned(),
        line: 0,
        column: 0,
        field: "(file)".to_owned(),
        message: format!("cannot read: {e}"),
    })?;
    parse(path, &source, config)
}

/// Validates schedule text; `path` only names it in errors.
pub fn parse(
    path: &Path,
    source: &str,
    config: &Config,
) -> Result<Vec<ScheduledEvent>, ConfigError> {
    let raw: RawSchedule = toml::from_str(source).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        located(
            path,
            source,
            offset,
            "event".to_owned(),
            e.message().trim().to_owned(),
        )
    })?;
    let mut events = Vec::with_capacity(raw.event.len());
    for (index, event) in raw.event.iter().enumerate() {
        let port_name = event.port.get_ref();
        let Some(port) = config.ports.iter().position(|p| &p.name == port_name) else {
            return Err(located(
                path,
                source,
                event.port.span().start,
                format!("event[{index}].port"),
                format!("no [[port]] is named `{port_name}`"),
            ));
        };
        let up = match event.link.get_ref().as_str() {
            "up" => true,
            "down" => false,
            other => {
                return Err(located(
                    path,
                    source,
                    event.link.span().start,
                    format!("event[{index}].link"),
                    format!("`{other}` is neither \"up\" nor \"down\""),
                ));
            }
        };
        let at = event
            .at_us
            .get_ref()
            .checked_mul(PICOS_PER_MICRO)
            .ok_or_else(|| {
                located(
                    path,
                    source,
                    event.at_us.span().start,
                    format!("event[{index}].at_us"),
                    "is too large".to_owned(),
                )
            })?;
        events.push(ScheduledEvent {
            at,
            action: ScheduledAction::Link {
                port: port as u16,
                up,
            },
        });
    }
    events.sort_by_key(|e| e.at);
    Ok(events)
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
    fn events_are_resolved_to_ports_and_sorted() {
        let text = "[[event]]\nat_us = 20\nport = \"b\"\nlink = \"up\"\n[[event]]\nat_us = 10\nport = \"b\"\nlink = \"down\"\n";
        let events = parse(Path::new("s.toml"), text, &config()).unwrap();
        assert_eq!(
            events,
            vec![
                ScheduledEvent {
                    at: 10 * PICOS_PER_MICRO,
                    action: ScheduledAction::Link { port: 1, up: false }
                },
                ScheduledEvent {
                    at: 20 * PICOS_PER_MICRO,
                    action: ScheduledAction::Link { port: 1, up: true }
                },
            ]
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
                "event",
                "",
            ),
            (
                "[[event]]\nat_us = 1\nport = \"a\"\nlink = \"up\"\nextra = 1\n",
                5,
                "event",
                "unknown field",
            ),
            (
                "[[event]]\nport = \"a\"\nlink = \"up\"\n",
                1,
                "event",
                "missing field `at_us`",
            ),
        ];
        for (text, line, field, message) in cases {
            let error = parse(Path::new("s.toml"), text, &config()).unwrap_err();
            assert_eq!(error.line, line, "{text:?}: {error}");
            assert!(error.field.starts_with(field), "{text:?}: {error}");
            assert!(error.message.contains(message), "{text:?}: {error}");
        }
    }
}
