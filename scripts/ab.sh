#!/usr/bin/env bash
# A/B rate of two ironclos binaries on one config, for optimisation work on a shared machine.
#
# Both binaries run at once, with the same config, so their worker threads share the config's
# worker core and the kernel's scheduler interleaves them every few milliseconds: whatever
# slows the machine (other tenants, the host) slows both alike, and the ratio of their rates
# keeps only the difference of the code. Run one after the other, as the bench does, one
# binary's rate moved threefold between runs on the development machine (a shared VM); run
# together, two copies of one binary came within 8 % of each other in every round and within
# 2 % in the median of four.
#
# Each rate is packets sent per second of forwarding (`--stats-json`), about half of what
# either binary forwards alone; each round alternates which one starts first. The ratio holds
# for two builds of ironclos only: two different programs (ironclos and a C loop) do not lose
# alike to the caches they share, so `scripts/bench.sh` measures each alone.
#
# Usage: scripts/ab.sh [--rounds N] [--seconds S] CONFIG BINARY_A BINARY_B
#   CONFIG is a switch config on vdevs (a pcap input with infinite_rx=1 and net_null outputs,
#   like the bench's); with hugepages the two runs need twice the config's `-m`.
#   Prints each round's rates and B/A, then the median B/A.
set -euo pipefail

rounds=6
seconds=6
while [[ $# -gt 0 ]]; do
    case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    -h | --help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) break ;;
    esac
done
if [[ $# -ne 3 ]]; then
    sed -n '17,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
config=$1
binaries=("$2" "$3")
[[ -r $config ]] || { echo "$config: not readable" >&2; exit 2; }
for binary in "${binaries[@]}"; do
    [[ -x $binary ]] || { echo "$binary: not an executable" >&2; exit 2; }
done
[[ $rounds =~ ^[1-9][0-9]*$ ]] || { echo "--rounds: '$rounds' is not a positive count" >&2; exit 2; }
[[ $seconds =~ ^[0-9]+(\.[0-9]+)?$ ]] || { echo "--seconds: '$seconds' is not a number" >&2; exit 2; }

work=$(mktemp -d)
prefixes=("ab-a-$$" "ab-b-$$")
cleanup() {
    for prefix in "${prefixes[@]}"; do
        rm -rf "/var/run/dpdk/$prefix"
        rm -f /dev/hugepages/"$prefix"map_* 2> /dev/null || true
    done
    rm -rf "$work"
}
trap cleanup EXIT

# Packets sent per second of forwarding, from a run's --stats-json.
rate() {
    python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
print(sum(p.get("tx_packets", 0) for p in v["ports"]) / v["forwarding_seconds"] / 1e6)' "$1"
}

ratios=()
for round in $(seq "$rounds"); do
    # The first to start loads its tables a little ahead: alternate it.
    order=(0 1)
    ((round % 2)) || order=(1 0)
    pids=()
    for side in "${order[@]}"; do
        "${binaries[$side]}" run --config "$config" --duration "$seconds" \
            --stats-json "$work/$side.json" -- --file-prefix "${prefixes[$side]}" \
            > "$work/$side.out" 2>&1 &
        pids+=($!)
    done
    for side in "${!pids[@]}"; do
        wait "${pids[$side]}" || {
            echo "round $round: a run failed:" >&2
            tail -5 "$work/${order[$side]}.out" >&2
            exit 1
        }
    done
    for prefix in "${prefixes[@]}"; do
        rm -f /dev/hugepages/"$prefix"map_* 2> /dev/null || true
    done
    a=$(rate "$work/0.json")
    b=$(rate "$work/1.json")
    ratio=$(python3 -c "print(f'{$b / $a:.4f}')")
    ratios+=("$ratio")
    printf 'round %d  A %6.2f Mpps  B %6.2f Mpps  B/A %s\n' "$round" "$a" "$b" "$ratio"
done
python3 -c 'import statistics, sys
r = [float(x) for x in sys.argv[1:]]
print(f"B/A median {statistics.median(r):.4f} (lowest {min(r):.4f}, highest {max(r):.4f}); "
      f"B faster in {sum(x > 1 for x in r)} of {len(r)} rounds")' "${ratios[@]}"
