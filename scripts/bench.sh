#!/usr/bin/env bash
# Packets-per-second benchmark: ironclos against the C reference loops (benches/c/), one
# worker core, 64-byte frames, interleaved rounds, median of per-round ratios.
# Usage: scripts/bench.sh [--rounds N] [--seconds S] [--burst N] [--out DIR] [--no-huge]
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

# Hugepages: without them DPDK falls back to --no-huge and every figure roughly halves.
# Reserve 2 MiB pages if we are root and none are free; the bench says which mode it used.
if [ "$(id -u)" -eq 0 ] && [[ " $* " != *" --no-huge "* ]]; then
  free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
  if [ "${free:-0}" -lt 512 ]; then
    echo 1024 > /proc/sys/vm/nr_hugepages 2>/dev/null || true
  fi
  if ! grep -q hugetlbfs /proc/mounts; then
    mkdir -p /dev/hugepages
    mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
  fi
fi

cargo build --release --locked -p control -p benches
exec target/release/pps --ironclos target/release/ironclos "$@"
