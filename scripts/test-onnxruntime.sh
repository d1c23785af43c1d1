#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agreement test against ONNX Runtime itself (python/tests/test_onnxruntime_agreement.py):
# QLinearConv and ConvInteger, random single-node ONNX models run in ORT's CPU kernels and compared
# element by element with qconv. Prints both QLinearConv mismatch counts (semantics="onnxruntime"
# against ORT, semantics="reference" against the ONNX reference formula) and ConvInteger's.
#
#   scripts/test-onnxruntime.sh     ORT version: $QCONV_ONNXRUNTIME_VERSION, else 1.30.0
#
# Installs Node.js, npm and python3-onnx from Debian when missing (scripts/install-deps.sh), and
# the npm package onnxruntime-node into .cache/onnxruntime-node (ignored by git) with
# --ignore-scripts: its install script only fetches GPU parts, from a host CI cannot reach; the
# CPU library is in the tarball. Builds the Python module in build/ when needed.
set -euo pipefail
cd "$(dirname "$0")/.."

version="${QCONV_ONNXRUNTIME_VERSION:-1.30.0}"
prefix="$PWD/.cache/onnxruntime-node"
python=/usr/bin/python3

scripts/install-deps.sh --python --onnxruntime

package="$prefix/node_modules/onnxruntime-node/package.json"
installed=""
if [[ -f "$package" ]]; then installed=$(node -p "require('$package').version"); fi
if [[ "$installed" != "$version" ]]; then
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund --no-save \
    "onnxruntime-node@$version"
fi

if [[ ! -f build/build.ninja ]]; then  # scripts/test.sh's build, or only the Python module
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DQCONV_BUILD_TESTS=OFF \
    -DQCONV_BUILD_TOOLS=OFF -DQCONV_BUILD_PYTHON=ON -DPython_EXECUTABLE="$python"
fi
cmake --build build

QCONV_REQUIRE_ONNXRUNTIME=1 QCONV_ONNXRUNTIME_NODE_MODULES="$prefix/node_modules" \
  PYTHONPATH="$PWD/build/python" "$python" -m pytest -q -rs python/tests/test_onnxruntime_agreement.py
