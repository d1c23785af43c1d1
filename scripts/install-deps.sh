#!/usr/bin/env bash
# Installs qconv's build and test dependencies from Debian packages. Idempotent: packages already
# present are left alone, and nothing is fetched when everything is installed.
#
#   scripts/install-deps.sh                 build + C++ tests + bench
#   scripts/install-deps.sh --python        also the Python module's dependencies and PyTorch
#                                           (agreement tests)
#   scripts/install-deps.sh --onnxruntime   also Node.js, npm and python3-onnx, for the agreement
#                                           test against ONNX Runtime (scripts/test-onnxruntime.sh;
#                                           the onnxruntime-node package itself comes from npm)
# The options combine.
set -euo pipefail

packages=(
  build-essential cmake ninja-build   # compiler and build system
  libgtest-dev libgmock-dev           # unit tests (GoogleTest)
  nlohmann-json3-dev                  # reads the shared JSON test vectors in the tests
  clang libclang-rt-14-dev            # libFuzzer and the sanitizer runtimes
  libdnnl-dev                         # the bench's peer, oneDNN, timed side by side (bench only)
  linux-perf                          # perf, to see where a kernel spends its time
  python3-dev pybind11-dev python3-numpy python3-pytest  # the Python module and its tests
)
for option in "$@"; do
  case "$option" in
    --python) packages+=(python3-torch) ;;  # agreement tests against PyTorch's quantized engines
    --onnxruntime)  # Node.js runs ORT, python3-onnx builds the models. A node or npm already on
      # the PATH (e.g. NodeSource's nodejs, which bundles npm and conflicts with Debian's npm)
      # is used as it is.
      packages+=(python3-onnx)
      command -v node >/dev/null || packages+=(nodejs)
      command -v npm >/dev/null || packages+=(npm)
      ;;
    *) echo "install-deps.sh: unknown option $option (--python, --onnxruntime)" >&2; exit 2 ;;
  esac
done

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
