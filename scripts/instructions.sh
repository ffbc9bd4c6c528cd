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
# Usage: scripts/instructions.sh [--binary PATH] CONFIG [SECONDS]   (needs: apt-get install valgrind)
set -euo pipefail

binary="$(dirname "$0")/../target/release/ironclos"
if [[ ${1:-} == --binary ]]; then
    binary=$2
    shift 2
fi
if [[ $# -lt 1 || ${1:-} == -h || ${1:-} == --help ]]; then
    sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
config=$1
seconds=${2:-20}
command -v cg_annotate > /dev/null || { echo "needs valgrind: apt-get install valgrind" >&2; exit 2; }
[[ -x $binary ]] || { echo "$binary: not built (cargo build --release)" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One run: instruction counts by function in $work/$1.fn, frames received in $work/$1.frames.
measure() {
    local tag=$1 duration=$2
    valgrind --tool=cachegrind --cache-sim=no --fair-sched=yes --cachegrind-out-file="$work/$tag.cg" \
        "$binary" run --config "$config" --duration "$duration" > "$work/$tag.out" 2>&1 ||
        { tail -5 "$work/$tag.out" >&2; exit 1; }
    # The exit report's port table: rx_packets of every port.
    awk '$1 == "port" && $2 == "rx_packets" { table = 1; next }
         table && NF < 9 { table = 0 }
         table { sum += $2 }
         END { print sum + 0 }' "$work/$tag.out" > "$work/$tag.frames"
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
