#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The Python package as a user installs it, offline: from a clean copy of the tree (tracked and
# new files, no build outputs), `pip install --no-build-isolation --no-index .` into a fresh venv
# that sees Debian's packages (--system-site-packages: NumPy, torch, setuptools, wheel, mypy).
# Then, from another directory, with the installed package only:
#
#   - qconv.__version__ and pip's version equal the version CMake configures for the project;
#   - pip installed the Python package alone (no C++ library, headers or CMake package);
#   - python/examples/pytorch_program.py, ported by changing only its import, agrees with
#     PyTorch element for element under torch.backends.quantized.engine = qnnpack, onednn and
#     fbgemm (each where this torch has it; onednn only on a CPU with AVX-512 VNNI, where its
#     results do not depend on the CPU: docs/PEERS.md, defect 5);
#   - mypy accepts a small typed program against the installed stubs and refuses the calls the
#     stubs forbid (python/tests/typing/).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD

scripts/install-deps.sh --pip
python=/usr/bin/python3  # Debian's Python: the one its NumPy, torch and mypy serve
export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"  # setup.py's -j

# The clean copy in an ignored folder of this tree (not a system temporary directory), so that a
# compiler cache whose base directory is the tree (.ci/run) serves pip's build from build/'s.
work=$(mktemp -d "$root/build-pip-test.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/src" "$work/run"
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && tar --null -T - -cf -) | tar -xf - -C "$work/src"
else
  tar -C "$root" --exclude='./build*' --exclude=.git -cf - . | tar -xf - -C "$work/src"
fi

echo "== pip install --no-build-isolation . (fresh venv, --system-site-packages)"
"$python" -m venv --system-site-packages "$work/venv"
venv_python="$work/venv/bin/python"
(cd "$work/src" && "$venv_python" -m pip install --quiet --no-build-isolation --no-index .)

cd "$work/run"
echo "== version"
cmake -S "$work/src" -B "$work/cmake" -DQCONV_BUILD_TESTS=OFF -DQCONV_BUILD_TOOLS=OFF >/dev/null
cmake_version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$work/cmake/CMakeCache.txt")
python_version=$("$venv_python" -c 'import qconv; print(qconv.__version__)')
pip_version=$("$venv_python" -m pip show qconv | sed -n 's/^Version: //p')
echo "CMake: $cmake_version; qconv.__version__: $python_version; pip: $pip_version"
[[ -n "$cmake_version" && "$python_version" == "$cmake_version" ]]
[[ "$pip_version" == "$cmake_version" ]]
"$venv_python" -m pip show qconv | grep -x 'License: Apache-2.0'

echo "== installed files: the Python package alone"
"$venv_python" -c 'import qconv, sys; sys.exit(not qconv.__file__.startswith(sys.prefix))'
others=$("$venv_python" -m pip show --files qconv |
  sed -n '/^Files:/,$p' | tail -n +2 | grep -Ev '^ *(qconv/|qconv-[^/]*\.dist-info/)' || true)
if [[ -n "$others" ]]; then
  echo "pip installed more than the package:"; echo "$others"; exit 1
fi

echo "== a PyTorch program ported by changing only its import"
program="$work/src/python/examples/pytorch_program.py"
torch_import='import torch.ao.nn.quantized.functional as qF'
qconv_import='import qconv.functional as qF'
sed "s/^$torch_import\$/$qconv_import/" "$program" >ported.py
[[ $(diff "$program" ported.py | grep -c '^[<>]') == 2 ]]  # one line out, one line in
engines=$("$venv_python" - <<'EOF'
import torch
have = torch.backends.quantized.supported_engines
vnni = "avx512_vnni" in open("/proc/cpuinfo").read()
print(" ".join(e for e in ("qnnpack", "onednn", "fbgemm")
               if e in have and (e != "onednn" or vnni)))
EOF
)
for engine in $engines; do
  "$venv_python" "$program" "$engine" "torch-$engine.npz" >/dev/null
  "$venv_python" ported.py "$engine" "qconv-$engine.npz" >/dev/null
  "$venv_python" - "$engine" <<'EOF'
import sys
import numpy as np
engine = sys.argv[1]
torch_results, qconv_results = np.load(f"torch-{engine}.npz"), np.load(f"qconv-{engine}.npz")
assert torch_results.files == qconv_results.files
elements = mismatches = 0
for name in torch_results.files:
    t, q = torch_results[name], qconv_results[name]
    assert t.shape == q.shape and t.dtype == q.dtype, (name, t.shape, q.shape, t.dtype, q.dtype)
    elements += t.size
    mismatches += int((t != q).sum())
print(f"{engine:8s} problems={len(torch_results.files)} elements={elements} "
      f"mismatches={mismatches}")
sys.exit(mismatches != 0)
EOF
done

echo "== mypy against the installed stubs"
cp "$work/src/python/tests/typing/good.py" "$work/src/python/tests/typing/bad.py" .
"$venv_python" -m mypy --cache-dir "$work/mypy-cache" good.py
expected=$(grep -c '# error' bad.py)
refused=$("$venv_python" -m mypy --cache-dir "$work/mypy-cache" --no-error-summary bad.py |
  grep -c '^bad.py:[0-9]*: error' || true)
echo "bad.py: mypy refuses $refused of its $expected forbidden calls"
[[ "$refused" == "$expected" ]]
echo "test-pip: OK"
