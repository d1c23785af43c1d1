// SPDX-License-Identifier: Apache-2.0
// The depthwise kernels of the fast engines (four taps per vpdpbusd, channels in lanes) against the
// reference engine, bit for bit, on the edges they get wrong: channel counts around the 16-, 32-
// and 64-lane blocks, channel multipliers 1 to 4, 3x3, 5x5, 7x7 and odd kernels, strides 1 and 2,
// dilation, asymmetric and wide padding, transposed layers with output padding (their output
// phases), s8 and u8 inputs and weights with zero points at both ends (weights w − zw outside s8),
// batch > 1, 1 and 2 threads. On the AVX-512 engines each case must run on their depthwise kernel
// (Plan::describe() says "dwconv"), so a routing change cannot make this suite vacuous; the other
// fast engines (a depthwise tile for multiplier 1, grouped panels otherwise) must agree as well.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/cpu_features.hpp"
#include "engines/engine.hpp"
#include "qconv/plan.hpp"
#include "support/engine_runs.hpp"
#include "support/random_problem.hpp"

namespace qconv {
namespace {

using test::RandomCase;
using test::RandomProblemOptions;
using test::Rng;

std::vector<std::string> fast_engines() { return test::fast_engines_here(); }

std::vector<std::uint8_t> run(const RandomCase& rc, const Plan& plan, int threads) {
  return test::run_case(rc, plan, threads);
}

// Runs `rc` on `engine` (which must take it, on its depthwise kernel) and on the reference.
void expect_exact(const std::string& engine, const RandomCase& rc, int threads) {
  const Problem problem(rc.desc);
  const Plan fast = Plan::prepare(problem, rc.weight_view(), PrepareOptions{engine});
  if (engine.starts_with("avx512")) {  // the engines with the four-taps-per-vpdpbusd kernel
    ASSERT_NE(fast.describe().find("dwconv"), std::string::npos)
        << problem.summary() << " ran as " << fast.describe();
  }
  const Plan reference = Plan::prepare(problem, rc.weight_view(), PrepareOptions{"reference"});
  const auto got = run(rc, fast, threads);
  const auto want = run(rc, reference, 1);
  ASSERT_EQ(got.size(), want.size());
  std::size_t first = 0;
  while (first < got.size() && got[first] == want[first]) ++first;
  ASSERT_EQ(first, got.size()) << "first differing byte " << first << " of " << got.size()
                               << " (got " << int{got[first]} << ", want " << int{want[first]}
                               << ") for " << problem.summary() << " on " << fast.describe();
}

struct Geometry {
  std::int64_t channels, multiplier, h, w, kh, kw, stride_h, stride_w, dilation;
  std::int64_t top, bottom, left, right;
  bool transposed;
  std::int64_t output_pad;
};

ProblemDesc depthwise_desc(Rng& rng, const Geometry& g, std::int64_t batch, bool extreme,
                           std::optional<SchemeKind> scheme = std::nullopt) {
  RandomProblemOptions opt;
  opt.scheme = scheme;
  opt.op = g.transposed ? OpKind::conv2d_transpose : OpKind::conv2d;
  opt.input_layout = opt.output_layout = Layout::NHWC;
  opt.depthwise = true;
  opt.extreme_zero_points = extreme;
  opt.max_multiplier = 1;
  ProblemDesc d = test::random_problem_desc(rng, opt);
  d.in_channels = d.groups = g.channels;
  d.out_channels = g.channels * g.multiplier;
  d.in_height = g.h;
  d.in_width = g.w;
  d.kernel_h = g.kh;
  d.kernel_w = g.kw;
  d.stride_h = g.stride_h;
  d.stride_w = g.stride_w;
  d.dilation_h = d.dilation_w = g.dilation;
  d.pad_top = g.top;
  d.pad_bottom = g.bottom;
  d.pad_left = g.left;
  d.pad_right = g.right;
  d.output_pad_h = d.output_pad_w = g.transposed ? g.output_pad : 0;
  d.batch = batch;
  // Per-channel quantization arrays sized for the new channel count.
  const auto resize = [&](auto& v) {
    if (v.size() > 1) v.assign(static_cast<std::size_t>(d.out_channels), v[0]);
  };
  resize(d.weight_scale);
  if (d.weight_zero_point.size() > 1) {
    const std::vector<std::int32_t> old = d.weight_zero_point;
    d.weight_zero_point.clear();
    for (std::int64_t o = 0; o < d.out_channels; ++o) {
      d.weight_zero_point.push_back(old[static_cast<std::size_t>(o) % old.size()]);
    }
  }
  if (d.scheme.multiplier_q31.size() > 1) {
    d.scheme.multiplier_q31.assign(1, d.scheme.multiplier_q31[0]);
    d.scheme.shift.assign(1, d.scheme.shift[0]);
  }
  return d;
}

// Each shape in four rounds of random values: batch 1 and 2, zero points at their extremes or
// not, 1 and 2 threads.
void expect_rounds_exact(const std::string& engine, Rng& rng, std::span<const Geometry> shapes) {
  for (const Geometry& g : shapes) {
    for (int round = 0; round < 4; ++round) {
      const RandomCase rc =
          test::random_case_for(rng, depthwise_desc(rng, g, 1 + round % 2, round % 2 == 0));
      expect_exact(engine, rc, 1 + round / 2);
      if (::testing::Test::HasFatalFailure()) return;
    }
  }
}

class DepthwiseConformance : public ::testing::TestWithParam<std::string> {};

TEST_P(DepthwiseConformance, EdgesOfTheFourTapKernel) {
  Rng rng(8);
  const Geometry shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {32, 1, 12, 13, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {64, 1, 9, 9, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {144, 1, 7, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {17, 1, 8, 8, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0},
      {33, 1, 10, 9, 7, 7, 2, 2, 1, 3, 3, 3, 3, false, 0},
      {65, 1, 6, 15, 3, 3, 1, 2, 2, 0, 3, 2, 0, false, 0},
      {5, 1, 9, 9, 2, 5, 1, 1, 1, 0, 1, 2, 2, false, 0},
      {100, 1, 7, 7, 1, 7, 1, 1, 1, 0, 0, 3, 3, false, 0},
      {3, 2, 8, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {24, 2, 7, 7, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {13, 3, 6, 9, 5, 5, 1, 1, 2, 4, 4, 4, 4, false, 0},
      {40, 4, 5, 6, 3, 3, 1, 1, 1, 1, 0, 0, 1, false, 0},
      {7, 4, 4, 4, 7, 7, 1, 1, 1, 3, 3, 3, 3, false, 0},
      {64, 1, 14, 14, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, 0},
      {20, 1, 5, 7, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, 1},
      {9, 2, 4, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, true, 1},
      {33, 1, 4, 4, 5, 3, 3, 2, 2, 2, 1, 0, 1, true, 1},
      {16, 3, 3, 5, 2, 2, 2, 2, 1, 0, 0, 0, 0, true, 0},
      {2, 1, 6, 6, 3, 3, 1, 1, 1, 1, 1, 1, 1, true, 0},
  };
  expect_rounds_exact(GetParam(), rng, shapes);
}

// Layers with work enough for two threads (the kernel runs small ones on one: kMinMacsPerThread),
// at 1 and 2 threads, batch 1 and 2: the split of rows and blocks between threads.
TEST_P(DepthwiseConformance, LayersLargeEnoughForTwoThreads) {
  Rng rng(12);
  const Geometry shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {64, 1, 56, 57, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {80, 1, 61, 60, 3, 3, 2, 2, 1, 0, 1, 1, 0, false, 0},
      {40, 1, 40, 41, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0},
      {24, 2, 50, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      // MobileNetV2's 14x14x576 stride-2 layer (254K), and one just above the two-thread
      // threshold (56K).
      {576, 1, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {32, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      // Runs of full 64-lane blocks through one fused kernel, split between threads inside a row:
      // output rows in pairs (5 blocks), and 3 blocks followed by a 16-lane one.
      {320, 1, 14, 14, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {208, 1, 15, 16, 3, 3, 2, 2, 1, 0, 1, 1, 0, false, 0},
  };
  expect_rounds_exact(GetParam(), rng, shapes);
}

// NCHW input, output or both on layers large enough for two threads, where the AVX-512 engines
// run slabs of output rows (NCHW on both sides only where the planes do not apply: transposed
// layers, a CPU without VBMI), each transposing its input rows and its output rows in per-thread
// scratch (whole-tensor transposes on one thread): slabs that start and end inside the image and
// at its padded edges, rows in pairs (a transposed stride 2 and 3 take whole groups of pairs),
// strides 1 and 2, two groups of kernel rows, a multiplier, u8, s8 and s32 outputs, batch 1 and 2.
TEST_P(DepthwiseConformance, NchwSlabsOnTwoThreads) {
  Rng rng(31);
  const Geometry shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {64, 1, 61, 50, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {80, 1, 70, 58, 3, 3, 2, 2, 1, 0, 1, 1, 0, false, 0},
      {40, 1, 44, 45, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0},
      {24, 2, 50, 47, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {48, 1, 30, 31, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, 0},
      {32, 1, 21, 22, 5, 5, 3, 3, 1, 2, 2, 2, 2, true, 1},
  };
  const std::pair<Layout, Layout> layouts[] = {
      {Layout::NCHW, Layout::NCHW}, {Layout::NCHW, Layout::NHWC}, {Layout::NHWC, Layout::NCHW}};
  int round = 0;
  for (const Geometry& g : shapes) {
    for (const auto& [input, output] : layouts) {
      ProblemDesc d = depthwise_desc(rng, g, 1 + round % 2, round % 2 == 0);
      d.input_layout = input;
      d.output_layout = output;
      if (round % 3 == 2 && d.scheme.kind != SchemeKind::int32) {
        d.output_dtype = DType::s32;
        d.output_zero_point = 0;
      }
      SCOPED_TRACE("round " + std::to_string(round));
      const RandomCase rc = test::random_case_for(rng, d);
      expect_exact(GetParam(), rc, 2);
      expect_exact(GetParam(), rc, 1);
      if (HasFatalFailure()) return;
      ++round;
    }
  }
}

// NCHW input and output, which the AVX-512 engines run, on a CPU with AVX-512 VBMI, on the output
// planes themselves, pixels in lanes (describe(): "NCHW planes"; at stride 1 on two threads only):
// slots that cross output rows (narrow planes) and stop at a row's end (wide ones), a kernel row in
// one entry of 4 columns or two (5x5, 7x7: 4 + 3), stride 3, dilation, wide and asymmetric
// padding, multipliers 2 and 3, the planes within 64 bytes of the tensor's end (their loads
// masked; planes of 12 and 25 bytes), batch 1 and 2, u8 and s8 inputs and weights with zero points
// at both ends (w − zw in two or three parts), s32 outputs and every scheme, 1 and 2 threads; and
// a dilation whose one pixel's kernel row spans more than 64 input bytes, which must go to the
// slabs instead. At stride 1 with 3 kernel rows, rows mode ("strips of": walked down the
// plane): kernel rows of 1 to 4 columns, output heights of 1, 2 and 7 (the ring's last steps),
// padding rows at both ends, a strip all in the padding, rows of 70 pixels (one thread too).
TEST_P(DepthwiseConformance, NchwPlanesPixelsInLanes) {
  Rng rng(43);
  struct Shape {
    Geometry g;
    bool planes;        // whether the plane path takes it (on a CPU with VBMI)
    bool rows = false;  // in rows mode (stride 1, 3 kernel rows, output rows of 12 or more)
  };
  const Shape shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {{96, 1, 28, 28, 3, 3, 2, 2, 1, 0, 1, 0, 1, false, 0}, true},
      {{24, 1, 14, 14, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0}, true},
      {{10, 1, 35, 37, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0}, true},
      {{7, 1, 9, 40, 5, 5, 2, 3, 1, 2, 2, 2, 2, false, 0}, true},
      {{5, 1, 12, 12, 7, 7, 2, 2, 1, 3, 0, 3, 1, false, 0}, true},
      {{6, 3, 11, 13, 3, 3, 2, 2, 2, 2, 2, 2, 2, false, 0}, true},
      {{4, 2, 8, 30, 1, 4, 1, 2, 1, 0, 0, 1, 2, false, 0}, true},
      {{3, 1, 60, 70, 3, 3, 2, 2, 25, 1, 1, 26, 25, false, 0}, true},
      {{3, 1, 90, 90, 3, 3, 2, 2, 40, 1, 1, 40, 40, false, 0}, false},
      // Planes of 25 and 12 bytes: a load runs over several planes, and past the tensor's end
      // from any of the last 3 or 6 (masked there).
      {{16, 1, 5, 5, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0}, true},
      {{8, 2, 3, 4, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0}, true},
      // Stride 1: on two threads (work enough for both), the planes; on one, the transposes,
      // but for rows mode on rows of 64 pixels or more.
      {{96, 1, 30, 30, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0}, true, true},
      {{40, 2, 20, 21, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0}, true},
      // Rows mode, on rows of 64 pixels or more so that one thread runs it too (these layers
      // are too small for two): kernel rows of 1, 2 and 4 columns, output heights of 1 and 2
      // and not a multiple of 3 (the ring's last steps), padding rows at both ends, asymmetric
      // and wide padding (strips whose every tap is padding, on the left and on the right); and
      // rows of 11 (slots).
      {{24, 1, 9, 70, 3, 3, 1, 1, 1, 1, 2, 1, 1, false, 0}, true, true},
      {{16, 2, 1, 66, 3, 1, 1, 1, 1, 1, 1, 0, 0, false, 0}, true, true},
      {{12, 1, 2, 70, 3, 2, 1, 1, 1, 1, 1, 0, 1, false, 0}, true, true},
      {{20, 1, 7, 45, 3, 4, 1, 1, 1, 0, 2, 20, 20, false, 0}, true, true},
      {{32, 1, 10, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0}, true},
  };
  const bool avx512 = GetParam().starts_with("avx512");
  const bool vbmi = (detail::host_cpu_features() & detail::kAvx512vbmi) != 0;
  int round = 0;
  for (const Shape& shape : shapes) {
    for (int k = 0; k < 6; ++k, ++round) {
      ProblemDesc d = depthwise_desc(rng, shape.g, 1 + k % 2, k % 3 != 1);
      d.input_layout = d.output_layout = Layout::NCHW;
      if (k % 3 == 2 && d.scheme.kind != SchemeKind::int32) {
        d.output_dtype = DType::s32;
        d.output_zero_point = 0;
      }
      const RandomCase rc = test::random_case_for(rng, d);
      SCOPED_TRACE("round " + std::to_string(round) + ": " + Problem(rc.desc).summary());
      if (avx512 && vbmi) {
        const std::string described =
            Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()})
                .describe();
        const bool vector_stage = described.find("scalar output stage") == std::string::npos;
        EXPECT_EQ(described.find("NCHW planes") != std::string::npos, shape.planes && vector_stage)
            << described;
        EXPECT_EQ(described.find("strips of") != std::string::npos, shape.rows && vector_stage)
            << described;
      }
      expect_exact(GetParam(), rc, 1 + k / 3);
      if (HasFatalFailure()) return;
    }
  }
  if (avx512 && !vbmi) {
    GTEST_SKIP() << "exact on the slabs; the NCHW planes need avx512vbmi, which this CPU lacks";
  }
}

// NCHW input and output, which the avx2 engine runs on the padded planes' rows with pixels in lanes
// (describe(): "depthwise rows of the padded planes") where the output rows are 28 pixels or more,
// the kernel at most 8 columns, the stride across 1 or 2, no dilation, multiplier 1, to u8 or s8
// through a vector stage: output rows of 28 to 100 pixels (whole register tiles of 32, whole and
// partial vectors of 8 after them), kernels of 1 to 8 columns (an odd last column paired with a
// zero weight) and 1 to 7 rows, strides down of 1 to 3, wide and asymmetric padding (rows and
// columns all padding), s8 and u8 inputs and weights with zero points at both ends, every scheme,
// batch 2 (each image's planes), 1 and 2 threads; and the problems it leaves to the transposes
// (rows of 27, a 9-column kernel, stride 3 across, dilation, multiplier 2, s32 outputs).
TEST_P(DepthwiseConformance, NchwDepthwiseRowsOfPaddedPlanes) {
  Rng rng(47);
  struct Shape {
    Geometry g;
    bool rows;  // whether the avx2 engine runs it on the planes' rows (to bytes, vector stage)
  };
  const Shape shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {{5, 1, 6, 28, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0}, true},
      {{3, 1, 5, 64, 3, 3, 2, 2, 1, 0, 1, 0, 1, false, 0}, true},
      {{4, 1, 7, 33, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0}, true},
      {{2, 1, 9, 100, 7, 7, 3, 2, 1, 3, 1, 2, 3, false, 0}, true},
      {{3, 1, 4, 40, 2, 8, 1, 1, 1, 0, 1, 4, 3, false, 0}, true},
      {{2, 1, 3, 65, 1, 1, 2, 1, 1, 0, 0, 0, 0, false, 0}, true},
      {{3, 1, 5, 31, 4, 6, 1, 1, 1, 3, 3, 5, 5, false, 0}, true},
      {{2, 1, 2, 70, 3, 2, 1, 2, 1, 2, 2, 1, 2, false, 0}, true},
      {{2, 1, 6, 27, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0}, false},
      {{2, 1, 5, 40, 3, 9, 1, 1, 1, 1, 1, 4, 4, false, 0}, false},
      {{2, 1, 5, 100, 3, 3, 1, 3, 1, 1, 1, 1, 1, false, 0}, false},
      {{2, 1, 9, 40, 3, 3, 1, 1, 2, 2, 2, 2, 2, false, 0}, false},
      {{2, 2, 5, 40, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0}, false},
  };
  int round = 0;
  for (const Shape& shape : shapes) {
    for (int k = 0; k < 6; ++k, ++round) {
      ProblemDesc d = depthwise_desc(rng, shape.g, 1 + k % 2, k % 3 != 1);
      d.input_layout = d.output_layout = Layout::NCHW;
      if (k == 5 && d.scheme.kind != SchemeKind::int32) {
        d.output_dtype = DType::s32;
        d.output_zero_point = 0;
      }
      const RandomCase rc = test::random_case_for(rng, d);
      SCOPED_TRACE("round " + std::to_string(round) + ": " + Problem(rc.desc).summary());
      if (GetParam() == "avx2") {
        const std::string described =
            Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()})
                .describe();
        const bool vector_stage =
            (rc.desc.output_dtype == DType::s32) == (rc.desc.scheme.kind == SchemeKind::int32);
        EXPECT_EQ(described.find("depthwise rows of the padded planes") != std::string::npos,
                  shape.rows && vector_stage && rc.desc.output_dtype != DType::s32)
            << described;
      }
      expect_exact(GetParam(), rc, 1 + k / 3);
      if (HasFatalFailure()) return;
    }
  }
}

// fbgemm from u8 and s8 inputs to u8 and s8 where the value before rounding runs far past the
// output's range, on each tile layout (rows in pairs over 64 + 16 lanes, stride 2 interleaved in
// registers over 64, 64 + 32 and 64 + 16 lanes, a transposed layer's 2 taps per phase, any layout):
// below 2^31 the kernels leave the high clamp to the packs to bytes, which saturate there; past
// 2^31 (a tiny output scale, a huge bias) and under a clamp below the dtype's maximum they must
// clamp, or the conversion's INT32_MIN would come out as the lowest value.
TEST_P(DepthwiseConformance, FbgemmValuesPastTheOutputRange) {
  Rng rng(37);
  const Geometry shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {80, 1, 9, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {128, 1, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {96, 1, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {80, 1, 9, 11, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {64, 1, 7, 9, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, 0},
      {72, 1, 8, 8, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0},
  };
  for (const Geometry& g : shapes) {
    for (int round = 0; round < 16; ++round) {
      ProblemDesc d = depthwise_desc(rng, g, 1 + round % 2, false, SchemeKind::fbgemm);
      test::fbgemm_past_the_range(rng, d, round % 8);
      if (round >= 8) {  // s8 inputs: the fused kernels' flipping variants
        d.input_dtype = DType::s8;
        d.input_zero_point = test::random_zero_point(rng, DType::s8, false);
      }
      RandomCase rc = test::random_case_for(rng, d);
      test::fbgemm_bias_past_the_range(rc, round % 8);
      SCOPED_TRACE("round " + std::to_string(round));
      expect_exact(GetParam(), rc, 1 + round % 2);
      if (HasFatalFailure()) return;
    }
  }
}

// Every dtype pair and zero point extreme on a 3x3 layer whose channels fill one 64-lane block and
// end in a 16-lane tail: w − zw spans one, two or three s8 parts.
TEST_P(DepthwiseConformance, DTypesAndZeroPoints) {
  Rng rng(9);
  for (DType input : {DType::u8, DType::s8}) {
    for (DType weight : {DType::u8, DType::s8}) {
      for (int round = 0; round < 8; ++round) {
        const Geometry g{80, 1 + round % 2,  6, 8, 3, 3, 1 + round / 4, 1 + round / 4, 1, 1, 1, 1,
                         1,  round % 3 == 2, 0};
        ProblemDesc d = depthwise_desc(rng, g, 1, round % 2 == 0);
        d.input_dtype = input;
        d.weight_dtype = weight;
        d.input_zero_point = test::random_zero_point(rng, input, round % 2 == 0);
        for (auto& z : d.weight_zero_point) z = test::random_zero_point(rng, weight, round < 4);
        expect_exact(GetParam(), test::random_case_for(rng, d), 1 + round % 2);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Every scheme to every output dtype on each tile layout of the kernel: the compile-time schedules
// (3x3 stride 1 with rows in pairs, 3x3 stride 2, a transposed 4x4 stride 2's 2 taps per phase,
// 5x5 at strides 1 and 2) and the general one (7x7, dilation), on 64-lane blocks that are full,
// partly filled (40 or 36 channels: vectors past the channels must write nothing) or followed by
// 32- and 16-lane blocks, with multipliers. Each scheme's output stage runs on the accumulators
// there, and s32 outputs put the 64-lane blocks' lanes back in channel order. On avx2 every pair
// with a vector stage (all to u8 and s8; int32 to s32) takes the depthwise tiles that apply it from
// the registers (multiplier 1: with 2, groups of 1 input and 2 output channels run on grouped
// tiles).
TEST_P(DepthwiseConformance, EveryOutputStageOnEveryTileLayout) {
  Rng rng(11);
  const Geometry shapes[] = {
      // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
      {40, 1, 6, 11, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {100, 1, 5, 13, 3, 3, 2, 2, 1, 1, 1, 1, 1, false, 0},
      {96, 1, 5, 9, 4, 4, 2, 2, 1, 1, 1, 1, 1, true, 0},
      {20, 2, 5, 10, 3, 3, 1, 1, 1, 1, 1, 0, 2, false, 0},
      {150, 1, 6, 7, 5, 5, 1, 1, 1, 2, 2, 2, 2, false, 0},
      {72, 1, 9, 11, 5, 5, 2, 2, 1, 2, 1, 2, 1, false, 0},
      {40, 1, 8, 9, 7, 7, 1, 1, 1, 3, 3, 3, 3, false, 0},
      {64, 1, 7, 9, 3, 3, 1, 1, 2, 2, 2, 2, 2, false, 0},
  };
  for (const Geometry& g : shapes) {
    for (SchemeKind scheme : test::kEveryScheme) {
      for (DType output : {DType::u8, DType::s8, DType::s32}) {
        if (scheme == SchemeKind::int32 && output != DType::s32) continue;
        for (int round = 0; round < 2; ++round) {
          ProblemDesc d = depthwise_desc(rng, g, 1 + round, round == 1, scheme);
          d.output_dtype = output;
          if (scheme != SchemeKind::int32) {
            d.output_zero_point = output == DType::s32
                                      ? static_cast<std::int32_t>(rng.uniform(-1000, 1000))
                                      : test::random_zero_point(rng, output, round == 1);
          }
          SCOPED_TRACE(std::string(to_string(scheme)) + " to " + std::string(to_string(output)));
          const RandomCase rc = test::random_case_for(rng, d);
          expect_exact(GetParam(), rc, 1 + round);
          if (HasFatalFailure()) return;
          if (GetParam() == "avx2" && g.multiplier == 1) {  // (a multiplier: grouped tiles)
            const Plan plan =
                Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{GetParam()});
            const bool vector_stage = (output == DType::s32) == (scheme == SchemeKind::int32);
            EXPECT_EQ(plan.describe().find("depthwise tiles: output stage from the registers") !=
                          std::string::npos,
                      vector_stage)
                << plan.describe();
          }
        }
      }
    }
  }
}

#ifdef QCONV_FEWER_KERNEL_VARIANTS
constexpr bool kEveryKernelVariant = false;  // the library's, as tests/CMakeLists.txt sets it
#else
constexpr bool kEveryKernelVariant = true;
#endif

// Whether a layer's full 64-lane blocks take a w − zw outside s8 without a second tap per weight:
// as a + c, or on a spare row slot (DepthwiseSplit), by Plan::describe().
bool takes_second_part_in_one(const std::string& described) {
  return described.find("a + c") != std::string::npos ||
         described.find("spare row slot") != std::string::npos;
}

// The kernels that interleave their columns in registers (full blocks of a u8 or s8 input,
// `kernel_w` kernel columns at stride `stride_w`: 3 with one group of 2 to 4 kernel rows, 5 with
// two groups of 5 to 7; partly filled blocks of the same layer still go through the column buffer):
// odd and even widths and heights, every padding of the columns and rows, stride 1 over rows
// (output rows in pairs) and 2, channel counts that leave 64-lane blocks full, partly filled or
// followed by full or partly filled 32- and 16-lane blocks (a full 32-lane one: 96 and 32; 16-lane:
// 80, 16), every scheme to u8 and s8 from u8 and s8 inputs, batch 2, 1 and 2 threads, w − zw in one
// s8 part, in two (zw = 3 on s8 weights) or any; at stride 1 and 3 columns, rows of 7 to 14 pixels
// (the pair kernel's tiles of 3 with every tail). Where `in_registers` says so for the case and
// the parts, the layer must take such a kernel (Plan::describe() says so), and must not where it
// says not; with an s8 input, in the optimised builds only. With two parts and 3 columns, its full
// 64-lane blocks must take the second parts without a tap each (takes_second_part_in_one).
void check_columns_in_registers(const std::string& engine, std::int64_t stride_w,
                                std::int64_t kernel_w,
                                bool (*in_registers)(const RandomCase& rc, int parts)) {
  Rng rng(21 + static_cast<std::uint64_t>(stride_w) + (kernel_w == 3 ? 0 : 5));
  // 3 columns: 2 to 4 kernel rows (one group); 5: 5 to 7 (two).
  const std::int64_t first_kh = kernel_w == 3 ? 2 : 5;
  const SchemeKind schemes[] = {
      SchemeKind::fbgemm, SchemeKind::qnnpack,       SchemeKind::onednn,
      SchemeKind::onnx,   SchemeKind::tvm,           SchemeKind::tvm_f32,
      SchemeKind::tflite, SchemeKind::tflite_single, SchemeKind::onnxruntime};
  const std::int64_t channels[] = {64, 128, 65, 100, 48, 96, 80, 192, 32, 145, 16, 24};
  int round = 0;
  for (std::int64_t kh = first_kh; kh <= first_kh + 2; ++kh) {
    for (std::int64_t stride_h = 1; stride_h <= 2; ++stride_h) {
      for (std::int64_t pad = 0; pad <= 2; ++pad, ++round) {
        const std::int64_t c = channels[static_cast<std::size_t>(round) % std::size(channels)];
        const std::int64_t h = first_kh + 3 + round % 4, w = 7 + (round * 3) % 8;
        // Padding: left and right, top and bottom apart, each 0 to 2.
        const std::int64_t bottom = (pad + 1) % 3, left = (pad + 2) % 3;
        const Geometry g{c, 1,   h,      w,    kh,  kernel_w, stride_h, stride_w,
                         1, pad, bottom, left, pad, false,    0};
        for (int sub = 0; sub < 4; ++sub) {
          const SchemeKind scheme = schemes[static_cast<std::size_t>(round * 4 + sub) % 9];
          ProblemDesc d = depthwise_desc(rng, g, 1 + sub % 2, false, scheme);
          // s8 inputs too: the kernels flip them to u8 as they interleave.
          d.input_dtype = sub == 1 || sub == 2 ? DType::s8 : DType::u8;
          d.input_zero_point = test::random_zero_point(rng, d.input_dtype, sub >= 2);
          d.output_dtype = sub % 2 == 0 ? DType::u8 : DType::s8;
          d.output_zero_point = test::random_zero_point(rng, d.output_dtype, sub == 2);
          if (sub < 2) {  // w − zw in s8: one part per tap
            for (auto& z : d.weight_zero_point) z = d.weight_dtype == DType::u8 ? 128 : 0;
          } else if (sub == 2) {  // s8 weights below −125 need two parts
            d.weight_dtype = DType::s8;
            for (auto& z : d.weight_zero_point) z = 3;
          }
          const RandomCase rc = test::random_case_for(rng, d);
          SCOPED_TRACE(Problem(rc.desc).summary());
          if (engine.starts_with("avx512")) {
            const Plan plan =
                Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{engine});
            const std::string described = plan.describe();
            const int parts = described.find("2 taps per weight") != std::string::npos ? 2
                              : described.find("taps per weight") != std::string::npos ? 3
                                                                                       : 1;
            // Builds with fewer kernel variants leave s8 inputs to the buffer.
            const bool flipped_in_registers = d.input_dtype == DType::u8 || kEveryKernelVariant;
            EXPECT_EQ(described.find("in registers") != std::string::npos,
                      in_registers(rc, parts) && flipped_in_registers)
                << described;
            const bool split = kernel_w == 3 && parts == 2 && flipped_in_registers && c >= 64;
            EXPECT_EQ(takes_second_part_in_one(described), split) << described;
            // Output rows in pairs (stride 1 over up to 3 kernel rows) of 8 pixels or more: the
            // full 64-lane blocks on one part take both rows of a pair at once.
            if (kernel_w == 3 && stride_w == 1 && parts == 1) {
              const bool pairs = stride_h == 1 && kh <= 3 && c >= 64 && flipped_in_registers &&
                                 Problem(rc.desc).out_width() >= 8;
              EXPECT_EQ(described.find("interleaved once for both rows") != std::string::npos,
                        pairs)
                  << described;
            }
          }
          expect_exact(engine, rc, 1 + sub / 2);
          if (testing::Test::HasFatalFailure()) return;
        }
      }
    }
  }
}

// At stride 2 every full block (all but 48 and 24 channels have one), w − zw in one or two parts.
TEST_P(DepthwiseConformance, StrideTwoColumnsInRegisters) {
  check_columns_in_registers(GetParam(), 2, 3, [](const RandomCase& rc, int parts) {
    const std::int64_t c = rc.desc.in_channels;
    return parts <= 2 && c != 48 && c != 24;
  });
}

// 5 columns (5 to 7 kernel rows: two groups) at stride 2: full 64-lane blocks, w − zw in one or
// two parts.
TEST_P(DepthwiseConformance, StrideTwoFiveColumnsInRegisters) {
  check_columns_in_registers(GetParam(), 2, 5, [](const RandomCase& rc, int parts) {
    return parts <= 2 && rc.desc.in_channels >= 64;
  });
}

// At stride 1 full 64- and 16-lane blocks with one part (a 32-lane block reads the column buffer:
// 32 and 24 channels have neither block, 48 one partly filled); with two, the full 64-lane blocks
// that take w − zw as a + c, the others the buffer.
TEST_P(DepthwiseConformance, StrideOneColumnsInRegisters) {
  check_columns_in_registers(GetParam(), 1, 3, [](const RandomCase& rc, int parts) {
    const std::int64_t c = rc.desc.in_channels;
    if (parts == 2) return c >= 64;
    return parts == 1 && (c >= 64 || c % 64 == 16);
  });
}

// 5 columns at stride 1: full 64-lane blocks, one part only.
TEST_P(DepthwiseConformance, StrideOneFiveColumnsInRegisters) {
  check_columns_in_registers(GetParam(), 1, 5, [](const RandomCase& rc, int parts) {
    return parts == 1 && rc.desc.in_channels >= 64;
  });
}

// A depthwise problem of `g` for the weight-zero-point tests below, the rest varied by `round`:
// every scheme (int32's problems as fbgemm's), batch 1 and 2, u8 and s8 inputs and outputs with
// zero points at either end or random, `weight` weights in OHWI ([o][h][w]: one input channel), so
// that the tests can set each channel's taps; the weight zero points are the test's.
ProblemDesc weight_zero_point_desc(Rng& rng, const Geometry& g, DType weight, int round) {
  const SchemeKind scheme =
      test::kEveryScheme[static_cast<std::size_t>(round) % std::size(test::kEveryScheme)];
  ProblemDesc d = depthwise_desc(rng, g, 1 + round % 2, false,
                                 scheme == SchemeKind::int32 ? SchemeKind::fbgemm : scheme);
  d.weight_dtype = weight;
  d.weight_layout = Layout::OHWI;
  d.input_dtype = round % 3 == 1 ? DType::s8 : DType::u8;
  d.input_zero_point = test::random_zero_point(rng, d.input_dtype, round % 2 == 0);
  d.output_dtype = round % 4 < 2 ? DType::u8 : DType::s8;
  d.output_zero_point = test::random_zero_point(rng, d.output_dtype, round % 3 == 0);
  return d;
}

void set_weight(RandomCase& rc, std::int64_t at, std::int32_t value) {
  rc.weights[static_cast<std::size_t>(at)] = value;
  rc.weight_bytes[static_cast<std::size_t>(at)] = static_cast<std::uint8_t>(value);
}

// Plan::describe() of the case on `engine` where it takes the fused kernels (an AVX-512 engine,
// and for an s8 input the builds with every kernel variant), else empty.
std::string fused_plan_description(const std::string& engine, const RandomCase& rc) {
  if (!engine.starts_with("avx512") || !(kEveryKernelVariant || rc.desc.input_dtype == DType::u8)) {
    return {};
  }
  return Plan::prepare(Problem(rc.desc), rc.weight_view(), PrepareOptions{engine}).describe();
}

// w − zw as a + c on 3x3 full 64-lane blocks at stride 1 and 2, where a weight zero point near one
// end of the weights' range needs two s8 parts (a channel's weights span at most 255 values, so
// then every channel has a c in s8 that leaves each a = w − zw − c in s8): per-tensor and
// per-channel zero points on s8 and u8 weights that reach both ends of their dtype, blocks followed
// by a 16-lane block (the column buffer, two parts) or none, padding on every side, output rows in
// pairs and alone, u8 and s8 inputs, every scheme to u8 and s8, batch 1 and 2, 1 and 2 threads; and
// one channel whose w − zw reaches 255 (s8 weights with zw = −128, u8 with zw = 0), three parts,
// where no block takes a + c. Each end in two kernel rows of every channel: a block whose channels
// reach beyond s8 in one kernel row each takes the spare row slot instead
// (WeightZeroPointOnADuplicatedRow).
TEST_P(DepthwiseConformance, WeightZeroPointAsColumnSums) {
  Rng rng(31);
  // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
  const Geometry shapes[] = {
      {64, 1, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {144, 1, 8, 7, 3, 3, 1, 1, 1, 0, 2, 2, 0, false, 0},
      {192, 1, 7, 13, 3, 3, 2, 1, 1, 1, 0, 0, 1, false, 0},
      {128, 1, 9, 12, 3, 3, 2, 2, 1, 1, 1, 1, 0, false, 0},
      {80, 1, 10, 9, 3, 3, 1, 2, 1, 0, 1, 1, 1, false, 0},
  };
  int round = 0;
  for (const Geometry& g : shapes) {
    for (DType weight : {DType::s8, DType::u8}) {
      for (int three_parts = 0; three_parts < 2; ++three_parts, ++round) {
        ProblemDesc d = weight_zero_point_desc(rng, g, weight, round);
        // Near one end: s8 weights' w − zw down to −131 or less, u8 weights' up to 132 or more.
        const std::int32_t near_end = weight == DType::s8 ? 3 + round % 4 : 123 - round % 4;
        d.weight_zero_point.assign(round % 2 == 0 ? 1 : static_cast<std::size_t>(g.channels),
                                   near_end);
        if (three_parts == 1) {  // channel 70 (10 of 64 channels): w − zw up to 255
          d.weight_zero_point.assign(static_cast<std::size_t>(g.channels), near_end);
          d.weight_zero_point[g.channels > 64 ? 70 : 10] = weight == DType::s8 ? -128 : 0;
        }
        RandomCase rc = test::random_case_for(rng, d);
        // Each channel's weights reach both ends of the dtype, each in two kernel rows (so no
        // block takes the spare row slot).
        const std::int64_t taps = g.kh * g.kw;
        for (std::int64_t o = 0; o < g.channels; ++o) {
          for (std::int64_t t = 0; t < 2; ++t) {
            const std::int32_t v = weight == DType::s8 ? (t == 0 ? -128 : 127) : (t == 0 ? 0 : 255);
            for (const std::int64_t row : {0, 1}) {
              set_weight(rc, o * taps + (o + 4 * t + row * g.kw) % taps, v);
            }
          }
        }
        SCOPED_TRACE(Problem(rc.desc).summary());
        if (const std::string described = fused_plan_description(GetParam(), rc);
            !described.empty()) {
          EXPECT_NE(described.find(three_parts == 1 ? "3 taps per weight" : "2 taps per weight"),
                    std::string::npos)
              << described;
          EXPECT_EQ(described.find("a + c") != std::string::npos, three_parts == 0) << described;
          EXPECT_EQ(described.find("spare row slot"), std::string::npos) << described;
        }
        expect_exact(GetParam(), rc, 1 + round / 2 % 2);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// w − zw outside s8 in one kernel row per channel (DepthwiseSplit::duplicated_row): full 64-lane
// blocks of 3x3 and 2x3 kernels at stride 1 (output rows in pairs: the upper row's spare slot is
// 3, the lower's 0 for 3 kernel rows and 3 for 2) and 2 (slot 3), each channel's duplicated row
// its own (every kernel row in turn, below s8 and above it), per-tensor and per-channel zero
// points on s8 and u8 weights, channels with no w − zw outside s8 among them, padding on every
// side, u8 and s8 inputs, every scheme to u8 and s8, batch 1 and 2, 1 and 2 threads. In the
// second round of each shape one channel of the second block reaches beyond s8 in two kernel
// rows: that block takes a + c, the others the spare slot; in every third round the first block
// has no w − zw outside s8 and takes one part.
TEST_P(DepthwiseConformance, WeightZeroPointOnADuplicatedRow) {
  Rng rng(41);
  // channels, multiplier, h, w, kh, kw, sh, sw, dilation, pads t b l r, transposed, out pad
  const Geometry shapes[] = {
      {128, 1, 9, 10, 3, 3, 1, 1, 1, 1, 1, 1, 1, false, 0},
      {144, 1, 8, 7, 3, 3, 1, 1, 1, 0, 2, 2, 0, false, 0},
      {192, 1, 7, 13, 3, 3, 2, 2, 1, 1, 0, 0, 1, false, 0},
      {128, 1, 9, 12, 2, 3, 1, 1, 1, 1, 1, 1, 0, false, 0},
      {128, 1, 10, 9, 2, 3, 2, 2, 1, 0, 1, 1, 1, false, 0},
  };
  int round = 0;
  for (const Geometry& g : shapes) {
    for (DType weight : {DType::s8, DType::u8}) {
      for (int two_rows = 0; two_rows < 2; ++two_rows, ++round) {
        ProblemDesc d = weight_zero_point_desc(rng, g, weight, round);
        // Near the low end of s8 weights (w − zw down to −128 − zw) or the high end of u8 ones
        // (up to 255 − zw); per tensor or per channel.
        const auto zero_point = [&](std::int64_t o) {
          const std::int32_t step = round % 2 == 0 ? 0 : static_cast<std::int32_t>(o % 3);
          return weight == DType::s8 ? 3 + step : 123 - step;
        };
        d.weight_zero_point.resize(round % 2 == 0 ? 1 : static_cast<std::size_t>(g.channels));
        for (std::size_t o = 0; o < d.weight_zero_point.size(); ++o) {
          d.weight_zero_point[o] = zero_point(static_cast<std::int64_t>(o));
        }
        RandomCase rc = test::random_case_for(rng, d);
        // Channel o's weights: within s8 of zw but in its duplicated row (o % kh), which reaches
        // the far end of the dtype once or more; every seventh channel nowhere, and in every
        // third round no channel of the first block (which then takes one part).
        const bool first_block_in_s8 = round % 3 == 2;
        const std::int64_t taps = g.kh * g.kw;
        const std::int32_t lowest = weight == DType::s8 ? -128 : 0;
        for (std::int64_t o = 0; o < g.channels; ++o) {
          const std::int32_t zw = zero_point(o);
          const std::int64_t duplicated =
              o % 7 == 6 || (first_block_in_s8 && o < 64) ? -1 : o % g.kh;
          const bool beyond_two_rows = two_rows == 1 && o == 70;
          for (std::int64_t t = 0; t < taps; ++t) {
            const std::int64_t r = t / g.kw;
            std::int32_t v = static_cast<std::int32_t>(rng.uniform(zw - 128, zw + 127));
            v = std::clamp(v, lowest, lowest + 255);
            if ((r == duplicated && (t + o) % 2 == 0) || (beyond_two_rows && t % g.kw == 0)) {
              v = weight == DType::s8 ? -128 : 255;  // beyond s8 of zw
            }
            set_weight(rc, o * taps + t, v);
          }
        }
        SCOPED_TRACE(Problem(rc.desc).summary());
        if (const std::string described = fused_plan_description(GetParam(), rc);
            !described.empty()) {
          EXPECT_NE(described.find("2 taps per weight"), std::string::npos) << described;
          // The full 64-lane blocks left to the spare slot: all but those two.
          const std::int64_t spare_blocks =
              g.channels / 64 - (first_block_in_s8 ? 1 : 0) - two_rows;
          EXPECT_EQ(described.find("spare row slot") != std::string::npos, spare_blocks > 0)
              << described;
          EXPECT_EQ(described.find("a + c") != std::string::npos, two_rows == 1) << described;
          EXPECT_EQ(described.find("every w - zw in s8: one part") != std::string::npos,
                    first_block_in_s8)
              << described;
        }
        expect_exact(GetParam(), rc, 1 + round / 2 % 2);
        if (HasFatalFailure()) return;
      }
    }
  }
}

// Random depthwise problems: every size class, multiplier, stride, dilation and padding.
TEST_P(DepthwiseConformance, RandomDepthwiseProblems) {
  Rng rng(20261130);
  for (int i = 0; i < 400; ++i) {
    RandomProblemOptions opt;
    opt.op = rng.chance(0.7) ? OpKind::conv2d : OpKind::conv2d_transpose;
    opt.input_layout = rng.chance(0.9) ? Layout::NHWC : Layout::NCHW;
    opt.output_layout = rng.chance(0.9) ? Layout::NHWC : Layout::NCHW;
    opt.depthwise = true;
    opt.max_depthwise_channels = 8;
    opt.max_depthwise_channels_wide = 150;
    opt.max_multiplier = 4;
    opt.max_kernel = rng.pick<std::int64_t>({3, 5, 7});
    opt.max_stride = 2;
    opt.max_dilation = 2;
    opt.max_padding = 3;
    opt.max_extent = 12;
    opt.max_batch = 2;
    opt.extreme_zero_points = rng.chance(0.3);
    RandomCase rc = test::random_case(rng, opt);
    if (rc.desc.in_channels < 2) continue;  // groups = 1: a plain convolution
    SCOPED_TRACE("problem " + std::to_string(i));
    expect_exact(GetParam(), rc, 1 + i % 2);
    if (HasFatalFailure()) return;
  }
}

INSTANTIATE_TEST_SUITE_P(Engines, DepthwiseConformance, ::testing::ValuesIn(fast_engines()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(DepthwiseConformance);

}  // namespace
}  // namespace qconv
