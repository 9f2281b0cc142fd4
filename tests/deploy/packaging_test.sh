#!/bin/sh
# Builds the .deb packages from a build tree and checks them.
#
#   packaging_test.sh BUILD_DIR SOURCE_DIR VERSION [SANITIZE]
#
# cpack builds nothing: the agent, collector, CLI and gNMI bridge must be built
# in BUILD_DIR (a full build does it). The packages go to a temporary
# directory, never into BUILD_DIR (cpack only leaves its
# install_manifest_*.txt there). What is checked, per package:
#   1. contents (dpkg-deb -c): exactly the expected files, owned by root,
#      binaries 0755, stripped and loadable (ldd), the simulator in no
#      package; the units
#      and analysis.yaml are byte-identical to deploy/;
#   2. control (dpkg-deb -I/-f): name, version, architecture, Depends that
#      name the runtime libraries (from dpkg-shlibdeps) and are all
#      installed on this (Debian 12) host, no sanitizer runtime;
#   3. control files (dpkg-deb -e): conffiles list exactly the /etc files,
#      maintainer scripts are executable, #!/bin/sh, `sh -n` clean (and
#      checkbashisms clean when installed);
#   4. maintainer scripts with a running systemd (simulated: the scripts'
#      /run/systemd/system probe points at a temporary directory, and
#      systemctl/deb-systemd-* are logging stubs): start on install,
#      restart on upgrade, no stop on upgrade, stop and daemon-reload on
#      remove;
#   5. a real life cycle in a throwaway root (dpkg --root, scripts run
#      chrootless with DPKG_ROOT, the real deb-systemd-helper): install
#      enables both units, remove keeps an edited conffile and masks,
#      purge removes conffiles, enablement and the collector's state.
#   6. python3-fabricdiag (Architecture: all): exactly the modules of
#      python/fabricdiag, byte-identical, and its docs; Depends on python3
#      only; installed into the throwaway root it imports and its command
#      line works; purge leaves no __pycache__ behind.
# Exits 77 (skipped) when cpack/dpkg-deb/dpkg are missing, or when SANITIZE
# is ON: a sanitized build is not something to ship (its binaries need
# libasan), and the packaging rules are the same as in the release tree.
set -eu

if [ "$#" -lt 3 ] || [ "$#" -gt 4 ]; then
  echo "usage: $0 BUILD_DIR SOURCE_DIR VERSION [SANITIZE]" >&2
  exit 2
fi
build_dir=$1
src_dir=$2
version=$3
sanitize=${4:-OFF}

case $sanitize in
  ON|on|1|TRUE|true|YES|yes)
    echo "SKIP: sanitized build (FABRICDIAG_SANITIZE=ON): packages are built from a release tree"
    exit 77
    ;;
esac
for tool in cpack dpkg-deb dpkg dpkg-query; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "SKIP: $tool not found; cannot build or inspect .deb packages"
    exit 77
  fi
done
if [ ! -f "$build_dir/CPackConfig.cmake" ]; then
  echo "FAIL: $build_dir/CPackConfig.cmake missing: deploy/packaging.cmake not included?" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT INT TERM
failures=0
fail() {
  echo "FAIL: $*" >&2
  failures=$((failures + 1))
}
# A section prints PASS only if it added no failure.
section_start() { section_failures=$failures; }
section_pass() {
  if [ "$failures" -eq "$section_failures" ]; then
    echo "PASS: $*"
  fi
}

# --- build the packages --------------------------------------------------------
if ! cpack --config "$build_dir/CPackConfig.cmake" -B "$tmp/out" >"$tmp/cpack.log" 2>&1; then
  echo "FAIL: cpack failed (are fabricdiag-agent, fabricdiag-collector and fabricdiag built?):" >&2
  cat "$tmp/cpack.log" >&2
  exit 1
fi
arch=$(dpkg --print-architecture)
agent_deb=$tmp/out/fabricdiag-agent_${version}_${arch}.deb
collector_deb=$tmp/out/fabricdiag-collector_${version}_${arch}.deb
python_deb=$tmp/out/python3-fabricdiag_${version}_all.deb
for deb in "$agent_deb" "$collector_deb" "$python_deb"; do
  if [ ! -f "$deb" ]; then
    echo "FAIL: cpack did not produce $(basename "$deb"); it produced:" >&2
    ls "$tmp/out" >&2
    exit 1
  fi
done
debs=
for f in "$tmp"/out/*.deb; do
  debs="$debs$(basename "$f") "
done
if [ "$debs" != "fabricdiag-agent_${version}_${arch}.deb fabricdiag-collector_${version}_${arch}.deb python3-fabricdiag_${version}_all.deb " ]; then
  fail "cpack produced other packages than the agent's, the collector's and the Python module's: $debs"
fi
echo "PASS: cpack built $debs"

# --- per package: contents, control, scripts ----------------------------------
# check_package DEB PACKAGE UNIT "FILES..." "CONFFILES..." "DEPENDS..."
check_package() {
  deb=$1 pkg=$2 unit=$3 files=$4 conffiles=$5 depends=$6
  section_start
  dir=$tmp/$pkg
  mkdir -p "$dir"

  # 1. contents: the regular files, exactly.
  dpkg-deb -c "$deb" >"$dir/contents"
  awk '$1 !~ /^d/ { print $6 }' "$dir/contents" | sort >"$dir/files.actual"
  # shellcheck disable=SC2086 # one file per word, on purpose
  printf '%s\n' $files | sort >"$dir/files.expected"
  if ! cmp -s "$dir/files.expected" "$dir/files.actual"; then
    fail "$pkg: contents differ from the expected files (- expected, + actual):"
    diff -u "$dir/files.expected" "$dir/files.actual" | sed -n '3,$p' >&2 || true
  fi
  if grep -q 'fabricdiag-sim' "$dir/contents"; then
    fail "$pkg ships the simulator"
  fi
  if awk '$2 != "root/root"' "$dir/contents" | grep -q .; then
    fail "$pkg has files not owned by root/root:"
    awk '$2 != "root/root"' "$dir/contents" >&2
  fi
  dpkg-deb -x "$deb" "$dir/root"
  for f in $files; do
    case $f in
      ./usr/bin/*)
        if [ "$(stat -c %a "$dir/root/$f")" != 755 ]; then
          fail "$pkg: $f is not mode 0755"
        fi
        if command -v readelf >/dev/null 2>&1 &&
           readelf -S "$dir/root/$f" | grep -q '\.debug_info'; then
          fail "$pkg: $f is not stripped (CPACK_STRIP_FILES)"
        fi
        # Stripping must leave a loadable program whose libraries exist.
        if command -v ldd >/dev/null 2>&1 &&
           ldd "$dir/root/$f" 2>&1 | grep -q 'not found'; then
          fail "$pkg: $f needs libraries that are missing here:"
          ldd "$dir/root/$f" | grep 'not found' >&2
        fi
        ;;
    esac
  done
  if ! cmp -s "$src_dir/deploy/systemd/$unit" "$dir/root/lib/systemd/system/$unit"; then
    fail "$pkg: /lib/systemd/system/$unit differs from deploy/systemd/$unit"
  fi

  # 2. control fields.
  for field in Package:$pkg Version:$version Architecture:$arch; do
    want=${field#*:}
    got=$(dpkg-deb -f "$deb" "${field%%:*}")
    if [ "$got" != "$want" ]; then
      fail "$pkg: ${field%%:*} is '$got', expected '$want'"
    fi
  done
  deps=$(dpkg-deb -f "$deb" Depends)
  echo "DEPENDS: $pkg: $deps"
  for want in $depends; do
    case ", $deps," in
      *", $want "*|*", $want,"*) ;;
      *) fail "$pkg: Depends lacks $want" ;;
    esac
  done
  case $deps in
    *libasan*|*libubsan*) fail "$pkg depends on a sanitizer runtime: $deps" ;;
  esac
  # Every dependency must exist on Debian 12: the binaries run here, so
  # each package named must be installed here.
  for name in $(printf '%s\n' "$deps" | tr ',' '\n' | sed 's/^ *//; s/[ (].*//'); do
    if ! dpkg-query -W -f='${Status}\n' "$name" 2>/dev/null | grep -q ' installed$'; then
      fail "$pkg: Depends names $name, which is not an installed package here"
    fi
  done

  # 3. control files.
  dpkg-deb -e "$deb" "$dir/control"
  # shellcheck disable=SC2086 # one file per word, on purpose
  printf '%s\n' $conffiles | sort >"$dir/conffiles.expected"
  if [ ! -f "$dir/control/conffiles" ]; then
    fail "$pkg has no conffiles"
  else
    sort "$dir/control/conffiles" >"$dir/conffiles.actual"
    if ! cmp -s "$dir/conffiles.expected" "$dir/conffiles.actual"; then
      fail "$pkg: conffiles differ (- expected, + actual):"
      diff -u "$dir/conffiles.expected" "$dir/conffiles.actual" | sed -n '3,$p' >&2 || true
    fi
  fi
  # Every file under /etc is a conffile (else dpkg overwrites admin edits).
  grep '^\./etc/' "$dir/files.actual" | sed 's|^\.||' | sort >"$dir/etc.actual"
  if ! cmp -s "$dir/conffiles.expected" "$dir/etc.actual"; then
    fail "$pkg: files under /etc and conffiles disagree"
  fi
  for script in postinst prerm postrm; do
    s=$dir/control/$script
    if [ ! -f "$s" ]; then
      fail "$pkg has no $script"
      continue
    fi
    if [ "$(stat -c %a "$s")" != 755 ]; then
      fail "$pkg: $script is not mode 0755"
    fi
    if [ "$(head -n 1 "$s")" != "#!/bin/sh" ]; then
      fail "$pkg: $script does not start with #!/bin/sh"
    fi
    if ! sh -n "$s"; then
      fail "$pkg: $script is not valid sh"
    fi
    if grep -q '@[A-Z_]*@' "$s"; then
      fail "$pkg: $script has unsubstituted @VARIABLES@"
    fi
    if ! grep -q "^unit=$unit\$" "$s"; then
      fail "$pkg: $script does not handle $unit"
    fi
    if command -v checkbashisms >/dev/null 2>&1 && ! checkbashisms "$s"; then
      fail "$pkg: $script has bashisms"
    fi
  done
  section_pass "$pkg contents, control and scripts checked"
}

# Each package ships the user documentation, docs/*.md, under its doc dir.
docs_of() {
  (cd "$src_dir" && for f in docs/*.md; do echo "./usr/share/doc/$1/$f"; done)
}

check_package "$agent_deb" fabricdiag-agent fabricdiag-agent.service "
  ./etc/default/fabricdiag-agent
  ./lib/systemd/system/fabricdiag-agent.service
  ./usr/bin/fabricdiag-agent
  ./usr/share/doc/fabricdiag-agent/README.md
  $(docs_of fabricdiag-agent)" "
  /etc/default/fabricdiag-agent" "
  libc6 libstdc++6 libgrpc++1.51 libprotobuf32 libabsl20220623
  libibverbs1 libevent-core-2.1-7 zlib1g"
check_package "$collector_deb" fabricdiag-collector fabricdiag-collector.service "
  ./etc/default/fabricdiag-collector
  ./etc/default/fabricdiag-gnmi-bridge
  ./etc/fabricdiag/analysis.yaml
  ./lib/systemd/system/fabricdiag-collector.service
  ./lib/systemd/system/fabricdiag-gnmi-bridge.service
  ./usr/bin/fabricdiag
  ./usr/bin/fabricdiag-collector
  ./usr/bin/fabricdiag-gnmi-bridge
  ./usr/share/doc/fabricdiag-collector/README.md
  $(docs_of fabricdiag-collector)" "
  /etc/default/fabricdiag-collector
  /etc/default/fabricdiag-gnmi-bridge
  /etc/fabricdiag/analysis.yaml" "
  libc6 libstdc++6 libgrpc++1.51 libprotobuf32 libabsl20220623
  libprometheus-cpp-core1.0 libyaml-cpp0.7 libevent-core-2.1-7"
if ! cmp -s "$src_dir/deploy/analysis.yaml" "$tmp/fabricdiag-collector/root/etc/fabricdiag/analysis.yaml"; then
  fail "fabricdiag-collector: /etc/fabricdiag/analysis.yaml differs from deploy/analysis.yaml"
fi

# --- 4. maintainer scripts against a (simulated) running systemd --------------
# The stubs log "tool args" to calls.log; deb-systemd-helper's was-enabled
# answers "yes" (a first install).
section_start
stubs=$tmp/stubs
mkdir -p "$stubs" "$tmp/run-systemd-system"
for tool in systemctl deb-systemd-invoke deb-systemd-helper; do
  cat >"$stubs/$tool" <<EOF
#!/bin/sh
echo "$tool \$*" >>"$tmp/calls.log"
exit 0
EOF
  chmod 0755 "$stubs/$tool"
done
# run_script PKG SCRIPT ARGS...: runs the package's script (with the
# systemd probe redirected) and leaves the calls it made in $tmp/calls.log.
run_script() {
  pkg=$1 script=$2
  shift 2
  sed -e "s|/run/systemd/system|$tmp/run-systemd-system|g" \
      -e "s|/etc/fabricdiag|$tmp/etc-fabricdiag|g" \
    "$tmp/$pkg/control/$script" >"$tmp/$pkg.$script"
  : >"$tmp/calls.log"
  if ! env -u DPKG_ROOT PATH="$stubs:$PATH" sh "$tmp/$pkg.$script" "$@"; then
    fail "$pkg: $script $* exited non-zero"
  fi
}
# expect_calls PKG WHAT EXPECTED: the calls, one per line, in order.
expect_calls() {
  if [ "$(cat "$tmp/calls.log")" != "$3" ]; then
    fail "$1: $2 made these calls:
$(cat "$tmp/calls.log")
expected:
$3"
  fi
}
for pkg in fabricdiag-agent fabricdiag-collector; do
  u=$pkg.service
  run_script "$pkg" postinst configure
  expect_calls "$pkg" "postinst configure (first install)" "deb-systemd-helper unmask $u
deb-systemd-helper --quiet was-enabled $u
deb-systemd-helper enable $u
systemctl --system daemon-reload
deb-systemd-invoke start $u"
  run_script "$pkg" postinst configure 0.0.1
  expect_calls "$pkg" "postinst configure 0.0.1 (upgrade)" "deb-systemd-helper unmask $u
deb-systemd-helper --quiet was-enabled $u
deb-systemd-helper enable $u
systemctl --system daemon-reload
deb-systemd-invoke restart $u"
  run_script "$pkg" prerm upgrade "$version"
  expect_calls "$pkg" "prerm upgrade" ""
  run_script "$pkg" prerm remove
  expect_calls "$pkg" "prerm remove" "deb-systemd-invoke stop $u"
  run_script "$pkg" postrm remove
  expect_calls "$pkg" "postrm remove" "systemctl --system daemon-reload
deb-systemd-helper mask $u"
  run_script "$pkg" postrm upgrade "$version"
  expect_calls "$pkg" "postrm upgrade" ""
done
# The ingest token the units load: the agent's postinst leaves an empty
# 0600 file, the collector's fills it (and never replaces a token).
tokens=$tmp/etc-fabricdiag/ingest-token
rm -f "$tokens"
run_script fabricdiag-agent postinst configure
if [ ! -f "$tokens" ] || [ -s "$tokens" ]; then
  fail "fabricdiag-agent: postinst did not leave an empty $tokens"
fi
run_script fabricdiag-collector postinst configure
token=$(cat "$tokens" 2>/dev/null || true)
if ! printf '%s' "$token" | grep -Eqx '[0-9a-f]{64}'; then
  fail "fabricdiag-collector: postinst made no 64-hex-digit token: '$token'"
fi
if [ "$(stat -c %a "$tokens")" != 600 ]; then
  fail "ingest token mode is $(stat -c %a "$tokens"), not 600"
fi
run_script fabricdiag-collector postinst configure 0.0.1
run_script fabricdiag-agent postinst configure 0.0.1
[ "$(cat "$tokens")" = "$token" ] || fail "an upgrade replaced the ingest token"
section_pass "maintainer scripts start, restart, stop and reload as dh_installsystemd does"

# --- 5. life cycle in a throwaway root --------------------------------------------
# --force-depends: the root has none of the libraries; --force-script-
# chrootless: the root has no /bin/sh either. dpkg exports DPKG_ROOT, so the
# scripts touch only the root and never the host's systemd.
section_start
root=$tmp/root
mkdir -p "$root/var/lib/dpkg/info" "$root/var/lib/dpkg/updates" "$root/var/lib/dpkg/triggers"
touch "$root/var/lib/dpkg/status" "$root/var/lib/dpkg/available"
rdpkg() {
  if ! dpkg --root="$root" --log=/dev/null --force-script-chrootless \
       --force-depends --force-confold "$@" >"$tmp/dpkg.log" 2>&1; then
    fail "dpkg --root $* failed:"
    cat "$tmp/dpkg.log" >&2
  fi
}
wants=$root/etc/systemd/system/multi-user.target.wants

rdpkg -i "$agent_deb" "$collector_deb"
for f in usr/bin/fabricdiag-agent usr/bin/fabricdiag-collector usr/bin/fabricdiag \
         usr/bin/fabricdiag-gnmi-bridge lib/systemd/system/fabricdiag-gnmi-bridge.service \
         etc/fabricdiag/analysis.yaml etc/default/fabricdiag-agent \
         etc/default/fabricdiag-collector etc/default/fabricdiag-gnmi-bridge; do
  [ -f "$root/$f" ] || fail "after install: /$f missing"
done
# The bridge needs the switches' credentials and TLS before it is useful:
# shipped, not enabled.
[ ! -e "$wants/fabricdiag-gnmi-bridge.service" ] ||
  fail "after install: fabricdiag-gnmi-bridge.service is enabled; it should wait for the admin"
if command -v deb-systemd-helper >/dev/null 2>&1; then
  for u in fabricdiag-agent.service fabricdiag-collector.service; do
    if [ "$(readlink "$wants/$u" 2>/dev/null)" != "/lib/systemd/system/$u" ]; then
      fail "after install: $u is not enabled (no multi-user.target.wants symlink)"
    fi
  done
fi
if ! grep -Eqx '[0-9a-f]{64}' "$root/etc/fabricdiag/ingest-token" 2>/dev/null; then
  fail "after install: /etc/fabricdiag/ingest-token holds no generated token"
fi
confs=$(dpkg-query --admindir="$root/var/lib/dpkg" -W -f='${Conffiles}' fabricdiag-collector)
case $confs in
  *"/etc/fabricdiag/analysis.yaml "*) ;;
  *) fail "after install: dpkg does not track /etc/fabricdiag/analysis.yaml as a conffile" ;;
esac

# The collector's state as systemd lays it out for a DynamicUser service.
mkdir -p "$root/var/lib/private/fabricdiag"
echo state >"$root/var/lib/private/fabricdiag/layouts"
ln -s private/fabricdiag "$root/var/lib/fabricdiag"
# An admin's edit survives removal.
echo 'FABRICDIAG_AGENT_ARGS="--interval=2s"' >>"$root/etc/default/fabricdiag-agent"

rdpkg -r fabricdiag-agent
[ ! -e "$root/usr/bin/fabricdiag-agent" ] || fail "after remove: the agent binary is still there"
grep -q -- '--interval=2s' "$root/etc/default/fabricdiag-agent" 2>/dev/null ||
  fail "after remove: the edited /etc/default/fabricdiag-agent is gone"
[ ! -e "$wants/fabricdiag-agent.service" ] || fail "after remove: fabricdiag-agent.service is still enabled"

rdpkg -P fabricdiag-agent
[ -f "$root/etc/fabricdiag/ingest-token" ] ||
  fail "after purging the agent: the collector's ingest token is gone"
rdpkg -P fabricdiag-collector
for f in etc/default/fabricdiag-agent etc/default/fabricdiag-collector \
         etc/default/fabricdiag-gnmi-bridge usr/bin/fabricdiag-gnmi-bridge \
         lib/systemd/system/fabricdiag-gnmi-bridge.service \
         etc/fabricdiag/ingest-token \
         etc/fabricdiag/analysis.yaml usr/bin/fabricdiag lib/systemd/system/fabricdiag-collector.service \
         var/lib/fabricdiag var/lib/private/fabricdiag \
         etc/systemd/system/multi-user.target.wants/fabricdiag-collector.service \
         etc/systemd/system/fabricdiag-agent.service \
         var/lib/systemd/deb-systemd-helper-enabled/fabricdiag-agent.service.dsh-also; do
  if [ -e "$root/$f" ] || [ -L "$root/$f" ]; then
    fail "after purge: /$f is still there"
  fi
done
left=$(dpkg-query --admindir="$root/var/lib/dpkg" -W 2>/dev/null || true)
[ -z "$left" ] || fail "after purge: dpkg still knows: $left"
section_pass "install, remove and purge in a throwaway root"

# --- 6. the Python module ------------------------------------------------------
section_start
pdir=$tmp/python3-fabricdiag
mkdir -p "$pdir"
dpkg-deb -c "$python_deb" >"$pdir/contents"
awk '$1 !~ /^d/ { print $6 }' "$pdir/contents" | sort >"$pdir/files.actual"
{
  for f in "$src_dir"/python/fabricdiag/*.py; do
    echo "./usr/lib/python3/dist-packages/fabricdiag/$(basename "$f")"
  done
  echo ./usr/share/doc/python3-fabricdiag/README.md
  echo ./usr/share/doc/python3-fabricdiag/integrations.md
} | sort >"$pdir/files.expected"
if ! cmp -s "$pdir/files.expected" "$pdir/files.actual"; then
  fail "python3-fabricdiag: contents differ from the expected files (- expected, + actual):"
  diff -u "$pdir/files.expected" "$pdir/files.actual" | sed -n '3,$p' >&2 || true
fi
if awk '$2 != "root/root"' "$pdir/contents" | grep -q .; then
  fail "python3-fabricdiag has files not owned by root/root"
fi
dpkg-deb -x "$python_deb" "$pdir/root"
for f in "$src_dir"/python/fabricdiag/*.py; do
  cmp -s "$f" "$pdir/root/usr/lib/python3/dist-packages/fabricdiag/$(basename "$f")" ||
    fail "python3-fabricdiag: $(basename "$f") differs from python/fabricdiag"
done
for field in Package:python3-fabricdiag Version:$version Architecture:all; do
  got=$(dpkg-deb -f "$python_deb" "${field%%:*}")
  [ "$got" = "${field#*:}" ] || fail "python3-fabricdiag: ${field%%:*} is '$got', expected '${field#*:}'"
done
deps=$(dpkg-deb -f "$python_deb" Depends)
echo "DEPENDS: python3-fabricdiag: $deps"
[ "$deps" = "python3 (>= 3.8)" ] || fail "python3-fabricdiag: Depends is '$deps', expected python3 only"
dpkg-deb -e "$python_deb" "$pdir/control"
[ ! -e "$pdir/control/conffiles" ] || fail "python3-fabricdiag has conffiles"
s=$pdir/control/prerm
if [ ! -f "$s" ] || [ "$(stat -c %a "$s")" != 755 ] || [ "$(head -n 1 "$s")" != "#!/bin/sh" ] ||
   ! sh -n "$s"; then
  fail "python3-fabricdiag: prerm missing, not 0755, not #!/bin/sh or not valid sh"
fi
# Installed: importable from the root's dist-packages, the CLI answers.
rdpkg -i "$python_deb"
site=$root/usr/lib/python3/dist-packages
if ! out=$(cd / && PYTHONPATH=$site python3 -m fabricdiag declare --job pkg-test --hosts a,b \
             --gpus-per-node 8 --tp 8 --print 2>&1); then
  fail "python3-fabricdiag: python3 -m fabricdiag failed: $out"
else
  case $out in
    *'"dp": 2'*) ;;
    *) fail "python3-fabricdiag: python3 -m fabricdiag --print printed: $out" ;;
  esac
fi
# An import by root leaves __pycache__ in the package; purge removes it.
(cd / && PYTHONPATH=$site python3 -c 'import fabricdiag.client, fabricdiag.layout') ||
  fail "python3-fabricdiag: import fabricdiag.client failed"
rdpkg -P python3-fabricdiag
if [ -e "$site/fabricdiag" ]; then
  fail "after purge: /usr/lib/python3/dist-packages/fabricdiag is still there"
fi
section_pass "python3-fabricdiag contents, control, import and purge checked"

if [ "$failures" -ne 0 ]; then
  echo "FAIL: $failures packaging check(s) failed" >&2
  exit 1
fi
echo "PASS: packages checked"
