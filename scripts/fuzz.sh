#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (fuzz/) with ASan and UBSan in build-fuzz/ and runs each for
# SECONDS seconds, starting from the checked-in seed corpora (new inputs go to build-fuzz/corpus/).
#
#   scripts/fuzz.sh SECONDS
#
# Exits non-zero on any crash, leak, sanitizer report, timeout or engine disagreement; the input
# that caused it is written to build-fuzz/artifacts/ (replay it: build-fuzz/fuzz/<name> <file>);
# once fixed, copy it to fuzz/regressions/<problem|load>/, where qconv_tests replays it.
# The seed corpora are regenerated with build-fuzz/fuzz/make_corpus fuzz/corpus.
set -euo pipefail
seconds="${1:?usage: scripts/fuzz.sh SECONDS}"
cd "$(dirname "$0")/.."
scripts/install-deps.sh --fuzz

# -O1 -g, as libFuzzer's documentation builds: the instrumented kernels compile in minutes less
# than at -O2, and run fast enough for the fuzzers' thousands of inputs a second.
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
  -DCMAKE_CXX_COMPILER="${CXX:-clang++}" -DQCONV_BUILD_FUZZERS=ON \
  -DQCONV_BUILD_TESTS=OFF -DQCONV_BUILD_TOOLS=OFF -DQCONV_BUILD_PYTHON=OFF >/dev/null
cmake --build build-fuzz --target problem_fuzzer load_fuzzer -j"$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
mkdir -p build-fuzz/artifacts
for name in problem load; do
  mkdir -p "build-fuzz/corpus/$name"
  # -timeout: an input running longer than this is reported (a hang, a deadlock in the pool).
  "build-fuzz/fuzz/${name}_fuzzer" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="build-fuzz/artifacts/${name}-" \
    "build-fuzz/corpus/$name" "fuzz/corpus/$name" 2>&1 | tee "build-fuzz/${name}_fuzzer.log"
  echo "${name}_fuzzer: $(grep -o 'number_of_executed_units: [0-9]*' "build-fuzz/${name}_fuzzer.log")"
done
