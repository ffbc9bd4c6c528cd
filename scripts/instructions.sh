#!/usr/bin/env bash
# Instructions per forwarded frame, by function: a deterministic measure for optimisation work
# on machines whose packet rates are too noisy to show a few percent (shared VMs).
#
# Runs `ironclos run --config CONFIG` under valgrind's cachegrind twice, for 1 s and for
# SECONDS (default 20), and divides the difference of each function's instruction count by the difference
# of the frames received: start-up (config, route loading) cancels out, and what remains is
# the per-frame cost, the PMDs' included (listed as `???`: Debian's DPDK has no symbols).
# Under valgrind the switch forwards about 1 Mpps, so any vdev input works; give the config's
# EAL `--no-huge` and its own `--file-prefix`.
#
# `--c-l3 TRACE ROUTES` measures the bench's C L3 loop the same way instead (its input a pcap
# with infinite_rx, its output net_null, ROUTES a route file as `pps` writes them), for the
# ratio of the two by instructions.
#
# Usage: scripts/instructions.sh [--binary PATH] CONFIG [SECONDS]
#        scripts/instructions.sh --c-l3 TRACE ROUTES [SECONDS]     (needs: apt-get install valgrind)
set -euo pipefail

root="$(dirname "$0")/.."
binary="$root/target/release/ironclos"
c_trace=""
if [[ ${1:-} == --binary ]]; then
    binary=$2
    shift 2
elif [[ ${1:-} == --c-l3 && $# -ge 3 ]]; then
    c_trace=$2
    c_routes=$3
    shift 2
    # The newest build of the bench's C loops (cargo build --release -p benches).
    binary=$(ls -t "$root"/target/release/build/benches-*/out/l3fwd_lpm 2> /dev/null | head -1)
    [[ -n $binary ]] || { echo "the C L3 loop is not built (cargo build --release -p benches)" >&2; exit 2; }
    [[ -r $c_trace && -r $c_routes ]] || { echo "$c_trace or $c_routes: not readable" >&2; exit 2; }
fi
if [[ $# -lt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
config=$1
seconds=${2:-20}
command -v cg_annotate > /dev/null || { echo "needs valgrind: apt-get install valgrind" >&2; exit 2; }
[[ -x $binary ]] || { echo "$binary: not built (cargo build --release)" >&2; exit 2; }

work=$(mktemp -d)
# The C loop leaves DPDK's runtime directory behind (ironclos removes its own).
trap 'rm -rf "$work" "/var/run/dpdk/instructions-c-l3-$$"' EXIT

# One run: instruction counts by function in $work/$1.fn, frames received in $work/$1.frames.
measure() {
    local tag=$1 duration=$2
    local command=("$binary" run --config "$config" --duration "$duration")
    if [[ -n $c_trace ]]; then
        command=("$binary" --no-huge -m 1536 --no-pci --no-telemetry --log-level=error
            --file-prefix "instructions-c-l3-$$"
            --vdev "net_pcap0,rx_pcap=$c_trace,infinite_rx=1" --vdev net_null1,no-rx=1
            -- --rx-port 0 --tx-port 1 --burst 32 --duration "$duration" --routes-file "$c_routes")
    fi
    valgrind --tool=cachegrind --cache-sim=no --fair-sched=yes --cachegrind-out-file="$work/$tag.cg" \
        "${command[@]}" > "$work/$tag.out" 2>&1 ||
        { tail -5 "$work/$tag.out" >&2; exit 1; }
    if [[ -n $c_trace ]]; then
        # The C loop's JSON line.
        grep -o '"rx_packets":[0-9]*' "$work/$tag.out" | tail -1 | cut -d: -f2 > "$work/$tag.frames"
    else
        # The exit report's port table: rx_packets of every port.
        awk '$1 == "port" && $2 == "rx_packets" { table = 1; next }
             table && NF < 9 { table = 0 }
             table { sum += $2 }
             END { print sum + 0 }' "$work/$tag.out" > "$work/$tag.frames"
    fi
    cg_annotate --auto=no --threshold=0 "$work/$tag.cg" |
        awk '$2 ~ /^\(/ && $0 ~ /:/ {
                 count = $1; gsub(",", "", count)
                 name = $0; sub(/^[^)]*\)[ \t]*/, "", name)
                 sub(/^[^:]*:/, "", name)
                 total[name] += count
             }
             END { for (n in total) printf "%s\t%s\n", total[n], n }' > "$work/$tag.fn"
}

measure short 1
measure long "$seconds"
frames=$(( $(cat "$work/long.frames") - $(cat "$work/short.frames") ))
if (( frames <= 0 )); then
    echo "the long run received no more frames than the short one ($frames)" >&2
    exit 1
fi
echo "frames: $(cat "$work/short.frames") (1 s), $(cat "$work/long.frames") (${seconds} s)"
echo "instructions per frame, by function (at least 0.5):"
awk -F'\t' -v frames="$frames" '
    FNR == NR { short[$2] = $1; next }
    { per = ($1 - short[$2]) / frames; total += per
      if (per >= 0.5) printf "%8.1f  %s\n", per, $2 }
    END { printf "%8.1f  total\n", total }' "$work/short.fn" "$work/long.fn" | sort -rn
