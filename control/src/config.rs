//! The ironclos configuration file (TOML): schema, validation with precise locations, and
//! translation into the dataplane's `EngineConfig` (and, in switch mode, its `SwitchSpec`).
//! Every error names the file, the line and the field.

use crate::qos_config::{PortQosKeys, RawQosProfile, RawSize, build_qos};
use dataplane::clock::PICOS_PER_SECOND;
use dataplane::engine::{self, EngineConfig, ForwardingMode, PortSpec};
use dataplane::pipeline::spec::{
    Attachment, GroupSpec, InterfaceSpec, NexthopSpec, PortRole, RouteSpec, RouteTarget, StaticMac,
    StaticNeighbor, SwitchSpec, VlanSpec,
};
use dataplane::pipeline::spec::{
    CsidFormat, EncapMode, MAX_SRH_SEGMENTS, PolicySpec, SidBehavior, SidSpec, Srv6Spec,
};
use serde::Deserialize;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::ops::{Range, RangeInclusive};
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
    #[serde(default)]
    control: RawControl,
    l2: Option<Spanned<RawL2>>,
    neighbor_timers: Option<Spanned<RawNeighborTimers>>,
    ecmp: Option<Spanned<RawEcmp>>,
    #[serde(default, rename = "vrf")]
    vrfs: Vec<Spanned<RawVrf>>,
    #[serde(default, rename = "port")]
    ports: Vec<Spanned<RawPort>>,
    #[serde(default, rename = "vlan")]
    vlans: Vec<Spanned<RawVlan>>,
    #[serde(default, rename = "nexthop_group")]
    groups: Vec<Spanned<RawGroup>>,
    #[serde(default, rename = "route")]
    routes: Vec<Spanned<RawRoute>>,
    /// Files of routes, one a line (see `SwitchBuilder::route_file`); a top-level key.
    route_files: Option<Spanned<Vec<Spanned<String>>>>,
    #[serde(default, rename = "neighbor")]
    neighbors: Vec<Spanned<RawNeighbor>>,
    #[serde(default, rename = "mac")]
    macs: Vec<Spanned<RawMac>>,
    /// QoS profiles by name (`[qos.<name>]`), see `qos_config`.
    qos: Option<Spanned<BTreeMap<String, Spanned<RawQosProfile>>>>,
    srv6: Option<Spanned<RawSrv6>>,
}

/// `[[srv6.sid]]` and `[[srv6.policy]]`.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawSrv6 {
    #[serde(default)]
    sid: Vec<Spanned<RawSid>>,
    #[serde(default)]
    policy: Vec<Spanned<RawPolicy>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSid {
    prefix: Spanned<String>,
    behavior: Spanned<String>,
    vrf: Option<Spanned<String>>,
    block_bits: Option<Spanned<i64>>,
    #[serde(alias = "usid_bits")]
    shift_bits: Option<Spanned<i64>>,
    flavors: Option<Spanned<Vec<Spanned<String>>>>,
    via: Option<Spanned<String>>,
    port: Option<Spanned<String>>,
    vlan: Option<Spanned<i64>>,
    group: Option<Spanned<String>>,
    lookup_vrf: Option<Spanned<String>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    name: Option<Spanned<String>>,
    vrf: Option<Spanned<String>>,
    prefix: Spanned<String>,
    /// Default "encaps" (H.Encaps), as `policy add`'s.
    mode: Option<Spanned<String>>,
    segments: Spanned<Vec<Spanned<String>>>,
    source: Option<Spanned<String>>,
    hop_limit: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSwitch {
    #[serde(default = "default_name")]
    name: Spanned<String>,
    router_mac: Option<Spanned<String>>,
}

impl Default for RawSwitch {
    fn default() -> Self {
        Self {
            name: Spanned::new(0..0, default_name_string()),
            router_mac: None,
        }
    }
}

fn default_name_string() -> String {
    "ironclos".to_owned()
}

fn default_name() -> Spanned<String> {
    Spanned::new(0..0, default_name_string())
}

/// `[control]`: the run-time API socket and the metrics listener.
#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawControl {
    socket: Option<Spanned<String>>,
    metrics: Option<Spanned<String>>,
}

/// The run-time control plane's endpoints (`[control]`); both off when not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ControlConfig {
    /// Unix socket of the run-time API (`ironclos ctl`).
    pub socket: Option<PathBuf>,
    /// Prometheus text exposition over HTTP, on a loopback address.
    pub metrics: Option<std::net::SocketAddr>,
}

/// Forwarding modes the binary knows.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Ports in pairs, packets moved unparsed.
    #[default]
    Io,
    /// A leaf/spine switch: VLAN bridging, IPv4/IPv6 routing, ECMP.
    Switch,
}

#[derive(Debug, Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawDataplane {
    mode: Option<Spanned<Mode>>,
    main_lcore: Option<Spanned<u32>>,
    worker_lcores: Option<Spanned<Vec<u32>>>,
    burst: Option<Spanned<u32>>,
    mbufs: Option<Spanned<u32>>,
    mbuf_cache: Option<Spanned<u32>>,
    rx_descriptors: Option<Spanned<u32>>,
    tx_descriptors: Option<Spanned<u32>>,
    #[serde(default)]
    eal: Option<Spanned<Vec<Spanned<String>>>>,
    /// Switch mode: the shared packet buffer.
    buffer: Option<Spanned<RawSize>>,
    /// Switch mode: seed of the ECN/RED random source.
    ecn_seed: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPort {
    name: Spanned<String>,
    devargs: Spanned<String>,
    mtu: Option<Spanned<u32>>,
    vlan: Option<Spanned<RawPortVlan>>,
    ipv4: Option<Spanned<Vec<Spanned<String>>>>,
    ipv6: Option<Spanned<Vec<Spanned<String>>>>,
    vrf: Option<Spanned<String>>,
    speed_gbps: Option<Spanned<i64>>,
    shaper: Option<Spanned<bool>>,
    qos: Option<Spanned<String>>,
    cable_m: Option<Spanned<i64>>,
}

/// How a switched port carries VLANs.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum VlanMode {
    Access,
    Trunk,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPortVlan {
    mode: Spanned<VlanMode>,
    id: Option<Spanned<i64>>,
    allowed: Option<Spanned<Vec<Spanned<i64>>>>,
    native: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawL2 {
    mac_aging_s: Option<Spanned<i64>>,
    mac_table_size: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNeighborTimers {
    reachable_s: Option<Spanned<i64>>,
    retrans_ms: Option<Spanned<i64>>,
    probes: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawEcmp {
    seed: Option<Spanned<i64>>,
    buckets: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVrf {
    name: Spanned<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVlan {
    id: Spanned<i64>,
    vrf: Option<Spanned<String>>,
    ipv4: Option<Spanned<Vec<Spanned<String>>>>,
    ipv6: Option<Spanned<Vec<Spanned<String>>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawGroup {
    name: Spanned<String>,
    members: Spanned<Vec<Spanned<RawMember>>>,
    /// Balancing keys, see `ecmp_config`.
    mode: Option<Spanned<String>>,
    choice: Option<Spanned<String>>,
    flowlet_timeout_us: Option<Spanned<i64>>,
    flowlet_table_size: Option<Spanned<i64>>,
    avoid_ecn: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMember {
    port: Option<Spanned<String>>,
    vlan: Option<Spanned<i64>>,
    via: Spanned<String>,
    weight: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRoute {
    vrf: Option<Spanned<String>>,
    prefix: Spanned<String>,
    group: Option<Spanned<String>>,
    via: Option<Spanned<String>>,
    port: Option<Spanned<String>>,
    vlan: Option<Spanned<i64>>,
    blackhole: Option<Spanned<bool>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawNeighbor {
    ip: Spanned<String>,
    mac: Spanned<String>,
    port: Option<Spanned<String>>,
    vlan: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMac {
    vlan: Spanned<i64>,
    mac: Spanned<String>,
    port: Spanned<String>,
}

/// Defaults, documented in README.md.
pub mod defaults {
    pub const MAIN_LCORE: u32 = 0;
    pub const WORKER_LCORES: [u32; 1] = [1];
    pub const BURST: u32 = 32;
    pub const MBUFS: u32 = 16_383;
    pub const MBUF_CACHE: u32 = 256;
    pub const DESCRIPTORS: u32 = 1024;
    /// 2048 bytes of data plus DPDK's 128-byte headroom. An SRv6 encapsulation may use all
    /// of it (headroom and tailroom), so this bounds the encapsulated frame.
    pub const MBUF_DATA_ROOM: u16 = 2048 + 128;
    /// Switch mode: seconds a learned MAC lives without being seen.
    pub const MAC_AGING_S: i64 = 300;
    /// Switch mode: MAC table entries.
    pub const MAC_TABLE_SIZE: i64 = 65_536;
    /// Switch mode: a learned neighbour is asked again this long after it was last heard,
    /// `NEIGHBOR_PROBES` times this far apart, then forgotten (Linux's defaults).
    pub const NEIGHBOR_REACHABLE_S: i64 = 30;
    pub const NEIGHBOR_RETRANS_MS: i64 = 1000;
    pub const NEIGHBOR_PROBES: i64 = 3;
    /// Switch mode: ECMP flow hash seed.
    pub const ECMP_SEED: i64 = 0;
    /// Switch mode: buckets per ECMP group.
    pub const ECMP_BUCKETS: i64 = 256;
    /// Switch mode: weight of an ECMP member.
    pub const ECMP_WEIGHT: i64 = 1;
}

/// Ranges of the switch-mode knobs, documented in README.md.
pub mod limits {
    use std::ops::RangeInclusive;
    pub const MAC_AGING_S: RangeInclusive<i64> = 1..=1_000_000;
    pub const MAC_TABLE_SIZE: RangeInclusive<i64> = 1..=4_194_304;
    pub const NEIGHBOR_REACHABLE_S: RangeInclusive<i64> = 1..=3600;
    pub const NEIGHBOR_RETRANS_MS: RangeInclusive<i64> = 10..=60_000;
    pub const NEIGHBOR_PROBES: RangeInclusive<i64> = 1..=10;
    pub const ECMP_SEED: RangeInclusive<i64> = 0..=u32::MAX as i64;
    pub const ECMP_BUCKETS: RangeInclusive<i64> = 16..=65_536;
    pub const ECMP_WEIGHT: RangeInclusive<i64> = 1..=65_535;
    pub const VLAN_ID: RangeInclusive<i64> = 1..=4094;
    /// VRFs including "default": each has its own IPv4 and IPv6 route tables.
    pub const MAX_VRFS: usize = 64;
}

/// The largest burst the engine moves (dataplane::dpdk::MAX_BURST).
pub const MAX_BURST: u32 = dataplane::dpdk::MAX_BURST as u32;
pub const MAX_PORTS: usize = 32;
/// lcore ids are below this (DPDK's RTE_MAX_LCORE).
pub const MAX_LCORES: u32 = 128;

/// One port, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortConfig {
    pub name: String,
    pub devargs: String,
    pub mtu: Option<u16>,
}

/// A validated configuration.
#[derive(Debug, Clone, PartialEq)]
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
    pub control: ControlConfig,
    /// Switch mode only: what the switch is, and names for the summary.
    switch: Option<SwitchConfig>,
}

/// The switch-mode part of a config: the dataplane's spec plus the names the spec has
/// replaced by indices.
#[derive(Debug, Clone, PartialEq)]
struct SwitchConfig {
    spec: SwitchSpec,
    /// Indexed by VRF id; "default" first.
    vrf_names: Vec<String>,
    /// Indexed by group id.
    group_names: Vec<String>,
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

/// The EAL's short options that take no argument, so that more may follow them in one word
/// (`-vl0-1` is `-v -l 0-1`).
const EAL_FLAGS_WITHOUT_ARGUMENT: [char; 2] = ['h', 'v'];

/// The option of `EAL_OPTIONS_FROM_CONFIG` an EAL argument gives, in any form getopt takes:
/// `-l`, `-l0-1` (joined), `-vl0-1` (after flags), `--vdev`, `--vdev=net_null0`, and the
/// abbreviations of a long option (`--vd`: DPDK parses with getopt_long, which takes any
/// unambiguous prefix; an ambiguous one is an error there anyway).
pub fn eal_option_from_config(arg: &str) -> Option<&'static str> {
    if let Some(long) = arg.strip_prefix("--") {
        let name = long.split_once('=').map_or(long, |(name, _)| name);
        if name.is_empty() {
            return None; // `--` ends the options
        }
        EAL_OPTIONS_FROM_CONFIG.iter().copied().find(|option| {
            option
                .strip_prefix("--")
                .is_some_and(|o| o.starts_with(name))
        })
    } else if let Some(short) = arg.strip_prefix('-') {
        let option = short
            .chars()
            .find(|c| !EAL_FLAGS_WITHOUT_ARGUMENT.contains(c))?;
        EAL_OPTIONS_FROM_CONFIG
            .iter()
            .copied()
            .find(|o| o.len() == 2 && o.ends_with(option))
    } else {
        None
    }
}

/// Longest `switch.name`: it names DPDK's runtime directory, `/var/run/dpdk/ironclos-NAME`,
/// whose multi-process socket path must fit the 108 bytes of a Unix socket address.
const MAX_NAME_LEN: usize = 64;

/// EAL options that take their value as the next argument (DPDK 22.11's `eal_long_options`
/// and short options with a required argument), as a config's `eal` list may end with one.
const EAL_OPTIONS_WITH_A_VALUE: &[&str] = &[
    "-m",
    "-n",
    "-a",
    "-b",
    "-d",
    "-r",
    "--allow",
    "--block",
    "--file-prefix",
    "--log-level",
    "--socket-mem",
    "--socket-limit",
    "--huge-dir",
    "--proc-type",
    "--iova-mode",
    "--base-virtaddr",
    "--vfio-intr",
    "--vfio-vf-token",
    "--mbuf-pool-ops-name",
    "--trace",
    "--trace-dir",
    "--trace-bufsz",
    "--trace-mode",
    "--service-corelist",
    "--service-coremask",
    "-s",
    "-S",
];

/// Checks EAL arguments (the config's `eal`, or those given after `--`) for options ironclos
/// sets itself; the error names the argument and what sets its option.
pub fn check_eal_arg(arg: &str) -> Result<(), String> {
    let Some(option) = eal_option_from_config(arg) else {
        return Ok(());
    };
    let from = match option {
        "--vdev" => "from the [[port]] devargs (a port's devargs may be any vdev)",
        "--main-lcore" => "from dataplane.main_lcore",
        _ => "from dataplane.main_lcore and dataplane.worker_lcores",
    };
    if arg == option {
        Err(format!("`{arg}` is set by ironclos {from}; remove it"))
    } else {
        Err(format!(
            "`{arg}` gives `{option}`, which is set by ironclos {from}; remove it"
        ))
    }
}

impl Config {
    /// Reads and validates a config file.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        Self::parse(path, &read_toml_text(path)?)
    }

    /// Validates config text. `path` names the file in messages, and its directory is where
    /// relative `route_files` are read from.
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
        let locator = Locator { path, source };
        let raw: RawConfig = toml::from_str(source).map_err(|e| {
            let span = e.span().unwrap_or(0..0);
            let field = field_at(source, span.start);
            let mut message = e.message().trim().to_owned();
            if message.contains("unknown field `route_files`") {
                // TOML puts a key below a [table] header into that table.
                message.push_str(
                    "; `route_files` is a top-level key: put it above the first [table] header",
                );
            }
            at(span, &field, message)
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
        if name.len() > MAX_NAME_LEN {
            return Err(at(
                raw.switch.name.span(),
                "switch.name",
                format!(
                    "is {} characters; at most {MAX_NAME_LEN} (it names DPDK's runtime directory, \
                     whose socket path must fit a Unix socket address)",
                    name.len()
                ),
            ));
        }

        let dp = &raw.dataplane;
        let mode = dp.mode.as_ref().map_or(Mode::Io, |m| *m.get_ref());
        let main_lcore = match &dp.main_lcore {
            None => defaults::MAIN_LCORE,
            Some(v) if *v.get_ref() >= MAX_LCORES => {
                return Err(at(
                    v.span(),
                    "dataplane.main_lcore",
                    format!(
                        "lcore {} is out of range: lcore ids must be below {MAX_LCORES} (RTE_MAX_LCORE)",
                        v.get_ref()
                    ),
                ));
            }
            Some(v) => *v.get_ref(),
        };
        let worker_lcores = match &dp.worker_lcores {
            None => {
                if let Some(v) = &dp.main_lcore
                    && defaults::WORKER_LCORES.contains(&main_lcore)
                {
                    return Err(at(
                        v.span(),
                        "dataplane.main_lcore",
                        format!(
                            "lcore {main_lcore} is also the worker lcore (dataplane.worker_lcores defaults to {:?}); choose another main lcore or set worker_lcores",
                            defaults::WORKER_LCORES
                        ),
                    ));
                }
                defaults::WORKER_LCORES.to_vec()
            }
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
                if lcores.iter().any(|&l| l >= MAX_LCORES) {
                    return Err(at(
                        list.span(),
                        field,
                        format!("lcore ids must be below {MAX_LCORES} (RTE_MAX_LCORE)"),
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

        let mut eal = Vec::new();
        let eal_list: Vec<_> = dp.eal.iter().flat_map(|l| l.get_ref()).collect();
        for (index, arg) in eal_list.iter().enumerate() {
            if let Err(problem) = check_eal_arg(arg.get_ref()) {
                return Err(at(arg.span(), &format!("dataplane.eal[{index}]"), problem));
            }
            eal.push(arg.get_ref().clone());
        }
        // An option whose value should be the next word, last in the list: DPDK would take
        // the first argument given after `--` on the command line as its value, or fail.
        if let Some(last) = eal_list.last()
            && EAL_OPTIONS_WITH_A_VALUE.contains(&last.get_ref().as_str())
        {
            return Err(at(
                last.span(),
                &format!("dataplane.eal[{}]", eal_list.len() - 1),
                format!(
                    "`{}` needs its value as the next item of the list",
                    last.get_ref()
                ),
            ));
        }

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
                raw.ports[MAX_PORTS].get_ref().name.span(),
                "port",
                format!("at most {MAX_PORTS} ports are supported (RTE_MAX_ETHPORTS)"),
            ));
        }
        let mut ports: Vec<PortConfig> = Vec::with_capacity(raw.ports.len());
        for (index, port) in raw.ports.iter().map(Spanned::get_ref).enumerate() {
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

        let switch = match mode {
            Mode::Io => {
                reject_switch_fields(&raw, &locator)?;
                None
            }
            Mode::Switch => {
                if let Some(list) = &dp.worker_lcores
                    && worker_lcores.len() != 1
                {
                    return Err(at(
                        list.span(),
                        "dataplane.worker_lcores",
                        format!(
                            "mode = \"switch\" runs on exactly one worker lcore for now (its tables are not shared between workers yet); {} are listed",
                            worker_lcores.len()
                        ),
                    ));
                }
                Some(SwitchBuilder::new(&locator, &ports).build(&raw)?)
            }
        };

        let mut control = ControlConfig::default();
        if let Some(socket) = &raw.control.socket {
            let text = socket.get_ref().trim();
            if text.is_empty() {
                return Err(at(
                    socket.span(),
                    "control.socket",
                    "must be a path".to_owned(),
                ));
            }
            // sockaddr_un holds 108 bytes with the terminating NUL.
            if text.len() > 107 {
                return Err(at(
                    socket.span(),
                    "control.socket",
                    format!(
                        "{} bytes is longer than a Unix socket path may be (107)",
                        text.len()
                    ),
                ));
            }
            control.socket = Some(PathBuf::from(text));
        }
        if let Some(metrics) = &raw.control.metrics {
            let addr: std::net::SocketAddr = metrics.get_ref().trim().parse().map_err(|_| {
                at(
                    metrics.span(),
                    "control.metrics",
                    format!(
                        "`{}` is not an address:port such as \"127.0.0.1:9417\"",
                        metrics.get_ref()
                    ),
                )
            })?;
            if !addr.ip().is_loopback() {
                return Err(at(
                    metrics.span(),
                    "control.metrics",
                    format!(
                        "{} is not a loopback address: metrics are served on 127.0.0.1 or ::1 only",
                        addr.ip()
                    ),
                ));
            }
            control.metrics = Some(addr);
        }

        Ok(Config {
            path: path.to_owned(),
            name,
            control,
            mode,
            main_lcore,
            worker_lcores,
            burst,
            mbufs,
            mbuf_cache,
            rx_descriptors,
            tx_descriptors,
            eal,
            ports,
            switch,
        })
    }

    /// VRF names by id (switch mode; empty in io mode).
    pub fn vrf_names(&self) -> &[String] {
        self.switch.as_ref().map_or(&[], |s| &s.vrf_names)
    }

    /// ECMP group names by id (switch mode; empty in io mode).
    pub fn group_names(&self) -> &[String] {
        self.switch.as_ref().map_or(&[], |s| &s.group_names)
    }

    /// Each ECMP group's name and balancing (by group id; empty in io mode).
    pub fn group_balances(&self) -> Vec<(String, dataplane::tables::flowlet::BalanceSpec)> {
        self.switch.as_ref().map_or_else(Vec::new, |s| {
            s.group_names
                .iter()
                .cloned()
                .zip(s.spec.groups.iter().map(|g| g.balance))
                .collect()
        })
    }

    /// Each ECMP group's members as people name them (`port via address`, by member index).
    pub fn group_member_labels(&self) -> Vec<Vec<String>> {
        let Some(s) = &self.switch else {
            return Vec::new();
        };
        let spec = &s.spec;
        spec.groups
            .iter()
            .map(|g| {
                g.members
                    .iter()
                    .map(|&(n, _)| {
                        let nh = &spec.nexthops[n as usize];
                        match spec.interfaces[usize::from(nh.interface)].attachment {
                            Attachment::Port(p) => {
                                format!("{} via {}", self.ports[usize::from(p)].name, nh.ip)
                            }
                            Attachment::Vlan(v) => format!("vlan {v} via {}", nh.ip),
                        }
                    })
                    .collect()
            })
            .collect()
    }

    /// What the switch is, in mode `switch`; `None` in io mode.
    pub fn switch_spec(&self) -> Option<SwitchSpec> {
        self.switch.as_ref().map(|s| s.spec.clone())
    }

    /// A human-readable description of what a run would forward: ports with their roles,
    /// VLANs, L3 interfaces, nexthops, ECMP groups, routes and static entries (switch mode),
    /// or the port pairs (io mode). One line per item.
    pub fn summary(&self) -> Vec<String> {
        let Some(switch) = &self.switch else {
            return self
                .ports
                .iter()
                .enumerate()
                .map(|(index, port)| {
                    let peer = &self.ports[engine::io_peer(index, self.ports.len())].name;
                    format!(
                        "port {index} {} = {} (io peer: {peer})",
                        port.name, port.devargs
                    )
                })
                .collect();
        };
        let spec = &switch.spec;
        let port_name = |p: u16| self.ports[usize::from(p)].name.as_str();
        let vrf_name = |v: u16| switch.vrf_names[usize::from(v)].as_str();
        let iface_name = |i: u16| match spec.interfaces[usize::from(i)].attachment {
            Attachment::Port(p) => format!("interface {i} (port {})", port_name(p)),
            Attachment::Vlan(v) => format!("interface {i} (vlan {v})"),
        };
        let addresses = |iface: &InterfaceSpec| {
            iface
                .ipv4
                .iter()
                .map(|(a, l)| format!("{a}/{l}"))
                .chain(iface.ipv6.iter().map(|(a, l)| format!("{a}/{l}")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let nexthop = |n: u32| {
            let nh = &spec.nexthops[n as usize];
            format!("nexthop {n} ({} on {})", nh.ip, iface_name(nh.interface))
        };
        let mut lines = vec![format!(
            "router MAC {}; MAC aging {} s, MAC table {} entries; neighbours reachable {} s, then {} requests {} ms apart; ECMP {} buckets per group, flow hash seed {}",
            format_mac(spec.router_mac),
            spec.mac_aging / PICOS_PER_SECOND,
            spec.mac_capacity,
            spec.neighbor_timers.reachable_time / PICOS_PER_SECOND,
            spec.neighbor_timers.max_probes,
            spec.neighbor_timers.retry_interval / (PICOS_PER_SECOND / 1000),
            spec.ecmp_buckets,
            spec.flow_hash_seed
        )];
        for (id, name) in switch.vrf_names.iter().enumerate() {
            lines.push(format!("vrf {id} {name}"));
        }
        for (index, (port, role)) in self.ports.iter().zip(&spec.ports).enumerate() {
            let role = match role {
                PortRole::Access { vlan } => format!("access, VLAN {vlan}"),
                PortRole::Trunk { allowed, native } => format!(
                    "trunk, VLANs {}{}",
                    join(allowed),
                    native.map_or(String::new(), |n| format!(", native {n} untagged"))
                ),
                PortRole::Routed { interface } => {
                    let iface = &spec.interfaces[usize::from(*interface)];
                    format!(
                        "routed, interface {interface}, VRF {}, {}",
                        vrf_name(iface.vrf),
                        addresses(iface)
                    )
                }
            };
            lines.push(format!(
                "port {index} {} = {}: {role}",
                port.name, port.devargs
            ));
        }
        let names: Vec<String> = self.ports.iter().map(|p| p.name.clone()).collect();
        lines.extend(crate::qos_config::summary(&spec.qos, &names));
        lines.extend(crate::qos_config::pfc_warnings(&spec.qos, &self.ports));
        lines.extend(crate::ecmp_config::summary(&self.group_balances()));
        for vlan in &spec.vlans {
            let mut members = Vec::new();
            for (index, role) in spec.ports.iter().enumerate() {
                match role {
                    PortRole::Access { vlan: v } if *v == vlan.id => {
                        members.push(format!("{} (untagged)", self.ports[index].name));
                    }
                    PortRole::Trunk { allowed, native } if allowed.contains(&vlan.id) => {
                        let how = if *native == Some(vlan.id) {
                            "untagged"
                        } else {
                            "tagged"
                        };
                        members.push(format!("{} ({how})", self.ports[index].name));
                    }
                    _ => {}
                }
            }
            let members = if members.is_empty() {
                "no ports".to_owned()
            } else {
                format!("ports {}", members.join(", "))
            };
            let l3 = vlan
                .interface
                .map_or("no L3 interface".to_owned(), |i| format!("interface {i}"));
            lines.push(format!("vlan {}: {members}; {l3}", vlan.id));
        }
        for (id, iface) in spec.interfaces.iter().enumerate() {
            let on = match iface.attachment {
                Attachment::Port(p) => format!("port {}", port_name(p)),
                Attachment::Vlan(v) => format!("vlan {v}"),
            };
            lines.push(format!(
                "interface {id}: {on}, VRF {}, {}",
                vrf_name(iface.vrf),
                addresses(iface)
            ));
        }
        for (id, nh) in spec.nexthops.iter().enumerate() {
            lines.push(format!(
                "nexthop {id}: {} on {}",
                nh.ip,
                iface_name(nh.interface)
            ));
        }
        for (id, (group, name)) in spec.groups.iter().zip(&switch.group_names).enumerate() {
            let members = group
                .members
                .iter()
                .map(|(n, w)| format!("{} weight {w}", nexthop(*n)))
                .collect::<Vec<_>>()
                .join(", ");
            lines.push(format!("group {id} {name}: {members}"));
        }
        for route in &spec.routes {
            let target = match route.target {
                RouteTarget::Nexthop(n) => nexthop(n),
                RouteTarget::Group(g) => {
                    format!("group {g} ({})", switch.group_names[g as usize])
                }
                RouteTarget::Connected(i) => format!("connected {}", iface_name(i)),
                RouteTarget::Local => "local".to_owned(),
                RouteTarget::Blackhole => "blackhole".to_owned(),
                RouteTarget::Srv6Policy(p) => {
                    let policy = &spec.srv6.policies[p as usize];
                    format!(
                        "SRv6 policy {} ({:?}, segments {:?}, source {})",
                        policy.name, policy.mode, policy.segments, policy.source
                    )
                }
            };
            lines.push(format!(
                "route vrf {} {}/{} -> {target}",
                vrf_name(route.vrf),
                route.prefix,
                route.len
            ));
        }
        for sid in &spec.srv6.sids {
            lines.push(format!(
                "srv6 sid {} in VRF {}: {:?}{}{}{}",
                sid.name,
                vrf_name(sid.vrf),
                sid.behavior,
                sid.next_csid.map_or(String::new(), |f| format!(
                    " NEXT-C-SID block {} shift {}",
                    f.block_bits, f.shift_bits
                )),
                if sid.psp { " PSP" } else { "" },
                if sid.usp { " USP" } else { "" },
            ));
        }
        for neighbor in &spec.static_neighbors {
            lines.push(format!(
                "neighbor {} on {} is {} (static)",
                neighbor.ip,
                iface_name(neighbor.interface),
                format_mac(neighbor.mac)
            ));
        }
        for entry in &spec.static_macs {
            lines.push(format!(
                "mac {} in vlan {} on port {} (static)",
                format_mac(entry.mac),
                entry.vlan,
                port_name(entry.port)
            ));
        }
        lines
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
        // DPDK 22.11 leaves its hugepage files in hugetlbfs after the process exits, and the
        // pages they hold stay taken until a run with the same prefix starts: a switch under
        // another name, a test or a bench run would find them gone. Unlinked as soon as they
        // are mapped, they go back to the kernel however the process ends. (Nothing here
        // attaches as a secondary process, which would need the files.)
        let keeps_no_files = args
            .iter()
            .any(|a| a == "--no-huge" || a == "--in-memory" || a.starts_with("--huge-unlink"));
        if !keeps_no_files {
            args.push("--huge-unlink".to_owned());
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
            // `switch` is set exactly when mode is Mode::Switch (by `parse`).
            mode: match &self.switch {
                Some(switch) => ForwardingMode::Switch(Box::new(switch.spec.clone())),
                None => ForwardingMode::Io,
            },
            mbufs: self.mbufs,
            mbuf_cache: self.mbuf_cache,
            mbuf_data_room: defaults::MBUF_DATA_ROOM,
            burst: self.burst as usize,
            rx_descriptors: self.rx_descriptors,
            tx_descriptors: self.tx_descriptors,
            trace_origin_us: 0,
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

/// The text of a file the config is made of (the config, a route file): UTF-8, as TOML
/// requires, or an error at the line and column (1-based, columns in bytes as in every config
/// error) where the bytes stop being UTF-8. `field` names the place from the valid text before
/// it.
fn utf8_text(
    path: &Path,
    bytes: Vec<u8>,
    field: impl FnOnce(&str) -> String,
) -> Result<String, ConfigError> {
    String::from_utf8(bytes).map_err(|e| {
        let error = e.utf8_error();
        let offset = error.valid_up_to();
        let bytes = e.as_bytes();
        let valid = std::str::from_utf8(&bytes[..offset]).expect("valid up to here");
        let (line, column) = line_column(valid, offset);
        let what = match error.error_len() {
            Some(_) => format!(
                "byte 0x{:02X} (file offset {offset}) begins no valid UTF-8 character",
                bytes[offset]
            ),
            None => format!(
                "the file ends inside a UTF-8 character (byte 0x{:02X} at file offset {offset} starts it)",
                bytes[offset]
            ),
        };
        // A UTF-16 file starts with its byte order mark, FF FE or FE FF, both not UTF-8.
        let hint = if bytes.starts_with(&[0xff, 0xfe]) || bytes.starts_with(&[0xfe, 0xff]) {
            "it starts with a UTF-16 byte order mark: convert it with `iconv -f utf-16 -t utf-8`"
        } else {
            "Latin-1 text converts with `iconv -f latin1 -t utf-8`"
        };
        ConfigError {
            file: path.to_owned(),
            line,
            column,
            field: field(valid),
            message: format!(
                "the text is not UTF-8 from here: {what}; save the file as UTF-8 ({hint})"
            ),
        }
    })
}

/// The field of the end of a config's valid text, where something else begins (text that is
/// not UTF-8): the key being written on the last line, or, when that line is a comment, a
/// table header or has no `=` yet, the table the line is in.
/// The text of TOML file `path` (a config or a schedule): one that cannot be read is reported
/// at its field `(file)`, one that is not UTF-8 where it stops being UTF-8.
pub(crate) fn read_toml_text(path: &Path) -> Result<String, ConfigError> {
    let bytes = std::fs::read(path).map_err(|e| ConfigError {
        file: path.to_owned(),
        line: 0,
        column: 0,
        field: "(file)".to_owned(),
        message: format!("cannot read: {e}"),
    })?;
    utf8_text(path, bytes, toml_field_before)
}

fn toml_field_before(valid: &str) -> String {
    let line_start = valid.rfind('\n').map_or(0, |nl| nl + 1);
    let partial = valid[line_start..].trim_start();
    if partial.contains('=') && !partial.starts_with(['#', '[']) {
        field_at(valid, valid.len())
    } else {
        field_at(&valid[..line_start], line_start)
    }
}

/// The dotted field path at a byte offset: the enclosing `[table]` or `[[array]]` header
/// (with the array index) and the key on that line (the config's and the schedule's errors).
pub(crate) fn field_at(source: &str, offset: usize) -> String {
    let offset = offset.min(source.len());
    // A span may start inside a multi-byte character only if the reader is wrong; stay safe.
    let offset = (0..=offset)
        .rev()
        .find(|&o| source.is_char_boundary(o))
        .unwrap_or(0);
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

/// Where errors point: the file and its text.
pub(crate) struct Locator<'a> {
    path: &'a Path,
    source: &'a str,
}

impl Locator<'_> {
    pub(crate) fn at(
        &self,
        span: Range<usize>,
        field: &(impl fmt::Display + ?Sized),
        message: impl Into<String>,
    ) -> ConfigError {
        let (line, column) = line_column(self.source, span.start);
        ConfigError {
            file: self.path.to_owned(),
            line,
            column,
            field: field.to_string(),
            message: message.into(),
        }
    }
}

/// A field name made only when an error needs it: `base.key`, or `key` when `base` is empty
/// (a route file's fields), or `base` when `key` is empty (the whole table).
#[derive(Debug, Clone, Copy)]
struct Field<'f> {
    base: &'f str,
    key: &'f str,
}

impl fmt::Display for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.base.is_empty(), self.key.is_empty()) {
            (_, true) => f.write_str(self.base),
            (true, false) => f.write_str(self.key),
            (false, false) => write!(f, "{}.{}", self.base, self.key),
        }
    }
}

/// A value as written and where: `span` is a byte range of the text of the `Locator` the
/// value is checked with (a TOML string's, or a word's on a route file line).
#[derive(Debug, Clone)]
struct Written<'t> {
    text: &'t str,
    span: Range<usize>,
}

impl<'t> From<&'t Spanned<String>> for Written<'t> {
    fn from(value: &'t Spanned<String>) -> Self {
        Written {
            text: value.get_ref(),
            span: value.span(),
        }
    }
}

/// One static route as written: a `[[route]]` table, or a line of a route file. Both are
/// checked by `SwitchBuilder::static_route`, so they obey the same rules.
struct RouteInput<'t> {
    /// Field names start with this: `route[3]` (`route[3].via`, ...) in the config; empty in
    /// a route file (`via`, ...).
    base: &'t str,
    /// The whole route: the table, or the line from its first word.
    whole: Range<usize>,
    vrf: Option<Written<'t>>,
    prefix: Written<'t>,
    group: Option<Written<'t>>,
    via: Option<Written<'t>>,
    port: Option<Written<'t>>,
    vlan: Option<Spanned<i64>>,
    /// `blackhole = true`, or the word `blackhole` (`blackhole = false` is no target).
    blackhole: Option<Range<usize>>,
}

impl<'t> RouteInput<'t> {
    fn field(&self, key: &'t str) -> Field<'t> {
        Field {
            base: self.base,
            key,
        }
    }

    /// The field of the whole route: `route[3]`, or `route` for a route file line.
    fn whole_field(&self) -> Field<'t> {
        Field {
            base: if self.base.is_empty() {
                "route"
            } else {
                self.base
            },
            key: "",
        }
    }

    fn in_route_file(&self) -> bool {
        self.base.is_empty()
    }
}

/// Where a route was written, for "already routed by ..." messages.
#[derive(Debug, Clone, Copy)]
enum RouteOrigin {
    /// `[[route]]` number n of the config.
    Table(u32),
    /// Route file n (an index into `SwitchBuilder::route_file_paths`), line m.
    File(u32, u32),
    /// `[[srv6.policy]]` number n.
    Srv6Policy(u32),
}

/// In io mode, any switch-mode field is a mistake: report the first one in the file.
fn reject_switch_fields(raw: &RawConfig, loc: &Locator) -> Result<(), ConfigError> {
    let mut found: Vec<(Range<usize>, String)> = Vec::new();
    if let Some(mac) = &raw.switch.router_mac {
        found.push((mac.span(), "switch.router_mac".to_owned()));
    }
    if let Some(l2) = &raw.l2 {
        found.push((l2.span(), "l2".to_owned()));
    }
    if let Some(ecmp) = &raw.ecmp {
        found.push((ecmp.span(), "ecmp".to_owned()));
    }
    if let Some(files) = &raw.route_files {
        found.push((files.span(), "route_files".to_owned()));
    }
    if let Some(qos) = &raw.qos {
        found.push((qos.span(), "qos".to_owned()));
    }
    if let Some(buffer) = &raw.dataplane.buffer {
        found.push((buffer.span(), "dataplane.buffer".to_owned()));
    }
    if let Some(seed) = &raw.dataplane.ecn_seed {
        found.push((seed.span(), "dataplane.ecn_seed".to_owned()));
    }
    for (index, port) in raw.ports.iter().enumerate() {
        let port = port.get_ref();
        let spans = [
            ("vlan", port.vlan.as_ref().map(Spanned::span)),
            ("ipv4", port.ipv4.as_ref().map(Spanned::span)),
            ("ipv6", port.ipv6.as_ref().map(Spanned::span)),
            ("vrf", port.vrf.as_ref().map(Spanned::span)),
            ("speed_gbps", port.speed_gbps.as_ref().map(Spanned::span)),
            ("shaper", port.shaper.as_ref().map(Spanned::span)),
            ("qos", port.qos.as_ref().map(Spanned::span)),
            ("cable_m", port.cable_m.as_ref().map(Spanned::span)),
        ];
        for (key, span) in spans {
            if let Some(span) = span {
                found.push((span, format!("port[{index}].{key}")));
            }
        }
    }
    let tables = [
        (
            "vrf",
            raw.vrfs.iter().map(Spanned::span).collect::<Vec<_>>(),
        ),
        ("vlan", raw.vlans.iter().map(Spanned::span).collect()),
        (
            "nexthop_group",
            raw.groups.iter().map(Spanned::span).collect(),
        ),
        ("route", raw.routes.iter().map(Spanned::span).collect()),
        (
            "neighbor",
            raw.neighbors.iter().map(Spanned::span).collect(),
        ),
        ("mac", raw.macs.iter().map(Spanned::span).collect()),
        ("srv6", raw.srv6.iter().map(Spanned::span).collect()),
    ];
    for (name, spans) in tables {
        for (index, span) in spans.into_iter().enumerate() {
            found.push((span, format!("{name}[{index}]")));
        }
    }
    match found.into_iter().min_by_key(|(span, _)| span.start) {
        None => Ok(()),
        Some((span, field)) => Err(loc.at(
            span,
            &field,
            "is allowed only in mode = \"switch\" (dataplane.mode is \"io\")",
        )),
    }
}

/// Turns the switch-mode tables of a config into a `SwitchSpec`, checking every reference.
struct SwitchBuilder<'a> {
    loc: &'a Locator<'a>,
    /// The validated `[[port]]`s (names and devargs).
    ports: &'a [PortConfig],
    vrf_names: Vec<String>,
    roles: Vec<PortRole>,
    vlans: Vec<VlanSpec>,
    interfaces: Vec<InterfaceSpec>,
    nexthops: Vec<NexthopSpec>,
    groups: Vec<GroupSpec>,
    group_names: Vec<String>,
    /// The VRF every member of a group is in.
    group_vrfs: Vec<u16>,
    routes: Vec<RouteSpec>,
    static_neighbors: Vec<StaticNeighbor>,
    static_macs: Vec<StaticMac>,
    ecmp_buckets: usize,
    router_mac: [u8; 6],
    // Indexes, so a million routes are checked in linear time.
    /// By VLAN id: the index in `vlans`.
    vlan_index: Vec<Option<u16>>,
    /// By name: the group id.
    group_ids: HashMap<String, u32>,
    /// By (interface, ip): the nexthop id.
    nexthop_ids: HashMap<(u16, IpAddr), u32>,
    /// By (vrf, prefix, len): where the route was written.
    route_origins: HashMap<(u16, IpAddr, u8), RouteOrigin>,
    /// By (vrf, prefix, len): the interface address (interface, address, length) whose
    /// connected subnet or own address (/32, /128) that prefix is; no route may take it.
    interface_prefixes: HashMap<(u16, IpAddr, u8), (u16, IpAddr, u8)>,
    /// The route files read so far, as their messages name them.
    route_file_paths: Vec<PathBuf>,
}

impl<'a> SwitchBuilder<'a> {
    fn new(loc: &'a Locator<'a>, ports: &'a [PortConfig]) -> Self {
        Self {
            loc,
            ports,
            vrf_names: vec!["default".to_owned()],
            roles: Vec::new(),
            vlans: Vec::new(),
            interfaces: Vec::new(),
            nexthops: Vec::new(),
            groups: Vec::new(),
            group_names: Vec::new(),
            group_vrfs: Vec::new(),
            routes: Vec::new(),
            static_neighbors: Vec::new(),
            static_macs: Vec::new(),
            ecmp_buckets: defaults::ECMP_BUCKETS as usize,
            router_mac: [0; 6],
            vlan_index: vec![None; usize::from(u16::MAX) + 1],
            group_ids: HashMap::new(),
            nexthop_ids: HashMap::new(),
            route_origins: HashMap::new(),
            interface_prefixes: HashMap::new(),
            route_file_paths: Vec::new(),
        }
    }

    fn build(mut self, raw: &RawConfig) -> Result<SwitchConfig, ConfigError> {
        let mode_span = raw.dataplane.mode.as_ref().map_or(0..0, Spanned::span);
        let Some(router_mac) = &raw.switch.router_mac else {
            return Err(self.loc.at(
                mode_span,
                "switch.router_mac",
                "is required in mode = \"switch\": the source MAC of routed packets and the MAC the switch answers ARP/ND with; add router_mac = \"02:..\" to [switch]",
            ));
        };
        self.router_mac = self.unicast_mac(router_mac, "switch.router_mac")?;

        let (mac_aging_s, mac_table_size) = match &raw.l2 {
            None => (defaults::MAC_AGING_S, defaults::MAC_TABLE_SIZE),
            Some(l2) => {
                let l2 = l2.get_ref();
                (
                    self.int_or(
                        l2.mac_aging_s.as_ref(),
                        "l2.mac_aging_s",
                        defaults::MAC_AGING_S,
                        limits::MAC_AGING_S,
                    )?,
                    self.int_or(
                        l2.mac_table_size.as_ref(),
                        "l2.mac_table_size",
                        defaults::MAC_TABLE_SIZE,
                        limits::MAC_TABLE_SIZE,
                    )?,
                )
            }
        };
        let timers = raw.neighbor_timers.as_ref().map(Spanned::get_ref);
        let reachable_s = self.int_or(
            timers.and_then(|t| t.reachable_s.as_ref()),
            "neighbor_timers.reachable_s",
            defaults::NEIGHBOR_REACHABLE_S,
            limits::NEIGHBOR_REACHABLE_S,
        )?;
        let retrans_ms = self.int_or(
            timers.and_then(|t| t.retrans_ms.as_ref()),
            "neighbor_timers.retrans_ms",
            defaults::NEIGHBOR_RETRANS_MS,
            limits::NEIGHBOR_RETRANS_MS,
        )?;
        let probes = self.int_or(
            timers.and_then(|t| t.probes.as_ref()),
            "neighbor_timers.probes",
            defaults::NEIGHBOR_PROBES,
            limits::NEIGHBOR_PROBES,
        )?;
        let neighbor_timers = dataplane::tables::neighbor::NeighborConfig {
            reachable_time: reachable_s as u64 * PICOS_PER_SECOND,
            retry_interval: retrans_ms as u64 * (PICOS_PER_SECOND / 1000),
            max_probes: probes as u32,
            ..Default::default()
        };
        let (seed, buckets) = match &raw.ecmp {
            None => (defaults::ECMP_SEED, defaults::ECMP_BUCKETS),
            Some(ecmp) => {
                let ecmp = ecmp.get_ref();
                let seed = self.int_or(
                    ecmp.seed.as_ref(),
                    "ecmp.seed",
                    defaults::ECMP_SEED,
                    limits::ECMP_SEED,
                )?;
                let buckets = self.int_or(
                    ecmp.buckets.as_ref(),
                    "ecmp.buckets",
                    defaults::ECMP_BUCKETS,
                    limits::ECMP_BUCKETS,
                )?;
                if let Some(b) = &ecmp.buckets
                    && !(buckets as u64).is_power_of_two()
                {
                    return Err(self.loc.at(
                        b.span(),
                        "ecmp.buckets",
                        format!("{buckets} is not a power of two (16, 32, ..., 65536)"),
                    ));
                }
                (seed, buckets)
            }
        };
        self.ecmp_buckets = buckets as usize;

        self.vrfs(&raw.vrfs)?;
        self.declare_vlans(&raw.vlans)?;
        self.ports_roles(&raw.ports)?;
        self.vlan_interfaces(&raw.vlans)?;
        self.ipv6_mtus(&raw.ports)?;
        self.nexthop_groups(&raw.groups)?;
        self.index_interface_prefixes();
        self.static_routes(&raw.routes)?;
        self.route_files(raw.route_files.as_ref())?;
        let srv6 = self.srv6(raw.srv6.as_ref())?;
        self.neighbors(&raw.neighbors)?;
        self.mac_entries(&raw.macs)?;
        let port_keys: Vec<PortQosKeys> = raw
            .ports
            .iter()
            .zip(self.ports)
            .map(|(p, validated)| {
                let p = p.get_ref();
                PortQosKeys {
                    speed_gbps: p.speed_gbps.as_ref(),
                    shaper: p.shaper.as_ref(),
                    qos: p.qos.as_ref(),
                    cable_m: p.cable_m.as_ref(),
                    mtu: validated.mtu,
                }
            })
            .collect();
        let qos = build_qos(
            self.loc,
            raw.qos.as_ref(),
            &port_keys,
            raw.dataplane.buffer.as_ref(),
            raw.dataplane.ecn_seed.as_ref(),
        )?;

        let spec = SwitchSpec {
            router_mac: self.router_mac,
            ports: self.roles,
            vlans: self.vlans,
            vrf_count: self.vrf_names.len() as u16,
            interfaces: self.interfaces,
            nexthops: self.nexthops,
            groups: self.groups,
            routes: self.routes,
            static_macs: self.static_macs,
            static_neighbors: self.static_neighbors,
            mac_aging: mac_aging_s as u64 * PICOS_PER_SECOND,
            mac_capacity: mac_table_size as usize,
            neighbor_timers,
            flow_hash_seed: seed as u32,
            ecmp_buckets: buckets as usize,
            qos,
            srv6,
        };
        Ok(SwitchConfig {
            spec,
            vrf_names: self.vrf_names,
            group_names: self.group_names,
        })
    }

    // ---- the tables, in the order references need them ----

    fn vrfs(&mut self, vrfs: &[Spanned<RawVrf>]) -> Result<(), ConfigError> {
        for (index, vrf) in vrfs.iter().enumerate() {
            let name_spanned = &vrf.get_ref().name;
            let field = format!("vrf[{index}].name");
            let name = self.identifier(name_spanned, &field)?;
            if name == "default" {
                return Err(self.loc.at(
                    name_spanned.span(),
                    &field,
                    "VRF `default` always exists (id 0); declare only the others",
                ));
            }
            if self.vrf_names.contains(&name) {
                return Err(self.loc.at(
                    name_spanned.span(),
                    &field,
                    format!("VRF `{name}` is declared twice"),
                ));
            }
            if self.vrf_names.len() >= limits::MAX_VRFS {
                return Err(self.loc.at(
                    name_spanned.span(),
                    &field,
                    format!(
                        "at most {} VRFs (with `default`) are supported: each has its own route tables",
                        limits::MAX_VRFS
                    ),
                ));
            }
            self.vrf_names.push(name);
        }
        Ok(())
    }

    fn declare_vlans(&mut self, vlans: &[Spanned<RawVlan>]) -> Result<(), ConfigError> {
        for (index, vlan) in vlans.iter().enumerate() {
            let id_spanned = &vlan.get_ref().id;
            let field = format!("vlan[{index}].id");
            let id = self.vlan_id(self.loc, id_spanned, &field)?;
            if let Some(first) = self.vlan_index[usize::from(id)] {
                return Err(self.loc.at(
                    id_spanned.span(),
                    &field,
                    format!("VLAN {id} is declared twice (also vlan[{first}])"),
                ));
            }
            self.vlan_index[usize::from(id)] = Some(self.vlans.len() as u16);
            self.vlans.push(VlanSpec {
                id,
                interface: None,
            });
        }
        Ok(())
    }

    fn ports_roles(&mut self, ports: &[Spanned<RawPort>]) -> Result<(), ConfigError> {
        for (index, raw_port) in ports.iter().enumerate() {
            let port = raw_port.get_ref();
            let base = format!("port[{index}]");
            let routed = port.ipv4.is_some() || port.ipv6.is_some();
            let role = match (&port.vlan, routed) {
                (Some(vlan), true) => {
                    return Err(self.loc.at(
                        vlan.span(),
                        &format!("{base}.vlan"),
                        "a port is either switched (`vlan`) or routed (`ipv4`/`ipv6`), not both; to route a VLAN give its [[vlan]] addresses (an SVI)",
                    ));
                }
                (None, false) => {
                    return Err(self.loc.at(
                        raw_port.span(),
                        &base,
                        format!(
                            "port `{}` needs `vlan = {{ mode = \"access\", id = N }}` (or a trunk) to be switched, or `ipv4`/`ipv6` addresses to be routed: in mode = \"switch\" every port is one or the other",
                            self.ports[index].name
                        ),
                    ));
                }
                (Some(vlan), false) => {
                    if let Some(vrf) = &port.vrf {
                        return Err(self.loc.at(
                            vrf.span(),
                            &format!("{base}.vrf"),
                            "a switched port has no VRF of its own; set `vrf` on its VLAN's [[vlan]] (with addresses)",
                        ));
                    }
                    self.port_vlan(vlan, &base)?
                }
                (None, true) => {
                    let vrf = self.vrf_ref(
                        self.loc,
                        port.vrf.as_ref().map(Written::from),
                        &format!("{base}.vrf"),
                    )?;
                    let interface = self.add_interface(
                        vrf,
                        Attachment::Port(index as u16),
                        port.ipv4.as_ref(),
                        port.ipv6.as_ref(),
                        &base,
                    )?;
                    match interface {
                        Some(interface) => PortRole::Routed { interface },
                        None => {
                            let span = port
                                .ipv4
                                .as_ref()
                                .or(port.ipv6.as_ref())
                                .map_or(raw_port.span(), Spanned::span);
                            let key = if port.ipv4.is_some() { "ipv4" } else { "ipv6" };
                            return Err(self.loc.at(
                                span,
                                &format!("{base}.{key}"),
                                "a routed port needs at least one address",
                            ));
                        }
                    }
                }
            };
            self.roles.push(role);
        }
        Ok(())
    }

    fn port_vlan(&self, vlan: &Spanned<RawPortVlan>, base: &str) -> Result<PortRole, ConfigError> {
        let v = vlan.get_ref();
        let field = format!("{base}.vlan");
        match v.mode.get_ref() {
            VlanMode::Access => {
                if let Some(allowed) = &v.allowed {
                    return Err(self.loc.at(
                        allowed.span(),
                        &format!("{field}.allowed"),
                        "only a trunk has `allowed`; an access port has one `id`",
                    ));
                }
                if let Some(native) = &v.native {
                    return Err(self.loc.at(
                        native.span(),
                        &format!("{field}.native"),
                        "only a trunk has `native`; an access port has one `id`",
                    ));
                }
                let Some(id) = &v.id else {
                    return Err(self.loc.at(
                        vlan.span(),
                        &format!("{field}.id"),
                        "an access port needs `id`, its VLAN",
                    ));
                };
                let vlan = self.declared_vlan(self.loc, id, &format!("{field}.id"))?;
                Ok(PortRole::Access { vlan })
            }
            VlanMode::Trunk => {
                if let Some(id) = &v.id {
                    return Err(self.loc.at(
                        id.span(),
                        &format!("{field}.id"),
                        "a trunk has `allowed` (its VLANs) and an optional `native`, not `id`",
                    ));
                }
                // Each VLAN declared, then the trunk's own rules (`check_trunk`, which the
                // API's `set_port_vlan` follows too).
                let mut allowed: Vec<u16> = Vec::new();
                if let Some(list) = &v.allowed {
                    for (j, a) in list.get_ref().iter().enumerate() {
                        allowed.push(self.declared_vlan(
                            self.loc,
                            a,
                            &format!("{field}.allowed[{j}]"),
                        )?);
                    }
                }
                let native = v
                    .native
                    .as_ref()
                    .map(|n| self.declared_vlan(self.loc, n, &format!("{field}.native")))
                    .transpose()?;
                if let Err((fault, message)) =
                    check_trunk(v.allowed.as_ref().map(|_| &allowed[..]), native)
                {
                    let span = match (fault, &v.allowed, &v.native) {
                        (TrunkFault::Repeat(j), Some(list), _) => list.get_ref()[j].span(),
                        (TrunkFault::Empty, Some(list), _) => list.span(),
                        (TrunkFault::Native, _, Some(n)) => n.span(),
                        _ => vlan.span(),
                    };
                    return Err(self
                        .loc
                        .at(span, &format!("{field}.{}", fault.field()), message));
                }
                Ok(PortRole::Trunk { allowed, native })
            }
        }
    }

    fn vlan_interfaces(&mut self, vlans: &[Spanned<RawVlan>]) -> Result<(), ConfigError> {
        for (index, raw_vlan) in vlans.iter().enumerate() {
            let v = raw_vlan.get_ref();
            let base = format!("vlan[{index}]");
            let id = self.vlans[index].id;
            let interface = if v.ipv4.is_some() || v.ipv6.is_some() {
                let vrf = self.vrf_ref(
                    self.loc,
                    v.vrf.as_ref().map(Written::from),
                    &format!("{base}.vrf"),
                )?;
                self.add_interface(
                    vrf,
                    Attachment::Vlan(id),
                    v.ipv4.as_ref(),
                    v.ipv6.as_ref(),
                    &base,
                )?
            } else {
                None
            };
            if interface.is_none()
                && let Some(vrf) = &v.vrf
            {
                return Err(self.loc.at(
                    vrf.span(),
                    &format!("{base}.vrf"),
                    format!(
                        "VLAN {id} has no addresses, so no L3 interface to put in a VRF; give it ipv4/ipv6 or remove vrf"
                    ),
                ));
            }
            self.vlans[index].interface = interface;
        }
        Ok(())
    }

    /// Creates an L3 interface from address lists; `None` if the lists are empty.
    fn add_interface(
        &mut self,
        vrf: u16,
        attachment: Attachment,
        ipv4: Option<&Spanned<Vec<Spanned<String>>>>,
        ipv6: Option<&Spanned<Vec<Spanned<String>>>>,
        base: &str,
    ) -> Result<Option<u16>, ConfigError> {
        let id = self.interfaces.len() as u16;
        let mut iface = InterfaceSpec {
            vrf,
            attachment,
            ipv4: Vec::new(),
            ipv6: Vec::new(),
        };
        for (key, list, v6) in [("ipv4", ipv4, false), ("ipv6", ipv6, true)] {
            for (j, text) in list.map_or(&[][..], |l| l.get_ref()).iter().enumerate() {
                let field = format!("{base}.{key}[{j}]");
                let (addr, len) = interface_address(text.get_ref(), v6)
                    .map_err(|m| self.loc.at(text.span(), &field, m))?;
                if let Some((other, other_len)) =
                    iface.subnets().find(|&(a, l)| overlaps(a, l, addr, len))
                {
                    return Err(self.loc.at(
                        text.span(),
                        &field,
                        format!("{addr}/{len} overlaps {other}/{other_len} of this interface"),
                    ));
                }
                for (other_id, other) in self.interfaces.iter().enumerate() {
                    if other.vrf != vrf {
                        continue;
                    }
                    for (a, l) in other.subnets() {
                        // Link-local subnets are per link: fe80::/64 on two interfaces are
                        // two different subnets.
                        if is_link_local_subnet(a, l) && is_link_local_subnet(addr, len) {
                            continue;
                        }
                        if overlaps(a, l, addr, len) {
                            return Err(self.loc.at(
                                text.span(),
                                &field,
                                format!(
                                    "{addr}/{len} overlaps {a}/{l} of {} in VRF {}: interfaces of one VRF need distinct subnets",
                                    self.interface_label(other_id as u16),
                                    self.vrf_names[usize::from(vrf)]
                                ),
                            ));
                        }
                    }
                }
                match addr {
                    IpAddr::V4(a) => iface.ipv4.push((a, len)),
                    IpAddr::V6(a) => iface.ipv6.push((a, len)),
                }
            }
        }
        if iface.ipv4.is_empty() && iface.ipv6.is_empty() {
            return Ok(None);
        }
        self.interfaces.push(iface);
        Ok(Some(id))
    }

    fn nexthop_groups(&mut self, groups: &[Spanned<RawGroup>]) -> Result<(), ConfigError> {
        for (index, raw_group) in groups.iter().enumerate() {
            let group = raw_group.get_ref();
            let base = format!("nexthop_group[{index}]");
            let name = self.identifier(&group.name, &format!("{base}.name"))?;
            if let Some(first) = self.group_ids.get(&name) {
                return Err(self.loc.at(
                    group.name.span(),
                    &format!("{base}.name"),
                    format!("group name `{name}` is used twice (also nexthop_group[{first}])"),
                ));
            }
            let members = group.members.get_ref();
            if members.is_empty() {
                return Err(self.loc.at(
                    group.members.span(),
                    &format!("{base}.members"),
                    "is empty; a group needs at least one member",
                ));
            }
            if members.len() > self.ecmp_buckets {
                return Err(self.loc.at(
                    group.members.span(),
                    &format!("{base}.members"),
                    format!(
                        "{} members do not fit in {} buckets ([ecmp] buckets); raise buckets",
                        members.len(),
                        self.ecmp_buckets
                    ),
                ));
            }
            let balance = crate::ecmp_config::build_balance(
                self.loc,
                &base,
                &crate::ecmp_config::BalanceKeys {
                    mode: group.mode.as_ref(),
                    choice: group.choice.as_ref(),
                    flowlet_timeout_us: group.flowlet_timeout_us.as_ref(),
                    flowlet_table_size: group.flowlet_table_size.as_ref(),
                    avoid_ecn: group.avoid_ecn.as_ref(),
                    members: members.len(),
                    members_span: group.members.span(),
                },
            )?;
            let mut spec = GroupSpec {
                members: Vec::new(),
                balance,
            };
            let mut group_vrf: Option<(u16, usize)> = None;
            for (j, raw_member) in members.iter().enumerate() {
                let member = raw_member.get_ref();
                let mbase = format!("{base}.members[{j}]");
                let interface = self.interface_ref(
                    self.loc,
                    member.port.as_ref().map(Written::from),
                    member.vlan.as_ref(),
                    raw_member.span(),
                    &mbase,
                )?;
                let ip = self.neighbor_ip(
                    self.loc,
                    interface,
                    Written::from(&member.via),
                    &format!("{mbase}.via"),
                )?;
                let weight = self.int_or(
                    member.weight.as_ref(),
                    &format!("{mbase}.weight"),
                    defaults::ECMP_WEIGHT,
                    limits::ECMP_WEIGHT,
                )? as u32;
                let vrf = self.interfaces[usize::from(interface)].vrf;
                match group_vrf {
                    None => group_vrf = Some((vrf, j)),
                    Some((first_vrf, first)) => check_member_vrf(
                        &self.interface_label(interface),
                        vrf,
                        &format!("members[{first}]"),
                        first_vrf,
                        |v| self.vrf_name(v),
                    )
                    .map_err(|m| self.loc.at(member.via.span(), &format!("{mbase}.via"), m))?,
                }
                let nexthop = self.nexthop(interface, ip);
                if let Some(first) = spec.members.iter().position(|&(n, _)| n == nexthop) {
                    return Err(self.loc.at(
                        member.via.span(),
                        &format!("{mbase}.via"),
                        format!(
                            "{ip} on {} is already members[{first}]; give that member a higher weight instead",
                            self.interface_label(interface)
                        ),
                    ));
                }
                spec.members.push((nexthop, weight));
            }
            self.group_ids
                .insert(name.clone(), self.groups.len() as u32);
            self.groups.push(spec);
            self.group_names.push(name);
            self.group_vrfs.push(group_vrf.map_or(0, |(v, _)| v));
        }
        Ok(())
    }

    /// Every interface address's connected subnet and own address, by VRF, for the routes'
    /// "is not an interface's subnet or address" rule. An address's connected subnet comes
    /// first (a /32 interface address is reported as its subnet, not as its address).
    fn index_interface_prefixes(&mut self) {
        for (id, iface) in self.interfaces.iter().enumerate() {
            for (addr, len) in interface_addresses(iface) {
                for (prefix, prefix_len) in interface_route_prefixes(addr, len) {
                    self.interface_prefixes
                        .entry((iface.vrf, prefix, prefix_len))
                        .or_insert((id as u16, addr, len));
                }
            }
        }
    }

    fn static_routes(&mut self, routes: &[Spanned<RawRoute>]) -> Result<(), ConfigError> {
        let loc = self.loc;
        for (index, raw_route) in routes.iter().enumerate() {
            let route = raw_route.get_ref();
            let base = format!("route[{index}]");
            let input = RouteInput {
                base: &base,
                whole: raw_route.span(),
                vrf: route.vrf.as_ref().map(Written::from),
                prefix: Written::from(&route.prefix),
                group: route.group.as_ref().map(Written::from),
                via: route.via.as_ref().map(Written::from),
                port: route.port.as_ref().map(Written::from),
                vlan: route.vlan.clone(),
                blackhole: route
                    .blackhole
                    .as_ref()
                    .filter(|b| *b.get_ref())
                    .map(Spanned::span),
            };
            self.static_route(loc, &input, RouteOrigin::Table(index as u32))?;
        }
        Ok(())
    }

    /// Reads the `route_files`, relative to the config's directory, in order.
    fn route_files(
        &mut self,
        files: Option<&Spanned<Vec<Spanned<String>>>>,
    ) -> Result<(), ConfigError> {
        let Some(files) = files else {
            return Ok(());
        };
        let dir = self.loc.path.parent().unwrap_or(Path::new(""));
        for (index, entry) in files.get_ref().iter().enumerate() {
            let field = format!("route_files[{index}]");
            if entry.get_ref().trim().is_empty() {
                return Err(self.loc.at(
                    entry.span(),
                    &field,
                    "is empty; give a route file's path",
                ));
            }
            let path = dir.join(entry.get_ref());
            let bytes = std::fs::read(&path).map_err(|e| {
                self.loc.at(
                    entry.span(),
                    &field,
                    format!("cannot read route file {}: {e}", path.display()),
                )
            })?;
            // Text that is not UTF-8 is the route file's fault, at its line: `route`, as the
            // field of a whole route file line.
            let text = utf8_text(&path, bytes, |_| "route".to_owned())?;
            self.route_file_paths.push(path.clone());
            let file = (self.route_file_paths.len() - 1) as u32;
            self.route_file(
                &Locator {
                    path: &path,
                    source: &text,
                },
                file,
            )?;
        }
        Ok(())
    }

    /// The routes of one route file (`loc` holds its text): one route a line, `#` starts a
    /// comment, words are separated by whitespace.
    fn route_file(&mut self, loc: &Locator, file: u32) -> Result<(), ConfigError> {
        // At most a route a line: room for them all at once, rather than growing by doubling.
        let lines = loc.source.bytes().filter(|&b| b == b'\n').count() + 1;
        self.routes.reserve(lines);
        self.route_origins.reserve(lines);
        let mut line_start = 0;
        for (index, line) in loc.source.split('\n').enumerate() {
            let offset = line_start;
            line_start += line.len() + 1;
            let line = line.split_once('#').map_or(line, |(before, _)| before);
            if let Some(route) = route_line(loc, line, offset)? {
                self.static_route(loc, &route, RouteOrigin::File(file, index as u32 + 1))?;
            }
        }
        Ok(())
    }

    /// Checks one static route, from the config or a route file (`loc` locates its values),
    /// and adds it. Errors point at the offending value.
    fn static_route(
        &mut self,
        loc: &Locator,
        route: &RouteInput,
        origin: RouteOrigin,
    ) -> Result<(), ConfigError> {
        let vrf = self.vrf_ref(loc, route.vrf.clone(), &route.field("vrf"))?;
        let prefix_field = route.field("prefix");
        let prefix_span = route.prefix.span.clone();
        let (prefix, len) = route_prefix(route.prefix.text)
            .map_err(|m| loc.at(prefix_span.clone(), &prefix_field, m))?;
        self.claim_route_prefix(loc, prefix_span, &prefix_field, (vrf, prefix, len), origin)?;

        let mut targets = [
            route.group.as_ref().map(|g| (g.span.clone(), "group")),
            route.via.as_ref().map(|v| (v.span.clone(), "via")),
            route.blackhole.clone().map(|b| (b, "blackhole")),
        ]
        .into_iter()
        .flatten();
        let Some((_, first_key)) = targets.next() else {
            let how = if route.in_route_file() {
                "group NAME, via ADDRESS with port NAME or vlan ID, or blackhole"
            } else {
                "group = \"NAME\", via = \"ADDRESS\" with port or vlan, or blackhole = true"
            };
            return Err(loc.at(
                route.whole.clone(),
                &route.whole_field(),
                format!("route to {prefix}/{len} needs one target: {how}"),
            ));
        };
        if let Some((span, key)) = targets.next() {
            return Err(loc.at(
                span,
                &route.field(key),
                format!("a route has exactly one target; `{key}` and `{first_key}` are both given"),
            ));
        }
        if route.via.is_none() {
            let stray = [
                route.port.as_ref().map(|p| (p.span.clone(), "port")),
                route.vlan.as_ref().map(|v| (v.span(), "vlan")),
            ];
            if let Some((span, key)) = stray.into_iter().flatten().next() {
                return Err(loc.at(
                    span,
                    &route.field(key),
                    format!("`{key}` names the interface of `via`; this route has no via"),
                ));
            }
        }
        let target = if let Some(group) = &route.group {
            let Some(&id) = self.group_ids.get(group.text) else {
                return Err(loc.at(
                    group.span.clone(),
                    &route.field("group"),
                    format!("no [[nexthop_group]] is named `{}`", group.text),
                ));
            };
            check_forwarding_vrf(
                "this route",
                vrf,
                Egress::Group(group.text),
                self.group_vrfs[id as usize],
                |v| self.vrf_name(v),
            )
            .map_err(|m| loc.at(group.span.clone(), &route.field("group"), m))?;
            RouteTarget::Group(id)
        } else if let Some(via) = &route.via {
            let interface = self.interface_ref(
                loc,
                route.port.clone(),
                route.vlan.as_ref(),
                route.whole.clone(),
                route.base,
            )?;
            check_forwarding_vrf(
                "this route",
                vrf,
                Egress::Interface(&self.interface_label(interface)),
                self.interfaces[usize::from(interface)].vrf,
                |v| self.vrf_name(v),
            )
            .map_err(|m| loc.at(via.span.clone(), &route.field("via"), m))?;
            let ip = self.neighbor_ip(loc, interface, via.clone(), &route.field("via"))?;
            RouteTarget::Nexthop(self.nexthop(interface, ip))
        } else {
            RouteTarget::Blackhole
        };
        self.routes.push(RouteSpec {
            vrf,
            prefix,
            len,
            target,
        });
        Ok(())
    }

    /// Takes `prefix/len` of VRF `vrf` for a route (`origin`: a `[[route]]`, a route file's
    /// line or an `[[srv6.policy]]`'s prefix; `span` and `field` locate the prefix): a prefix is
    /// routed once, and never one an interface address takes, its connected subnet or the
    /// switch's own address (`check_route_prefix`'s rule, here through the index). The prefix is
    /// taken first: if this route is rejected, so is the whole config.
    fn claim_route_prefix(
        &mut self,
        loc: &Locator,
        span: Range<usize>,
        field: &(impl fmt::Display + ?Sized),
        (vrf, prefix, len): (u16, IpAddr, u8),
        origin: RouteOrigin,
    ) -> Result<(), ConfigError> {
        match self.route_origins.entry((vrf, prefix, len)) {
            Entry::Vacant(slot) => {
                slot.insert(origin);
            }
            Entry::Occupied(first) => {
                let first = *first.get();
                return Err(loc.at(
                    span,
                    field,
                    format!(
                        "{prefix}/{len} in VRF {} is already routed by {}",
                        self.vrf_names[usize::from(vrf)],
                        self.route_origin_label(first)
                    ),
                ));
            }
        }
        if let Some(&(id, addr, addr_len)) = self.interface_prefixes.get(&(vrf, prefix, len)) {
            let message =
                interface_prefix_taken((prefix, len), (addr, addr_len), &self.interface_label(id));
            return Err(loc.at(span, field, message));
        }
        Ok(())
    }

    /// "route[3]" or "routes.txt:12".
    fn route_origin_label(&self, origin: RouteOrigin) -> String {
        match origin {
            RouteOrigin::Table(index) => format!("route[{index}]"),
            RouteOrigin::Srv6Policy(index) => format!("srv6.policy[{index}]"),
            RouteOrigin::File(file, line) => {
                format!("{}:{line}", self.route_file_paths[file as usize].display())
            }
        }
    }

    fn neighbors(&mut self, neighbors: &[Spanned<RawNeighbor>]) -> Result<(), ConfigError> {
        for (index, raw_neighbor) in neighbors.iter().enumerate() {
            let neighbor = raw_neighbor.get_ref();
            let base = format!("neighbor[{index}]");
            let interface = self.interface_ref(
                self.loc,
                neighbor.port.as_ref().map(Written::from),
                neighbor.vlan.as_ref(),
                raw_neighbor.span(),
                &base,
            )?;
            let ip = self.neighbor_ip(
                self.loc,
                interface,
                Written::from(&neighbor.ip),
                &format!("{base}.ip"),
            )?;
            if let Some(first) = self
                .static_neighbors
                .iter()
                .position(|n| n.interface == interface && n.ip == ip)
            {
                return Err(self.loc.at(
                    neighbor.ip.span(),
                    &format!("{base}.ip"),
                    format!(
                        "{ip} on {} is already neighbor[{first}]",
                        self.interface_label(interface)
                    ),
                ));
            }
            let mac = self.unicast_mac(&neighbor.mac, &format!("{base}.mac"))?;
            self.static_neighbors
                .push(StaticNeighbor { interface, ip, mac });
        }
        Ok(())
    }

    fn mac_entries(&mut self, macs: &[Spanned<RawMac>]) -> Result<(), ConfigError> {
        for (index, raw_mac) in macs.iter().enumerate() {
            let entry = raw_mac.get_ref();
            let base = format!("mac[{index}]");
            let vlan = self.declared_vlan(self.loc, &entry.vlan, &format!("{base}.vlan"))?;
            let port = self.port_index(
                self.loc,
                Written::from(&entry.port),
                &format!("{base}.port"),
            )?;
            check_port_in_vlan(entry.port.get_ref(), &self.roles[usize::from(port)], vlan)
                .map_err(|m| self.loc.at(entry.port.span(), &format!("{base}.port"), m))?;
            let mac = self.unicast_mac(&entry.mac, &format!("{base}.mac"))?;
            if let Some(first) = self
                .static_macs
                .iter()
                .position(|m| m.vlan == vlan && m.mac == mac)
            {
                return Err(self.loc.at(
                    entry.mac.span(),
                    &format!("{base}.mac"),
                    format!("{} in VLAN {vlan} is already mac[{first}]", format_mac(mac)),
                ));
            }
            self.static_macs.push(StaticMac { vlan, mac, port });
        }
        Ok(())
    }

    // ---- references and values ----

    /// The one nexthop for (interface, ip), made on first use.
    fn nexthop(&mut self, interface: u16, ip: IpAddr) -> u32 {
        let next = self.nexthops.len() as u32;
        let id = *self.nexthop_ids.entry((interface, ip)).or_insert(next);
        if id == next {
            self.nexthops.push(NexthopSpec { interface, ip });
        }
        id
    }

    /// "interface 2 (port eth49)" or "interface 3 (vlan 10)".
    fn interface_label(&self, id: u16) -> String {
        match self.interfaces.get(usize::from(id)).map(|i| i.attachment) {
            Some(Attachment::Port(p)) => {
                format!("interface {id} (port {})", self.ports[usize::from(p)].name)
            }
            Some(Attachment::Vlan(v)) => format!("interface {id} (vlan {v})"),
            None => format!("interface {id}"),
        }
    }

    /// A VRF's name by its id.
    fn vrf_name(&self, vrf: u16) -> String {
        self.vrf_names
            .get(usize::from(vrf))
            .cloned()
            .unwrap_or_else(|| vrf.to_string())
    }

    /// A port with an `mtu` below 1280 carries no IPv6 (`check_ipv6_mtu`), reported at
    /// `port[N].mtu`: the number breaks the rule, the addresses are fine.
    fn ipv6_mtus(&self, ports: &[Spanned<RawPort>]) -> Result<(), ConfigError> {
        for (index, raw_port) in ports.iter().enumerate() {
            let Some(mtu) = &raw_port.get_ref().mtu else {
                continue;
            };
            check_ipv6_mtu(
                self.ports[index].mtu,
                &self.roles[index],
                &self.vlans,
                &self.interfaces,
            )
            .map_err(|m| self.loc.at(mtu.span(), &format!("port[{index}].mtu"), m))?;
        }
        Ok(())
    }

    /// The L3 interface named by `port = "..."` (a routed port) or `vlan = N` (an SVI).
    fn interface_ref(
        &self,
        loc: &Locator,
        port: Option<Written>,
        vlan: Option<&Spanned<i64>>,
        whole: Range<usize>,
        base: &str,
    ) -> Result<u16, ConfigError> {
        let field = |key| Field { base, key };
        match (port, vlan) {
            (Some(_), Some(vlan)) => Err(loc.at(
                vlan.span(),
                &field("vlan"),
                "give `port` (a routed port) or `vlan` (a VLAN interface), not both",
            )),
            (None, None) => Err(loc.at(
                whole,
                &field(""),
                "needs the interface the neighbour is on: port = \"NAME\" (a routed port) or vlan = ID (a VLAN with addresses)",
            )),
            (Some(port), None) => {
                let index = self.port_index(loc, port.clone(), &field("port"))?;
                match &self.roles[usize::from(index)] {
                    PortRole::Routed { interface } => Ok(*interface),
                    role => Err(loc.at(
                        port.span,
                        &field("port"),
                        format!(
                            "port `{}` is not a routed port (it is {}); name its VLAN's interface with vlan = ID instead",
                            port.text,
                            describe_role(role)
                        ),
                    )),
                }
            }
            (None, Some(vlan)) => {
                let id = self.declared_vlan(loc, vlan, &field("vlan"))?;
                let spec = self.vlan_index[usize::from(id)].map(|i| &self.vlans[usize::from(i)]);
                match spec.and_then(|v| v.interface) {
                    Some(interface) => Ok(interface),
                    None => Err(loc.at(
                        vlan.span(),
                        &field("vlan"),
                        format!(
                            "VLAN {id} has no L3 interface; give its [[vlan]] ipv4/ipv6 addresses"
                        ),
                    )),
                }
            }
        }
    }

    /// A neighbour's address: inside a connected subnet of `interface`, not the switch's own.
    fn neighbor_ip(
        &self,
        loc: &Locator,
        interface: u16,
        text: Written,
        field: &(impl fmt::Display + ?Sized),
    ) -> Result<IpAddr, ConfigError> {
        let Ok(ip) = text.text.trim().parse::<IpAddr>() else {
            return Err(loc.at(
                text.span,
                field,
                format!(
                    "`{}` is not an IPv4 or IPv6 address (a neighbour's address, without /length)",
                    text.text
                ),
            ));
        };
        let iface = &self.interfaces[usize::from(interface)];
        let subnets: Vec<(IpAddr, u8)> = iface.subnets().collect();
        on_link(ip, &subnets, &self.interface_label(interface))
            .map_err(|m| loc.at(text.span, field, m))?;
        Ok(ip)
    }

    fn port_index(
        &self,
        loc: &Locator,
        name: Written,
        field: &(impl fmt::Display + ?Sized),
    ) -> Result<u16, ConfigError> {
        let wanted = name.text.trim();
        match self.ports.iter().position(|p| p.name == wanted) {
            Some(i) => Ok(i as u16),
            None => Err(loc.at(
                name.span,
                field,
                format!("no [[port]] is named `{}`", name.text),
            )),
        }
    }

    /// A VRF by name; `default` when not given.
    fn vrf_ref(
        &self,
        loc: &Locator,
        name: Option<Written>,
        field: &(impl fmt::Display + ?Sized),
    ) -> Result<u16, ConfigError> {
        let Some(name) = name else { return Ok(0) };
        match self.vrf_names.iter().position(|n| n == name.text) {
            Some(i) => Ok(i as u16),
            None => Err(loc.at(
                name.span,
                field,
                format!(
                    "VRF `{}` is not declared; add [[vrf]] name = \"{}\" (only `default` exists without one)",
                    name.text, name.text
                ),
            )),
        }
    }

    fn vlan_id(
        &self,
        loc: &Locator,
        value: &Spanned<i64>,
        field: &(impl fmt::Display + ?Sized),
    ) -> Result<u16, ConfigError> {
        let id = *value.get_ref();
        if limits::VLAN_ID.contains(&id) {
            Ok(id as u16)
        } else {
            Err(loc.at(
                value.span(),
                field,
                format!("VLAN {id} is out of range 1..=4094 (0 and 4095 are reserved)"),
            ))
        }
    }

    /// A VLAN id that has a [[vlan]].
    fn declared_vlan(
        &self,
        loc: &Locator,
        value: &Spanned<i64>,
        field: &(impl fmt::Display + ?Sized),
    ) -> Result<u16, ConfigError> {
        let id = self.vlan_id(loc, value, field)?;
        if self.vlan_index[usize::from(id)].is_some() {
            Ok(id)
        } else {
            Err(loc.at(
                value.span(),
                field,
                format!("VLAN {id} is not declared; add a [[vlan]] with id = {id}"),
            ))
        }
    }

    fn int_or(
        &self,
        value: Option<&Spanned<i64>>,
        field: &str,
        default: i64,
        range: RangeInclusive<i64>,
    ) -> Result<i64, ConfigError> {
        match value {
            None => Ok(default),
            Some(v) if range.contains(v.get_ref()) => Ok(*v.get_ref()),
            Some(v) => Err(self.loc.at(
                v.span(),
                field,
                format!(
                    "{} is out of range {}..={}",
                    v.get_ref(),
                    range.start(),
                    range.end()
                ),
            )),
        }
    }

    /// A name others refer to: non-empty, no spaces.
    fn identifier(&self, name: &Spanned<String>, field: &str) -> Result<String, ConfigError> {
        let text = name.get_ref().trim();
        if text.is_empty() || text.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(self
                .loc
                .at(name.span(), field, "must be non-empty without spaces"));
        }
        Ok(text.to_owned())
    }

    /// A unicast, non-zero MAC address that is not the router MAC (unless it is the router
    /// MAC being parsed: then `router_mac` is still all zero).
    fn unicast_mac(&self, text: &Spanned<String>, field: &str) -> Result<[u8; 6], ConfigError> {
        let mac = parse_mac(text.get_ref()).map_err(|m| self.loc.at(text.span(), field, m))?;
        check_unicast_mac(mac, self.router_mac).map_err(|m| self.loc.at(text.span(), field, m))
    }
}

/// "an access port of VLAN 10", for messages.
/// Defaults of `[[srv6.sid]]` and `[[srv6.policy]]`.
pub mod srv6_defaults {
    /// RFC 9800's common F3216 format: 32-bit block, 16-bit uSIDs.
    pub const BLOCK_BITS: i64 = 32;
    pub const SHIFT_BITS: i64 = 16;
    /// Outer hop limit of encapsulated packets (Linux's default hop limit).
    pub const HOP_LIMIT: i64 = 64;
}

/// Smallest frame an SRv6 policy must be able to encapsulate: a tagged L2 header (a VLAN tag
/// may be pushed on egress) and a 20-byte IPv4 header.
const MIN_ENCAPSULATED_FRAME: usize = 18 + 20;

// The SRH format's limit is the only one a policy's segment count needs: even then a minimum
// packet still fits the mbuf (headroom and tailroom), the room the headend may use.
const _: () = assert!(
    MIN_ENCAPSULATED_FRAME
        + dataplane::pipeline::spec::encap_overhead(EncapMode::Encaps, MAX_SRH_SEGMENTS)
        <= defaults::MBUF_DATA_ROOM as usize
);

/// A policy's segment count, as the config file and `ctl policy add` check it: at least one,
/// and no more than an SRH can list (RFC 8754: Hdr Ext Len counts 8-octet units in one
/// octet); H.Encaps.Red leaves S1 out of the SRH, so it takes one more.
pub fn check_segment_count(count: usize, mode: EncapMode) -> Result<(), String> {
    let max = match mode {
        EncapMode::Encaps => MAX_SRH_SEGMENTS,
        EncapMode::EncapsRed => MAX_SRH_SEGMENTS + 1,
    };
    if count == 0 || count > max {
        return Err(format!(
            "{count} segments: give 1 to {max} (an SRH lists at most {MAX_SRH_SEGMENTS}; \
             each adds 16 bytes to every packet, and a packet whose encapsulation does not \
             fit the {}-byte mbuf is dropped as no_headroom)",
            defaults::MBUF_DATA_ROOM
        ));
    }
    Ok(())
}

impl SwitchBuilder<'_> {
    /// `[[srv6.sid]]` and `[[srv6.policy]]`; a policy's prefix becomes a route to it.
    fn srv6(&mut self, raw: Option<&Spanned<RawSrv6>>) -> Result<Srv6Spec, ConfigError> {
        let mut spec = Srv6Spec::default();
        let Some(raw) = raw else { return Ok(spec) };
        let loc = self.loc;
        let mut sid_prefixes: HashMap<(u16, Ipv6Addr, u8), usize> = HashMap::new();
        for (index, raw_sid) in raw.get_ref().sid.iter().enumerate() {
            let base = format!("srv6.sid[{index}]");
            let field = |key: &'static str| format!("{base}.{key}");
            let sid = raw_sid.get_ref();
            let vrf = self.vrf_ref(loc, sid.vrf.as_ref().map(Written::from), &field("vrf"))?;
            let (prefix, len) = route_prefix(sid.prefix.get_ref())
                .map_err(|m| loc.at(sid.prefix.span(), &field("prefix"), m))?;
            let IpAddr::V6(prefix) = prefix else {
                return Err(loc.at(
                    sid.prefix.span(),
                    &field("prefix"),
                    "a SID is an IPv6 prefix",
                ));
            };
            check_sid_prefix(prefix, len, vrf, &self.interfaces, |id| {
                self.interface_label(id)
            })
            .map_err(|m| loc.at(sid.prefix.span(), &field("prefix"), m))?;
            if let Some(first) = sid_prefixes.insert((vrf, prefix, len), index) {
                return Err(loc.at(
                    sid.prefix.span(),
                    &field("prefix"),
                    format!("{prefix}/{len} is already srv6.sid[{first}] in this VRF"),
                ));
            }
            let name_text = sid.behavior.get_ref().trim();
            let (kind, csid) = sid_behavior_kind(name_text)
                .map_err(|e| loc.at(sid.behavior.span(), &field("behavior"), e))?;
            let adjacency = kind == "end.x";
            let decap = kind.starts_with("end.dt");
            // Keys that only some behaviours take.
            let stray: [(Option<Range<usize>>, &str, bool); 8] = [
                (
                    sid.block_bits.as_ref().map(Spanned::span),
                    "block_bits",
                    csid,
                ),
                (
                    sid.shift_bits.as_ref().map(Spanned::span),
                    "shift_bits",
                    csid,
                ),
                (sid.via.as_ref().map(Spanned::span), "via", adjacency),
                (sid.port.as_ref().map(Spanned::span), "port", adjacency),
                (sid.vlan.as_ref().map(Spanned::span), "vlan", adjacency),
                (sid.group.as_ref().map(Spanned::span), "group", adjacency),
                (
                    sid.lookup_vrf.as_ref().map(Spanned::span),
                    "lookup_vrf",
                    decap,
                ),
                (sid.flavors.as_ref().map(Spanned::span), "flavors", !decap),
            ];
            for (span, key, allowed) in stray {
                if let (Some(span), false) = (span, allowed) {
                    return Err(loc.at(
                        span,
                        &field(key),
                        format!("does not apply to behaviour {name_text}"),
                    ));
                }
            }
            let next_csid = if csid {
                let bits = |v: Option<&Spanned<i64>>, key, default| {
                    self.int_or(v, &field(key), default, 0..=120)
                };
                let block_bits = bits(
                    sid.block_bits.as_ref(),
                    "block_bits",
                    srv6_defaults::BLOCK_BITS,
                )?;
                let shift_bits = bits(
                    sid.shift_bits.as_ref(),
                    "shift_bits",
                    srv6_defaults::SHIFT_BITS,
                )?;
                if shift_bits == 0 || block_bits + shift_bits >= 128 {
                    let span = sid
                        .shift_bits
                        .as_ref()
                        .map_or(raw_sid.span(), Spanned::span);
                    return Err(loc.at(
                        span,
                        &field("shift_bits"),
                        format!(
                            "block_bits {block_bits} + shift_bits {shift_bits} must be below 128 (an argument must remain) and the shift above 0"
                        ),
                    ));
                }
                if i64::from(len) > block_bits + shift_bits {
                    return Err(loc.at(
                        sid.prefix.span(),
                        &field("prefix"),
                        format!(
                            "/{len} is longer than block + shift ({}): the SID would match part of its own argument",
                            block_bits + shift_bits
                        ),
                    ));
                }
                Some(CsidFormat {
                    block_bits: block_bits as u8,
                    shift_bits: shift_bits as u8,
                })
            } else {
                None
            };
            let (mut psp, mut usp) = (false, false);
            if let Some(flavors) = &sid.flavors {
                for flavor in flavors.get_ref() {
                    let (seen, name) = match flavor.get_ref().to_ascii_lowercase().as_str() {
                        "psp" => (&mut psp, "psp"),
                        "usp" => (&mut usp, "usp"),
                        other => {
                            return Err(loc.at(
                                flavor.span(),
                                &field("flavors"),
                                format!("`{other}` is not a flavour; use \"psp\" and/or \"usp\""),
                            ));
                        }
                    };
                    if *seen {
                        return Err(loc.at(
                            flavor.span(),
                            &field("flavors"),
                            format!("flavour `{name}` is listed twice"),
                        ));
                    }
                    *seen = true;
                }
            }
            let behavior = match kind {
                "end" => SidBehavior::End,
                "end.x" => {
                    let target = match (&sid.group, &sid.via) {
                        (Some(group), None) => match self.group_ids.get(group.get_ref().as_str()) {
                            Some(&id) => {
                                check_forwarding_vrf(
                                    "this SID",
                                    vrf,
                                    Egress::Group(group.get_ref()),
                                    self.group_vrfs[id as usize],
                                    |v| self.vrf_name(v),
                                )
                                .map_err(|m| loc.at(group.span(), &field("group"), m))?;
                                RouteTarget::Group(id)
                            }
                            None => {
                                return Err(loc.at(
                                    group.span(),
                                    &field("group"),
                                    format!("no [[nexthop_group]] is named `{}`", group.get_ref()),
                                ));
                            }
                        },
                        (None, Some(via)) => {
                            let interface = self.interface_ref(
                                loc,
                                sid.port.as_ref().map(Written::from),
                                sid.vlan.as_ref(),
                                raw_sid.span(),
                                &base,
                            )?;
                            check_forwarding_vrf(
                                "this SID",
                                vrf,
                                Egress::Interface(&self.interface_label(interface)),
                                self.interfaces[usize::from(interface)].vrf,
                                |v| self.vrf_name(v),
                            )
                            .map_err(|m| loc.at(via.span(), &field("via"), m))?;
                            let ip = self.neighbor_ip(
                                loc,
                                interface,
                                Written::from(via),
                                &field("via"),
                            )?;
                            RouteTarget::Nexthop(self.nexthop(interface, ip))
                        }
                        (Some(group), Some(_)) => {
                            return Err(loc.at(
                                group.span(),
                                &field("group"),
                                "give `group` or `via` (with port or vlan), not both",
                            ));
                        }
                        (None, None) => {
                            return Err(loc.at(
                                sid.behavior.span(),
                                &field("behavior"),
                                format!(
                                    "{name_text} forwards to an adjacency: add group = \"NAME\" or via = \"ADDRESS\" with port or vlan"
                                ),
                            ));
                        }
                    };
                    SidBehavior::EndX { target }
                }
                _ => {
                    let table = match &sid.lookup_vrf {
                        Some(v) => {
                            self.vrf_ref(loc, Some(Written::from(v)), &field("lookup_vrf"))?
                        }
                        None => vrf,
                    };
                    match kind {
                        "end.dt4" => SidBehavior::EndDt4 { vrf: table },
                        "end.dt6" => SidBehavior::EndDt6 { vrf: table },
                        _ => SidBehavior::EndDt46 { vrf: table },
                    }
                }
            };
            spec.sids.push(SidSpec {
                name: format!("{prefix}/{len}"),
                vrf,
                prefix,
                len,
                behavior,
                next_csid,
                psp,
                usp,
            });
        }

        // Policy names, which routes and `ctl` refer to, with the policy each names and
        // whether the name was written (or is the default, the prefix).
        let mut policy_names: HashMap<String, (usize, bool)> = HashMap::new();
        for (index, raw_policy) in raw.get_ref().policy.iter().enumerate() {
            let base = format!("srv6.policy[{index}]");
            let field = |key: &'static str| format!("{base}.{key}");
            let policy = raw_policy.get_ref();
            let vrf = self.vrf_ref(loc, policy.vrf.as_ref().map(Written::from), &field("vrf"))?;
            let (prefix, len) = route_prefix(policy.prefix.get_ref())
                .map_err(|m| loc.at(policy.prefix.span(), &field("prefix"), m))?;
            let mode = match &policy.mode {
                None => EncapMode::Encaps,
                Some(mode) => match mode.get_ref().to_ascii_lowercase().as_str() {
                    "encaps" | "h.encaps" | "encap" => EncapMode::Encaps,
                    "encaps.red" | "h.encaps.red" | "encap.red" => EncapMode::EncapsRed,
                    other => {
                        return Err(loc.at(
                            mode.span(),
                            &field("mode"),
                            format!("`{other}` is not a mode; use \"encaps\" or \"encaps.red\""),
                        ));
                    }
                },
            };
            let mut segments = Vec::new();
            for segment in policy.segments.get_ref() {
                match segment.get_ref().trim().parse::<Ipv6Addr>() {
                    Ok(a) if !a.is_multicast() && !a.is_unspecified() => segments.push(a),
                    _ => {
                        return Err(loc.at(
                            segment.span(),
                            &field("segments"),
                            format!("`{}` is not a unicast IPv6 address", segment.get_ref()),
                        ));
                    }
                }
            }
            if let Err(e) = check_segment_count(segments.len(), mode) {
                return Err(loc.at(policy.segments.span(), &field("segments"), e));
            }
            let source = match &policy.source {
                Some(text) => match text.get_ref().trim().parse::<Ipv6Addr>() {
                    Ok(a) if !a.is_multicast() && !a.is_unspecified() => a,
                    _ => {
                        return Err(loc.at(
                            text.span(),
                            &field("source"),
                            format!("`{}` is not a unicast IPv6 address", text.get_ref()),
                        ));
                    }
                },
                None => match self
                    .interfaces
                    .iter()
                    .filter(|i| i.vrf == 0)
                    .flat_map(|i| i.ipv6.iter())
                    .map(|(a, _)| *a)
                    .find(|a| a.segments()[0] & 0xffc0 != 0xfe80)
                {
                    Some(a) => a,
                    None => {
                        return Err(loc.at(
                            raw_policy.span(),
                            &field("source"),
                            "is needed: no interface of the default VRF has a global IPv6 address to use",
                        ));
                    }
                },
            };
            let hop_limit = self.int_or(
                policy.hop_limit.as_ref(),
                &field("hop_limit"),
                srv6_defaults::HOP_LIMIT,
                1..=255,
            )? as u8;
            let name = match &policy.name {
                Some(n) => self.identifier(n, &field("name"))?,
                None => format!("{prefix}/{len}"),
            };
            self.claim_route_prefix(
                loc,
                policy.prefix.span(),
                &field("prefix"),
                (vrf, prefix, len),
                RouteOrigin::Srv6Policy(index as u32),
            )?;
            match policy_names.entry(name.clone()) {
                Entry::Vacant(slot) => {
                    slot.insert((index, policy.name.is_some()));
                }
                Entry::Occupied(first) => {
                    let (first, first_written) = *first.get();
                    let also = if first_written {
                        format!("srv6.policy[{first}]")
                    } else {
                        format!(
                            "srv6.policy[{first}], which has no `name` and is named by its prefix"
                        )
                    };
                    return Err(match &policy.name {
                        Some(written) => loc.at(
                            written.span(),
                            &field("name"),
                            format!(
                                "policy name `{name}` is used twice (also {also}); routes and `ironclos ctl` refer to policies by name, so names must be unique"
                            ),
                        ),
                        None => loc.at(
                            policy.prefix.span(),
                            &field("name"),
                            format!(
                                "this policy has no `name`, so it is named by its prefix, but `{name}` is already the name of {also}; add a unique `name`"
                            ),
                        ),
                    });
                }
            }
            self.routes.push(RouteSpec {
                vrf,
                prefix,
                len,
                target: RouteTarget::Srv6Policy(spec.policies.len() as u32),
            });
            spec.policies.push(PolicySpec {
                name,
                mode,
                segments,
                source,
                hop_limit,
                outer_vrf: 0,
            });
        }
        Ok(spec)
    }
}

fn describe_role(role: &PortRole) -> String {
    match role {
        PortRole::Access { vlan } => format!("an access port of VLAN {vlan}"),
        PortRole::Trunk { allowed, .. } => format!("a trunk of VLANs {}", join(allowed)),
        PortRole::Routed { .. } => "a routed port".to_owned(),
    }
}

/// What a route or an End.X/uA SID forwards by, as `check_forwarding_vrf` names it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Egress<'a> {
    /// The L3 interface of a neighbour (`via`), named as the message should name it
    /// ("interface 1 (port p1)" in the config, "p1" in the API).
    Interface(&'a str),
    /// An ECMP group, by name: it forwards by its members' interfaces.
    Group(&'a str),
}

/// The VRF rule, which keeps tenants apart: a route (`what` = "this route") or an End.X/uA SID
/// ("this SID") of VRF `vrf` forwards only by an interface of that VRF, or by a group whose
/// members' interfaces are in it (`egress_vrf`); else traffic of one VRF would leave by another
/// VRF's port. `vrf_name` names a VRF by its id. The one check of the config's `[[route]]`s,
/// route files and `[[srv6.sid]]`s (`SwitchBuilder`) and of every run-time path: the API's
/// `add_route` and `add_sid` (`resolve`, which `--schedule` events and `ctl` go through too)
/// and the P4 form's `ipv4_lpm`/`ipv6_lpm`/`my_sid` entries (`p4ctl`, and the server for a
/// nexthop given by id).
pub(crate) fn check_forwarding_vrf(
    what: &str,
    vrf: u16,
    egress: Egress,
    egress_vrf: u16,
    vrf_name: impl Fn(u16) -> String,
) -> Result<(), String> {
    if vrf == egress_vrf {
        return Ok(());
    }
    Err(match egress {
        Egress::Interface(label) => format!(
            "{label} is in VRF {}, but {what} is in VRF {}",
            vrf_name(egress_vrf),
            vrf_name(vrf)
        ),
        Egress::Group(name) => format!(
            "group `{name}` forwards in VRF {} (its members' interfaces), but {what} is in VRF {}",
            vrf_name(egress_vrf),
            vrf_name(vrf)
        ),
    })
}

/// The rule that an ECMP group's members share one VRF (so that `check_forwarding_vrf` can
/// hold for every route to the group): member `member` (its interface, named) is in VRF
/// `vrf`, the group's other members (`others`: "members[0]", "group `up`") in `others_vrf`.
/// The config's `[[nexthop_group]]` members and the API's `add_group` and `add_ecmp_member`
/// use it.
pub(crate) fn check_member_vrf(
    member: &str,
    vrf: u16,
    others: &str,
    others_vrf: u16,
    vrf_name: impl Fn(u16) -> String,
) -> Result<(), String> {
    if vrf == others_vrf {
        return Ok(());
    }
    Err(format!(
        "{member} is in VRF {}, but {others} is in VRF {}: a group's members share one VRF",
        vrf_name(vrf),
        vrf_name(others_vrf)
    ))
}

/// The smallest link MTU IPv6 allows (RFC 8200 section 5).
pub const IPV6_MIN_MTU: u16 = 1280;

/// Whether a port with MTU `mtu` (`None`: the device's own, 1500 by default) may have the role
/// `role`: below 1280 bytes it must carry no IPv6 (RFC 8200 section 5 requires a link MTU of
/// at least 1280): neither as a routed port with IPv6 addresses nor as a member of a VLAN whose
/// interface has some (a VLAN interface's MTU is the smallest of its ports'). `vlans` and
/// `interfaces` are the switch's. The config checks every port with it (reported at
/// `port[N].mtu`: the number is what breaks the rule, the addresses are fine), the API's
/// `set_port_vlan` the role it gives a port.
pub(crate) fn check_ipv6_mtu(
    mtu: Option<u16>,
    role: &PortRole,
    vlans: &[VlanSpec],
    interfaces: &[InterfaceSpec],
) -> Result<(), String> {
    let Some(mtu) = mtu.filter(|&m| m < IPV6_MIN_MTU) else {
        return Ok(());
    };
    let has_ipv6 = |interface: u16| {
        interfaces
            .get(usize::from(interface))
            .is_some_and(|i| !i.ipv6.is_empty())
    };
    let why = match role {
        PortRole::Routed { interface } => {
            has_ipv6(*interface).then(|| "this routed port has IPv6 addresses (`ipv6`)".to_owned())
        }
        PortRole::Access { vlan } => vlan_with_ipv6(&[*vlan], vlans, has_ipv6),
        PortRole::Trunk { allowed, native } => {
            let mut carried = allowed.clone();
            carried.extend(native);
            vlan_with_ipv6(&carried, vlans, has_ipv6)
        }
    };
    match why {
        None => Ok(()),
        Some(why) => Err(format!(
            "{mtu} is below {IPV6_MIN_MTU}, the smallest link MTU IPv6 allows (RFC 8200 section 5), and {why}; raise the MTU to at least {IPV6_MIN_MTU} or carry no IPv6 on this port"
        )),
    }
}

/// "the port is in VLAN N, whose interface has IPv6 addresses" for the first of `carried` that
/// has such an interface.
fn vlan_with_ipv6(
    carried: &[u16],
    vlans: &[VlanSpec],
    has_ipv6: impl Fn(u16) -> bool,
) -> Option<String> {
    carried.iter().find_map(|id| {
        let vlan = vlans.iter().find(|v| v.id == *id)?;
        vlan.interface.filter(|&i| has_ipv6(i)).map(|_| {
            format!("the port is in VLAN {id}, whose interface has IPv6 addresses (a VLAN interface's MTU is the smallest of its ports')")
        })
    })
}

/// Whether port `name` (as the operator wrote it), of role `role`, carries VLAN `vlan`: the
/// rule of a static MAC's port, in the config's `[[mac]]` and the API's `add_mac`.
pub(crate) fn check_port_in_vlan(name: &str, role: &PortRole, vlan: u16) -> Result<(), String> {
    let member = match role {
        PortRole::Access { vlan: v } => *v == vlan,
        PortRole::Trunk { allowed, native } => allowed.contains(&vlan) || *native == Some(vlan),
        PortRole::Routed { .. } => false,
    };
    if member {
        Ok(())
    } else {
        Err(format!(
            "port `{name}` is not in VLAN {vlan} (it is {})",
            describe_role(role)
        ))
    }
}

fn join(list: &[u16]) -> String {
    list.iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// A SID behaviour's name (any case) as its base behaviour and whether it has the NEXT-C-SID
/// flavour: uN is End and uA is End.X with it; uDT4/uDT6/uDT46 are End.DT*. The config file
/// and the control API (`sid add`) read behaviours with it.
pub(crate) fn sid_behavior_kind(text: &str) -> Result<(&'static str, bool), String> {
    Ok(match text.trim().to_ascii_lowercase().as_str() {
        "end" => ("end", false),
        "end.x" => ("end.x", false),
        "end.dt4" | "udt4" => ("end.dt4", false),
        "end.dt6" | "udt6" => ("end.dt6", false),
        "end.dt46" | "udt46" => ("end.dt46", false),
        "un" => ("end", true),
        "ua" => ("end.x", true),
        _ => {
            return Err(format!(
                "`{}` is not a behaviour; use End, End.X, End.DT4, End.DT6, End.DT46, uN, uA (uDT4/uDT6/uDT46 are End.DT*)",
                text.trim()
            ));
        }
    })
}

/// `aa:bb:cc:dd:ee:ff`: six bytes of two hex digits each.
pub fn parse_mac(text: &str) -> Result<[u8; 6], String> {
    let bad = || format!("`{text}` is not a MAC address; write six hex bytes: aa:bb:cc:dd:ee:ff");
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split(':');
    for byte in &mut mac {
        let part = parts.next().ok_or_else(bad)?;
        if part.len() != 2 || !part.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(bad());
        }
        *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
    }
    if parts.next().is_some() {
        return Err(bad());
    }
    Ok(mac)
}

/// An ECMP member's weight as the API takes it (`add_ecmp_member`, `add_group`'s members):
/// in a [[nexthop_group]] member's range, refused in the same words.
pub fn ecmp_weight(weight: u64) -> Result<u32, String> {
    let range = limits::ECMP_WEIGHT;
    match i64::try_from(weight) {
        Ok(w) if range.contains(&w) => Ok(w as u32),
        _ => Err(format!(
            "{weight} is out of range {}..={}",
            range.start(),
            range.end()
        )),
    }
}

/// What is wrong with a trunk's VLANs (`check_trunk`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TrunkFault {
    /// No `allowed` list.
    Missing,
    /// An empty `allowed` list.
    Empty,
    /// `allowed[i]` repeats an earlier VLAN.
    Repeat(usize),
    /// `native` is not one of `allowed`.
    Native,
}

impl TrunkFault {
    /// The key at fault, as the config (under `port[N].vlan`) and the API name it.
    pub fn field(self) -> String {
        match self {
            TrunkFault::Missing | TrunkFault::Empty => "allowed".to_owned(),
            TrunkFault::Repeat(i) => format!("allowed[{i}]"),
            TrunkFault::Native => "native".to_owned(),
        }
    }
}

/// A trunk's VLANs as the config (`vlan = { mode = "trunk", ... }`) and the API's
/// `set_port_vlan` check them: `allowed` is given (`None`: missing), not empty and without
/// repeats, and `native`, if given, is one of `allowed` (it is not added for you). The error
/// says which key is wrong and why, in the same words for both.
pub fn check_trunk(
    allowed: Option<&[u16]>,
    native: Option<u16>,
) -> Result<(), (TrunkFault, String)> {
    let Some(allowed) = allowed else {
        return Err((
            TrunkFault::Missing,
            "a trunk needs `allowed`, the list of VLANs it carries".to_owned(),
        ));
    };
    if allowed.is_empty() {
        return Err((
            TrunkFault::Empty,
            "is empty; a trunk carries at least one VLAN".to_owned(),
        ));
    }
    for (i, id) in allowed.iter().enumerate() {
        if allowed[..i].contains(id) {
            return Err((TrunkFault::Repeat(i), format!("VLAN {id} is listed twice")));
        }
    }
    if let Some(id) = native
        && !allowed.contains(&id)
    {
        return Err((
            TrunkFault::Native,
            format!(
                "native VLAN {id} is not in allowed [{}]; list it there too (the native VLAN is one of the trunk's VLANs, carried untagged)",
                join(allowed)
            ),
        ));
    }
    Ok(())
}

/// A MAC a static neighbour or MAC entry may have, as the config and the API's
/// `add_neighbor` check it: unicast, not all zero, not the switch's `router_mac` (all zero
/// while the router MAC itself is checked).
pub fn check_unicast_mac(mac: [u8; 6], router_mac: [u8; 6]) -> Result<[u8; 6], String> {
    if mac == [0; 6] {
        Err(format!(
            "{} is all zero; give a unicast MAC address",
            format_mac(mac)
        ))
    } else if mac[0] & 1 == 1 {
        Err(format!(
            "{} is a multicast address (the low bit of the first byte is set); give a unicast MAC",
            format_mac(mac)
        ))
    } else if mac == router_mac {
        Err(format!(
            "{} is the switch's own router_mac",
            format_mac(mac)
        ))
    } else {
        Ok(mac)
    }
}

pub fn format_mac(mac: [u8; 6]) -> String {
    mac.iter()
        .map(|b| format!("{b:02x}"))
        .collect::<Vec<_>>()
        .join(":")
}

fn host_len(addr: IpAddr) -> u8 {
    if addr.is_ipv4() { 32 } else { 128 }
}

/// `address/length`, the length in range for the family.
fn parse_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let text = text.trim();
    let Some((addr, len)) = text.split_once('/') else {
        return Err(format!(
            "`{text}` has no prefix length; write address/length, e.g. 10.0.10.1/24"
        ));
    };
    let addr: IpAddr = addr
        .parse()
        .map_err(|_| format!("`{addr}` (in `{text}`) is not an IPv4 or IPv6 address"))?;
    let max = host_len(addr);
    match len.parse::<u8>() {
        Ok(len) if len <= max => Ok((addr, len)),
        _ => Err(format!(
            "prefix length `{len}` (in `{text}`) is out of range 0..={max} for {}",
            if addr.is_ipv4() { "IPv4" } else { "IPv6" }
        )),
    }
}

/// A [[route]] prefix: a network address (no host bits).
fn route_prefix(text: &str) -> Result<(IpAddr, u8), String> {
    let (addr, len) = parse_prefix(text)?;
    network_address(addr, len, text)?;
    Ok((addr, len))
}

/// That `addr/len` (written `text`) is a network address: a route's prefix, in the config
/// and in run-time updates alike.
pub(crate) fn network_address(addr: IpAddr, len: u8, text: &str) -> Result<(), String> {
    let network = masked(addr, len);
    if network != addr {
        return Err(format!(
            "host bits set: `{}` is not a network address; write {network}/{len}",
            text.trim()
        ));
    }
    Ok(())
}

/// What a route file line may say, for messages.
const ROUTE_LINE_FORMS: &str = "a route line is PREFIX/LEN followed by `group NAME`, `via ADDRESS port NAME`, `via ADDRESS vlan ID` or `blackhole`, and optionally `vrf NAME`";

/// A route file line, comment cut off, as a route; `None` if it has no words. `offset` is
/// where the line starts in the text `loc` holds. Only the form is checked here; the route
/// itself is checked by `SwitchBuilder::static_route`, as a `[[route]]` is.
fn route_line<'t>(
    loc: &Locator,
    line: &'t str,
    offset: usize,
) -> Result<Option<RouteInput<'t>>, ConfigError> {
    let mut words = words(line).map(|(at, text)| Written {
        text,
        span: offset + at..offset + at + text.len(),
    });
    let Some(prefix) = words.next() else {
        return Ok(None);
    };
    let mut route = RouteInput {
        base: "",
        whole: prefix.span.start..offset + line.len(),
        vrf: None,
        prefix,
        group: None,
        via: None,
        port: None,
        vlan: None,
        blackhole: None,
    };
    let mut vlan: Option<Written> = None;
    while let Some(word) = words.next() {
        let key = word.text;
        let twice = || loc.at(word.span.clone(), key, format!("`{key}` is given twice"));
        let (slot, value) = match key {
            "blackhole" => {
                if route.blackhole.is_some() {
                    return Err(twice());
                }
                route.blackhole = Some(word.span);
                continue;
            }
            "group" => (&mut route.group, "NAME"),
            "via" => (&mut route.via, "ADDRESS"),
            "port" => (&mut route.port, "NAME"),
            "vlan" => (&mut vlan, "ID"),
            "vrf" => (&mut route.vrf, "NAME"),
            _ => {
                return Err(loc.at(
                    word.span,
                    "route",
                    format!("unexpected `{key}`: {ROUTE_LINE_FORMS}"),
                ));
            }
        };
        if slot.is_some() {
            return Err(twice());
        }
        let Some(written) = words.next() else {
            return Err(loc.at(
                word.span,
                key,
                format!("`{key}` needs a value: {key} {value}"),
            ));
        };
        *slot = Some(written);
    }
    if let Some(vlan) = vlan {
        let Ok(id) = vlan.text.parse::<i64>() else {
            return Err(loc.at(
                vlan.span,
                "vlan",
                format!("`{}` is not a VLAN id (1..=4094)", vlan.text),
            ));
        };
        route.vlan = Some(Spanned::new(vlan.span, id));
    }
    if let Some(via) = &route.via
        && route.port.is_none()
        && route.vlan.is_none()
    {
        return Err(loc.at(
            via.span.clone(),
            "via",
            "`via ADDRESS` needs the interface the neighbour is on: `port NAME` (a routed port) or `vlan ID` (a VLAN with addresses)",
        ));
    }
    Ok(Some(route))
}

/// The words of `line` (separated by ASCII whitespace), each with its byte offset in `line`.
fn words(line: &str) -> impl Iterator<Item = (usize, &str)> {
    let bytes = line.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while at < bytes.len() && bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        if at == bytes.len() {
            return None;
        }
        let start = at;
        while at < bytes.len() && !bytes[at].is_ascii_whitespace() {
            at += 1;
        }
        // ASCII whitespace never splits a UTF-8 sequence, so these are char boundaries.
        Some((start, &line[start..at]))
    })
}

/// An interface address: the address and its subnet (host bits are the address).
fn interface_address(text: &str, want_v6: bool) -> Result<(IpAddr, u8), String> {
    let (addr, len) = parse_prefix(text)?;
    match (addr, want_v6) {
        (IpAddr::V6(_), false) => {
            return Err(format!(
                "`{}` is an IPv6 address; list it in `ipv6`",
                text.trim()
            ));
        }
        (IpAddr::V4(_), true) => {
            return Err(format!(
                "`{}` is an IPv4 address; list it in `ipv4`",
                text.trim()
            ));
        }
        _ => {}
    }
    if len == 0 {
        return Err(format!(
            "`{}`: an interface subnet needs a prefix length of at least 1",
            text.trim()
        ));
    }
    let unusable = match addr {
        IpAddr::V4(a) => {
            if a.is_unspecified() {
                Some("the unspecified address")
            } else if a.is_loopback() {
                Some("a loopback address")
            } else if a.is_multicast() {
                Some("a multicast address")
            } else if a.is_broadcast() {
                Some("the broadcast address")
            } else if len <= 30 && masked(addr, len) == addr {
                Some("its subnet's network address (host part all zero)")
            } else if len <= 30 && u32::from(a) | (u32::MAX >> len) == u32::from(a) {
                Some("its subnet's broadcast address (host part all ones)")
            } else {
                None
            }
        }
        IpAddr::V6(a) => {
            if a.is_unspecified() {
                Some("the unspecified address")
            } else if a.is_loopback() {
                Some("the loopback address")
            } else if a.is_multicast() {
                Some("a multicast address")
            } else {
                None
            }
        }
    };
    if let Some(what) = unusable {
        return Err(format!(
            "{addr} is {what}; an interface needs a host address, e.g. 10.0.10.1/24"
        ));
    }
    if let IpAddr::V6(a) = addr
        && let Some(why) = ipv4_in_ipv6(a)
    {
        return Err(format!("{addr} is {why}; list IPv4 addresses in `ipv4`"));
    }
    Ok((addr, len))
}

/// Why IPv6 address `a` is no interface's because it only carries an IPv4 address, if it
/// does: IPv4-mapped (::ffff:0:0/96), which stands for an IPv4 node and is never assigned to
/// an IPv6 interface (RFC 4291 2.5.5.2; not forwardable, RFC 6890), or IPv4-compatible
/// (::/96), deprecated (RFC 4291 2.5.5.1). :: and ::1, inside ::/96, are neither: they are
/// the unspecified and loopback addresses. The rule for every interface address
/// (`interface_address`: `[[port]]` and `[[vlan]]` `ipv6`, so reloads too).
pub(crate) fn ipv4_in_ipv6(a: Ipv6Addr) -> Option<String> {
    let bits = u128::from(a);
    if bits >> 32 == 0xffff {
        let v4 = Ipv4Addr::from(bits as u32);
        Some(format!(
            "an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node {v4} and is never assigned to an interface (RFC 4291 2.5.5.2)"
        ))
    } else if bits >> 32 == 0 && bits > 1 {
        Some(
            "an IPv4-compatible address (::/96), deprecated by RFC 4291 2.5.5.1 and not assigned to interfaces"
                .to_owned(),
        )
    } else {
        None
    }
}

/// An interface's addresses with their prefix lengths, IPv4 first.
fn interface_addresses(iface: &InterfaceSpec) -> impl Iterator<Item = (IpAddr, u8)> + '_ {
    iface.subnets()
}

/// The prefixes interface address `addr/len` takes in its VRF's FIB: its connected subnet,
/// then the switch's own address (a /32 or /128 address's subnet is its own address, and is
/// named as the subnet).
fn interface_route_prefixes(addr: IpAddr, len: u8) -> [(IpAddr, u8); 2] {
    [(masked(addr, len), len), (addr, host_len(addr))]
}

/// Why no route may take `prefix/len`: interface address `addr/addr_len` of interface `label`
/// takes it (`interface_route_prefixes`).
fn interface_prefix_taken(
    (prefix, len): (IpAddr, u8),
    (addr, addr_len): (IpAddr, u8),
    label: &str,
) -> String {
    if len == addr_len {
        format!(
            "{prefix}/{len} is the connected subnet of {label} ({addr}/{addr_len}); it is routed there already"
        )
    } else {
        format!("{prefix}/{len} is this switch's own address on {label}")
    }
}

/// Whether a route's `prefix/len` in VRF `vrf` (whatever its target: a neighbour, a group, an
/// SRv6 policy, a blackhole) leaves the prefixes that VRF's interface addresses take alone:
/// neither a connected subnet nor the switch's own address (`label` names an interface by its
/// id). The rule of the config's `[[route]]`s, route files and `[[srv6.policy]]` prefixes
/// (`SwitchBuilder::claim_route_prefix`, which looks it up in an index) and of the API's
/// `add_route` (`resolve`). A prefix inside a connected subnet, or around one, is another
/// prefix: the longest match decides, as between any two routes.
pub(crate) fn check_route_prefix(
    (prefix, len): (IpAddr, u8),
    vrf: u16,
    interfaces: &[InterfaceSpec],
    label: impl Fn(u16) -> String,
) -> Result<(), String> {
    for (id, iface) in interfaces.iter().enumerate() {
        if iface.vrf != vrf {
            continue;
        }
        for (addr, addr_len) in interface_addresses(iface) {
            if interface_route_prefixes(addr, addr_len).contains(&(prefix, len)) {
                return Err(interface_prefix_taken(
                    (prefix, len),
                    (addr, addr_len),
                    &label(id as u16),
                ));
            }
        }
    }
    Ok(())
}

/// Whether a local SID `prefix/len` of VRF `vrf` leaves the connected IPv6 subnets of that
/// VRF's interfaces (`label` names an interface by its id) alone, as the config and the API's
/// `add_sid` check it. The my-SID table is looked up before the FIB, so a SID that covers an
/// interface's subnet, lies inside one or is the switch's own address would take the traffic
/// of that subnet's hosts (or the switch's own); two prefixes overlap only if one holds the
/// other, so this refuses every overlap.
pub fn check_sid_prefix(
    prefix: Ipv6Addr,
    len: u8,
    vrf: u16,
    interfaces: &[InterfaceSpec],
    label: impl Fn(u16) -> String,
) -> Result<(), String> {
    let sid = IpAddr::V6(prefix);
    let why = "the my-SID table is looked up before the FIB, so the SID would take";
    let fix = "give the SID a prefix outside the interfaces' subnets (a locator of its own)";
    for (id, iface) in interfaces.iter().enumerate() {
        if iface.vrf != vrf {
            continue;
        }
        for &(addr, l) in &iface.ipv6 {
            let own = IpAddr::V6(addr);
            let subnet = masked(own, l);
            let label = || label(id as u16);
            if len <= l && masked(own, len) == sid {
                let what = if len == l {
                    format!("is the connected subnet of {} ({addr}/{l})", label())
                } else {
                    format!(
                        "covers the connected subnet {subnet}/{l} of {} ({addr}/{l})",
                        label()
                    )
                };
                return Err(format!(
                    "{prefix}/{len} {what}: {why} the traffic to its hosts and to the switch's own address; {fix}"
                ));
            }
            if masked(sid, l) == subnet {
                if len == 128 && prefix == addr {
                    return Err(format!(
                        "{prefix}/{len} is this switch's own address on {} ({addr}/{l}): {why} the traffic to it; {fix}",
                        label()
                    ));
                }
                let (holds, also) = if masked(own, len) == sid {
                    (
                        format!(" and holds this switch's own address {addr}"),
                        " and to the switch's own address",
                    )
                } else {
                    (String::new(), "")
                };
                return Err(format!(
                    "{prefix}/{len} is inside the connected subnet {subnet}/{l} of {} ({addr}/{l}){holds}: {why} the traffic to the hosts there{also}; {fix}",
                    label()
                ));
            }
        }
    }
    Ok(())
}

/// Whether `ip` may be a neighbour on the L3 interface `label` whose addresses (with their
/// prefix lengths) are `subnets`: the rule every `via` and static neighbour follows, in the
/// config and in the API (`resolve`). It lies in one of the interface's connected subnets (a
/// neighbour elsewhere would never answer ARP or ND), is not the switch's own address there
/// and, in an IPv4 subnet up to /30, is neither the subnet's network nor its broadcast
/// address (in a /31 both addresses are hosts, RFC 3021). A neighbour's address is its
/// interface's, so none carries an IPv4 address in IPv6 (`ipv4_in_ipv6`, as for the switch's
/// own: only an interface subnet that covers ::/96 or ::ffff:0:0/96, such as ::1:0:0:1/64,
/// could hold one).
pub fn on_link(ip: IpAddr, subnets: &[(IpAddr, u8)], label: &str) -> Result<(), String> {
    if let IpAddr::V6(a) = ip
        && let Some(why) = ipv4_in_ipv6(a)
    {
        return Err(format!(
            "{ip} is {why}, so no neighbour has it; an IPv4 neighbour is given by its IPv4 address"
        ));
    }
    if subnets.iter().any(|&(a, _)| a == ip) {
        return Err(format!("{ip} is this switch's own address on {label}"));
    }
    let Some(&(addr, len)) = subnets
        .iter()
        .find(|&&(a, l)| a.is_ipv4() == ip.is_ipv4() && masked(a, l) == masked(ip, l))
    else {
        let list = subnets
            .iter()
            .map(|(a, l)| format!("{a}/{l}"))
            .collect::<Vec<_>>()
            .join(", ");
        return Err(format!(
            "{ip} is not in a connected subnet of {label} ({list})"
        ));
    };
    if let IpAddr::V4(v4) = ip
        && len <= 30
    {
        let host_bits = u32::MAX >> len;
        let what = match u32::from(v4) & host_bits {
            0 => Some("network address (host part all zero)"),
            h if h == host_bits => Some("broadcast address (host part all ones)"),
            _ => None,
        };
        if let Some(what) = what {
            return Err(format!(
                "{ip} is the subnet's {what} on {label} ({addr}/{len})"
            ));
        }
    }
    Ok(())
}

/// The network part of `addr` for a prefix length.
fn masked(addr: IpAddr, len: u8) -> IpAddr {
    match addr {
        IpAddr::V4(a) => {
            let mask = u32::MAX.checked_shl(32 - u32::from(len)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(a) & mask))
        }
        IpAddr::V6(a) => {
            let mask = u128::MAX.checked_shl(128 - u32::from(len)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(a) & mask))
        }
    }
}

/// Whether a subnet is inside fe80::/10, the IPv6 link-local unicast prefix: its addresses
/// are only meaningful on their link.
fn is_link_local_subnet(addr: IpAddr, len: u8) -> bool {
    match addr {
        IpAddr::V6(a) => len >= 10 && a.segments()[0] & 0xffc0 == 0xfe80,
        IpAddr::V4(_) => false,
    }
}

/// Whether two subnets share an address (one contains the other).
fn overlaps(a: IpAddr, a_len: u8, b: IpAddr, b_len: u8) -> bool {
    if a.is_ipv4() != b.is_ipv4() {
        return false;
    }
    let len = a_len.min(b_len);
    masked(a, len) == masked(b, len)
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
                "[switch]\nname = \"qqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqqq\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "switch.name",
                2,
                "at most 64",
            ),
            (
                "[dataplane]\neal = [\"--no-huge\", \"--file-prefix\"]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.eal[1]",
                2,
                "needs its value",
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
            (
                "[dataplane]\nmain_lcore = 128\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.main_lcore",
                2,
                "lcore 128 is out of range: lcore ids must be below 128",
            ),
            (
                // worker_lcores defaults to [1].
                "[dataplane]\nmain_lcore = 1\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.main_lcore",
                2,
                "lcore 1 is also the worker lcore",
            ),
            (
                "[dataplane]\neal = [\"--no-huge\", \"-l0-3\"]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.eal[1]",
                2,
                "`-l0-3` gives `-l`, which is set by ironclos",
            ),
            (
                "[dataplane]\neal = [\"--main-lcore=1\"]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.eal[0]",
                2,
                "`--main-lcore=1` gives `--main-lcore`",
            ),
            (
                "[dataplane]\neal = [\"--vdev=net_null0\"]\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
                "dataplane.eal[0]",
                2,
                "`--vdev=net_null0` gives `--vdev`, which is set by ironclos from the [[port]] devargs",
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
    fn eal_options_ironclos_sets_are_found_in_every_form_getopt_takes() {
        for (arg, option) in [
            ("-l", "-l"),
            ("-l0-1", "-l"),
            ("-c", "-c"),
            ("-c0x3", "-c"),
            ("-vl0-1", "-l"),
            ("-hc3", "-c"),
            ("--lcores", "--lcores"),
            ("--lcores=0@0,1@1", "--lcores"),
            ("--lcore", "--lcores"),
            ("--main-lcore", "--main-lcore"),
            ("--main-lcore=1", "--main-lcore"),
            ("--main=1", "--main-lcore"),
            ("--vdev", "--vdev"),
            ("--vdev=net_null0", "--vdev"),
            ("--vd=net_null0", "--vdev"),
        ] {
            assert_eq!(eal_option_from_config(arg), Some(option), "{arg}");
            assert!(check_eal_arg(arg).is_err(), "{arg}");
        }
        for arg in [
            "--no-huge",
            "-m",
            "512",
            "--no-pci",
            "-n4",
            "-a",
            "0000:3b:00.0",
            "--log-level=8",
            "--log-level",
            "lib.eal:debug",
            "--legacy-mem",
            "--file-prefix=x",
            "--in-memory",
            "--match-allocations",
            "--vfio-intr=msix",
            "-v",
            "--",
            "-",
            "net_null0",
        ] {
            assert_eq!(eal_option_from_config(arg), None, "{arg}");
            assert_eq!(check_eal_arg(arg), Ok(()), "{arg}");
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
    fn hugepage_files_are_unlinked_unless_the_eal_keeps_none_or_says_otherwise() {
        let mut config = parse(GOOD).unwrap();
        let unlinks = |args: Vec<String>| args.iter().filter(|a| *a == "--huge-unlink").count();
        config.eal = vec!["-m".to_owned(), "1024".to_owned()];
        assert_eq!(unlinks(config.eal_args(&[])), 1);
        for kept in [
            "--no-huge",
            "--in-memory",
            "--huge-unlink=never",
            "--huge-unlink",
        ] {
            config.eal = vec![kept.to_owned()];
            assert_eq!(
                config
                    .eal_args(&[])
                    .iter()
                    .filter(|a| a.starts_with("--huge-unlink"))
                    .count(),
                usize::from(kept.starts_with("--huge-unlink")),
                "{kept}"
            );
            config.eal = vec![];
            assert_eq!(
                unlinks(config.eal_args(&[kept.to_owned()])),
                usize::from(kept == "--huge-unlink"),
                "{kept} given on the command line"
            );
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

    // ---------------------------------------------------------------- switch mode

    use dataplane::pipeline::Forwarder;
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

    fn v4(text: &str) -> Ipv4Addr {
        text.parse().unwrap()
    }

    fn v6(text: &str) -> Ipv6Addr {
        text.parse().unwrap()
    }

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    fn spec_of(text: &str) -> SwitchSpec {
        let config = parse(text).unwrap_or_else(|e| panic!("{e}"));
        config.switch_spec().expect("switch mode")
    }

    /// A small switch every error case below extends (17 lines): an access port h1 in VLAN
    /// 10 (port 0), a routed port `up` (port 1, interface 0), VLAN 10 with an SVI
    /// (interface 1).
    const BASE: &str = r#"[switch]
name = "t"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
[[port]]
name = "h1"
devargs = "net_null0"
vlan = { mode = "access", id = 10 }
[[port]]
name = "up"
devargs = "net_null1"
ipv4 = ["10.255.0.1/31"]
ipv6 = ["2001:db8:ff::1/127"]
[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
"#;
    const BASE_LINES: usize = 17;

    #[test]
    fn the_base_switch_config_is_valid_and_fills_in_defaults() {
        assert_eq!(BASE.lines().count(), BASE_LINES);
        let spec = spec_of(BASE);
        assert_eq!(spec.router_mac, [0x02, 0, 0, 0, 0x01, 0]);
        assert_eq!(
            spec.ports,
            vec![
                PortRole::Access { vlan: 10 },
                PortRole::Routed { interface: 0 }
            ]
        );
        assert_eq!(
            spec.vlans,
            vec![VlanSpec {
                id: 10,
                interface: Some(1)
            }]
        );
        assert_eq!(spec.vrf_count, 1);
        assert_eq!(spec.mac_aging, 300 * PICOS_PER_SECOND);
        assert_eq!(spec.mac_capacity, 65_536);
        assert_eq!(spec.flow_hash_seed, 0);
        assert_eq!(spec.ecmp_buckets, 256);
        assert!(spec.routes.is_empty() && spec.nexthops.is_empty());
    }

    #[test]
    fn link_local_subnets_of_different_interfaces_do_not_overlap() {
        // Link-local subnets are per link: the same fe80::/64, even the same address, on two
        // routed ports and a VLAN interface, and a neighbour reached through each.
        let text = format!(
            "{BASE}[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"fe80::1/64\", \"2001:db8:1::1/64\"]\n[[port]]\nname = \"y\"\ndevargs = \"net_null3\"\nipv6 = [\"fe80::1/64\"]\n[[vlan]]\nid = 20\nipv6 = [\"fe80::2/64\"]\n[[route]]\nprefix = \"2001:db8:99::/48\"\nvia = \"fe80::9\"\nport = \"y\"\n[[route]]\nprefix = \"2001:db8:98::/48\"\nvia = \"fe80::9\"\nvlan = 20\n"
        );
        let spec = spec_of(&text);
        let link_local: Vec<_> = spec
            .interfaces
            .iter()
            .flat_map(|i| i.ipv6.iter())
            .filter(|(a, _)| a.segments()[0] == 0xfe80)
            .collect();
        assert_eq!(
            link_local,
            [
                &(v6("fe80::1"), 64),
                &(v6("fe80::1"), 64),
                &(v6("fe80::2"), 64)
            ]
        );
        assert_eq!(spec.nexthops.len(), 2);
        Forwarder::new(&spec).unwrap_or_else(|e| panic!("{e}"));
        // A global subnet still may not overlap one of another interface.
        let error = error_of(&format!(
            "{text}[[port]]\nname = \"z\"\ndevargs = \"net_null4\"\nipv6 = [\"2001:db8:1::2/64\"]\n"
        ));
        assert!(
            error.message.contains("overlaps 2001:db8:1::1/64"),
            "{error}"
        );
    }

    /// (text appended to BASE, field, line within the appended text, message part).
    const SWITCH_ERRORS: &[(&str, &str, usize, &str)] = &[
        // ports: switched or routed
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 10 }\nipv4 = [\"10.1.1.1/24\"]\n",
            "port[2].vlan",
            4,
            "not both",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\n",
            "port[2]",
            1,
            "every port is one or the other",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvrf = \"default\"\n",
            "port[2]",
            1,
            "needs `vlan",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = []\n",
            "port[2].ipv4",
            4,
            "at least one address",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 10 }\nvrf = \"default\"\n",
            "port[2].vrf",
            5,
            "no VRF of its own",
        ),
        // port VLANs
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 4095 }\n",
            "port[2].vlan.id",
            4,
            "VLAN 4095 is out of range 1..=4094",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 30 }\n",
            "port[2].vlan.id",
            4,
            "VLAN 30 is not declared; add a [[vlan]] with id = 30",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\" }\n",
            "port[2].vlan.id",
            4,
            "needs `id`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 10, allowed = [10] }\n",
            "port[2].vlan.allowed",
            4,
            "only a trunk has `allowed`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"trunk\", allowed = [] }\n",
            "port[2].vlan.allowed",
            4,
            "is empty",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"trunk\" }\n",
            "port[2].vlan.allowed",
            4,
            "needs `allowed`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"trunk\", allowed = [10, 10] }\n",
            "port[2].vlan.allowed[1]",
            4,
            "VLAN 10 is listed twice",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"trunk\", allowed = [10], native = 20 }\n[[vlan]]\nid = 20\n",
            "port[2].vlan.native",
            4,
            "native VLAN 20 is not in allowed [10]",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"trunk\", id = 10 }\n",
            "port[2].vlan.id",
            4,
            "not `id`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"hybrid\", id = 10 }\n",
            "port[2].vlan",
            4,
            "unknown variant `hybrid`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 10, pvid = 3 }\n",
            "port[2].vlan",
            4,
            "unknown field `pvid`",
        ),
        // [[vlan]] and [[vrf]]
        (
            "[[vlan]]\nid = 0\n",
            "vlan[1].id",
            2,
            "VLAN 0 is out of range",
        ),
        (
            "[[vlan]]\nid = 10\n",
            "vlan[1].id",
            2,
            "VLAN 10 is declared twice",
        ),
        (
            "[[vlan]]\nid = 20\nvrf = \"default\"\n",
            "vlan[1].vrf",
            3,
            "has no addresses",
        ),
        (
            "[[vlan]]\nid = 20\nvrf = \"red\"\nipv4 = [\"10.0.20.1/24\"]\n",
            "vlan[1].vrf",
            3,
            "VRF `red` is not declared",
        ),
        (
            "[[vrf]]\nname = \"default\"\n",
            "vrf[0].name",
            2,
            "always exists",
        ),
        (
            "[[vrf]]\nname = \"a\"\n[[vrf]]\nname = \"a\"\n",
            "vrf[1].name",
            4,
            "declared twice",
        ),
        // interface addresses
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.1\"]\n",
            "port[2].ipv4[0]",
            4,
            "no prefix length",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.1/33\"]\n",
            "port[2].ipv4[0]",
            4,
            "prefix length `33` (in `10.1.1.1/33`) is out of range 0..=32",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"2001:db8::1/129\"]\n",
            "port[2].ipv6[0]",
            4,
            "out of range 0..=128",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.x/24\"]\n",
            "port[2].ipv4[0]",
            4,
            "not an IPv4 or IPv6 address",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"2001:db8::1/64\"]\n",
            "port[2].ipv4[0]",
            4,
            "is an IPv6 address; list it in `ipv6`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.0/24\"]\n",
            "port[2].ipv4[0]",
            4,
            "network address",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.255/24\"]\n",
            "port[2].ipv4[0]",
            4,
            "broadcast address",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"ff02::1/64\"]\n",
            "port[2].ipv6[0]",
            4,
            "multicast",
        ),
        // IPv4 in IPv6 (RFC 4291 2.5.5): on a routed port, a VLAN interface, a second entry.
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"::ffff:10.1.1.1/120\"]\n",
            "port[2].ipv6[0]",
            4,
            "::ffff:10.1.1.1 is an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node 10.1.1.1 and is never assigned to an interface (RFC 4291 2.5.5.2); list IPv4 addresses in `ipv4`",
        ),
        (
            "[[vlan]]\nid = 20\nipv6 = [\"2001:db8:20::1/64\", \"::ffff:a01:101/128\"]\n",
            "vlan[1].ipv6[1]",
            3,
            "::ffff:10.1.1.1 is an IPv4-mapped address",
        ),
        (
            "[[vlan]]\nid = 20\nipv6 = [\"::10.1.1.1/120\"]\n",
            "vlan[1].ipv6[0]",
            3,
            "::a01:101 is an IPv4-compatible address (::/96), deprecated by RFC 4291 2.5.5.1 and not assigned to interfaces; list IPv4 addresses in `ipv4`",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.255.0.2/30\"]\n",
            "port[2].ipv4[0]",
            4,
            "10.255.0.2/30 overlaps 10.255.0.1/31 of interface 0 (port up) in VRF default",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"2001:db8:ff::1/64\"]\n",
            "port[2].ipv6[0]",
            4,
            "overlaps 2001:db8:ff::1/127 of interface 0 (port up)",
        ),
        (
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv4 = [\"10.1.1.1/24\", \"10.1.1.2/25\"]\n",
            "port[2].ipv4[1]",
            4,
            "overlaps 10.1.1.1/24 of this interface",
        ),
        (
            // Link-local subnets of different links may repeat, but not on one link.
            "[[port]]\nname = \"x\"\ndevargs = \"net_null2\"\nipv6 = [\"fe80::1/64\", \"fe80::2/64\"]\n",
            "port[2].ipv6[1]",
            4,
            "fe80::2/64 overlaps fe80::1/64 of this interface",
        ),
        (
            // The SVI is made after the routed ports, so it is the one that overlaps.
            "[[vlan]]\nid = 20\nipv4 = [\"10.255.0.1/24\"]\n",
            "vlan[1].ipv4[0]",
            3,
            "overlaps 10.255.0.1/31 of interface 0 (port up)",
        ),
        // [l2] and [ecmp]
        (
            "[l2]\nmac_aging_s = 0\n",
            "l2.mac_aging_s",
            2,
            "0 is out of range 1..=1000000",
        ),
        (
            "[l2]\nmac_table_size = -1\n",
            "l2.mac_table_size",
            2,
            "out of range",
        ),
        (
            "[neighbor_timers]\nreachable_s = 0\n",
            "neighbor_timers.reachable_s",
            2,
            "0 is out of range 1..=3600",
        ),
        (
            "[neighbor_timers]\nretrans_ms = 5\n",
            "neighbor_timers.retrans_ms",
            2,
            "5 is out of range 10..=60000",
        ),
        (
            "[neighbor_timers]\nprobes = 11\n",
            "neighbor_timers.probes",
            2,
            "11 is out of range 1..=10",
        ),
        (
            "[l2]\nmac_agin_s = 5\n",
            "l2.mac_agin_s",
            2,
            "unknown field",
        ),
        (
            "[ecmp]\nbuckets = 100\n",
            "ecmp.buckets",
            2,
            "100 is not a power of two",
        ),
        (
            "[ecmp]\nbuckets = 8\n",
            "ecmp.buckets",
            2,
            "8 is out of range 16..=65536",
        ),
        (
            "[ecmp]\nseed = 4294967296\n",
            "ecmp.seed",
            2,
            "out of range 0..=4294967295",
        ),
        // [[nexthop_group]]
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"nope\", via = \"10.255.0.0\" }]\n",
            "nexthop_group[0].members[0].port",
            3,
            "no [[port]] is named `nope`",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"h1\", via = \"10.0.10.2\" }]\n",
            "nexthop_group[0].members[0].port",
            3,
            "port `h1` is not a routed port (it is an access port of VLAN 10)",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.9.9.9\" }]\n",
            "nexthop_group[0].members[0].via",
            3,
            "10.9.9.9 is not in a connected subnet of interface 0 (port up) (10.255.0.1/31, 2001:db8:ff::1/127)",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.1\" }]\n",
            "nexthop_group[0].members[0].via",
            3,
            "own address",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0/31\" }]\n",
            "nexthop_group[0].members[0].via",
            3,
            "not an IPv4 or IPv6 address",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ via = \"10.255.0.0\" }]\n",
            "nexthop_group[0].members[0]",
            3,
            "needs the interface the neighbour is on",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", vlan = 10, via = \"10.255.0.0\" }]\n",
            "nexthop_group[0].members[0].vlan",
            3,
            "not both",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ vlan = 20, via = \"10.0.20.2\" }]\n[[vlan]]\nid = 20\n",
            "nexthop_group[0].members[0].vlan",
            3,
            "VLAN 20 has no L3 interface",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\" }, { port = \"up\", via = \"10.255.0.0\" }]\n",
            "nexthop_group[0].members[1].via",
            3,
            "already members[0]",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\", weight = 0 }]\n",
            "nexthop_group[0].members[0].weight",
            3,
            "0 is out of range 1..=65535",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\", weight = 65536 }]\n",
            "nexthop_group[0].members[0].weight",
            3,
            "65536 is out of range 1..=65535",
        ),
        // A neighbour on a subnet up to /30 is neither its network nor its broadcast address.
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ vlan = 10, via = \"10.0.10.255\" }]\n",
            "nexthop_group[0].members[0].via",
            3,
            "10.0.10.255 is the subnet's broadcast address (host part all ones) on interface 1 (vlan 10) (10.0.10.1/24)",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = []\n",
            "nexthop_group[0].members",
            3,
            "is empty",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\" }]\n[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\" }]\n",
            "nexthop_group[1].name",
            5,
            "used twice",
        ),
        (
            "[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\", wieght = 2 }]\n",
            "nexthop_group[0].members",
            3,
            "unknown field `wieght`",
        ),
        // [[route]]
        (
            "[[route]]\nprefix = \"10.1.0.1/16\"\nblackhole = true\n",
            "route[0].prefix",
            2,
            "host bits set: `10.1.0.1/16` is not a network address; write 10.1.0.0/16",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/40\"\nblackhole = true\n",
            "route[0].prefix",
            2,
            "out of range 0..=32",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\n",
            "route[0]",
            1,
            "needs one target",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nblackhole = false\n",
            "route[0]",
            1,
            "needs one target",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"up\"\nblackhole = true\n",
            "route[0].blackhole",
            5,
            "exactly one target",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\ngroup = \"nope\"\n",
            "route[0].group",
            3,
            "no [[nexthop_group]] is named `nope`",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.255.0.0\"\n",
            "route[0]",
            1,
            "needs the interface",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.0.10.9\"\nport = \"up\"\n",
            "route[0].via",
            3,
            "10.0.10.9 is not in a connected subnet of interface 0 (port up)",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"2001:db8:10::9\"\nvlan = 10\n",
            "route[0].via",
            3,
            "2001:db8:10::9 is not in a connected subnet of interface 1 (vlan 10) (10.0.10.1/24)",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.0.10.0\"\nvlan = 10\n",
            "route[0].via",
            3,
            "10.0.10.0 is the subnet's network address (host part all zero) on interface 1 (vlan 10) (10.0.10.1/24)",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nblackhole = true\nport = \"up\"\n",
            "route[0].port",
            4,
            "this route has no via",
        ),
        (
            "[[route]]\nvrf = \"blue\"\nprefix = \"10.1.0.0/16\"\nblackhole = true\n",
            "route[0].vrf",
            2,
            "VRF `blue` is not declared",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nblackhole = true\n[[route]]\nvrf = \"default\"\nprefix = \"10.1.0.0/16\"\nblackhole = true\n",
            "route[1].prefix",
            6,
            "already routed by route[0]",
        ),
        (
            "[[route]]\nprefix = \"10.0.10.0/24\"\nblackhole = true\n",
            "route[0].prefix",
            2,
            "is the connected subnet of interface 1 (vlan 10)",
        ),
        (
            "[[route]]\nprefix = \"10.0.10.1/32\"\nblackhole = true\n",
            "route[0].prefix",
            2,
            "own address",
        ),
        (
            "[[vrf]]\nname = \"blue\"\n[[nexthop_group]]\nname = \"g\"\nmembers = [{ port = \"up\", via = \"10.255.0.0\" }]\n[[route]]\nvrf = \"blue\"\nprefix = \"10.1.0.0/16\"\ngroup = \"g\"\n",
            "route[0].group",
            9,
            "group `g` forwards in VRF default (its members' interfaces), but this route is in VRF blue",
        ),
        (
            "[[vrf]]\nname = \"blue\"\n[[route]]\nvrf = \"blue\"\nprefix = \"10.1.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"up\"\n",
            "route[0].via",
            6,
            "interface 0 (port up) is in VRF default, but this route is in VRF blue",
        ),
        (
            "[[route]]\nprefix = \"10.1.0.0/16\"\nnexthop = \"10.255.0.0\"\n",
            "route[0].nexthop",
            3,
            "unknown field `nexthop`",
        ),
        // [[neighbor]]
        (
            "[[neighbor]]\nip = \"10.9.9.9\"\nmac = \"02:00:00:00:51:01\"\nport = \"up\"\n",
            "neighbor[0].ip",
            2,
            "not in a connected subnet",
        ),
        (
            "[[neighbor]]\nip = \"10.0.10.255\"\nmac = \"02:00:00:00:51:01\"\nvlan = 10\n",
            "neighbor[0].ip",
            2,
            "10.0.10.255 is the subnet's broadcast address",
        ),
        (
            "[[neighbor]]\nip = \"10.255.0.0\"\nmac = \"02:00:00:00:51\"\nport = \"up\"\n",
            "neighbor[0].mac",
            3,
            "`02:00:00:00:51` is not a MAC address",
        ),
        (
            "[[neighbor]]\nip = \"10.255.0.0\"\nmac = \"01:00:5e:00:00:01\"\nport = \"up\"\n",
            "neighbor[0].mac",
            3,
            "multicast",
        ),
        (
            "[[neighbor]]\nip = \"10.255.0.0\"\nmac = \"02:00:00:00:01:00\"\nport = \"up\"\n",
            "neighbor[0].mac",
            3,
            "router_mac",
        ),
        (
            "[[neighbor]]\nip = \"10.255.0.0\"\nmac = \"02:00:00:00:51:01\"\nport = \"up\"\n[[neighbor]]\nip = \"10.255.0.0\"\nmac = \"02:00:00:00:51:02\"\nport = \"up\"\n",
            "neighbor[1].ip",
            6,
            "already neighbor[0]",
        ),
        (
            "[[neighbor]]\nip = \"10.0.10.7\"\nmac = \"02:00:00:00:51:01\"\nvlan = 11\n",
            "neighbor[0].vlan",
            4,
            "VLAN 11 is not declared",
        ),
        // [[mac]]
        (
            "[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0a\"\nport = \"up\"\n",
            "mac[0].port",
            4,
            "port `up` is not in VLAN 10 (it is a routed port",
        ),
        (
            "[[mac]]\nvlan = 20\nmac = \"02:00:00:00:00:0a\"\nport = \"h1\"\n",
            "mac[0].vlan",
            2,
            "VLAN 20 is not declared",
        ),
        (
            "[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0a\"\nport = \"h9\"\n",
            "mac[0].port",
            4,
            "no [[port]] is named `h9`",
        ),
        (
            "[[mac]]\nvlan = 10\nmac = \"02-00-00-00-00-0a\"\nport = \"h1\"\n",
            "mac[0].mac",
            3,
            "write six hex bytes: aa:bb:cc:dd:ee:ff",
        ),
        (
            "[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0a\"\nport = \"h1\"\n[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0A\"\nport = \"h1\"\n",
            "mac[1].mac",
            7,
            "02:00:00:00:00:0a in VLAN 10 is already mac[0]",
        ),
        (
            "[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:0a\"\n",
            "mac[0]",
            1,
            "missing field `port`",
        ),
    ];

    #[test]
    fn switch_errors_name_line_field_and_problem() {
        for (extra, field, line, message) in SWITCH_ERRORS {
            let text = format!("{BASE}{extra}");
            let error = error_of(&text);
            let line = BASE_LINES + line;
            assert_eq!(error.line, line, "line for {extra:?}: {error}");
            assert_eq!(error.field, *field, "field for {extra:?}: {error}");
            assert!(
                error.message.contains(message),
                "message for {extra:?}: {error}"
            );
            let shown = error.to_string();
            assert!(shown.starts_with(&format!("test.toml:{line}:")), "{shown}");
        }
    }

    #[test]
    fn switch_only_fields_are_rejected_in_io_mode() {
        let io = "[dataplane]\nmode = \"io\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n";
        let cases: &[(&str, &str, usize)] = &[
            ("vlan = { mode = \"access\", id = 10 }\n", "port[0].vlan", 6),
            ("ipv4 = [\"10.0.0.1/24\"]\n", "port[0].ipv4", 6),
            ("ipv6 = [\"2001:db8::1/64\"]\n", "port[0].ipv6", 6),
            ("vrf = \"default\"\n", "port[0].vrf", 6),
            ("[[vlan]]\nid = 10\n", "vlan[0]", 6),
            ("[[vrf]]\nname = \"x\"\n", "vrf[0]", 6),
            ("[l2]\nmac_aging_s = 10\n", "l2", 6),
            ("[ecmp]\nbuckets = 64\n", "ecmp", 6),
            (
                "[[nexthop_group]]\nname = \"g\"\nmembers = []\n",
                "nexthop_group[0]",
                6,
            ),
            (
                "[[route]]\nprefix = \"10.0.0.0/8\"\nblackhole = true\n",
                "route[0]",
                6,
            ),
            (
                "[[neighbor]]\nip = \"10.0.0.1\"\nmac = \"02:00:00:00:00:01\"\nport = \"a\"\n",
                "neighbor[0]",
                6,
            ),
            (
                "[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:01\"\nport = \"a\"\n",
                "mac[0]",
                6,
            ),
        ];
        for (extra, field, line) in cases {
            let error = error_of(&format!("{io}{extra}"));
            assert_eq!(error.line, *line, "{extra:?}: {error}");
            assert_eq!(error.field, *field, "{extra:?}: {error}");
            assert!(
                error.message.contains("only in mode = \"switch\""),
                "{extra:?}: {error}"
            );
        }
        // router_mac sits above the port; the first offending field in the file is reported.
        let error = error_of(
            "[switch]\nrouter_mac = \"02:00:00:00:01:00\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nvlan = { mode = \"access\", id = 10 }\n",
        );
        assert_eq!((error.line, error.field.as_str()), (2, "switch.router_mac"));
        // And io mode has no switch spec.
        let config = parse(GOOD).unwrap();
        assert_eq!(config.switch_spec(), None);
        assert_eq!(
            config.engine_config(&RunOptions::default()).mode,
            ForwardingMode::Io
        );
    }

    #[test]
    fn switch_mode_needs_a_unicast_router_mac_and_one_worker() {
        let body = "[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\nipv4 = [\"10.0.0.1/24\"]\n";
        let cases: &[(&str, &str, usize, &str)] = &[
            (
                "[dataplane]\nmode = \"switch\"\n",
                "switch.router_mac",
                2,
                "is required in mode = \"switch\"",
            ),
            (
                "[switch]\nrouter_mac = \"03:00:00:00:01:00\"\n[dataplane]\nmode = \"switch\"\n",
                "switch.router_mac",
                2,
                "multicast",
            ),
            (
                "[switch]\nrouter_mac = \"00:00:00:00:00:00\"\n[dataplane]\nmode = \"switch\"\n",
                "switch.router_mac",
                2,
                "all zero",
            ),
            (
                "[switch]\nrouter_mac = \"02:00:00:00:01:0g\"\n[dataplane]\nmode = \"switch\"\n",
                "switch.router_mac",
                2,
                "not a MAC address",
            ),
            (
                "[switch]\nrouter_mac = \"02:00:00:00:01:00\"\n[dataplane]\nmode = \"switch\"\nworker_lcores = [1, 2]\n",
                "dataplane.worker_lcores",
                5,
                "exactly one worker lcore for now (its tables are not shared between workers yet); 2 are listed",
            ),
        ];
        for (head, field, line, message) in cases {
            let error = error_of(&format!("{head}{body}"));
            assert_eq!(error.line, *line, "{head:?}: {error}");
            assert_eq!(error.field, *field, "{head:?}: {error}");
            assert!(error.message.contains(message), "{head:?}: {error}");
        }
    }

    const FULL: &str = r#"
[switch]
name = "full"
router_mac = "02:00:00:00:01:00"
[dataplane]
mode = "switch"
worker_lcores = [1]
[l2]
mac_aging_s = 60
mac_table_size = 1024
[neighbor_timers]
reachable_s = 5
retrans_ms = 250
probes = 2
[ecmp]
seed = 7
buckets = 64
[[vrf]]
name = "tenant1"
[[port]]
name = "h1"
devargs = "net_null0"
vlan = { mode = "access", id = 10 }
[[port]]
name = "tr"
devargs = "net_null1"
vlan = { mode = "trunk", allowed = [10, 20], native = 10 }
[[port]]
name = "up1"
devargs = "net_null2"
ipv4 = ["10.255.0.1/31"]
ipv6 = ["2001:db8:ff::1/127"]
[[port]]
name = "up2"
devargs = "net_null3"
ipv4 = ["10.255.0.3/31"]
[[port]]
name = "ten"
devargs = "net_null4"
vrf = "tenant1"
ipv4 = ["192.168.0.1/30"]
[[port]]
name = "h3"
devargs = "net_null5"
vlan = { mode = "access", id = 30 }
[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]
ipv6 = ["2001:db8:10::1/64"]
[[vlan]]
id = 20
[[vlan]]
id = 30
vrf = "tenant1"
ipv4 = ["10.0.10.1/24"]          # the same subnet as VLAN 10, in another VRF
[[nexthop_group]]
name = "uplinks"
members = [{ port = "up1", via = "10.255.0.0", weight = 2 }, { port = "up2", via = "10.255.0.2" }]
[[route]]
prefix = "10.1.0.0/16"
group = "uplinks"
[[route]]
vrf = "default"
prefix = "10.2.0.0/16"
via = "10.255.0.0"               # the same nexthop as the group's first member
port = "up1"
[[route]]
prefix = "2001:db8:100::/48"
via = "2001:db8:ff::"
port = "up1"
[[route]]
prefix = "10.9.0.0/16"
blackhole = true
[[route]]
vrf = "tenant1"
prefix = "0.0.0.0/0"
via = "192.168.0.2"
port = "ten"
[[route]]
prefix = "10.3.0.0/16"
via = "10.0.10.20"
vlan = 10
[[neighbor]]
ip = "10.255.0.0"
mac = "02:00:00:00:51:01"
port = "up1"
[[neighbor]]
ip = "10.0.10.20"
mac = "02:00:00:00:00:14"
vlan = 10
[[mac]]
vlan = 10
mac = "02:00:00:00:00:0a"
port = "h1"
[[mac]]
vlan = 20
mac = "02:00:00:00:00:0B"
port = "tr"
"#;

    #[test]
    fn a_full_switch_config_produces_exactly_the_expected_spec() {
        let config = parse(FULL).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(config.mode, Mode::Switch);
        let expected = SwitchSpec {
            router_mac: [0x02, 0, 0, 0, 0x01, 0x00],
            ports: vec![
                PortRole::Access { vlan: 10 },
                PortRole::Trunk {
                    allowed: vec![10, 20],
                    native: Some(10),
                },
                PortRole::Routed { interface: 0 },
                PortRole::Routed { interface: 1 },
                PortRole::Routed { interface: 2 },
                PortRole::Access { vlan: 30 },
            ],
            vlans: vec![
                VlanSpec {
                    id: 10,
                    interface: Some(3),
                },
                VlanSpec {
                    id: 20,
                    interface: None,
                },
                VlanSpec {
                    id: 30,
                    interface: Some(4),
                },
            ],
            vrf_count: 2,
            interfaces: vec![
                InterfaceSpec {
                    vrf: 0,
                    attachment: Attachment::Port(2),
                    ipv4: vec![(v4("10.255.0.1"), 31)],
                    ipv6: vec![(v6("2001:db8:ff::1"), 127)],
                },
                InterfaceSpec {
                    vrf: 0,
                    attachment: Attachment::Port(3),
                    ipv4: vec![(v4("10.255.0.3"), 31)],
                    ipv6: vec![],
                },
                InterfaceSpec {
                    vrf: 1,
                    attachment: Attachment::Port(4),
                    ipv4: vec![(v4("192.168.0.1"), 30)],
                    ipv6: vec![],
                },
                InterfaceSpec {
                    vrf: 0,
                    attachment: Attachment::Vlan(10),
                    ipv4: vec![(v4("10.0.10.1"), 24)],
                    ipv6: vec![(v6("2001:db8:10::1"), 64)],
                },
                InterfaceSpec {
                    vrf: 1,
                    attachment: Attachment::Vlan(30),
                    ipv4: vec![(v4("10.0.10.1"), 24)],
                    ipv6: vec![],
                },
            ],
            nexthops: vec![
                NexthopSpec {
                    interface: 0,
                    ip: ip("10.255.0.0"),
                },
                NexthopSpec {
                    interface: 1,
                    ip: ip("10.255.0.2"),
                },
                NexthopSpec {
                    interface: 0,
                    ip: ip("2001:db8:ff::"),
                },
                NexthopSpec {
                    interface: 2,
                    ip: ip("192.168.0.2"),
                },
                NexthopSpec {
                    interface: 3,
                    ip: ip("10.0.10.20"),
                },
            ],
            groups: vec![GroupSpec {
                members: vec![(0, 2), (1, 1)],
                balance: Default::default(),
            }],
            routes: vec![
                RouteSpec {
                    vrf: 0,
                    prefix: ip("10.1.0.0"),
                    len: 16,
                    target: RouteTarget::Group(0),
                },
                RouteSpec {
                    vrf: 0,
                    prefix: ip("10.2.0.0"),
                    len: 16,
                    target: RouteTarget::Nexthop(0),
                },
                RouteSpec {
                    vrf: 0,
                    prefix: ip("2001:db8:100::"),
                    len: 48,
                    target: RouteTarget::Nexthop(2),
                },
                RouteSpec {
                    vrf: 0,
                    prefix: ip("10.9.0.0"),
                    len: 16,
                    target: RouteTarget::Blackhole,
                },
                RouteSpec {
                    vrf: 1,
                    prefix: ip("0.0.0.0"),
                    len: 0,
                    target: RouteTarget::Nexthop(3),
                },
                RouteSpec {
                    vrf: 0,
                    prefix: ip("10.3.0.0"),
                    len: 16,
                    target: RouteTarget::Nexthop(4),
                },
            ],
            static_macs: vec![
                StaticMac {
                    vlan: 10,
                    mac: [0x02, 0, 0, 0, 0, 0x0a],
                    port: 0,
                },
                StaticMac {
                    vlan: 20,
                    mac: [0x02, 0, 0, 0, 0, 0x0b],
                    port: 1,
                },
            ],
            static_neighbors: vec![
                StaticNeighbor {
                    interface: 0,
                    ip: ip("10.255.0.0"),
                    mac: [0x02, 0, 0, 0, 0x51, 0x01],
                },
                StaticNeighbor {
                    interface: 3,
                    ip: ip("10.0.10.20"),
                    mac: [0x02, 0, 0, 0, 0, 0x14],
                },
            ],
            mac_aging: 60 * PICOS_PER_SECOND,
            mac_capacity: 1024,
            neighbor_timers: dataplane::tables::neighbor::NeighborConfig {
                reachable_time: 5 * PICOS_PER_SECOND,
                retry_interval: PICOS_PER_SECOND / 4,
                max_probes: 2,
                ..Default::default()
            },
            flow_hash_seed: 7,
            ecmp_buckets: 64,
            qos: dataplane::qos::QosSpec::new(config.ports.len()),
            srv6: Default::default(),
        };
        assert_eq!(config.switch_spec(), Some(expected.clone()));
        assert_eq!(
            config.engine_config(&RunOptions::default()).mode,
            ForwardingMode::Switch(Box::new(expected.clone()))
        );
        // The dataplane accepts what the config produces.
        Forwarder::new(&expected).expect("the forwarder builds from the spec");
    }

    #[test]
    fn the_same_interface_and_via_is_one_nexthop_wherever_it_appears() {
        let text = format!(
            "{BASE}[[nexthop_group]]\nname = \"a\"\nmembers = [{{ port = \"up\", via = \"10.255.0.0\" }}]\n\
             [[nexthop_group]]\nname = \"b\"\nmembers = [{{ port = \"up\", via = \"10.255.0.0\", weight = 3 }}, {{ vlan = 10, via = \"10.0.10.9\" }}]\n\
             [[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.255.0.0\"\nport = \"up\"\n\
             [[route]]\nprefix = \"2001:db8:1::/48\"\nvia = \"10.255.0.0\"\nport = \"up\"\n\
             [[route]]\nprefix = \"10.2.0.0/16\"\nvia = \"10.0.10.9\"\nvlan = 10\n"
        );
        let spec = spec_of(&text);
        assert_eq!(
            spec.nexthops,
            vec![
                NexthopSpec {
                    interface: 0,
                    ip: ip("10.255.0.0")
                },
                NexthopSpec {
                    interface: 1,
                    ip: ip("10.0.10.9")
                },
            ]
        );
        assert_eq!(spec.groups[0].members, vec![(0, 1)]);
        assert_eq!(spec.groups[1].members, vec![(0, 3), (1, 1)]);
        let targets: Vec<RouteTarget> = spec.routes.iter().map(|r| r.target).collect();
        assert_eq!(
            targets,
            vec![
                RouteTarget::Nexthop(0),
                RouteTarget::Nexthop(0),
                RouteTarget::Nexthop(1)
            ]
        );
    }

    #[test]
    fn a_group_cannot_have_more_members_than_buckets_or_mix_vrfs() {
        let mut members = Vec::new();
        let mut ports = String::new();
        for i in 0..17 {
            ports.push_str(&format!(
                "[[port]]\nname = \"u{i}\"\ndevargs = \"net_null{}\"\nipv4 = [\"10.254.{i}.1/24\"]\n",
                i + 2
            ));
            members.push(format!("{{ port = \"u{i}\", via = \"10.254.{i}.2\" }}"));
        }
        let text = format!(
            "{BASE}[ecmp]\nbuckets = 16\n{ports}[[nexthop_group]]\nname = \"wide\"\nmembers = [{}]\n",
            members.join(", ")
        );
        let error = error_of(&text);
        assert_eq!(error.field, "nexthop_group[0].members");
        assert_eq!(error.line, BASE_LINES + 2 + 17 * 4 + 3);
        assert!(
            error
                .message
                .contains("17 members do not fit in 16 buckets")
        );

        let text = format!(
            "{BASE}[[vrf]]\nname = \"blue\"\n[[port]]\nname = \"b\"\ndevargs = \"net_null2\"\nvrf = \"blue\"\nipv4 = [\"10.254.0.1/24\"]\n\
             [[nexthop_group]]\nname = \"g\"\nmembers = [{{ port = \"up\", via = \"10.255.0.0\" }}, {{ port = \"b\", via = \"10.254.0.2\" }}]\n"
        );
        let error = error_of(&text);
        assert_eq!(error.field, "nexthop_group[0].members[1].via");
        assert_eq!(error.line, BASE_LINES + 10);
        assert!(
            error
                .message
                .contains("interface 1 (port b) is in VRF blue, but members[0] is in VRF default"),
            "{error}"
        );
    }

    #[test]
    fn the_example_leaf_and_spine_load_and_say_what_they_should() {
        let leaf = Config::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/leaf.toml"
        )))
        .unwrap_or_else(|e| panic!("{e}"));
        let spec = leaf.switch_spec().expect("leaf is in switch mode");
        let names: Vec<&str> = leaf.ports.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["eth1", "eth2", "eth3", "eth49", "eth50"]);
        let rdma = &spec.qos.ports[0];
        assert_eq!(rdma.lossless, 1 << 3);
        assert_eq!(rdma.dscp_to_tc[26], 3);
        assert_eq!(rdma.tcs[6].sched, dataplane::qos::Sched::Strict);
        assert_eq!(
            spec.qos.ports[3].speed,
            dataplane::qos::PortSpeed::Gbps(400)
        );
        assert_eq!(
            spec.ports,
            vec![
                PortRole::Access { vlan: 10 },
                PortRole::Access { vlan: 10 },
                PortRole::Access { vlan: 20 },
                PortRole::Routed { interface: 0 },
                PortRole::Routed { interface: 1 },
            ]
        );
        // Distinct TAP interfaces, and DPDK runs without hugepages.
        let mut ifaces: Vec<&str> = leaf.ports.iter().map(|p| p.devargs.as_str()).collect();
        ifaces.sort_unstable();
        ifaces.dedup();
        assert_eq!(ifaces.len(), 5);
        assert!(leaf.ports.iter().all(|p| p.devargs.starts_with("net_tap")));
        assert!(leaf.eal.contains(&"--no-huge".to_owned()));
        assert_eq!(spec.interfaces.len(), 4);
        assert_eq!(
            spec.interfaces[2],
            InterfaceSpec {
                vrf: 0,
                attachment: Attachment::Vlan(10),
                ipv4: vec![(v4("10.0.10.1"), 24)],
                ipv6: vec![(v6("2001:db8:10::1"), 64)],
            }
        );
        assert_eq!(spec.interfaces[3].ipv4, vec![(v4("10.0.20.1"), 24)]);
        assert_eq!(
            spec.nexthops,
            vec![
                NexthopSpec {
                    interface: 0,
                    ip: ip("10.255.0.0")
                },
                NexthopSpec {
                    interface: 1,
                    ip: ip("10.255.0.2")
                },
            ]
        );
        assert_eq!(
            spec.groups,
            vec![GroupSpec {
                members: vec![(0, 1), (1, 1)],
                balance: Default::default(),
            }]
        );
        let routes: Vec<(IpAddr, u8, RouteTarget)> = spec
            .routes
            .iter()
            .map(|r| (r.prefix, r.len, r.target))
            .collect();
        assert_eq!(
            routes,
            vec![
                (ip("0.0.0.0"), 0, RouteTarget::Group(0)),
                (ip("::"), 0, RouteTarget::Group(0)),
            ]
        );
        Forwarder::new(&spec).expect("the leaf's forwarder builds");

        let spine = Config::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/spine.toml"
        )))
        .unwrap_or_else(|e| panic!("{e}"));
        let spec = spine.switch_spec().expect("spine is in switch mode");
        assert_eq!(
            spec.ports,
            (0..4)
                .map(|i| PortRole::Routed { interface: i })
                .collect::<Vec<_>>()
        );
        assert_eq!(spec.interfaces.len(), 4);
        assert!(spec.groups.is_empty());
        // Three subnets per leaf, each via the leaf's side of its link (leaf k is port k-1).
        assert_eq!(spec.routes.len(), 12);
        for k in 1..=4u16 {
            let leaf_v4 = ip(&format!("10.255.0.{}", 4 * (k - 1) + 1));
            let leaf_v6 = ip(&format!("2001:db8:ff::{:x}", 4 * (k - 1) + 1));
            let expect = [
                (ip(&format!("10.0.{}.0", 20 * k - 10)), 24, leaf_v4),
                (ip(&format!("10.0.{}.0", 20 * k)), 24, leaf_v4),
                (ip(&format!("2001:db8:{}::", 20 * k - 10)), 64, leaf_v6),
            ];
            for (prefix, len, via) in expect {
                let route = spec
                    .routes
                    .iter()
                    .find(|r| r.prefix == prefix && r.len == len)
                    .unwrap_or_else(|| panic!("no route to {prefix}/{len}"));
                let RouteTarget::Nexthop(n) = route.target else {
                    panic!("{prefix}/{len} is not via a nexthop");
                };
                assert_eq!(
                    spec.nexthops[n as usize],
                    NexthopSpec {
                        interface: k - 1,
                        ip: via
                    },
                    "{prefix}/{len}"
                );
            }
        }
        assert_eq!(spec.nexthops.len(), 8);
        Forwarder::new(&spec).expect("the spine's forwarder builds");
    }

    #[test]
    fn the_summary_describes_ports_vlans_interfaces_nexthops_groups_and_routes() {
        let config = parse(FULL).unwrap();
        let expected = [
            "router MAC 02:00:00:00:01:00; MAC aging 60 s, MAC table 1024 entries; neighbours reachable 5 s, then 2 requests 250 ms apart; ECMP 64 buckets per group, flow hash seed 7",
            "vrf 0 default",
            "vrf 1 tenant1",
            "port 0 h1 = net_null0: access, VLAN 10",
            "port 1 tr = net_null1: trunk, VLANs 10, 20, native 10 untagged",
            "port 2 up1 = net_null2: routed, interface 0, VRF default, 10.255.0.1/31 2001:db8:ff::1/127",
            "port 3 up2 = net_null3: routed, interface 1, VRF default, 10.255.0.3/31",
            "port 4 ten = net_null4: routed, interface 2, VRF tenant1, 192.168.0.1/30",
            "port 5 h3 = net_null5: access, VLAN 30",
            "qos: shared buffer 33554432 bytes, ECN seed 1",
            "qos port h1: 100 Gb/s, trust dscp, lossless TCs []",
            "qos port tr: 100 Gb/s, trust dscp, lossless TCs []",
            "qos port up1: 100 Gb/s, trust dscp, lossless TCs []",
            "qos port up2: 100 Gb/s, trust dscp, lossless TCs []",
            "qos port ten: 100 Gb/s, trust dscp, lossless TCs []",
            "qos port h3: 100 Gb/s, trust dscp, lossless TCs []",
            "vlan 10: ports h1 (untagged), tr (untagged); interface 3",
            "vlan 20: ports tr (tagged); no L3 interface",
            "vlan 30: ports h3 (untagged); interface 4",
            "interface 0: port up1, VRF default, 10.255.0.1/31 2001:db8:ff::1/127",
            "interface 1: port up2, VRF default, 10.255.0.3/31",
            "interface 2: port ten, VRF tenant1, 192.168.0.1/30",
            "interface 3: vlan 10, VRF default, 10.0.10.1/24 2001:db8:10::1/64",
            "interface 4: vlan 30, VRF tenant1, 10.0.10.1/24",
            "nexthop 0: 10.255.0.0 on interface 0 (port up1)",
            "nexthop 1: 10.255.0.2 on interface 1 (port up2)",
            "nexthop 2: 2001:db8:ff:: on interface 0 (port up1)",
            "nexthop 3: 192.168.0.2 on interface 2 (port ten)",
            "nexthop 4: 10.0.10.20 on interface 3 (vlan 10)",
            "group 0 uplinks: nexthop 0 (10.255.0.0 on interface 0 (port up1)) weight 2, nexthop 1 (10.255.0.2 on interface 1 (port up2)) weight 1",
            "route vrf default 10.1.0.0/16 -> group 0 (uplinks)",
            "route vrf default 10.2.0.0/16 -> nexthop 0 (10.255.0.0 on interface 0 (port up1))",
            "route vrf default 2001:db8:100::/48 -> nexthop 2 (2001:db8:ff:: on interface 0 (port up1))",
            "route vrf default 10.9.0.0/16 -> blackhole",
            "route vrf tenant1 0.0.0.0/0 -> nexthop 3 (192.168.0.2 on interface 2 (port ten))",
            "route vrf default 10.3.0.0/16 -> nexthop 4 (10.0.10.20 on interface 3 (vlan 10))",
            "neighbor 10.255.0.0 on interface 0 (port up1) is 02:00:00:00:51:01 (static)",
            "neighbor 10.0.10.20 on interface 3 (vlan 10) is 02:00:00:00:00:14 (static)",
            "mac 02:00:00:00:00:0a in vlan 10 on port h1 (static)",
            "mac 02:00:00:00:00:0b in vlan 20 on port tr (static)",
        ];
        assert_eq!(config.summary(), expected);

        let io = parse(GOOD).unwrap();
        assert_eq!(
            io.summary(),
            [
                "port 0 p0 = net_pcap0,rx_pcap=in.pcap,tx_pcap=out.pcap (io peer: p1)",
                "port 1 p1 = 0000:3b:00.1 (io peer: p0)",
            ]
        );
    }

    #[test]
    fn macs_and_prefixes_parse_strictly() {
        assert_eq!(
            parse_mac("02:00:5E:00:01:ff"),
            Ok([0x02, 0x00, 0x5e, 0x00, 0x01, 0xff])
        );
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "2:00:00:00:00:00",
            "020:0:00:00:00:00",
            "02:00:00:00:00:zz",
            "0200.0000.0000",
            "+2:00:00:00:00:00",
        ] {
            assert!(parse_mac(bad).is_err(), "{bad:?} must be rejected");
        }
        assert_eq!(route_prefix("0.0.0.0/0"), Ok((ip("0.0.0.0"), 0)));
        assert_eq!(route_prefix("::/0"), Ok((ip("::"), 0)));
        assert_eq!(route_prefix("10.0.0.0/8"), Ok((ip("10.0.0.0"), 8)));
        assert_eq!(route_prefix("10.1.2.3/32"), Ok((ip("10.1.2.3"), 32)));
        assert!(
            route_prefix("11.0.0.0/7")
                .unwrap_err()
                .contains("host bits set")
        );
        assert!(
            route_prefix("2001:db8::1/64")
                .unwrap_err()
                .contains("host bits set")
        );
        assert!(route_prefix("10.0.0.0/-1").is_err());
        assert!(route_prefix("10.0.0.0/").is_err());
        assert_eq!(
            interface_address("10.255.0.0/31", false),
            Ok((ip("10.255.0.0"), 31))
        );
        assert_eq!(
            interface_address("2001:db8:ff::/127", true),
            Ok((ip("2001:db8:ff::"), 127))
        );
        assert!(interface_address("10.0.0.1/0", false).is_err());
        assert!(interface_address("127.0.0.1/8", false).is_err());
        assert!(overlaps(ip("10.0.0.0"), 8, ip("10.200.0.1"), 24));
        assert!(!overlaps(ip("10.0.0.1"), 31, ip("10.0.0.2"), 31));
        assert!(!overlaps(ip("10.0.0.1"), 8, ip("::a00:1"), 104));
    }

    #[test]
    fn ipv6_addresses_that_carry_an_ipv4_address_are_no_interface_or_neighbour_address() {
        // IPv4-mapped ::ffff:0:0/96 (RFC 4291 2.5.5.2), at both ends and inside.
        for text in [
            "::ffff:0.0.0.0/96",
            "::ffff:10.0.0.1/120",
            "::ffff:255.255.255.255/128",
        ] {
            let error = interface_address(text, true).unwrap_err();
            assert!(
                error.contains("is an IPv4-mapped address"),
                "{text}: {error}"
            );
        }
        assert_eq!(
            interface_address("::ffff:10.0.0.1/120", true).unwrap_err(),
            "::ffff:10.0.0.1 is an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node 10.0.0.1 and is never assigned to an interface (RFC 4291 2.5.5.2); list IPv4 addresses in `ipv4`"
        );
        // IPv4-compatible ::/96 (deprecated, RFC 4291 2.5.5.1), but :: and ::1, which keep
        // their own refusals.
        for text in ["::0.0.0.2/127", "::10.0.0.1/120", "::255.255.255.255/128"] {
            let error = interface_address(text, true).unwrap_err();
            assert!(
                error.contains("is an IPv4-compatible address"),
                "{text}: {error}"
            );
        }
        assert!(
            interface_address("::/64", true)
                .unwrap_err()
                .contains("the unspecified address")
        );
        assert!(
            interface_address("::1/128", true)
                .unwrap_err()
                .contains("the loopback address")
        );
        // Their neighbours in ::/64, outside both /96es, are ordinary addresses.
        for text in ["::1:0:0:1/64", "::fffe:ffff:ffff/128", "::1:ffff:0:1/64"] {
            assert!(interface_address(text, true).is_ok(), "{text}");
        }

        // A neighbour's address is an interface's too: refused even where an interface's
        // subnet (::/64 here) holds it, as it is on an ordinary one.
        for subnet in ["::1:0:0:1/64", "2001:db8::1/64"] {
            let (a, l) = subnet.split_once('/').unwrap();
            let subnets = [(ip(a), l.parse().unwrap())];
            for (neighbour, message) in [
                (
                    "::ffff:10.0.0.2",
                    "::ffff:10.0.0.2 is an IPv4-mapped address (::ffff:0:0/96), which stands for the IPv4 node 10.0.0.2 and is never assigned to an interface (RFC 4291 2.5.5.2), so no neighbour has it; an IPv4 neighbour is given by its IPv4 address",
                ),
                ("::10.0.0.2", "::a00:2 is an IPv4-compatible address"),
            ] {
                let error = on_link(ip(neighbour), &subnets, "p").unwrap_err();
                assert!(error.contains(message), "{neighbour} on {subnet}: {error}");
            }
        }
        let subnets = [(ip("::1:0:0:1"), 64)];
        assert_eq!(on_link(ip("::1:0:0:2"), &subnets, "p"), Ok(()));
    }

    #[test]
    fn text_that_is_not_utf8_is_reported_at_its_line_and_column() {
        let dir = TempDir::new("not-utf8");
        let config = dir.0.join("leaf.toml");
        let head = "[switch]\nrouter_mac = \"02:00:00:00:01:00\"\n";
        let tail = "\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n";
        // (line 3 up to the bad bytes, the bad bytes, its column, field, message part).
        let cases: &[(&str, &[u8], usize, &str, &str)] = &[
            // Latin-1 'é' in a value: the key's field.
            (
                "name = \"caf",
                b"\xe9\"",
                12,
                "switch.name",
                "the text is not UTF-8 from here: byte 0xE9 (file offset 53) begins no valid UTF-8 character; save the file as UTF-8 (Latin-1 text converts with `iconv -f latin1 -t utf-8`)",
            ),
            // In a comment: the table's.
            (
                "# caf",
                b"\xe9 = x",
                6,
                "switch",
                "byte 0xE9 (file offset 47)",
            ),
            // A sequence cut short by the end of the file (a stray continuation byte after
            // a complete one is also refused).
            (
                "name = \"\u{20ac}",
                b"\xe2\x82",
                12,
                "switch.name",
                "the file ends inside a UTF-8 character (byte 0xE2 at file offset 53 starts it)",
            ),
            (
                "name = \"\u{20ac}",
                b"\x82\"",
                12,
                "switch.name",
                "byte 0x82",
            ),
        ];
        for &(before, bad, column, field, message) in cases {
            let mut bytes = format!("{head}{before}").into_bytes();
            bytes.extend_from_slice(bad);
            if !bad.ends_with(b"\xe2\x82") {
                bytes.extend_from_slice(tail.as_bytes());
            }
            std::fs::write(&config, &bytes).unwrap();
            let error = Config::load(&config).unwrap_err();
            assert_eq!(error.file, config, "{before:?}: {error}");
            assert_eq!(
                (error.line, error.column),
                (3, column),
                "{before:?}: {error}"
            );
            assert_eq!(error.field, field, "{before:?}: {error}");
            assert!(error.message.contains(message), "{before:?}: {error}");
            assert!(
                error.to_string().starts_with(&format!(
                    "{}:3:{column}: field `{field}`: the text is not UTF-8",
                    config.display()
                )),
                "{error}"
            );
        }
        // UTF-16 (a byte order mark first) is named; the place is the top of the file.
        std::fs::write(&config, b"\xff\xfe[\x00").unwrap();
        let error = Config::load(&config).unwrap_err();
        assert_eq!((error.line, error.column), (1, 1), "{error}");
        assert_eq!(error.field, "(top level)");
        assert!(error.message.contains("UTF-16"), "{error}");

        // A route file's: at its line, field `route` as for its other whole-line errors.
        let config = dir.write("routes.toml", &format!("route_files = [\"r.txt\"]\n{BASE}"));
        let routes = dir.0.join("r.txt");
        std::fs::write(
            &routes,
            b"10.1.0.0/16 blackhole\n10.2.0.0/16 blackhole # \xe9t\xe9\n",
        )
        .unwrap();
        let error = Config::load(&config).unwrap_err();
        assert_eq!(error.file, routes, "{error}");
        assert_eq!(
            (error.line, error.column, error.field.as_str()),
            (2, 25, "route"),
            "{error}"
        );
        assert!(error.message.contains("byte 0xE9"), "{error}");
    }

    // ---------------------------------------------------------------- route files

    /// A directory of its own under the temp dir, removed when dropped.
    struct TempDir(PathBuf);

    impl TempDir {
        fn new(name: &str) -> TempDir {
            let dir =
                std::env::temp_dir().join(format!("ironclos-config-{}-{name}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            TempDir(dir)
        }

        fn write(&self, name: &str, text: &str) -> PathBuf {
            let path = self.0.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, text).unwrap();
            path
        }
    }

    impl Drop for TempDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// Added to BASE for the route file cases: a VRF, a VLAN without addresses, a group and
    /// a [[route]].
    const ROUTE_FILE_EXTRA: &str = r#"[[vrf]]
name = "blue"
[[vlan]]
id = 20
[[nexthop_group]]
name = "g"
members = [{ port = "up", via = "10.255.0.0" }]
[[route]]
prefix = "10.7.0.0/16"
blackhole = true
"#;

    /// The first lines of every route file case: a comment, a blank line, a good route.
    const ROUTE_FILE_PREAMBLE: &str = "# routes\n\n10.100.0.0/16 group g   # to the spines\n";

    /// (route file text after the preamble, line and column in it, field, message part;
    /// `{dir}` in the message is the temp dir).
    const ROUTE_FILE_ERRORS: &[(&str, usize, usize, &str, &str)] = &[
        // prefixes
        (
            "10.1.0.1/16 blackhole",
            1,
            1,
            "prefix",
            "host bits set: `10.1.0.1/16` is not a network address; write 10.1.0.0/16",
        ),
        ("\t10.1.0.1/16\tblackhole", 1, 2, "prefix", "host bits set"),
        ("2001:db8::1/64 blackhole", 1, 1, "prefix", "host bits set"),
        (
            "10.1.0.0/40 blackhole",
            1,
            1,
            "prefix",
            "out of range 0..=32",
        ),
        (
            "10.1.0.0 blackhole",
            1,
            1,
            "prefix",
            "`10.1.0.0` has no prefix length",
        ),
        (
            "10.1.0.x/16 blackhole",
            1,
            1,
            "prefix",
            "not an IPv4 or IPv6 address",
        ),
        (
            "10.1.0.0/16 blackhole\n10.2.0.0/16 blackhole\n  10.1.0.0/16 group g",
            3,
            3,
            "prefix",
            "10.1.0.0/16 in VRF default is already routed by {dir}/routes.txt:4",
        ),
        (
            "10.1.0.0/16 blackhole vrf blue\n10.1.0.0/16 blackhole\n10.1.0.0/16 vrf blue blackhole",
            3,
            1,
            "prefix",
            "10.1.0.0/16 in VRF blue is already routed by {dir}/routes.txt:4",
        ),
        (
            "10.7.0.0/16 blackhole",
            1,
            1,
            "prefix",
            "10.7.0.0/16 in VRF default is already routed by route[0]",
        ),
        (
            "10.0.10.0/24 blackhole",
            1,
            1,
            "prefix",
            "is the connected subnet of interface 1 (vlan 10) (10.0.10.1/24)",
        ),
        (
            "2001:db8:ff::/127 group g",
            1,
            1,
            "prefix",
            "is the connected subnet of interface 0 (port up)",
        ),
        (
            "10.0.10.1/32 blackhole",
            1,
            1,
            "prefix",
            "10.0.10.1/32 is this switch's own address on interface 1 (vlan 10)",
        ),
        // targets
        (
            "10.1.0.0/16",
            1,
            1,
            "route",
            "route to 10.1.0.0/16 needs one target: group NAME, via ADDRESS with port NAME or vlan ID, or blackhole",
        ),
        (
            "10.1.0.0/16 vrf blue   # no target",
            1,
            1,
            "route",
            "needs one target",
        ),
        (
            "10.1.0.0/16 blackhole group g",
            1,
            13,
            "blackhole",
            "a route has exactly one target; `blackhole` and `group` are both given",
        ),
        (
            "10.1.0.0/16 group nope # spines",
            1,
            19,
            "group",
            "no [[nexthop_group]] is named `nope`",
        ),
        (
            "10.1.0.0/16 group g vrf blue",
            1,
            19,
            "group",
            "group `g` forwards in VRF default (its members' interfaces), but this route is in VRF blue",
        ),
        (
            "10.1.0.0/16 blackhole port up",
            1,
            28,
            "port",
            "`port` names the interface of `via`; this route has no via",
        ),
        // via and its interface
        (
            "10.1.0.0/16 via 10.255.0.0",
            1,
            17,
            "via",
            "needs the interface the neighbour is on: `port NAME` (a routed port) or `vlan ID`",
        ),
        (
            "10.1.0.0/16 via 10.0.10.9 port up",
            1,
            17,
            "via",
            "10.0.10.9 is not in a connected subnet of interface 0 (port up) (10.255.0.1/31, 2001:db8:ff::1/127)",
        ),
        (
            "10.1.0.0/16 via 10.255.0.1 port up",
            1,
            17,
            "via",
            "10.255.0.1 is this switch's own address on interface 0 (port up)",
        ),
        (
            "10.1.0.0/16 via 10.255.0.0/31 port up",
            1,
            17,
            "via",
            "`10.255.0.0/31` is not an IPv4 or IPv6 address",
        ),
        (
            "10.1.0.0/16 via 10.255.0.0 port up vrf blue",
            1,
            17,
            "via",
            "interface 0 (port up) is in VRF default, but this route is in VRF blue",
        ),
        (
            "10.1.0.0/16 via 10.255.0.0 port nope",
            1,
            33,
            "port",
            "no [[port]] is named `nope`",
        ),
        (
            "10.1.0.0/16 via 10.0.10.2 port h1",
            1,
            32,
            "port",
            "port `h1` is not a routed port (it is an access port of VLAN 10)",
        ),
        (
            "10.1.0.0/16 via 10.0.30.2 vlan 30",
            1,
            32,
            "vlan",
            "VLAN 30 is not declared; add a [[vlan]] with id = 30",
        ),
        (
            "10.1.0.0/16 via 10.0.20.2 vlan 20",
            1,
            32,
            "vlan",
            "VLAN 20 has no L3 interface",
        ),
        (
            "10.1.0.0/16 via 10.0.10.2 vlan 4095",
            1,
            32,
            "vlan",
            "VLAN 4095 is out of range 1..=4094",
        ),
        (
            "10.1.0.0/16 via 10.0.10.2 vlan ten",
            1,
            32,
            "vlan",
            "`ten` is not a VLAN id",
        ),
        (
            "10.1.0.0/16 via 10.255.0.0 port up vlan 10",
            1,
            41,
            "vlan",
            "not both",
        ),
        (
            "10.1.0.0/16 blackhole vrf red",
            1,
            27,
            "vrf",
            "VRF `red` is not declared",
        ),
        // the form of a line
        (
            "10.1.0.0/16 nexthop 10.255.0.0",
            1,
            13,
            "route",
            "unexpected `nexthop`: a route line is PREFIX/LEN followed by",
        ),
        (
            "10.1.0.0/16 group",
            1,
            13,
            "group",
            "`group` needs a value: group NAME",
        ),
        (
            "10.1.0.0/16 blackhole vrf blue vrf blue",
            1,
            32,
            "vrf",
            "`vrf` is given twice",
        ),
        (
            "10.1.0.0/16 blackhole blackhole",
            1,
            23,
            "blackhole",
            "`blackhole` is given twice",
        ),
    ];

    #[test]
    fn route_file_errors_name_the_route_file_line_column_and_field() {
        let dir = TempDir::new("route-file-errors");
        let config = dir.write(
            "leaf.toml",
            &format!("route_files = [\"routes.txt\"]\n{BASE}{ROUTE_FILE_EXTRA}"),
        );
        // The preamble alone is fine.
        dir.write("routes.txt", ROUTE_FILE_PREAMBLE);
        let spec = Config::load(&config)
            .unwrap_or_else(|e| panic!("{e}"))
            .switch_spec()
            .unwrap();
        assert_eq!(spec.routes.len(), 2);

        let routes = dir.0.join("routes.txt");
        for (text, line, column, field, message) in ROUTE_FILE_ERRORS {
            dir.write("routes.txt", &format!("{ROUTE_FILE_PREAMBLE}{text}\n"));
            let error = Config::load(&config).expect_err(text);
            let line = ROUTE_FILE_PREAMBLE.lines().count() + line;
            assert_eq!(error.file, routes, "file for {text:?}: {error}");
            assert_eq!(
                (error.line, error.column),
                (line, *column),
                "line, column for {text:?}: {error}"
            );
            assert_eq!(error.field, *field, "field for {text:?}: {error}");
            let message = message.replace("{dir}", &dir.0.display().to_string());
            assert!(
                error.message.contains(&message),
                "message for {text:?}: {error}"
            );
            let shown = error.to_string();
            let head = format!("{}:{line}:{column}: field `{field}`: ", routes.display());
            assert!(shown.starts_with(&head), "{shown}");
        }
    }

    #[test]
    fn an_unreadable_route_file_is_reported_at_its_route_files_entry() {
        let dir = TempDir::new("route-file-missing");
        dir.write("a.txt", "10.1.0.0/16 blackhole\n");
        dir.write("sub/b.txt", "10.2.0.0/16 blackhole\n");
        let config = dir.write(
            "leaf.toml",
            &format!(
                "# a leaf\nroute_files = [\n    \"a.txt\",\n    \"sub/b.txt\",\n    \"missing.txt\",\n]\n{BASE}"
            ),
        );
        let error = Config::load(&config).unwrap_err();
        assert_eq!(error.file, config);
        assert_eq!((error.line, error.column), (5, 5), "{error}");
        assert_eq!(error.field, "route_files[2]");
        let missing = dir.0.join("missing.txt");
        assert!(
            error
                .message
                .starts_with(&format!("cannot read route file {}: ", missing.display())),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains("leaf.toml:5:5: field `route_files[2]`")
        );

        // A directory cannot be read as a route file, and an empty entry names nothing.
        for (entry, message) in [("sub", "cannot read route file"), ("  ", "is empty")] {
            std::fs::write(
                &config,
                format!("route_files = [\"a.txt\", \"{entry}\"]\n{BASE}"),
            )
            .unwrap();
            let error = Config::load(&config).unwrap_err();
            assert_eq!((error.line, error.field.as_str()), (1, "route_files[1]"));
            assert!(error.message.contains(message), "{error}");
        }
    }

    #[test]
    fn route_files_is_a_top_level_switch_mode_key() {
        let error = error_of(
            "route_files = [\"routes.txt\"]\n[dataplane]\nmode = \"io\"\n[[port]]\nname = \"a\"\ndevargs = \"net_null0\"\n",
        );
        assert_eq!((error.line, error.field.as_str()), (1, "route_files"));
        assert!(
            error.message.contains("only in mode = \"switch\""),
            "{error}"
        );

        // Below a [table] header, TOML puts the key in that table.
        let error = error_of(&format!("{BASE}route_files = [\"routes.txt\"]\n"));
        assert_eq!(error.line, BASE_LINES + 1);
        assert_eq!(error.field, "vlan[0].route_files");
        assert!(
            error.message.contains(
                "`route_files` is a top-level key: put it above the first [table] header"
            ),
            "{error}"
        );
    }

    #[test]
    fn route_files_and_route_tables_make_one_route_list_with_shared_nexthops() {
        let dir = TempDir::new("route-file-mixed");
        let config = dir.write(
            "leaf.toml",
            &format!(
                "route_files = [\"routes.txt\", \"more/v6.txt\", \"empty.txt\"]   # relative to this file\n{BASE}\
                 [[vrf]]\nname = \"blue\"\n\
                 [[port]]\nname = \"b\"\ndevargs = \"net_null2\"\nvrf = \"blue\"\nipv4 = [\"10.254.0.1/24\"]\n\
                 [[nexthop_group]]\nname = \"g\"\nmembers = [{{ port = \"up\", via = \"10.255.0.0\" }}, {{ vlan = 10, via = \"10.0.10.9\", weight = 3 }}]\n\
                 [[route]]\nprefix = \"10.1.0.0/16\"\nvia = \"10.0.10.20\"\nvlan = 10\n"
            ),
        );
        dir.write(
            "routes.txt",
            "# leaf routes\n\
             10.2.0.0/24 group g\n\
             \x20 10.2.1.0/24\t\tgroup   g    # a comment after a route\n\
             \n\
             10.3.0.0/16 via 10.255.0.0 port up\n\
             10.4.0.0/16 via 10.0.10.20 vlan 10\r\n\
             10.5.0.0/16 via 10.0.10.30 vlan 10\n\
             10.6.0.0/16 via 10.0.10.30 vlan 10 vrf default\n\
             10.9.0.0/16 blackhole\n\
             10.2.0.0/24 via 10.254.0.2 port b vrf blue\n\
             0.0.0.0/0 vrf blue blackhole\n\
             #10.10.0.0/16 blackhole\n\
             10.11.0.0/16 blackhole",
        );
        dir.write(
            "more/v6.txt",
            "2001:db8:100::/48 group g\n\n2001:db8:200::/48 via 2001:db8:ff:: port up\n",
        );
        dir.write("empty.txt", "# nothing yet\n\n   \n#\n");
        let config = Config::load(&config).unwrap_or_else(|e| panic!("{e}"));
        let spec = config.switch_spec().unwrap();
        // Routed ports first (up, b), then the SVI of VLAN 10.
        let nexthop = |interface: u16, at: &str| NexthopSpec {
            interface,
            ip: ip(at),
        };
        assert_eq!(
            spec.nexthops,
            vec![
                nexthop(0, "10.255.0.0"),    // the group's
                nexthop(2, "10.0.10.9"),     // the group's
                nexthop(2, "10.0.10.20"),    // [[route]]
                nexthop(2, "10.0.10.30"),    // routes.txt
                nexthop(1, "10.254.0.2"),    // routes.txt, VRF blue
                nexthop(0, "2001:db8:ff::"), // more/v6.txt
            ]
        );
        assert_eq!(spec.groups[0].members, vec![(0, 1), (1, 3)]);
        let route = |vrf: u16, prefix: &str, len: u8, target: RouteTarget| RouteSpec {
            vrf,
            prefix: ip(prefix),
            len,
            target,
        };
        use RouteTarget::{Blackhole, Group, Nexthop};
        assert_eq!(
            spec.routes,
            vec![
                route(0, "10.1.0.0", 16, Nexthop(2)),
                route(0, "10.2.0.0", 24, Group(0)),
                route(0, "10.2.1.0", 24, Group(0)),
                route(0, "10.3.0.0", 16, Nexthop(0)),
                route(0, "10.4.0.0", 16, Nexthop(2)),
                route(0, "10.5.0.0", 16, Nexthop(3)),
                route(0, "10.6.0.0", 16, Nexthop(3)),
                route(0, "10.9.0.0", 16, Blackhole),
                route(1, "10.2.0.0", 24, Nexthop(4)),
                route(1, "0.0.0.0", 0, Blackhole),
                route(0, "10.11.0.0", 16, Blackhole),
                route(0, "2001:db8:100::", 48, Group(0)),
                route(0, "2001:db8:200::", 48, Nexthop(5)),
            ]
        );
        assert!(
            config.summary().contains(
                &"route vrf blue 10.2.0.0/24 -> nexthop 4 (10.254.0.2 on interface 1 (port b))"
                    .to_owned()
            )
        );
        Forwarder::new(&spec).expect("the forwarder builds from the spec");
    }

    /// Writes `count` routes to `routes.txt` in `dir`: /24s from 20.0.0.0 to group `g`, and
    /// every 1000th via a neighbour instead. Returns the config that reads them.
    fn bulk_route_config(dir: &TempDir, count: u32) -> PathBuf {
        let mut text = String::with_capacity(count as usize * 24);
        text.push_str("# generated\n");
        for i in 0..count {
            let prefix = Ipv4Addr::from((20u32 << 24) + (i << 8));
            if i % 1000 == 999 {
                text.push_str(&format!("{prefix}/24 via 10.255.0.0 port up\n"));
            } else {
                text.push_str(&format!("{prefix}/24 group g\n"));
            }
        }
        dir.write("routes.txt", &text);
        dir.write(
            "leaf.toml",
            &format!(
                "route_files = [\"routes.txt\"]\n{BASE}[[nexthop_group]]\nname = \"g\"\nmembers = [{{ port = \"up\", via = \"10.255.0.0\" }}]\n"
            ),
        )
    }

    fn load_bulk_routes(name: &str, count: u32) -> Duration {
        let dir = TempDir::new(name);
        let config = bulk_route_config(&dir, count);
        let start = std::time::Instant::now();
        let loaded = Config::load(&config).unwrap_or_else(|e| panic!("{e}"));
        let elapsed = start.elapsed();
        let spec = loaded.switch_spec().unwrap();
        assert_eq!(spec.routes.len(), count as usize);
        assert_eq!(spec.nexthops.len(), 1);
        assert_eq!(spec.routes[0].target, RouteTarget::Group(0));
        assert_eq!(spec.routes[999].target, RouteTarget::Nexthop(0));
        let last = spec.routes.last().unwrap();
        assert_eq!(
            (last.prefix, last.len),
            (
                IpAddr::V4(Ipv4Addr::from((20u32 << 24) + ((count - 1) << 8))),
                24
            )
        );
        eprintln!("{count} routes from a route file: parsed and checked in {elapsed:?}");
        elapsed
    }

    #[test]
    fn two_hundred_thousand_routes_load_from_a_route_file() {
        load_bulk_routes("route-file-200k", 200_000);
    }

    /// The scale the benchmark needs; run in release:
    /// `cargo test --release -p control --lib million -- --ignored --nocapture`.
    #[test]
    #[ignore = "a measurement: run in release"]
    fn a_million_routes_load_from_a_route_file() {
        let elapsed = load_bulk_routes("route-file-1m", 1_000_000);
        assert!(elapsed < Duration::from_secs(3), "{elapsed:?}");
    }

    // ---- SRv6 ----

    #[test]
    fn srv6_sids_and_policies_build_the_spec() {
        let text = format!(
            "{BASE}{}",
            r#"[[vrf]]
name = "tenant"
[[route]]
prefix = "fcbb:bb00:200::/48"
via = "2001:db8:ff::"
port = "up"
[[srv6.sid]]
prefix = "fcbb:bb00:100::/48"
behavior = "uN"
[[srv6.sid]]
prefix = "fcbb:bb00:100:e001::/64"
behavior = "uA"
block_bits = 32
usid_bits = 32
flavors = ["psp", "USP"]
via = "2001:db8:ff::"
port = "up"
[[srv6.sid]]
prefix = "fcbb:bb00:100:d46::/64"
behavior = "uDT46"
lookup_vrf = "tenant"
[[srv6.sid]]
vrf = "tenant"
prefix = "2001:db8:5::1/128"
behavior = "End"
[[srv6.policy]]
vrf = "tenant"
prefix = "10.20.0.0/16"
mode = "encaps.red"
segments = ["fcbb:bb00:200:300::", "fcbb:bb00:300:d46::"]
[[srv6.policy]]
name = "p6"
prefix = "2001:db8:20::/48"
mode = "encaps"
segments = ["fcbb:bb00:200::"]
source = "2001:db8:ff::1"
hop_limit = 200
"#
        );
        let spec = spec_of(&text);
        let ip6 = |s: &str| s.parse::<Ipv6Addr>().unwrap();
        let f3216 = Some(CsidFormat {
            block_bits: 32,
            shift_bits: 16,
        });
        let sids = &spec.srv6.sids;
        assert_eq!(sids.len(), 4);
        assert_eq!(
            (sids[0].behavior, sids[0].next_csid, sids[0].len),
            (SidBehavior::End, f3216, 48),
            "uN defaults to a 32-bit block and 16-bit uSIDs"
        );
        let nexthop = spec
            .nexthops
            .iter()
            .position(|n| n.ip == IpAddr::V6(ip6("2001:db8:ff::")))
            .unwrap() as u32;
        assert_eq!(
            sids[1].behavior,
            SidBehavior::EndX {
                target: RouteTarget::Nexthop(nexthop)
            }
        );
        assert_eq!(
            (sids[1].next_csid, sids[1].psp, sids[1].usp),
            (
                Some(CsidFormat {
                    block_bits: 32,
                    shift_bits: 32
                }),
                true,
                true
            )
        );
        assert_eq!(sids[2].behavior, SidBehavior::EndDt46 { vrf: 1 });
        assert_eq!(sids[2].next_csid, None);
        assert_eq!(
            (sids[3].vrf, sids[3].name.as_str()),
            (1, "2001:db8:5::1/128")
        );
        let policies = &spec.srv6.policies;
        assert_eq!(policies[0].mode, EncapMode::EncapsRed);
        assert_eq!(policies[0].name, "10.20.0.0/16");
        assert_eq!(
            policies[0].source,
            ip6("2001:db8:ff::1"),
            "defaults to the default VRF's first global address"
        );
        assert_eq!((policies[0].hop_limit, policies[1].hop_limit), (64, 200));
        assert!(spec.routes.contains(&RouteSpec {
            vrf: 1,
            prefix: "10.20.0.0".parse().unwrap(),
            len: 16,
            target: RouteTarget::Srv6Policy(0),
        }));
        assert!(spec.routes.contains(&RouteSpec {
            vrf: 0,
            prefix: "2001:db8:20::".parse().unwrap(),
            len: 48,
            target: RouteTarget::Srv6Policy(1),
        }));
        dataplane::pipeline::Forwarder::new(&spec).expect("the dataplane takes it");
    }

    /// `n` distinct quoted SIDs for a `segments` list.
    fn many(n: usize) -> String {
        (1..=n)
            .map(|i| format!("\"fc00::{i:x}\""))
            .collect::<Vec<_>>()
            .join(", ")
    }

    #[test]
    fn srv6_policies_take_as_many_segments_as_an_srh_lists() {
        // No headroom limit any more: 127 SIDs in the SRH, with either mode.
        for (mode, count) in [("encaps", 7), ("encaps", 127), ("encaps.red", 128)] {
            let text = format!(
                "{BASE}[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\nmode = \"{mode}\"\nsegments = [{}]\n",
                many(count)
            );
            let spec = spec_of(&text);
            assert_eq!(spec.srv6.policies[0].segments.len(), count);
            dataplane::pipeline::Forwarder::new(&spec)
                .unwrap_or_else(|e| panic!("{mode} {count}: {e}"));
        }
    }

    #[test]
    fn srv6_errors_name_line_and_field() {
        let sid = "[[srv6.sid]]\nprefix = \"fcbb:bb00:100::/48\"\n";
        let policy = "[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\n";
        let encaps = "mode = \"encaps\"\nsegments = [\"fc::1\"]\n";
        let cases: Vec<(String, &str, usize, &str)> = vec![
            (
                format!("{sid}behavior = \"End.Y\"\n"),
                "srv6.sid[0].behavior",
                3,
                "not a behaviour",
            ),
            (
                format!("{sid}behavior = \"End\"\nshift_bits = 16\n"),
                "srv6.sid[0].shift_bits",
                4,
                "does not apply",
            ),
            (
                format!("{sid}behavior = \"uN\"\nblock_bits = 64\nshift_bits = 64\n"),
                "srv6.sid[0].shift_bits",
                5,
                "below 128",
            ),
            (
                "[[srv6.sid]]\nprefix = \"fcbb:bb00:100:1::/64\"\nbehavior = \"uN\"\n".to_owned(),
                "srv6.sid[0].prefix",
                2,
                "longer than block + shift",
            ),
            (
                format!("{sid}behavior = \"End.X\"\n"),
                "srv6.sid[0].behavior",
                3,
                "adjacency",
            ),
            (
                format!("{sid}behavior = \"End.X\"\nvia = \"10.0.10.0\"\nvlan = 10\n"),
                "srv6.sid[0].via",
                4,
                "10.0.10.0 is the subnet's network address",
            ),
            (
                format!("{sid}behavior = \"uA\"\ngroup = \"nope\"\n"),
                "srv6.sid[0].group",
                4,
                "no [[nexthop_group]]",
            ),
            (
                format!("{sid}behavior = \"End\"\nflavors = [\"usd\"]\n"),
                "srv6.sid[0].flavors",
                4,
                "not a flavour",
            ),
            (
                format!("{sid}behavior = \"End\"\nflavors = [\"psp\", \"usp\", \"PSP\"]\n"),
                "srv6.sid[0].flavors",
                4,
                "flavour `psp` is listed twice",
            ),
            (
                format!("{sid}behavior = \"End.DT4\"\nflavors = [\"psp\"]\n"),
                "srv6.sid[0].flavors",
                4,
                "does not apply",
            ),
            (
                format!("{sid}behavior = \"End.DT6\"\nlookup_vrf = \"red\"\n"),
                "srv6.sid[0].lookup_vrf",
                4,
                "not declared",
            ),
            (
                "[[srv6.sid]]\nprefix = \"10.0.0.0/8\"\nbehavior = \"End\"\n".to_owned(),
                "srv6.sid[0].prefix",
                2,
                "IPv6",
            ),
            (
                format!("{sid}behavior = \"End\"\n{sid}behavior = \"uN\"\n"),
                "srv6.sid[1].prefix",
                5,
                "already srv6.sid[0]",
            ),
            (
                format!("{policy}mode = \"insert\"\nsegments = [\"fcbb::1\"]\n"),
                "srv6.policy[0].mode",
                3,
                "not a mode",
            ),
            (
                format!("{policy}mode = \"encaps\"\nsegments = [\"fcbb::1\", \"ff02::1\"]\n"),
                "srv6.policy[0].segments",
                4,
                "not a unicast IPv6",
            ),
            (
                format!("{policy}mode = \"encaps\"\nsegments = []\n"),
                "srv6.policy[0].segments",
                4,
                "give 1 to 127",
            ),
            (
                // One more than an SRH can list (Hdr Ext Len 2 * 128 > 255).
                format!("{policy}mode = \"encaps\"\nsegments = [{}]\n", many(128)),
                "srv6.policy[0].segments",
                4,
                "128 segments: give 1 to 127 (an SRH lists at most 127",
            ),
            (
                // H.Encaps.Red leaves S1 out of the SRH: 128 fit, 129 do not.
                format!(
                    "{policy}mode = \"encaps.red\"\nsegments = [{}]\n",
                    many(129)
                ),
                "srv6.policy[0].segments",
                4,
                "129 segments: give 1 to 128",
            ),
            (
                format!("{policy}mode = \"encaps\"\nsegments = [\"fc::1\"]\nhop_limit = 0\n"),
                "srv6.policy[0].hop_limit",
                5,
                "out of range",
            ),
            (
                format!(
                    "[[route]]\nprefix = \"10.20.0.0/16\"\nblackhole = true\n{policy}mode = \"encaps\"\nsegments = [\"fc::1\"]\n"
                ),
                "srv6.policy[0].prefix",
                5,
                "already routed by route[0]",
            ),
            (
                format!(
                    "[[srv6.policy]]\nname = \"a\"\nprefix = \"10.20.0.0/16\"\n{encaps}[[srv6.policy]]\nname = \"a\"\nprefix = \"10.21.0.0/16\"\n{encaps}"
                ),
                "srv6.policy[1].name",
                7,
                "policy name `a` is used twice (also srv6.policy[0])",
            ),
            (
                // An explicit name equal to another policy's default name, its prefix.
                format!(
                    "{policy}{encaps}[[srv6.policy]]\nname = \"10.20.0.0/16\"\nprefix = \"10.21.0.0/16\"\n{encaps}"
                ),
                "srv6.policy[1].name",
                6,
                "policy name `10.20.0.0/16` is used twice (also srv6.policy[0], which has no `name` and is named by its prefix)",
            ),
            (
                // A default name equal to another policy's explicit name.
                format!(
                    "[[srv6.policy]]\nname = \"10.21.0.0/16\"\nprefix = \"10.20.0.0/16\"\n{encaps}[[srv6.policy]]\nprefix = \"10.21.0.0/16\"\n{encaps}"
                ),
                "srv6.policy[1].name",
                7,
                "named by its prefix, but `10.21.0.0/16` is already the name of srv6.policy[0]; add a unique `name`",
            ),
            (
                // One prefix in two VRFs is two routes, but both would be named by it.
                format!(
                    "[[vrf]]\nname = \"red\"\n{policy}{encaps}[[srv6.policy]]\nvrf = \"red\"\nprefix = \"10.20.0.0/16\"\n{encaps}"
                ),
                "srv6.policy[1].name",
                9,
                "`10.20.0.0/16` is already the name of srv6.policy[0], which has no `name`",
            ),
        ];
        for (extra, field, line, message) in &cases {
            let text = format!("{BASE}{extra}");
            let error = error_of(&text);
            assert_eq!(error.line, BASE_LINES + line, "line for {extra:?}: {error}");
            assert_eq!(error.field, *field, "field for {extra:?}: {error}");
            assert!(
                error.message.contains(message),
                "message for {extra:?}: {error}"
            );
        }
    }

    #[test]
    fn a_sid_prefix_stays_clear_of_connected_subnets_and_own_addresses() {
        // The my-SID table is looked up before the FIB: a SID over a connected subnet would
        // take the traffic of its hosts. BASE: port `up` has 2001:db8:ff::1/127 in VRF default.
        let svi = "[[vlan]]\nid = 20\nipv6 = [\"2001:db8:2::1/64\"]\n[[port]]\nname = \"h2\"\ndevargs = \"net_null2\"\nvlan = { mode = \"access\", id = 20 }\n";
        let sid = |prefix: &str, behavior: &str| {
            format!("[[srv6.sid]]\nprefix = \"{prefix}\"\nbehavior = \"{behavior}\"\n")
        };
        for (extra, line, message) in [
            (
                sid("2001:db8:ff::/64", "End"),
                2,
                "2001:db8:ff::/64 covers the connected subnet 2001:db8:ff::/127 of interface 0 (port up) (2001:db8:ff::1/127): the my-SID table is looked up before the FIB",
            ),
            (
                sid("2001:db8:ff::/127", "End"),
                2,
                "2001:db8:ff::/127 is the connected subnet of interface 0 (port up) (2001:db8:ff::1/127)",
            ),
            (
                sid("2001:db8:ff::1/128", "End.DT4"),
                2,
                "2001:db8:ff::1/128 is this switch's own address on interface 0 (port up)",
            ),
            (
                sid("2001:db8:ff::/128", "End"),
                2,
                "2001:db8:ff::/128 is inside the connected subnet 2001:db8:ff::/127 of interface 0 (port up)",
            ),
            (sid("::/0", "End"), 2, "::/0 covers the connected subnet"),
            (
                format!("{svi}{}", sid("2001:db8:2::/64", "End")),
                9,
                "2001:db8:2::/64 is the connected subnet of interface 2 (vlan 20) (2001:db8:2::1/64)",
            ),
            (
                format!("{svi}{}", sid("2001:db8:2::/96", "End")),
                9,
                "2001:db8:2::/96 is inside the connected subnet 2001:db8:2::/64 of interface 2 (vlan 20) (2001:db8:2::1/64) and holds this switch's own address 2001:db8:2::1",
            ),
            (
                format!("{svi}{}", sid("2001:db8:2:0:1::/80", "End")),
                9,
                "2001:db8:2:0:1::/80 is inside the connected subnet 2001:db8:2::/64 of interface 2 (vlan 20)",
            ),
        ] {
            let text = format!("{BASE}{extra}");
            let error = error_of(&text);
            assert_eq!(error.line, BASE_LINES + line, "line for {extra:?}: {error}");
            assert_eq!(error.field, "srv6.sid[0].prefix", "{extra:?}: {error}");
            assert!(
                error.message.contains(message),
                "message for {extra:?}: {error}"
            );
        }
        // Next to a subnet, or in another VRF than the interface, a SID is fine.
        for extra in [
            sid("2001:db8:fe::/64", "End"),
            sid("2001:db8:ff::2/127", "End"),
            sid("fcbb:bb00:100::/48", "uN"),
            format!(
                "[[vrf]]\nname = \"red\"\n{}vrf = \"red\"\n",
                sid("2001:db8:ff::/64", "End")
            ),
        ] {
            spec_of(&format!("{BASE}{extra}"));
        }
    }

    #[test]
    fn srv6_policies_with_distinct_names_may_share_a_prefix_across_vrfs() {
        let text = format!(
            "{BASE}[[vrf]]\nname = \"red\"\n[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\nmode = \"encaps\"\nsegments = [\"fc::1\"]\n[[srv6.policy]]\nname = \"red-10.20\"\nvrf = \"red\"\nprefix = \"10.20.0.0/16\"\nmode = \"encaps\"\nsegments = [\"fc::2\"]\n"
        );
        let spec = spec_of(&text);
        let names: Vec<&str> = spec.srv6.policies.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["10.20.0.0/16", "red-10.20"]);
    }

    #[test]
    fn a_neighbour_is_a_host_of_a_connected_subnet() {
        let subnets: Vec<(IpAddr, u8)> = [
            "10.0.3.1/24",
            "10.0.6.1/30",
            "10.255.0.1/31",
            "10.9.9.9/32",
            "2001:db8:3::1/64",
        ]
        .iter()
        .map(|s| {
            let (a, l) = s.split_once('/').unwrap();
            (a.parse().unwrap(), l.parse().unwrap())
        })
        .collect();
        let check = |ip: &str| on_link(ip.parse().unwrap(), &subnets, "p3");
        for (ip, message) in [
            (
                "10.0.3.255",
                "10.0.3.255 is the subnet's broadcast address (host part all ones) on p3 (10.0.3.1/24)",
            ),
            (
                "10.0.3.0",
                "10.0.3.0 is the subnet's network address (host part all zero) on p3 (10.0.3.1/24)",
            ),
            ("10.0.6.3", "broadcast address"),
            ("10.0.6.0", "network address"),
            ("10.0.3.1", "10.0.3.1 is this switch's own address on p3"),
            ("10.9.9.9", "own address"),
            ("10.0.4.2", "10.0.4.2 is not in a connected subnet of p3"),
        ] {
            let error = check(ip).unwrap_err();
            assert!(error.contains(message), "{ip}: {error}");
        }
        // Hosts; both addresses of a /31 (RFC 3021); IPv6 has no broadcast address.
        for ip in [
            "10.0.3.2",
            "10.0.3.254",
            "10.0.6.2",
            "10.255.0.0",
            "2001:db8:3::",
            "2001:db8:3::ffff:ffff:ffff:ffff",
        ] {
            assert_eq!(check(ip), Ok(()), "{ip}");
        }
    }

    #[test]
    fn an_srv6_policy_without_mode_encapsulates_with_h_encaps() {
        // As `policy add` does: every [[srv6.policy]] key but prefix and segments has a default.
        let text =
            format!("{BASE}[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\nsegments = [\"fc::1\"]\n");
        let spec = spec_of(&text);
        assert_eq!(spec.srv6.policies[0].mode, EncapMode::Encaps);
        dataplane::pipeline::Forwarder::new(&spec).expect("the dataplane takes it");
    }

    #[test]
    fn srv6_policy_without_source_needs_a_global_address() {
        let text = "[switch]\nname = \"t\"\nrouter_mac = \"02:00:00:00:01:00\"\n[dataplane]\nmode = \"switch\"\n[[port]]\nname = \"up\"\ndevargs = \"net_null0\"\nipv4 = [\"10.255.0.1/31\"]\n[[srv6.policy]]\nprefix = \"10.20.0.0/16\"\nmode = \"encaps\"\nsegments = [\"fc::1\"]\n";
        let error = error_of(text);
        assert_eq!(
            (error.line, error.field.as_str()),
            (10, "srv6.policy[0].source")
        );
    }

    #[test]
    fn the_srv6_example_loads_and_builds() {
        let config = Config::load(Path::new(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../examples/srv6.toml"
        )))
        .unwrap_or_else(|e| panic!("{e}"));
        let spec = config.switch_spec().expect("switch mode");
        assert_eq!(spec.srv6.sids.len(), 5);
        assert_eq!(spec.srv6.policies.len(), 2);
        assert_eq!(
            spec.srv6.sids[2].next_csid,
            Some(CsidFormat {
                block_bits: 32,
                shift_bits: 32
            })
        );
        dataplane::pipeline::Forwarder::new(&spec).expect("the forwarder builds");
    }
}
