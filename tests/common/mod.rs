//! Harness for end-to-end tests: writes traces and a config into a private directory, runs
//! the real `ironclos` binary on DPDK vdevs without hugepages, and reads back its output
//! pcaps and JSON counters.
//!
//! DPDK tests busy-poll a core each and this machine has two, so every run takes a
//! machine-wide file lock: tests run one at a time even across test binaries.

#![allow(dead_code)]

pub mod frames;
pub mod netns;

use control::pcap::{self, PcapPacket};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

static NEXT_ID: AtomicU32 = AtomicU32::new(0);

/// Where a test's files live; removed on drop unless IRONCLOS_KEEP_TEST_FILES is set.
pub struct TestDir {
    pub path: PathBuf,
    /// Unique DPDK --file-prefix for this test.
    pub prefix: String,
}

impl TestDir {
    pub fn new(name: &str) -> TestDir {
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("ict-{}-{id}", std::process::id());
        let path = std::env::temp_dir().join(format!("ironclos-test-{name}-{prefix}"));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(&path).expect("create test dir");
        TestDir { path, prefix }
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    pub fn write_pcap(&self, name: &str, packets: &[PcapPacket]) -> PathBuf {
        let path = self.file(name);
        pcap::write_pcap_file(&path, packets).expect("write pcap");
        path
    }

    pub fn read_pcap(&self, name: &str) -> Vec<PcapPacket> {
        pcap::read_pcap_file(&self.file(name)).unwrap_or_else(|e| panic!("read {name}: {e}"))
    }

    /// EAL options every test run uses: no hugepages, no PCI, a private file prefix.
    pub fn eal_toml(&self) -> String {
        format!(
            "eal = [\"--no-huge\", \"-m\", \"256\", \"--no-pci\", \"--no-telemetry\", \"--file-prefix\", \"{}\", \"--log-level=warning\"]",
            self.prefix
        )
    }

    /// The DPDK runtime directory of this test's prefix (must be gone after a run).
    pub fn dpdk_runtime_dir(&self) -> PathBuf {
        Path::new("/var/run/dpdk").join(&self.prefix)
    }
}

impl Drop for TestDir {
    fn drop(&mut self) {
        if std::env::var_os("IRONCLOS_KEEP_TEST_FILES").is_none() {
            let _ = std::fs::remove_dir_all(&self.path);
        }
        let _ = std::fs::remove_dir_all(self.dpdk_runtime_dir());
    }
}

/// Holds the machine-wide lock for DPDK runs.
pub struct DpdkLock {
    _file: File,
}

pub fn dpdk_lock() -> DpdkLock {
    let file = File::options()
        .create(true)
        .append(true)
        .open(std::env::temp_dir().join("ironclos-e2e.lock"))
        .expect("open lock file");
    file.lock().expect("lock");
    DpdkLock { _file: file }
}

/// What a run of the binary produced.
pub struct RunOutput {
    pub status: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl RunOutput {
    pub fn assert_success(&self) {
        assert_eq!(
            self.status,
            Some(0),
            "ironclos failed\nstdout:\n{}\nstderr:\n{}",
            self.stdout,
            self.stderr
        );
    }
}

pub fn ironclos() -> Command {
    Command::new(env!("CARGO_BIN_EXE_ironclos"))
}

/// Runs `ironclos` with `args`, killing it after `timeout`.
pub fn run_ironclos(args: &[&str], timeout: Duration) -> RunOutput {
    let _lock = dpdk_lock();
    let child = ironclos()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn ironclos");
    wait_with_timeout(child, timeout)
}

pub fn wait_with_timeout(mut child: std::process::Child, timeout: Duration) -> RunOutput {
    let started = Instant::now();
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if started.elapsed() > timeout {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect output");
            panic!(
                "ironclos did not finish within {timeout:?}\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("collect output");
    RunOutput {
        status: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

/// Replays: runs `ironclos run --config <config> --exit-when-idle --stats-json stats.json`
/// and returns the parsed counters.
pub fn replay(dir: &TestDir, config_text: &str) -> (RunOutput, serde_json::Value) {
    replay_with(dir, config_text, &[])
}

/// As `replay`, with extra `ironclos run` arguments (e.g. `--schedule FILE`).
pub fn replay_with(
    dir: &TestDir,
    config_text: &str,
    extra: &[&str],
) -> (RunOutput, serde_json::Value) {
    let config = dir.file("ironclos.toml");
    std::fs::write(&config, config_text).expect("write config");
    let stats = dir.file("stats.json");
    let mut args = vec![
        "run",
        "--config",
        config.to_str().expect("utf-8 path"),
        "--exit-when-idle",
        "--stats-json",
        stats.to_str().expect("utf-8 path"),
    ];
    args.extend_from_slice(extra);
    let out = run_ironclos(&args, Duration::from_secs(60));
    out.assert_success();
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&stats).expect("stats written"))
            .expect("stats JSON");
    assert!(
        !dir.dpdk_runtime_dir().exists(),
        "DPDK runtime dir left behind"
    );
    (out, json)
}

/// The JSON counters of the port named `name`.
pub fn port_stats<'a>(stats: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    stats["ports"]
        .as_array()
        .expect("ports array")
        .iter()
        .find(|p| p["name"] == name)
        .unwrap_or_else(|| panic!("port {name} in stats"))
}

pub fn u64_at(value: &serde_json::Value, pointer: &str) -> u64 {
    value
        .pointer(pointer)
        .and_then(serde_json::Value::as_u64)
        .unwrap_or_else(|| panic!("{pointer} in {value}"))
}

/// A tiny deterministic PRNG for building traces (xorshift64*).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
}
