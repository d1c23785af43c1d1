#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Builds the libFuzzer targets (fuzz/) in build-address-undefined/, with ASan and UBSan (the build
# that scripts/test.sh --sanitize address,undefined tests: scripts/configure-asan.sh), and runs each
# for SECONDS seconds from the checked-in seed corpora (new inputs go to build-address-undefined/corpus/).
#
#   scripts/fuzz.sh SECONDS
#
# Exits non-zero on any crash, leak, sanitizer report, timeout or engine disagreement; the input
# that caused it is written to build-address-undefined/artifacts/ (replay it with the fuzzer,
# build-address-undefined/fuzz/<name> <file>); once fixed, copy it to
# fuzz/regressions/<problem|load>/, where qconv_tests replays it. The seed corpora are regenerated
# with build-address-undefined/fuzz/make_corpus fuzz/corpus.
set -euo pipefail
seconds="${1:?usage: scripts/fuzz.sh SECONDS}"
cd "$(dirname "$0")/.."
build=build-address-undefined
scripts/configure-asan.sh  # after scripts/test.sh --sanitize address,undefined, nothing to compile
cmake --build "$build" --target problem_fuzzer load_fuzzer -j"$(nproc)"

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:${ASAN_OPTIONS:-}"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:${UBSAN_OPTIONS:-}"
mkdir -p "$build/artifacts"
for name in problem load; do
  mkdir -p "$build/corpus/$name"
  # -timeout: an input running longer than this is reported (a hang, a deadlock in the pool).
  "$build/fuzz/${name}_fuzzer" -max_total_time="$seconds" -timeout=60 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$build/artifacts/${name}-" \
    "$build/corpus/$name" "fuzz/corpus/$name" 2>&1 | tee "$build/${name}_fuzzer.log"
  echo "${name}_fuzzer: $(grep -o 'number_of_executed_units: [0-9]*' "$build/${name}_fuzzer.log")"
done
