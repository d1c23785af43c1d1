#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The library and its C++ tests cross-compiled for 64-bit ARM Linux (cmake/aarch64-linux-gnu.cmake)
# and run under qemu-user: every engine this emulated CPU has — `-cpu max` has the dot product, so
# neon_dot and neon both — against the reference engine. Release build in build-arm64/.
#
#   scripts/test-arm64.sh            build, then run every C++ test under qemu-aarch64 -cpu max
#
# Left out for the target, each run by the host build instead: the Python module and its tests,
# qconv-bench and its smoke test (its peers, oneDNN and the rest, exist only for the host), the
# installed-package consumer and the repository checks (host tools; tests/CMakeLists.txt).
# Under emulation the conformance suite runs fewer random problems (QCONV_CONFORMANCE_PROBLEMS,
# default 400 here; 2000 natively), the fixed edge cases and every scheme in full.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/install-deps.sh --arm64
build=build-arm64
jobs=$(nproc)
start=$SECONDS
cmake -S . -B "$build" -G Ninja -DCMAKE_TOOLCHAIN_FILE="$PWD/cmake/aarch64-linux-gnu.cmake" \
  -DCMAKE_BUILD_TYPE=Release -DQCONV_BUILD_TESTS=ON -DQCONV_BUILD_TOOLS=OFF \
  -DQCONV_BUILD_PYTHON=OFF -DQCONV_BUILD_FUZZERS=OFF
cmake --build "$build" -j"$jobs"
built=$SECONDS
export QCONV_CONFORMANCE_PROBLEMS="${QCONV_CONFORMANCE_PROBLEMS:-400}"
ctest --test-dir "$build" --output-on-failure -j"$jobs"
echo "test-arm64.sh: cross build $((built - start)) s, tests under qemu $((SECONDS - built)) s"
