// SPDX-License-Identifier: Apache-2.0
// The reference engine against an independent, deliberately naive formulation of SPEC §3, on
// thousands of seeded random problems covering every parameter (geometry, groups and depthwise,
// layouts, dtypes, zero points, per-channel quantization, schemes, activations, bias, batch).
//
// The naive side shares no code with the library's accumulation: a convolution explicitly builds
// the input padded with its zero point and slides the kernel over it; a transposed convolution
// scatters every input pixel through every kernel tap into a full-size output, then crops the
// padding and extends by the output padding. Sums are 64-bit. With the int32 scheme the expected
// output is written by hand (wrap to s32 after adding the bias, ReLU at 0); every other scheme
// passes the naive accumulator through SPEC §4 as written independently in
// support/spec_output.hpp (never the library's own output stage, so that a wrong rounding cannot
// be its own expected value). A fused clamp is left to tests/output_scheme_test.cpp: here it is
// replaced by no activation. Every engine able to run a problem is checked, not only the
// reference engine.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "support/random_problem.hpp"
#include "support/spec_output.hpp"
#include "support/wrap.hpp"

namespace qconv {
namespace {

using test::wrap_s32;

using test::RandomCase;
using test::RandomProblemOptions;
using test::Rng;

// A logical [N][C][H][W] array of 64-bit sums.
struct Accumulators {
  std::int64_t batch = 0, channels = 0, height = 0, width = 0;
  std::vector<std::int64_t> values;

  std::int64_t& at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
    return values[static_cast<std::size_t>(((n * channels + c) * height + h) * width + w)];
  }
  std::int64_t at(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) const {
    return values[static_cast<std::size_t>(((n * channels + c) * height + h) * width + w)];
  }
};

Accumulators zeros(std::int64_t n, std::int64_t c, std::int64_t h, std::int64_t w) {
  return {n, c, h, w, std::vector<std::int64_t>(static_cast<std::size_t>(n * c * h * w), 0)};
}

// Logical weight (o, c, r, s), c within o's group.
std::int64_t weight(const RandomCase& rc, std::int64_t o, std::int64_t c, std::int64_t r,
                    std::int64_t s) {
  const auto& d = rc.desc;
  const std::int64_t ipg = d.in_channels / d.groups;
  return rc.weights[static_cast<std::size_t>(((o * ipg + c) * d.kernel_h + r) * d.kernel_w + s)];
}

std::int64_t weight_zero_point(const ProblemDesc& d, std::int64_t o) {
  return d.weight_zero_point[d.weight_zero_point.size() == 1 ? 0 : static_cast<std::size_t>(o)];
}

// Convolution: pad the input with its zero point, then slide the dilated kernel over it.
Accumulators naive_conv(const RandomCase& rc, std::int64_t zx) {
  const auto& d = rc.desc;
  const std::int64_t ph = d.in_height + d.pad_top + d.pad_bottom;
  const std::int64_t pw = d.in_width + d.pad_left + d.pad_right;
  Accumulators padded = zeros(d.batch, d.in_channels, ph, pw);
  std::fill(padded.values.begin(), padded.values.end(), zx);
  std::size_t i = 0;
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t c = 0; c < d.in_channels; ++c)
      for (std::int64_t h = 0; h < d.in_height; ++h)
        for (std::int64_t w = 0; w < d.in_width; ++w)
          padded.at(n, c, h + d.pad_top, w + d.pad_left) = rc.input[i++];

  // Output positions: as many as the dilated window fits into the padded input.
  const std::int64_t span_h = (d.kernel_h - 1) * d.dilation_h + 1;
  const std::int64_t span_w = (d.kernel_w - 1) * d.dilation_w + 1;
  std::int64_t oh = 0, ow = 0;
  while (oh * d.stride_h + span_h <= ph) ++oh;
  while (ow * d.stride_w + span_w <= pw) ++ow;

  const std::int64_t ipg = d.in_channels / d.groups;
  const std::int64_t opg = d.out_channels / d.groups;
  Accumulators acc = zeros(d.batch, d.out_channels, oh, ow);
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t o = 0; o < d.out_channels; ++o)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t x = 0; x < ow; ++x) {
          std::int64_t sum = 0;
          for (std::int64_t c = 0; c < ipg; ++c)
            for (std::int64_t r = 0; r < d.kernel_h; ++r)
              for (std::int64_t s = 0; s < d.kernel_w; ++s) {
                const std::int64_t xv =
                    padded.at(n, (o / opg) * ipg + c, y * d.stride_h + r * d.dilation_h,
                              x * d.stride_w + s * d.dilation_w);
                sum += (xv - zx) * (weight(rc, o, c, r, s) - weight_zero_point(d, o));
              }
          acc.at(n, o, y, x) = sum;
        }
  return acc;
}

// Transposed convolution: every input pixel, through every kernel tap, adds its product to the
// output position it lands on in the full (uncropped) output; then the padding is cropped and
// the output padding adds rows and columns that nothing lands on beyond the full output.
Accumulators naive_transposed(const RandomCase& rc, std::int64_t zx) {
  const auto& d = rc.desc;
  const std::int64_t full_h = (d.in_height - 1) * d.stride_h + (d.kernel_h - 1) * d.dilation_h + 1;
  const std::int64_t full_w = (d.in_width - 1) * d.stride_w + (d.kernel_w - 1) * d.dilation_w + 1;
  Accumulators full =
      zeros(d.batch, d.out_channels, full_h + d.output_pad_h, full_w + d.output_pad_w);
  const std::int64_t ipg = d.in_channels / d.groups;
  const std::int64_t opg = d.out_channels / d.groups;
  std::size_t i = 0;
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t ci = 0; ci < d.in_channels; ++ci)
      for (std::int64_t h = 0; h < d.in_height; ++h)
        for (std::int64_t w = 0; w < d.in_width; ++w) {
          const std::int64_t xv = rc.input[i++] - zx;
          const std::int64_t group = ci / ipg;
          for (std::int64_t o = group * opg; o < (group + 1) * opg; ++o)
            for (std::int64_t r = 0; r < d.kernel_h; ++r)
              for (std::int64_t s = 0; s < d.kernel_w; ++s)
                full.at(n, o, h * d.stride_h + r * d.dilation_h,
                        w * d.stride_w + s * d.dilation_w) +=
                    xv * (weight(rc, o, ci - group * ipg, r, s) - weight_zero_point(d, o));
        }
  const std::int64_t oh = full_h - d.pad_top - d.pad_bottom + d.output_pad_h;
  const std::int64_t ow = full_w - d.pad_left - d.pad_right + d.output_pad_w;
  Accumulators acc = zeros(d.batch, d.out_channels, oh, ow);
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t o = 0; o < d.out_channels; ++o)
      for (std::int64_t y = 0; y < oh; ++y)
        for (std::int64_t x = 0; x < ow; ++x)
          acc.at(n, o, y, x) = full.at(n, o, y + d.pad_top, x + d.pad_left);
  return acc;
}

// The int32 scheme by hand: accumulator plus s32 bias, wrapped like a 32-bit register; ReLU
// clamps at the output zero point 0.
std::int32_t int32_scheme(const ProblemDesc& d, const RandomCase& rc, std::int64_t acc,
                          std::int64_t o) {
  const std::int64_t bias = d.has_bias ? rc.bias_s32[static_cast<std::size_t>(o)] : 0;
  const std::int32_t y = wrap_s32(acc + bias);
  return d.activation.kind == Activation::Kind::relu ? std::max(y, 0) : y;
}

std::string describe(const RandomCase& rc, std::uint64_t seed, std::int64_t zx) {
  const auto& d = rc.desc;
  std::ostringstream out;
  out << "seed " << seed << ": " << Problem(d).summary() << " zx=" << zx << " zw=[";
  for (auto z : d.weight_zero_point) out << z << ' ';
  out << "] zy=" << d.output_zero_point << " scales(" << d.input_scale << ", "
      << d.weight_scale.size() << " weight, " << d.output_scale << ")"
      << " rounding=" << to_string(d.scheme.rounding)
      << " given_q31=" << d.scheme.multiplier_q31.size()
      << " activation=" << static_cast<int>(d.activation.kind) << " bias=" << d.has_bias;
  return out.str();
}

// SPEC §4's parameters for output channel o of the problem (support/spec_output.hpp).
test::spec::Params spec_params(const ProblemDesc& d, const RandomCase& rc, std::int64_t o) {
  const auto at = [o](const auto& values) {
    return values[values.size() == 1 ? 0 : static_cast<std::size_t>(o)];
  };
  test::spec::Params p;
  p.kind = d.scheme.kind;
  p.rounding = d.scheme.rounding;
  p.out = d.output_dtype;
  p.relu = d.activation.kind == Activation::Kind::relu;
  p.sx = d.input_scale;
  p.sw = at(d.weight_scale);
  p.sy = d.output_scale;
  p.per_channel = d.weight_scale.size() > 1;
  p.zy = d.output_zero_point;
  p.has_bias = d.has_bias;
  if (d.has_bias && takes_float_bias(d.scheme.kind)) p.fbias = at(rc.bias_f32);
  if (d.has_bias && !takes_float_bias(d.scheme.kind)) p.sbias = at(rc.bias_s32);
  p.given = !d.scheme.multiplier_q31.empty();
  if (p.given) {
    p.q31 = at(d.scheme.multiplier_q31);
    p.shift = at(d.scheme.shift);
  }
  return p;
}

std::string check_engine(Rng& rng, const RandomCase& rc, std::uint64_t seed,
                         const detail::Engine& engine);

// Runs one case through every engine able to run it and compares every output element with the
// naive formulation. Returns an empty string on agreement, else a description of the first
// mismatch.
std::string check_case(Rng& rng, const RandomCase& original, std::uint64_t seed) {
  RandomCase rc = original;
  if (rc.desc.activation.kind == Activation::Kind::clamp) rc.desc.activation = Activation::none();
  int engines = 0;
  for (const detail::Engine* engine : detail::all_engines()) {
    if (!engine->unsupported_reason(Problem(rc.desc)).empty()) continue;
    ++engines;
    std::string mismatch = check_engine(rng, rc, seed, *engine);
    if (!mismatch.empty()) return std::string(engine->name()) + ": " + mismatch;
  }
  return engines > 0 ? "" : describe(rc, seed, rc.desc.input_zero_point) + ": no engine runs it";
}

std::string check_engine(Rng& rng, const RandomCase& rc, std::uint64_t seed,
                         const detail::Engine& engine) {
  const ProblemDesc& d = rc.desc;
  // Now and then a call changes what a plan allows to change per call: the batch (the plan is
  // prepared for another one than the input has) and the input zero point.
  ProblemDesc prepared_for = d;
  if (rng.chance(0.15)) prepared_for.batch = rng.uniform(1, 4);
  const Problem problem(prepared_for);
  const Plan plan =
      Plan::prepare(problem, rc.weight_view(), PrepareOptions{std::string(engine.name())});
  if (plan.engine() != engine.name()) return "the plan did not choose the engine asked for";

  RunOptions options;
  options.threads = static_cast<int>(rng.uniform(1, 3));
  std::int64_t zx = d.input_zero_point;
  if (rng.chance(0.15)) {
    zx = test::random_zero_point(rng, d.input_dtype, false);
    options.input_zero_point = static_cast<std::int32_t>(zx);
  }
  const Accumulators acc = problem.transposed() ? naive_transposed(rc, zx) : naive_conv(rc, zx);
  if (acc.height != problem.out_height() || acc.width != problem.out_width()) {
    return describe(rc, seed, zx) + ": output extent " + std::to_string(problem.out_height()) +
           "x" + std::to_string(problem.out_width()) + ", the naive formulation gives " +
           std::to_string(acc.height) + "x" + std::to_string(acc.width);
  }

  const Shape out_shape =
      test::activation_shape(d.output_layout, d.batch, d.out_channels, acc.height, acc.width);
  const std::size_t elem = element_size(d.output_dtype);
  // A sentinel pattern, so an element the engine never writes cannot pass by being zero.
  std::vector<std::uint8_t> out_bytes(static_cast<std::size_t>(acc.values.size()) * elem, 0x5a);
  plan.execute(
      rc.input_view(),
      TensorView(out_bytes.data(), out_bytes.size(), d.output_dtype, d.output_layout, out_shape),
      rc.bias(), options);

  const std::array<std::int64_t, 4> dims{d.batch, d.out_channels, acc.height, acc.width};
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t o = 0; o < d.out_channels; ++o)
      for (std::int64_t y = 0; y < acc.height; ++y)
        for (std::int64_t x = 0; x < acc.width; ++x) {
          const std::int64_t a = acc.at(n, o, y, x);
          const std::int32_t expected = d.scheme.kind == SchemeKind::int32
                                            ? int32_scheme(d, rc, a, o)
                                            : static_cast<std::int32_t>(test::spec::output(
                                                  spec_params(d, rc, o), wrap_s32(a)));
          const std::int32_t got =
              test::load_value(out_bytes, d.output_dtype,
                               test::activation_offset(d.output_layout, dims, n, o, y, x));
          if (got != expected) {
            std::ostringstream out;
            out << describe(rc, seed, zx) << ": at (n=" << n << ", o=" << o << ", y=" << y
                << ", x=" << x << ") accumulator " << a << " expects " << expected << ", got "
                << got;
            return out.str();
          }
        }
  return {};
}

// Runs `count` cases drawn with `options` from consecutive seeds; reports at most a few
// mismatches so one bug does not flood the log.
void run_cases(std::uint64_t first_seed, int count, const RandomProblemOptions& options) {
  int failures = 0;
  for (int i = 0; i < count && failures < 5; ++i) {
    const std::uint64_t seed = first_seed + static_cast<std::uint64_t>(i);
    Rng rng(seed);
    const RandomCase rc = test::random_case(rng, options);
    std::string mismatch;
    try {
      mismatch = check_case(rng, rc, seed);
    } catch (const std::exception& e) {  // a valid problem must prepare and run
      mismatch = describe(rc, seed, rc.desc.input_zero_point) + ": threw " + e.what();
    }
    if (!mismatch.empty()) {
      ++failures;
      ADD_FAILURE() << mismatch;
    }
  }
}

RandomProblemOptions op_and_scheme(OpKind op, SchemeKind scheme) {
  RandomProblemOptions options;
  options.op = op;
  options.scheme = scheme;
  return options;
}

TEST(Differential, Conv2dAccumulatorsWithInt32Scheme) {
  run_cases(1000, 1000, op_and_scheme(OpKind::conv2d, SchemeKind::int32));
}

TEST(Differential, TransposedAccumulatorsWithInt32Scheme) {
  run_cases(2000, 1000, op_and_scheme(OpKind::conv2d_transpose, SchemeKind::int32));
}

TEST(Differential, DepthwiseWithMultipliers) {
  RandomProblemOptions options;
  options.depthwise = true;
  options.max_multiplier = 4;
  options.max_depthwise_channels = 8;
  run_cases(3000, 300, options);
}

TEST(Differential, ZeroPointsAtTheEndsOfTheirRange) {
  RandomProblemOptions options;
  options.extreme_zero_points = true;
  run_cases(4000, 300, options);
}

// Each scheme other than int32, on both operations: the accumulator reaches the output stage
// unchanged, per channel, with the right bias.
TEST(Differential, EveryOutputScheme) {
  std::uint64_t seed = 5000;
  for (SchemeKind scheme :
       {SchemeKind::fbgemm, SchemeKind::qnnpack, SchemeKind::onednn, SchemeKind::onnx,
        SchemeKind::tvm, SchemeKind::tvm_f32, SchemeKind::tflite, SchemeKind::tflite_single,
        SchemeKind::onnxruntime}) {
    for (OpKind op : {OpKind::conv2d, OpKind::conv2d_transpose}) {
      SCOPED_TRACE(std::string(to_string(scheme)) + " " + std::string(to_string(op)));
      run_cases(seed, 250, op_and_scheme(op, scheme));
      seed += 1000;
    }
  }
}

// Every combination of operation, weight layout, input and output layout and input and weight
// dtype, several times each, the rest drawn.
TEST(Differential, EveryLayoutAndDTypeCombination) {
  std::uint64_t seed = 100000;
  const auto combine = [&](OpKind op, Layout weight_layout) {
    for (Layout in_layout : {Layout::NCHW, Layout::NHWC})
      for (Layout out_layout : {Layout::NCHW, Layout::NHWC})
        for (DType in_dtype : {DType::u8, DType::s8})
          for (DType weight_dtype : {DType::u8, DType::s8}) {
            RandomProblemOptions options;
            options.op = op;
            options.weight_layout = weight_layout;
            options.input_layout = in_layout;
            options.output_layout = out_layout;
            options.input_dtype = in_dtype;
            options.weight_dtype = weight_dtype;
            run_cases(seed, 5, options);
            seed += 100;
          }
  };
  for (Layout layout : {Layout::OIHW, Layout::OHWI, Layout::HWIO, Layout::HWOI})
    combine(OpKind::conv2d, layout);
  for (Layout layout : {Layout::IOHW, Layout::OIHW}) combine(OpKind::conv2d_transpose, layout);
}

// The suite is only as good as what the generator draws: check that the claimed parameter
// ranges all come up (with the seeds the random tests above use).
TEST(Differential, GeneratorCoversEveryParameter) {
  std::set<std::int64_t> strides, dilations, kernels, output_pads, multipliers, batches;
  std::set<std::int32_t> input_zero_points;
  bool asymmetric = false, per_channel_scale = false, per_channel_zero_point = false;
  bool depthwise = false, grouped = false, given_multipliers = false, relu = false, clamp = false;
  for (std::uint64_t seed = 1000; seed < 3000; ++seed) {
    Rng rng(seed);
    const ProblemDesc d = test::random_problem_desc(rng);
    strides.insert({d.stride_h, d.stride_w});
    dilations.insert({d.dilation_h, d.dilation_w});
    kernels.insert({d.kernel_h, d.kernel_w});
    output_pads.insert({d.output_pad_h, d.output_pad_w});
    batches.insert(d.batch);
    input_zero_points.insert(d.input_zero_point);
    asymmetric |= d.pad_top != d.pad_bottom || d.pad_left != d.pad_right;
    per_channel_scale |= d.weight_scale.size() > 1;
    per_channel_zero_point |= d.weight_zero_point.size() > 1;
    if (d.groups == d.in_channels && d.in_channels > 1) {
      depthwise = true;
      multipliers.insert(d.out_channels / d.in_channels);
    }
    grouped |= d.groups > 1 && d.groups < d.in_channels;
    given_multipliers |= !d.scheme.multiplier_q31.empty();
    relu |= d.activation.kind == Activation::Kind::relu;
    clamp |= d.activation.kind == Activation::Kind::clamp;
  }
  EXPECT_EQ(strides, (std::set<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(dilations, (std::set<std::int64_t>{1, 2, 3}));
  EXPECT_EQ(kernels, (std::set<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(output_pads, (std::set<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(multipliers, (std::set<std::int64_t>{1, 2, 3, 4}));  // groups of 1 channel, too
  EXPECT_EQ(batches, (std::set<std::int64_t>{1, 2, 3}));
  for (std::int32_t end : {-128, 127, 0, 255}) EXPECT_TRUE(input_zero_points.contains(end)) << end;
  EXPECT_TRUE(asymmetric && per_channel_scale && per_channel_zero_point && depthwise && grouped &&
              given_multipliers && relu && clamp);
}

}  // namespace
}  // namespace qconv
