// SPDX-License-Identifier: Apache-2.0
// The preparation (ttnn) face: hand-worked small problems, ttnn's padding order, and every way a
// prepared object can be used with a call it was not prepared for. Neither entry point writes
// into a caller's buffer (conv2d returns a new tensor), so "nothing written on error" here means
// that a refused call leaves the prepared objects as they were: each refusal below is followed by
// a good call with the same objects.
#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "face_test_support.hpp"
#include "qconv/faces/ttnn.hpp"

namespace {

using namespace qconv::test_support;
namespace ttnn = qconv::ttnn;
using qconv::ConstTensorView;

// Every argument of the three entry points, with the values of a call in ttnn's argument order.
struct Call {
  std::string input_layout = "NHWC";
  std::string weights_format = "OIHW";
  std::int64_t in_channels = 1;
  std::int64_t out_channels = 1;
  std::int64_t batch_size = 1;
  std::int64_t input_height = 2;
  std::int64_t input_width = 2;
  std::array<std::int64_t, 2> kernel_size{1, 1};
  std::array<std::int64_t, 2> stride{1, 1};
  std::vector<std::int64_t> padding{0, 0};
  std::array<std::int64_t, 2> dilation{1, 1};
  std::int64_t groups = 1;
  bool has_bias = false;
  ttnn::Conv2dConfig conv_config;
  ttnn::ComputeConfig compute_config;

  ttnn::PreparedWeights prepare(const ttnn::QuantizedWeights& weights) const {
    return ttnn::prepare_conv_weights(weights, input_layout, weights_format, in_channels,
                                      out_channels, batch_size, input_height, input_width,
                                      kernel_size, stride, padding, dilation, has_bias, groups,
                                      conv_config, compute_config);
  }
  ttnn::PreparedBias prepare_bias(ConstTensorView bias) const {
    return ttnn::prepare_conv_bias(bias, input_layout, in_channels, out_channels, batch_size,
                                   input_height, input_width, kernel_size, stride, padding,
                                   dilation, groups, conv_config, compute_config);
  }
  ttnn::Conv2dResult run(ConstTensorView input, const ttnn::PreparedWeights& weights,
                         const ttnn::PreparedBias* bias = nullptr, bool return_output_dim = false,
                         bool return_weights_and_bias = false) const {
    return ttnn::conv2d(input, weights, in_channels, out_channels, batch_size, input_height,
                        input_width, kernel_size, stride, padding, dilation, groups, bias,
                        conv_config, compute_config, return_output_dim, return_weights_and_bias);
  }
  ttnn::Conv2dResult run(ConstTensorView input, const ttnn::QuantizedWeights& weights,
                         std::optional<ConstTensorView> bias, bool return_output_dim = false,
                         bool return_weights_and_bias = false) const {
    return ttnn::conv2d(input, weights, weights_format, in_channels, out_channels, batch_size,
                        input_height, input_width, kernel_size, stride, padding, dilation, groups,
                        bias, conv_config, compute_config, return_output_dim,
                        return_weights_and_bias);
  }
};

// One channel of 2x2 values {6, 7, 8, 9} with input zero point 5 (so x − zx = {1, 2, 3, 4}), a
// 1x1 weight of 2, the int32 scheme: the output is {2, 4, 6, 8} where the input is, and 0 in the
// padding (padding stands for the real value 0, i.e. x = zx).
struct PaddingCase {
  std::vector<std::uint8_t> x{6, 7, 8, 9};
  std::vector<std::int8_t> w{2};
  ConstTensorView input = view(x, Layout::NHWC, {1, 2, 2, 1});
  ttnn::QuantizedWeights weights{view(w, Layout::OIHW, {1, 1, 1, 1}), {1.0}, {0}};
  Call call;

  PaddingCase() {
    call.compute_config.scheme = "int32";
    call.compute_config.input_zero_point = 5;
    call.conv_config.dtype = "int32";
  }
};

TEST(TtnnFace, PaddingIsTopBottomLeftRight) {
  PaddingCase c;
  c.call.padding = {1, 0, 2, 0};  // top 1, bottom 0, left 2, right 0: 3x4 output
  // Read as TVM's (top, left, bottom, right) it would be a 5x2 output.
  const auto result = c.call.run(c.input, c.call.prepare(c.weights), nullptr, true);
  EXPECT_EQ(result.output.shape(), (Shape{1, 1, 12, 1}));  // ttnn's [1, 1, N·H·W, C]
  EXPECT_EQ(result.output_dim, (std::array<std::int64_t, 2>{3, 4}));
  EXPECT_EQ(values_of<std::int32_t>(result.output), (std::vector<int>{0, 0, 0, 0,  //
                                                                      0, 0, 2, 4,  //
                                                                      0, 0, 6, 8}));
}

TEST(TtnnFace, TwoPaddingValuesArePadHPadW) {
  PaddingCase c;
  c.call.padding = {1, 2};  // rows 1 above and below, columns 2 left and right: 4x6
  const auto result = c.call.run(c.input, c.call.prepare(c.weights));
  EXPECT_EQ(result.output.shape(), (Shape{1, 1, 24, 1}));
  EXPECT_EQ(values_of<std::int32_t>(result.output), (std::vector<int>{0, 0, 0, 0, 0, 0,  //
                                                                      0, 0, 2, 4, 0, 0,  //
                                                                      0, 0, 6, 8, 0, 0,  //
                                                                      0, 0, 0, 0, 0, 0}));
}

TEST(TtnnFace, EquivalentPaddingSpellingsAreTheSameProblem) {
  PaddingCase c;
  c.call.padding = {1, 1, 2, 2};
  const auto weights = c.call.prepare(c.weights);
  c.call.padding = {1, 2};
  EXPECT_EQ(c.call.run(c.input, weights).output.shape(), (Shape{1, 1, 24, 1}));
}

// Two input channels, 2x2, one output, 2x2 kernel: one output pixel.
// Input NHWC {1 2 | 3 4 | 5 6 | 7 8}: channel 0 = {1 3 / 5 7}, channel 1 = {2 4 / 6 8}.
// Weight OIHW: channel 0 = {1 0 / 0 1}, channel 1 = {0 2 / 0 0}.
// acc = 1·1 + 1·7 + 2·4 = 16. (Reading the input as NCHW would give 17, reading the weight as
// OHWI 17: the layouts matter.)
struct LayoutCase {
  std::vector<std::uint8_t> x{1, 2, 3, 4, 5, 6, 7, 8};
  std::vector<std::int8_t> w{1, 0, 0, 1, 0, 2, 0, 0};
  ConstTensorView input = view(x, Layout::NHWC, {1, 2, 2, 2});
  ttnn::QuantizedWeights weights{view(w, Layout::OIHW, {1, 2, 2, 2}), {1.0}, {0}};
  std::vector<std::int32_t> b{5};
  ConstTensorView s32_bias = view(b, Layout::X, {1});  // + 5, for the tests that add a bias
  Call call;

  LayoutCase() {
    call.in_channels = 2;
    call.kernel_size = {2, 2};
    call.compute_config.scheme = "onnx";  // scales 1: the output is acc (+ bias) + zy, rounded
    call.conv_config.dtype = "uint8";
  }
};

TEST(TtnnFace, NhwcInputOihwWeights) {
  LayoutCase c;
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, c.call.prepare(c.weights)).output),
            (std::vector<int>{16}));
}

TEST(TtnnFace, NchwInputOhwiWeights) {
  LayoutCase c;
  const std::vector<std::uint8_t> nchw{1, 3, 5, 7, 2, 4, 6, 8};
  const std::vector<std::int8_t> ohwi{1, 0, 0, 2, 0, 0, 1, 0};  // (h, w, c) order of the same
  c.call.input_layout = "NCHW";
  c.call.weights_format = "OHWI";
  c.call.conv_config.output_layout = "NCHW";
  const ttnn::QuantizedWeights weights{view(ohwi, Layout::OHWI, {1, 2, 2, 2}), {1.0}, {0}};
  const auto result = c.call.run(view(nchw, Layout::NCHW, {1, 2, 2, 2}), c.call.prepare(weights));
  EXPECT_EQ(result.output.layout(), Layout::NCHW);
  EXPECT_EQ(result.output.shape(), (Shape{1, 1, 1, 1}));  // NCHW keeps [N, C, H, W]
  EXPECT_EQ(values_of<std::uint8_t>(result.output), (std::vector<int>{16}));
}

// ttnn's shapes: an NHWC output is [1, 1, N·H·W, C], and that flattened form is taken as the next
// call's input; NCHW (qconv's own option) stays [N, C, H, W].
TEST(TtnnFace, FlattenedOutputFeedsTheNextCall) {
  PaddingCase c;
  c.call.padding = {1, 0, 2, 0};
  c.call.batch_size = 2;
  const std::vector<std::uint8_t> two{6, 7, 8, 9, 9, 8, 7, 6};
  const auto weights = c.call.prepare(c.weights);
  const auto nhwc = c.call.run(view(two, Layout::NHWC, {2, 2, 2, 1}), weights);
  EXPECT_EQ(nhwc.output.shape(), (Shape{1, 1, 2 * 3 * 4, 1}));
  const auto flat = c.call.run(view(two, Layout::NHWC, {1, 1, 8, 1}), weights);
  EXPECT_EQ(flat.output.shape(), nhwc.output.shape());
  EXPECT_EQ(values_of<std::int32_t>(flat.output), values_of<std::int32_t>(nhwc.output));
  EXPECT_EQ(values_of<std::int32_t>(nhwc.output),
            (std::vector<int>{0, 0, 0, 0, 0, 0, 2, 4, 0, 0, 6, 8,  //
                              0, 0, 0, 0, 0, 0, 8, 6, 0, 0, 4, 2}));
  // A flattened input of another pixel count is no flattened input: refused, read as it is.
  EXPECT_TRUE(throws<qconv::ShapeMismatch>(
      [&] {
        c.call.run(view(two, Layout::NHWC, {1, 1, 7, 1}), weights);
      },
      {"batch_size = 2", "batch is 1"}));
  // The raw-weights call too.
  const auto raw = c.call.run(view(two, Layout::NHWC, {1, 1, 8, 1}), c.weights, std::nullopt);
  EXPECT_EQ(values_of<std::int32_t>(raw.output), values_of<std::int32_t>(nhwc.output));
}

TEST(TtnnFace, BatchSizeMayChange) {
  LayoutCase c;
  const auto weights = c.call.prepare(c.weights);
  // A second image of ones: 1·1 + 1·1 + 2·1 = 4.
  const std::vector<std::uint8_t> two{1, 2, 3, 4, 5, 6, 7, 8, 1, 1, 1, 1, 1, 1, 1, 1};
  c.call.batch_size = 2;
  const auto result = c.call.run(view(two, Layout::NHWC, {2, 2, 2, 2}), weights);
  EXPECT_EQ(values_of<std::uint8_t>(result.output), (std::vector<int>{16, 4}));
}

TEST(TtnnFace, BatchSizeMustMatchTheInput) {
  LayoutCase c;
  const auto weights = c.call.prepare(c.weights);
  c.call.batch_size = 3;
  EXPECT_TRUE(throws<qconv::ShapeMismatch>([&] { c.call.run(c.input, weights); },
                                           {"batch_size = 3", "batch is 1"}));
}

TEST(TtnnFace, InputZeroPointPerCall) {
  LayoutCase c;
  const auto weights = c.call.prepare(c.weights);  // prepared with input zero point 0
  // zx = 1: (1 − 1) + (7 − 1) + 2·(4 − 1) = 12.
  c.call.conv_config.input_zero_point = 1;
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, weights).output), (std::vector<int>{12}));
  // The call's own compute_config.input_zero_point is honoured too ...
  c.call.conv_config.input_zero_point.reset();
  c.call.compute_config.input_zero_point = 1;
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, weights).output), (std::vector<int>{12}));
  // ... and the override wins over it: zx = 2: (1 − 2) + (7 − 2) + 2·(4 − 2) = 8.
  c.call.conv_config.input_zero_point = 2;
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, weights).output), (std::vector<int>{8}));
  // Out of the input dtype's range.
  c.call.conv_config.input_zero_point = 256;
  EXPECT_TRUE(throws<qconv::InvalidArgument>([&] { c.call.run(c.input, weights); },
                                             {"input_zero_point = 256"}));
}

TEST(TtnnFace, S32BiasForS32Schemes) {
  LayoutCase c;
  c.call.has_bias = true;
  const auto bias = c.call.prepare_bias(c.s32_bias);
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, c.call.prepare(c.weights), &bias).output),
            (std::vector<int>{21}));  // 16 + 5
}

TEST(TtnnFace, FloatBiasForPyTorchSchemes) {
  LayoutCase c;
  c.call.has_bias = true;
  c.call.compute_config.scheme = "fbgemm";
  c.call.compute_config.output_scale = 2.0;
  c.call.compute_config.output_zero_point = 1;
  const std::vector<float> b{1.5f};
  const auto bias = c.call.prepare_bias(view(b, Layout::X, {1}));
  // fbgemm: t = 1, m = 0.5: rne((16 + 1.5)·0.5 = 8.75) = 9, + 1.
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, c.call.prepare(c.weights), &bias).output),
            (std::vector<int>{10}));
}

TEST(TtnnFace, RefusesBiasOfTheWrongKindOrLength) {
  LayoutCase c;
  const std::vector<float> f{1.5f};
  EXPECT_TRUE(
      throws<qconv::ShapeMismatch>([&] { c.call.prepare_bias(view(f, Layout::X, {1})); },
                                   {"bias_tensor.dtype = f32", "scheme onnx takes a s32 bias"}));
  const std::vector<std::int32_t> two{1, 2};
  EXPECT_TRUE(throws<qconv::ShapeMismatch>([&] { c.call.prepare_bias(view(two, Layout::X, {2})); },
                                           {"bias_tensor.shape = [2]", "out_channels = 1"}));
  c.call.compute_config.scheme = "qnnpack";
  const std::vector<std::int32_t> one{1};
  EXPECT_TRUE(
      throws<qconv::ShapeMismatch>([&] { c.call.prepare_bias(view(one, Layout::X, {1})); },
                                   {"bias_tensor.dtype = s32", "scheme qnnpack takes a f32 bias"}));
}

TEST(TtnnFace, RefusesBiasPreparedForAnotherProblem) {
  LayoutCase c;
  c.call.has_bias = true;
  const auto weights = c.call.prepare(c.weights);

  Call other = c.call;
  other.stride = {2, 2};
  const auto strided_bias = other.prepare_bias(c.s32_bias);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>([&] { c.call.run(c.input, weights, &strided_bias); },
                                              {"stride[0]: prepared for 2, given 1", "the bias"}));

  other = c.call;
  other.compute_config.scheme = "tvm";  // an s32 bias as well, but another scheme
  const auto tvm_bias = other.prepare_bias(c.s32_bias);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>(
      [&] { c.call.run(c.input, weights, &tvm_bias); },
      {"compute_config.scheme: prepared for tvm, given onnx", "the bias"}));

  // The prepared objects are unchanged by the refusals.
  const auto bias = c.call.prepare_bias(c.s32_bias);
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, weights, &bias).output),
            (std::vector<int>{21}));
}

TEST(TtnnFace, RefusesABiasTheWeightsWereNotPreparedFor) {
  LayoutCase c;
  const auto weights = c.call.prepare(c.weights);  // has_bias = false
  c.call.has_bias = true;
  const auto bias = c.call.prepare_bias(c.s32_bias);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>([&] { c.call.run(c.input, weights, &bias); },
                                              {"has_bias: prepared for false, given true"}));
  // And weights prepared with has_bias refuse a call without one.
  const auto biased_weights = c.call.prepare(c.weights);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>([&] { c.call.run(c.input, biased_weights); },
                                              {"has_bias: prepared for true, given false"}));
}

TEST(TtnnFace, ReturnsOutputDimAndPreparedObjectsOnlyWhenAsked) {
  LayoutCase c;
  c.call.has_bias = true;

  const auto plain = c.call.run(c.input, c.weights, c.s32_bias);
  EXPECT_EQ(values_of<std::uint8_t>(plain.output), (std::vector<int>{21}));
  EXPECT_FALSE(plain.output_dim.has_value());
  EXPECT_FALSE(plain.weights.has_value());
  EXPECT_FALSE(plain.bias.has_value());

  const auto full = c.call.run(c.input, c.weights, c.s32_bias, true, true);
  EXPECT_EQ(full.output_dim, (std::array<std::int64_t, 2>{1, 1}));
  ASSERT_TRUE(full.weights.has_value());
  ASSERT_TRUE(full.bias.has_value());
  // The returned objects are prepared for this call and can be reused.
  const auto again = c.call.run(c.input, *full.weights, &*full.bias, false, true);
  EXPECT_EQ(values_of<std::uint8_t>(again.output), (std::vector<int>{21}));
  EXPECT_TRUE(again.weights.has_value());
  EXPECT_TRUE(again.bias.has_value());

  c.call.has_bias = false;
  const auto unbiased = c.call.run(c.input, c.weights, std::nullopt, false, true);
  EXPECT_EQ(values_of<std::uint8_t>(unbiased.output), (std::vector<int>{16}));
  EXPECT_TRUE(unbiased.weights.has_value());
  EXPECT_FALSE(unbiased.bias.has_value());
}

TEST(TtnnFace, ActivationAndComputeConfigReachTheScheme) {
  PaddingCase c;  // acc = {2, 4, 6, 8}
  c.call.compute_config.scheme = "onnx";
  c.call.conv_config.dtype = "uint8";
  c.call.conv_config.activation = "clamp";
  c.call.conv_config.clamp = {3.0, 7.0};  // scale 1, zero point 0: [3, 7]
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, c.call.prepare(c.weights)).output),
            (std::vector<int>{3, 4, 6, 7}));

  // tflite with a given multiplier 2^30 · 2^-31 = 0.5 and shift 0, weight 1: acc = {1, 2, 3, 4},
  // ·0.5 = {0.5, 1, 1.5, 2}, rounded half away from zero: {1, 1, 2, 2}.
  const std::vector<std::int8_t> one{1};
  const ttnn::QuantizedWeights weights{view(one, Layout::OIHW, {1, 1, 1, 1}), {1.0}, {0}};
  c.call.conv_config.activation = "";
  c.call.conv_config.dtype = "int8";
  c.call.compute_config.scheme = "tflite";
  c.call.compute_config.multiplier_q31 = {1 << 30};
  c.call.compute_config.shift = {0};
  EXPECT_EQ(values_of<std::int8_t>(c.call.run(c.input, c.call.prepare(weights)).output),
            (std::vector<int>{1, 1, 2, 2}));
}

TEST(TtnnFace, AlgorithmChoosesTheEngine) {
  LayoutCase c;
  c.call.conv_config.algorithm = "reference";
  EXPECT_EQ(c.call.prepare(c.weights).plan().engine(), "reference");
  c.call.conv_config.algorithm = "no-such-engine";
  EXPECT_TRUE(throws<qconv::InvalidArgument>([&] { c.call.prepare(c.weights); },
                                             {"engine = no-such-engine"}));
}

TEST(TtnnFace, RefusesUnknownNames) {
  LayoutCase c;
  Call bad = c.call;
  bad.weights_format = "OIWH";
  EXPECT_TRUE(
      throws<qconv::InvalidArgument>([&] { bad.prepare(c.weights); }, {"weights_format = OIWH"}));
  bad = c.call;
  bad.input_layout = "NWHC";
  EXPECT_TRUE(
      throws<qconv::InvalidArgument>([&] { bad.prepare(c.weights); }, {"input_layout = NWHC"}));
  bad = c.call;
  bad.conv_config.activation = "gelu";
  EXPECT_TRUE(throws<qconv::InvalidArgument>([&] { bad.prepare(c.weights); },
                                             {"conv_config.activation = gelu"}));
  bad = c.call;
  bad.compute_config.scheme = "fbgemm2";
  EXPECT_TRUE(throws<qconv::InvalidArgument>([&] { bad.prepare(c.weights); },
                                             {"compute_config.scheme = fbgemm2"}));
  bad = c.call;
  bad.padding = {0, 0, 0};
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { bad.prepare(c.weights); }, {"padding = [0, 0, 0]", "(top, bottom, left, right)"}));
}

TEST(TtnnFace, RefusesWeightsThatDisagreeWithTheArguments) {
  LayoutCase c;
  c.call.out_channels = 2;  // the weight holds one output channel
  EXPECT_TRUE(throws<qconv::ShapeMismatch>([&] { c.call.prepare(c.weights); },
                                           {"weight_tensor.shape = [1, 2, 2, 2]", "[2, 2, 2, 2]"}));
}

// A 2 → 2 channel, 4x4, 3x3 kernel, padding 1 problem with per-channel weights, and one
// change per field; each call must be refused naming the field and both values.
struct MismatchCase {
  std::vector<std::uint8_t> x = std::vector<std::uint8_t>(32, 3);
  std::vector<std::int8_t> w = std::vector<std::int8_t>(36, 1);
  ConstTensorView input = view(x, Layout::NHWC, {1, 4, 4, 2});
  ttnn::QuantizedWeights weights{view(w, Layout::OIHW, {2, 2, 3, 3}), {1.0, 0.5}, {0}};
  Call call;

  MismatchCase() {
    call.in_channels = 2;
    call.out_channels = 2;
    call.input_height = 4;
    call.input_width = 4;
    call.kernel_size = {3, 3};
    call.padding = {1, 1};
    call.compute_config.scheme = "onnx";
    call.compute_config.input_zero_point = 1;  // x − zx = 2 everywhere
  }
};

struct Change {
  const char* name;
  std::function<void(Call&)> apply;
  std::string message;
};

TEST(TtnnFace, RefusesEveryChangedField) {
  const MismatchCase c;
  const auto weights = c.call.prepare(c.weights);
  // Centre pixel sees all 9 taps of both channels: acc = 18·2 = 36; channel 1 scale 0.5: 18.
  // Corner (0,0) sees 4 taps: 16 and 8.
  const auto good = values_of<std::uint8_t>(c.call.run(c.input, weights).output);
  EXPECT_EQ(good[0], 16);
  EXPECT_EQ(good[1], 8);
  EXPECT_EQ(good[(1 * 4 + 1) * 2], 36);
  EXPECT_EQ(good[(1 * 4 + 1) * 2 + 1], 18);

  const std::vector<Change> changes{
      {"stride",
       [](Call& k) {
         k.stride = {2, 1};
       },
       "stride[0]: prepared for 1, given 2"},
      {"padding",
       [](Call& k) {
         k.padding = {1, 1, 1, 2};
       },
       "padding[right]: prepared for 1, given 2"},
      {"padding order",
       [](Call& k) {
         k.padding = {1, 0, 1, 1};
       },
       "padding[bottom]: prepared for 1, given 0"},
      {"dilation",
       [](Call& k) {
         k.dilation = {1, 2};
       },
       "dilation[1]: prepared for 1, given 2"},
      {"groups", [](Call& k) { k.groups = 2; }, "groups: prepared for 1, given 2"},
      {"in_channels", [](Call& k) { k.in_channels = 4; }, "in_channels: prepared for 2, given 4"},
      // Per-channel weights: still a mismatch, not a complaint about the scales' length.
      {"out_channels", [](Call& k) { k.out_channels = 4; },
       "out_channels: prepared for 2, given 4"},
      {"input_height", [](Call& k) { k.input_height = 5; },
       "input_height: prepared for 4, given 5"},
      {"input_width", [](Call& k) { k.input_width = 3; }, "input_width: prepared for 4, given 3"},
      {"kernel_size",
       [](Call& k) {
         k.kernel_size = {3, 1};
       },
       "kernel_size[1]: prepared for 3, given 1"},
      {"dtype", [](Call& k) { k.conv_config.dtype = "int8"; },
       "conv_config.dtype: prepared for u8, given s8"},
      {"output_layout", [](Call& k) { k.conv_config.output_layout = "NCHW"; },
       "conv_config.output_layout: prepared for NHWC, given NCHW"},
      {"scheme", [](Call& k) { k.compute_config.scheme = "tflite"; },
       "compute_config.scheme: prepared for onnx, given tflite"},
      {"rounding", [](Call& k) { k.compute_config.rounding = "TONEAREST"; },
       "compute_config.rounding: prepared for UPWARD, given TONEAREST"},
      {"input_scale", [](Call& k) { k.compute_config.input_scale = 2.0; },
       "compute_config.input_scale: prepared for 1, given 2"},
      {"output_scale", [](Call& k) { k.compute_config.output_scale = 0.5; },
       "compute_config.output_scale: prepared for 1, given 0.5"},
      {"output_zero_point", [](Call& k) { k.compute_config.output_zero_point = 3; },
       "compute_config.output_zero_point: prepared for 0, given 3"},
      {"activation", [](Call& k) { k.conv_config.activation = "relu"; },
       "conv_config.activation: prepared for none, given relu"},
      {"allow_wraparound", [](Call& k) { k.conv_config.allow_wraparound = true; },
       "conv_config.allow_wraparound: prepared for false, given true"},
  };
  for (const Change& change : changes) {
    SCOPED_TRACE(change.name);
    Call changed = c.call;
    change.apply(changed);
    EXPECT_TRUE(throws<qconv::PreparedMismatch>([&] { changed.run(c.input, weights); },
                                                {change.message, "prepare the weights again"}));
  }

  // The input tensor's layout is the call's input layout.
  const std::vector<std::uint8_t> nchw(32, 3);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>(
      [&] {
        c.call.run(view(nchw, Layout::NCHW, {1, 2, 4, 4}), weights);
      },
      {"input_layout: prepared for NHWC, given NCHW"}));

  // The input tensor's dtype is the call's input dtype (conv_config.input_dtype is read when
  // preparing).
  const std::vector<std::int8_t> s8(32, 3);
  EXPECT_TRUE(throws<qconv::PreparedMismatch>(
      [&] {
        c.call.run(view(s8, Layout::NHWC, {1, 4, 4, 2}), weights);
      },
      {"input_dtype: prepared for u8, given s8"}));

  // Nothing above disturbed the prepared weights.
  EXPECT_EQ(values_of<std::uint8_t>(c.call.run(c.input, weights).output), good);
}

}  // namespace
