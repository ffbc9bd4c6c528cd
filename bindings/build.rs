//! Generates bindings over Debian's DPDK 22.11 (found with pkg-config) and compiles C wrappers
//! for the static-inline functions the dataplane calls. Nothing generated is committed.

use std::env;
use std::path::PathBuf;

const SETUP_HINT: &str = "libdpdk (DPDK 22.11 development files) was not found with pkg-config.\n\
    Install the system packages first: `sudo scripts/setup.sh` \
    (Debian 12: dpdk libdpdk-dev libpcap-dev clang libclang-dev pkg-config).";

fn main() {
    println!("cargo:rerun-if-changed=wrapper.h");
    println!("cargo:rerun-if-changed=src/errno.c");

    let dpdk = match pkg_config::Config::new()
        .atleast_version("22.11")
        .probe("libdpdk")
    {
        Ok(lib) => lib,
        Err(err) => {
            // One clear message instead of hundreds of missing-header errors.
            eprintln!("error: {SETUP_HINT}\npkg-config said: {err}");
            panic!("{SETUP_HINT}");
        }
    };

    // pkg-config's cflags carry `-include rte_config.h` and `-march=...`: the wrappers and the
    // bindings must see the same configuration as the installed libraries were built with.
    let raw_cflags = std::process::Command::new("pkg-config")
        .args(["--cflags", "libdpdk"])
        .output()
        .map(|out| String::from_utf8_lossy(&out.stdout).into_owned())
        .unwrap_or_default();
    let clang_args: Vec<String> = raw_cflags.split_whitespace().map(str::to_owned).collect();

    let out_dir = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let wrappers_c = out_dir.join("static_inline_wrappers.c");

    let bindings = bindgen::Builder::default()
        .header("wrapper.h")
        .clang_args(&clang_args)
        .allowlist_function("rte_.*")
        .allowlist_function("ironclos_.*")
        .allowlist_type("rte_.*")
        .allowlist_var("(RTE|RING|MEMPOOL)_.*")
        .clang_macro_fallback()
        // These nest aligned types inside packed ones, which Rust rejects.
        .opaque_type("rte_arp_hdr")
        .opaque_type("rte_arp_ipv4")
        .opaque_type("rte_l2tpv2_combined_msg_hdr")
        .opaque_type("rte_gtp_psc_generic_hdr")
        // Functions passing __m128i by value have no stable Rust ABI.
        .blocklist_function("rte_lpm_lookupx4")
        .blocklist_function("rte_.*_x4")
        .wrap_static_fns(true)
        .wrap_static_fns_path(&wrappers_c)
        .rust_edition(bindgen::RustEdition::Edition2024)
        .wrap_unsafe_ops(true)
        .derive_default(true)
        .layout_tests(false)
        .generate_comments(false)
        .parse_callbacks(Box::new(bindgen::CargoCallbacks::new()))
        .generate()
        .unwrap_or_else(|err| panic!("bindgen failed over the DPDK headers: {err}\n{SETUP_HINT}"));
    bindings
        .write_to_file(out_dir.join("bindings.rs"))
        .expect("write bindings.rs");

    let mut build = cc::Build::new();
    build
        .file(&wrappers_c)
        .file("src/errno.c")
        .include(env!("CARGO_MANIFEST_DIR"))
        .warnings(false)
        .opt_level(3);
    for path in &dpdk.include_paths {
        build.include(path);
    }
    // Keep -include and -march exactly as pkg-config gives them; skip -I (added above).
    let mut args = clang_args.iter();
    while let Some(arg) = args.next() {
        if arg == "-include" {
            if let Some(file) = args.next() {
                build.flag("-include").flag(file);
            }
        } else if arg.starts_with("-m") {
            build.flag(arg);
        }
    }
    build.compile("ironclos_dpdk_wrappers");
}
