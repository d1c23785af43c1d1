#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up everything and runs the main job: qconv-bench (arguments are passed on; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --bench
# Only what the bench needs (install-deps.sh --bench has no GoogleTest or pybind11); test.sh turns
# the tests and the module back on in the same build tree, whose objects stay.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DQCONV_BUILD_TOOLS=ON \
  -DQCONV_BUILD_TESTS=OFF -DQCONV_BUILD_PYTHON=OFF >/dev/null
cmake --build build --target qconv-bench -j"$(nproc)" >&2  # the bench's own output stays clean
exec build/tools/qconv-bench "$@"
