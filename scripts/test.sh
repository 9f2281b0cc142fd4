#!/usr/bin/env bash
# Runs every fabricdiag test on a fresh Debian 12 machine: installs missing
# packages, then
#   1. lint: clang-format on every C++ file, clang-tidy (.clang-tidy) on every
#      source file of the product (cached per unit: scripts/clang-tidy-cached.py);
#   2. build (warnings are errors) and the fast unit tests (ctest -L unit);
#   3. every other test (end to end, deployment, benchmarks' smoke runs);
#   4. a build with AddressSanitizer + UndefinedBehaviorSanitizer and every
#      test again (but the loopback clusters that run in real time).
# A test that is skipped or disabled fails the run: a skip is not a pass.
#
#   scripts/test.sh                     # everything (what CI runs)
#   SKIP_LINT=1 SKIP_ASAN=1 scripts/test.sh   # faster while iterating
#   ctest --test-dir build -L unit      # the fast loop, after a build
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc)
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
  # Paths relative to the checkout in ccache's keys, so that a clone in
  # another folder (as CI makes) reuses what an earlier run compiled.
  export CCACHE_BASEDIR="$PWD" CCACHE_NOHASHDIR=1
fi

# Runs ctest with the given arguments; fails when a test fails, was skipped
# or is disabled.
run_ctest() {
  local log
  log=$(mktemp)
  local status=0
  ctest "$@" --output-on-failure 2>&1 | tee "$log" || status=$?
  if grep -qE '\*\*\*(Skipped|Not Run)' "$log"; then
    echo "FAILED: skipped or disabled tests (a skip is not a pass):"
    grep -E '\*\*\*(Skipped|Not Run)' "$log"
    status=1
  fi
  rm -f "$log"
  return "$status"
}

# Starts a stage: its name, the time the run has taken so far and the space
# left on the checkout's disk (a linker that runs out of it dies of SIGBUS,
# which says nothing of the cause).
stage() {
  printf '== %s (at %dm%02ds, %s free)\n' "$1" $((SECONDS / 60)) \
    $((SECONDS % 60)) "$(df -h --output=avail . | tail -1 | tr -d ' ')"
}

stage "configure"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${launcher[@]}" >/dev/null

if [ "${SKIP_LINT:-0}" != "1" ]; then
  stage "lint: clang-format"
  git ls-files '*.cc' '*.h' | xargs clang-format --dry-run --Werror
  stage "lint: clang-tidy"
  # The generated protobuf headers must exist for clang-tidy to parse.
  cmake --build build -j"$jobs" --target fabricdiag_generated_headers
  # Units unchanged since a clean lint are skipped (see the script).
  scripts/clang-tidy-cached.py -p build -j "$jobs" \
    "^$(pwd)/(agent|analysis|cli|client|cluster|collector|common|counters|gnmi|server|sim)/.*\\.cc$" \
    > build/clang-tidy.log 2>&1 || {
      grep -E 'error:|warning:' build/clang-tidy.log | sort -u
      echo "FAILED: clang-tidy (full log: build/clang-tidy.log)"
      exit 1
    }
  tail -1 build/clang-tidy.log
fi

stage "build (RelWithDebInfo)"
cmake --build build -j"$jobs"

stage "unit tests"
run_ctest --test-dir build -L unit -j"$jobs" --timeout 120

stage "other tests"
run_ctest --test-dir build -LE unit -j"$jobs" --timeout 300

if [ "${SKIP_ASAN:-0}" != "1" ]; then
  stage "build (ASan + UBSan)"
  # Line tables only (-g1): the sanitizers' reports name every frame's
  # function, file and line as with -g, and the tree is ~2 GB smaller (its
  # objects a third, its 75 test binaries a fifth).
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DCMAKE_CXX_FLAGS_DEBUG=-g1 \
    -DFABRICDIAG_SANITIZE=ON -DFABRICDIAG_BUILD_BENCH=OFF \
    "${launcher[@]}" >/dev/null
  cmake --build build-asan -j"$jobs"
  stage "tests (ASan + UBSan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest --test-dir build-asan -j"$jobs" --timeout 600
fi
stage "done"
