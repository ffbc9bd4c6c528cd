//! Packets-per-second benchmark: ironclos against the C reference loops, on the same ports,
//! burst size and worker core, interleaved over rounds. The machine is shared and noisy, so
//! the figure that counts is the median over rounds of the per-round ratio to a C loop.
//!
//! Every contender forwards one input port to sinks (`net_null,no-rx=1`) on one worker core
//! (lcore 1) with 64-byte frames. Two sections:
//! - io: ironclos io mode against the C io-forward loop on `net_null` (raw I/O) and `net_pcap`
//!   `infinite_rx=1` inputs of 1 and 8192 IPv4/UDP flows (the MAC-swap and L3 loops are shown
//!   for scale);
//! - switch: ironclos switch mode on L2 (a learned/static MAC), L3v4 (1M routes, 4-way ECMP)
//!   and L3v6 (100k routes), against the C MAC-swap and L3 loops, the L3 loop loading the same
//!   route file. SRv6 uN (a uSID shift, no SRH) and End (an SRH, Segments Left 1 -> 0) run
//!   on the L3v6 setup and are held to the same C L3 loop, End's on IPv4 frames as long as
//!   its own (86 bytes; the ratio to the 60-byte loop is shown too).

use control::pcap::write_pcap_file;
use control::tracegen::{UdpTraceSpec, udp_trace, udp6_trace};
use serde_json::{Value, json};
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

const C_IO_FWD: &str = env!("IRONCLOS_C_IO_FWD");
const C_MACSWAP: &str = env!("IRONCLOS_C_MACSWAP");
const C_L3FWD: &str = env!("IRONCLOS_C_L3FWD");

const USAGE: &str = "\
pps: packets-per-second benchmark of ironclos against C reference loops

usage: pps [--ironclos PATH] [--rounds N] [--seconds S] [--burst N] [--out DIR] [--no-huge]
           [--only io|switch|updates] [--filter TEXT] [--v4-routes N] [--v6-routes N]

  --ironclos PATH  the ironclos binary (default target/release/ironclos)
  --rounds N       interleaved rounds (default 5); the report is the median over rounds
  --seconds S      forwarding time per contender and round (default 3)
  --burst N        RX/TX burst size for every contender (default 32)
  --out DIR        where traces, configs and results.json go (default bench-results)
  --no-huge        run without hugepages even if the machine has them (figures halve)
  --only SECTION   run only the io, switch or updates section (updates: L3v4 forwarding
                   while 10k route updates/s arrive over the control socket, against the
                   same without updates; then the time to load the v4 routes over the API)
  --filter TEXT    run only the cases whose name contains TEXT (e.g. flowlet)
  --v4-routes N    IPv4 routes for the L3v4 case (default 1000000)
  --v6-routes N    IPv6 routes for the L3v6 case (default 100000)
";

struct Options {
    ironclos: PathBuf,
    rounds: usize,
    seconds: f64,
    burst: u32,
    out: PathBuf,
    force_no_huge: bool,
    only: Option<String>,
    /// Run only the cases whose name contains this text.
    filter: Option<String>,
    v4_routes: u32,
    v6_routes: u32,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        ironclos: PathBuf::from("target/release/ironclos"),
        rounds: 5,
        seconds: 3.0,
        burst: 32,
        out: std::path::absolute("bench-results").unwrap_or_else(|_| "bench-results".into()),
        force_no_huge: false,
        only: None,
        filter: None,
        v4_routes: 1_000_000,
        v6_routes: 100_000,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |text: String, name: &str| {
            text.parse::<u64>()
                .map_err(|_| format!("{name}: not a number"))
        };
        match arg.as_str() {
            "--ironclos" => options.ironclos = PathBuf::from(value("--ironclos")?),
            "--rounds" => options.rounds = number(value("--rounds")?, "--rounds")? as usize,
            "--seconds" => {
                options.seconds = value("--seconds")?
                    .parse()
                    .map_err(|_| "--seconds: not a number")?
            }
            "--burst" => options.burst = number(value("--burst")?, "--burst")? as u32,
            // Absolute, because route files in generated configs resolve against the config's
            // directory.
            "--out" => {
                options.out =
                    std::path::absolute(value("--out")?).map_err(|e| format!("--out: {e}"))?
            }
            "--no-huge" => options.force_no_huge = true,
            "--v4-routes" => {
                options.v4_routes = number(value("--v4-routes")?, "--v4-routes")? as u32
            }
            "--v6-routes" => {
                options.v6_routes = number(value("--v6-routes")?, "--v6-routes")? as u32
            }
            "--filter" => options.filter = Some(value("--filter")?),
            "--only" => {
                let section = value("--only")?;
                if !["io", "switch", "updates"].contains(&section.as_str()) {
                    return Err("--only takes io, switch or updates".to_owned());
                }
                options.only = Some(section);
            }
            "-h" | "--help" => {
                print!("{USAGE}");
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    if options.rounds == 0 || options.seconds <= 0.0 || !(1..=64).contains(&options.burst) {
        return Err("rounds and seconds must be positive, burst 1..=64".to_owned());
    }
    Ok(options)
}

/// Free 2 MiB hugepages and a mounted hugetlbfs, as /proc says.
fn hugepages_available() -> bool {
    let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let free = meminfo
        .lines()
        .find_map(|l| l.strip_prefix("HugePages_Free:"))
        .and_then(|v| v.trim().parse::<u64>().ok())
        .unwrap_or(0);
    let mounted = std::fs::read_to_string("/proc/mounts")
        .unwrap_or_default()
        .contains("hugetlbfs");
    free >= 256 && mounted
}

fn eal_memory(huge: bool) -> Vec<String> {
    let mut args: Vec<String> = if huge {
        // Unlinked once mapped: DPDK would leave each run's files, and the pages they hold,
        // in hugetlbfs (ironclos adds this itself; the C loops need it said).
        vec!["-m".into(), "1024".into(), "--huge-unlink".into()]
    } else {
        vec!["--no-huge".into(), "-m".into(), "1536".into()]
    };
    args.extend([
        "--no-pci".into(),
        "--no-telemetry".into(),
        "--log-level=error".into(),
    ]);
    args
}

/// How to run one contender once.
#[derive(Clone)]
enum Runner {
    /// A C loop: binary, input devargs, extra program arguments after `--`.
    C {
        binary: &'static str,
        input: String,
        extra: Vec<String>,
    },
    /// ironclos with a config body (everything but [switch]/[dataplane] headers and EAL); in
    /// switch mode `router` is the router MAC (the trace's destination MAC for L3 cases).
    Ironclos {
        mode: &'static str,
        router: &'static str,
        body: String,
        /// Route updates per second sent over the control socket while forwarding (0: none).
        updates_per_s: u32,
    },
}

struct Env<'a> {
    options: &'a Options,
    huge: bool,
}

const SINK: &str = "net_null1,no-rx=1";
/// The generated traces' destination MAC: the router MAC in the L3 cases.
const TRACE_DST_MAC: &str = "02:00:00:00:00:02";
/// A router MAC that is not in the traces (L2 cases bridge them).
const OTHER_MAC: &str = "02:00:00:00:01:00";

impl Runner {
    fn run(&self, env: &Env<'_>, tag: &str) -> Result<f64, String> {
        let prefix = format!("pps-{tag}");
        let result = match self {
            Runner::C {
                binary,
                input,
                extra,
            } => run_c(binary, input, extra, env, &prefix),
            Runner::Ironclos {
                mode,
                router,
                body,
                updates_per_s,
            } => run_ironclos(mode, router, body, *updates_per_s, env, &prefix),
        };
        let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
        result
    }
}

fn run_c(
    binary: &str,
    input: &str,
    extra: &[String],
    env: &Env<'_>,
    prefix: &str,
) -> Result<f64, String> {
    let mut args: Vec<String> = vec![
        "-l".into(),
        "1".into(),
        "--file-prefix".into(),
        prefix.into(),
    ];
    args.extend(eal_memory(env.huge));
    args.extend([
        "--vdev".into(),
        input.into(),
        "--vdev".into(),
        SINK.into(),
        "--".into(),
    ]);
    args.extend(["--rx-port", "0", "--tx-port", "1"].map(String::from));
    args.extend(["--burst".into(), env.options.burst.to_string()]);
    args.extend(["--duration".into(), env.options.seconds.to_string()]);
    args.extend(extra.iter().cloned());
    let out = Command::new(binary)
        .args(&args)
        .output()
        .map_err(|e| format!("{binary}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{binary} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .ok_or("no JSON line")?;
    let value: Value = serde_json::from_str(line).map_err(|e| format!("{binary}: {e}: {line}"))?;
    value["mpps"]
        .as_f64()
        .ok_or_else(|| format!("{binary}: no mpps in {line}"))
}

fn run_ironclos(
    mode: &str,
    router: &str,
    body: &str,
    updates_per_s: u32,
    env: &Env<'_>,
    prefix: &str,
) -> Result<f64, String> {
    let dir = &env.options.out;
    let config = dir.join(format!("{prefix}.toml"));
    let mut eal = eal_memory(env.huge);
    eal.extend(["--file-prefix".to_owned(), prefix.to_owned()]);
    let eal_list = eal
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let router = if mode == "switch" {
        format!("router_mac = \"{router}\"\n")
    } else {
        String::new()
    };
    // Top-level keys (route_files) come first in the body; everything else are tables.
    let (top, tables) = match body.find("\n[") {
        Some(at) if !body.starts_with('[') => body.split_at(at + 1),
        _ => ("", body),
    };
    let socket = dir.join(format!("{prefix}.sock"));
    let control = if updates_per_s > 0 {
        format!("[control]\nsocket = \"{}\"\n", socket.display())
    } else {
        String::new()
    };
    let text = format!(
        "{top}[switch]\nname = \"bench\"\n{router}[dataplane]\nmode = \"{mode}\"\nmain_lcore = 0\nworker_lcores = [1]\n\
         burst = {}\nmbufs = 16383\neal = [{eal_list}]\n\n{control}{tables}",
        env.options.burst
    );
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let stats = dir.join(format!("{prefix}-stats.json"));
    let child = Command::new(&env.options.ironclos)
        .args(["run", "--config"])
        .arg(&config)
        .arg("--duration")
        .arg(env.options.seconds.to_string())
        .arg("--stats-json")
        .arg(&stats)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", env.options.ironclos.display()))?;
    let updater = (updates_per_s > 0).then(|| {
        let socket = socket.clone();
        std::thread::spawn(move || update_routes(&socket, updates_per_s))
    });
    let out = child
        .wait_with_output()
        .map_err(|e| format!("{}: {e}", env.options.ironclos.display()))?;
    if let Some(updater) = updater {
        let (applied, seconds) = updater.join().unwrap_or((0, 0.0));
        eprintln!(
            "    {applied} route updates applied in {seconds:.2} s ({:.0}/s) while forwarding",
            applied as f64 / seconds.max(1e-9)
        );
        if (applied as f64) < 0.5 * f64::from(updates_per_s) * seconds {
            return Err(format!(
                "only {applied} route updates in {seconds:.2} s: the control plane fell behind"
            ));
        }
    }
    let _ = std::fs::remove_file(&config);
    if !out.status.success() {
        return Err(format!(
            "ironclos failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let _ = std::fs::remove_file(&stats);
    let seconds = value["forwarding_seconds"]
        .as_f64()
        .ok_or("no forwarding_seconds")?;
    let tx: u64 = value["ports"]
        .as_array()
        .ok_or("no ports")?
        .iter()
        .filter_map(|p| p["tx_packets"].as_u64())
        .sum();
    Ok(tx as f64 / seconds / 1e6)
}

/// Sends route updates to a running switch: every 20 ms a batch of `rate / 50` /32 routes
/// under 30.0.0.0/8 (not in the traffic's way, but written into the same tables), added in one
/// batch and deleted in the next. Returns (updates applied, seconds from the first to the
/// last). Stops when the switch goes away.
fn update_routes(socket: &Path, rate: u32) -> (u64, f64) {
    let started = std::time::Instant::now();
    let mut client = loop {
        match control::ctl::Client::connect(socket) {
            Ok(c) => break c,
            Err(_) if started.elapsed() < std::time::Duration::from_secs(60) => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Err(_) => return (0, 0.0),
        }
    };
    // The switch answers once its worker runs.
    while client.call("hello", Default::default()).is_err() {
        if started.elapsed() > std::time::Duration::from_secs(60) {
            return (0, 0.0);
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let per_batch = (rate / 50).max(1);
    let first = std::time::Instant::now();
    let mut applied = 0u64;
    let mut batch = 0u64;
    loop {
        let add = batch.is_multiple_of(2);
        let base = (batch / 2 % 1000) as u32 * per_batch;
        let updates: Vec<Value> = (0..per_batch)
            .map(|i| {
                let ip = std::net::Ipv4Addr::from(0x1e00_0000 + base + i);
                if add {
                    json!({"op": "add_route", "prefix": format!("{ip}/32"), "blackhole": true})
                } else {
                    json!({"op": "del_route", "prefix": format!("{ip}/32")})
                }
            })
            .collect();
        let mut args = serde_json::Map::new();
        args.insert("updates".into(), Value::Array(updates));
        match client.call("update", args) {
            Ok(_) => applied += u64::from(per_batch),
            Err(_) => break,
        }
        batch += 1;
        let due = first + std::time::Duration::from_millis(20 * batch);
        if let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
            std::thread::sleep(wait);
        }
    }
    (applied, first.elapsed().as_secs_f64())
}

/// Loads `count` IPv4 routes into a running switch over its control socket in batches of
/// 10k and returns the seconds it took (the time to a million routes of the issue).
fn load_routes_via_api(options: &Options, huge: bool) -> Result<f64, String> {
    let dir = &options.out;
    let prefix = format!("pps-load-{}", std::process::id());
    let socket = dir.join(format!("{prefix}.sock"));
    let mut eal = eal_memory(huge);
    eal.extend(["--file-prefix".to_owned(), prefix.clone()]);
    let eal_list = eal
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let trace = dir.join("udp-1flow-l3.pcap");
    let body = l3_body(&pcap_input(&trace), &dir.join("routes-none.txt"), false);
    std::fs::write(dir.join("routes-none.txt"), "").map_err(|e| e.to_string())?;
    let (top, tables) = body.split_at(body.find("\n[").map_or(0, |a| a + 1));
    let text = format!(
        "{top}[switch]\nname = \"bench\"\nrouter_mac = \"{TRACE_DST_MAC}\"\n[dataplane]\nmode = \"switch\"\nmain_lcore = 0\n\
         worker_lcores = [1]\nmbufs = 16383\neal = [{eal_list}]\n[control]\nsocket = \"{}\"\n{tables}",
        socket.display()
    );
    let config = dir.join(format!("{prefix}.toml"));
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let mut child = Command::new(&options.ironclos)
        .args(["run", "--config"])
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .map_err(|e| e.to_string())?;
    let result = (|| {
        let started = std::time::Instant::now();
        let mut client = loop {
            if let Ok(mut c) = control::ctl::Client::connect(&socket)
                && c.call("hello", Default::default()).is_ok()
            {
                break c;
            }
            if started.elapsed() > std::time::Duration::from_secs(60) {
                return Err("the switch did not come up".to_owned());
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let routes =
            std::fs::read_to_string(dir.join("routes-v4.txt")).map_err(|e| e.to_string())?;
        let prefixes: Vec<&str> = routes
            .lines()
            .filter_map(|l| l.split_whitespace().next())
            .filter(|p| p.contains('/'))
            .collect();
        let t0 = std::time::Instant::now();
        // Two batches in flight: the switch parses the next while the worker applies one.
        let mut in_flight = 0;
        for chunk in prefixes.chunks(10_000) {
            let updates: Vec<Value> = chunk
                .iter()
                .map(|p| json!({"op": "add_route", "prefix": p, "group": "spines"}))
                .collect();
            let mut args = serde_json::Map::new();
            args.insert("updates".into(), Value::Array(updates));
            client
                .send("update", args)
                .map_err(|e| format!("loading routes: {e}"))?;
            in_flight += 1;
            if in_flight == 2 {
                client
                    .receive()
                    .map_err(|e| format!("loading routes: {e}"))?;
                in_flight -= 1;
            }
        }
        for _ in 0..in_flight {
            client
                .receive()
                .map_err(|e| format!("loading routes: {e}"))?;
        }
        let seconds = t0.elapsed().as_secs_f64();
        println!(
            "route load over the API: {} IPv4 routes in {seconds:.2} s ({:.0} routes/s), batches of 10k, while forwarding",
            prefixes.len(),
            prefixes.len() as f64 / seconds
        );
        Ok(seconds)
    })();
    let _ = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status();
    let _ = child.wait();
    let _ = std::fs::remove_file(&config);
    let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/{prefix}"));
    result
}

/// A comparison: ironclos against one reference, both measured every round.
struct Case {
    section: &'static str,
    name: String,
    ironclos: Runner,
    reference_name: &'static str,
    reference: Runner,
    /// The aim for the median ratio, if any.
    aim: Option<f64>,
}

/// Per-round ratios of one case that differ by more than this (highest over lowest, less
/// one) make the report say the machine is noisy.
const NOISY_SPREAD: f64 = 0.10;

/// Where a case's rounds stand against its aim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AgainstAim {
    /// The case has no aim.
    NoAim,
    /// Every round's ratio is at or above the aim.
    Met,
    /// Every round's ratio is below the aim.
    Below,
    /// Some rounds on each side: run-to-run noise is larger than the distance to the aim.
    Mixed,
}

impl AgainstAim {
    fn as_str(self) -> &'static str {
        match self {
            AgainstAim::NoAim => "",
            AgainstAim::Met => "met",
            AgainstAim::Below => "below",
            AgainstAim::Mixed => "mixed",
        }
    }
}

/// Where rounds whose ratios lie in `lowest..=highest` stand against `aim`.
fn against_aim(lowest: f64, highest: f64, aim: Option<f64>) -> AgainstAim {
    match aim {
        None => AgainstAim::NoAim,
        Some(aim) if lowest >= aim => AgainstAim::Met,
        Some(aim) if highest < aim => AgainstAim::Below,
        Some(_) => AgainstAim::Mixed,
    }
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n == 0 {
        return f64::NAN;
    }
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The ratio of ironclos's best round to the reference's best round. Interference on a shared
/// machine only ever slows a run down, so each side's fastest round is the one least
/// disturbed, and their ratio is the steadiest estimate a noisy machine gives (it needs no
/// two contenders to have been disturbed alike in the same round). A second view beside the
/// median of per-round ratios, which the aims are judged on.
fn best_ratio(ours: &[f64], theirs: &[f64]) -> f64 {
    let best = |values: &[f64]| values.iter().copied().fold(f64::NAN, f64::max);
    best(ours) / best(theirs)
}

/// Deterministic xorshift64* for route tables.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

/// `count` distinct IPv4 prefixes outside 10.0.0.0/8 (the bench's own interfaces), about 97%
/// /24 and the rest /25../32, each to the `spines` group. The C L3 loop reads the same file.
fn write_v4_routes(path: &Path, count: u32) -> std::io::Result<()> {
    let mut rng = Rng(0x1c10_5eed);
    let mut seen = std::collections::HashSet::with_capacity(count as usize);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    while seen.len() < count as usize {
        let r = rng.next();
        let first = 11 + (r % 212) as u32; // 11..=222
        let len = if (r >> 8) % 100 < 97 {
            24
        } else {
            25 + ((r >> 16) % 8) as u32
        };
        let bits = (first << 24) | ((r >> 24) as u32 & 0x00ff_ffff);
        let prefix = bits & (u32::MAX << (32 - len));
        if seen.insert((prefix, len)) {
            let [a, b, c, d] = prefix.to_be_bytes();
            writeln!(out, "{a}.{b}.{c}.{d}/{len} group spines")?;
        }
    }
    out.flush()
}

/// `count` distinct IPv6 prefixes inside 2001:db8::/32 (/48s and /64s) to `spines`.
fn write_v6_routes(path: &Path, count: u32) -> std::io::Result<()> {
    let mut rng = Rng(0x6e6e_5eed);
    let mut seen = std::collections::HashSet::with_capacity(count as usize);
    let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
    while seen.len() < count as usize {
        let r = rng.next();
        let len = if r.is_multiple_of(4) { 64 } else { 48 };
        let high = 0x2001_0db8_u128 << 96 | (u128::from(r >> 8) << 32);
        let prefix = high & (u128::MAX << (128 - len));
        if seen.insert((prefix, len)) {
            writeln!(
                out,
                "{}/{len} group spines",
                std::net::Ipv6Addr::from(prefix)
            )?;
        }
    }
    out.flush()
}

/// The QoS case's profile: ECN (RED) on TC 0, which the trace's DSCP 0 maps to.
const QOS_PROFILE: &str =
    "[qos.bench]\n[qos.bench.tc.0]\necn = { kmin = \"100KB\", kmax = \"400KB\", pmax = 0.2 }\n";

/// Config body of the switch-mode L3 cases: a routed ingress port, four routed uplinks to
/// static neighbours in one ECMP group, default routes, and a route file. With `qos`, every
/// port takes `QOS_PROFILE` and an unlimited shaper (the "QoS path" case).
fn l3_body(input: &str, routes: &Path, qos: bool) -> String {
    // Top-level keys must precede every [table] in TOML: run_ironclos puts this line first.
    let route_files = format!("route_files = [\"{}\"]\n", routes.display());
    let mut body = String::new();
    body.push_str(
        "[[nexthop_group]]\nname = \"spines\"\nmembers = [{ port = \"up1\", via = \"10.255.0.0\" }, \
         { port = \"up2\", via = \"10.255.0.2\" }, { port = \"up3\", via = \"10.255.0.4\" }, { port = \"up4\", via = \"10.255.0.6\" }]\n\
         [[route]]\nprefix = \"0.0.0.0/0\"\ngroup = \"spines\"\n[[route]]\nprefix = \"::/0\"\ngroup = \"spines\"\n",
    );
    for i in 0..4 {
        let _ = write!(
            body,
            "[[neighbor]]\nip = \"10.255.0.{}\"\nmac = \"02:00:00:00:51:0{}\"\nport = \"up{}\"\n",
            2 * i,
            i + 1,
            i + 1
        );
    }
    let port_qos = if qos {
        "qos = \"bench\"\nshaper = false\n"
    } else {
        ""
    };
    let _ = write!(
        body,
        "[[port]]\nname = \"in\"\ndevargs = \"{input}\"\nipv4 = [\"10.0.1.254/24\"]\nipv6 = [\"2001:db8:1::fffe/64\"]\n{port_qos}"
    );
    for i in 0..4 {
        let _ = write!(
            body,
            "[[port]]\nname = \"up{}\"\ndevargs = \"net_null{},no-rx=1\"\nipv4 = [\"10.255.0.{}/31\"]\n{port_qos}",
            i + 1,
            i + 1,
            2 * i + 1
        );
    }
    if qos {
        body.push_str(QOS_PROFILE);
    }
    route_files + "\n" + &body
}

/// `body` with balancing keys added to its `spines` group (they follow its members line).
fn with_group_keys(body: &str, keys: &str) -> String {
    let members_end = body
        .find("[[route]]")
        .expect("the L3 body has a route after its group");
    format!("{}{keys}{}", &body[..members_end], &body[members_end..])
}

/// Config body of the L2 case: both ports in VLAN 10, the trace's destination MAC pinned to
/// the sink port (the source MAC is learned on every packet).
fn l2_body(input: &str) -> String {
    format!(
        "[[vlan]]\nid = 10\n[[mac]]\nvlan = 10\nmac = \"02:00:00:00:00:02\"\nport = \"sink\"\n\
         [[port]]\nname = \"in\"\ndevargs = \"{input}\"\nvlan = {{ mode = \"access\", id = 10 }}\n\
         [[port]]\nname = \"sink\"\ndevargs = \"{SINK}\"\nvlan = {{ mode = \"access\", id = 10 }}\n"
    )
}

fn io_body(input: &str) -> String {
    format!(
        "[[port]]\nname = \"in\"\ndevargs = \"{input}\"\n\n[[port]]\nname = \"sink\"\ndevargs = \"{SINK}\"\n"
    )
}

fn pcap_input(path: &Path) -> String {
    format!("net_pcap0,rx_pcap={},infinite_rx=1", path.display())
}

fn write_trace(path: &Path, packets: &[control::pcap::PcapPacket]) -> Result<(), String> {
    write_pcap_file(path, packets).map_err(|e| format!("{}: {e}", path.display()))
}

/// SRv6 traces from the IPv6/UDP one: `un` sends every flow to the uSID container
/// fcbb:bb00:100:200:: (the switch's uN shifts it to fcbb:bb00:200::); otherwise an SRH with
/// one segment (fcbb:bb00:200::, Segments Left 1) is inserted and the destination is the End
/// SID 2001:db8:5::1 (24 bytes more per frame). UDP checksums are not updated: the switch does
/// not read them.
fn srv6_trace(spec: &UdpTraceSpec, un: bool) -> Vec<control::pcap::PcapPacket> {
    let next_sid: [u8; 16] = [0xfc, 0xbb, 0xbb, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    let container: [u8; 16] = [
        0xfc, 0xbb, 0xbb, 0, 0x01, 0, 0x02, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    ];
    let end_sid: [u8; 16] = [0x20, 0x01, 0x0d, 0xb8, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1];
    udp6_trace(spec)
        .into_iter()
        .map(|mut packet| {
            let f = &mut packet.data;
            if un {
                f[38..54].copy_from_slice(&container);
            } else {
                let payload = u16::from_be_bytes([f[18], f[19]]) + 24;
                f[18..20].copy_from_slice(&payload.to_be_bytes());
                let upper = f[20];
                f[20] = 43;
                f[38..54].copy_from_slice(&end_sid);
                let mut srh = vec![upper, 2, 4, 1, 0, 0, 0, 0];
                srh.extend_from_slice(&next_sid);
                f.splice(54..54, srh);
            }
            packet
        })
        .collect()
}

const SRV6_SIDS: &str = "[[srv6.sid]]\nprefix = \"fcbb:bb00:100::/48\"\nbehavior = \"uN\"\n\
                         [[srv6.sid]]\nprefix = \"2001:db8:5::1/128\"\nbehavior = \"End\"\n";

fn build_cases(options: &Options) -> Result<Vec<Case>, String> {
    let dir = &options.out;
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    // 8192 packets in every trace, so each preloads the same number of mbufs.
    let v4 = |flows: u32, spread_dst: bool| UdpTraceSpec {
        flows,
        packets: 8192,
        frame_len: 60,
        spread_dst,
        ..Default::default()
    };
    let trace1 = dir.join("udp-1flow.pcap");
    let trace8k = dir.join("udp-8192flows.pcap");
    let l3_1 = dir.join("udp-1flow-l3.pcap");
    let l3_8k = dir.join("udp-8192flows-l3.pcap");
    let v6_8k = dir.join("udp6-8192flows.pcap");
    write_trace(&trace1, &udp_trace(&v4(1, false)))?;
    write_trace(&trace8k, &udp_trace(&v4(8192, false)))?;
    let mut l3_spec = v4(1, true);
    l3_spec.dst_ip = [20, 0, 0, 1]; // outside the bench's own 10.0.0.0/8 interfaces
    write_trace(&l3_1, &udp_trace(&l3_spec))?;
    l3_spec.flows = 8192;
    write_trace(&l3_8k, &udp_trace(&l3_spec))?;
    let v6_spec = UdpTraceSpec {
        flows: 8192,
        packets: 8192,
        frame_len: 62,
        ..Default::default()
    };
    write_trace(&v6_8k, &udp6_trace(&v6_spec))?;

    let mut cases = Vec::new();
    let c = |binary: &'static str, input: String, extra: Vec<String>| Runner::C {
        binary,
        input,
        extra,
    };
    let section = |name: &str| options.only.as_deref().is_none_or(|only| only == name);
    if section("io") {
        for (name, input) in [
            ("io null", "net_null0".to_owned()),
            ("io pcap 1 flow", pcap_input(&trace1)),
            ("io pcap 8192 flows", pcap_input(&trace8k)),
        ] {
            cases.push(Case {
                section: "io",
                name: name.to_owned(),
                ironclos: Runner::Ironclos {
                    mode: "io",
                    router: "",
                    body: io_body(&input),
                    updates_per_s: 0,
                },
                reference_name: "c-io",
                reference: c(C_IO_FWD, input.clone(), vec![]),
                aim: Some(0.90),
            });
        }
    }
    let v4_routes = dir.join("routes-v4.txt");
    if section("switch") || section("updates") {
        write_v4_routes(&v4_routes, options.v4_routes).map_err(|e| e.to_string())?;
    }
    if section("updates") {
        let body = l3_body(&pcap_input(&l3_8k), &v4_routes, false);
        let runner = |updates_per_s| Runner::Ironclos {
            mode: "switch",
            router: TRACE_DST_MAC,
            body: body.clone(),
            updates_per_s,
        };
        cases.push(Case {
            section: "updates",
            name: format!(
                "L3v4 {}k routes 8192 flows + 10k updates/s",
                options.v4_routes / 1000
            ),
            ironclos: runner(10_000),
            reference_name: "ironclos, no updates",
            reference: runner(0),
            aim: Some(0.90),
        });
    }
    if section("switch") {
        let v6_routes = dir.join("routes-v6.txt");
        write_v6_routes(&v6_routes, options.v6_routes).map_err(|e| e.to_string())?;
        let routes_arg = vec!["--routes-file".to_owned(), v4_routes.display().to_string()];
        for (flows, trace) in [(1, &trace1), (8192, &trace8k)] {
            let input = pcap_input(trace);
            cases.push(Case {
                section: "switch",
                name: format!("L2 {flows} flow(s)"),
                ironclos: Runner::Ironclos {
                    mode: "switch",
                    router: OTHER_MAC,
                    body: l2_body(&input),
                    updates_per_s: 0,
                },
                reference_name: "c-macswap",
                reference: c(C_MACSWAP, input.clone(), vec![]),
                aim: Some(0.70),
            });
        }
        for (flows, trace, aim) in [(1, &l3_1, 0.70), (8192, &l3_8k, 0.60)] {
            let input = pcap_input(trace);
            cases.push(Case {
                section: "switch",
                name: format!(
                    "L3v4 {}k routes ECMP4 {flows} flow(s)",
                    options.v4_routes / 1000
                ),
                ironclos: Runner::Ironclos {
                    mode: "switch",
                    router: TRACE_DST_MAC,
                    body: l3_body(&input, &v4_routes, false),
                    updates_per_s: 0,
                },
                reference_name: "c-l3",
                reference: c(C_L3FWD, input.clone(), routes_arg.clone()),
                aim: Some(aim),
            });
        }
        cases.push(Case {
            section: "switch",
            name: format!("L3v6 {}k routes ECMP4 8192 flows", options.v6_routes / 1000),
            ironclos: Runner::Ironclos {
                mode: "switch",
                router: TRACE_DST_MAC,
                body: l3_body(&pcap_input(&v6_8k), &v6_routes, false),
                updates_per_s: 0,
            },
            reference_name: "c-l3 (v4, same v4 route table)",
            reference: c(C_L3FWD, pcap_input(&l3_8k), routes_arg.clone()),
            aim: Some(0.50),
        });
        // ECMP with flowlets against the same ECMP group hashing (the aim: within
        // 10%). 8192 flows at millions of packets per second put more than the 100 us timeout
        // between two packets of a flow, so nearly every packet starts a flowlet: this is
        // the cost of the choice, not only of the table.
        for choice in ["random", "least-loaded"] {
            cases.push(Case {
                section: "switch",
                name: format!(
                    "L3v4 {}k routes ECMP4 flowlet {choice} 8192 flows",
                    options.v4_routes / 1000
                ),
                ironclos: Runner::Ironclos {
                    mode: "switch",
                    router: TRACE_DST_MAC,
                    body: with_group_keys(
                        &l3_body(&pcap_input(&l3_8k), &v4_routes, false),
                        &format!("mode = \"flowlet\"\nchoice = \"{choice}\"\n"),
                    ),
                    updates_per_s: 0,
                },
                reference_name: "ironclos ECMP4 hash",
                reference: Runner::Ironclos {
                    mode: "switch",
                    router: TRACE_DST_MAC,
                    body: l3_body(&pcap_input(&l3_8k), &v4_routes, false),
                    updates_per_s: 0,
                },
                aim: Some(0.90),
            });
        }
        cases.push(Case {
            section: "switch",
            name: format!(
                "QoS L3v4 {}k routes ECMP4 8192 flows, ECN, unshaped",
                options.v4_routes / 1000
            ),
            ironclos: Runner::Ironclos {
                mode: "switch",
                router: TRACE_DST_MAC,
                body: l3_body(&pcap_input(&l3_8k), &v4_routes, true),
                updates_per_s: 0,
            },
            reference_name: "c-l3",
            reference: c(C_L3FWD, pcap_input(&l3_8k), routes_arg.clone()),
            aim: Some(0.45),
        });
        // The End frame carries an SRH, so it is 24 bytes longer than the uN one: 86 bytes,
        // two cache lines, which costs the input PMD's copy (and so every contender) about
        // 16% of the C L3 loop's rate by itself. End is held to the C L3 loop forwarding IPv4
        // frames of its own length, so that the ratio measures forwarding work; the ratio to
        // the 64-byte loop is shown beside it, without an aim.
        let end_len = srv6_trace(&v6_spec, false)
            .first()
            .map_or(86, |p| p.data.len());
        let l3_8k_end_len = dir.join(format!("udp-8192flows-l3-{end_len}.pcap"));
        l3_spec.frame_len = end_len;
        write_trace(&l3_8k_end_len, &udp_trace(&l3_spec))?;
        for (name, un, reference_name, reference_trace, aim) in [
            (
                "SRv6 uN (shift)".to_owned(),
                true,
                "c-l3 (v4, same v4 route table)",
                &l3_8k,
                Some(0.50),
            ),
            (
                format!("SRv6 End (SRH, {end_len}-byte frames)"),
                false,
                "c-l3 (v4 frames of End's length)",
                &l3_8k_end_len,
                Some(0.50),
            ),
            (
                format!("SRv6 End (SRH, {end_len}-byte frames) vs 60-byte c-l3"),
                false,
                "c-l3 (v4, 60-byte frames)",
                &l3_8k,
                None,
            ),
        ] {
            let trace = dir.join(if un { "srv6-un.pcap" } else { "srv6-end.pcap" });
            write_trace(&trace, &srv6_trace(&v6_spec, un))?;
            cases.push(Case {
                section: "switch",
                name: format!(
                    "{name} {}k v6 routes ECMP4 8192 flows",
                    options.v6_routes / 1000
                ),
                ironclos: Runner::Ironclos {
                    mode: "switch",
                    router: TRACE_DST_MAC,
                    body: l3_body(&pcap_input(&trace), &v6_routes, false) + SRV6_SIDS,
                    updates_per_s: 0,
                },
                reference_name,
                reference: c(C_L3FWD, pcap_input(reference_trace), routes_arg.clone()),
                aim,
            });
        }
    }
    if let Some(text) = &options.filter {
        cases.retain(|c| c.name.contains(text.as_str()));
    }
    Ok(cases)
}

fn main() {
    let options = match parse_options() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("pps: {e}");
            std::process::exit(2);
        }
    };
    if !options.ironclos.exists() {
        eprintln!(
            "pps: {} not found: build it with `cargo build --release -p control`",
            options.ironclos.display()
        );
        std::process::exit(2);
    }
    let huge = !options.force_no_huge && hugepages_available();
    let cases = match build_cases(&options) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pps: cannot prepare inputs: {e}");
            std::process::exit(1);
        }
    };
    let env = Env {
        options: &options,
        huge,
    };
    println!(
        "pps: {} rounds x {} s, burst {}, one worker on lcore 1, 64-byte frames, {}",
        options.rounds,
        options.seconds,
        options.burst,
        if huge {
            "hugepages"
        } else {
            "NO hugepages (--no-huge roughly halves every figure)"
        }
    );

    // samples[case] = (ironclos Mpps per round, reference Mpps per round).
    let mut samples: Vec<(Vec<f64>, Vec<f64>)> = vec![(Vec::new(), Vec::new()); cases.len()];
    for round in 0..options.rounds {
        for (index, case) in cases.iter().enumerate() {
            // Alternate which contender goes first, so neither always meets a warm cache or a
            // quiet neighbour.
            let order: [bool; 2] = if (round + index) % 2 == 0 {
                [true, false]
            } else {
                [false, true]
            };
            for ironclos_turn in order {
                let (runner, label) = if ironclos_turn {
                    (&case.ironclos, "ironclos")
                } else {
                    (&case.reference, case.reference_name)
                };
                let tag = format!(
                    "{}-{round}-{index}-{}",
                    std::process::id(),
                    u8::from(ironclos_turn)
                );
                match runner.run(&env, &tag) {
                    Ok(mpps) => {
                        eprintln!(
                            "round {round} {:<36} {:<32} {:>7.2} Mpps",
                            case.name, label, mpps
                        );
                        if ironclos_turn {
                            samples[index].0.push(mpps);
                        } else {
                            samples[index].1.push(mpps);
                        }
                    }
                    Err(e) => {
                        eprintln!("pps: round {round} {} {label}: {e}", case.name);
                        std::process::exit(1);
                    }
                }
            }
        }
    }

    // Columns as wide as the longest case and reference names, so the figures line up.
    let name_width = cases.iter().map(|c| c.name.len()).max().unwrap_or(0).max(4);
    let reference_width = cases
        .iter()
        .map(|c| c.reference_name.len())
        .max()
        .unwrap_or(0)
        .max(9);
    println!(
        "\n{:<name_width$} {:>9} {:>9}  {:<reference_width$} {:>7} {:>13} {:>6}  {:<13} best/best",
        "case", "ironclos", "ref", "reference", "ratio", "round range", "aim", "rounds vs aim"
    );
    let mut results = Vec::new();
    let mut widest_spread: f64 = 0.0;
    for (case, (ours, theirs)) in cases.iter().zip(&samples) {
        let mut ratios: Vec<f64> = ours.iter().zip(theirs).map(|(a, b)| a / b).collect();
        let ratio = median(&mut ratios);
        let lowest = ratios.iter().copied().fold(f64::INFINITY, f64::min);
        let highest = ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        widest_spread = widest_spread.max(highest / lowest - 1.0);
        let standing = against_aim(lowest, highest, case.aim);
        let ours_median = median(&mut ours.clone());
        let theirs_median = median(&mut theirs.clone());
        let best = best_ratio(ours, theirs);
        println!(
            "{:<name_width$} {:>9.2} {:>9.2}  {:<reference_width$} {:>7.3} {:>13} {:>6}  {:<13} {:>9.3}",
            case.name,
            ours_median,
            theirs_median,
            case.reference_name,
            ratio,
            format!("{lowest:.3}-{highest:.3}"),
            case.aim.map_or(String::new(), |a| format!("{a:.2}")),
            standing.as_str(),
            best
        );
        results.push(json!({
            "section": case.section,
            "case": case.name,
            "reference": case.reference_name,
            "ironclos_mpps_samples": ours,
            "reference_mpps_samples": theirs,
            "ironclos_mpps_median": ours_median,
            "reference_mpps_median": theirs_median,
            "median_ratio": ratio,
            "lowest_ratio": lowest,
            "highest_ratio": highest,
            "best_ratio": best,
            "aim": case.aim,
            "rounds_vs_aim": standing.as_str(),
        }));
    }
    println!(
        "(Mpps are medians over rounds; the ratio is the median of per-round ratios, the range \
         their lowest and highest. Rounds vs aim: every round at or above the aim (met), every \
         round below it (below), or some on each side (mixed), where noise is larger than the \
         distance to the aim. Best/best: ironclos's fastest round over the reference's fastest, \
         the least disturbed of each; on a noisy machine the steadier view, not the one the aims \
         are judged on.)"
    );
    if widest_spread > NOISY_SPREAD {
        println!(
            "Per-round ratios of one case differ by up to {:.0}%: this machine is noisy (shared \
             host, other load); more rounds (--rounds) steady the medians.",
            widest_spread * 100.0
        );
    }
    let summary = json!({
        "rounds": options.rounds,
        "seconds": options.seconds,
        "burst": options.burst,
        "hugepages": huge,
        "results": results,
    });
    let mut summary = summary;
    if options.only.as_deref().is_none_or(|only| only == "updates") {
        match load_routes_via_api(&options, huge) {
            Ok(seconds) => summary["route_load_seconds"] = json!(seconds),
            Err(e) => eprintln!("pps: route load: {e}"),
        }
    }
    let path = options.out.join("results.json");
    match std::fs::write(
        &path,
        serde_json::to_string_pretty(&summary).expect("JSON") + "\n",
    ) {
        Ok(()) => println!("results: {}", path.display()),
        Err(e) => eprintln!("pps: cannot write {}: {e}", path.display()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_case_meets_its_aim_only_when_every_round_does() {
        assert_eq!(against_aim(0.91, 0.95, Some(0.90)), AgainstAim::Met);
        // A round exactly at the aim meets it (the aims read "at least").
        assert_eq!(against_aim(0.90, 0.95, Some(0.90)), AgainstAim::Met);
        assert_eq!(against_aim(0.85, 0.89, Some(0.90)), AgainstAim::Below);
        assert_eq!(against_aim(0.85, 0.95, Some(0.90)), AgainstAim::Mixed);
        assert_eq!(against_aim(0.85, 0.90, Some(0.90)), AgainstAim::Mixed);
        assert_eq!(against_aim(0.5, 0.6, None), AgainstAim::NoAim);
    }

    #[test]
    fn the_best_ratio_divides_each_sides_fastest_round() {
        // Round by round the ratios are 0.5, 1.5 and 0.75; the fastest rounds are 3 and 4.
        assert_eq!(best_ratio(&[1.0, 3.0, 3.0], &[2.0, 2.0, 4.0]), 0.75);
        // Each side's best may come from a different round (ratios 2.0 and 0.25).
        assert_eq!(best_ratio(&[2.0, 1.0], &[1.0, 4.0]), 0.5);
        assert!(best_ratio(&[], &[1.0]).is_nan());
    }

    #[test]
    fn the_median_of_an_even_count_is_the_mean_of_the_middle_two() {
        assert_eq!(median(&mut [3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
        assert!(median(&mut []).is_nan());
    }
}
