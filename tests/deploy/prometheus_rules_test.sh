#!/bin/sh
# Checks deploy/prometheus/:
# 1. every rule file passes `promtool check rules`, and prometheus.yml
#    `promtool check config` (which loads the rule files it names);
# 2. the `promtool test rules` unit tests pass: each alert fires on a
#    realistic series and stays quiet on a healthy one;
# 3. every finding kind the collector can raise has an alert.
#
#   prometheus_rules_test.sh SOURCE_DIR
# Exits 77 (skipped) when promtool is not installed.
set -eu

src=$1
dir=$src/deploy/prometheus
if ! command -v promtool >/dev/null 2>&1; then
  echo "SKIP: promtool not found (apt-get install prometheus)"
  exit 77
fi
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

promtool check rules "$dir"/rules/*.yml || fail "promtool check rules"
promtool check config "$dir/prometheus.yml" || fail "promtool check config"
(cd "$dir/tests" && promtool test rules ./*.yml) || fail "promtool test rules"

# The kinds: the analyzers' k...Kind constants and the collector's own.
kinds=$(grep -rhoE 'Kind\[\] = "[a-z_]+"' "$src/analysis" "$src/collector" |
  sed 's/.*"\(.*\)"/\1/' | sort -u)
[ -n "$kinds" ] || fail "found no finding kinds in the sources"
n=0
for kind in $kinds; do
  grep -q "fabricdiag_finding_active{kind=\"$kind\",silenced!=\"true\",acked!=\"true\"}" "$dir/rules/fabricdiag-alerts.yml" ||
    fail "no alert for finding kind $kind"
  n=$((n + 1))
done
echo "PASS: rules valid, unit tests pass, alerts for all $n finding kinds"
