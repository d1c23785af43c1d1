// SPDX-License-Identifier: Apache-2.0
// SPEC §6 through the core API: every rule reachable from Problem, the tensor views,
// Plan::prepare, Plan::execute and Plan::require_compatible gets the right exception type and a
// message naming the field (and its value), and a refused execution leaves the output untouched.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "support/expect_error.hpp"

namespace qconv {
namespace {

using test::throws;
using test::throws_leaving_untouched;

// A valid grouped convolution: input [2, 5, 6, 4] NHWC u8, weights [6, 3, 3, 2] OHWI s8,
// output [2, 5, 6, 6] NHWC s32 (int32 scheme).
ProblemDesc valid_conv() {
  ProblemDesc d;
  d.batch = 2;
  d.in_channels = 4;
  d.in_height = 5;
  d.in_width = 6;
  d.out_channels = 6;
  d.groups = 2;
  d.kernel_h = 3;
  d.kernel_w = 3;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 1;
  d.input_dtype = DType::u8;
  d.weight_dtype = DType::s8;
  d.output_dtype = DType::s32;
  d.input_layout = Layout::NHWC;
  d.weight_layout = Layout::OHWI;
  d.output_layout = Layout::NHWC;
  d.scheme.kind = SchemeKind::int32;
  return d;
}

// A valid transposed convolution: input [1, 2, 3, 3] NCHW, weights IOHW [2, 3, 2, 2], stride 2,
// output [1, 3, 6, 6] NCHW.
ProblemDesc valid_transposed() {
  ProblemDesc d = valid_conv();
  d.op = OpKind::conv2d_transpose;
  d.batch = 1;
  d.in_channels = 2;
  d.out_channels = 3;
  d.groups = 1;
  d.in_height = d.in_width = 3;
  d.kernel_h = d.kernel_w = 2;
  d.stride_h = d.stride_w = 2;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 0;
  d.input_layout = d.output_layout = Layout::NCHW;
  d.weight_layout = Layout::IOHW;
  return d;
}

// A valid requantizing convolution (PyTorch fbgemm scheme, u8 output, per-channel weights).
ProblemDesc valid_requantized() {
  ProblemDesc d = valid_conv();
  d.scheme.kind = SchemeKind::fbgemm;
  d.output_dtype = DType::u8;
  d.input_scale = 0.05;
  d.weight_scale = {0.01, 0.02, 0.03, 0.04, 0.05, 0.06};
  d.weight_zero_point = {0, 1, 2, 3, 4, 5};
  d.output_scale = 0.5;
  d.output_zero_point = 100;
  return d;
}

// Passes when building a Problem from `d` throws E naming every needle (see `throws`).
template <class E>
::testing::AssertionResult problem_throws(const ProblemDesc& d,
                                          std::initializer_list<std::string_view> needles) {
  return throws<E>([&] { (void)Problem(d); }, needles);
}

std::vector<std::uint8_t> buffer_for(const Shape& shape, DType dtype) {
  std::size_t n = element_size(dtype);
  for (std::int64_t d : shape) n *= static_cast<std::size_t>(d);
  return std::vector<std::uint8_t>(n, 1);
}

// Weights, input and output buffers for a problem, in the shapes written out by hand above.
struct Buffers {
  std::vector<std::uint8_t> weights, input, output;
  Shape weight_shape, input_shape, output_shape;
  DType weight_dtype, input_dtype, output_dtype;
  Layout weight_layout, input_layout, output_layout;

  ConstTensorView weight_view() const {
    return {weights.data(), weights.size(), weight_dtype, weight_layout, weight_shape};
  }
  ConstTensorView input_view() const {
    return {input.data(), input.size(), input_dtype, input_layout, input_shape};
  }
  TensorView output_view() {
    return {output.data(), output.size(), output_dtype, output_layout, output_shape};
  }
};

Buffers buffers_for(const ProblemDesc& d, Shape weight, Shape input, Shape output) {
  Buffers b;
  b.weight_shape = std::move(weight);
  b.input_shape = std::move(input);
  b.output_shape = std::move(output);
  b.weights = buffer_for(b.weight_shape, d.weight_dtype);
  b.input = buffer_for(b.input_shape, d.input_dtype);
  b.output = buffer_for(b.output_shape, d.output_dtype);
  b.weight_dtype = d.weight_dtype;
  b.input_dtype = d.input_dtype;
  b.output_dtype = d.output_dtype;
  b.weight_layout = d.weight_layout;
  b.input_layout = d.input_layout;
  b.output_layout = d.output_layout;
  return b;
}

Buffers conv_buffers(const ProblemDesc& d) {
  return buffers_for(d, {6, 3, 3, 2}, {2, 5, 6, 4}, {2, 5, 6, 6});
}

// ---- Problem: geometry --------------------------------------------------------------------

// A field of ProblemDesc and its name in messages.
struct SizeField {
  std::int64_t ProblemDesc::*member;
  const char* name;
};

TEST(ProblemErrors, SizesBelowOne) {
  for (const SizeField f : {SizeField{&ProblemDesc::batch, "batch"},
                            {&ProblemDesc::in_channels, "in_channels"},
                            {&ProblemDesc::in_height, "in_height"},
                            {&ProblemDesc::in_width, "in_width"},
                            {&ProblemDesc::out_channels, "out_channels"},
                            {&ProblemDesc::groups, "groups"},
                            {&ProblemDesc::kernel_h, "kernel_h"},
                            {&ProblemDesc::kernel_w, "kernel_w"}}) {
    for (std::int64_t value : {0, -3}) {
      ProblemDesc d = valid_conv();
      d.*f.member = value;
      const std::string named = std::string(f.name) + " = " + std::to_string(value);
      EXPECT_TRUE(problem_throws<InvalidArgument>(d, {named, "must be between 1"}));
    }
  }
}

TEST(ProblemErrors, SizesBeyondS32) {
  ProblemDesc d = valid_conv();
  d.in_height = std::int64_t{1} << 31;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"in_height = 2147483648"}));
}

TEST(ProblemErrors, StridesAndDilationsBelowOne) {
  for (const SizeField f : {SizeField{&ProblemDesc::stride_h, "stride_h"},
                            {&ProblemDesc::stride_w, "stride_w"},
                            {&ProblemDesc::dilation_h, "dilation_h"},
                            {&ProblemDesc::dilation_w, "dilation_w"}}) {
    for (std::int64_t value : {0, -1}) {
      for (const ProblemDesc& base : {valid_conv(), valid_transposed()}) {
        ProblemDesc d = base;
        d.*f.member = value;
        const std::string named = std::string(f.name) + " = " + std::to_string(value);
        EXPECT_TRUE(problem_throws<InvalidArgument>(d, {named}));
      }
    }
  }
}

TEST(ProblemErrors, NegativePadding) {
  for (const SizeField f : {SizeField{&ProblemDesc::pad_top, "pad_top"},
                            {&ProblemDesc::pad_bottom, "pad_bottom"},
                            {&ProblemDesc::pad_left, "pad_left"},
                            {&ProblemDesc::pad_right, "pad_right"}}) {
    ProblemDesc d = valid_conv();
    d.*f.member = -1;
    EXPECT_TRUE(
        problem_throws<InvalidArgument>(d, {std::string(f.name) + " = -1", "must be between 0"}));
  }
}

TEST(ProblemErrors, GroupsMustDivideBothChannelCounts) {
  ProblemDesc d = valid_conv();
  d.groups = 3;  // in_channels 4
  d.out_channels = 6;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"groups = 3", "must divide in_channels = 4"}));
  d = valid_conv();
  d.groups = 4;  // divides in_channels 4, not out_channels 6
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"groups = 4", "must divide out_channels = 6"}));
}

TEST(ProblemErrors, OutputSizeBelowOne) {
  ProblemDesc d = valid_conv();
  d.pad_top = d.pad_bottom = 0;
  d.kernel_h = 6;  // in_height 5
  EXPECT_TRUE(problem_throws<ShapeMismatch>(d, {"output_height = 0"}));
  d = valid_conv();
  d.dilation_w = 4;  // (3 - 1)·4 + 1 = 9 > 6 + 2
  EXPECT_TRUE(problem_throws<ShapeMismatch>(d, {"output_width = 0"}));
  d = valid_transposed();
  d.pad_top = 3;
  d.pad_bottom = 3;  // 2·(3 − 1) + 2 − 6 = 0
  EXPECT_TRUE(problem_throws<ShapeMismatch>(d, {"output_height = 0"}));
}

// A geometry whose output would not fit the s32 extents every tensor dimension is held in.
TEST(ProblemErrors, OutputSizeBeyondS32) {
  constexpr std::int64_t kMax = std::numeric_limits<std::int32_t>::max();
  ProblemDesc d = valid_transposed();
  d.in_height = d.stride_h = d.kernel_h = d.dilation_h = kMax;
  EXPECT_TRUE(
      problem_throws<ShapeMismatch>(d, {"output_height = 9223372023969873925", "must not exceed"}));
  d = valid_conv();
  d.in_width = d.pad_left = d.pad_right = kMax;
  EXPECT_TRUE(problem_throws<ShapeMismatch>(d, {"output_width = 6442450939", "must not exceed"}));
}

TEST(ProblemErrors, OutputPaddingOutOfRange) {
  ProblemDesc d = valid_transposed();  // stride 2, dilation 1: output padding 0 or 1
  d.output_pad_h = 2;
  EXPECT_TRUE(problem_throws<InvalidArgument>(
      d, {"output_padding_h = 2", "max(stride_h, dilation_h) = 2"}));
  d = valid_transposed();
  d.output_pad_w = -1;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_padding_w = -1"}));
  // The height's rule has its own lower bound too (a negative value would crop a row).
  d = valid_transposed();
  d.output_pad_h = -1;
  EXPECT_TRUE(problem_throws<InvalidArgument>(
      d, {"output_padding_h = -1: must satisfy 0 <= output_padding < max(stride_h, dilation_h)"}));
  d = valid_transposed();
  d.stride_w = 1;
  d.dilation_w = 3;  // dilation raises the limit to 3
  d.output_pad_w = 2;
  EXPECT_NO_THROW((void)Problem(d));
  d.output_pad_w = 3;
  EXPECT_TRUE(problem_throws<InvalidArgument>(
      d, {"output_padding_w = 3", "max(stride_w, dilation_w) = 3"}));
  d = valid_conv();
  d.output_pad_h = 1;
  EXPECT_TRUE(
      problem_throws<InvalidArgument>(d, {"output_padding_h = 1", "conv2d_transpose only"}));
}

TEST(ProblemErrors, UnknownOperation) {
  ProblemDesc d = valid_conv();
  d.op = static_cast<OpKind>(7);
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"op = 7"}));
}

// ---- Problem: types and layouts ------------------------------------------------------------

TEST(ProblemErrors, DTypesOutsideTheirRoles) {
  ProblemDesc d = valid_conv();
  d.input_dtype = DType::s32;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"input_dtype = s32"}));
  d = valid_conv();
  d.weight_dtype = DType::f32;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_dtype = f32"}));
  d = valid_conv();
  d.output_dtype = DType::u8;  // the int32 scheme outputs s32
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_dtype = u8", "int32 scheme"}));
  d = valid_requantized();
  d.output_dtype = DType::f32;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_dtype = f32"}));
}

TEST(ProblemErrors, LayoutsOutsideTheirRoles) {
  ProblemDesc d = valid_conv();
  d.input_layout = Layout::OIHW;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"input_layout = OIHW"}));
  d = valid_conv();
  d.output_layout = Layout::X;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_layout = X"}));
  d = valid_conv();
  d.weight_layout = Layout::NCHW;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_layout = NCHW"}));
  d = valid_conv();
  d.weight_layout = Layout::IOHW;  // transposed only
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_layout = IOHW"}));
  for (Layout conv_only : {Layout::OHWI, Layout::HWIO, Layout::HWOI}) {
    d = valid_transposed();
    d.weight_layout = conv_only;
    EXPECT_TRUE(problem_throws<InvalidArgument>(
        d, {"weight_layout = " + std::string(to_string(conv_only))}));
  }
}

// HWOI is [kh, kw, C, multiplier]: it cannot express a problem that is not depthwise.
TEST(ProblemErrors, DepthwiseLayoutForAGroupedProblem) {
  ProblemDesc d = valid_conv();  // groups 2, in_channels 4
  d.weight_layout = Layout::HWOI;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_layout = HWOI", "depthwise"}));
}

TEST(ParseErrors, UnknownNamesAreRefusedNamingTheArgument) {
  EXPECT_TRUE(throws<InvalidArgument>([] { parse_dtype("float16", "out_dtype"); },
                                      {"out_dtype = float16", "unknown dtype"}));
  EXPECT_TRUE(throws<InvalidArgument>([] { parse_layout("NWHC", "data_layout"); },
                                      {"data_layout = NWHC", "unknown layout"}));
  EXPECT_TRUE(
      throws<InvalidArgument>([] { parse_layout("nchw", "data_layout"); }, {"data_layout = nchw"}));
  EXPECT_TRUE(throws<InvalidArgument>([] { parse_scheme("tensorrt", "engine"); },
                                      {"engine = tensorrt", "unknown output scheme"}));
  EXPECT_TRUE(throws<InvalidArgument>([] { parse_rounding("DOWNWARD", "rounding"); },
                                      {"rounding = DOWNWARD"}));
}

// ---- Problem: quantization -----------------------------------------------------------------

TEST(ProblemErrors, ZeroPointsOutOfRange) {
  ProblemDesc d = valid_conv();  // u8 input
  for (std::int32_t z : {-1, 256}) {
    d.input_zero_point = z;
    EXPECT_TRUE(problem_throws<InvalidArgument>(
        d, {"input_zero_point = " + std::to_string(z), "[0, 255]"}));
  }
  d = valid_conv();
  d.input_dtype = DType::s8;
  for (std::int32_t z : {-129, 128}) {
    d.input_zero_point = z;
    EXPECT_TRUE(problem_throws<InvalidArgument>(
        d, {"input_zero_point = " + std::to_string(z), "[-128, 127]"}));
  }
  d = valid_conv();  // s8 weights
  d.weight_zero_point = {128};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_zero_point[0] = 128"}));
  d = valid_conv();
  d.weight_dtype = DType::u8;
  d.weight_zero_point = {0, 255, 3, -1, 4, 5};  // per channel: entry 3 is out of range
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_zero_point[3] = -1"}));
  d = valid_requantized();  // u8 output
  d.output_zero_point = 256;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_zero_point = 256"}));
  d.output_dtype = DType::s8;
  d.output_zero_point = -129;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_zero_point = -129"}));
  d = valid_conv();  // the int32 scheme's output zero point is 0
  d.output_zero_point = 5;
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_zero_point = 5"}));
}

// Values that are not a usable scale: ≤ 0, NaN, ±∞, subnormal in binary32 (what every framework
// stores scales in) or in binary64, and one beyond binary32's range (∞ once stored as float).
const std::vector<double>& bad_scales() {
  static const std::vector<double> values{0.0,
                                          -0.0,
                                          -1.0,
                                          std::numeric_limits<double>::quiet_NaN(),
                                          std::numeric_limits<double>::infinity(),
                                          -std::numeric_limits<double>::infinity(),
                                          1e-40,
                                          std::numeric_limits<double>::denorm_min(),
                                          1e39};
  return values;
}

TEST(ProblemErrors, BadScales) {
  const std::string rule = "a scale must be a positive, finite, normal";
  for (double bad : bad_scales()) {
    SCOPED_TRACE(bad);
    ProblemDesc d = valid_requantized();
    d.input_scale = bad;
    EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"input_scale = ", rule}));
    d = valid_requantized();
    d.weight_scale = {bad};
    EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_scale[0] = ", rule}));
    d = valid_requantized();
    d.weight_scale[4] = bad;  // one per-channel entry
    EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_scale[4] = ", rule}));
    d = valid_requantized();
    d.output_scale = bad;
    EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"output_scale = ", rule}));
    // Scales are metadata for the int32 scheme, but they are still checked.
    d = valid_conv();
    d.input_scale = bad;
    EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"input_scale = ", rule}));
  }
}

TEST(ProblemErrors, PerChannelVectorsOfTheWrongLength) {
  ProblemDesc d = valid_requantized();  // out_channels 6
  d.weight_scale = {0.1, 0.2};
  EXPECT_TRUE(
      problem_throws<InvalidArgument>(d, {"weight_scale.size = 2", "1 value or out_channels = 6"}));
  d = valid_requantized();
  d.weight_zero_point = {0, 0, 0, 0, 0, 0, 0};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_zero_point.size = 7"}));
  d = valid_requantized();
  d.weight_scale.clear();
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_scale.size = 0"}));
  d = valid_requantized();
  d.weight_zero_point.clear();
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"weight_zero_point.size = 0"}));
  d = valid_requantized();
  d.scheme.kind = SchemeKind::tflite;
  d.scheme.multiplier_q31 = {1 << 30, 1 << 30};
  d.scheme.shift = {-3, -3};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"scheme.multiplier_q31.size = 2"}));
  d.scheme.shift = {-3};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"scheme.shift.size = 1"}));
}

TEST(ProblemErrors, SchemeAndActivationParameters) {
  ProblemDesc d = valid_requantized();
  d.scheme.multiplier_q31 = {1 << 30};  // given multipliers belong to the tflite schemes
  d.scheme.shift = {0};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"scheme.multiplier_q31.size = 1"}));
  d.scheme.kind = SchemeKind::tflite_single;
  d.scheme.shift = {31};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"scheme.shift[0] = 31"}));
  d.scheme.shift = {0};
  d.scheme.multiplier_q31 = {-1};
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"scheme.multiplier_q31[0] = -1"}));

  d = valid_requantized();
  d.activation = Activation::clamp(6.0, 0.0);
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"activation.min = 6"}));
  d.activation = Activation::clamp(std::nan(""), 1.0);
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"activation.min = nan"}));
  // u8 output, output_scale 0.5, zero point 100: [-100, -60] quantizes below 0, an empty range.
  d.activation = Activation::clamp(-100.0, -60.0);
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"activation = clamp(-100, -60)"}));
  d = valid_conv();
  d.activation = Activation::clamp(0.0, 6.0);
  EXPECT_TRUE(problem_throws<InvalidArgument>(d, {"activation = clamp", "int32"}));
}

// ---- Tensor views --------------------------------------------------------------------------

TEST(TensorViewErrors, BufferTooSmallForItsShape) {
  std::vector<std::uint8_t> bytes(11);
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        ConstTensorView(bytes.data(), bytes.size(), DType::u8, Layout::NHWC, {1, 2, 2, 3});
      },
      {"tensor.capacity_bytes = 11", "needs 12 bytes"}));
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        TensorView(bytes.data(), bytes.size(), DType::s32, Layout::NCHW, {1, 1, 1, 3});
      },
      {"tensor.capacity_bytes = 11", "needs 12 bytes"}));
  std::vector<std::int32_t> bias(5);
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] { ConstTensorView(std::span<const std::int32_t>(bias), DType::s32, Layout::X, {6}); },
      {"tensor.capacity_bytes = 20", "needs 24 bytes"}));
}

TEST(TensorViewErrors, NullBufferWrongRankOrEmptyDimension) {
  std::vector<std::uint8_t> bytes(64);
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        ConstTensorView(nullptr, 64, DType::u8, Layout::NHWC, {1, 1, 1, 1});
      },
      {"tensor.data = null"}));
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        ConstTensorView(bytes.data(), bytes.size(), DType::u8, Layout::NHWC, {4, 4, 4});
      },
      {"tensor.shape = [4, 4, 4]", "needs 4 dimensions"}));
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        ConstTensorView(bytes.data(), bytes.size(), DType::u8, Layout::NHWC, {1, 0, 2, 2});
      },
      {"tensor.shape = [1, 0, 2, 2]", "at least 1"}));
}

// ---- Plan::prepare -------------------------------------------------------------------------

TEST(PrepareErrors, WeightShapeDisagreesWithChannelsGroupsOrKernel) {
  const Problem p(valid_conv());  // OHWI [6, 3, 3, 2]
  const auto refused = [&](Shape shape) {
    const auto bytes = buffer_for(shape, DType::s8);
    return throws<ShapeMismatch>(
        [&] {
          Plan::prepare(p, {bytes.data(), bytes.size(), DType::s8, Layout::OHWI, shape});
        },
        {"weight.shape = " + to_string(shape), "the problem needs [6, 3, 3, 2]"});
  };
  EXPECT_TRUE(refused({4, 3, 3, 2}));  // out_channels
  EXPECT_TRUE(refused({6, 3, 3, 4}));  // all in_channels, as if groups were 1
  EXPECT_TRUE(refused({6, 3, 3, 1}));  // in_channels / 4, as if groups were 4
  EXPECT_TRUE(refused({6, 3, 2, 2}));  // kernel_w
  EXPECT_TRUE(refused({6, 2, 3, 2}));  // kernel_h
  EXPECT_TRUE(refused({2, 3, 3, 6}));  // the dimensions in another order

  const Problem t(valid_transposed());  // IOHW [2, 3, 2, 2]
  const Shape oihw{3, 2, 2, 2};
  const auto bytes = buffer_for(oihw, DType::s8);
  EXPECT_TRUE(throws<ShapeMismatch>(
      [&] {
        Plan::prepare(t, {bytes.data(), bytes.size(), DType::s8, Layout::IOHW, oihw});
      },
      {"weight.shape = [3, 2, 2, 2]", "the problem needs [2, 3, 2, 2]"}));
}

TEST(PrepareErrors, WeightDTypeOrLayoutDisagrees) {
  const ProblemDesc d = valid_conv();
  Buffers b = conv_buffers(d);
  b.weight_dtype = DType::u8;
  EXPECT_TRUE(throws<ShapeMismatch>([&] { Plan::prepare(Problem(d), b.weight_view()); },
                                    {"weight.dtype = u8", "needs s8"}));
  b = conv_buffers(d);
  b.weight_layout = Layout::OIHW;
  EXPECT_TRUE(throws<ShapeMismatch>([&] { Plan::prepare(Problem(d), b.weight_view()); },
                                    {"weight.layout = OIHW", "needs OHWI"}));
  EXPECT_TRUE(throws<ShapeMismatch>([&] { Plan::prepare(Problem(d), ConstTensorView{}); },
                                    {"weight = empty view"}));
}

TEST(PrepareErrors, AccumulatorOverflowRisk) {
  ProblemDesc d = valid_conv();
  d.in_channels = d.groups = 1;
  d.out_channels = 1;
  d.kernel_h = d.kernel_w = 1;
  d.pad_top = d.pad_bottom = d.pad_left = d.pad_right = 0;
  d.in_channels = 33026;  // 33026 · 255 · 255 > 2^31 − 1 with weights at 255 from zw = 0
  d.weight_dtype = DType::u8;
  const Shape shape{1, 1, 1, 33026};
  const std::vector<std::uint8_t> weights(33026, 255);
  EXPECT_TRUE(throws<OverflowRisk>(
      [&] {
        Plan::prepare(Problem(d), {weights.data(), weights.size(), DType::u8, Layout::OHWI, shape});
      },
      {"accumulator = K = 33026", "2^31 - 1"}));
}

TEST(PrepareErrors, UnknownEngine) {
  const ProblemDesc d = valid_conv();
  const Buffers b = conv_buffers(d);
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] { Plan::prepare(Problem(d), b.weight_view(), PrepareOptions{"nonexistent"}); },
      {"engine = nonexistent", "unknown engine"}));
}

// ---- Plan::execute: every refusal leaves the output as it was --------------------------------

// A prepared plan with its buffers; `refused` runs execute on the output buffer and checks the
// exception and that no output byte changed.
struct Prepared {
  explicit Prepared(const ProblemDesc& d) : buffers(conv_buffers(d)) {
    plan.emplace(Plan::prepare(Problem(d), buffers.weight_view()));
  }
  template <class E>
  ::testing::AssertionResult refused(ConstTensorView input, TensorView output, BiasView bias,
                                     RunOptions options,
                                     std::initializer_list<std::string_view> needles) {
    return throws_leaving_untouched<E>(
        buffers.output, [&] { plan->execute(input, output, bias, options); }, needles);
  }

  Buffers buffers;
  std::optional<Plan> plan;
};

TEST(ExecuteErrors, InputOfTheWrongDTypeLayoutOrShape) {
  Prepared run(valid_conv());
  Buffers& b = run.buffers;
  const TensorView out = b.output_view();
  const auto input = [&](DType dtype, Layout layout, Shape shape) {
    return ConstTensorView(b.input.data(), b.input.size(), dtype, layout, std::move(shape));
  };
  EXPECT_TRUE(run.refused<ShapeMismatch>(input(DType::s8, Layout::NHWC, {2, 5, 6, 4}), out, {}, {},
                                         {"input.dtype = s8", "needs u8"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(input(DType::u8, Layout::NCHW, {2, 4, 5, 6}), out, {}, {},
                                         {"input.layout = NCHW", "needs NHWC"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(input(DType::u8, Layout::NHWC, {2, 6, 5, 4}), out, {}, {},
                                         {"input.shape = [2, 6, 5, 4]", "needs [2, 5, 6, 4]"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(input(DType::u8, Layout::NHWC, {2, 5, 6, 3}), out, {}, {},
                                         {"input.shape = [2, 5, 6, 3]"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(input(DType::u8, Layout::X, {240}), out, {}, {},
                                         {"input.shape = [240]", "4 dimensions"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(ConstTensorView{}, out, {}, {}, {"input.shape"}));
}

TEST(ExecuteErrors, OutputOfTheWrongDTypeLayoutOrShape) {
  Prepared run(valid_conv());
  Buffers& b = run.buffers;
  const ConstTensorView in = b.input_view();
  const auto output = [&](DType dtype, Layout layout, Shape shape) {
    return TensorView(b.output.data(), b.output.size(), dtype, layout, std::move(shape));
  };
  EXPECT_TRUE(run.refused<ShapeMismatch>(in, output(DType::u8, Layout::NHWC, {2, 5, 6, 6}), {}, {},
                                         {"output.dtype = u8", "needs s32"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(in, output(DType::s32, Layout::NCHW, {2, 6, 5, 6}), {}, {},
                                         {"output.layout = NCHW", "needs NHWC"}));
  // The batch comes from the input; an output for another batch is refused.
  EXPECT_TRUE(run.refused<ShapeMismatch>(in, output(DType::s32, Layout::NHWC, {1, 5, 6, 6}), {}, {},
                                         {"output.shape = [1, 5, 6, 6]", "[2, 5, 6, 6]"}));
  EXPECT_TRUE(run.refused<ShapeMismatch>(in, output(DType::s32, Layout::NHWC, {2, 5, 5, 6}), {}, {},
                                         {"output.shape = [2, 5, 5, 6]"}));
  EXPECT_TRUE(
      throws<ShapeMismatch>([&] { run.plan->execute(in, TensorView{}); }, {"output = empty view"}));
}

TEST(ExecuteErrors, BiasMissingUnexpectedOfTheWrongKindOrLength) {
  ProblemDesc d = valid_conv();
  d.has_bias = true;
  Prepared with_bias(d);
  const ConstTensorView in = with_bias.buffers.input_view();
  const TensorView out = with_bias.buffers.output_view();
  const std::vector<std::int32_t> s32(6, 1), s32_short(5, 1);
  const std::vector<float> f32(6, 1.0f);
  EXPECT_TRUE(with_bias.refused<InvalidArgument>(in, out, {}, {}, {"bias = none", "has_bias"}));
  EXPECT_TRUE(with_bias.refused<ShapeMismatch>(in, out, std::span<const float>(f32), {},
                                               {"bias.dtype = f32", "int32 takes a s32 bias"}));
  EXPECT_TRUE(with_bias.refused<ShapeMismatch>(in, out, std::span<const std::int32_t>(s32_short),
                                               {}, {"bias.size = 5", "out_channels = 6"}));

  Prepared without_bias(valid_conv());
  EXPECT_TRUE(without_bias.refused<PreparedMismatch>(
      without_bias.buffers.input_view(), without_bias.buffers.output_view(),
      std::span<const std::int32_t>(s32), {}, {"has_bias: prepared for false"}));

  d = valid_requantized();
  d.has_bias = true;
  Prepared float_bias(d);
  EXPECT_TRUE(float_bias.refused<ShapeMismatch>(
      float_bias.buffers.input_view(), float_bias.buffers.output_view(),
      std::span<const std::int32_t>(s32), {}, {"bias.dtype = s32", "fbgemm takes a float bias"}));
}

TEST(ExecuteErrors, OutputOverlappingTheInput) {
  Prepared run(valid_conv());
  // One buffer holding the input [2, 5, 6, 4] u8 (240 bytes), and an output [2, 5, 6, 6] s32
  // (1440 bytes) that starts inside it, then one that ends inside it.
  std::vector<std::uint8_t> shared(4000, 7);
  const ConstTensorView input(shared.data() + 1000, 240, DType::u8, Layout::NHWC, {2, 5, 6, 4});
  const TensorView starts_inside(shared.data() + 1200, 1440, DType::s32, Layout::NHWC,
                                 {2, 5, 6, 6});
  const auto before = shared;
  EXPECT_TRUE(throws<InvalidArgument>([&] { run.plan->execute(input, starts_inside); },
                                      {"output.data", "must not overlap the input"}));
  EXPECT_EQ(shared, before);
  std::vector<std::uint8_t> wide(4000, 7);
  const ConstTensorView later_input(wide.data() + 1500, 240, DType::u8, Layout::NHWC, {2, 5, 6, 4});
  const TensorView ends_inside(wide.data() + 100, 1440, DType::s32, Layout::NHWC, {2, 5, 6, 6});
  const auto wide_before = wide;
  EXPECT_TRUE(throws<InvalidArgument>([&] { run.plan->execute(later_input, ends_inside); },
                                      {"output.data"}));
  EXPECT_EQ(wide, wide_before);
}

TEST(ExecuteErrors, PerCallOptionsOutOfRange) {
  Prepared run(valid_conv());  // u8 input
  const ConstTensorView in = run.buffers.input_view();
  const TensorView out = run.buffers.output_view();
  RunOptions options;
  options.input_zero_point = 256;
  EXPECT_TRUE(run.refused<InvalidArgument>(in, out, {}, options,
                                           {"input_zero_point = 256", "range of u8"}));
  options.input_zero_point = -1;
  EXPECT_TRUE(run.refused<InvalidArgument>(in, out, {}, options, {"input_zero_point = -1"}));
  options = {};
  options.threads = -1;
  EXPECT_TRUE(run.refused<InvalidArgument>(in, out, {}, options, {"threads = -1"}));
}

// ---- Prepared weights used with another problem ----------------------------------------------

// One field of the problem changed; the refusal must name it.
struct FieldChange {
  const char* field;
  std::function<void(ProblemDesc&)> change;
};

void expect_every_change_refused(const ProblemDesc& base, const std::vector<FieldChange>& changes) {
  const Problem problem(base);
  std::vector<std::uint8_t> weights(4096, 1);
  const Plan plan = Plan::prepare(problem, {weights.data(), weights.size(), base.weight_dtype,
                                            base.weight_layout, problem.weight_shape()});
  EXPECT_NO_THROW(plan.require_compatible(problem));
  for (const FieldChange& c : changes) {
    ProblemDesc d = base;
    c.change(d);
    const Problem call(d);  // itself valid
    EXPECT_TRUE(throws<PreparedMismatch>([&] { plan.require_compatible(call); },
                                         {std::string(c.field) + ": prepared for ", ", given "}))
        << c.field;
  }
}

TEST(PreparedMismatchErrors, EveryGeometryAndTypeFieldIsCompared) {
  expect_every_change_refused(
      valid_conv(), {
                        {"in_channels", [](ProblemDesc& d) { d.in_channels = 6; }},
                        {"in_height", [](ProblemDesc& d) { d.in_height = 7; }},
                        {"in_width", [](ProblemDesc& d) { d.in_width = 7; }},
                        {"out_channels", [](ProblemDesc& d) { d.out_channels = 8; }},
                        {"groups", [](ProblemDesc& d) { d.groups = 1; }},
                        {"kernel_h", [](ProblemDesc& d) { d.kernel_h = 1; }},
                        {"kernel_w", [](ProblemDesc& d) { d.kernel_w = 1; }},
                        {"stride_h", [](ProblemDesc& d) { d.stride_h = 2; }},
                        {"stride_w", [](ProblemDesc& d) { d.stride_w = 2; }},
                        {"dilation_h", [](ProblemDesc& d) { d.dilation_h = 2; }},
                        {"dilation_w", [](ProblemDesc& d) { d.dilation_w = 2; }},
                        {"pad_top", [](ProblemDesc& d) { d.pad_top = 0; }},
                        {"pad_bottom", [](ProblemDesc& d) { d.pad_bottom = 2; }},
                        {"pad_left", [](ProblemDesc& d) { d.pad_left = 0; }},
                        {"pad_right", [](ProblemDesc& d) { d.pad_right = 2; }},
                        {"input_dtype", [](ProblemDesc& d) { d.input_dtype = DType::s8; }},
                        {"weight_dtype", [](ProblemDesc& d) { d.weight_dtype = DType::u8; }},
                        {"input_layout", [](ProblemDesc& d) { d.input_layout = Layout::NCHW; }},
                        {"weight_layout", [](ProblemDesc& d) { d.weight_layout = Layout::OIHW; }},
                        {"output_layout", [](ProblemDesc& d) { d.output_layout = Layout::NCHW; }},
                        {"input_scale", [](ProblemDesc& d) { d.input_scale = 0.5; }},
                        {"weight_scale", [](ProblemDesc& d) { d.weight_scale = {0.5}; }},
                        {"weight_zero_point", [](ProblemDesc& d) { d.weight_zero_point = {1}; }},
                        {"output_scale", [](ProblemDesc& d) { d.output_scale = 0.5; }},
                        {"activation", [](ProblemDesc& d) { d.activation = Activation::relu(); }},
                        {"has_bias", [](ProblemDesc& d) { d.has_bias = true; }},
                        {"allow_wraparound", [](ProblemDesc& d) { d.allow_wraparound = true; }},
                    });
}

TEST(PreparedMismatchErrors, TransposedFieldsAreCompared) {
  expect_every_change_refused(valid_transposed(),
                              {
                                  {"op",
                                   [](ProblemDesc& d) {
                                     d.op = OpKind::conv2d;
                                     d.weight_layout = Layout::OIHW;
                                   }},
                                  {"output_padding_h", [](ProblemDesc& d) { d.output_pad_h = 1; }},
                                  {"output_padding_w", [](ProblemDesc& d) { d.output_pad_w = 1; }},
                              });
}

TEST(PreparedMismatchErrors, OutputSchemeFieldsAreCompared) {
  ProblemDesc base = valid_requantized();
  base.activation = Activation::clamp(-1.0, 6.0);
  expect_every_change_refused(
      base, {
                {"output_dtype", [](ProblemDesc& d) { d.output_dtype = DType::s8; }},
                {"output_zero_point", [](ProblemDesc& d) { d.output_zero_point = 101; }},
                {"scheme", [](ProblemDesc& d) { d.scheme.kind = SchemeKind::qnnpack; }},
                {"activation.min", [](ProblemDesc& d) { d.activation.min = -2.0; }},
                {"activation.max", [](ProblemDesc& d) { d.activation.max = 5.0; }},
                {"weight_scale", [](ProblemDesc& d) { d.weight_scale[5] = 0.07; }},
                {"weight_zero_point", [](ProblemDesc& d) { d.weight_zero_point[5] = 6; }},
            });
  base.scheme.kind = SchemeKind::tvm;
  base.scheme.rounding = Rounding::upward;
  expect_every_change_refused(
      base, {{"rounding", [](ProblemDesc& d) { d.scheme.rounding = Rounding::tonearest; }}});
  base.scheme.kind = SchemeKind::tflite;
  base.scheme.multiplier_q31 = {1 << 30};
  base.scheme.shift = {-3};
  expect_every_change_refused(
      base,
      {
          {"scheme.multiplier_q31", [](ProblemDesc& d) { d.scheme.multiplier_q31 = {1 << 29}; }},
          {"scheme.shift", [](ProblemDesc& d) { d.scheme.shift = {-4}; }},
      });
}

// What a plan allows to change per call is not a mismatch: the batch and the input zero point.
TEST(PreparedMismatchErrors, BatchAndInputZeroPointMayChange) {
  const Problem problem(valid_conv());
  const Buffers b = conv_buffers(valid_conv());
  const Plan plan = Plan::prepare(problem, b.weight_view());
  ProblemDesc d = valid_conv();
  d.batch = 7;
  d.input_zero_point = 200;
  EXPECT_NO_THROW(plan.require_compatible(Problem(d)));
}

TEST(PreparedMismatchErrors, MessageNamesBothValues) {
  const Problem problem(valid_conv());
  const Buffers b = conv_buffers(valid_conv());
  const Plan plan = Plan::prepare(problem, b.weight_view());
  ProblemDesc d = valid_conv();
  d.stride_w = 3;
  EXPECT_TRUE(throws<PreparedMismatch>([&] { plan.require_compatible(Problem(d)); },
                                       {"stride_w: prepared for 1, given 3"}));
}

}  // namespace
}  // namespace qconv
