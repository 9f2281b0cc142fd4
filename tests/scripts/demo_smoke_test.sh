#!/usr/bin/env bash
# Runs the README's first command the way a user would (minus apt and the
# build): scripts/demo.sh --no_build on the freshly built binaries, with the
# shortest timeline (a TP group declared across two nodes). Checks that the
# finding opens and resolves, that the run ends by itself with status 0 and
# that no process it started is left behind.
#
#   demo_smoke_test.sh SOURCE_DIR BUILD_DIR
set -euo pipefail

src=$1
build=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT

# A base port of its own, away from the demo's default (19800).
export DEMO_BASE_PORT=${DEMO_BASE_PORT:-23700}
status=0
FABRICDIAG_BUILD_DIR=$build timeout 180 \
  "$src/scripts/demo.sh" --no_build --scenario=tp_cross >"$out" 2>&1 || status=$?
fail() {
  echo "FAIL: $*" >&2
  echo "--- demo output ---" >&2
  cat "$out" >&2
  exit 1
}
((status == 0)) || fail "demo.sh exited with status $status"
grep -q 'OPENED warning tp_cross_node .*job=dense-tp16 group=tp:0' "$out" ||
  fail "tp_cross_node never opened"
grep -q 'RESOLVED warning tp_cross_node .*job=dense-tp16' "$out" ||
  fail "tp_cross_node never resolved"
others=$(grep -E ' OPENED (info|warning|critical) ' "$out" | grep -v ' tp_cross_node ' || true)
[[ -z "$others" ]] || fail "findings other than tp_cross_node on a healthy cluster: $others"
if pgrep -f "fabricdiag-(sim|agent|collector).*:$((DEMO_BASE_PORT + 1))" >/dev/null; then
  fail "processes left behind: $(pgrep -af "fabricdiag-.*:$((DEMO_BASE_PORT + 1))")"
fi
echo "PASS: demo opened and resolved tp_cross_node, exited 0, left nothing behind"
