// SPDX-License-Identifier: Apache-2.0
// The PyTorch face: each expected value below is worked out by hand from SPEC §3/§4, in the
// comments beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "face_test_support.hpp"
#include "qconv/faces/functional.hpp"

namespace {

using namespace qconv::test_support;
using qconv::functional::QTensor;

// One input channel of 2x2 values {1, 3, 5, 2}, scale 1, zero point 0; a 1x1 weight of 1 with
// scale 1: the accumulator is the input itself. With output scale 2 the multiplier is exactly
// 0.5, so acc·m = {0.5, 1.5, 2.5, 1.0}: three exact ties.
struct TieCase {
  std::vector<std::uint8_t> x{1, 3, 5, 2};
  std::vector<std::int8_t> w{1};
  QTensor input{view(x, Layout::NCHW, {1, 1, 2, 2}), {1.0}, {0}};
  QTensor weight{view(w, Layout::OIHW, {1, 1, 1, 1}), {1.0}, {0}};

  qconv::functional::Conv2dOptions options(const char* engine) const {
    qconv::functional::Conv2dOptions o;
    o.engine = engine;
    o.scale = 2.0;
    o.zero_point = 1;  // odd, so adding it before or after rounding a tie differs
    return o;
  }
};

TEST(FunctionalFace, EnginesDifferOnTiesWithAnOddZeroPoint) {
  const TieCase c;
  // fbgemm and qnnpack round, then add zy: rne{0.5, 1.5, 2.5, 1.0} = {0, 2, 2, 1}, + 1.
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, {}, c.options("fbgemm")).values),
            (std::vector<int>{1, 3, 3, 2}));
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, {}, c.options("qnnpack")).values),
            (std::vector<int>{1, 3, 3, 2}));
  // onednn adds zy in float first: rne{1.5, 2.5, 3.5, 2.0} = {2, 2, 4, 2}.
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, {}, c.options("onednn")).values),
            (std::vector<int>{2, 2, 4, 2}));
}

TEST(FunctionalFace, FloatBiasPerEngine) {
  const TieCase c;
  const std::vector<float> bias{1.5f};
  // fbgemm: t = 1, v = acc + 1.5 = {2.5, 4.5, 6.5, 3.5}; v·0.5 = {1.25, 2.25, 3.25, 1.75};
  // rne = {1, 2, 3, 2}; + 1.
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, bias, c.options("fbgemm")).values),
            (std::vector<int>{2, 3, 4, 3}));
  // qnnpack rounds the bias to s32 first: bq = rne(1.5) = 2; (acc + 2)·0.5 = {1.5, 2.5, 3.5, 2};
  // rne = {2, 2, 4, 2}; + 1.
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, bias, c.options("qnnpack")).values),
            (std::vector<int>{3, 3, 5, 3}));
  // onednn: bb = 1.5; (acc + 1.5)·0.5 + 1 = {2.25, 3.25, 4.25, 2.75}; rne.
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, bias, c.options("onednn")).values),
            (std::vector<int>{2, 3, 4, 3}));
}

TEST(FunctionalFace, X86IsFbgemmSemantics) {
  const TieCase c;
  EXPECT_EQ(values_of<std::uint8_t>(
                qconv::functional::conv2d(c.input, c.weight, {}, c.options("x86")).values),
            (std::vector<int>{1, 3, 3, 2}));
}

TEST(FunctionalFace, ResultCarriesOutputQuantizationAndShape) {
  const TieCase c;
  const auto y = qconv::functional::conv2d(c.input, c.weight, {}, c.options("fbgemm"));
  EXPECT_EQ(y.scale, 2.0);
  EXPECT_EQ(y.zero_point, 1);
  EXPECT_EQ(y.values.layout(), Layout::NCHW);
  EXPECT_EQ(y.values.shape(), (Shape{1, 1, 2, 2}));
}

TEST(FunctionalFace, ReluRaisesTheLowBoundToTheZeroPoint) {
  TieCase c;
  c.input.zero_point = {3};  // acc = x − 3 = {−2, 0, 2, −1}; ·0.5 = {−1, 0, 1, −0.5}
  auto options = c.options("fbgemm");
  // rne = {−1, 0, 1, 0}; + 1 = {0, 1, 2, 1}.
  EXPECT_EQ(
      values_of<std::uint8_t>(qconv::functional::conv2d(c.input, c.weight, {}, options).values),
      (std::vector<int>{0, 1, 2, 1}));
  options.relu = true;  // low bound = zy = 1
  EXPECT_EQ(
      values_of<std::uint8_t>(qconv::functional::conv2d(c.input, c.weight, {}, options).values),
      (std::vector<int>{1, 1, 2, 1}));
}

TEST(FunctionalFace, Qint8Output) {
  TieCase c;
  const std::vector<std::int8_t> w{-1};
  c.weight.values = view(w, Layout::OIHW, {1, 1, 1, 1});
  auto options = c.options("fbgemm");
  options.dtype = "qint8";
  // acc = −x; ·0.5 = {−0.5, −1.5, −2.5, −1}; rne = {0, −2, −2, −1}; + 1.
  const auto y = qconv::functional::conv2d(c.input, c.weight, {}, options);
  EXPECT_EQ(y.values.dtype(), DType::s8);
  EXPECT_EQ(values_of<std::int8_t>(y.values), (std::vector<int>{1, -1, -1, 0}));
}

TEST(FunctionalFace, PerChannelWeightsAlongAxisZero) {
  const std::vector<std::uint8_t> x{1, 3, 5, 2};
  const std::vector<std::int8_t> w{1, 3};
  const QTensor input{view(x, Layout::NCHW, {1, 1, 2, 2}), {1.0}, {0}};
  // Channel 0: w − zw = 1, scale 1. Channel 1: w − zw = 3 − 1 = 2, scale 2.
  const QTensor weight{view(w, Layout::OIHW, {2, 1, 1, 1}), {1.0, 2.0}, {0, 1}, 0};
  qconv::functional::Conv2dOptions options;
  options.scale = 2.0;
  options.zero_point = 1;
  const auto y = qconv::functional::conv2d(input, weight, {}, options);
  // Channel 0: m = 0.5, as in TieCase: {1, 3, 3, 2}.
  // Channel 1: acc = 2x = {2, 6, 10, 4}, t = 2, m = 1: {2, 6, 10, 4} + 1.
  EXPECT_EQ(values_of<std::uint8_t>(y.values), (std::vector<int>{1, 3, 3, 2, 3, 7, 11, 5}));
}

TEST(FunctionalFace, GroupedConvolutionReadsItsOwnGroup) {
  // Two input channels {1, 2} and {3, 4} (1x2 each), groups 2, one output per group, 1x2 kernels
  // {1, 1} and {2, −1}: out0 = 1 + 2 = 3, out1 = 2·3 − 4 = 2. Output scale 1, zp 0.
  const std::vector<std::uint8_t> x{1, 2, 3, 4};
  const std::vector<std::int8_t> w{1, 1, 2, -1};
  const QTensor input{view(x, Layout::NCHW, {1, 2, 1, 2}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::OIHW, {2, 1, 1, 2}), {1.0}, {0}};
  qconv::functional::Conv2dOptions options;
  options.groups = 2;
  EXPECT_EQ(values_of<std::uint8_t>(qconv::functional::conv2d(input, weight, {}, options).values),
            (std::vector<int>{3, 2}));
}

TEST(FunctionalFace, StridePaddingDilation) {
  // Input 1x1x3x3 = 1..9 with zero point 1, so x − zx = {0 1 2 / 3 4 5 / 6 7 8} and padding
  // contributes 0. Kernel {1 2 / 3 4}, dilation 2, padding 1, stride (1, 2):
  // OH = (3 + 2 − 3) / 1 + 1 = 3, OW = (3 + 2 − 3) / 2 + 1 = 2. Output (y, x) reads input rows
  // {y − 1, y + 1} (taps r = 0, 1) and columns {2x − 1, 2x + 1} (taps s = 0, 1):
  //   (0,0): r1s1·(1,1) = 4·4 = 16        (0,1): r1s0·(1,1) = 3·4 = 12
  //   (1,0): r0s1·(0,1) + r1s1·(2,1) = 2·1 + 4·7 = 30
  //   (1,1): r0s0·(0,1) + r1s0·(2,1) = 1·1 + 3·7 = 22
  //   (2,0): r0s1·(1,1) = 2·4 = 8         (2,1): r0s0·(1,1) = 1·4 = 4
  const std::vector<std::uint8_t> x{1, 2, 3, 4, 5, 6, 7, 8, 9};
  const std::vector<std::int8_t> w{1, 2, 3, 4};
  const QTensor input{view(x, Layout::NCHW, {1, 1, 3, 3}), {1.0}, {1}};
  const QTensor weight{view(w, Layout::OIHW, {1, 1, 2, 2}), {1.0}, {0}};
  qconv::functional::Conv2dOptions options;
  options.stride = {1, 2};
  options.padding = {1};
  options.dilation = {2};
  const auto y = qconv::functional::conv2d(input, weight, {}, options);
  EXPECT_EQ(y.values.shape(), (Shape{1, 1, 3, 2}));
  EXPECT_EQ(values_of<std::uint8_t>(y.values), (std::vector<int>{16, 12, 30, 22, 8, 4}));
}

TEST(FunctionalFace, AsymmetricPadHPadW) {
  // padding (pad_h, pad_w) = (0, 1) on a 1x2 input {2, 3}, kernel 1x1 of 1: OW = 2 + 2 = 4,
  // padded columns are 0; OH stays 1. With (1, 0) the shape would be 3x2.
  const std::vector<std::uint8_t> x{2, 3};
  const std::vector<std::int8_t> w{1};
  const QTensor input{view(x, Layout::NCHW, {1, 1, 1, 2}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::OIHW, {1, 1, 1, 1}), {1.0}, {0}};
  qconv::functional::Conv2dOptions options;
  options.padding = {0, 1};
  const auto y = qconv::functional::conv2d(input, weight, {}, options);
  EXPECT_EQ(y.values.shape(), (Shape{1, 1, 1, 4}));
  EXPECT_EQ(values_of<std::uint8_t>(y.values), (std::vector<int>{0, 2, 3, 0}));
}

// conv_transpose2d: input 1x2x1x2, groups 2 (one input and one output channel per group), IOHW
// weight [2, 1, 1, 2], stride (1, 2), output_padding (0, 1), input zero point 1, output zero
// point 10, scales 1 (m = 1).
struct TransposeCase {
  std::vector<std::uint8_t> x{3, 5, 1, 7};  // channel 0: {3, 5} − 1 = {2, 4}; channel 1: {0, 6}
  std::vector<std::int8_t> w{1, -2, 3, 1};  // channel 0: k = {1, −2}; channel 1: k = {3, 1}
  QTensor input{view(x, Layout::NCHW, {1, 2, 1, 2}), {1.0}, {1}};
  QTensor weight{view(w, Layout::IOHW, {2, 1, 1, 2}), {1.0}, {0}};

  qconv::functional::ConvTranspose2dOptions options() const {
    qconv::functional::ConvTranspose2dOptions o;
    o.stride = {1, 2};
    o.output_padding = {0, 1};
    o.groups = 2;
    o.zero_point = 10;
    return o;
  }
};

TEST(FunctionalFace, ConvTransposeStrideOutputPaddingGroups) {
  const TransposeCase c;
  // OW = 2·(2 − 1) + (2 − 1) + 1 + 1 = 5; input column w, tap s lands on 2w + s.
  // Channel 0: {2·1, 2·(−2), 4·1, 4·(−2), 0 (output padding)} = {2, −4, 4, −8, 0}, + 10.
  // Channel 1: {0·3, 0·1, 6·3, 6·1, 0} = {0, 0, 18, 6, 0}, + 10.
  const auto y = qconv::functional::conv_transpose2d(c.input, c.weight, {}, c.options());
  EXPECT_EQ(y.values.shape(), (Shape{1, 2, 1, 5}));
  EXPECT_EQ(values_of<std::uint8_t>(y.values),
            (std::vector<int>{12, 6, 14, 2, 10, 10, 10, 28, 16, 10}));
}

TEST(FunctionalFace, ConvTransposePaddingCropsBothEnds) {
  const TransposeCase c;
  auto options = c.options();
  options.padding = {0, 1};
  // OW = 5 − 2 = 3: the full rows above without their first and last columns.
  const auto y = qconv::functional::conv_transpose2d(c.input, c.weight, {}, options);
  EXPECT_EQ(y.values.shape(), (Shape{1, 2, 1, 3}));
  EXPECT_EQ(values_of<std::uint8_t>(y.values), (std::vector<int>{6, 14, 2, 10, 28, 16}));
}

TEST(FunctionalFace, ConvTransposeFloatBiasAndRelu) {
  const TransposeCase c;
  auto options = c.options();
  options.relu = true;
  const std::vector<float> bias{-3.0f, 1.0f};
  // fbgemm, t = 1, m = 1: channel 0 {2, −4, 4, −8, 0} − 3 = {−1, −7, 1, −11, −3}, + 10 =
  // {9, 3, 11, −1, 7}, ReLU low bound 10: {10, 10, 11, 10, 10}. Channel 1: + 1 + 10.
  const auto y = qconv::functional::conv_transpose2d(c.input, c.weight, bias, options);
  EXPECT_EQ(values_of<std::uint8_t>(y.values),
            (std::vector<int>{10, 10, 11, 10, 10, 11, 11, 29, 17, 11}));
}

TEST(FunctionalFace, ConvTransposePerChannelAlongAxisOne) {
  // One input channel {4, 6}, two outputs, IOHW [1, 2, 1, 1] = {2, 3}, scales {1, 0.5}, zero
  // points {0, 1}. Channel 0: acc = 2x = {8, 12}, m = 1. Channel 1: acc = (3 − 1)x = {8, 12},
  // m = 0.5: {4, 6}.
  const std::vector<std::uint8_t> x{4, 6};
  const std::vector<std::int8_t> w{2, 3};
  const QTensor input{view(x, Layout::NCHW, {1, 1, 1, 2}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::IOHW, {1, 2, 1, 1}), {1.0, 0.5}, {0, 1}, 1};
  const auto y = qconv::functional::conv_transpose2d(input, weight, {});
  EXPECT_EQ(values_of<std::uint8_t>(y.values), (std::vector<int>{8, 12, 4, 6}));
}

TEST(FunctionalFace, RefusesPaddingModesOtherThanZeros) {
  const TieCase c;
  auto options = c.options("fbgemm");
  options.padding_mode = "reflect";
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, options); },
      {"padding_mode", "reflect", "zeros"}));
}

TEST(FunctionalFace, RefusesUnknownEngineAndDtype) {
  const TieCase c;
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, c.options("tvm")); },
      {"engine", "tvm"}));
  auto options = c.options("fbgemm");
  options.dtype = "qint32";
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, options); }, {"dtype", "qint32"}));
}

TEST(FunctionalFace, RefusesPerChannelWeightsOffTheOutputAxis) {
  const std::vector<std::uint8_t> x{1, 2};
  const std::vector<std::int8_t> w{1, 1};
  const QTensor input{view(x, Layout::NCHW, {1, 1, 1, 2}), {1.0}, {0}};
  const QTensor conv_weight{view(w, Layout::OIHW, {2, 1, 1, 1}), {1.0, 2.0}, {0}, 1};
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(input, conv_weight, {}); }, {"weight.axis", "1", "axis 0"}));

  const QTensor transposed_weight{view(w, Layout::IOHW, {1, 2, 1, 1}), {1.0, 2.0}, {0}, 0};
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv_transpose2d(input, transposed_weight, {}); },
      {"weight.axis", "0", "axis 1"}));
}

TEST(FunctionalFace, RefusesPerChannelTransposedWeightsWithGroups) {
  // Two input channels, groups 2, IOHW [2, 1, 1, 1]: axis 1 holds one channel per group, so two
  // per-channel values along it cannot name the two output channels.
  const std::vector<std::uint8_t> x{1, 2};
  const std::vector<std::int8_t> w{1, 1};
  const QTensor input{view(x, Layout::NCHW, {1, 2, 1, 1}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::IOHW, {2, 1, 1, 1}), {1.0, 2.0}, {0, 0}, 1};
  qconv::functional::ConvTranspose2dOptions options;
  options.groups = 2;
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv_transpose2d(input, weight, {}, options); },
      {"groups", "2", "groups == 1"}));
}

TEST(FunctionalFace, RefusesPerChannelInput) {
  TieCase c;
  c.input.scale = {1.0, 2.0};
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, c.options("fbgemm")); },
      {"input.scale.size", "2", "per tensor"}));
}

TEST(FunctionalFace, RefusesWeightShapeThatDisagreesWithGroups) {
  // Two input channels, groups 1, but the OIHW weight holds 1 input channel.
  const std::vector<std::uint8_t> x{1, 2};
  const std::vector<std::int8_t> w{1};
  const QTensor input{view(x, Layout::NCHW, {1, 2, 1, 1}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::OIHW, {1, 1, 1, 1}), {1.0}, {0}};
  EXPECT_TRUE(
      throws<qconv::ShapeMismatch>([&] { qconv::functional::conv2d(input, weight, {}); },
                                   {"weight.shape[1]", "1", "in_channels / groups = 2 / 1"}));
  // Transposed: IOHW's axis 0 must be the input's 2 channels.
  const QTensor transposed{view(w, Layout::IOHW, {1, 1, 1, 1}), {1.0}, {0}};
  EXPECT_TRUE(throws<qconv::ShapeMismatch>(
      [&] { qconv::functional::conv_transpose2d(input, transposed, {}); },
      {"weight.shape[0]", "1", "channels = 2"}));
}

TEST(FunctionalFace, RefusesGroupsThatDoNotDivideTheChannels) {
  const std::vector<std::uint8_t> x{1, 2, 3};
  const std::vector<std::int8_t> w{1, 1};
  const QTensor input{view(x, Layout::NCHW, {1, 3, 1, 1}), {1.0}, {0}};
  const QTensor weight{view(w, Layout::OIHW, {2, 1, 1, 1}), {1.0}, {0}};
  qconv::functional::Conv2dOptions options;
  options.groups = 2;
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(input, weight, {}, options); }, {"groups", "2", "divide"}));
}

TEST(FunctionalFace, RefusesWrongLayoutsAndBiasLength) {
  const TieCase c;
  QTensor nhwc = c.input;
  nhwc.values = view(c.x, Layout::NHWC, {1, 2, 2, 1});
  EXPECT_TRUE(throws<qconv::ShapeMismatch>(
      [&] { qconv::functional::conv2d(nhwc, c.weight, {}, c.options("fbgemm")); },
      {"input.layout", "NHWC"}));
  const std::vector<float> bias{1.0f, 2.0f};
  EXPECT_TRUE(throws<qconv::ShapeMismatch>(
      [&] { qconv::functional::conv2d(c.input, c.weight, bias, c.options("fbgemm")); },
      {"bias.size", "2"}));
}

TEST(FunctionalFace, RefusesBadPaddingCounts) {
  const TieCase c;
  auto options = c.options("fbgemm");
  options.padding = {0, 0, 0, 0};  // PyTorch's padding is one value or (pad_h, pad_w)
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, options); }, {"padding"}));
  options.padding = {-1};
  EXPECT_TRUE(throws<qconv::InvalidArgument>(
      [&] { qconv::functional::conv2d(c.input, c.weight, {}, options); },
      {"padding", "must not be negative"}));
}

}  // namespace
