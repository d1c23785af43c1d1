#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The library and its C++ tests cross-compiled for 64-bit ARM Linux (cmake/aarch64-linux-gnu.cmake)
# and run under qemu-user: every engine this emulated CPU has — `-cpu max` has the dot product, so
# neon_dot and neon both — against the reference engine, the whole suite as natively. Then the
# engine conformance's random problems once more on a CPU without the dot product (Cortex-A53,
# ARMv8.0): there neon_dot must not be offered, and neon must run without it (its code is the
# same on both CPUs, so the rest of the suite need not run twice). Release build in build-arm64/.
#
#   scripts/test-arm64.sh            build, then run every C++ test under qemu-aarch64
#
# Left out for the target, each run by the host build instead: the Python module and its tests,
# qconv-bench and its smoke test (its peers, oneDNN and the rest, exist only for the host), the
# installed-package consumer and the repository checks (host tools; tests/CMakeLists.txt). Built
# without pthreadpool: Debian's libpthreadpool-dev cannot be installed for a second architecture
# beside the host's, so RunOptions::pool is refused there (tests/host_pool_test.cpp checks that).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --arm64
build=build-arm64
jobs=$(nproc)
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DQCONV_BUILD_TESTS=ON -DQCONV_BUILD_TOOLS=OFF \
  -DQCONV_BUILD_PYTHON=OFF -DQCONV_BUILD_FUZZERS=OFF -DQCONV_WITH_PTHREADPOOL=OFF
cmake --build "$build" -j"$jobs"
built=$SECONDS
ctest --test-dir "$build" --output-on-failure -j"$jobs"

log="$build/cortex-a53.log"
qemu-aarch64 -cpu cortex-a53 -L /usr/aarch64-linux-gnu "$build/tests/qconv_tests" \
  --gtest_filter='EngineConformanceCoverage.*:Engines/EngineConformance.RandomProblemsBitExact/*' >"$log" 2>&1 ||
  { cat "$log"; exit 1; }
grep '^\[ conformance \]' "$log"
grep -q 'engine neon_dot: SKIPPED: this CPU lacks neon-dot' "$log" &&
  grep -q 'neon: [0-9]* problems bit-exact' "$log" ||
  { echo "test-arm64.sh: on a Cortex-A53, neon_dot must be skipped and neon tested" >&2; exit 1; }
echo "test-arm64.sh: cross build $((built - start)) s, tests under qemu $((SECONDS - built)) s"
