#!/bin/sh
# Runs fabricdiag_bench (the agent's CPU per full read of an 8-NIC mlx5 node
# against Debian's prometheus-node-exporter on the same tree, plus the real
# agent's RSS) and prints the summary at the end. About 30 s.
#
#   bench/run_bench.sh [BUILD_DIR] [extra fabricdiag_bench flags...]
#
# BUILD_DIR defaults to ./build-bench; build first with
#   cmake --build BUILD_DIR --target fabricdiag_bench
# Exit status: 0 when both targets are met (>= 5x less CPU per full read
# with more values; agent RSS < 20 MB), 1 when one is missed, 2 on errors.
set -eu

build_dir=${1:-build-bench}
[ $# -gt 0 ] && shift
bin="$build_dir/bench/fabricdiag_bench"
if [ ! -x "$bin" ]; then
  echo "run_bench.sh: $bin not found; build the fabricdiag_bench target" >&2
  exit 2
fi
if [ ! -x /usr/bin/prometheus-node-exporter ]; then
  echo "run_bench.sh: /usr/bin/prometheus-node-exporter missing" \
       "(apt-get install prometheus-node-exporter)" >&2
  exit 2
fi

log=$(mktemp "${TMPDIR:-/tmp}/fabricdiag_bench.XXXXXX")
trap 'rm -f "$log"' EXIT INT TERM

status=0
"$bin" "$@" \
  | tee "$log" || status=$?
if [ "$status" -ne 0 ]; then
  echo "run_bench.sh: fabricdiag_bench failed with status $status" >&2
  exit 2
fi

echo
echo "=== fabricdiag vs node_exporter ==="
grep -E '^(agent |CPU per value|target: )' "$log"
if grep -q 'MISSED' "$log"; then
  exit 1
fi
exit 0
