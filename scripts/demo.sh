#!/usr/bin/env bash
# The fabricdiag demo on a fresh Debian 12 machine: installs missing
# packages, builds, then runs the agent twice on loopback and shows what it
# reads:
#   1. on this machine's real /sys: its real netdevs, their netdev statistics
#      and ethtool statistics through the real SIOCETHTOOL ioctl;
#   2. on the bundled fixture RDMA tree (real sysfs files of mlx5, mlx4 and
#      hfi1 devices, see tests/fixtures/sysfs/PROVENANCE.md) with bundled
#      `ethtool -S` captures, as a GPU node with RDMA NICs would look.
# For each it prints `--once` JSON (abridged) and a `/metrics` scrape.
# (The full cluster demo, with a simulator and a collector, comes with the
# simulator: see README.)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" --target fabricdiag-agent

agent=build/agent/fabricdiag-agent
port_real=${DEMO_PORT_REAL:-19810}
port_fixture=${DEMO_PORT_FIXTURE:-19820}
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup EXIT INT TERM

# Shows the first N lines of its input and drains the rest, so that the
# producer never dies of SIGPIPE (this script runs with pipefail).
abridge() { head -n "$1"; cat >/dev/null; }

banner() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

wait_for_metrics() {
  for _ in $(seq 1 50); do
    if curl -fsS "http://127.0.0.1:$1/metrics" >/dev/null 2>&1; then return 0; fi
    sleep 0.1
  done
  echo "agent on port $1 did not come up" >&2
  return 1
}

banner "1. this machine's real netdevs: $agent --once --sysfs_root=/sys"
"$agent" --once --node="$(hostname)" | abridge 40
echo "   ... (abridged)"

banner "2. the bundled RDMA fixture tree: $agent --once --sysfs_root=tests/fixtures/sysfs"
"$agent" --once --node=fixture-node --sysfs_root=tests/fixtures/sysfs \
  --ethtool_dir=tests/fixtures/ethtool/demo | abridge 60
echo "   ... (abridged)"

banner "3. serving /metrics: real host on :$port_real, fixture node on :$port_fixture"
"$agent" --node="$(hostname)" --listen="127.0.0.1:$port_real" --interval=1s &
pids+=($!)
"$agent" --node=fixture-node --sysfs_root=tests/fixtures/sysfs \
  --ethtool_dir=tests/fixtures/ethtool/demo \
  --listen="127.0.0.1:$port_fixture" --interval=1s &
pids+=($!)
wait_for_metrics "$port_real"
wait_for_metrics "$port_fixture"
sleep 1.5

banner "curl -s http://127.0.0.1:$port_fixture/metrics | grep -E 'rdma_port_(transmitted|received)_bytes|pfc_pause|agent_source'"
curl -fsS "http://127.0.0.1:$port_fixture/metrics" |
  grep -E '^fabricdiag_(rdma_port_(transmitted|received)_bytes_total|pfc_pause_[a-z_]+|agent_source_success)' |
  abridge 40

banner "curl -s http://127.0.0.1:$port_real/metrics | grep -E 'netdev_(received|transmitted)_bytes|agent_'"
curl -fsS "http://127.0.0.1:$port_real/metrics" |
  grep -E '^fabricdiag_(netdev_(received|transmitted)_bytes_total|agent_(source_success|devices|snapshot_duration_seconds))' |
  abridge 30

if command -v promtool >/dev/null; then
  banner "promtool check metrics (both agents)"
  curl -fsS "http://127.0.0.1:$port_real/metrics" | promtool check metrics && echo "real host: OK"
  curl -fsS "http://127.0.0.1:$port_fixture/metrics" | promtool check metrics && echo "fixture node: OK"
fi

banner "done: agents stopped"
