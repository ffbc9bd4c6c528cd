//! `ironclos`: run the switch, check a config, generate traces, run the built-in demo.

use clap::{Parser, Subcommand};
use control::config::{Config, RunOptions};
use control::server::ControlServer;
use control::{pcap, report, tracegen};
use dataplane::dpdk::MtuOutcome;
use dataplane::engine::{self, EngineEvent, EngineHooks, ForwardingMode, PortInfo, StopCause};
use serde_json::{Map, Value, json};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// `print!` without its panic when stdout's reader went away (`ironclos ctl show routes |
/// head`): what the reader did not want is dropped.
macro_rules! out {
    ($($arg:tt)*) => {{
        let _ = write!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// `println!` likewise.
macro_rules! outln {
    ($($arg:tt)*) => {{
        let _ = writeln!(std::io::stdout().lock(), $($arg)*);
    }};
}

/// Exit status for a bad command line or config (clap uses 2 too).
const EXIT_CONFIG: u8 = 2;
/// Exit status when DPDK or a port fails.
const EXIT_RUNTIME: u8 = 1;
/// Exit status when a replay lost packets to mbuf exhaustion (the run is not faithful).
const EXIT_REPLAY_INCOMPLETE: u8 = 3;

#[derive(Parser)]
#[command(
    name = "ironclos",
    version,
    about = "A software leaf/spine switch for lossless AI training fabrics, on DPDK",
    long_about = "ironclos forwards Ethernet traffic between DPDK ports (real NICs, or vdevs such as \
net_pcap, net_tap, net_af_packet, net_null) in poll mode.\n\n\
Exit status: 0 success; 1 DPDK or a port failed (the message names the port); 2 bad command \
line or config (the message names the file, line and field); 3 a replay is incomplete: packets \
were lost because the mbuf pool ran dry (rx_nombuf > 0), or every free mbuf was held in egress \
queues waiting for later arrivals (replay_stalled); raise dataplane.mbufs. `ctl` and `reload`: \
0 done; 1 the switch refused or cannot be reached; 2 bad command line."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the switch. EAL options come from the config; extra ones may follow `--`.
    Run {
        /// The TOML config file (see README.md for every field).
        #[arg(long, short)]
        config: PathBuf,
        /// Replay: stop once every input port is exhausted (end of its pcap file). Exits 0, or
        /// 3 if the replay is incomplete (packets lost to rx_nombuf, or replay_stalled: raise
        /// dataplane.mbufs), or 2 if the switch refused a --schedule event.
        #[arg(long)]
        exit_when_idle: bool,
        /// Stop after this many seconds (fractions allowed), e.g. for benchmarks.
        #[arg(long, value_parser = parse_seconds)]
        duration: Option<Duration>,
        /// Write the final counters as JSON to this file (created before the switch starts:
        /// one that cannot be created exits 2).
        #[arg(long)]
        stats_json: Option<PathBuf>,
        /// Replays in switch mode only (with --exit-when-idle): a TOML file of [[event]]s
        /// applied at trace times, each with `at_us` (trace time in microseconds) and exactly
        /// one action: `port` with `link = "down"` or `"up"`; `updates = [...]`, a batch of
        /// the control API's updates applied all or nothing; or `config = "FILE"`, the
        /// difference to another config file applied as `ironclos reload` would (relative to
        /// the schedule file). An event the switch refuses ends the run with status 2. See
        /// README, "Commands".
        #[arg(long)]
        schedule: Option<PathBuf>,
        /// Switch mode: write the event log here as JSON lines, in the run's time (virtual
        /// time in a replay) in picoseconds: queue watermark crossings
        /// (watermark_up/watermark_down), ECN marking start/stop per port and TC
        /// (ecn_marking_start/ecn_marking_stop), PFC events (pfc_xoff_sent, pfc_xon_sent,
        /// pfc_received, pfc_watchdog_storm, pfc_watchdog_restored) and flowlet moves of ECMP
        /// groups (flowlet_move), merged in time order. Created before the switch starts: one
        /// that cannot be created exits 2.
        #[arg(long)]
        events: Option<PathBuf>,
        /// Extra EAL arguments, after `--`.
        #[arg(last = true)]
        eal: Vec<String>,
    },
    /// Validate a config file without starting DPDK; print what a run would use.
    CheckConfig {
        /// The TOML config file.
        #[arg(
            value_name = "CONFIG",
            required_unless_present = "config",
            conflicts_with = "config"
        )]
        file: Option<PathBuf>,
        /// The same file named as `run` names it (`--config FILE`).
        #[arg(long, short, value_name = "CONFIG")]
        config: Option<PathBuf>,
    },
    /// Write a synthetic IPv4/UDP trace (valid headers and checksums) as a pcap file.
    GenTrace {
        /// Output pcap file (created, or truncated; nothing is written if an option is bad).
        #[arg(long)]
        out: PathBuf,
        /// Distinct flows (5-tuples), visited round-robin; 1..=16645890. Flow i comes from the
        /// i-th host after 10.0.1.1 in 10.0.0.0/8 (never .0 or .255, never 10.0.2.0/24), UDP
        /// port 1024 + i % 60000, to 10.0.2.1 port 4791.
        #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
        flows: u32,
        /// Number of packets.
        #[arg(long, default_value_t = 1000)]
        packets: u32,
        /// Frame length in bytes without FCS, 60..=65535: 60 is the shortest Ethernet frame
        /// (64 bytes on the wire), 65535 the pcap file's snaplen.
        #[arg(long, default_value_t = 60, value_parser = parse_frame_len)]
        frame_len: u16,
        /// Time between packets in nanoseconds. The first packet is at 1700000000 s
        /// (2023-11-14); the last must fall before the end of pcap's clock (2106-02-07).
        #[arg(long, default_value_t = 1000)]
        gap_ns: u64,
    },
    /// Talk to a running switch over its control socket: show state and counters, change
    /// tables while traffic flows. See README.md, "Control plane".
    Ctl(CtlArgs),
    /// Make a running switch re-read its config file and apply the difference (routes,
    /// neighbours, ECMP groups with their members and balancing, static MACs, ECN thresholds, SRv6 policies
    /// and SIDs, L2 VLANs and ports' VLANs) without restarting DPDK. Other changes are refused
    /// with what needs a restart.
    Reload {
        /// The switch's control socket.
        #[arg(long)]
        socket: Option<PathBuf>,
        /// Read the socket path from this config file.
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// The built-in demo: replay a generated trace through ironclos (io mode, pcap ports,
    /// no hugepages) and check that every packet came out unchanged.
    Demo {
        /// Keep the demo's files in this directory instead of a temporary one.
        #[arg(long)]
        dir: Option<PathBuf>,
    },
}

#[derive(clap::Args)]
struct CtlArgs {
    /// The switch's control socket (default: `[control] socket` of --config, or
    /// $IRONCLOS_SOCKET).
    #[arg(long, global = true)]
    socket: Option<PathBuf>,
    /// Read the socket path from this config file.
    #[arg(long, short, global = true)]
    config: Option<PathBuf>,
    /// Print the result as JSON instead of text; an error too, as {"ok":false,"error":"..."}
    /// on standard output (the exit status stays 1 or 2).
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: CtlCommand,
}

#[derive(Subcommand)]
enum CtlCommand {
    /// Show state and counters.
    Show {
        #[command(subcommand)]
        what: ShowWhat,
    },
    /// Add (or replace) or delete a route.
    Route {
        #[command(subcommand)]
        op: RouteOp,
    },
    /// Add or delete a static neighbour (nexthop MAC).
    Neighbor {
        #[command(subcommand)]
        op: NeighborOp,
    },
    /// Add or remove an ECMP group member.
    Ecmp {
        #[command(subcommand)]
        op: EcmpOp,
    },
    /// Add (or replace) or delete a static MAC entry.
    Mac {
        #[command(subcommand)]
        op: MacOp,
    },
    /// Create, change or delete an SRv6 policy: `policy add|set NAME --segments S1,S2
    /// [--mode M]`, `policy del NAME`.
    Policy {
        #[command(subcommand)]
        op: PolicyOp,
    },
    /// Add or delete a local SRv6 SID (End, End.X, End.DT4/DT6/DT46, uN, uA).
    Sid {
        #[command(subcommand)]
        op: SidCmd,
    },
    /// Create or delete an ECMP group, or change its balancing (`ecmp add|del` change its members).
    Group {
        #[command(subcommand)]
        op: GroupCmd,
    },
    /// Add or delete a VLAN, or set an L2 port's VLANs.
    Vlan {
        #[command(subcommand)]
        op: VlanCmd,
    },
    /// Change the PFC thresholds of one port's lossless traffic class:
    /// `pfc PORT TC xoff=40KB xon=20KB headroom=50KB` (any of them; bytes or with a unit).
    Pfc {
        /// The port (its [[port]] name).
        port: String,
        /// The traffic class, 0..=7: a lossless one of the port's QoS profile.
        tc: u8,
        /// xoff=BYTES, xon=BYTES, headroom=BYTES (a number, or with a unit: 40KB, 1MiB);
        /// those not given stay.
        #[arg(required = true)]
        settings: Vec<String>,
    },
    /// Take a port administratively down or up.
    Port {
        /// The port (its [[port]] name).
        port: String,
        /// down (the worker treats it as a link down) or up (again, if the link is up).
        #[arg(value_parser = ["up", "down"])]
        state: String,
    },
    /// Change the ECN marking thresholds of one port's traffic class.
    Ecn {
        /// The port (its [[port]] name).
        port: String,
        /// The traffic class, 0..=7.
        tc: u8,
        /// Marking starts at this queue depth (bytes).
        #[arg(long, required_unless_present = "off")]
        kmin: Option<u64>,
        /// Every ECT packet is marked from this depth (bytes; default kmin).
        #[arg(long)]
        kmax: Option<u64>,
        /// Marking probability at kmax (0..=1; default 1).
        #[arg(long)]
        pmax: Option<f64>,
        /// Stop marking in this class.
        #[arg(long, conflicts_with_all = ["kmin", "kmax", "pmax"])]
        off: bool,
    },
    /// Apply a JSON array of updates (the `update` request's `updates`) atomically; `-` reads
    /// standard input.
    Batch {
        /// The JSON file, or - for standard input.
        file: PathBuf,
    },
    /// P4 form: `table_add TABLE ACTION MATCH... => PARAM...`.
    #[command(name = "table_add")]
    TableAdd {
        /// A writable table of p4/ironclos.p4: ipv4_lpm, ipv6_lpm, mac_table, my_sid.
        table: String,
        /// One of the table's actions (e.g. set_nexthop, set_ecmp_group, l2_forward, un).
        action: String,
        /// The match fields, `=>`, then the action's parameters.
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        rest: Vec<String>,
    },
    /// P4 form: `table_delete TABLE MATCH...`.
    #[command(name = "table_delete")]
    TableDelete {
        /// A writable table: ipv4_lpm, ipv6_lpm, mac_table, my_sid.
        table: String,
        /// The entry's match fields (VRF and prefix, or VID and MAC).
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        matches: Vec<String>,
    },
    /// P4 form: every entry of TABLE.
    #[command(name = "table_dump")]
    TableDump {
        /// ipv4_lpm, ipv6_lpm, mac_table, my_sid or nexthop.
        table: String,
    },
    /// Send raw JSON request lines (the API's) and print every raw reply line.
    ///
    /// As on the socket, each line of LINE is one request and gets one reply line: a LINE of
    /// several lines sends them one after the other (each on its own, not as one batch: use
    /// `batch` or one `update` for that) and prints every reply, in order. Lines that are
    /// blank are left out, as the switch skips them unanswered; a LINE that is all blank is a
    /// bad command line (exit 2). The exit status is 1 if any reply is not ok (the switch
    /// refused that request; its error also goes to stderr) or the switch cannot be reached.
    Raw {
        /// The request: a JSON object on one line (several lines: several requests).
        line: String,
    },
}

#[derive(Subcommand)]
enum ShowWhat {
    /// The switch's name, version and protocol.
    Version,
    /// Ports: link, admin state, speed, packet counters.
    Ports,
    /// Queues per port and TC: depth, ECN marks, PFC counters, ECN thresholds.
    Queues {
        /// Only this port's queues (default: every port's).
        port: Option<String>,
    },
    /// Drops by reason.
    Drops,
    /// Routes (every VRF unless --vrf).
    Routes {
        /// Only this VRF's routes (its name).
        #[arg(long)]
        vrf: Option<String>,
        /// Show at most this many routes (default 10000); the total is counted anyway.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// Nexthops (neighbours) and their MACs.
    #[command(alias = "neighbors")]
    Nexthops,
    /// ECMP groups and their members' shares.
    Groups,
    /// The MAC table.
    Macs {
        /// Show at most this many entries (default 10000); the total is counted anyway.
        #[arg(long)]
        limit: Option<u64>,
    },
    /// SRv6 local SIDs and policies with their counters.
    Srv6,
    /// VLANs, their L3 interfaces and ports.
    Vlans,
}

#[derive(Subcommand)]
enum RouteOp {
    /// `route add PREFIX (--via IP --dev IF | --group G | --policy P | --blackhole)`; a route
    /// to PREFIX in the VRF that exists already is replaced (as `ip route replace`), and the
    /// reply says so.
    Add {
        /// The prefix, without host bits (a bare address is a host route).
        prefix: String,
        /// The route's VRF (default: default); its interface or group must be in it too.
        #[arg(long)]
        vrf: Option<String>,
        /// The neighbour to forward to (with --dev).
        #[arg(long, requires = "dev")]
        via: Option<String>,
        /// L3 interface: a routed port's name or `vlanN`.
        #[arg(long)]
        dev: Option<String>,
        /// Forward to this ECMP group.
        #[arg(long)]
        group: Option<String>,
        /// Encapsulate with this SRv6 policy.
        #[arg(long)]
        policy: Option<String>,
        /// Drop what the route matches.
        #[arg(long)]
        blackhole: bool,
    },
    /// `route del PREFIX [--vrf V]`: delete a route (one that does not exist is refused).
    Del {
        /// The route's prefix, without host bits.
        prefix: String,
        /// The route's VRF (default: default).
        #[arg(long)]
        vrf: Option<String>,
    },
}

#[derive(Subcommand)]
enum NeighborOp {
    /// `neighbor add IP --dev IF --mac MAC`: pin a neighbour's MAC (a static ARP/ND entry).
    Add {
        /// The neighbour's address, in a connected subnet of --dev.
        ip: String,
        /// L3 interface: a routed port's name or `vlanN`.
        #[arg(long)]
        dev: String,
        /// The neighbour's MAC (unicast, not the router MAC).
        #[arg(long)]
        mac: String,
    },
    /// `neighbor del IP --dev IF`: forget the MAC; the address is resolved again when needed.
    Del {
        /// The neighbour's address.
        ip: String,
        /// L3 interface: a routed port's name or `vlanN`.
        #[arg(long)]
        dev: String,
    },
}

#[derive(Subcommand)]
enum EcmpOp {
    /// `ecmp add GROUP --via IP --dev IF [--weight N]`: add a member to a group.
    Add {
        /// The ECMP group's name.
        group: String,
        /// The member's neighbour address, in a connected subnet of --dev.
        #[arg(long)]
        via: String,
        /// L3 interface: a routed port's name or `vlanN` (in the group's VRF).
        #[arg(long)]
        dev: String,
        /// The member's weight, 1..=65535 (default 1).
        #[arg(long)]
        weight: Option<u32>,
    },
    /// `ecmp del GROUP --via IP --dev IF`: remove a member (a group keeps at least one).
    Del {
        /// The ECMP group's name.
        group: String,
        /// The member's neighbour address.
        #[arg(long)]
        via: String,
        /// L3 interface: a routed port's name or `vlanN`.
        #[arg(long)]
        dev: String,
    },
}

#[derive(Subcommand)]
enum SidCmd {
    /// `sid add PREFIX --behavior B [--vrf V] [--flavors psp,usp] [--block-bits N
    /// --shift-bits N] [--via IP --dev IF | --group G] [--lookup-vrf V]`.
    Add {
        /// The SID's IPv6 prefix, without host bits (a bare address is a /128).
        prefix: String,
        /// End, End.X, End.DT4, End.DT6, End.DT46, uN, uA.
        #[arg(long)]
        behavior: String,
        /// The SID's VRF (default: default).
        #[arg(long)]
        vrf: Option<String>,
        /// psp and/or usp (End, End.X, uN, uA).
        #[arg(long, value_delimiter = ',')]
        flavors: Vec<String>,
        /// uN / uA: Locator-Block bits (default 32).
        #[arg(long)]
        block_bits: Option<u8>,
        /// uN / uA: uSID bits (default 16).
        #[arg(long)]
        shift_bits: Option<u8>,
        /// End.X / uA: the neighbour (with --dev), or --group.
        #[arg(long, requires = "dev")]
        via: Option<String>,
        /// End.X / uA: the neighbour's L3 interface (in the SID's VRF).
        #[arg(long)]
        dev: Option<String>,
        /// End.X / uA: an ECMP group (in the SID's VRF) instead of --via.
        #[arg(long)]
        group: Option<String>,
        /// End.DT*: the VRF of the inner lookup (default: the SID's VRF).
        #[arg(long)]
        lookup_vrf: Option<String>,
    },
    /// `sid del PREFIX [--vrf V]`: delete a local SID.
    Del {
        /// The SID's prefix, without host bits.
        prefix: String,
        /// The SID's VRF (default: default).
        #[arg(long)]
        vrf: Option<String>,
    },
}

#[derive(Subcommand)]
enum VlanCmd {
    /// `vlan add ID`: a new VLAN; ports join it with `vlan port`.
    Add {
        /// The VLAN id, 1..=4094.
        id: u16,
    },
    /// `vlan del ID`: a VLAN no port is in (its MAC entries go too).
    Del {
        /// The VLAN id.
        id: u16,
    },
    /// `vlan port PORT access ID` or `vlan port PORT trunk --allowed 10,20 [--native 10]`.
    Port {
        /// An L2 port (its [[port]] name; a routed port stays routed).
        port: String,
        /// access (one untagged VLAN) or trunk (--allowed VLANs, tagged but --native).
        #[arg(value_parser = ["access", "trunk"])]
        mode: String,
        /// The access VLAN.
        #[arg(required_if_eq("mode", "access"))]
        vlan: Option<u16>,
        /// Trunk: its VLANs (comma-separated, each once), tagged but for the native one.
        #[arg(long, value_delimiter = ',')]
        allowed: Vec<u16>,
        /// Trunk: the untagged VLAN, one of --allowed.
        #[arg(long)]
        native: Option<u16>,
    },
}

#[derive(Subcommand)]
enum GroupCmd {
    /// `group add NAME --member IP,DEV[,WEIGHT]... [--mode hash|flowlet|per-packet]`.
    Add {
        /// The new group's name (letters, digits, '-', '_', '.').
        name: String,
        /// A member: neighbour address, L3 interface, optional weight (repeat the option).
        #[arg(long = "member", required = true)]
        members: Vec<String>,
        #[command(flatten)]
        balance: BalanceArgs,
    },
    /// Delete a group no route or SID points at.
    Del {
        /// The group's name.
        name: String,
    },
    /// Replace a group's balancing (keys not given take their defaults, so without --mode
    /// the group hashes; members stay): `group set spines --mode flowlet
    /// --flowlet-timeout-us 200`.
    Set {
        /// The group's name.
        name: String,
        #[command(flatten)]
        balance: BalanceArgs,
    },
}

/// A group's balancing, as in a `[[nexthop_group]]` (defaults: hash; for flowlets random
/// choice, 100 us, 4096 entries).
#[derive(clap::Args)]
struct BalanceArgs {
    /// hash | flowlet | per-packet (default hash).
    #[arg(long)]
    mode: Option<String>,
    /// random | least-loaded (needs --mode flowlet or per-packet).
    #[arg(long)]
    choice: Option<String>,
    /// The idle gap that ends a flowlet (needs --mode flowlet).
    #[arg(long)]
    flowlet_timeout_us: Option<u64>,
    /// Flowlet entries, a power of two (needs --mode flowlet).
    #[arg(long)]
    flowlet_table_size: Option<u64>,
    /// Least-loaded choice skips members whose port marks ECN (needs --choice least-loaded).
    #[arg(long)]
    avoid_ecn: bool,
}

impl BalanceArgs {
    /// The balancing keys of an `add_group` or `set_group` update, added to `op`. Without
    /// `--mode` a group hashes (`group set` too: it replaces the balancing), so an option of
    /// the other modes is a bad command line rather than a refusal that blames the group's
    /// hashing the user did not ask for.
    fn into_op(self, mut op: Value) -> Result<Value, String> {
        if self.mode.is_none() {
            let flowlet_or_per_packet = "flowlet or --mode per-packet";
            let other_modes = [
                (
                    self.choice.is_some(),
                    "--choice",
                    "flowlet or per-packet",
                    flowlet_or_per_packet,
                ),
                (
                    self.flowlet_timeout_us.is_some(),
                    "--flowlet-timeout-us",
                    "flowlet",
                    "flowlet",
                ),
                (
                    self.flowlet_table_size.is_some(),
                    "--flowlet-table-size",
                    "flowlet",
                    "flowlet",
                ),
                (
                    self.avoid_ecn,
                    "--avoid-ecn",
                    "least-loaded flowlet or per-packet",
                    "flowlet or --mode per-packet (with --choice least-loaded)",
                ),
            ];
            if let Some((_, option, balancing, mode)) =
                other_modes.into_iter().find(|(given, ..)| *given)
            {
                return Err(format!(
                    "{option} is for {balancing} balancing: a group update without --mode \
                     sets hash balancing, so give --mode {mode}"
                ));
            }
        }
        op["mode"] = json!(self.mode);
        op["choice"] = json!(self.choice);
        op["flowlet_timeout_us"] = json!(self.flowlet_timeout_us);
        op["flowlet_table_size"] = json!(self.flowlet_table_size);
        if self.avoid_ecn {
            op["avoid_ecn"] = json!(true);
        }
        Ok(op)
    }
}

#[derive(Subcommand)]
enum PolicyOp {
    /// A new policy; then `route add PREFIX --policy NAME`.
    Add {
        /// The new policy's name (letters, digits, '-', '_', '.').
        name: String,
        /// The SID list in path order (comma-separated); each may be a uSID container.
        #[arg(long, required = true, value_delimiter = ',')]
        segments: Vec<String>,
        /// encaps | encaps.red (default encaps).
        #[arg(long)]
        mode: Option<String>,
        /// Outer source address (default: a global IPv6 address of the default VRF).
        #[arg(long)]
        source: Option<String>,
        /// Outer hop limit (default 64).
        #[arg(long)]
        hop_limit: Option<u8>,
    },
    /// Delete a policy no route points at.
    Del {
        /// The policy's name.
        name: String,
    },
    /// Give a policy a new path (its routes follow with their next packet; counters stay).
    Set {
        /// The policy's name.
        name: String,
        /// The SID list in path order (comma-separated); each may be a uSID container.
        #[arg(long, required = true, value_delimiter = ',')]
        segments: Vec<String>,
        /// encaps | encaps.red (default: unchanged).
        #[arg(long)]
        mode: Option<String>,
        /// Outer source address (default: unchanged).
        #[arg(long)]
        source: Option<String>,
        /// Outer hop limit (default: unchanged).
        #[arg(long)]
        hop_limit: Option<u8>,
    },
}

#[derive(Subcommand)]
enum MacOp {
    /// `mac add VLAN MAC PORT`: a static entry; one for MAC in VLAN that exists already
    /// (static or learned) is replaced, and the reply says so.
    Add {
        /// The VLAN id (declared, and PORT in it).
        vlan: u16,
        /// The MAC (unicast, not the router MAC).
        mac: String,
        /// The port (its [[port]] name) frames to MAC leave by.
        port: String,
    },
    /// `mac del VLAN MAC`: delete an entry (static or learned).
    Del {
        /// The VLAN id.
        vlan: u16,
        /// The MAC.
        mac: String,
    },
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    if !(seconds > 0.0 && seconds.is_finite()) {
        return Err("must be a positive number of seconds".to_owned());
    }
    Duration::try_from_secs_f64(seconds)
        .map_err(|_| format!("`{text}` seconds is more than a duration can hold"))
}

/// `gen-trace --frame-len`: `tracegen::MIN_FRAME_LEN..=MAX_FRAME_LEN` bytes, however large
/// the number given.
fn parse_frame_len(text: &str) -> Result<u16, String> {
    let range = tracegen::MIN_FRAME_LEN..=tracegen::MAX_FRAME_LEN;
    let in_range = |len: &u128| usize::try_from(*len).is_ok_and(|len| range.contains(&len));
    text.trim()
        .parse::<u128>()
        .ok()
        .filter(in_range)
        .and_then(|len| u16::try_from(len).ok())
        .ok_or_else(|| {
            format!(
                "must be a number of bytes in {}..={} ({} is the shortest Ethernet frame without \
                 FCS, {} the pcap snaplen)",
                range.start(),
                range.end(),
                range.start(),
                range.end()
            )
        })
}

/// Prints the ready line and link changes; serves the control socket and metrics.
struct ConsoleHooks {
    server: Option<ControlServer>,
}

impl EngineHooks for ConsoleHooks {
    fn attach(&mut self, handle: engine::ControlHandle) {
        if let Some(server) = &mut self.server {
            server.attach(handle);
        }
    }

    fn tick(&mut self) {
        if let Some(server) = &mut self.server {
            server.tick();
        }
    }

    fn ready(&mut self, ports: &[PortInfo]) {
        if let Some(server) = &mut self.server {
            server.ready(ports);
        }
        for port in ports {
            match port.mtu {
                Some(MtuOutcome::Limited { asked, max }) => eprintln!(
                    "ironclos: port {}: the device takes an MTU of at most {max}: using {max}, not the configured {asked}",
                    port.name
                ),
                Some(MtuOutcome::Unsupported { asked }) => eprintln!(
                    "ironclos: port {}: the device cannot change its MTU: the configured {asked} is not applied",
                    port.name
                ),
                Some(MtuOutcome::Set(_)) | None => {}
            }
        }
        let described: Vec<String> = ports
            .iter()
            .map(|p| {
                format!(
                    "{} (dpdk port {}, link {})",
                    p.name,
                    p.dpdk_port_id,
                    if p.link.up { "up" } else { "down" }
                )
            })
            .collect();
        outln!(
            "ironclos ready: {} ports: {}",
            ports.len(),
            described.join(", ")
        );
        let _ = std::io::stdout().flush();
    }

    fn event(&mut self, event: &EngineEvent) {
        match event {
            EngineEvent::LinkChanged { port, status } => {
                if let Some(server) = &mut self.server {
                    server.link_changed(port, *status);
                }
                outln!(
                    "link {port}: {} ({} Mb/s)",
                    if status.up { "up" } else { "down" },
                    status.speed_mbps
                );
            }
        }
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Run {
            config,
            exit_when_idle,
            duration,
            stats_json,
            schedule,
            events,
            eal,
        } => {
            // The arguments after `--` follow the config's `eal` rule: no option ironclos
            // sets itself.
            if let Some(problem) = eal
                .iter()
                .find_map(|a| control::config::check_eal_arg(a).err())
            {
                eprintln!("ironclos: EAL arguments after `--`: {problem}");
                return ExitCode::from(2);
            }
            let options = RunOptions {
                extra_eal: eal,
                exit_when_idle,
                duration,
            };
            run(
                &config,
                &options,
                stats_json.as_deref(),
                schedule.as_deref(),
                events.as_deref(),
            )
        }
        Command::CheckConfig { file, config } => match file.or(config) {
            Some(path) => check_config(&path),
            // clap requires one of the two; should that change, still say what is missing.
            None => {
                eprintln!("ironclos: check-config needs a config file (CONFIG or --config CONFIG)");
                ExitCode::from(2)
            }
        },
        Command::GenTrace {
            out,
            flows,
            packets,
            frame_len,
            gap_ns,
        } => {
            let spec = tracegen::UdpTraceSpec {
                flows,
                packets,
                frame_len: usize::from(frame_len),
                gap_ns,
                ..Default::default()
            };
            gen_trace(&out, &spec)
        }
        Command::Demo { dir } => demo(dir),
        Command::Ctl(args) => ctl(args),
        Command::Reload { socket, config } => reload(socket, config),
    }
}

/// The control socket: --socket, else --config's `[control] socket`, else $IRONCLOS_SOCKET.
/// An error is a bad command line or config (exit 2), with its message.
fn socket_path(socket: Option<&Path>, config: Option<&Path>) -> Result<PathBuf, String> {
    match (socket, config) {
        (Some(s), _) => Ok(s.to_owned()),
        (None, Some(config)) => {
            let c = Config::load(config).map_err(|e| format!("config error: {e}"))?;
            c.control
                .socket
                .ok_or_else(|| format!("{} has no [control] socket", config.display()))
        }
        (None, None) => std::env::var_os("IRONCLOS_SOCKET")
            .map(PathBuf::from)
            .ok_or_else(|| "give --socket, --config or $IRONCLOS_SOCKET".to_owned()),
    }
}

fn connect(socket: &Path) -> Result<control::ctl::Client, ExitCode> {
    control::ctl::Client::connect(socket).map_err(|e| {
        eprintln!("ironclos ctl: {e}");
        ExitCode::from(EXIT_RUNTIME)
    })
}

fn reload(socket: Option<PathBuf>, config: Option<PathBuf>) -> ExitCode {
    let socket = match socket_path(socket.as_deref(), config.as_deref()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ironclos: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let mut client = match connect(&socket) {
        Ok(c) => c,
        Err(code) => return code,
    };
    match client.call("reload", Map::new()) {
        Ok(result) => {
            out!("{}", control::ctl::to_text("reload", &result));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("ironclos reload: {e}");
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

/// How `ctl` ends on an error: its message on stderr, or with --json as the API's error object
/// `{"ok":false,"error":"..."}` on standard output (where the results go, so a script reads
/// one JSON value either way); the exit status is `code` both ways.
fn ctl_failed(json_output: bool, code: u8, error: &str) -> ExitCode {
    if json_output {
        outln!("{}", json!({"ok": false, "error": error}));
    } else {
        eprintln!("ironclos ctl: {error}");
    }
    ExitCode::from(code)
}

/// `ctl_failed` for an answer that is not ok (exit 1): the switch's error (`error: ...` as
/// text, the API's own words in JSON), or why it could not be asked.
fn ctl_refused(json_output: bool, error: &control::ctl::CtlError) -> ExitCode {
    let text = match error {
        control::ctl::CtlError::Refused(m) if json_output => m.clone(),
        other => other.to_string(),
    };
    ctl_failed(json_output, EXIT_RUNTIME, &text)
}

fn ctl(args: CtlArgs) -> ExitCode {
    let json_output = args.json;
    let socket = match socket_path(args.socket.as_deref(), args.config.as_deref()) {
        Ok(s) => s,
        Err(e) => return ctl_failed(json_output, EXIT_CONFIG, &e),
    };
    if let CtlCommand::Raw { line } = &args.command {
        let requests = match control::ctl::raw_requests(line) {
            Ok(r) => r,
            Err(e) => return ctl_failed(json_output, EXIT_CONFIG, &e),
        };
        let mut client = match control::ctl::Client::connect(&socket) {
            Ok(c) => c,
            Err(e) => return ctl_refused(json_output, &e),
        };
        let mut refused = false;
        for request in requests {
            match client.raw(request) {
                Ok(reply) => {
                    outln!("{reply}");
                    if let Some(error) = control::ctl::raw_refusal(&reply) {
                        eprintln!("ironclos ctl: error: {error}");
                        refused = true;
                    }
                }
                Err(e) => return ctl_refused(json_output, &e),
            }
        }
        return if refused {
            ExitCode::from(EXIT_RUNTIME)
        } else {
            ExitCode::SUCCESS
        };
    }
    // A bad command line is reported as such (exit 2) before the switch is reached.
    let (cmd, request) = match ctl_request(args.command) {
        Ok(r) => r,
        Err(e) => return ctl_failed(json_output, EXIT_CONFIG, &e),
    };
    let mut client = match control::ctl::Client::connect(&socket) {
        Ok(c) => c,
        Err(e) => return ctl_refused(json_output, &e),
    };
    match client.call(cmd, request.clone()) {
        Ok(mut result) => {
            // `route add` and `mac add` replace an entry that exists (as `ip route replace`),
            // and say so; with --json as `"replaced": true|false`.
            let replaces = control::ctl::replaced_entry(cmd, &request, &result);
            if let (Some(replaced), Some(object)) = (replaces, result.as_object_mut()) {
                object.insert("replaced".to_owned(), json!(replaced));
            }
            if json_output {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&result).expect("JSON values serialise")
                );
            } else {
                match replaces {
                    Some(true) => outln!("{}", control::ctl::replaced_text(&request)),
                    _ => out!("{}", control::ctl::to_text(cmd, &result)),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => ctl_refused(json_output, &e),
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(o) => o,
        _ => Map::new(),
    }
}

/// The request a `ctl` command line stands for: (cmd, fields).
fn ctl_request(command: CtlCommand) -> Result<(&'static str, Map<String, Value>), String> {
    let update = |op: Value| ("update", object(json!({"updates": [op]})));
    Ok(match command {
        CtlCommand::Show { what } => match what {
            ShowWhat::Version => ("hello", Map::new()),
            ShowWhat::Ports => ("show_ports", Map::new()),
            ShowWhat::Queues { port } => ("show_queues", object(json!({"port": port}))),
            ShowWhat::Drops => ("show_drops", Map::new()),
            ShowWhat::Routes { vrf, limit } => {
                ("show_routes", object(json!({"vrf": vrf, "limit": limit})))
            }
            ShowWhat::Nexthops => ("show_nexthops", Map::new()),
            ShowWhat::Groups => ("show_groups", Map::new()),
            ShowWhat::Macs { limit } => ("show_macs", object(json!({"limit": limit}))),
            ShowWhat::Srv6 => ("show_srv6", Map::new()),
            ShowWhat::Vlans => ("show_vlans", Map::new()),
        },
        CtlCommand::Route { op } => match op {
            RouteOp::Add {
                prefix,
                vrf,
                via,
                dev,
                group,
                policy,
                blackhole,
            } => update(json!({
                "op": "add_route", "prefix": prefix, "vrf": vrf, "via": via, "dev": dev,
                "group": group, "policy": policy, "blackhole": blackhole.then_some(true),
            })),
            RouteOp::Del { prefix, vrf } => {
                update(json!({"op": "del_route", "prefix": prefix, "vrf": vrf}))
            }
        },
        CtlCommand::Neighbor { op } => match op {
            NeighborOp::Add { ip, dev, mac } => {
                update(json!({"op": "add_neighbor", "ip": ip, "dev": dev, "mac": mac}))
            }
            NeighborOp::Del { ip, dev } => {
                update(json!({"op": "del_neighbor", "ip": ip, "dev": dev}))
            }
        },
        CtlCommand::Ecmp { op } => match op {
            EcmpOp::Add {
                group,
                via,
                dev,
                weight,
            } => update(json!({
                "op": "add_ecmp_member", "group": group, "via": via, "dev": dev, "weight": weight,
            })),
            EcmpOp::Del { group, via, dev } => update(json!({
                "op": "del_ecmp_member", "group": group, "via": via, "dev": dev,
            })),
        },
        CtlCommand::Mac { op } => match op {
            MacOp::Add { vlan, mac, port } => {
                update(json!({"op": "add_mac", "vlan": vlan, "mac": mac, "port": port}))
            }
            MacOp::Del { vlan, mac } => update(json!({"op": "del_mac", "vlan": vlan, "mac": mac})),
        },
        CtlCommand::Policy { op } => match op {
            PolicyOp::Set {
                name,
                segments,
                mode,
                source,
                hop_limit,
            } => update(json!({
                "op": "set_policy", "policy": name, "segments": segments, "mode": mode,
                "source": source, "hop_limit": hop_limit,
            })),
            PolicyOp::Add {
                name,
                segments,
                mode,
                source,
                hop_limit,
            } => update(json!({
                "op": "add_policy", "policy": name, "segments": segments, "mode": mode,
                "source": source, "hop_limit": hop_limit,
            })),
            PolicyOp::Del { name } => update(json!({"op": "del_policy", "policy": name})),
        },
        CtlCommand::Sid { op } => match op {
            SidCmd::Add {
                prefix,
                behavior,
                vrf,
                flavors,
                block_bits,
                shift_bits,
                via,
                dev,
                group,
                lookup_vrf,
            } => update(json!({
                "op": "add_sid", "sid": prefix, "behavior": behavior, "vrf": vrf,
                "flavors": (!flavors.is_empty()).then_some(flavors),
                "block_bits": block_bits, "shift_bits": shift_bits, "via": via, "dev": dev,
                "group": group, "lookup_vrf": lookup_vrf,
            })),
            SidCmd::Del { prefix, vrf } => {
                update(json!({"op": "del_sid", "sid": prefix, "vrf": vrf}))
            }
        },
        CtlCommand::Group { op } => match op {
            GroupCmd::Add {
                name,
                members,
                balance,
            } => {
                let members = members
                    .iter()
                    .map(|m| {
                        let parts: Vec<&str> = m.split(',').map(str::trim).collect();
                        match parts[..] {
                            [via, dev] => Ok(json!({"via": via, "dev": dev})),
                            [via, dev, weight] => {
                                let weight: u64 = weight.parse().map_err(|_| {
                                    format!("--member {m}: weight `{weight}` is not a number")
                                })?;
                                Ok(json!({"via": via, "dev": dev, "weight": weight}))
                            }
                            _ => Err(format!(
                                "--member {m}: give IP,DEV or IP,DEV,WEIGHT (e.g. 10.255.0.2,eth49,2)"
                            )),
                        }
                    })
                    .collect::<Result<Vec<_>, String>>()?;
                update(
                    balance
                        .into_op(json!({"op": "add_group", "group": name, "members": members}))?,
                )
            }
            GroupCmd::Del { name } => update(json!({"op": "del_group", "group": name})),
            GroupCmd::Set { name, balance } => {
                update(balance.into_op(json!({"op": "set_group", "group": name}))?)
            }
        },
        CtlCommand::Vlan { op } => match op {
            VlanCmd::Add { id } => update(json!({"op": "add_vlan", "vlan": id})),
            VlanCmd::Del { id } => update(json!({"op": "del_vlan", "vlan": id})),
            VlanCmd::Port {
                port,
                mode,
                vlan,
                allowed,
                native,
            } => {
                if mode == "access" && (!allowed.is_empty() || native.is_some()) {
                    return Err("--allowed and --native are for trunk ports".to_owned());
                }
                if mode == "trunk" && vlan.is_some() {
                    return Err(
                        "a trunk takes --allowed and --native, not an access VLAN".to_owned()
                    );
                }
                if mode == "trunk" && allowed.is_empty() {
                    return Err(
                        "a trunk needs --allowed, the VLANs it carries (--native is one of them)"
                            .to_owned(),
                    );
                }
                update(json!({
                    "op": "set_port_vlan", "port": port, "mode": mode, "vlan": vlan,
                    "allowed": (mode == "trunk").then_some(allowed), "native": native,
                }))
            }
        },
        CtlCommand::Pfc { port, tc, settings } => {
            let mut op = json!({"op": "set_pfc", "port": port, "tc": tc});
            for setting in &settings {
                let Some((key, value)) = setting.split_once('=') else {
                    return Err(format!(
                        "`{setting}`: give KEY=BYTES with KEY xoff, xon or headroom"
                    ));
                };
                let key = key.trim();
                if !["xoff", "xon", "headroom"].contains(&key) {
                    return Err(format!("`{setting}`: `{key}` is not xoff, xon or headroom"));
                }
                let value = value.trim();
                op[key] = match value.parse::<u64>() {
                    Ok(n) => json!(n),
                    Err(_) => json!(value),
                };
            }
            update(op)
        }
        CtlCommand::Port { port, state } => {
            ("set_port", object(json!({"port": port, "admin": state})))
        }
        CtlCommand::Ecn {
            port,
            tc,
            kmin,
            kmax,
            pmax,
            off,
        } => update(json!({
            "op": "set_ecn", "port": port, "tc": tc, "kmin": kmin, "kmax": kmax, "pmax": pmax,
            "off": off.then_some(true),
        })),
        CtlCommand::Batch { file } => {
            let text = if file.as_os_str() == "-" {
                let mut text = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
                    .map_err(|e| format!("standard input: {e}"))?;
                text
            } else {
                std::fs::read_to_string(&file)
                    .map_err(|e| format!("cannot read {}: {e}", file.display()))?
            };
            let updates: Value = serde_json::from_str(&text)
                .map_err(|e| format!("{}: not JSON: {e}", file.display()))?;
            ("update", object(json!({"updates": updates})))
        }
        CtlCommand::TableAdd {
            table,
            action,
            rest,
        } => {
            let Some(arrow) = rest.iter().position(|a| a == "=>") else {
                return Err(
                    "table_add needs `=>` between the match fields and the action \
                            parameters (e.g. `table_add ipv4_lpm blackhole 0 10.9.0.0/16 =>`)"
                        .to_owned(),
                );
            };
            (
                "table_add",
                object(json!({
                    "table": table, "action": action,
                    "match": rest[..arrow], "params": rest[arrow + 1..],
                })),
            )
        }
        CtlCommand::TableDelete { table, matches } => (
            "table_delete",
            object(json!({"table": table, "match": matches})),
        ),
        CtlCommand::TableDump { table } => ("table_dump", object(json!({"table": table}))),
        CtlCommand::Raw { .. } => unreachable!("handled before"),
    })
}

fn load(path: &Path) -> Result<Config, ExitCode> {
    Config::load(path).map_err(|e| {
        eprintln!("ironclos: config error: {e}");
        ExitCode::from(EXIT_CONFIG)
    })
}

fn check_config(path: &Path) -> ExitCode {
    let config = match load(path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    outln!("{}: ok", path.display());
    outln!(
        "switch {} mode {}",
        config.name,
        format!("{:?}", config.mode).to_lowercase()
    );
    let largest_mtu = config.ports.iter().filter_map(|p| p.mtu).max().unwrap_or(0);
    outln!(
        "lcores: main {} (control), workers {:?}; burst {}; mbufs {} of {} bytes{}",
        config.main_lcore,
        config.worker_lcores,
        config.burst,
        config.mbufs,
        control::config::defaults::MBUF_DATA_ROOM.max(engine::mbuf_room_for_mtu(largest_mtu)),
        if largest_mtu > 0 {
            format!(" (for MTU {largest_mtu}; less if the devices take less)")
        } else {
            String::new()
        }
    );
    // A config with route files can describe a million routes: write them in one buffer, and
    // stop quietly if the reader goes away (`| head`).
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    for line in config.summary() {
        if writeln!(out, "{line}").is_err() {
            return ExitCode::SUCCESS;
        }
    }
    if out.flush().is_err() {
        return ExitCode::SUCCESS;
    }
    drop(out);
    outln!("EAL: {}", config.eal_args(&[]).join(" "));
    ExitCode::SUCCESS
}

fn run(
    path: &Path,
    options: &RunOptions,
    stats_json: Option<&Path>,
    schedule: Option<&Path>,
    events_file: Option<&Path>,
) -> ExitCode {
    let config = match load(path) {
        Ok(c) => c,
        Err(code) => return code,
    };
    if let (Some(file), control::config::Mode::Io) = (schedule, config.mode) {
        eprintln!(
            "ironclos: --schedule {}: a schedule needs mode = \"switch\" in {} (io mode has no \
             links or tables to change) and a replay (--exit-when-idle)",
            file.display(),
            path.display()
        );
        return ExitCode::from(EXIT_CONFIG);
    }
    // A replay's virtual time counts from the day its traces start (pcap time since 1970 does
    // not fit picoseconds in a u64); a schedule's times are pcap times.
    let trace_origin_us = if options.exit_when_idle {
        control::schedule::replay_origin_us(&config)
    } else {
        0
    };
    let events = match schedule.map(|file| control::schedule::load(file, &config, trace_origin_us))
    {
        None => Vec::new(),
        Some(Ok(events)) => events,
        Some(Err(e)) => {
            eprintln!("ironclos: schedule error: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if !events.is_empty() && !options.exit_when_idle {
        eprintln!("ironclos: --schedule applies to replays: add --exit-when-idle");
        return ExitCode::from(EXIT_CONFIG);
    }
    let mut engine_config = config.engine_config(options);
    engine_config.trace_origin_us = trace_origin_us;
    if events_file.is_some() {
        match &mut engine_config.mode {
            ForwardingMode::Switch(spec) => spec.qos.events = true,
            ForwardingMode::Io => {
                eprintln!("ironclos: --events needs mode = \"switch\" (io mode has no queues)");
                return ExitCode::from(EXIT_CONFIG);
            }
        }
    }
    // The output files are created (or truncated) now, so a path that cannot be written is
    // a bad command line found before the run, not after it with the counters lost.
    let mut stats_out = match stats_json.map(|file| create_output("--stats-json", file)) {
        None => None,
        Some(Ok(out)) => Some(out),
        Some(Err(code)) => return code,
    };
    let mut events_out = match events_file.map(|file| create_output("--events", file)) {
        None => None,
        Some(Ok(out)) => Some(out),
        Some(Err(code)) => return code,
    };
    if let (Some(stats), Some(events)) = (stats_json, events_file) {
        let same = std::fs::canonicalize(stats)
            .is_ok_and(|a| std::fs::canonicalize(events).is_ok_and(|b| a == b));
        if same {
            eprintln!(
                "ironclos: --stats-json {} and --events {} are the same file: give two",
                stats.display(),
                events.display()
            );
            return ExitCode::from(EXIT_CONFIG);
        }
    }
    let server = match ControlServer::open(&config) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("ironclos: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    if let Some(socket) = &config.control.socket {
        outln!("control socket: {}", socket.display());
    }
    if let Some(addr) = config.control.metrics {
        outln!("metrics: http://{addr}/metrics");
    }
    let mut hooks = ConsoleHooks { server };
    let run_report = match engine::run_with_schedule(&engine_config, &events, &mut hooks) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ironclos: {e}");
            // A configuration the engine cannot run is a bad config, not a failed device.
            return ExitCode::from(match e {
                engine::EngineError::Config(_) => EXIT_CONFIG,
                _ => EXIT_RUNTIME,
            });
        }
    };
    out!("{}", report::to_text(&run_report));
    let group_names: Vec<String> = config
        .group_balances()
        .into_iter()
        .map(|(n, _)| n)
        .collect();
    let group_members = config.group_member_labels();
    out!(
        "{}",
        report::groups_text(&run_report, &group_names, &group_members)
    );
    if let (Some(file), Some(out)) = (stats_json, &mut stats_out) {
        let mut json = report::to_json(&run_report);
        json["groups"] = report::groups_json(&run_report, &group_names, &group_members);
        let text = serde_json::to_string_pretty(&json).expect("JSON values serialise");
        if let Err(e) = out
            .write_all((text + "\n").as_bytes())
            .and_then(|()| out.flush())
        {
            eprintln!("ironclos: cannot write {}: {e}", file.display());
            return ExitCode::from(EXIT_RUNTIME);
        }
    }
    if let (Some(file), Some(out)) = (events_file, &mut events_out) {
        let names: Vec<&str> = run_report
            .ports
            .iter()
            .map(|p| p.info.name.as_str())
            .collect();
        // QoS events and flowlet moves, merged in time order (QoS first at equal times).
        let mut lines: Vec<(u64, serde_json::Value)> = run_report
            .qos_events
            .iter()
            .map(|e| (e.at, report::event_json(e, &names)))
            .collect();
        lines.extend(run_report.flowlet_moves.iter().map(|m| {
            (
                m.at,
                report::flowlet_move_json(m, &group_names, &group_members),
            )
        }));
        lines.sort_by_key(|(at, _)| *at);
        let mut text = String::new();
        for (_, line) in &lines {
            text.push_str(&line.to_string());
            text.push('\n');
        }
        if let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
            eprintln!("ironclos: cannot write {}: {e}", file.display());
            return ExitCode::from(EXIT_RUNTIME);
        }
        if run_report.qos_events_lost > 0 {
            eprintln!(
                "ironclos: the event log kept the first {} events; {} more were not recorded",
                run_report.qos_events.len(),
                run_report.qos_events_lost
            );
        }
    }
    for (port, tcs) in run_report.ports.iter().zip(&run_report.queues) {
        for (tc, q) in tcs.iter().enumerate() {
            if q.headroom_drops > 0 {
                eprintln!(
                    "ironclos: warning: {} lossless frames arriving on {} in TC {tc} found the \
                     PFC headroom full and were dropped: the headroom is too small for the \
                     link (speed, cable_m, peer response); raise pfc.headroom",
                    q.headroom_drops, port.info.name
                );
            }
        }
    }
    if !run_report.schedule_rejections.is_empty() {
        let file = schedule.map_or_else(String::new, |f| f.display().to_string());
        // The worker numbers ports, VRFs and interfaces: name them (groups and policies the
        // schedule's events may have renumbered stay numbers).
        let names = control::server::Names::of(&config);
        for refused in &run_report.schedule_rejections {
            eprintln!(
                "ironclos: {file}: event[{}] at {} us was refused, nothing of it applied, and the \
                 replay ended there: {}",
                refused.index,
                run_report.trace_origin_us + refused.at / dataplane::clock::PICOS_PER_MICRO,
                names.name_ids(&refused.why, false)
            );
        }
        return ExitCode::from(EXIT_CONFIG);
    }
    if run_report.replay_stalled {
        eprintln!(
            "ironclos: the replay stopped early: every free mbuf was held in egress queues \
             waiting for later arrivals; raise dataplane.mbufs"
        );
        return ExitCode::from(EXIT_REPLAY_INCOMPLETE);
    }
    let nombuf = run_report.rx_nombuf();
    if options.exit_when_idle && run_report.stop_cause == StopCause::InputsExhausted && nombuf > 0 {
        eprintln!(
            "ironclos: {nombuf} packets were lost because the mbuf pool ran dry (rx_nombuf); \
             the replay is incomplete: raise dataplane.mbufs"
        );
        return ExitCode::from(EXIT_REPLAY_INCOMPLETE);
    }
    ExitCode::SUCCESS
}

/// Creates (or truncates) an output file named by `option` before the run; one that cannot be
/// created is a bad command line (exit 2), reported with the path and the system's reason.
fn create_output(option: &str, file: &Path) -> Result<std::fs::File, ExitCode> {
    std::fs::File::create(file).map_err(|e| {
        eprintln!("ironclos: {option} {}: cannot create: {e}", file.display());
        ExitCode::from(EXIT_CONFIG)
    })
}

/// `gen-trace`: checks the options, then writes the trace. A bad option or an output file
/// that cannot be created exits 2 with nothing written; a failed write exits 1.
fn gen_trace(out: &Path, spec: &tracegen::UdpTraceSpec) -> ExitCode {
    if let Err(e) = spec.check() {
        eprintln!("ironclos gen-trace: {e}");
        return ExitCode::from(EXIT_CONFIG);
    }
    let file = match create_output("--out", out) {
        Ok(f) => f,
        Err(code) => return code,
    };
    match write_trace(&mut std::io::BufWriter::new(file), spec) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ironclos: cannot write {}: {e}", out.display());
            ExitCode::from(EXIT_RUNTIME)
        }
    }
}

/// Writes the trace as a pcap file a chunk of packets at a time, so a long trace need not fit
/// in memory: `pcap::write_pcap` writes the file header, then each chunk's records (written
/// by it into a buffer whose own file header is left out).
fn write_trace(out: &mut impl Write, spec: &tracegen::UdpTraceSpec) -> std::io::Result<()> {
    const CHUNK: u32 = 4096;
    let mut buffer = Vec::new();
    pcap::write_pcap(&mut buffer, &[])?;
    let header_len = buffer.len();
    out.write_all(&buffer)?;
    let mut next = 0;
    while next < spec.packets {
        let end = next.saturating_add(CHUNK).min(spec.packets);
        let chunk: Vec<pcap::PcapPacket> =
            (next..end).map(|k| tracegen::udp_packet(spec, k)).collect();
        buffer.clear();
        pcap::write_pcap(&mut buffer, &chunk)?;
        out.write_all(&buffer[header_len..])?;
        next = end;
    }
    out.flush()
}

fn demo(dir: Option<PathBuf>) -> ExitCode {
    let dir = dir.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("ironclos-demo-{}", std::process::id()))
    });
    if let Err(e) = std::fs::create_dir_all(&dir) {
        eprintln!("ironclos: cannot create {}: {e}", dir.display());
        return ExitCode::from(EXIT_RUNTIME);
    }
    let spec_a = tracegen::UdpTraceSpec {
        flows: 16,
        packets: 2000,
        frame_len: 60,
        ..Default::default()
    };
    let spec_b = tracegen::UdpTraceSpec {
        flows: 4,
        packets: 1000,
        frame_len: 1014,
        src_ip: [10, 0, 2, 1],
        dst_ip: [10, 0, 1, 1],
        ..Default::default()
    };
    let inputs = [tracegen::udp_trace(&spec_a), tracegen::udp_trace(&spec_b)];
    for (index, trace) in inputs.iter().enumerate() {
        if let Err(e) = pcap::write_pcap_file(&dir.join(format!("in{index}.pcap")), trace) {
            eprintln!("ironclos: cannot write the demo trace: {e}");
            return ExitCode::from(EXIT_RUNTIME);
        }
    }
    let config_path = dir.join("demo.toml");
    let config_text = format!(
        "# Built-in demo: two pcap ports in io mode, no hugepages.\n\
         [switch]\nname = \"demo\"\n\n\
         [dataplane]\nmode = \"io\"\nworker_lcores = [1]\n\
         eal = [\"--no-huge\", \"-m\", \"512\", \"--no-pci\", \"--file-prefix\", \"ironclos-demo-{pid}\", \"--log-level=warning\"]\n\n\
         [[port]]\nname = \"p0\"\ndevargs = \"net_pcap0,rx_pcap={d}/in0.pcap,tx_pcap={d}/out0.pcap\"\n\n\
         [[port]]\nname = \"p1\"\ndevargs = \"net_pcap1,rx_pcap={d}/in1.pcap,tx_pcap={d}/out1.pcap\"\n",
        d = dir.display(),
        pid = std::process::id()
    );
    if let Err(e) = std::fs::write(&config_path, config_text) {
        eprintln!("ironclos: cannot write the demo config: {e}");
        return ExitCode::from(EXIT_RUNTIME);
    }
    outln!(
        "demo: replaying {} + {} packets through io mode ({})",
        inputs[0].len(),
        inputs[1].len(),
        dir.display()
    );
    let options = RunOptions {
        exit_when_idle: true,
        ..Default::default()
    };
    let status = run(
        &config_path,
        &options,
        Some(&dir.join("stats.json")),
        None,
        None,
    );
    if status != ExitCode::SUCCESS {
        return status;
    }
    // io mode pairs p0 with p1: what entered p0 must leave p1 unchanged and in order.
    let mut all_ok = true;
    for (input, output) in [(0, 1), (1, 0)] {
        let out = pcap::read_pcap_file(&dir.join(format!("out{output}.pcap")));
        let same = out.as_ref().is_ok_and(|out| {
            out.len() == inputs[input].len()
                && out
                    .iter()
                    .zip(&inputs[input])
                    .all(|(o, i)| o.data == i.data)
        });
        outln!(
            "demo: p{input} -> p{output}: {} of {} packets, {}",
            out.as_ref().map_or(0, Vec::len),
            inputs[input].len(),
            if same {
                "unchanged and in order"
            } else {
                "MISMATCH"
            }
        );
        all_ok &= same;
    }
    if all_ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(EXIT_RUNTIME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_take_positive_seconds_that_fit_and_refuse_the_rest() {
        assert_eq!(parse_seconds("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(
            parse_seconds("1e19"),
            Ok(Duration::from_secs(10_000_000_000_000_000_000))
        );
        for bad in [
            "0",
            "-1",
            "nan",
            "inf",
            "abc",
            "1e300",
            "18446744073709551616",
        ] {
            assert!(parse_seconds(bad).is_err(), "{bad}");
        }
    }
}
