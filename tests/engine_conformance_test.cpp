// SPDX-License-Identifier: Apache-2.0
// Every engine this CPU can run against the reference engine, bit for bit: thousands of seeded
// random problems plus the edges fast kernels get wrong (channels not a multiple of 16 or 4, 1x1
// pixels, stride 2, wide padding, batch > 1, zero points at both ends, every scheme and output
// dtype, 1 and 2 threads, the largest K that cannot overflow). A future engine joins by being in
// detail::all_engines(); the problems it declines are counted, and it must take the ones its
// shape class promises (see kMustTake).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.hpp"
#include "core/serialize_internal.hpp"
#include "engines/engine.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/serialize.hpp"
#include "support/engine_runs.hpp"
#include "support/random_problem.hpp"

namespace qconv {
namespace {

using test::RandomCase;
using test::RandomProblemOptions;
using test::Rng;

std::vector<std::string> engine_names() { return test::fast_engines_here(); }

std::vector<std::uint8_t> run(const RandomCase& rc, const Plan& plan, int threads) {
  return test::run_case(rc, plan, threads);
}

// Whether `engine` runs `problem` on this CPU.
bool takes(const std::string& engine, const Problem& problem) {
  for (const detail::Engine* e : detail::all_engines()) {
    if (e->name() == engine && !e->unsupported_reason(problem).empty()) return false;
  }
  return true;
}

// Runs `rc` on `engine` and on the reference; false when the engine declines the problem.
// `described`, when given, gets the engine's Plan::describe().
bool agrees(const std::string& engine, const RandomCase& rc, int threads, std::string* failure,
            std::string* described = nullptr) {
  const Problem problem(rc.desc);
  if (!takes(engine, problem)) return false;
  const Plan fast = Plan::prepare(problem, rc.weight_view(), PrepareOptions{engine});
  const Plan reference = Plan::prepare(problem, rc.weight_view(), PrepareOptions{"reference"});
  if (described != nullptr) *described = fast.describe();
  const auto got = run(rc, fast, threads);
  const auto want = run(rc, reference, 1);
  if (got != want) {
    std::size_t first = 0;
    while (got[first] == want[first]) ++first;
    *failure = "first differing byte " + std::to_string(first) + " of " +
               std::to_string(got.size()) + " (got " + std::to_string(got[first]) + ", want " +
               std::to_string(want[first]) + ") for " + problem.summary() + " on " +
               fast.describe();
  }
  return true;
}

// Problems in the engines' shape classes: NHWC convolution (a quarter transposed) of every size
// class, now and then grouped or depthwise.
RandomProblemOptions ordinary(Rng& rng) {
  RandomProblemOptions opt;
  opt.op = rng.chance(0.75) ? OpKind::conv2d : OpKind::conv2d_transpose;
  opt.input_layout = Layout::NHWC;
  opt.output_layout = Layout::NHWC;
  opt.depthwise = rng.chance(0.15);
  opt.max_depthwise_channels_wide = 150;  // depthwise: tails past 16, 32 and 64 channels
  opt.max_groups = rng.pick<std::int64_t>({1, 1, 1, 4});
  opt.max_channels_per_group = rng.pick<std::int64_t>({3, 8, 20, 80});
  opt.max_kernel = rng.pick<std::int64_t>({1, 3, 5, 7});
  opt.max_stride = rng.pick<std::int64_t>({1, 2, 3});
  opt.max_dilation = rng.pick<std::int64_t>({1, 1, 2});
  opt.max_padding = rng.pick<std::int64_t>({0, 1, 3});
  opt.max_extent = rng.pick<std::int64_t>({4, 9, 14});
  opt.max_batch = 2;
  opt.extreme_zero_points = rng.chance(0.2);
  return opt;
}

class EngineConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(EngineConformance, RandomProblemsBitExact) {
  const char* count_text = std::getenv("QCONV_CONFORMANCE_PROBLEMS");
  const int problems = count_text != nullptr ? std::atoi(count_text) : 2000;
  Rng rng(20261130);
  int ran = 0, declined = 0;
  for (int i = 0; i < problems; ++i) {
    // Mostly the engine's own class, a fifth anything at all (which it may decline).
    const RandomProblemOptions opt = rng.chance(0.8) ? ordinary(rng) : RandomProblemOptions{};
    const RandomCase rc = test::random_case(rng, opt);
    std::string failure;
    if (!agrees(GetParam(), rc, i % 2 == 0 ? 1 : 2, &failure)) {
      ++declined;
      continue;
    }
    ++ran;
    ASSERT_TRUE(failure.empty()) << "problem " << i << ": " << failure;
  }
  std::cout << "[ conformance ] " << GetParam() << ": " << ran << " problems bit-exact, "
            << declined << " declined\n";
  EXPECT_GE(ran, problems * 3 / 4);
}

TEST_P(EngineConformance, EveryScheme_DType_AndZeroPointExtreme) {
  Rng rng(7);
  for (SchemeKind scheme : test::kEveryScheme) {
    for (DType input : {DType::u8, DType::s8}) {
      for (DType weight : {DType::u8, DType::s8}) {
        for (int round = 0; round < 6; ++round) {
          RandomProblemOptions opt = ordinary(rng);
          opt.scheme = scheme;
          opt.input_dtype = input;
          opt.weight_dtype = weight;
          opt.extreme_zero_points = round % 2 == 0;
          const RandomCase rc = test::random_case(rng, opt);
          std::string failure;
          ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
              << "declined " << Problem(rc.desc).summary();
          ASSERT_TRUE(failure.empty()) << failure;
        }
      }
    }
  }
}

// A fixed geometry with random data and quantization.
RandomCase fixed_case(Rng& rng, std::int64_t c, std::int64_t o, std::int64_t h, std::int64_t w,
                      std::int64_t k, std::int64_t stride, std::int64_t pad, std::int64_t batch,
                      std::int64_t groups = 1, bool symmetric_weights = false,
                      RandomProblemOptions opt = {}) {
  opt.op = OpKind::conv2d;
  opt.input_layout = opt.output_layout = Layout::NHWC;
  ProblemDesc d = test::random_problem_desc(rng, [&] {
    RandomProblemOptions o2 = opt;
    o2.depthwise = false;
    o2.max_groups = 1;
    return o2;
  }());
  d.groups = groups;
  if (d.weight_layout == Layout::HWOI) d.weight_layout = Layout::OHWI;
  d.in_channels = c;
  d.out_channels = o;
  d.in_height = h;
  d.in_width = w;
  d.kernel_h = d.kernel_w = k;
  d.stride_h = d.stride_w = stride;
  d.dilation_h = d.dilation_w = 1;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.batch = batch;
  d.weight_scale.assign(d.weight_scale.size() == 1 ? 1 : static_cast<std::size_t>(o),
                        d.weight_scale[0]);
  d.weight_zero_point.assign(d.weight_zero_point.size() == 1 ? 1 : static_cast<std::size_t>(o),
                             d.weight_zero_point[0]);
  if (symmetric_weights) {  // no window sums: the tiles' other variant
    std::fill(d.weight_zero_point.begin(), d.weight_zero_point.end(),
              d.weight_dtype == DType::u8 ? 128 : 0);
  }
  if (!d.scheme.multiplier_q31.empty()) {
    d.scheme.multiplier_q31.assign(1, d.scheme.multiplier_q31[0]);
    d.scheme.shift.assign(1, d.scheme.shift[0]);
  }
  return test::random_case_for(rng, d);
}

// The options of round `round` of a test over every scheme and output dtype: u8 and s8 inputs and
// weights by turns, zero points at both ends in two rounds of three.
RandomProblemOptions scheme_round_options(SchemeKind scheme, int round) {
  RandomProblemOptions opt;
  opt.scheme = scheme;
  opt.input_dtype = round % 2 == 0 ? DType::u8 : DType::s8;
  opt.weight_dtype = round % 4 < 2 ? DType::s8 : DType::u8;
  opt.extreme_zero_points = round % 3 != 0;
  return opt;
}

// rc's problem with output dtype `output` (a requantizing scheme's output zero point at the dtype's
// low end in even rounds, its high end in odd ones; a clamp the new zero point leaves empty
// dropped), and new random data for it.
RandomCase with_output_dtype(Rng& rng, const RandomCase& rc, DType output, int round) {
  ProblemDesc d = rc.desc;
  if (d.scheme.kind != SchemeKind::int32 && d.output_dtype != output) {
    d.output_dtype = output;
    d.output_zero_point =
        output == DType::s32
            ? 0
            : static_cast<std::int32_t>(round % 2 == 0 ? dtype_min(output) : dtype_max(output));
  }
  try {
    (void)Problem(d);
  } catch (const Error&) {  // a clamp the new zero point leaves empty: none
    d.activation = Activation::none();
  }
  return test::random_case_for(rng, d);
}

// Whether the fast engines apply d's output stage in vectors (flat runs and fused tiles take it):
// every stage but a requantizing scheme's s32 output, which the scalar stage computes.
bool vector_output_stage(const ProblemDesc& d) {
  return d.output_dtype != DType::s32 || d.scheme.kind == SchemeKind::int32;
}

// Options for round `round` of a test that runs every scheme over fixed shapes: the scheme, and
// the input and weight dtypes in turn (u8 and s8 each, every pairing in 4 rounds).
RandomProblemOptions scheme_and_dtypes(SchemeKind scheme, int round) {
  RandomProblemOptions opt;
  opt.scheme = scheme;
  opt.input_dtype = round % 2 == 0 ? DType::u8 : DType::s8;
  opt.weight_dtype = round % 4 < 2 ? DType::s8 : DType::u8;
  return opt;
}

TEST_P(EngineConformance, EdgesFastKernelsGetWrong) {
  Rng rng(11);
  struct Shape {
    std::int64_t c, o, h, w, k, stride, pad, batch;
  };
  const Shape shapes[] = {
      {17, 3, 5, 7, 3, 1, 1, 1},
      {64, 64, 1, 1, 1, 1, 0, 1},
      {3, 64, 9, 9, 7, 2, 3, 1},
      {1, 1, 1, 1, 1, 1, 0, 1},
      {4, 65, 6, 6, 3, 2, 1, 2},
      {130, 17, 3, 4, 1, 2, 0, 3},
      {5, 16, 7, 7, 3, 1, 4, 1},
      {96, 129, 7, 7, 3, 1, 1, 1},
      {7, 5, 2, 2, 5, 1, 2, 2},
      {33, 48, 13, 11, 3, 2, 1, 1},
      {256, 64, 4, 4, 1, 1, 0, 1},
      {2, 8, 11, 11, 7, 2, 3, 1},
      // Blocks of 16 and 32 pixels on AMX (u8 inputs, channels a multiple of 64), with the
      // vpdpbusd tiles around them and partial panels.
      {64, 64, 6, 40, 3, 1, 1, 1},
      {128, 100, 3, 37, 1, 1, 0, 2},
      {64, 128, 4, 70, 3, 2, 1, 1},
      {192, 64, 9, 9, 1, 1, 0, 1},
      {64, 17, 3, 50, 5, 1, 2, 1},
      {64, 80, 1, 100, 1, 1, 0, 1},
      {128, 64, 12, 14, 1, 2, 0, 2},
      {3, 64, 20, 70, 7, 2, 3, 1},
      {64, 64, 9, 9, 3, 2, 1, 2},
      // AMX blocks on panels of 32 lanes (a second panel of 32, a 32-channel first layer).
      {64, 96, 6, 40, 3, 1, 1, 1},
      {3, 32, 20, 70, 3, 2, 1, 1},
      {128, 32, 3, 37, 1, 1, 0, 2},
      // AMX in 32-byte chunks (32 channels; 96 and 160 with few output channels).
      {32, 64, 5, 40, 3, 1, 1, 1},
      {32, 80, 3, 50, 1, 1, 0, 2},
      // AMX on channels padded to a multiple of 64 in a copy (96, 144, 160 channels).
      {96, 64, 6, 40, 3, 1, 1, 1},
      {160, 96, 7, 37, 1, 1, 0, 2},
      {144, 64, 9, 9, 1, 2, 0, 1},
      {96, 40, 5, 33, 3, 2, 1, 1},
  };
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      const RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch);
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
    }
  }
}

// A layer of fbgemm to u8 and s8 through `engine` where the value before rounding runs far past
// the output's range (test::fbgemm_past_the_range, eight rounds): below 2^31 the stores' saturating
// narrowing stands for the high clamp; past 2^31 (a tiny output scale, a huge bias) and under a
// clamp below the dtype's maximum the stage must clamp, or the conversion's INT32_MIN would come
// out as the lowest value. On avx512_vnni the plan's description must contain `path`.
struct PastTheRangeShape {
  std::int64_t c, o, h, w, k, stride, pad, groups = 1;
  bool symmetric_weights = true;
  const char* path = "";
};

void expect_fbgemm_past_the_range(const std::string& engine, Rng& rng, const PastTheRangeShape& s) {
  for (int round = 0; round < 8; ++round) {
    RandomProblemOptions opt;
    opt.scheme = SchemeKind::fbgemm;
    opt.input_dtype = DType::u8;
    RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, 1 + round % 2,
                               s.groups, s.symmetric_weights, opt);
    ProblemDesc d = rc.desc;
    test::fbgemm_past_the_range(rng, d, round);
    rc = test::random_case_for(rng, d);
    test::fbgemm_bias_past_the_range(rc, round);
    std::string failure, described;
    ASSERT_TRUE(agrees(engine, rc, 1 + round % 2, &failure, &described))
        << "declined " << Problem(rc.desc).summary();
    ASSERT_TRUE(failure.empty()) << failure << " (round " << round << ")";
    if (engine == "avx512_vnni" || (engine == "avx2" && s.path == std::string("(flat runs"))) {
      EXPECT_NE(described.find(s.path), std::string::npos) << s.path << " in " << described;
    }
  }
}

// Flat runs of every panel width (1 to 4 vectors, a first layer's im2col rows).
TEST_P(EngineConformance, FlatRunsFbgemmValuesPastTheOutputRange) {
  Rng rng(41);
  const PastTheRangeShape shapes[] = {
      {32, 16, 9, 15, 1, 1, 0, 1, true, "(flat runs"},
      {24, 48, 7, 9, 1, 1, 0, 1, true, "(flat runs"},
      {40, 64, 6, 7, 1, 1, 0, 1, true, "(flat runs"},
      {16, 96, 5, 11, 1, 1, 0, 1, true, "(flat runs"},
      {3, 32, 17, 19, 3, 2, 1, 1, true, "(flat runs"},
  };
  for (const PastTheRangeShape& s : shapes) expect_fbgemm_past_the_range(GetParam(), rng, s);
}

// Register tiles through an epilogue: k x k windows with padded taps skipped, strided 1x1 pixels,
// a weight zero point's window sums, channel tails; grouped tiles in lane order (4, 8 and 16
// channels per group) and with one group per vector (32).
TEST_P(EngineConformance, TilesFbgemmValuesPastTheOutputRange) {
  Rng rng(43);
  const PastTheRangeShape shapes[] = {
      {24, 80, 9, 11, 3, 1, 1, 1, true, "igemm"},
      {40, 33, 8, 9, 3, 2, 1, 1, false, "k3x3 s2"},
      {48, 64, 9, 9, 1, 2, 0, 1, false, ""},
      {128, 128, 8, 9, 3, 1, 1, 32, true, "groups in 128-bit lanes"},
      {256, 256, 7, 6, 3, 2, 1, 32, true, "groups in 128-bit lanes"},
      {256, 256, 5, 7, 3, 1, 1, 16, true, "groups in 128-bit lanes"},
      {128, 128, 6, 7, 3, 1, 1, 4, true, "one group per vector"},
  };
  for (const PastTheRangeShape& s : shapes) expect_fbgemm_past_the_range(GetParam(), rng, s);
}

// 1x1 stride-1 unpadded layers without a weight zero point run as flat runs on avx512_vnni (tiles
// of 16, 10, 6 or 5 pixels by the panel's 1 to 4 vectors, fewer for onnx and tvm, the output stage
// from the registers; a panel whose channels end in the first 8 lanes of its last vector
// multiplies those alone, two rows' in one vector where the tile's rows are even: 1, 24, 17, 40,
// 33 and 56 channels, not 12 or 57) and avx2 (4 pixels, a
// channel tail of 8 or fewer in half a sub-panel): every
// scheme and output dtype (s32 from a requantizing scheme: tiles and the scalar stage), panels of
// every width with channel tails, full panels next to narrow ones at long K, K with and without a
// ragged last step, pixel tails, runs shorter than a tile, single pixels, groups with panels of
// their own, batch > 1, zero points at both ends, u8 and s8 inputs and weights, 1 and 2 threads.
TEST_P(EngineConformance, FlatRunsEverySchemeDtypeAndTail) {
  Rng rng(23);
  struct Shape {
    std::int64_t c, o, h, w, batch, groups = 1;
  };
  const Shape shapes[] = {
      {16, 96, 13, 11, 1},
      {32, 16, 9, 15, 2},
      {24, 144, 7, 9, 1},
      {96, 24, 10, 10, 1},
      {5, 40, 6, 7, 2},
      {3, 1, 5, 5, 1},
      {64, 48, 3, 5, 1},
      {144, 33, 1, 1, 3},
      {17, 64, 4, 29, 1},
      {8, 17, 2, 9, 2},
      {20, 56, 5, 9, 1},
      {12, 57, 4, 7, 1},
      {40, 12, 3, 11, 2},
      {32, 128, 5, 7, 2, 2},
      // K of 256 and more: full panels on GEMM tiles, the narrow one on a flat run.
      {265, 80, 3, 11, 2},
      {256, 112, 2, 13, 1},
  };
  int round = 0, flat = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      for (const DType output : {DType::u8, DType::s8, DType::s32}) {
        if (scheme == SchemeKind::int32 && output != DType::s32) continue;
        const RandomCase rc =
            with_output_dtype(rng,
                              fixed_case(rng, s.c, s.o, s.h, s.w, 1, 1, 0, s.batch, s.groups, true,
                                         scheme_round_options(scheme, round)),
                              output, round);
        std::string failure, described;
        ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
            << "declined " << Problem(rc.desc).summary();
        ASSERT_TRUE(failure.empty()) << failure;
        if (described.find("(flat runs") != std::string::npos) ++flat;
        ++round;
      }
    }
  }
  std::cout << "[ conformance ] " << GetParam() << ": " << flat << " of " << round
            << " problems on flat runs\n";
  if (GetParam() == "avx512_vnni" || GetParam() == "avx2") {
    EXPECT_GT(flat, round / 2);
  }
}

// Grouped 1x1 layers whose groups have 32 output channels or more: each group a panel of its own on
// flat runs (the output stage from the registers), where groups of 16 or fewer share panels on
// grouped tiles; every scheme and output dtype, weight zero points (per-group pixel sums), stride 2
// (a dense copy), batch 2, NCHW, 1 and 2 threads, against the reference.
TEST_P(EngineConformance, GroupedOneByOneOnFlatRunsPerGroup) {
  Rng rng(59);
  struct Shape {
    std::int64_t c, o, h, w, groups, stride;
    bool own_panels;  // on avx512_vnni and avx2, with a vector stage
  };
  const Shape shapes[] = {
      {256, 256, 5, 7, 8, 1, true}, {96, 96, 3, 9, 3, 1, true},  {128, 96, 4, 4, 2, 2, true},
      {64, 128, 6, 5, 2, 1, true},  {64, 64, 4, 7, 4, 1, false},
  };
  int round = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      for (const DType output : {DType::u8, DType::s32}) {
        if (scheme == SchemeKind::int32 && output != DType::s32) continue;
        RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, 1, s.stride, 0, round % 3 == 0 ? 2 : 1,
                                   s.groups, round % 2 == 0, scheme_round_options(scheme, round));
        ProblemDesc d = rc.desc;
        if (round % 5 == 4) d.input_layout = d.output_layout = Layout::NCHW;
        rc = with_output_dtype(rng, test::random_case_for(rng, d), output, round);
        std::string failure, described;
        ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
            << "declined " << Problem(rc.desc).summary();
        ASSERT_TRUE(failure.empty()) << failure << " (round " << round << ")";
        if ((GetParam() == "avx512_vnni" || GetParam() == "avx2") && vector_output_stage(rc.desc)) {
          EXPECT_EQ(described.find("per panel") == std::string::npos, s.own_panels) << described;
        }
        ++round;
      }
    }
  }
}

// Runs make(scheme) (a case of symmetric weights) with every scheme and output dtype (s32 from a
// requantizing scheme too) against the reference engine, on 1 and 2 threads in turn, counting the
// problems in `round`; returns how many of those plans describe themselves with `phrase`.
template <class Make>
int every_scheme_and_dtype(const std::string& engine, Rng& rng, int& round,
                           const std::string& phrase, const Make& make) {
  int found = 0;
  for (const SchemeKind scheme : test::kEveryScheme) {
    for (const DType output : {DType::u8, DType::s8, DType::s32}) {
      if (scheme == SchemeKind::int32 && output != DType::s32) continue;
      const RandomCase rc = with_output_dtype(rng, make(scheme), output, round);
      std::string failure, described;
      EXPECT_TRUE(agrees(engine, rc, 1 + round % 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      EXPECT_TRUE(failure.empty()) << failure;
      if (described.find(phrase) != std::string::npos) ++found;
      ++round;
    }
  }
  return found;
}

// Grouped tiles through the output stage from the registers on avx512_vnni, in-lane (4, 8 and 16
// channels per group), two groups a vector (24: 3 vectors, vectors 0 and 1 starting in one
// group; 20: 4 vectors, each its own, and a last panel of two groups in 3 vectors as 24's) and one
// group a vector (32: two groups a panel, tiles of 5 rows and of 6 or more; a last panel of one
// group, and tiles of fewer rows, through the epilogue): every
// scheme and output dtype (s32 from a requantizing scheme: sums and the scalar stage), tiles
// shorter than a register chunk (a 2x2 output: sums in lane order and the epilogue), tiles whose
// last chunk overlaps the one before (7, 11 and 13 pixels), tiles of several chunks, a last panel
// of fewer groups (the epilogue), border pixels, stride 2, batch > 1, zero points at both ends, u8
// and s8 inputs and weights, 1 and 2 threads.
TEST_P(EngineConformance, GroupedTilesThroughTheStageEverySchemeDtypeAndTileLength) {
  Rng rng(29);
  struct Shape {
    std::int64_t groups, per_group, h, w, stride, batch;
  };
  const Shape shapes[] = {
      {32, 4, 2, 2, 1, 1},  {16, 8, 4, 4, 2, 2},   {16, 16, 2, 2, 1, 1}, {32, 4, 1, 7, 1, 2},
      {16, 8, 1, 11, 1, 1}, {16, 16, 1, 13, 1, 1}, {32, 4, 9, 9, 1, 1},  {16, 8, 11, 7, 2, 1},
      {16, 16, 7, 9, 1, 2}, {10, 24, 2, 2, 1, 1},  {10, 24, 1, 7, 1, 2}, {5, 24, 3, 13, 1, 1},
      {6, 20, 9, 9, 1, 2},  {7, 20, 1, 11, 1, 1},  {6, 20, 11, 7, 2, 1}, {5, 20, 7, 9, 1, 1},
      {4, 32, 7, 7, 1, 1},  {3, 32, 1, 13, 1, 2},  {2, 32, 2, 2, 1, 1},  {4, 32, 9, 9, 2, 1},
      {2, 32, 1, 11, 1, 1},
  };
  int round = 0, from_registers = 0;
  for (const Shape& s : shapes) {
    const std::int64_t channels = s.groups * s.per_group;
    from_registers += every_scheme_and_dtype(
        GetParam(), rng, round, "output stage from the registers)", [&](SchemeKind scheme) {
          return fixed_case(rng, channels, channels, s.h, s.w, 3, s.stride, 1, s.batch, s.groups,
                            true, scheme_round_options(scheme, round));
        });
  }
  std::cout << "[ conformance ] " << GetParam() << ": " << from_registers << " of " << round
            << " problems on grouped tiles through the stage from the registers\n";
  if (GetParam() == "avx512_vnni") {
    EXPECT_GT(from_registers, round / 2);
  }
}

// Plain GEMM tiles through the output stage from the registers on avx512_vnni (symmetric weights):
// full panels of 5 and 6 pixels (a 7x7 output's pixel tiles, a wide output's row tiles and its
// border columns' tiles down the rows, a 1x1 layer's tiles at long K), and the tiles it leaves to
// the epilogue (the first and last rows' border pixels, a last panel of fewer vectors): every
// scheme and output dtype (s32: the epilogue), stride 2, batch > 1, 1 and 2 threads.
TEST_P(EngineConformance, GemmTilesThroughTheStageEverySchemeAndDtype) {
  Rng rng(59);
  struct Shape {
    std::int64_t c, o, h, w, k, stride, pad, batch;
  };
  const Shape shapes[] = {{64, 64, 7, 7, 3, 1, 1, 1},  {32, 128, 9, 40, 3, 1, 1, 1},
                          {48, 70, 6, 13, 3, 2, 1, 1}, {256, 64, 7, 7, 1, 1, 0, 1},
                          {40, 96, 5, 11, 3, 1, 1, 1}, {260, 72, 3, 5, 1, 2, 0, 2}};
  int round = 0, from_registers = 0;
  for (const Shape& s : shapes) {
    from_registers += every_scheme_and_dtype(
        GetParam(), rng, round, "(GEMM tiles: output stage from the registers)",
        [&](SchemeKind scheme) {
          return fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch, 1, true,
                            scheme_round_options(scheme, round));
        });
  }
  std::cout << "[ conformance ] " << GetParam() << ": " << from_registers << " of " << round
            << " problems on GEMM tiles through the stage from the registers\n";
  if (GetParam() == "avx512_vnni") EXPECT_GT(from_registers, round / 3);
}

// A weight zero point needs each output pixel's window sum Σx: on every path (1x1 flat, strided
// 1x1, padded rows that skip taps, pixel tiles whose padded taps read zero-point bytes, AMX blocks
// on padded and channel-padded copies, transposed, im2col rows, groups, batch > 1) and 1 and 2
// threads, with per-channel zero points and a non-zero input zero point, so a window sum that is
// wrong cannot cancel out.
TEST_P(EngineConformance, WeightZeroPointWindowSumsOnEveryPath) {
  Rng rng(17);
  struct Shape {
    std::int64_t c, o, h, w, k, stride, pad, batch;
    bool transposed;
    std::int64_t groups = 1;
  };
  const Shape shapes[] = {
      {64, 128, 9, 40, 1, 1, 0, 2, false},
      {72, 64, 11, 13, 1, 2, 0, 1, false},
      {40, 80, 7, 7, 3, 1, 1, 1, false},
      {32, 64, 9, 9, 3, 2, 1, 2, false},
      {16, 64, 5, 11, 3, 1, 2, 1, false},
      {64, 64, 10, 40, 3, 1, 1, 1, false},
      {96, 130, 8, 36, 3, 1, 1, 1, false},
      {128, 64, 14, 14, 1, 2, 0, 1, false},
      {64, 96, 6, 34, 3, 2, 1, 1, false},
      {24, 40, 13, 37, 5, 1, 2, 1, false},
      {64, 32, 7, 9, 4, 2, 1, 1, true},
      {20, 24, 5, 6, 3, 1, 1, 2, true},
      {3, 64, 12, 70, 7, 2, 3, 1, false},
      {4, 40, 9, 9, 3, 1, 1, 2, false},
      // Groups: of 32 and 16 channels (merged into groups of 64 on AMX, sharing panels on
      // vpdpbusd), and of 128 (panels of their own): window sums per group.
      {64, 64, 6, 20, 3, 1, 1, 1, false, 2},
      {128, 128, 5, 20, 3, 2, 1, 1, false, 8},
      {256, 256, 4, 18, 3, 1, 1, 2, false, 2},
      {64, 64, 7, 7, 3, 1, 1, 1, false, 4},
  };
  for (const Shape& s : shapes) {
    int ran = 0;
    for (int round = 0; round < 4; ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch, s.groups);
      ProblemDesc d = rc.desc;
      if (s.transposed) {
        d.op = OpKind::conv2d_transpose;
        d.weight_layout = Layout::IOHW;
      }
      const bool u8_weights = d.weight_dtype == DType::u8;
      d.weight_zero_point.resize(static_cast<std::size_t>(s.o));
      for (std::int64_t o = 0; o < s.o; ++o) {
        d.weight_zero_point[static_cast<std::size_t>(o)] =
            static_cast<std::int32_t>((u8_weights ? 128 : 0) + 1 + o % 5);
      }
      d.weight_scale.assign(static_cast<std::size_t>(s.o), d.weight_scale[0]);
      d.input_zero_point = round % 2 == 0 ? 3 : (d.input_dtype == DType::u8 ? 250 : -120);
      try {
        (void)Problem(d);
      } catch (const Error&) {
        continue;  // a scheme that takes no per-channel weight zero points
      }
      rc = test::random_case_for(rng, d);
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      ++ran;
    }
    EXPECT_GT(ran, 0) << "every round's scheme refused the weight zero points";
  }
}

// First layers (up to 4 input channels) run on AMX from a copy with padded input rows interleaved
// per pixel, each kernel row one contiguous run (interleaved_rows.hpp): ResNet's 7x7/s2 and
// MobileNet's 3x3/s2 at reduced size, 1 to 4 channels, 5x5, stride 1, odd extents (pixel tails),
// asymmetric padding, output channels off a multiple of 16, outputs narrower than an AMX block,
// weight zero points per tensor and per channel (the weights the copy adds are the zero point, and
// the window sums count the copy's padded channel and rows), u8 weights, s8 inputs, every scheme,
// batch 2, NCHW, 1 and 2 threads.
TEST_P(EngineConformance, FirstLayersOnInterleavedRows) {
  Rng rng(31);
  struct Shape {
    std::int64_t c, o, h, w, k, stride, top, bottom, left, right;
    std::int64_t kernel_w = 0, stride_w = 0;  // 0: k, stride
    bool interleaved = true;                  // on avx512_amx (stride 3 is not: R·4 bytes)
  };
  const Shape shapes[] = {
      {3, 64, 23, 29, 7, 2, 3, 3, 3, 3},
      {3, 32, 21, 35, 3, 2, 1, 1, 1, 1},
      // Stride 4; a 7x1 kernel (8 rows per group, the gather path); 1x5 at stride 1x2; stride 3.
      {3, 24, 19, 33, 5, 4, 2, 2, 2, 2},
      {3, 16, 17, 26, 7, 2, 3, 3, 0, 0, 1, 1},
      {2, 20, 15, 31, 1, 1, 0, 0, 2, 2, 5, 2},
      {3, 32, 12, 20, 3, 3, 1, 1, 1, 1, 0, 0, false},
      {1, 16, 17, 19, 3, 2, 1, 0, 1, 0},
      {2, 40, 13, 22, 7, 2, 2, 3, 1, 3},
      {4, 17, 15, 40, 3, 2, 0, 1, 1, 0},
      {3, 96, 9, 70, 3, 1, 1, 1, 1, 1},
      {3, 130, 11, 45, 7, 2, 3, 2, 3, 2},
      {3, 24, 7, 7, 7, 2, 3, 3, 3, 3},
      {3, 64, 14, 100, 5, 2, 2, 2, 2, 2},
      {3, 33, 40, 9, 3, 2, 1, 1, 1, 1},
  };
  int round = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      const RandomProblemOptions opt = scheme_and_dtypes(scheme, round);
      const std::int64_t batch = round % 3 == 0 ? 2 : 1;
      RandomCase rc =
          fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, 0, batch, 1, round % 3 == 1, opt);
      ProblemDesc d = rc.desc;
      d.pad_top = s.top;
      d.pad_bottom = s.bottom;
      d.pad_left = s.left;
      d.pad_right = s.right;
      if (s.kernel_w != 0) d.kernel_w = s.kernel_w;
      if (s.stride_w != 0) d.stride_w = s.stride_w;
      if (round % 5 == 4) d.input_layout = Layout::NCHW;
      if (round % 3 == 2) {  // a weight zero point per channel, not the dtype's middle
        const std::int32_t middle = d.weight_dtype == DType::u8 ? 128 : 0;
        d.weight_zero_point.resize(static_cast<std::size_t>(s.o));
        for (std::int64_t o = 0; o < s.o; ++o) {
          d.weight_zero_point[static_cast<std::size_t>(o)] =
              static_cast<std::int32_t>(middle + 1 + o % 5);
        }
        d.weight_scale.assign(static_cast<std::size_t>(s.o), d.weight_scale[0]);
        try {
          (void)Problem(d);
        } catch (const Error&) {  // a scheme that takes one weight zero point: per tensor
          d.weight_zero_point.assign(1, middle + 3);
          d.weight_scale.assign(1, d.weight_scale[0]);
        }
      }
      rc = test::random_case_for(rng, d);
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      if (GetParam() == "avx512_amx") {
        const Plan plan =
            Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()});
        EXPECT_EQ(plan.describe().find("interleaved") != std::string::npos, s.interleaved)
            << plan.describe();
        if (round % 7 == 0) {  // a file holds the layer's weights and loads into the same plan
          const Plan loaded = deserialize(serialize(plan, SaveOptions{true}));
          EXPECT_EQ(run(rc, loaded, 1), run(rc, plan, 1)) << loaded.describe();
        }
      }
      ++round;
    }
  }
}

// Layers whose kernel rows the vpdpbusd engines read in place from a padded copy of the input
// (kernel-row runs: each kernel row's kw·C bytes in whole K steps, the steps' bytes past them
// meeting zero weights), against the reference: first layers of 1 to 7 channels, where they stand
// in for the im2col gather (which stays where a weight zero point, a column dilation or, on
// avx512_vnni, the extra steps rule them out), and layers of 8 to 31 channels, where they stand in
// for the tap tiles (which stay for wide channels, narrow outputs and the rest): rows of 3 to 93
// bytes, ragged last steps reading the copy's added columns at the right edge of the last image,
// 3x3, 5x5, 7x7, 1x5 and 3x1 kernels, strides 1 to 3, a row dilation, asymmetric, zero and wide
// padding, output channels of one to three panels with tails (1, 17, 24, 40, 130), outputs 1 to
// 70 wide, batch 2, NCHW input or output, every scheme and output dtype, u8 and s8 inputs and
// weights, zero points at both ends, 1 and 2 threads; a file of the plan loads into the same
// results.
TEST_P(EngineConformance, LayersOnKernelRowRuns) {
  const bool flat_runs = GetParam() == "avx512_vnni" || GetParam() == "avx2";
  Rng rng(53);
  enum class Runs { both, avx2, neither };  // where the layer runs as kernel-row runs
  struct Shape {
    std::int64_t c, o, h, w, kh, kw, stride, top, bottom, left, right;
    std::int64_t dilation_h = 1, dilation_w = 1;
    Runs runs = Runs::both;  // with symmetric weights
  };
  const Shape shapes[] = {
      {3, 16, 17, 19, 3, 3, 1, 1, 1, 1, 1},
      {3, 32, 9, 70, 3, 3, 2, 1, 1, 1, 1, 1, 1, Runs::avx2},  // 35 wide, 9 steps against 7
      {1, 40, 15, 31, 3, 3, 1, 1, 1, 1, 1},
      {2, 24, 13, 22, 5, 5, 1, 2, 2, 2, 2},
      {4, 130, 11, 45, 3, 3, 2, 1, 0, 1, 0},
      {3, 64, 23, 29, 7, 7, 2, 3, 3, 3, 3},
      {3, 17, 12, 20, 3, 3, 3, 1, 1, 1, 1},
      {3, 24, 15, 21, 3, 3, 1, 2, 2, 1, 1, 2, 1},
      {3, 16, 15, 21, 3, 3, 1, 1, 1, 2, 2, 1, 2, Runs::neither},  // a column dilation: im2col
      {2, 20, 15, 31, 1, 5, 2, 0, 0, 2, 2},
      {5, 1, 9, 13, 3, 3, 1, 1, 1, 1, 1},
      {7, 33, 10, 11, 3, 3, 1, 0, 1, 1, 0},
      {3, 8, 5, 1, 3, 3, 1, 1, 1, 1, 1},
      {3, 16, 10, 10, 3, 3, 1, 0, 0, 0, 0},
      {3, 16, 8, 8, 3, 3, 1, 3, 3, 3, 3},
      {6, 16, 9, 9, 3, 1, 1, 1, 1, 0, 0},
      // 8 to 31 channels: below 16 any output; to 31 with up to 32 output channels, 28 wide.
      {8, 16, 12, 15, 3, 3, 1, 1, 1, 1, 1},
      {10, 130, 9, 11, 3, 3, 1, 1, 0, 0, 1},
      {13, 24, 14, 9, 5, 5, 2, 2, 2, 2, 2},
      {12, 17, 11, 13, 3, 3, 1, 2, 2, 1, 1, 2, 1},
      {20, 32, 7, 29, 3, 3, 1, 1, 1, 1, 1},
      {31, 8, 5, 57, 3, 3, 2, 1, 1, 1, 1},
      {16, 40, 7, 29, 3, 3, 1, 1, 1, 1, 1, 1, 1, Runs::neither},  // 40 output channels
      {24, 16, 9, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, Runs::neither},  // 14 wide
      {32, 16, 5, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, Runs::neither},  // 32 channels
      {9, 16, 9, 13, 3, 3, 1, 1, 1, 2, 2, 1, 2, Runs::neither},   // a column dilation
  };
  int round = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      const RandomProblemOptions opt = scheme_round_options(scheme, round);
      const bool symmetric = round % 4 != 3;
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, 3, s.stride, 0, round % 3 == 0 ? 2 : 1, 1,
                                 symmetric, opt);
      ProblemDesc d = rc.desc;
      d.kernel_h = s.kh;
      d.kernel_w = s.kw;
      d.dilation_h = s.dilation_h;
      d.dilation_w = s.dilation_w;
      d.pad_top = s.top;
      d.pad_bottom = s.bottom;
      d.pad_left = s.left;
      d.pad_right = s.right;
      if (round % 5 == 4) d.input_layout = Layout::NCHW;
      if (round % 7 == 5) d.output_layout = Layout::NCHW;
      rc = with_output_dtype(rng, test::random_case_for(rng, d),
                             std::array{DType::u8, DType::s8, DType::s32}[round % 3], round);
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure << " (round " << round << ")";
      const Problem problem(rc.desc);
      bool symmetric_weights = true;
      for (std::int64_t o = 0; o < s.o; ++o) {
        symmetric_weights = symmetric_weights && problem.weight_zero_point(o) ==
                                                     (rc.desc.weight_dtype == DType::u8 ? 128 : 0);
      }
      const bool runs = symmetric_weights && vector_output_stage(rc.desc) &&
                        (s.runs == Runs::both || (s.runs == Runs::avx2 && GetParam() == "avx2"));
      // (NCHW in and out of up to 4 channels: the planes, NchwFirstLayersOnPlanes.)
      if (flat_runs && described.find("conv_planes") == std::string::npos) {
        EXPECT_EQ(described.find("kernel-row runs") != std::string::npos, runs)
            << described << " (round " << round << ")";
      }
      // A file holds the layer's weights in canonical order (read back from the runs' packing)
      // and loads into a plan that computes the same.
      if (runs && round % 3 == 0) {
        const Plan plan = Plan::prepare(problem, rc.weight_view(), PrepareOptions{GetParam()});
        const Plan loaded = deserialize(serialize(plan, SaveOptions{true}));
        EXPECT_EQ(run(rc, loaded, 1), run(rc, plan, 1)) << loaded.describe();
      }
      ++round;
    }
  }
}

// First layers with NCHW input and output, which the avx512_vnni engine runs on the planes where
// they lie (CPUs with VBMI: pixels in lanes, each input plane's kernel-row bytes permuted once a
// slot for every output channel): 1 to 4 input channels, 3x3, 5x5 on one channel (10 entries of 4
// columns) and 1x4 kernels, strides 1 to 3, dilations 2 and 30, asymmetric and wide padding, a
// slot running across output rows (narrow planes) and cut at row ends, planes of 12 bytes (loads
// masked to the plane), output channels off a multiple of 8 (the sums' group) and of 16, batch 2,
// every scheme, u8 and s8 inputs and weights, zero points at both ends (w − zw in 2 or 3 parts),
// s32 outputs, 1 and 2 threads; and shapes the planes leave to the GEMM path: 7x7 on 3 channels (42
// entries), 5 input channels, a 3x1 kernel (one tap a dword), a kernel row wider than 64 input
// bytes (dilation 40; 30 spans 61). A file of the plan loads into the same route and the same
// bytes.
TEST_P(EngineConformance, NchwFirstLayersOnPlanes) {
  Rng rng(47);
  struct Shape {
    std::int64_t c, o, h, w, kh, kw, stride, dilation, top, bottom, left, right;
    bool planes;  // whether the plane route takes it (AVX-512 engines, on a CPU with VBMI)
  };
  const Shape shapes[] = {
      {3, 32, 24, 26, 3, 3, 2, 1, 1, 1, 1, 1, true},
      {3, 24, 60, 66, 3, 3, 2, 1, 1, 1, 1, 1, true},  // work enough for two threads
      {3, 16, 9, 9, 3, 3, 2, 1, 1, 1, 1, 1, true},
      {3, 17, 13, 40, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {1, 24, 11, 12, 5, 5, 1, 1, 2, 2, 2, 2, true},
      {2, 40, 10, 19, 3, 3, 3, 2, 2, 0, 1, 2, true},
      {4, 8, 3, 4, 3, 3, 1, 1, 1, 1, 1, 1, true},
      {4, 33, 16, 21, 1, 4, 2, 1, 0, 0, 1, 2, true},
      {3, 9, 20, 7, 3, 1, 1, 1, 3, 0, 0, 0, false},
      {3, 64, 15, 17, 7, 7, 2, 1, 3, 3, 3, 3, false},
      {5, 16, 12, 12, 3, 3, 1, 1, 1, 1, 1, 1, false},
      {1, 16, 80, 80, 3, 3, 2, 30, 1, 1, 30, 30, true},
      {1, 16, 90, 90, 3, 3, 2, 40, 1, 1, 40, 40, false},
  };
  const bool avx512 = GetParam() == "avx512_vnni";  // avx512_amx keeps its tiles
  const bool vbmi = (detail::host_cpu_features() & detail::kAvx512vbmi) != 0;
  int round = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      RandomProblemOptions opt = scheme_and_dtypes(scheme, round);
      opt.extreme_zero_points = round % 4 == 3;
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, 3, s.stride, 0, 1 + round % 2, 1,
                                 round % 3 == 0, opt);
      ProblemDesc d = rc.desc;
      d.input_layout = d.output_layout = Layout::NCHW;
      d.kernel_h = s.kh;
      d.kernel_w = s.kw;
      d.dilation_h = d.dilation_w = s.dilation;
      d.pad_top = s.top;
      d.pad_bottom = s.bottom;
      d.pad_left = s.left;
      d.pad_right = s.right;
      if (round % 5 == 2 && scheme != SchemeKind::int32) {
        d.output_dtype = DType::s32;
        d.output_zero_point = 0;
        try {
          (void)Problem(d);
        } catch (const Error&) {  // a scheme that has no s32 output
          d.output_dtype = rc.desc.output_dtype;
          d.output_zero_point = rc.desc.output_zero_point;
        }
      }
      rc = test::random_case_for(rng, d);
      SCOPED_TRACE("round " + std::to_string(round) + ": " + Problem(rc.desc).summary());
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described)) << "declined";
      ASSERT_TRUE(failure.empty()) << failure;
      if (avx512 && vbmi) {
        const bool vector_stage = described.find("scalar output stage") == std::string::npos;
        EXPECT_EQ(described.find("conv_planes") != std::string::npos, s.planes && vector_stage)
            << described;
        if (round % 6 == 0) {
          const Plan plan =
              Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()});
          const Plan loaded = deserialize(serialize(plan, SaveOptions{true}));
          EXPECT_EQ(loaded.describe().find("conv_planes") != std::string::npos,
                    plan.describe().find("conv_planes") != std::string::npos)
              << loaded.describe();
          EXPECT_EQ(run(rc, loaded, 2), run(rc, plan, 1));
        }
      }
      ++round;
    }
  }
  if (avx512 && !vbmi) {
    GTEST_SKIP() << "exact on the GEMM path; the NCHW planes need avx512vbmi, which this CPU lacks";
  }
}

// `d` (a fixed_case's) as a transposed convolution of that stride, dilation, padding and output
// padding.
ProblemDesc transposed_desc(ProblemDesc d, std::int64_t stride, std::int64_t dilation,
                            std::int64_t pad, std::int64_t output_pad) {
  d.op = OpKind::conv2d_transpose;
  d.weight_layout = Layout::IOHW;
  d.stride_h = d.stride_w = stride;
  d.dilation_h = d.dilation_w = dilation;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = pad;
  d.output_pad_h = d.output_pad_w = output_pad;
  return d;
}

// Transposed convolution with strides 2 to 4 runs as stride_h·stride_w phases, each output phase
// listing only the taps that land on input pixels: kernels smaller than, equal to and larger than
// the stride, dilations that share a factor with it (taps of no phase), padding, output padding,
// channel counts on and off AMX, batch > 1, with and without weight zero points.
TEST_P(EngineConformance, TransposedStridePhases) {
  Rng rng(19);
  struct Shape {
    std::int64_t c, o, h, w, k, stride, dilation, pad, output_pad, batch;
  };
  const Shape shapes[] = {
      {64, 64, 5, 9, 2, 2, 1, 0, 0, 1},  {64, 48, 4, 7, 4, 2, 1, 1, 0, 2},
      {20, 24, 5, 6, 3, 2, 1, 1, 1, 1},  {16, 70, 4, 5, 5, 3, 1, 2, 2, 1},
      {8, 16, 3, 4, 2, 3, 1, 0, 1, 2},   {128, 64, 3, 17, 4, 4, 1, 0, 3, 1},
      {12, 20, 4, 4, 3, 2, 2, 1, 1, 1},  {24, 32, 5, 5, 3, 4, 2, 2, 0, 1},
      {64, 80, 6, 20, 3, 2, 1, 2, 0, 1}, {5, 7, 6, 3, 7, 3, 2, 4, 2, 1},
  };
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, 1, 0, s.batch, 1, round < 2);
      rc = test::random_case_for(
          rng, transposed_desc(rc.desc, s.stride, s.dilation, s.pad, s.output_pad));
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
    }
  }
}

// Transposed convolution of stride 1 as the convolution of its input with the flipped kernel
// (padding taps skipped as any convolution's), where its padding is within the kernel's span:
// symmetric and asymmetric padding, none, dilation with output padding, groups, batch > 1, NHWC
// and NCHW, with and without weight zero points, 1 and 2 threads; padding beyond the span keeps
// the placed input.
TEST_P(EngineConformance, TransposedStrideOneAsFlippedConvolution) {
  Rng rng(47);
  struct Shape {
    std::int64_t c, o, h, w, k, dilation, top, bottom, left, right, output_pad, batch, groups;
    bool flipped;  // else placed
  };
  const Shape shapes[] = {
      {64, 64, 7, 9, 3, 1, 1, 1, 1, 1, 0, 1, 1, true},
      {20, 24, 5, 6, 3, 1, 0, 2, 2, 0, 0, 2, 1, true},
      {16, 40, 6, 5, 5, 2, 3, 8, 0, 5, 1, 1, 1, true},
      {32, 32, 4, 6, 3, 1, 1, 1, 1, 1, 0, 2, 4, true},
      {8, 12, 5, 5, 3, 1, 3, 0, 1, 1, 0, 1, 1, false},
  };
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, 1, 0, s.batch, s.groups, round < 2);
      ProblemDesc d = transposed_desc(rc.desc, 1, s.dilation, 0, s.output_pad);
      d.pad_top = s.top;
      d.pad_bottom = s.bottom;
      d.pad_left = s.left;
      d.pad_right = s.right;
      if (round % 2 == 1) d.input_layout = d.output_layout = Layout::NCHW;
      rc = test::random_case_for(rng, d);
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round / 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      if (GetParam() != "reference") {
        EXPECT_NE(described.find(s.flipped ? "(transposed: flipped kernel)"
                                           : "(transposed: placed input, flipped kernel)"),
                  std::string::npos)
            << described;
      }
    }
  }
}

// Depthwise transposed convolution by output phases too: each phase's taps alone (a 4x4/s2
// kernel: 4 of 16 per pixel), kernels smaller than, equal to (a phase of one tap) and larger than
// the stride, dilation, padding, output padding, channel tails of a panel, batch > 1, zero points
// at both ends, with and without weight zero points, 1 and 2 threads.
TEST_P(EngineConformance, DepthwiseTransposedStridePhases) {
  Rng rng(29);
  struct Shape {
    std::int64_t c, h, w, k, stride, dilation, pad, output_pad, batch;
  };
  const Shape shapes[] = {
      {64, 7, 9, 4, 2, 1, 1, 0, 1},  {24, 5, 6, 2, 2, 1, 0, 1, 2}, {72, 4, 7, 3, 2, 1, 1, 1, 1},
      {16, 5, 5, 5, 3, 1, 2, 2, 1},  {40, 6, 4, 3, 2, 2, 1, 0, 2}, {8, 3, 11, 7, 4, 1, 3, 3, 1},
      {130, 3, 5, 4, 2, 1, 2, 1, 1},
  };
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomProblemOptions opt;
      opt.extreme_zero_points = round % 2 == 1;
      RandomCase rc = fixed_case(rng, s.c, s.c, s.h, s.w, s.k, 1, 0, s.batch, s.c, round < 2, opt);
      rc = test::random_case_for(
          rng, transposed_desc(rc.desc, s.stride, s.dilation, s.pad, s.output_pad));
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure << " (" << Problem(rc.desc).summary() << ")";
      if (GetParam() == "avx2") {  // its depthwise tiles run in the GEMM planner
        EXPECT_NE(described.find("stride phases"), std::string::npos) << described;
      }
    }
  }
}

// Grouped convolution with groups of every width that shares panels (4, 8, 16 and 32 output
// channels, input widths up to the output's; on avx512_vnni with symmetric weights also 5-12 and
// 17-24, which do not divide 64) and some that cannot (13 and 28, no lanes to gain; input wider
// than output, not whole dwords), full and partial panels, 1x1 and 3x3, strides 1 and 2,
// with and without weight zero points, pixel tiles and row tiles of every length. On avx2 groups
// of 4 and 8 channels, 4k of them, take the tiles of four groups side by side (on an input
// widened in their order).
TEST_P(EngineConformance, GroupedEveryGroupWidth) {
  Rng rng(13);
  struct Shape {
    std::int64_t groups, in_per_group, out_per_group, k, stride, h, w;
  };
  const Shape shapes[] = {
      {32, 4, 4, 3, 1, 6, 9},
      {32, 8, 8, 3, 2, 7, 7},
      {32, 16, 16, 3, 1, 5, 8},
      {32, 32, 32, 3, 2, 6, 6},
      {16, 4, 8, 3, 1, 5, 5},
      {8, 8, 16, 1, 1, 4, 7},
      {3, 4, 4, 3, 1, 5, 13},
      {17, 4, 4, 3, 2, 9, 9},
      {33, 8, 8, 1, 2, 5, 6},
      {5, 12, 32, 3, 1, 4, 4},
      {6, 12, 12, 3, 1, 5, 5},
      {4, 2, 2, 3, 1, 6, 6},
      {5, 8, 4, 3, 2, 7, 5},
      {64, 4, 4, 1, 1, 3, 11},
      {2, 32, 32, 3, 1, 5, 7},
      {2, 32, 64, 3, 1, 4, 40},
      // In-lane tiles (4, 8 and 16 per group) of 7 to 24 pixels: pixel tiles of wide outputs, and
      // row tiles of a kernel with more taps than pixel tiles list (9x9).
      {32, 4, 4, 3, 1, 5, 31},
      {32, 8, 8, 3, 2, 6, 53},
      {16, 16, 16, 3, 1, 3, 27},
      {16, 4, 4, 9, 1, 3, 30},
      {16, 8, 8, 9, 1, 2, 29},
      // Widths that do not divide 64, 17 to 24 as many whole groups to a panel as fit (k x k): 24
      // and 22 (two, vectors 0 and 1 in the first, 1 and 2 in the second), 20 and 17 (three, a
      // vector in two groups after each); full and partial last panels, an input narrower than
      // the output. 28 and 13 (no lanes to gain: a group's own vectors), a 1x1 layer of 30.
      {10, 24, 24, 3, 1, 6, 9},
      {5, 24, 24, 3, 2, 7, 7},
      {3, 20, 22, 3, 1, 5, 19},
      {7, 20, 20, 3, 1, 5, 8},
      {6, 12, 24, 3, 1, 5, 5},
      {9, 12, 17, 3, 1, 5, 6},
      {3, 28, 28, 3, 1, 5, 9},
      {4, 28, 30, 1, 1, 4, 7},
      {8, 4, 13, 3, 2, 6, 7},
      // Narrower than a vector: 10 and 6 (gathered, 6 and 10 a panel), 12 above (5 a panel).
      {11, 8, 10, 3, 2, 6, 7},
      {13, 4, 6, 3, 1, 5, 9},
  };
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      const RandomCase rc =
          fixed_case(rng, s.groups * s.in_per_group, s.groups * s.out_per_group, s.h, s.w, s.k,
                     s.stride, s.k / 2, 1 + round % 2, s.groups, round < 2);
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      // The 64 output channels of a panel: whole groups side by side, vectors in two groups
      // (symmetric weights: rounds 0 and 1). A file of the plan holds the weights in canonical
      // order, read back from that packing.
      if (GetParam() == "avx512_vnni" && s.out_per_group >= 17 && s.out_per_group <= 24 &&
          s.k > 1 && s.in_per_group % 4 == 0 && s.in_per_group <= s.out_per_group && round < 2) {
        EXPECT_NE(described.find("two groups a vector"), std::string::npos) << described;
        const Plan plan =
            Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()});
        const Plan loaded = deserialize(serialize(plan, SaveOptions{true}));
        EXPECT_EQ(run(rc, loaded, 1), run(rc, plan, 1)) << loaded.describe();
      }
      if (GetParam() == "avx512_vnni" && s.out_per_group <= 12 && 64 % s.out_per_group != 0 &&
          s.k > 1 && s.in_per_group % 4 == 0 && s.in_per_group <= s.out_per_group && round < 2) {
        EXPECT_NE(described.find("per panel, gathered"), std::string::npos) << described;
      }
      if (GetParam() == "avx2" && s.groups % 4 == 0 && s.in_per_group == s.out_per_group) {
        const char* lanes = s.in_per_group == 4   ? "four groups per vector"
                            : s.in_per_group == 8 ? "four groups per pair of vectors"
                                                  : nullptr;
        if (lanes != nullptr) {
          EXPECT_NE(described.find(lanes), std::string::npos) << lanes << " in " << described;
        }
      }
    }
  }
}

// K at the accumulator bound: max|x − zx| · Σ|w − zw| = 255 · 255 · K ≤ 2^31 − 1 for K = 33025.
// One more channel is refused, or wraps when allowed to.
TEST_P(EngineConformance, LargestKThatCannotOverflow) {
  for (std::int64_t k : {33025, 33026}) {
    ProblemDesc d;
    d.in_channels = k;
    d.out_channels = 17;
    d.in_height = 2;
    d.in_width = 3;
    d.input_dtype = DType::u8;
    d.weight_dtype = DType::u8;
    d.output_dtype = DType::s32;
    d.scheme.kind = SchemeKind::int32;
    d.allow_wraparound = k > 33025;
    RandomCase rc;
    rc.desc = d;
    rc.input_bytes.assign(static_cast<std::size_t>(2 * 3 * k), 255);
    rc.weight_bytes.assign(static_cast<std::size_t>(17 * k), 255);
    std::string failure;
    ASSERT_TRUE(agrees(GetParam(), rc, 2, &failure));
    ASSERT_TRUE(failure.empty()) << failure;
    const Plan plan = Plan::prepare(Problem(d), rc.weight_view(), PrepareOptions{GetParam()});
    const auto out = run(rc, plan, 1);
    std::int32_t first = 0;
    std::memcpy(&first, out.data(), 4);
    EXPECT_EQ(static_cast<std::int64_t>(first),
              k == 33025 ? std::int64_t{2147450625}
                         : std::int64_t{2147450625} + 65025 - (std::int64_t{1} << 32));
  }
}

// Exact halves reach each scheme's rounding through the engine (not only through the vector stage's
// own test): acc = x·w with multiplier 1/2, an odd output zero point, both signs.
TEST_P(EngineConformance, TiesRoundAsTheSchemeSays) {
  for (SchemeKind scheme :
       {SchemeKind::fbgemm, SchemeKind::qnnpack, SchemeKind::onednn, SchemeKind::onnx,
        SchemeKind::tvm, SchemeKind::tvm_f32, SchemeKind::tflite, SchemeKind::tflite_single,
        SchemeKind::onnxruntime}) {
    for (Rounding rounding : {Rounding::upward, Rounding::tonearest}) {
      ProblemDesc d;
      d.in_channels = 1;
      d.out_channels = 16;
      d.in_height = 1;
      d.in_width = 200;
      d.scheme.kind = scheme;
      d.scheme.rounding = rounding;
      d.output_dtype = DType::s8;
      d.output_scale = 2.0;
      d.output_zero_point = 3;
      RandomCase rc;
      rc.desc = d;
      for (int x = 0; x < 200; ++x) rc.input_bytes.push_back(static_cast<std::uint8_t>(x));
      for (int o = 0; o < 16; ++o) {  // weights ±1, ±3, ... : odd products of both signs
        const int w = (o % 2 == 0 ? 1 : -1) * (1 + 2 * (o / 2 % 3));
        rc.weight_bytes.push_back(static_cast<std::uint8_t>(static_cast<std::int8_t>(w)));
      }
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1, &failure)) << to_string(scheme);
      ASSERT_TRUE(failure.empty())
          << to_string(scheme) << " " << to_string(rounding) << ": " << failure;
    }
  }
}

// A layer of the NCHW tests: channels in and out, size, kernel, stride, padding, batch, groups.
struct LayoutShape {
  std::int64_t c, o, h, w, k, stride, pad, batch, groups;
  bool transposed;
};

// NCHW inputs and outputs on every path: a 1x1 layer whose register tiles and AMX blocks span two
// images (batch 3, 25 and 49 pixels an image), padded rows, pixel tiles, im2col rows, grouped
// panels, transposed (stride 1 and by phases), every output dtype.
TEST_P(EngineConformance, NchwOnEveryPath) {
  Rng rng(29);
  const LayoutShape shapes[] = {
      {64, 80, 5, 5, 1, 1, 0, 3, 1, false},   {128, 64, 7, 7, 1, 1, 0, 3, 1, false},
      {64, 96, 9, 40, 3, 1, 1, 2, 1, false},  {40, 70, 7, 7, 3, 1, 1, 2, 1, false},
      {3, 64, 12, 30, 7, 2, 3, 1, 1, false},  {64, 64, 6, 9, 3, 1, 1, 1, 16, false},
      {64, 48, 6, 20, 3, 1, 1, 2, 1, true},   {32, 40, 5, 7, 4, 2, 1, 1, 1, true},
      {72, 64, 11, 13, 1, 2, 0, 2, 1, false},
  };
  for (const LayoutShape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomCase rc =
          fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch, s.groups, round < 2);
      ProblemDesc d = rc.desc;
      d.output_layout = Layout::NCHW;
      if (round % 2 == 1) d.input_layout = Layout::NCHW;
      if (s.transposed) {
        d.op = OpKind::conv2d_transpose;
        d.weight_layout = Layout::IOHW;
      }
      rc = test::random_case_for(rng, d);
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
    }
  }
}

// Layers of few pixels whose weights outweigh their input, so that their tasks would run panels
// outermost, but whose last panel is narrower than the others (1x1 to 160 = 64 + 64 + 32 and
// 144 = 64 + 64 + 16 output channels, 3x3 to 160): the 1x1 ones run pixels outermost instead
// (each of two threads' halves spans every panel), as NCHW output shows; equal panels (192) keep
// panels outermost. Bit-exact on 1 and 2 threads, NHWC and NCHW output, both orders.
TEST_P(EngineConformance, NarrowLastPanelTakesPixelsFirst) {
  Rng rng(43);
  struct Shape {
    std::int64_t c, o, k;
    bool pixels_first;  // on avx512_vnni (its flat runs split 49 pixels in two tasks a panel)
  };
  const Shape shapes[] = {
      {960, 160, 1, true}, {576, 144, 1, true}, {96, 160, 3, false}, {960, 192, 1, false}};
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, 7, 7, s.k, 1, s.k / 2, 1, 1, round < 2);
      ProblemDesc d = rc.desc;
      if (round % 2 == 1) d.output_layout = Layout::NCHW;
      rc = test::random_case_for(rng, d);
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round / 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      if (d.output_layout == Layout::NCHW && s.k == 1 && GetParam() == "avx512_vnni") {
        EXPECT_EQ(described.find("(NCHW output transposed from an NHWC copy panel by panel)") ==
                      std::string::npos,
                  s.pixels_first)
            << described;
      }
    }
  }
}

// Outputs wider than the pixel tiles take (32 pixels) run in row tiles. Their border columns (whose
// taps in the padding are skipped) run in tiles down the rows, up to a tile's rows of one row
// pattern (gemm_engine.cpp's plan_column_strips: strips of 1 to 6 rows, the first and last rows
// alone), or, where the tiles read an NCHW input's rows made NHWC band by band, in 1-pixel tiles
// per row. On avx512_vnni a tile of at most 4 accumulators sums its even and odd K steps apart
// (register_tile.hpp's add_tap_two_sets) where a tap has 4 steps or more. Even and odd step
// counts, channel tails of 1 to 3, panels of 1 to 4 vectors, 3x3 and 5x5 (two border columns a
// side), with and without window sums, batch 1 and 2, 1 and 2 threads.
TEST_P(EngineConformance, BorderTilesOfWideOutputs) {
  Rng rng(53);
  struct Shape {
    std::int64_t c, o, w, k;
  };
  const Shape shapes[] = {{16, 64, 40, 3}, {17, 64, 37, 3}, {30, 40, 41, 3}, {131, 16, 34, 3},
                          {64, 50, 36, 5}, {19, 33, 45, 5}, {12, 64, 40, 3}};
  constexpr std::int64_t kHeights[] = {3, 9, 14};
  int round = 0, strips = 0, bands = 0;
  for (const Shape& s : shapes) {
    for (int variant = 0; variant < 6; ++variant, ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, kHeights[variant % 3], s.w, s.k, 1, s.k / 2,
                                 1 + variant / 2 % 2, 1, variant % 2 == 0);
      if (variant >= 4) {
        ProblemDesc d = rc.desc;
        d.input_layout = Layout::NCHW;
        rc = test::random_case_for(rng, d);
      }
      std::string failure, described;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure, &described))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      if (described.find("(border columns in tiles down the rows)") != std::string::npos) ++strips;
      if (described.find("band by band") != std::string::npos) ++bands;
    }
  }
  std::cout << "[ conformance ] " << GetParam() << ": " << strips << " of " << round
            << " problems with border columns in tiles down the rows, " << bands
            << " with NCHW input made NHWC band by band\n";
  EXPECT_GT(strips, round / 3);
  if (GetParam() == "avx512_vnni") EXPECT_GT(bands, 0);
}

// Small late layers with fewer panels than threads (a 7x7 or 9x9 output, 64 channels or fewer):
// the GEMM path cuts their pixel tiles into a task per thread when the layer has work enough
// (gemm_engine.cpp's pixel_tile_chunks), else keeps them in one; and a 14x14 one's three chunks
// into four, for two threads to share evenly. Each at 1 and 2 threads, NHWC and NCHW output, batch
// 1 and 2, bit-exact. A chunk count that differs between the task list and the tiles' walk skips
// or repeats tiles, which fails it.
TEST_P(EngineConformance, SmallLayerTilesSplitAcrossThreads) {
  Rng rng(47);
  struct Shape {
    std::int64_t c, o, h, k;
  };
  const Shape shapes[] = {
      {64, 64, 7, 3}, {128, 40, 9, 3}, {96, 64, 7, 5}, {16, 16, 7, 3}, {64, 64, 14, 3}};
  for (const Shape& s : shapes) {
    for (int round = 0; round < 4; ++round) {
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.h, s.k, 1, s.k / 2, 1 + round / 2);
      ProblemDesc d = rc.desc;
      if (round % 2 == 1) d.output_layout = Layout::NCHW;
      rc = test::random_case_for(rng, d);
      for (int threads : {1, 2}) {
        std::string failure;
        ASSERT_TRUE(agrees(GetParam(), rc, threads, &failure))
            << "declined " << Problem(rc.desc).summary();
        ASSERT_TRUE(failure.empty()) << failure;
      }
    }
  }
}

// 1x1 layers with NCHW input and output, which an engine may run with pixels in lanes (both
// tensors read and written in place; avx512_vnni and avx2 where a partial block of 64 pixels
// wastes at most a tenth of the lanes): whole blocks and partial last ones (60, 64, 120, 180, 250
// and 608 pixels an image: avx2's halves of 32 pixels whole, partial, and the last block's second
// half empty), input channels off a multiple of 4, output channels off a register tile's multiple
// and split over tasks (an image of few blocks), batch 2 (each image its own blocks), every scheme,
// u8 and s8 inputs (zero point 0, and at both ends), u8 and s8 weights, every output dtype, 1 and 2
// threads; images it leaves to the transposes (1 and 49 pixels), and weight zero points off the
// weights' middle.
TEST_P(EngineConformance, NchwOneByOneInPlace) {
  Rng rng(37);
  struct Shape {
    std::int64_t c, o, h, w, batch;
    bool in_place;  // avx512_vnni and avx2 run it with pixels in lanes (symmetric, to bytes)
  };
  const Shape shapes[] = {
      {32, 16, 6, 10, 1, true},   {13, 20, 12, 15, 2, true}, {4, 7, 8, 8, 2, true},
      {96, 200, 10, 25, 1, true}, {5, 97, 8, 15, 1, true},   {64, 6, 8, 8, 1, true},
      {7, 11, 19, 32, 2, true},   {160, 13, 7, 7, 2, false}, {1, 33, 1, 1, 1, false},
  };
  int round = 0;
  for (const Shape& s : shapes) {
    for (const SchemeKind scheme : test::kEveryScheme) {
      const RandomProblemOptions opt = scheme_and_dtypes(scheme, round);
      RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, 1, 1, 0, s.batch, 1, round % 5 != 4, opt);
      ProblemDesc d = rc.desc;
      d.input_layout = d.output_layout = Layout::NCHW;
      if (round % 3 == 0) {  // the input zero point at either end of its range, or 0
        const bool u8 = d.input_dtype == DType::u8;
        d.input_zero_point =
            round % 9 == 0 ? 0 : (round % 2 == 0 ? (u8 ? 255 : 127) : (u8 ? 0 : -128));
      }
      rc = test::random_case_for(rng, d);
      std::string failure;
      ASSERT_TRUE(agrees(GetParam(), rc, 1 + round % 2, &failure))
          << "declined " << Problem(rc.desc).summary();
      ASSERT_TRUE(failure.empty()) << failure;
      if (GetParam() == "avx512_vnni" || GetParam() == "avx2") {  // this test's path ran
        const bool symmetric =
            rc.desc.weight_zero_point[0] == (rc.desc.weight_dtype == DType::u8 ? 128 : 0);
        const bool expected = s.in_place && symmetric && rc.desc.output_dtype != DType::s32;
        const Plan plan =
            Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()});
        EXPECT_EQ(plan.describe().find("pixels in lanes") != std::string::npos, expected)
            << plan.describe();
      }
      ++round;
    }
  }
}

// NCHW input alone, output alone and both, through each copy that transposes an NCHW input as it
// places it (a padded 3x3 layer, a strided 1x1 layer's dense pixels, a first layer's rows, an
// input of the other signedness, channels padded for AMX, a transposed layer's spread input) and
// the NCHW output's transpose (output rows of odd widths, chunks spanning two images, channel
// tails, grouped and depthwise panels), for u8, s8 and s32 outputs, with and
// without weight zero points, on 1 and 2 threads.
TEST_P(EngineConformance, NchwInputAndOutputAloneOrTogether) {
  Rng rng(31);
  const LayoutShape shapes[] = {
      {64, 64, 9, 13, 3, 1, 1, 2, 1, false},  {40, 70, 7, 5, 3, 1, 1, 1, 1, false},
      {72, 64, 11, 13, 1, 2, 0, 2, 1, false}, {24, 36, 9, 23, 1, 2, 0, 1, 1, false},
      {3, 64, 16, 30, 7, 2, 3, 2, 1, false},  {3, 32, 17, 19, 3, 2, 1, 1, 1, false},
      {64, 64, 6, 9, 3, 1, 1, 2, 4, false},   {48, 48, 7, 11, 3, 1, 1, 2, 48, false},
      {64, 48, 6, 20, 3, 1, 1, 2, 1, true},   {32, 40, 5, 7, 4, 2, 1, 1, 1, true},
      {20, 17, 3, 70, 1, 1, 0, 2, 1, false},  {130, 65, 5, 3, 3, 1, 2, 1, 1, false},
  };
  const std::pair<Layout, Layout> layouts[] = {
      {Layout::NCHW, Layout::NHWC}, {Layout::NHWC, Layout::NCHW}, {Layout::NCHW, Layout::NCHW}};
  for (const LayoutShape& s : shapes) {
    for (const auto& [input_layout, output_layout] : layouts) {
      for (const DType output : {DType::u8, DType::s8, DType::s32}) {
        for (int round = 0; round < 2; ++round) {
          RandomCase rc = fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch,
                                     s.groups, round == 0);
          ProblemDesc d = rc.desc;
          d.input_layout = input_layout;
          d.output_layout = output_layout;
          if (d.scheme.kind != SchemeKind::int32) {
            d.output_dtype = output;
            d.output_zero_point = output == DType::u8 ? 131 : -3;
          }
          if (s.transposed) {
            d.op = OpKind::conv2d_transpose;
            d.weight_layout = Layout::IOHW;
          }
          rc = test::random_case_for(rng, d);
          std::string failure;
          ASSERT_TRUE(agrees(GetParam(), rc, 1 + round, &failure))
              << "declined " << Problem(rc.desc).summary();
          ASSERT_TRUE(failure.empty()) << failure;
        }
      }
    }
  }
}

// One plan run on one NCHW input, then another: the rows an engine makes NHWC in its bodies'
// scratch as the tiles need them (a 3x3 layer's output rows, a grouped layer's pixel tiles) are
// never taken from the call before, on 1 and 2 threads.
TEST_P(EngineConformance, NchwInputChangesBetweenCalls) {
  Rng rng(37);
  const LayoutShape shapes[] = {
      {64, 64, 9, 13, 3, 1, 1, 1, 1, false},
      {64, 64, 12, 10, 3, 2, 1, 2, 8, false},
  };
  for (const LayoutShape& s : shapes) {
    for (const int threads : {1, 2}) {
      RandomCase first =
          fixed_case(rng, s.c, s.o, s.h, s.w, s.k, s.stride, s.pad, s.batch, s.groups, true);
      first.desc.input_layout = Layout::NCHW;
      first = test::random_case_for(rng, first.desc);
      RandomCase second = first;
      const RandomCase other = test::random_case_for(rng, first.desc);
      second.input = other.input;
      second.input_bytes = other.input_bytes;
      ASSERT_NE(first.input_bytes, second.input_bytes);
      const Problem problem(first.desc);
      if (!takes(GetParam(), problem)) GTEST_SKIP() << "declined";
      const Plan fast = Plan::prepare(problem, first.weight_view(), PrepareOptions{GetParam()});
      const Plan reference =
          Plan::prepare(problem, first.weight_view(), PrepareOptions{"reference"});
      for (const RandomCase* rc : {&first, &second, &first}) {
        EXPECT_EQ(run(*rc, fast, threads), run(*rc, reference, 1))
            << problem.summary() << " on " << fast.describe() << ", " << threads << " threads";
      }
    }
  }
}

// A plan keeps the output-stage arrays it derives in its lanes' order (the depthwise blocks', the
// in-lane grouped tiles') from one call to the next on a thread: a call with another bias, given
// per call or prepared, must not find the last call's there.
TEST_P(EngineConformance, OutputStageChangesBetweenCalls) {
  Rng rng(41);
  struct Shape {
    std::int64_t c, h, w, k, stride, groups;
  };
  const Shape shapes[] = {
      {96, 9, 11, 3, 1, 96},   // depthwise: a 64- and a 32-lane block
      {80, 8, 8, 3, 2, 80},    // depthwise: 64 + 16 lanes, stride 2
      {128, 7, 12, 3, 1, 32},  // grouped, 4 channels a group: in-lane tiles
      {64, 6, 6, 1, 1, 1},     // a plain 1x1 layer
  };
  for (const Shape& s : shapes) {
    for (const int threads : {1, 2}) {
      RandomCase first = fixed_case(rng, s.c, s.c, s.h, s.w, s.k, s.stride, s.k / 2, 1, s.groups,
                                    true, scheme_and_dtypes(SchemeKind::fbgemm, threads));
      first.desc.has_bias = true;
      first = test::random_case_for(rng, first.desc);
      RandomCase second = first;
      second.bias_f32 = test::random_case_for(rng, first.desc).bias_f32;
      ASSERT_NE(first.bias_f32, second.bias_f32);
      const Problem problem(first.desc);
      if (!takes(GetParam(), problem)) GTEST_SKIP() << "declined";
      const Plan fast = Plan::prepare(problem, first.weight_view(), PrepareOptions{GetParam()});
      const Plan reference =
          Plan::prepare(problem, first.weight_view(), PrepareOptions{"reference"});
      const auto want_first = run(first, reference, 1), want_second = run(second, reference, 1);
      ASSERT_NE(want_first, want_second);
      for (const RandomCase* rc : {&first, &second, &first, &second}) {
        EXPECT_EQ(run(*rc, fast, threads), rc == &first ? want_first : want_second)
            << problem.summary() << " on " << fast.describe() << ", " << threads << " threads";
      }
      const PreparedBias prepared[] = {fast.prepare_bias(first.bias()),
                                       fast.prepare_bias(second.bias())};
      for (const int k : {0, 1, 1, 0}) {
        const Problem& p = fast.problem();
        Tensor out(p.desc().output_dtype, p.desc().output_layout, p.output_shape(1));
        RunOptions options;
        options.threads = threads;
        fast.execute(first.input_view(), out.view(), prepared[k], options);
        const auto* bytes = static_cast<const std::uint8_t*>(out.view().data());
        EXPECT_EQ(std::vector<std::uint8_t>(bytes, bytes + out.view().bytes()),
                  k == 0 ? want_first : want_second)
            << problem.summary() << " on " << fast.describe() << ", prepared bias " << k;
      }
    }
  }
}

// Groups of 8, 16 and 32 channels run on AMX merged into block-diagonal groups of 64: a file of
// such a plan holds the grouped problem's weights, and loads into a plan computing the same bits.
TEST_P(EngineConformance, MergedGroupsRoundTripThroughAFile) {
  Rng rng(23);
  for (const std::int64_t in_per_group : {8, 16, 32}) {
    const RandomCase rc = fixed_case(rng, 8 * in_per_group, 8 * in_per_group, 6, 20, 3, 1, 1, 1, 8);
    const Problem problem(rc.desc);
    std::string failure;
    if (!agrees(GetParam(), rc, 2, &failure)) GTEST_SKIP() << "declined";
    ASSERT_TRUE(failure.empty()) << failure;
    const Plan prepared = Plan::prepare(problem, rc.weight_view(), PrepareOptions{GetParam()});
    if (GetParam() == "avx512_amx") {
      EXPECT_NE(prepared.describe().find("merged"), std::string::npos) << prepared.describe();
    }
    const Plan loaded = deserialize(serialize(prepared, SaveOptions{true}));
    EXPECT_EQ(run(rc, loaded, 1), run(rc, prepared, 1)) << loaded.describe();
  }
}

// A prepared-weights file packed by another engine (avx512_vnni) loads on this one by re-packing
// from the original weights it kept: on a CPU with only this engine's features (the AVX-512 packed
// form cannot run there), and here with QCONV_ENGINE forcing this engine. The outputs are the same.
TEST_P(EngineConformance, FileFromAnotherEngineRepacksForThisOne) {
  const detail::Engine* packer = nullptr;
  const detail::Engine* self = nullptr;
  for (const detail::Engine* e : detail::all_engines()) {
    if (e->name() == "avx512_vnni") packer = e;
    if (e->name() == GetParam()) self = e;
  }
  if (packer == nullptr || (packer->required_cpu_features() & ~detail::host_cpu_features()) != 0) {
    GTEST_SKIP() << "needs the avx512_vnni engine to write the file";
  }
  if (self == packer) GTEST_SKIP() << "the file's own engine";
  Rng rng(99);
  RandomProblemOptions opt = ordinary(rng);
  opt.op = OpKind::conv2d;
  opt.depthwise = false;
  const RandomCase rc = test::random_case(rng, opt);
  const Problem problem(rc.desc);
  const Plan prepared = Plan::prepare(problem, rc.weight_view(), PrepareOptions{"avx512_vnni"});
  const auto want = run(rc, prepared, 1);
  const std::vector<std::byte> file = serialize(prepared, SaveOptions{true});

  ASSERT_EQ(setenv("QCONV_ENGINE", GetParam().c_str(), 1), 0);
  struct Unset {
    ~Unset() { unsetenv("QCONV_ENGINE"); }
  } unset;
  for (const detail::CpuFeatures host :
       {self->required_cpu_features(), detail::host_cpu_features()}) {
    const Plan loaded = detail::deserialize_for(file, host);
    EXPECT_EQ(loaded.engine(), GetParam()) << loaded.describe();
    EXPECT_NE(loaded.describe().find("re-packed from the file's original weights"),
              std::string::npos)
        << loaded.describe();
    EXPECT_EQ(run(rc, loaded, 1), want) << loaded.describe();
  }
  // Without the original weights, a CPU lacking AVX-512 cannot load it and says why.
  if ((packer->required_cpu_features() & ~self->required_cpu_features()) == 0) return;
  const std::vector<std::byte> bare = serialize(prepared);
  try {
    (void)detail::deserialize_for(bare, self->required_cpu_features());
    ADD_FAILURE() << "loaded an AVX-512 packed form on a CPU with " << GetParam() << "'s features";
  } catch (const FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("keep_original_weights"), std::string::npos) << e.what();
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, EngineConformance, ::testing::ValuesIn(engine_names()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(EngineConformance);

// Says which engines this CPU runs, so a CI log shows what the suite covered here.
TEST(EngineConformanceCoverage, ListsTheEnginesThisCpuRuns) {
  const detail::CpuFeatures features = detail::host_cpu_features();
  std::cout << "[ conformance ] CPU features: " << detail::to_string_features(features) << "\n";
  for (const detail::Engine* e : detail::all_engines()) {
    const detail::CpuFeatures missing = e->required_cpu_features() & ~features;
    std::cout << "[ conformance ] engine " << e->name() << ": "
              << (missing == 0 ? "tested here"
                               : "SKIPPED: this CPU lacks " + detail::to_string_features(missing))
              << "\n";
  }
  SUCCEED();
}

}  // namespace
}  // namespace qconv
