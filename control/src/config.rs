//! The ironclos configuration file (TOML): schema, validation with precise locations, and
//! translation into the dataplane's `EngineConfig`. Every error names the file, the line and
//! the field.

use dataplane::engine::{EngineConfig, ForwardingMode, PortSpec};
use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;
use toml::Spanned;

/// A configuration problem, located.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    pub file: PathBuf,
    /// 1-based; 0 when the problem is not at a place in the file (e.g. it cannot be read).
    pub line: usize,
    pub column: usize,
    /// Dotted path of the field, e.g. `port[1].devargs`.
    pub field: String,
    pub message: String,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(
                f,
                "{}: {}: {}",
                self.file.display(),
                self.field,
                self.message
            )
        } else {
            write!(
                f,
                "{}:{}:{}: field `{}`: {}",
                self.file.display(),
                self.line,
                self.column,
                self.field,
                self.message
            )
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    switch: RawSwitch,
    #[serde(default)]
    dataplane: RawDataplane,
    #[serde(default, rename = "port")]
    ports: Vec<RawPort>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    #[serde(default = "default_name")]
    name: Spanned<String>,
}

impl Default for RawSwitch {
    fn default() -> Self {
        Self {
            name: Spanned::new(0..0, default_name_string()),
        }
    }
}

fn default_name_string() -> String {
    "ironclos".to_owned()
}

fn default_name() -> Spanned<String> {
    Spanned::new(0..0, default_name_string())
}

/// Forwarding modes the binary knows.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Ports in pairs, packets moved unparsed.
    #[default]
    Io,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDataplane {
    #[serde(default)]
    mode: Mode,
    main_lcore: Option<Spanned<u32>>,
    worker_lcores: Option<Spanned<Vec<u32>>>,
    burst: Option<Spanned<u32>>,
    mbufs: Option<Spanned<u32>>,
    mbuf_cache: Option<Spanned<u32>>,
    rx_descriptors: Option<Spanned<u32>>,
    tx_descriptors: Option<Spanned<u32>>,
    #[serde(default)]
    eal: Option<Spanned<Vec<String>>>,
}

impl Default for RawDataplane {
    fn default() -> Self {
        Self {
            mode: Mode::Io,
            main_lcore: None,
            worker_lcores: None,
            burst: None,
            mbufs: None,
            mbuf_cache: None,
            rx_descriptors: None,
            tx_descriptors: None,
            eal: None,
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    name: Spanned<String>,
    devargs: Spanned<String>,
    mtu: Option<Spanned<u32>>,
}

/// Defaults, documented in README.md.
pub mod defaults {
    pub const MAIN_LCORE: u32 = 0;
    pub const WORKER_LCORES: [u32; 1] = [1];
    pub const BURST: u32 = 32;
    pub const MBUFS: u32 = 16_383;
    pub const MBUF_CACHE: u32 = 256;
    pub const DESCRIPTORS: u32 = 1024;
    /// 2048 bytes of data plus DPDK's 128-byte headroom.
    pub const MBUF_DATA_ROOM: u16 = 2048 + 128;
}

/// The largest burst the engine moves (dataplane::dpdk::MAX_BURST).
pub const MAX_BURST: u32 = dataplane::dpdk::MAX_BURST as u32;
pub const MAX_PORTS: usize = 32;

/// One port, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    pub name: String,
    pub devargs: String,
    pub mtu: Option<u16>,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    pub path: PathBuf,
    pub name: String,
    pub mode: Mode,
    pub main_lcore: u32,
    pub worker_lcores: Vec<u32>,
    pub burst: u32,
    pub mbufs: u32,
    pub mbuf_cache: u32,
    pub rx_descriptors: u16,
    pub tx_descriptors: u16,
    pub eal: Vec<String>,
    pub ports: Vec<PortConfig>,
}

/// Options of one run that are not part of the file.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunOptions {
    pub extra_eal: Vec<String>,
    pub exit_when_idle: bool,
    pub duration: Option<Duration>,
}

/// EAL options ironclos sets from the config; giving them in `eal` would contradict it.
const EAL_OPTIONS_FROM_CONFIG: [&str; 5] = ["-l", "-c", "--lcores", "--main-lcore", "--vdev"];

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let source = std::fs::read_to_string(path).map_err(|e| ConfigError {
            file: path.to_owned(),
            line: 0,
            column: 0,
            field: "(file)".to_owned(),
            message: format!("cannot read: {e}"),
        })?;
        Self::parse(path, &source)
    }

    /// Validates config text; `path` is only used in messages.
    pub fn parse(path: &Path, source: &str) -> Result<Config, ConfigError> {
        let at = |span: std::ops::Range<usize>, field: &str, message: String| {
            let (line, column) = line_column(source, span.start);
            ConfigError {
                file: path.to_owned(),
                line,
                column,
                field: field.to_owned(),
                message,
            }
        };
        let raw: RawConfig = toml::from_str(source).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let field = field_at(source, span.start);
            at(span, &field, e.message().trim().to_owned())
        })?;

        let name = raw.switch.name.get_ref().trim().to_owned();
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        {
            return Err(at(
                raw.switch.name.span(),
                "switch.name",
                "must be non-empty letters, digits, '-' or '_' (it names DPDK files)".to_owned(),
            ));
        }

        let dp = &raw.dataplane;
        let main_lcore = dp
            .main_lcore
            .as_ref()
            .map_or(defaults::MAIN_LCORE, |v| *v.get_ref());
        let worker_lcores = match &dp.worker_lcores {
            None => defaults::WORKER_LCORES.to_vec(),
            Some(list) => {
                let lcores = list.get_ref().clone();
                let field = "dataplane.worker_lcores";
                if lcores.is_empty() {
                    return Err(at(
                        list.span(),
                        field,
                        "needs at least one worker lcore".to_owned(),
                    ));
                }
                if lcores.contains(&main_lcore) {
                    return Err(at(
                        list.span(),
                        field,
                        format!(
                            "lcore {main_lcore} is the main lcore (dataplane.main_lcore), which runs the control plane"
                        ),
                    ));
                }
                let mut sorted = lcores.clone();
                sorted.sort_unstable();
                sorted.dedup();
                if sorted.len() != lcores.len() {
                    return Err(at(list.span(), field, "lists an lcore twice".to_owned()));
                }
                if lcores.iter().any(|&l| l >= 128) {
                    return Err(at(
                        list.span(),
                        field,
                        "lcore ids must be below 128 (RTE_MAX_LCORE)".to_owned(),
                    ));
                }
                lcores
            }
        };
        let ranged =
            |value: &Option<Spanned<u32>>, field: &str, default: u32, min: u32, max: u32| {
                match value {
                    None => Ok(default),
                    Some(v) if (min..=max).contains(v.get_ref()) => Ok(*v.get_ref()),
                    Some(v) => Err(at(
                        v.span(),
                        field,
                        format!("{} is out of range {min}..={max}", v.get_ref()),
                    )),
                }
            };
        let burst = ranged(&dp.burst, "dataplane.burst", defaults::BURST, 1, MAX_BURST)?;
        let mbufs = ranged(
            &dp.mbufs,
            "dataplane.mbufs",
            defaults::MBUFS,
            1023,
            16 * 1024 * 1024,
        )?;
        let mbuf_cache = ranged(
            &dp.mbuf_cache,
            "dataplane.mbuf_cache",
            defaults::MBUF_CACHE,
            0,
            512,
        )?;
        let rx_descriptors = ranged(
            &dp.rx_descriptors,
            "dataplane.rx_descriptors",
            defaults::DESCRIPTORS,
            32,
            16384,
        )? as u16;
        let tx_descriptors = ranged(
            &dp.tx_descriptors,
            "dataplane.tx_descriptors",
            defaults::DESCRIPTORS,
            32,
            16384,
        )? as u16;

        let eal = match &dp.eal {
            None => Vec::new(),
            Some(list) => {
                if let Some(bad) = list
                    .get_ref()
                    .iter()
                    .find(|a| EAL_OPTIONS_FROM_CONFIG.contains(&a.as_str()))
                {
                    return Err(at(
                        list.span(),
                        "dataplane.eal",
                        format!(
                            "`{bad}` is set by ironclos from dataplane.main_lcore/worker_lcores and [[port]] devargs; remove it"
                        ),
                    ));
                }
                list.get_ref().clone()
            }
        };

        if raw.ports.is_empty() {
            return Err(ConfigError {
                file: path.to_owned(),
                line: 1,
                column: 1,
                field: "port".to_owned(),
                message: "no [[port]] is configured; a switch needs at least one".to_owned(),
            });
        }
        if raw.ports.len() > MAX_PORTS {
            return Err(at(
                raw.ports[MAX_PORTS].name.span(),
                "port",
                format!("at most {MAX_PORTS} ports are supported (RTE_MAX_ETHPORTS)"),
            ));
        }
        let mut ports: Vec<PortConfig> = Vec::with_capacity(raw.ports.len());
        for (index, port) in raw.ports.iter().enumerate() {
            let name = port.name.get_ref().trim();
            let field = format!("port[{index}].name");
            if name.is_empty() || name.chars().any(|c| c.is_whitespace() || c.is_control()) {
                return Err(at(
                    port.name.span(),
                    &field,
                    "must be non-empty without spaces".to_owned(),
                ));
            }
            if ports.iter().any(|p| p.name == name) {
                return Err(at(
                    port.name.span(),
                    &field,
                    format!("port name `{name}` is used twice"),
                ));
            }
            let devargs = port.devargs.get_ref().trim();
            let field = format!("port[{index}].devargs");
            if let Err(problem) = check_devargs(devargs) {
                return Err(at(port.devargs.span(), &field, problem));
            }
            let device = device_name(devargs);
            if let Some(other) = ports.iter().find(|p| device_name(&p.devargs) == device) {
                return Err(at(
                    port.devargs.span(),
                    &field,
                    format!("device `{device}` is already port `{}`", other.name),
                ));
            }
            let mtu = match &port.mtu {
                None => None,
                Some(m) if (68..=9600).contains(m.get_ref()) => Some(*m.get_ref() as u16),
                Some(m) => {
                    return Err(at(
                        m.span(),
                        &format!("port[{index}].mtu"),
                        format!("{} is out of range 68..=9600", m.get_ref()),
                    ));
                }
            };
            ports.push(PortConfig {
                name: name.to_owned(),
                devargs: devargs.to_owned(),
                mtu,
            });
        }

        Ok(Config {
            path: path.to_owned(),
            name,
            mode: dp.mode,
            main_lcore,
            worker_lcores,
            burst,
            mbufs,
            mbuf_cache,
            rx_descriptors,
            tx_descriptors,
            eal,
            ports,
        })
    }

    /// The full EAL argument list for a run.
    pub fn eal_args(&self, extra: &[String]) -> Vec<String> {
        let mut lcores = vec![self.main_lcore];
        lcores.extend(&self.worker_lcores);
        let mut args = vec![
            "ironclos".to_owned(),
            "-l".to_owned(),
            lcores
                .iter()
                .map(u32::to_string)
                .collect::<Vec<_>>()
                .join(","),
            "--main-lcore".to_owned(),
            self.main_lcore.to_string(),
        ];
        args.extend(self.eal.iter().cloned());
        args.extend(extra.iter().cloned());
        // Two switches on one host must not share DPDK's runtime files.
        let separate = args
            .iter()
            .any(|a| a == "--file-prefix" || a.starts_with("--file-prefix=") || a == "--in-memory");
        if !separate {
            args.push("--file-prefix".to_owned());
            args.push(format!("ironclos-{}", self.name));
        }
        args
    }

    /// What the dataplane engine needs for a run.
    pub fn engine_config(&self, options: &RunOptions) -> EngineConfig {
        EngineConfig {
            eal_args: self.eal_args(&options.extra_eal),
            ports: self
                .ports
                .iter()
                .map(|p| PortSpec {
                    name: p.name.clone(),
                    devargs: p.devargs.clone(),
                    mtu: p.mtu,
                })
                .collect(),
            worker_lcores: self.worker_lcores.clone(),
            mode: match self.mode {
                Mode::Io => ForwardingMode::Io,
            },
            mbufs: self.mbufs,
            mbuf_cache: self.mbuf_cache,
            mbuf_data_room: defaults::MBUF_DATA_ROOM,
            burst: self.burst as usize,
            rx_descriptors: self.rx_descriptors,
            tx_descriptors: self.tx_descriptors,
            exit_when_idle: options.exit_when_idle,
            duration: options.duration,
        }
    }
}

/// The device part of devargs (before the first comma).
pub fn device_name(devargs: &str) -> &str {
    devargs.split(',').next().unwrap_or(devargs).trim()
}

/// Checks the form of devargs: a virtual device `net_<driver><n>[,key=value...]` or a PCI
/// address `[dddd:]bb:dd.f[,key=value...]`. Whether the driver exists is only known to DPDK.
pub fn check_devargs(devargs: &str) -> Result<(), String> {
    if devargs.is_empty() {
        return Err(
            "is empty; give DPDK devargs such as `net_pcap0,rx_pcap=in.pcap` or a PCI address"
                .to_owned(),
        );
    }
    if devargs.chars().any(char::is_whitespace) {
        return Err("must not contain spaces".to_owned());
    }
    let device = device_name(devargs);
    let is_vdev = (device.starts_with("net_") || device.starts_with("eth_")) && device.len() > 4;
    if !is_vdev && !is_pci_address(device) {
        return Err(format!(
            "`{device}` is neither a virtual device (net_<driver><n>, e.g. net_pcap0, net_tap0, net_af_packet0) nor a PCI address (0000:3b:00.0)"
        ));
    }
    for pair in devargs.split(',').skip(1) {
        if !pair.contains('=') && !pair.is_empty() {
            // Some PMDs take bare flags; DPDK will reject the unknown ones at probe time.
            continue;
        }
        if pair.starts_with('=') {
            return Err(format!("`{pair}` has no key"));
        }
    }
    Ok(())
}

fn is_pci_address(device: &str) -> bool {
    let hex = |s: &str, len: usize| s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit());
    let parts: Vec<&str> = device.split(':').collect();
    let (bus, rest) = match parts.as_slice() {
        [domain, bus, rest] if hex(domain, 4) => (*bus, *rest),
        [bus, rest] => (*bus, *rest),
        _ => return false,
    };
    let Some((dev, function)) = rest.split_once('.') else {
        return false;
    };
    hex(bus, 2)
        && hex(dev, 2)
        && function.len() == 1
        && function.chars().all(|c| ('0'..='7').contains(&c))
}

/// 1-based line and column of a byte offset.
fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(source.len());
    let before = &source[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rfind('\n').map_or(offset, |nl| offset - nl - 1) + 1;
    (line, column)
}

/// The dotted field path at a byte offset: the enclosing `[table]` or `[[array]]` header
/// (with the array index) and the key on that line.
fn field_at(source: &str, offset: usize) -> String {
    let offset = offset.min(source.len());
    let line_start = source[..offset].rfind('\n').map_or(0, |nl| nl + 1);
    let line_end = source[offset..]
        .find('\n')
        .map_or(source.len(), |nl| offset + nl);
    let line = source[line_start..line_end].trim();
    let mut table = String::new();
    let mut array_counts: Vec<(String, usize)> = Vec::new();
    for header in source[..line_end].lines().map(str::trim) {
        if let Some(name) = header.strip_prefix("[[").and_then(|h| h.split("]]").next()) {
            let name = name.trim().to_owned();
            let count = match array_counts.iter_mut().find(|(n, _)| *n == name) {
                Some((_, c)) => {
                    *c += 1;
                    *c
                }
                None => {
                    array_counts.push((name.clone(), 0));
                    0
                }
            };
            table = format!("{name}[{count}]");
        } else if let Some(name) = header.strip_prefix('[').and_then(|h| h.split(']').next()) {
            table = name.trim().to_owned();
        }
    }
    if line.starts_with('[') {
        return if table.is_empty() {
            "(top level)".to_owned()
        } else {
            table
        };
    }
    let key = line
        .split('=')
        .next()
        .map(str::trim)
        .unwrap_or("")
        .trim_matches('"');
    match (table.is_empty(), key.is_empty()) {
        (true, true) => "(top level)".to_owned(),
        (true, false) => key.to_owned(),
        (false, true) => table,
        (false, false) => format!("{table}.{key}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Config, ConfigError> {
        Config::parse(Path::new("test.toml"), text)
    }

    const GOOD: &str = r#"
[switch]
name = "leaf1"

[dataplane]
mode = "io"
worker_lcores = [1]
burst = 32
eal = ["--no-huge", "-m", "512", "--no-pci"]

[[port]]
name = "p0"
devargs = "net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap"

[[port]]
name = "p1"
devargs = "0000:3b:00.1"
mtu = 9100
"#;

    #[test]
    fn a_good_config_parses_with_defaults_filled_in() {
        let config = parse(GOOD).unwrap();
        assert_eq!(config.name, "leaf1");
        assert_eq!(config.mode, Mode::Io);
        assert_eq!(config.main_lcore, 0);
        assert_eq!(config.mbufs, defaults::MBUFS);
        assert_eq!(config.ports[1].mtu, Some(9100));
        let eal = config.eal_args(&["--log-level=8".to_owned()]);
        assert_eq!(&eal[..5], ["ironclos", "-l", "0,1", "--main-lcore", "0"]);
        assert!(eal.ends_with(&[
            "--log-level=8".to_owned(),
            "--file-prefix".to_owned(),
            "ironclos-leaf1".to_owned()
        ]));
    }

    fn error_of(text: &str) -> ConfigError {
        parse(text).expect_err("config must be rejected")
    }

    #[test]
    fn errors_name_line_and_field() {
        let cases: &[(&str, &str, usize, &str)] = &[
            (
                "[dataplane]\nburst = 65\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.burst",
                2,
                "out of range",
            ),
            (
                "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"b\"\ndevargs = \"bogus0\"\n",
                "port[1].devargs",
                6,
                "neither a virtual device",
            ),
            (
                "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null1\"\n",
                "port[1].name",
                5,
                "used twice",
            ),
            (
                "[[port]]\nname = \"a\"\ndevargz = \"net_null0\"\n",
                "port[0].devargz",
                3,
                "unknown field",
            ),
            (
                "[dataplane]\nmode = \"turbo\"\n",
                "dataplane.mode",
                2,
                "unknown variant",
            ),
            (
                "[dataplane]\nburst = \"many\"\n",
                "dataplane.burst",
                2,
                "invalid type",
            ),
            (
                "[dataplane]\nworker_lcores = [0]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.worker_lcores",
                2,
                "main lcore",
            ),
            (
                "[dataplane]\neal = [\"-l\", \"0-3\"]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.eal",
                2,
                "`-l` is set by ironclos",
            ),
            ("[switch]\nname = \"leaf1\"\n", "port", 1, "no [[port]]"),
            ("[dataplane\n", "dataplane", 1, ""),
            (
                "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nmtu = 20\n",
                "port[0].mtu",
                4,
                "out of range",
            ),
            (
                "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n[[port]]\nname = \"b\"\ndevargs = \"net_null0,size=128\"\n",
                "port[1].devargs",
                6,
                "already port `a`",
            ),
        ];
        for (text, field, line, message) in cases {
            let error = error_of(text);
            assert_eq!(error.line, *line, "line for {text:?}: {error}");
            assert!(
                error.field.starts_with(field),
                "field for {text:?}: {error}"
            );
            assert!(
                error.message.contains(message),
                "message for {text:?}: {error}"
            );
            let shown = error.to_string();
            assert!(shown.starts_with(&format!("test.toml:{line}:")), "{shown}");
        }
    }

    #[test]
    fn a_missing_file_is_reported_with_its_path() {
        let error = Config::load(Path::new("/nonexistent/ironclos.toml")).unwrap_err();
        assert!(error.to_string().contains("/nonexistent/ironclos.toml"));
        assert!(error.message.contains("cannot read"));
    }

    #[test]
    fn pci_addresses_and_vdevs_are_recognised() {
        for ok in [
            "0000:3b:00.0",
            "3b:00.1",
            "net_tap0,iface=x",
            "net_af_packet0,iface=veth0",
            "eth_null0",
        ] {
            assert_eq!(check_devargs(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "3b:00.9",
            "net_",
            "pcap0",
            "net_null0, size=64",
            "0000:3b:0.0",
        ] {
            assert!(check_devargs(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn an_explicit_file_prefix_or_in_memory_is_kept() {
        let mut config = parse(GOOD).unwrap();
        config.eal = vec!["--in-memory".to_owned()];
        assert!(!config.eal_args(&[]).contains(&"--file-prefix".to_owned()));
        config.eal = vec![];
        let args = config.eal_args(&["--file-prefix=x".to_owned()]);
        assert_eq!(
            args.iter()
                .filter(|a| a.starts_with("--file-prefix"))
                .count(),
            1
        );
    }
}
