// SPDX-License-Identifier: Apache-2.0
// The accumulator bound of SPEC §3: a problem prepares exactly when
//   max|x − zx| · max over channels of Σ|w − zw| ≤ 2^31 − 1,
// from the real zero points and weight values. At the largest K that cannot overflow, the
// worst-case input must give the exact extreme accumulator; one tap more is refused with
// OverflowRisk naming K, unless wrap-around was asked for, in which case the result is the
// two's-complement wrap of the exact sum. A per-call input zero point is checked against the same
// bound at execution.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "support/expect_error.hpp"
#include "support/wrap.hpp"

namespace qconv {
namespace {

using test::wrap_s32;

using test::throws;
using test::throws_leaving_untouched;

constexpr std::int64_t kLimit = std::numeric_limits<std::int32_t>::max();

// max |x − zx| over every value of the dtype, by enumeration.
std::int64_t max_input_offset(DType dtype, std::int64_t zx) {
  std::int64_t best = 0;
  for (std::int64_t x = dtype_min(dtype); x <= dtype_max(dtype); ++x)
    best = std::max(best, std::abs(x - zx));
  return best;
}

// K = C_in/groups · kh · kw written with kernel sides up to 9, so the bound is met by a real
// kernel and not by channels alone.
struct Reduction {
  std::int64_t channels_per_group, kernel_h, kernel_w;
};

Reduction realise(std::int64_t k) {
  for (std::int64_t kh = 9; kh >= 1; --kh) {
    if (k % kh != 0) continue;
    for (std::int64_t kw = 9; kw >= 1; --kw) {
      if ((k / kh) % kw == 0) return {k / (kh * kw), kh, kw};
    }
  }
  return {k, 1, 1};
}

// A problem whose single output element sums all K taps of every group: a convolution whose
// input is exactly one kernel window, or a transposed convolution of a kernel-sized input cropped
// by kernel − 1 on every side (only the centre position, where every tap lands, remains).
ProblemDesc one_output_problem(OpKind op, const Reduction& r, std::int64_t groups,
                               std::int64_t out_channels) {
  ProblemDesc d;
  d.op = op;
  d.in_channels = r.channels_per_group * groups;
  d.groups = groups;
  d.out_channels = out_channels;
  d.kernel_h = d.in_height = r.kernel_h;
  d.kernel_w = d.in_width = r.kernel_w;
  if (op == OpKind::conv2d_transpose) {
    d.pad_top = d.pad_bottom = r.kernel_h - 1;
    d.pad_left = d.pad_right = r.kernel_w - 1;
  }
  d.input_layout = d.output_layout = Layout::NHWC;
  // OIHW for both operations: the weight of (o, c, r, s) is at ((o·C_in/groups + c)·kh + r)·kw + s.
  d.weight_layout = Layout::OIHW;
  d.scheme.kind = SchemeKind::int32;
  d.output_dtype = DType::s32;
  return d;
}

std::int64_t weight_count(const ProblemDesc& d) {
  return d.out_channels * (d.in_channels / d.groups) * d.kernel_h * d.kernel_w;
}

ConstTensorView weight_view(const ProblemDesc& d, const std::vector<std::int8_t>& w) {
  return {w.data(),
          w.size(),
          d.weight_dtype,
          Layout::OIHW,
          {d.out_channels, d.in_channels / d.groups, d.kernel_h, d.kernel_w}};
}

ConstTensorView input_view(const ProblemDesc& d, const std::vector<std::int8_t>& x) {
  return {
      x.data(), x.size(), d.input_dtype, Layout::NHWC, {1, d.in_height, d.in_width, d.in_channels}};
}

// Values stored as bytes whatever their dtype (u8 255 and s8 −1 share a byte).
std::vector<std::int8_t> filled(std::int64_t count, std::int32_t value) {
  return std::vector<std::int8_t>(static_cast<std::size_t>(count), static_cast<std::int8_t>(value));
}

std::vector<std::int32_t> run(const Plan& plan, const ProblemDesc& d,
                              const std::vector<std::int8_t>& input, RunOptions options = {}) {
  std::vector<std::int32_t> out(static_cast<std::size_t>(d.out_channels), 0x5a5a5a5a);
  plan.execute(input_view(d, input),
               {std::span<std::int32_t>(out), DType::s32, Layout::NHWC, {1, 1, 1, d.out_channels}},
               {}, options);
  return out;
}

// Every input at `x`, every weight at `w`: the uniform worst case of one zero-point setting.
struct UniformCase {
  const char* name;
  DType input_dtype;
  std::int32_t zx;
  std::int32_t x;  // the input value furthest from zx
  DType weight_dtype;
  std::int32_t zw;
  std::int32_t w;
};

const UniformCase kUniformCases[] = {
    {"u8 input zx=0, s8 weights -128 zw=0", DType::u8, 0, 255, DType::s8, 0, -128},
    {"s8 input zx=127, u8 weights 255 zw=0", DType::s8, 127, -128, DType::u8, 0, 255},
    {"s8 input zx=-128, s8 weights -128 zw=127", DType::s8, -128, 127, DType::s8, 127, -128},
    {"u8 input zx=100, s8 weights 127 zw=-1", DType::u8, 100, 255, DType::s8, -1, 127},
    {"u8 input zx=255, u8 weights 0 zw=255", DType::u8, 255, 0, DType::u8, 255, 0},
};

ProblemDesc uniform_problem(const UniformCase& c, OpKind op, std::int64_t k, std::int64_t groups) {
  ProblemDesc d = one_output_problem(op, realise(k), groups, groups);
  d.input_dtype = c.input_dtype;
  d.input_zero_point = c.zx;
  d.weight_dtype = c.weight_dtype;
  d.weight_zero_point = {c.zw};
  return d;
}

// The largest K for the case, derived here from the bound itself.
std::int64_t largest_safe_k(const UniformCase& c) {
  const std::int64_t mx = max_input_offset(c.input_dtype, c.zx);
  EXPECT_EQ(mx, std::abs(c.x - c.zx)) << "the case's input value is not the worst one";
  return kLimit / (mx * std::abs(c.w - c.zw));
}

TEST(OverflowBound, LargestSafeKPreparesAndGivesTheExactExtreme) {
  for (const UniformCase& c : kUniformCases) {
    const std::int64_t k = largest_safe_k(c);
    const std::int64_t exact = k * (c.x - c.zx) * (c.w - c.zw);
    ASSERT_LE(std::abs(exact), kLimit);
    ASSERT_GT(std::abs(exact) + std::abs((c.x - c.zx) * (c.w - c.zw)), kLimit);  // K + 1 is over
    for (OpKind op : {OpKind::conv2d, OpKind::conv2d_transpose}) {
      for (std::int64_t groups : {1, 2}) {
        for (const char* engine : {"auto", "reference"}) {
          SCOPED_TRACE(std::string(c.name) + ", " + std::string(to_string(op)) + ", groups " +
                       std::to_string(groups) + ", engine " + engine);
          const ProblemDesc d = uniform_problem(c, op, k, groups);
          ASSERT_EQ(Problem(d).reduction_size(), k);
          const auto weights = filled(weight_count(d), c.w);
          const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights), {engine});
          const auto out = run(plan, d, filled(d.in_height * d.in_width * d.in_channels, c.x));
          for (std::int32_t v : out) EXPECT_EQ(v, exact);
        }
      }
    }
  }
}

TEST(OverflowBound, OneTapPastTheLargestSafeKIsRefusedNamingK) {
  for (const UniformCase& c : kUniformCases) {
    const std::int64_t k = largest_safe_k(c) + 1;
    for (OpKind op : {OpKind::conv2d, OpKind::conv2d_transpose}) {
      for (std::int64_t groups : {1, 2}) {
        SCOPED_TRACE(std::string(c.name) + ", " + std::string(to_string(op)) + ", groups " +
                     std::to_string(groups));
        const ProblemDesc d = uniform_problem(c, op, k, groups);
        const auto weights = filled(weight_count(d), c.w);
        const std::string reach = std::to_string(k * std::abs((c.x - c.zx) * (c.w - c.zw)));
        EXPECT_TRUE(throws<OverflowRisk>(
            [&] { Plan::prepare(Problem(d), weight_view(d, weights)); },
            {"K = " + std::to_string(k), "can reach " + reach, "2^31 - 1", "allow_wraparound"}));
      }
    }
  }
}

// With wrap-around accepted the result is the exact sum modulo 2^32, read as s32: one tap past
// the bound, and far past it (the sum wraps several times).
TEST(OverflowBound, WraparoundGivesTheTwosComplementOfTheExactSum) {
  for (const UniformCase& c : kUniformCases) {
    const std::int64_t safe = largest_safe_k(c);
    for (std::int64_t k : {safe + 1, 3 * safe + 7}) {
      for (OpKind op : {OpKind::conv2d, OpKind::conv2d_transpose}) {
        SCOPED_TRACE(std::string(c.name) + ", " + std::string(to_string(op)) + ", K " +
                     std::to_string(k));
        ProblemDesc d = uniform_problem(c, op, k, 1);
        d.allow_wraparound = true;
        const auto weights = filled(weight_count(d), c.w);
        const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights));
        const std::int64_t exact = k * (c.x - c.zx) * (c.w - c.zw);
        ASSERT_GT(std::abs(exact), kLimit);
        const auto out = run(plan, d, filled(d.in_height * d.in_width * d.in_channels, c.x));
        EXPECT_EQ(out[0], wrap_s32(exact)) << "exact sum " << exact;
      }
    }
  }
}

// Random values far enough from their zero points that the sum leaves s32: the 64-bit sum, here
// computed term by term, wrapped.
TEST(OverflowBound, WraparoundOfARandomSum) {
  std::mt19937_64 rng(7);
  const Reduction r{12500, 4, 4};  // K = 200000
  ProblemDesc d = one_output_problem(OpKind::conv2d, r, 1, 2);
  d.input_dtype = DType::u8;
  d.input_zero_point = 3;
  d.weight_dtype = DType::s8;
  d.weight_zero_point = {5, -7};
  d.allow_wraparound = true;
  std::vector<std::int8_t> input(static_cast<std::size_t>(200000));
  std::vector<std::int8_t> weights(static_cast<std::size_t>(2 * 200000));
  for (auto& x : input)
    x = static_cast<std::int8_t>(std::uniform_int_distribution<int>(180, 255)(rng));
  for (auto& w : weights)
    w = static_cast<std::int8_t>(std::uniform_int_distribution<int>(-128, -90)(rng));
  const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights));
  const auto out = run(plan, d, input);
  // OIHW weight (o, c, r, s) and NHWC input (r, s, c) of the single window.
  for (std::int64_t o = 0; o < 2; ++o) {
    std::int64_t exact = 0;
    for (std::int64_t c = 0; c < r.channels_per_group; ++c)
      for (std::int64_t kr = 0; kr < r.kernel_h; ++kr)
        for (std::int64_t ks = 0; ks < r.kernel_w; ++ks) {
          const std::int64_t x = static_cast<std::uint8_t>(
              input[static_cast<std::size_t>((kr * r.kernel_w + ks) * r.channels_per_group + c)]);
          const std::int64_t w = weights[static_cast<std::size_t>(
              ((o * r.channels_per_group + c) * r.kernel_h + kr) * r.kernel_w + ks)];
          exact +=
              (x - d.input_zero_point) * (w - d.weight_zero_point[static_cast<std::size_t>(o)]);
        }
    ASSERT_GT(std::abs(exact), kLimit);
    EXPECT_EQ(out[static_cast<std::size_t>(o)], wrap_s32(exact)) << "channel " << o;
  }
}

// The bound is Σ|w − zw| of the real weights, not K · max|w − zw|: a long reduction whose weights
// mostly equal their zero point prepares, and one weight more away from it tips it over.
TEST(OverflowBound, TheBoundUsesTheRealWeights) {
  const std::int64_t k = 70000;
  ProblemDesc d = one_output_problem(OpKind::conv2d, realise(k), 1, 1);
  d.input_dtype = DType::u8;  // zx = 0: max|x − zx| = 255
  d.weight_dtype = DType::s8;
  const std::int64_t largest_sum = kLimit / 255;  // 8421504 = 128 · 65793
  ASSERT_EQ(largest_sum % 128, 0);
  std::vector<std::int8_t> weights(static_cast<std::size_t>(k), 0);
  std::fill_n(weights.begin(), largest_sum / 128, std::int8_t{-128});
  const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights));
  const auto out = run(plan, d, filled(k, 255));
  EXPECT_EQ(out[0], -255 * largest_sum);

  weights.back() = 1;  // Σ|w − zw| = largest_sum + 1
  EXPECT_TRUE(throws<OverflowRisk>([&] { Plan::prepare(Problem(d), weight_view(d, weights)); },
                                   {"K = 70000", "sum|w - zw| = 8421505"}));
}

// The bound takes the largest Σ|w − zw| over the output channels, with their own zero points.
TEST(OverflowBound, TheBoundTakesTheWorstChannel) {
  const UniformCase& c = kUniformCases[0];  // u8 zx = 0, s8 weights −128, zw 0: 128 per tap
  const std::int64_t k = largest_safe_k(c);
  ProblemDesc d = one_output_problem(OpKind::conv2d, realise(k), 1, 3);
  d.input_dtype = DType::u8;
  d.weight_dtype = DType::s8;
  d.weight_zero_point = {-128, -128, 0};  // channels 0 and 1: |w − zw| = 0, channel 2 the worst
  const auto weights = filled(weight_count(d), -128);
  const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights));
  const auto out = run(plan, d, filled(d.in_height * d.in_width * d.in_channels, 255));
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 0);
  EXPECT_EQ(out[2], -255 * 128 * k);

  d = one_output_problem(OpKind::conv2d, realise(k + 1), 1, 3);
  d.input_dtype = DType::u8;
  d.weight_dtype = DType::s8;
  d.weight_zero_point = {-128, -128, 0};
  const auto more = filled(weight_count(d), -128);
  EXPECT_TRUE(throws<OverflowRisk>([&] { Plan::prepare(Problem(d), weight_view(d, more)); },
                                   {"K = " + std::to_string(k + 1)}));
}

// The bound sums the weights wherever they lie: the same random weights given in every layout
// (packing sums them on its way, reading each layout in its own order) name the same
// max Σ|w − zw| in the refusal, for s8 and u8 weights with zero points per channel.
TEST(OverflowBound, EveryWeightLayoutGivesTheSameSums) {
  std::mt19937_64 rng(11);
  const Reduction r{12500, 4, 4};  // K = 200000: random |w − zw| sums past 2^31 / 255
  const std::int64_t taps = r.kernel_h * r.kernel_w;
  struct Case {
    OpKind op;
    Layout layout;
  };
  for (DType dtype : {DType::s8, DType::u8}) {
    for (const Case& c :
         {Case{OpKind::conv2d, Layout::OHWI}, Case{OpKind::conv2d, Layout::OIHW},
          Case{OpKind::conv2d, Layout::HWIO}, Case{OpKind::conv2d_transpose, Layout::IOHW}}) {
      SCOPED_TRACE(std::string(to_string(dtype)) + " " + std::string(to_string(c.layout)));
      ProblemDesc d = one_output_problem(c.op, r, 1, 3);
      d.input_dtype = DType::u8;  // zx = 0: max|x − zx| = 255
      d.weight_dtype = dtype;
      d.weight_layout = c.layout;
      d.weight_zero_point = dtype == DType::s8 ? std::vector<std::int32_t>{3, -5, 0}
                                               : std::vector<std::int32_t>{128, 100, 200};
      const std::int64_t in = r.channels_per_group, out = d.out_channels;
      std::vector<std::int8_t> weights(static_cast<std::size_t>(out * in * taps));
      std::int64_t largest = 0;
      for (std::int64_t o = 0; o < out; ++o) {
        std::int64_t sum = 0;
        for (std::int64_t i = 0; i < in; ++i) {
          for (std::int64_t t = 0; t < taps; ++t) {
            const auto byte = static_cast<std::int8_t>(rng());
            const std::int32_t w = dtype == DType::s8 ? byte : static_cast<std::uint8_t>(byte);
            sum += std::abs(w - d.weight_zero_point[static_cast<std::size_t>(o)]);
            std::int64_t at = 0;
            switch (c.layout) {
              case Layout::OHWI: at = (o * taps + t) * in + i; break;
              case Layout::OIHW: at = (o * in + i) * taps + t; break;
              case Layout::HWIO: at = (t * in + i) * out + o; break;
              default: at = (i * out + o) * taps + t; break;  // IOHW
            }
            weights[static_cast<std::size_t>(at)] = byte;
          }
        }
        largest = std::max(largest, sum);
      }
      ASSERT_GT(255 * largest, kLimit);
      const Problem problem(d);
      const ConstTensorView view(weights.data(), weights.size(), dtype, c.layout,
                                 problem.weight_shape());
      for (const char* engine : {"auto", "reference"}) {
        EXPECT_TRUE(throws<OverflowRisk>([&] { Plan::prepare(problem, view, {engine}); },
                                         {"sum|w - zw| = " + std::to_string(largest)}))
            << engine;
      }
    }
  }
}

// A plan prepared with zx = 128 (max|x − zx| = 128) at the largest safe K: a per-call zero point
// that keeps max|x − zx| at 128 runs exactly; one that raises it is refused at execution, naming
// K and the zero point, with the output untouched — unless wrap-around was asked for.
TEST(OverflowBound, PerCallInputZeroPointIsCheckedAgainstTheBound) {
  const std::int64_t k = kLimit / (128 * 128);  // 131071
  ProblemDesc d = one_output_problem(OpKind::conv2d, realise(k), 1, 1);
  d.input_dtype = DType::u8;
  d.input_zero_point = 128;
  d.weight_dtype = DType::s8;
  const auto weights = filled(k, -128);
  const Plan plan = Plan::prepare(Problem(d), weight_view(d, weights));
  const auto input = filled(k, 255);

  RunOptions same_offset;
  same_offset.input_zero_point = 127;  // max|x − 127| = 128
  EXPECT_EQ(run(plan, d, input, same_offset)[0], (255 - 127) * -128 * k);

  std::vector<std::int32_t> out(1);
  const TensorView out_view(std::span<std::int32_t>(out), DType::s32, Layout::NHWC, {1, 1, 1, 1});
  const std::span<std::uint8_t> out_bytes(reinterpret_cast<std::uint8_t*>(out.data()), 4);
  for (std::int32_t zx : {0, 129, 255}) {
    RunOptions options;
    options.input_zero_point = zx;
    EXPECT_TRUE(throws_leaving_untouched<OverflowRisk>(
        out_bytes, [&] { plan.execute(input_view(d, input), out_view, {}, options); },
        {"K = " + std::to_string(k), "input_zero_point " + std::to_string(zx)}))
        << "zx " << zx;
  }

  d.allow_wraparound = true;
  const Plan wrapping = Plan::prepare(Problem(d), weight_view(d, weights));
  RunOptions zero;
  zero.input_zero_point = 0;
  EXPECT_EQ(run(wrapping, d, input, zero)[0], wrap_s32(std::int64_t{255} * -128 * k));
}

}  // namespace
}  // namespace qconv
