#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Installs from Debian packages what the chosen tasks need, and nothing else. Idempotent: packages
# already present are left alone, and nothing is fetched when everything is installed.
#
#   scripts/install-deps.sh [TASK...]
#
#   (always)  the C++ build: compiler, CMake, Ninja, pthreadpool (all the library needs)
#   --bench   the bench (scripts/bench.sh)
#   --tests   the C++ test suite (scripts/test.sh, test-tsan.sh; sanitizers come with g++)
#   --python  the Python module, its tests, the PyTorch agreement and the stub check
#   --pip     installing the Python package with pip into a venv (scripts/test-pip.sh)
#   --fuzz    the libFuzzer targets (scripts/fuzz.sh: clang and its sanitizer runtimes)
#   --onnxruntime  the agreement test against ONNX Runtime (scripts/test-onnxruntime.sh):
#             Node.js and npm (a node or npm already on the PATH is used as it is), python3-onnx;
#             the onnxruntime-node package itself comes from npm
#   --arm64   the aarch64 cross build and its tests under qemu (scripts/test-arm64.sh): the cross
#             compiler, qemu-user, GoogleTest's sources (built for the target) and the JSON headers
#   --ci      what .ci/run adds to the tasks above: ccache, shared by its builds of the same sources
#   --all     all of the above
set -euo pipefail

usage() { sed -n '3,20s/^# \{0,1\}//p' "$0"; }

build=(build-essential cmake ninja-build
       libpthreadpool-dev)                          # RunOptions::pool: the host's thread pool
bench=(libdnnl-dev                                  # oneDNN, the peer the bench times beside qconv
       linux-perf                                   # perf, to see where a kernel spends its time
       nlohmann-json3-dev                           # its JSON records
       python3-matplotlib)                          # scripts/plot-bench.py
tests=(libgtest-dev libgmock-dev nlohmann-json3-dev) # GoogleTest; the JSON test vectors
python=(python3-dev pybind11-dev python3-numpy      # the module
        python3-pytest python3-torch python3-mypy   # its tests, PyTorch agreement, stubs
        python3-hypothesis)                         # the fuzz-style tests of every face
pip=(python3-dev pybind11-dev python3-numpy python3-pip python3-venv python3-setuptools
     python3-wheel python3-torch python3-mypy)
fuzz=(clang libclang-rt-14-dev)
arm64=(g++-aarch64-linux-gnu                        # the cross compiler and the target's libc
       qemu-user                                    # qemu-aarch64, to run the tests
       libgtest-dev libgmock-dev                    # /usr/src/googletest, built for the target
       nlohmann-json3-dev)                          # header-only: the same headers serve both
ci=(ccache)                                         # one compiler cache for CI's two Release builds
# python3-onnx builds the models; Node.js runs ORT. A node or npm already on the PATH (e.g.
# NodeSource's nodejs, which bundles npm and conflicts with Debian's npm) is used as it is.
onnxruntime=(python3-onnx)
command -v node >/dev/null || onnxruntime+=(nodejs)
command -v npm >/dev/null || onnxruntime+=(npm)

packages=("${build[@]}")
for task in "$@"; do
  case "$task" in
    --bench) packages+=("${bench[@]}") ;;
    --tests) packages+=("${tests[@]}") ;;
    --python) packages+=("${python[@]}") ;;
    --pip) packages+=("${pip[@]}") ;;
    --fuzz) packages+=("${fuzz[@]}") ;;
    --onnxruntime) packages+=("${onnxruntime[@]}") ;;
    --arm64) packages+=("${arm64[@]}") ;;
    --ci) packages+=("${ci[@]}") ;;
    --all)
      packages+=("${bench[@]}" "${tests[@]}" "${python[@]}" "${pip[@]}" "${fuzz[@]}"
                 "${onnxruntime[@]}" "${arm64[@]}" "${ci[@]}")
      ;;
    -h | --help) usage; exit 0 ;;
    *) echo "install-deps.sh: unknown task '$task'" >&2; usage >&2; exit 2 ;;
  esac
done

missing=()
for p in $(printf '%s\n' "${packages[@]}" | sort -u); do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
