#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up everything and runs the test suite: the C++ tests (ctest) and the Python tests (pytest).
#
#   scripts/test.sh                              Release build in build/, C++ and Python tests
#   scripts/test.sh --sanitize address,undefined Debug build with sanitizers in build-<name>/, C++ tests
set -euo pipefail
cd "$(dirname "$0")/.."

sanitize=""
if [[ "${1:-}" == "--sanitize" ]]; then
  sanitize="${2:?--sanitize needs a list, e.g. address,undefined}"
fi

python=/usr/bin/python3  # Debian's Python: the one python3-numpy, pybind11 and python3-torch serve
jobs=$(nproc)

if [[ -z "$sanitize" ]]; then
  scripts/install-deps.sh --tests --python
  build=build
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DQCONV_BUILD_TESTS=ON \
    -DQCONV_BUILD_TOOLS=ON -DQCONV_BUILD_PYTHON=ON -DPython_EXECUTABLE="$python"
elif [[ "$sanitize" == address,undefined ]]; then
  scripts/configure-asan.sh  # shared with the fuzzers: the library is instrumented once for both
  build=build-address-undefined
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
else
  scripts/install-deps.sh --tests
  build="build-${sanitize//,/-}"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS="-O1" \
    -DQCONV_SANITIZE="$sanitize" -DQCONV_BUILD_TESTS=ON -DQCONV_BUILD_PYTHON=OFF
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
fi
cmake --build "$build" -j"$jobs"
ctest --test-dir "$build" --output-on-failure -j"$jobs"

if [[ -z "$sanitize" && -d python/tests ]]; then
  PYTHONPATH="$PWD/$build/python" "$python" -m pytest -q python/tests
fi
