#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Sets up everything and runs the main job: qconv-bench (arguments are passed on; --help lists them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target qconv-bench
exec build/tools/qconv-bench "$@"
