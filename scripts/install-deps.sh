#!/usr/bin/env bash
# Installs the Debian 12 packages fabricdiag needs to build, test and run its
# demo, skipping those already present. Uses sudo when not root.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  # scripts/test.sh compiles through ccache when present: a second run, or
  # a fresh clone on the same machine, rebuilds only what changed.
  ccache
  # lld links the test binaries in less than half the GNU linker's time.
  lld
  libibverbs-dev prometheus-cpp-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libgtest-dev libgmock-dev libbenchmark-dev
  libyaml-cpp-dev nlohmann-json3-dev
  # The HTTP server's event loop and gzip.
  libevent-dev zlib1g-dev
  # Real peers for end-to-end tests: promtool and Prometheus, node_exporter
  # (compared against the agent), iproute2 (network namespaces), openssl
  # (test certificates), systemd (systemd-analyze verify), curl; dpkg-dev
  # (dpkg-shlibdeps for the packages' Depends) and python3-yaml (checks of
  # the Kubernetes manifest and the Grafana provisioning files); chromium
  # (the collector's live page, tested in a real headless browser);
  # clang-format and clang-tidy (scripts/test.sh's lint).
  prometheus prometheus-node-exporter iproute2 ethtool openssl systemd curl
  clang-format clang-tidy dpkg-dev python3-yaml chromium
  # The agent's LLDP neighbors: liblldpctl talks to lldpd's control socket;
  # lldpd itself runs in the network-namespace test.
  lldpd liblldpctl-dev
  # The collector cluster: the NATS C client, and real NATS JetStream
  # servers for its tests.
  nats-server libnats-dev
  # The Python module's test in a real PyTorch job (CPU, gloo) and its
  # static check.
  python3-torch python3-pyflakes
  # The Slurm scripts (deploy/slurm/): shellcheck for them, and a real
  # slurmctld, slurmd and munged for their end-to-end test.
  shellcheck slurm-wlm munge
  # amtool, which checks the Alertmanager routing example
  # (deploy/prometheus/alertmanager.yml); its service is not wanted here.
  prometheus-alertmanager
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

echo "Installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
# Debian's prometheus packages try to start their services on install; in a
# container without systemd that is a no-op, and nothing of ours depends on
# those system instances.
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
# Only its amtool is used: the Alertmanager the package enables (and starts
# where systemd runs) would hold port 9093 on a build machine.
if [[ " ${missing[*]} " == *" prometheus-alertmanager "* ]] &&
  command -v systemctl >/dev/null 2>&1; then
  $sudo systemctl disable --now prometheus-alertmanager >/dev/null 2>&1 || true
fi
