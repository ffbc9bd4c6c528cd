//! Compiles the three C reference loops in `c/` (io-forward, MAC swap, minimal L3 LPM
//! forwarder) into executables in `$OUT_DIR`, linked against Debian's DPDK 22.11 (found with
//! pkg-config, linked shared), and tells the crate where they are:
//! `env!("IRONCLOS_C_IO_FWD")`, `env!("IRONCLOS_C_MACSWAP")`, `env!("IRONCLOS_C_L3FWD")`.

use std::env;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

const SETUP_HINT: &str = "libdpdk (DPDK 22.11 development files) was not found with pkg-config.\n\
    Install the system packages first: `sudo scripts/setup.sh` \
    (Debian 12: dpdk libdpdk-dev libpcap-dev clang libclang-dev pkg-config).";

/// (source in c/, executable name in $OUT_DIR, environment variable for `env!`).
const PROGRAMS: [(&str, &str, &str); 3] = [
    ("io_fwd.c", "io_fwd", "IRONCLOS_C_IO_FWD"),
    ("macswap.c", "macswap", "IRONCLOS_C_MACSWAP"),
    ("l3fwd_lpm.c", "l3fwd_lpm", "IRONCLOS_C_L3FWD"),
];

fn main() {
    let manifest_dir = PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let c_dir = manifest_dir.join("c");
    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));

    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=c/common.h");
    for (src, _, _) in PROGRAMS {
        println!("cargo:rerun-if-changed=c/{src}");
    }
    for var in [
        "PKG_CONFIG",
        "PKG_CONFIG_PATH",
        "PKG_CONFIG_LIBDIR",
        "PKG_CONFIG_SYSROOT_DIR",
    ] {
        println!("cargo:rerun-if-env-changed={var}");
    }

    // Only probe here: the benches crate itself must not link DPDK, so no cargo metadata.
    if let Err(err) = pkg_config::Config::new()
        .atleast_version("22.11")
        .cargo_metadata(false)
        .probe("libdpdk")
    {
        eprintln!("error: {SETUP_HINT}\npkg-config said: {err}");
        panic!("{SETUP_HINT}");
    }
    // The raw flags, exactly as pkg-config gives them: they carry `-include rte_config.h` and
    // `-march=...`, which the crate's parsed view does not keep. Shared linking (no --static).
    let flags = pkg_config_flags(&["--cflags", "--libs", "libdpdk"]);

    // Only the compiler itself is taken from cc: not its profile-dependent default flags
    // (-O0, frame pointers, ...), so the reference loops are the same code in every profile.
    let compiler = cc::Build::new().get_compiler();
    let cc_path = compiler.path().to_owned();

    // Compile the three in parallel; each is one compile-and-link step.
    let jobs: Vec<_> = PROGRAMS
        .iter()
        .map(|&(src, exe, var)| {
            let exe_path = out_dir.join(exe);
            let mut args: Vec<String> = ["-O3", "-g", "-Wall", "-Wextra", "-I"]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            args.push(c_dir.display().to_string());
            args.push("-o".to_owned());
            args.push(exe_path.display().to_string());
            args.push(c_dir.join(src).display().to_string());
            // After the source: the libs begin with -Wl,--as-needed.
            args.extend(flags.iter().cloned());
            let shown = format!("{} {}", cc_path.display(), args.join(" "));
            let child = Command::new(&cc_path)
                .args(&args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap_or_else(|err| panic!("could not run the C compiler ({shown}): {err}"));
            (src, exe_path, var, shown, child)
        })
        .collect();

    let mut failures = Vec::new();
    for (src, exe_path, var, shown, child) in jobs {
        let out = child
            .wait_with_output()
            .unwrap_or_else(|err| panic!("waiting for the C compiler on {src}: {err}"));
        if out.status.success() {
            forward_warnings(src, &out);
            println!("cargo:rustc-env={var}={}", exe_path.display());
        } else {
            let text = compiler_text(&out);
            eprintln!(
                "error: compiling c/{src} failed ({})\ncommand: {shown}\n{text}",
                out.status
            );
            failures.push(format!("c/{src} ({}):\n{text}", out.status));
        }
    }
    if !failures.is_empty() {
        panic!(
            "the C reference loops did not compile:\n{}",
            failures.join("\n")
        );
    }
}

fn pkg_config_flags(args: &[&str]) -> Vec<String> {
    let pkg_config = env::var("PKG_CONFIG").unwrap_or_else(|_| "pkg-config".to_owned());
    let out = Command::new(&pkg_config)
        .args(args)
        .output()
        .unwrap_or_else(|err| panic!("could not run `{pkg_config}`: {err}\n{SETUP_HINT}"));
    if !out.status.success() {
        eprintln!(
            "error: {SETUP_HINT}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        panic!("`{pkg_config} {}` failed\n{SETUP_HINT}", args.join(" "));
    }
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(str::to_owned)
        .collect()
}

fn compiler_text(out: &Output) -> String {
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    text
}

/// Shows the compiler's warnings in cargo's output (build-script stdout is otherwise hidden).
fn forward_warnings(src: &str, out: &Output) {
    let text = compiler_text(out);
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        println!("cargo:warning=c/{src}: {line}");
    }
}
