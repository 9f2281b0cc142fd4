#!/bin/sh
# Checks one of fabricdiag's systemd units.
#
#   systemd_verify_test.sh UNIT_DIR BINARY
#
# The unit is UNIT_DIR/<basename of BINARY>.service: fabricdiag-agent
# -> fabricdiag-agent.service, fabricdiag-collector ->
# fabricdiag-collector.service (one script, so both units are held to
# exactly the same rules).
#
# 1. `systemd-analyze verify` must print nothing at all: any warning fails.
#    verify insists that ExecStart's executable exists, so the unit is
#    copied to a temporary directory with /usr/bin/<name> replaced by
#    BINARY (the freshly built daemon).
#    Every glibc tunable the unit sets in GLIBC_TUNABLES must be one the
#    binary's C library knows (an unknown one is ignored silently).
# 2. `systemd-analyze security --offline=yes` rates the sandbox; the
#    exposure score is printed for the log ("EXPOSURE: unit score"), never
#    judged (it moves between systemd versions).
# Exits 77 (skipped) when systemd-analyze is not installed.
set -eu

if [ "$#" -ne 2 ]; then
  echo "usage: $0 UNIT_DIR BINARY" >&2
  exit 2
fi
unit_dir=$1
binary=$2
name=$(basename "$binary")
unit=$name.service

if ! command -v systemd-analyze >/dev/null 2>&1; then
  echo "SKIP: systemd-analyze not found; cannot verify $unit"
  exit 77
fi
if [ ! -f "$unit_dir/$unit" ]; then
  echo "FAIL: $unit_dir/$unit does not exist" >&2
  exit 1
fi
if [ ! -x "$binary" ]; then
  echo "FAIL: binary $binary is not an executable file" >&2
  exit 1
fi
case $binary in
  /*) ;;
  *) binary=$(pwd)/$binary ;;
esac

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM

# '|' delimits the sed expression: BINARY is a path full of '/'.
sed "s|^ExecStart=/usr/bin/$name\\([[:space:]]\\)|ExecStart=$binary\\1|" \
  "$unit_dir/$unit" >"$tmp/$unit"
if ! grep -q "^ExecStart=$binary " "$tmp/$unit"; then
  echo "FAIL: $unit has no 'ExecStart=/usr/bin/$name ...' line" >&2
  exit 1
fi

# --man=no: the unit's Documentation= is a file: URI, but keep verify from
# depending on man-db being installed. Output of both streams is collected:
# verify reports problems on stderr and still exits 0 for most warnings.
status=0
out=$(systemd-analyze verify --man=no "$tmp/$unit" 2>&1) || status=$?
if [ "$status" -ne 0 ] || [ -n "$out" ]; then
  echo "FAIL: systemd-analyze verify $unit (exit $status):" >&2
  printf '%s\n' "$out" >&2
  exit 1
fi
echo "PASS: systemd-analyze verify $unit printed nothing"

# A glibc tunable the C library does not know is ignored without a word:
# every one the unit sets (Environment=GLIBC_TUNABLES=name=value:...) must
# be listed by the dynamic loader the binary runs under.
tunables=$(sed -n 's/^Environment=GLIBC_TUNABLES=//p' "$unit_dir/$unit")
if [ -n "$tunables" ]; then
  ldso=$(ldd "$binary" | awk '/ld-linux/ { print $1; exit }')
  known=$("$ldso" --list-tunables 2>/dev/null) || {
    echo "FAIL: $unit sets GLIBC_TUNABLES, but '$ldso --list-tunables' fails: the C library is too old to be asked" >&2
    exit 1
  }
  old_ifs=$IFS
  IFS=:
  for tunable in $tunables; do
    name=${tunable%%=*}
    if ! printf '%s\n' "$known" | grep -q "^$name:"; then
      echo "FAIL: $unit sets the glibc tunable $name, which $ldso does not know" >&2
      exit 1
    fi
    echo "PASS: $unit sets the glibc tunable $name, which $ldso knows"
  done
  IFS=$old_ifs
fi

# `security` exits non-zero when the score exceeds --threshold (default
# 100, i.e. never), so a failure here is a real error.
report=$(systemd-analyze security --offline=yes --no-pager "$tmp/$unit" 2>&1) || {
  echo "FAIL: systemd-analyze security --offline=yes $unit:" >&2
  printf '%s\n' "$report" >&2
  exit 1
}
printf '%s\n' "$report" | grep -v '^ *✓' || true
score=$(printf '%s\n' "$report" | sed -n 's/.*Overall exposure level for [^:]*: *\([0-9.]*\).*/\1/p')
if [ -z "$score" ]; then
  echo "FAIL: no 'Overall exposure level' line in the security report of $unit" >&2
  exit 1
fi
echo "EXPOSURE: $unit $score"
