//! Packets-per-second benchmark: ironclos against the C reference loops, on the same ports,
//! burst size and worker core, interleaved over rounds. The machine is shared and noisy, so
//! the figure that counts is the median over rounds of the per-round ratio to a C loop.
//!
//! Every contender forwards one input port to one output port (`net_null1,no-rx=1`), on one
//! worker core (lcore 1), with 64-byte frames. Inputs: `net_null` (raw I/O, no real headers)
//! and `net_pcap` with `infinite_rx=1` over generated IPv4/UDP traces of 1 and 8192 flows.

use control::pcap::write_pcap_file;
use control::tracegen::{UdpTraceSpec, udp_trace};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const C_IO_FWD: &str = env!("IRONCLOS_C_IO_FWD");
const C_MACSWAP: &str = env!("IRONCLOS_C_MACSWAP");
const C_L3FWD: &str = env!("IRONCLOS_C_L3FWD");

const USAGE: &str = "\
pps: packets-per-second benchmark of ironclos against C reference loops

usage: pps [--ironclos PATH] [--rounds N] [--seconds S] [--burst N] [--out DIR] [--no-huge]

  --ironclos PATH  the ironclos binary (default target/release/ironclos)
  --rounds N       interleaved rounds (default 5); the report is the median over rounds
  --seconds S      forwarding time per contender and round (default 3)
  --burst N        RX/TX burst size for every contender (default 32)
  --out DIR        where traces, configs and results.json go (default bench-results)
  --no-huge        run without hugepages even if the machine has them (figures halve)
";

struct Options {
    ironclos: PathBuf,
    rounds: usize,
    seconds: f64,
    burst: u32,
    out: PathBuf,
    force_no_huge: bool,
}

fn parse_options() -> Result<Options, String> {
    let mut options = Options {
        ironclos: PathBuf::from("target/release/ironclos"),
        rounds: 5,
        seconds: 3.0,
        burst: 32,
        out: PathBuf::from("bench-results"),
        force_no_huge: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--ironclos" => options.ironclos = PathBuf::from(value("--ironclos")?),
            "--rounds" => {
                options.rounds = value("--rounds")?
                    .parse()
                    .map_err(|_| "--rounds: not a number")?
            }
            "--seconds" => {
                options.seconds = value("--seconds")?
                    .parse()
                    .map_err(|_| "--seconds: not a number")?
            }
            "--burst" => {
                options.burst = value("--burst")?
                    .parse()
                    .map_err(|_| "--burst: not a number")?
            }
            "--out" => options.out = PathBuf::from(value("--out")?),
            "--no-huge" => options.force_no_huge = true,
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

/// One input arrangement.
struct Workload {
    name: &'static str,
    /// devargs of the input port (port 0); port 1 is always a sink.
    input: String,
    /// Whether frames carry real headers (net_null's are all zeros: an L3 loop drops them).
    real_headers: bool,
}

const SINK: &str = "net_null1,no-rx=1";

/// One measured run.
#[derive(Debug, Clone)]
struct Sample {
    mpps: f64,
}

fn eal_memory(huge: bool) -> Vec<String> {
    if huge {
        vec!["-m".into(), "512".into(), "--no-pci".into()]
    } else {
        vec![
            "--no-huge".into(),
            "-m".into(),
            "1024".into(),
            "--no-pci".into(),
        ]
    }
}

fn run_c_loop(
    binary: &str,
    workload: &Workload,
    options: &Options,
    huge: bool,
    tag: &str,
) -> Result<Sample, String> {
    let mut args: Vec<String> = vec![
        "-l".into(),
        "1".into(),
        "--file-prefix".into(),
        format!("pps-{tag}"),
    ];
    args.extend(eal_memory(huge));
    args.extend([
        "--no-telemetry".to_owned(),
        "--log-level=error".to_owned(),
        "--vdev".to_owned(),
        workload.input.clone(),
        "--vdev".to_owned(),
        SINK.to_owned(),
        "--".to_owned(),
        "--rx-port".into(),
        "0".into(),
        "--tx-port".into(),
        "1".into(),
        "--burst".into(),
        options.burst.to_string(),
        "--duration".into(),
        options.seconds.to_string(),
    ]);
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
    let mpps = value["mpps"]
        .as_f64()
        .ok_or_else(|| format!("{binary}: no mpps in {line}"))?;
    Ok(Sample { mpps })
}

fn run_ironclos(
    workload: &Workload,
    options: &Options,
    huge: bool,
    tag: &str,
) -> Result<Sample, String> {
    let dir = &options.out;
    let config = dir.join(format!("ironclos-{}.toml", workload.name));
    let mut eal = eal_memory(huge);
    eal.extend([
        "--no-telemetry".to_owned(),
        "--log-level=error".to_owned(),
        "--file-prefix".to_owned(),
        format!("pps-{tag}"),
    ]);
    let eal_list = eal
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    let text = format!(
        "[switch]\nname = \"bench\"\n[dataplane]\nmode = \"io\"\nmain_lcore = 0\nworker_lcores = [1]\nburst = {}\nmbufs = 16383\n\
         eal = [{eal_list}]\n\n[[port]]\nname = \"in\"\ndevargs = \"{}\"\n\n[[port]]\nname = \"sink\"\ndevargs = \"{SINK}\"\n",
        options.burst, workload.input
    );
    std::fs::write(&config, text).map_err(|e| e.to_string())?;
    let stats = dir.join("ironclos-stats.json");
    let out = Command::new(&options.ironclos)
        .args(["run", "--config"])
        .arg(&config)
        .arg("--duration")
        .arg(options.seconds.to_string())
        .arg("--stats-json")
        .arg(&stats)
        .output()
        .map_err(|e| format!("{}: {e}", options.ironclos.display()))?;
    if !out.status.success() {
        return Err(format!(
            "ironclos failed: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let value: Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).map_err(|e| e.to_string())?)
            .map_err(|e| e.to_string())?;
    let seconds = value["forwarding_seconds"]
        .as_f64()
        .ok_or("no forwarding_seconds")?;
    let tx: u64 = value["ports"]
        .as_array()
        .ok_or("no ports")?
        .iter()
        .filter_map(|p| p["tx_packets"].as_u64())
        .sum();
    Ok(Sample {
        mpps: tx as f64 / seconds / 1e6,
    })
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

fn write_traces(dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    std::fs::create_dir_all(dir).map_err(|e| e.to_string())?;
    let mut paths = Vec::new();
    for flows in [1u32, 8192] {
        // 8192 packets either way, so both inputs preload the same number of mbufs.
        let spec = UdpTraceSpec {
            flows,
            packets: 8192,
            frame_len: 60,
            ..Default::default()
        };
        let path = dir.join(format!("udp-{flows}flows.pcap"));
        write_pcap_file(&path, &udp_trace(&spec)).map_err(|e| e.to_string())?;
        paths.push(path);
    }
    Ok((paths[0].clone(), paths[1].clone()))
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
    let (one_flow, many_flows) = match write_traces(&options.out) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("pps: cannot write traces: {e}");
            std::process::exit(1);
        }
    };
    let workloads = [
        Workload {
            name: "null",
            input: "net_null0".to_owned(),
            real_headers: false,
        },
        Workload {
            name: "pcap-1flow",
            input: format!("net_pcap0,rx_pcap={},infinite_rx=1", one_flow.display()),
            real_headers: true,
        },
        Workload {
            name: "pcap-8192flows",
            input: format!("net_pcap0,rx_pcap={},infinite_rx=1", many_flows.display()),
            real_headers: true,
        },
    ];
    let contenders: [(&str, Option<&str>); 4] = [
        ("ironclos-io", None),
        ("c-io", Some(C_IO_FWD)),
        ("c-macswap", Some(C_MACSWAP)),
        ("c-l3", Some(C_L3FWD)),
    ];
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

    // samples[workload][contender] = Mpps per round.
    let mut samples = vec![vec![Vec::<f64>::new(); contenders.len()]; workloads.len()];
    for round in 0..options.rounds {
        for (w, workload) in workloads.iter().enumerate() {
            // Rotate the order each round so no contender always runs first (warm caches,
            // turbo state, a noisy neighbour's schedule).
            for k in 0..contenders.len() {
                let c = (k + round) % contenders.len();
                let (name, binary) = contenders[c];
                if name == "c-l3" && !workload.real_headers {
                    continue;
                }
                let tag = format!("{}-{round}-{w}-{c}", std::process::id());
                let sample = match binary {
                    None => run_ironclos(workload, &options, huge, &tag),
                    Some(binary) => run_c_loop(binary, workload, &options, huge, &tag),
                };
                let _ = std::fs::remove_dir_all(format!("/var/run/dpdk/pps-{tag}"));
                match sample {
                    Ok(s) => {
                        eprintln!(
                            "round {round} {:<15} {:<12} {:>7.2} Mpps",
                            workload.name, name, s.mpps
                        );
                        samples[w][c].push(s.mpps);
                    }
                    Err(e) => {
                        eprintln!("pps: round {round} {} {name}: {e}", workload.name);
                        std::process::exit(1);
                    }
                }
            }
        }
    }

    let ratio_to = |w: usize, of: usize, to: usize| -> f64 {
        let mut ratios: Vec<f64> = samples[w][of]
            .iter()
            .zip(&samples[w][to])
            .map(|(a, b)| a / b)
            .collect();
        median(&mut ratios)
    };
    println!(
        "\n{:<16} {:>12} {:>10} {:>12} {:>8}   {:>14}",
        "workload", "ironclos-io", "c-io", "c-macswap", "c-l3", "ironclos/c-io"
    );
    let mut results = Vec::new();
    for (w, workload) in workloads.iter().enumerate() {
        let medians: Vec<f64> = (0..contenders.len())
            .map(|c| median(&mut samples[w][c].clone()))
            .collect();
        let ratio = ratio_to(w, 0, 1);
        let cell = |m: f64| {
            if m.is_nan() {
                "n/a".to_owned()
            } else {
                format!("{m:.2}")
            }
        };
        println!(
            "{:<16} {:>12} {:>10} {:>12} {:>8}   {:>14.3}",
            workload.name,
            cell(medians[0]),
            cell(medians[1]),
            cell(medians[2]),
            cell(medians[3]),
            ratio
        );
        results.push(json!({
            "workload": workload.name,
            "median_mpps": contenders.iter().zip(&medians).map(|((n, _), m)| (n.to_string(), json!(m))).collect::<serde_json::Map<_, _>>(),
            "samples_mpps": contenders.iter().enumerate().map(|(c, (n, _))| (n.to_string(), json!(samples[w][c]))).collect::<serde_json::Map<_, _>>(),
            "median_ratio_ironclos_io_to_c_io": ratio,
        }));
    }
    println!("(Mpps are medians over rounds; the ratio is the median of per-round ratios.)");
    let summary = json!({
        "rounds": options.rounds,
        "seconds": options.seconds,
        "burst": options.burst,
        "hugepages": huge,
        "results": results,
    });
    let path = options.out.join("results.json");
    if let Err(e) = std::fs::write(
        &path,
        serde_json::to_string_pretty(&summary).expect("JSON") + "\n",
    ) {
        eprintln!("pps: cannot write {}: {e}", path.display());
    } else {
        println!("results: {}", path.display());
    }
}
