#!/usr/bin/env bash
# Installs qconv's build and test dependencies from Debian packages. Idempotent: packages already
# present are left alone, and nothing is fetched when everything is installed.
#
#   scripts/install-deps.sh            build + C++ tests + bench
#   scripts/install-deps.sh --python   also the Python module's dependencies and PyTorch (agreement tests)
set -euo pipefail

packages=(
  build-essential cmake ninja-build   # compiler and build system
  libgtest-dev libgmock-dev           # unit tests (GoogleTest)
  nlohmann-json3-dev                  # reads the shared JSON test vectors in the tests
  clang libclang-rt-14-dev            # libFuzzer and the sanitizer runtimes
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module and its tests
  python3-hypothesis                  # the Python fuzz-style tests of every face
)
if [[ "${1:-}" == "--python" ]]; then
  packages+=(python3-torch)           # agreement tests against PyTorch's quantized engines
fi

missing=()
for p in "${packages[@]}"; do
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
