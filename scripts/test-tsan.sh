#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the library and its tests with ThreadSanitizer in build-tsan/ and runs the concurrency
# tests (one Plan shared by many threads, the thread pool used by many callers at once).
# Exits non-zero on any failure or data race.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests

cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" \
  -DQCONV_SANITIZE=thread -DQCONV_BUILD_TOOLS=OFF -DQCONV_BUILD_PYTHON=OFF
cmake --build build-tsan --target qconv_concurrency_tests -j"$(nproc)"
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 ${TSAN_OPTIONS:-}" \
  ./build-tsan/tests/qconv_concurrency_tests --gtest_filter='Concurrency*:ThreadPool*'
