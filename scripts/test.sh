#!/usr/bin/env bash
# Runs every fabricdiag test on a fresh Debian 12 machine: installs missing
# packages, builds (warnings are errors), runs the whole suite, then builds
# and runs it again under AddressSanitizer + UndefinedBehaviorSanitizer.
#
#   scripts/test.sh            # everything
#   SKIP_ASAN=1 scripts/test.sh  # only the normal build (faster while iterating)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh

jobs=$(nproc)

echo "== build (RelWithDebInfo)"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$jobs"

echo "== tests"
ctest --test-dir build --output-on-failure -j"$jobs" --timeout 300

if [ "${SKIP_ASAN:-0}" != "1" ]; then
  echo "== build (ASan + UBSan)"
  cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug \
    -DFABRICDIAG_SANITIZE=ON -DFABRICDIAG_BUILD_BENCH=OFF >/dev/null
  cmake --build build-asan -j"$jobs"
  echo "== tests (ASan + UBSan)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 \
  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    ctest --test-dir build-asan --output-on-failure -j"$jobs" --timeout 600
fi
