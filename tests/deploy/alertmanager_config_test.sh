#!/bin/sh
# Checks deploy/prometheus/alertmanager.yml, the routing example by owner:
# 1. `amtool check-config` accepts it;
# 2. `amtool config routes test` sends a finding alert to the team its
#    job's layout names (label_team), a critical one to the fabric's
#    on-call as well, and an alert of no team, or of a team without a
#    receiver, to the fabric's on-call.
#
#   alertmanager_config_test.sh SOURCE_DIR
# Exits 77 (skipped) when amtool is not installed.
set -eu

config=$1/deploy/prometheus/alertmanager.yml
if ! command -v amtool >/dev/null 2>&1; then
  echo "SKIP: amtool not found (apt-get install prometheus-alertmanager)"
  exit 77
fi
fail() {
  echo "FAIL: $*" >&2
  exit 1
}

amtool check-config "$config" || fail "amtool check-config"

# routes RECEIVERS LABEL=VALUE...: the alert with these labels reaches
# exactly RECEIVERS (comma-separated, in route order).
routes() {
  want=$1
  shift
  got=$(amtool config routes test --config.file="$config" "$@" 2>/dev/null) ||
    true
  [ "$got" = "$want" ] || fail "alert {$*} routed to \"$got\", want \"$want\""
}
routes ml-infra alertname=FabricdiagStragglerNic severity=warning \
  label_team=ml-infra exported_job=llama-70b
routes research alertname=FabricdiagTpCrossNode severity=warning \
  label_team=research
routes fabric-oncall,ml-infra alertname=FabricdiagLinkFlap severity=critical \
  label_team=ml-infra
routes fabric-oncall alertname=FabricdiagPfcStorm severity=critical
routes fabric-oncall alertname=FabricdiagAgentScrapeDown severity=warning
routes fabric-oncall alertname=FabricdiagStragglerNic severity=warning \
  label_team=vision
echo "PASS: alertmanager.yml valid, alerts routed by label_team"
