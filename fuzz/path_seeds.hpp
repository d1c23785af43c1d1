// SPDX-License-Identifier: Apache-2.0
// The avx512_vnni paths that only large cases reach (fuzz_case.hpp), each with a seed in the
// problem fuzzer's corpus (fuzz/corpus/problem/path-<name>.bin, written by make_corpus) from which
// the fuzzer's mutations start. tests/fuzz_regression_test.cpp checks that every seed still takes
// its path, so that a change of the plans' choices that strands one is seen (make_corpus then finds
// a new one).
#pragma once

#include <cstdint>
#include <string>

#include "fuzz_case.hpp"

namespace qconv::fuzz {

struct PathSeed {
  const char* name;       // path-<name>.bin
  const char* describes;  // a part of Plan::describe() on the avx512_vnni engine that names it
  bool two_threads;       // the engines run the seed on 2 or 3 threads, with work enough for 2
  bool needs_vbmi;        // the path needs AVX-512 VBMI besides the engine's features
};

inline constexpr PathSeed kPathSeeds[] = {
    {"depthwise-planes-rows", "strips of up to 16 output columns", true, true},
    {"depthwise-planes-slots", "slots of up to 16 output pixels a plane, vpermt2b)", true, true},
    {"dense-planes", "conv_planes_u8s8", true, true},
    {"depthwise-full-blocks", "full blocks: columns interleaved in registers", false, false},
    {"nchw-flat", "NCHW in and out: pixels in lanes, no transposes", false, false},
    {"grouped-panels", "per panel", true, false},
    {"depthwise-spare-row-slot", "its second part on a spare row slot", false, false},
    {"depthwise-column-sums", "w - zw as a + c", false, false},
    {"gemm-border-strips", "border columns in tiles down the rows", false, false},
    {"depthwise-row-pairs", "interleaved once for both rows", false, false},
};

// Work for two threads in every plan that splits by multiply-adds (the depthwise plans ask most).
inline constexpr std::int64_t kTwoThreadsMacs = std::int64_t{640} << 10;

// Whether case `c`, whose avx512_vnni plan describes itself as `described`, is a seed for `seed`.
inline bool seeds(const PathSeed& seed, const FuzzCase& c, const std::string& described) {
  if (described.find(seed.describes) == std::string::npos) return false;
  if (!seed.two_threads) return true;
  return engine_threads(c) >= 2 && multiply_adds(Problem(c.desc)) >= kTwoThreadsMacs;
}

}  // namespace qconv::fuzz
