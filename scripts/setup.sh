#!/usr/bin/env bash
# Installs the Debian 12 packages ironclos needs to build, test and run. Idempotent: it only
# calls apt-get when something is missing. Run as root (or with sudo).
set -euo pipefail

packages=(
  dpdk libdpdk-dev libpcap-dev     # DPDK 22.11 and the pcap PMD's library
  clang libclang-dev pkg-config    # bindgen over the DPDK headers
  iproute2 iputils-ping            # network namespaces and veth for host tests and the demo
  tcpdump ethtool                  # looking at captures; veth offloads off for host tests
  python3                          # TCP transfer in the demo and host tests
  procps                           # sysctl and kill for the SRv6 peer and host tests
)

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup: all packages present"
  exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
  echo "setup: missing packages: ${missing[*]}; run as root: sudo $0" >&2
  exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
