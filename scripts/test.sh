#!/usr/bin/env bash
# Runs the whole test suite: unit tests in parallel, then the DPDK end-to-end tests (which
# busy-poll a core each) one at a time. This is the command CI runs.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

cargo build --workspace --all-targets --locked
cargo test --workspace --locked --lib --bins
# DPDK end-to-end tests: real `ironclos` processes on vdevs; serialised by the harness too.
cargo test --locked -p control --tests -- --test-threads=1
