#!/usr/bin/env bash
# The main job on a built-in default: ironclos as a leaf switch between real Linux hosts.
#
#   h1 (10.0.10.2, VLAN 10) --+                 +-- h2 (10.0.20.2, VLAN 20)
#   h3 (10.0.10.3, VLAN 10) --+-- ironclos leaf-+   gateways 10.0.10.1 / 10.0.20.1 (SVIs)
#
# Each host is a network namespace with one end of a veth pair; the switch attaches the other
# end with DPDK's net_af_packet. The hosts ping each other (routed h1<->h2, bridged h1<->h3),
# move 10 MB over TCP (checked by SHA-256), and the switch's counters are printed. Everything
# is removed on exit. Run as root. `--io` runs the older io-mode pcap replay demo instead.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${1:-}" = "--io" ]; then
  bash scripts/setup.sh
  cargo build --release --locked -p control
  exec target/release/ironclos demo
fi

bash scripts/setup.sh
cargo build --release --locked -p control

tag="icd$$"
dir=$(mktemp -d /tmp/ironclos-demo.XXXXXX)
pid=""
cleanup() {
  [ -n "$pid" ] && kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
  for h in h1 h2 h3; do
    ip netns del "$tag-$h" 2>/dev/null || true
    ip link del "$tag-$h" 2>/dev/null || true
  done
  rm -rf "$dir" "/var/run/dpdk/$tag"
}
trap cleanup EXIT

host() { # name address/len gateway
  local ns="$tag-$1"
  ip netns add "$ns"
  ip link add "$tag-$1" type veth peer name eth0 netns "$ns"
  ip netns exec "$ns" ip addr add "$2" dev eth0
  ip netns exec "$ns" ip link set eth0 up
  ip netns exec "$ns" ip link set lo up
  ip netns exec "$ns" ip route add default via "$3"
  # The switch receives what the host puts on the wire: no partial checksums, no 64 KB GSO.
  ip netns exec "$ns" ethtool -K eth0 tx off tso off gso off gro off >/dev/null 2>&1 || true
  ip link set "$tag-$1" up promisc on
  ethtool -K "$tag-$1" tx off tso off gso off gro off >/dev/null 2>&1 || true
  sysctl -qw "net.ipv6.conf.$tag-$1.disable_ipv6=1" || true
}
host h1 10.0.10.2/24 10.0.10.1
host h3 10.0.10.3/24 10.0.10.1
host h2 10.0.20.2/24 10.0.20.1

cat > "$dir/leaf.toml" <<TOML
# Built-in demo leaf: VLAN 10 (h1, h3) and VLAN 20 (h2), routed between them.
[switch]
name = "$tag"
router_mac = "02:00:00:00:01:00"

[dataplane]
mode = "switch"
worker_lcores = [1]
eal = ["--no-huge", "-m", "512", "--no-pci", "--no-telemetry", "--log-level=warning"]

[[vlan]]
id = 10
ipv4 = ["10.0.10.1/24"]

[[vlan]]
id = 20
ipv4 = ["10.0.20.1/24"]

[[port]]
name = "h1"
devargs = "net_af_packet0,iface=$tag-h1"
vlan = { mode = "access", id = 10 }

[[port]]
name = "h3"
devargs = "net_af_packet1,iface=$tag-h3"
vlan = { mode = "access", id = 10 }

[[port]]
name = "h2"
devargs = "net_af_packet2,iface=$tag-h2"
vlan = { mode = "access", id = 20 }
TOML

target/release/ironclos run --config "$dir/leaf.toml" > "$dir/switch.log" 2>&1 &
pid=$!
for _ in $(seq 100); do
  grep -q "ironclos ready" "$dir/switch.log" && break
  kill -0 "$pid" 2>/dev/null || { cat "$dir/switch.log"; exit 1; }
  sleep 0.1
done
grep "ironclos ready" "$dir/switch.log"

in_ns() { local ns="$tag-$1"; shift; ip netns exec "$ns" "$@"; }
echo "== h1 -> h2 (routed VLAN 10 -> 20)"; in_ns h1 ping -c 3 -i 0.2 -W 2 10.0.20.2
echo "== h2 -> h1 (routed VLAN 20 -> 10)"; in_ns h2 ping -c 3 -i 0.2 -W 2 10.0.10.2
echo "== h1 -> h3 (bridged in VLAN 10)";   in_ns h1 ping -c 3 -i 0.2 -W 2 10.0.10.3
echo "== h1 -> gateway";                    in_ns h1 ping -c 2 -i 0.2 -W 2 10.0.10.1

echo "== 10 MB over TCP, h1 -> h2"
head -c 10485760 /dev/urandom > "$dir/send.bin"
in_ns h2 python3 -c '
import socket, sys
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 5001)); s.listen(1); s.settimeout(30)
c, _ = s.accept(); c.settimeout(30)
with open(sys.argv[1], "wb") as f:
    while True:
        b = c.recv(65536)
        if not b: break
        f.write(b)
' "$dir/recv.bin" &
listener=$!
sleep 0.5
in_ns h1 python3 -c '
import socket, sys
s = socket.create_connection(("10.0.20.2", 5001), timeout=30)
with open(sys.argv[1], "rb") as f: s.sendall(f.read())
s.close()
' "$dir/send.bin"
wait "$listener"
if [ "$(sha256sum < "$dir/send.bin")" = "$(sha256sum < "$dir/recv.bin")" ]; then
  echo "10 MB arrived intact (SHA-256 match)"
else
  echo "TCP transfer corrupted" >&2; exit 1
fi

kill -TERM "$pid"; wait "$pid" || true; pid=""
echo "== switch counters"
sed -n '/ironclos stopped/,$p' "$dir/switch.log"
