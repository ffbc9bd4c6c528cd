#!/usr/bin/env bash
# The main job on a built-in default: replays a generated trace through ironclos over pcap
# ports (io mode, no hugepages needed) and checks every packet came out unchanged.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cargo build --release --locked -p control
exec target/release/ironclos demo "$@"
