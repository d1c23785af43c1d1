// SPDX-License-Identifier: Apache-2.0
// ONNX face: QLinearConv, ConvInteger and the integer ConvTranspose with ONNX attributes. Every
// expected value is worked out by hand in the comment beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <string_view>
#include <vector>

#include "face_test_support.hpp"
#include "qconv/faces/onnx.hpp"

namespace {

using namespace qconv::test_support;
namespace onnx = qconv::onnx;

// ---- ConvInteger: pads ----

// x [[3, 5], [7, 9]] with x_zero_point 1, one 1x1 weight 2: inside (x − 1)·2 = [[4, 8], [12, 16]],
// padding gives 0 (it stands for the real value 0).
const U8 kPadX{3, 5, 7, 9};
const S8 kPadW{2};

qconv::Tensor padded(std::vector<std::int64_t> pads) {
  onnx::ConvAttributes a;
  a.pads = std::move(pads);
  return onnx::conv_integer(view(kPadX, Layout::NCHW, {1, 1, 2, 2}),
                            view(kPadW, Layout::OIHW, {1, 1, 1, 1}), 1, {0}, a);
}

TEST(OnnxConvInteger, PadsAreX1BeginX2BeginX1EndX2End) {
  // [top, left, bottom, right] = [1, 2, 0, 0]: a row above, two columns on the left: 3 x 4.
  const auto y = padded({1, 2, 0, 0});
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 1, 3, 4}));
  EXPECT_EQ(ints(y), (std::vector<int>{0, 0, 0, 0,  //
                                       0, 0, 4, 8,  //
                                       0, 0, 12, 16}));
  // [0, 0, 2, 1]: two rows below, one column on the right: 4 x 3.
  const auto z = padded({0, 0, 2, 1});
  EXPECT_EQ(z.shape(), (qconv::Shape{1, 1, 4, 3}));
  EXPECT_EQ(ints(z), (std::vector<int>{4, 8, 0, 12, 16, 0, 0, 0, 0, 0, 0, 0}));
}

// ---- ConvInteger: auto_pad ----

// x = 1 x 4 row [1, 2, 3, 4], zero points 0.
const U8 kRow{1, 2, 3, 4};

qconv::Tensor row_conv(const S8& kernel, const char* auto_pad, std::int64_t stride) {
  onnx::ConvAttributes a;
  a.auto_pad = auto_pad;
  a.strides = {1, stride};
  return onnx::conv_integer(
      view(kRow, Layout::NCHW, {1, 1, 1, 4}),
      view(kernel, Layout::OIHW, {1, 1, 1, static_cast<std::int64_t>(kernel.size())}), 0, {0}, a);
}

TEST(OnnxConvInteger, SameUpperPutsTheOddPaddingAtTheEnd) {
  // k = 2, s = 1, in = 4: total = (4 − 1)·1 + 2 − 4 = 1, all on the right.
  // out[i] = x[i] + 10·x[i + 1] with x[4] = 0: [21, 32, 43, 4].
  EXPECT_EQ(ints(row_conv({1, 10}, "SAME_UPPER", 1)), (std::vector<int>{21, 32, 43, 4}));
  // k = 3, s = 2, in = 4: out = 2, total = (2 − 1)·2 + 3 − 4 = 1, on the right: padded
  // [1, 2, 3, 4, 0]; taps 0..2 and 2..4 with [1, 10, 100]: [1 + 20 + 300, 3 + 40 + 0].
  EXPECT_EQ(ints(row_conv({1, 10, 100}, "SAME_UPPER", 2)), (std::vector<int>{321, 43}));
}

TEST(OnnxConvInteger, SameLowerPutsTheOddPaddingAtTheBeginning) {
  // k = 2: one column on the left: out[i] = x[i − 1] + 10·x[i] = [10, 21, 32, 43].
  EXPECT_EQ(ints(row_conv({1, 10}, "SAME_LOWER", 1)), (std::vector<int>{10, 21, 32, 43}));
  // k = 3, s = 2: padded [0, 1, 2, 3, 4]: [0 + 10 + 200, 2 + 30 + 400].
  EXPECT_EQ(ints(row_conv({1, 10, 100}, "SAME_LOWER", 2)), (std::vector<int>{210, 432}));
}

TEST(OnnxConvInteger, ValidPadsNothing) {
  // k = 2: [1 + 20, 2 + 30, 3 + 40]; with stride 2: [21, 43].
  EXPECT_EQ(ints(row_conv({1, 10}, "VALID", 1)), (std::vector<int>{21, 32, 43}));
  EXPECT_EQ(ints(row_conv({1, 10}, "VALID", 2)), (std::vector<int>{21, 43}));
}

// ---- ConvInteger: zero points ----

// x [5, 7] (1 x 2), x_zero_point 3: centred [2, 4]. w 1 x 2, two output channels:
// o0 [2, 4], o1 [0, -1].
const U8 kZpX{5, 7};
const S8 kZpW{2, 4, 0, -1};

TEST(OnnxConvInteger, PerChannelWeightZeroPoints) {
  // w_zero_point [1, -2]: o0 = 2·1 + 4·3 = 14; o1 = 2·2 + 4·1 = 8.
  const auto y = onnx::conv_integer(view(kZpX, Layout::NCHW, {1, 1, 1, 2}),
                                    view(kZpW, Layout::OIHW, {2, 1, 1, 2}), 3, {1, -2});
  EXPECT_EQ(y.dtype(), DType::s32);
  EXPECT_EQ(ints(y), (std::vector<int>{14, 8}));
  // w_zero_point 1 for both: o1 = 2·(0 − 1) + 4·(−1 − 1) = −10.
  EXPECT_EQ(ints(onnx::conv_integer(view(kZpX, Layout::NCHW, {1, 1, 1, 2}),
                                    view(kZpW, Layout::OIHW, {2, 1, 1, 2}), 3, {1})),
            (std::vector<int>{14, -10}));
}

TEST(OnnxConvInteger, GroupsAndDilations) {
  // 2 input channels, 2 groups, one output channel per group, 1 x 2 kernels, dilation (1, 2):
  // taps at x and x + 2 of a 1 x 3 row. c0 = [1, 2, 3] with [1, 10]: 1 + 30 = 31;
  // c1 = [4, 5, 6] with [2, 1]: 8 + 6 = 14.
  const U8 x{1, 2, 3, 4, 5, 6};
  const S8 w{1, 10, 2, 1};
  onnx::ConvAttributes a;
  a.group = 2;
  a.dilations = {1, 2};
  a.kernel_shape = {1, 2};
  EXPECT_EQ(ints(onnx::conv_integer(view(x, Layout::NCHW, {1, 2, 1, 3}),
                                    view(w, Layout::OIHW, {2, 1, 1, 2}), 0, {0}, a)),
            (std::vector<int>{31, 14}));
}

// ---- QLinearConv ----

qconv::Tensor qlinear(std::int32_t y_zero_point, std::optional<std::span<const std::int32_t>> B,
                      DType y_dtype = DType::u8) {
  // x_scale 0.5, w_scale [0.25, 1.0], y_scale 1: m = f32(f32(0.5·0.25) / 1) = 0.125 for o0 and
  // 0.5 for o1 (both exact in binary32).
  return onnx::qlinear_conv(view(kZpX, Layout::NCHW, {1, 1, 1, 2}), 0.5, 3,
                            view(kZpW, Layout::OIHW, {2, 1, 1, 2}), {0.25, 1.0}, {1, -2}, 1.0,
                            y_zero_point, B, {}, y_dtype);
}

TEST(OnnxQLinearConv, PerChannelScalesAndZeroPoints) {
  // acc = [14, 8] (as in ConvInteger above). R = acc·m + zy with zy = 10:
  // o0 = 14·0.125 + 10 = 11.75 → 12; o1 = 8·0.5 + 10 = 14.
  const auto y = qlinear(10, std::nullopt);
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(ints(y), (std::vector<int>{12, 14}));
}

TEST(OnnxQLinearConv, BiasIsAddedToTheAccumulatorAndTiesRoundToEvenAfterTheZeroPoint) {
  // B = [2, -3]: acc = [16, 5]; zy = 11: o0 = 16·0.125 + 11 = 13; o1 = 5·0.5 + 11 = 13.5 → 14
  // (half to even, zero point added before rounding; rounding 2.5 first would give 2 + 11 = 13).
  const std::vector<std::int32_t> bias{2, -3};
  EXPECT_EQ(ints(qlinear(11, std::span<const std::int32_t>(bias))), (std::vector<int>{13, 14}));
}

TEST(OnnxQLinearConv, Int8OutputSaturates) {
  // y int8 with zy = 120: o0 = 1.75 + 120 = 121.75 → 122; o1 = 4 + 120 = 124. zy = 125:
  // o1 = 129 → 127.
  EXPECT_EQ(ints(qlinear(120, std::nullopt, DType::s8)), (std::vector<int>{122, 124}));
  EXPECT_EQ(ints(qlinear(125, std::nullopt, DType::s8)), (std::vector<int>{127, 127}));
}

TEST(OnnxQLinearConv, OnnxRuntimeSemanticsRoundsBeforeAddingTheZeroPoint) {
  // As above (acc = [16, 5], zy = 11), with ONNX Runtime's order: o1 = rne(2.5) + 11 = 13.
  const std::vector<std::int32_t> bias{2, -3};
  const auto run = [&](std::string_view semantics) {
    return ints(onnx::qlinear_conv(view(kZpX, Layout::NCHW, {1, 1, 1, 2}), 0.5, 3,
                                   view(kZpW, Layout::OIHW, {2, 1, 1, 2}), {0.25, 1.0}, {1, -2},
                                   1.0, 11, std::span<const std::int32_t>(bias), {}, DType::u8,
                                   semantics));
  };
  EXPECT_EQ(run("onnxruntime"), (std::vector<int>{13, 13}));
  EXPECT_EQ(run("reference"), (std::vector<int>{13, 14}));
  EXPECT_TRUE(
      throws<InvalidArgument>([&] { run("ort"); }, {"semantics = ort: must be \"reference\""}));
}

// ---- ConvTranspose (integer) ----

// x 1 x 2 = [1, 2], w 1 x 3 = [1, 10, 100] (IOHW [1, 1, 1, 3]), strides [1, 2]:
// out[2i + s] += x[i]·w[s]: natural width 2·1 + 3 = 5: [1, 10, 102, 20, 200].
const U8 kTx{1, 2};
const S8 kTw{1, 10, 100};

qconv::Tensor transposed(onnx::ConvTransposeAttributes a) {
  a.strides = {1, 2};
  return onnx::conv_transpose_integer(view(kTx, Layout::NCHW, {1, 1, 1, 2}),
                                      view(kTw, Layout::IOHW, {1, 1, 1, 3}), 0, {0}, a);
}

TEST(OnnxConvTranspose, NaturalOutputAndPads) {
  EXPECT_EQ(ints(transposed({})), (std::vector<int>{1, 10, 102, 20, 200}));
  onnx::ConvTransposeAttributes a;
  a.pads = {0, 1, 0, 2};  // left 1, right 2
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{10, 102}));
  a.pads = {0, 2, 0, 1};  // left 2, right 1
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{102, 20}));
}

TEST(OnnxConvTranspose, OutputPaddingAddsAtTheEnd) {
  onnx::ConvTransposeAttributes a;
  a.output_padding = {0, 1};
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{1, 10, 102, 20, 200, 0}));
}

TEST(OnnxConvTranspose, SameUpperAndLowerWithOddTotalPadding) {
  // SAME: output = in·stride = 4; total_padding = 5 − 4 = 1.
  // SAME_UPPER: begin = 1/2 = 0, end = 1: [1, 10, 102, 20].
  // SAME_LOWER: begin = 1 − 1/2 = 1, end = 0: [10, 102, 20, 200].
  onnx::ConvTransposeAttributes a;
  a.auto_pad = "SAME_UPPER";
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{1, 10, 102, 20}));
  a.auto_pad = "SAME_LOWER";
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{10, 102, 20, 200}));
  a.auto_pad = "VALID";
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{1, 10, 102, 20, 200}));
}

TEST(OnnxConvTranspose, OutputShapeDerivesPads) {
  // output_shape [1, 3]: total 2, one each side: [10, 102, 20].
  onnx::ConvTransposeAttributes a;
  a.output_shape = {1, 3};
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{10, 102, 20}));
  // output_shape [1, 4] with NOTSET: total 1, the spec's "else" branch puts the odd one at the
  // beginning: [10, 102, 20, 200]; with SAME_UPPER at the end: [1, 10, 102, 20].
  a.output_shape = {1, 4};
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{10, 102, 20, 200}));
  a.auto_pad = "SAME_UPPER";
  EXPECT_EQ(ints(transposed(a)), (std::vector<int>{1, 10, 102, 20}));
}

TEST(OnnxConvTranspose, GroupsWithIOHWWeights) {
  // x [1, 2] on two channels, group 2, 1x1 weights [C, M/group] = c0 → [1, 2], c1 → [3, 4]:
  // y = [1·1, 1·2, 2·3, 2·4] = [1, 2, 6, 8]; per-channel w_zero_point [0, 1, 0, 1]:
  // [1·1, 1·1, 2·3, 2·3] = [1, 1, 6, 6].
  const U8 x{1, 2};
  const S8 w{1, 2, 3, 4};
  onnx::ConvTransposeAttributes a;
  a.group = 2;
  const auto xv = view(x, Layout::NCHW, {1, 2, 1, 1});
  const auto wv = view(w, Layout::IOHW, {2, 2, 1, 1});
  EXPECT_EQ(ints(onnx::conv_transpose_integer(xv, wv, 0, {0}, a)), (std::vector<int>{1, 2, 6, 8}));
  EXPECT_EQ(ints(onnx::conv_transpose_integer(xv, wv, 0, {0, 1, 0, 1}, a)),
            (std::vector<int>{1, 1, 6, 6}));
}

// ---- errors ----

// A valid ConvInteger call on kRow with a 1 x 2 kernel; each test breaks one thing.
const S8 kRowW{1, 10};

auto conv_call(onnx::ConvAttributes a, Layout x_tag = Layout::NCHW, Layout w_tag = Layout::OIHW) {
  return [=] {
    onnx::conv_integer(view(kRow, x_tag, {1, 1, 1, 4}), view(kRowW, w_tag, {1, 1, 1, 2}), 0, {0},
                       a);
  };
}

TEST(OnnxErrors, AutoPadName) {
  onnx::ConvAttributes a;
  a.auto_pad = "SAME";
  EXPECT_TRUE(throws<InvalidArgument>(
      conv_call(a), {"auto_pad = SAME: must be NOTSET, VALID, SAME_UPPER or SAME_LOWER"}));
}

TEST(OnnxErrors, PadsWithAutoPad) {
  onnx::ConvAttributes a;
  a.auto_pad = "SAME_UPPER";
  a.pads = {0, 0, 0, 1};
  EXPECT_TRUE(throws<InvalidArgument>(
      conv_call(a),
      {"pads = [0, 0, 0, 1]: explicit pads cannot be used together with auto_pad = SAME_UPPER"}));
}

TEST(OnnxErrors, PadsCount) {
  onnx::ConvAttributes a;
  a.pads = {1, 1};
  EXPECT_TRUE(
      throws<InvalidArgument>(conv_call(a), {"pads = [1, 1]: a 2-D convolution takes 4 pads"}));
  a.pads = {0, -1, 0, 0};
  EXPECT_TRUE(throws<InvalidArgument>(conv_call(a), {"padding must not be negative"}));
}

TEST(OnnxErrors, KernelShapeMustAgreeWithW) {
  onnx::ConvAttributes a;
  a.kernel_shape = {2, 1};
  EXPECT_TRUE(throws<ShapeMismatch>(
      conv_call(a), {"kernel_shape = [2, 1]: must equal w's spatial shape [1, 2]"}));
}

TEST(OnnxErrors, Layouts) {
  EXPECT_TRUE(throws<ShapeMismatch>(conv_call({}, Layout::NHWC),
                                    {"x.layout = NHWC: the ONNX face takes NCHW"}));
  EXPECT_TRUE(throws<ShapeMismatch>(conv_call({}, Layout::NCHW, Layout::OHWI),
                                    {"w.layout = OHWI: the ONNX face takes OIHW"}));
}

TEST(OnnxErrors, GroupAndChannels) {
  onnx::ConvAttributes a;
  a.group = 0;
  EXPECT_TRUE(throws<InvalidArgument>(conv_call(a), {"group = 0: must be at least 1"}));
  a.group = 2;  // x has 1 channel
  EXPECT_TRUE(throws<InvalidArgument>(conv_call(a), {"group = 2: must divide x's channels = 1"}));
  const U8 two_channels{1, 2, 3, 4, 5, 6, 7, 8};
  EXPECT_TRUE(throws<ShapeMismatch>(
      [&] {
        onnx::conv_integer(view(two_channels, Layout::NCHW, {1, 2, 1, 4}),
                           view(kRowW, Layout::OIHW, {1, 1, 1, 2}));
      },
      {"w.shape = [1, 1, 1, 2]: w's second dimension times group (1) must equal x's channels 2"}));
}

TEST(OnnxErrors, StridesAndDilations) {
  onnx::ConvAttributes a;
  a.strides = {1, 0};
  EXPECT_TRUE(throws<InvalidArgument>(
      conv_call(a), {"strides = [1, 0]: every stride must be between 1 and 2^31 - 1"}));
  a = {};
  a.dilations = {0, 1};
  EXPECT_TRUE(throws<InvalidArgument>(conv_call(a), {"dilations = [0, 1]"}));
  a = {};
  a.strides = {1, 1, 1};
  EXPECT_TRUE(throws<InvalidArgument>(conv_call(a), {"strides = [1, 1, 1]: takes 1 or 2 values"}));
}

TEST(OnnxErrors, PerChannelVectorLengths) {
  EXPECT_TRUE(throws<InvalidArgument>(
      [] {
        onnx::conv_integer(view(kZpX, Layout::NCHW, {1, 1, 1, 2}),
                           view(kZpW, Layout::OIHW, {2, 1, 1, 2}), 3, {1, 2, 3});
      },
      {"w_zero_point.size = 3"}));
  EXPECT_TRUE(throws<InvalidArgument>(
      [] {
        onnx::qlinear_conv(view(kZpX, Layout::NCHW, {1, 1, 1, 2}), 0.5, 3,
                           view(kZpW, Layout::OIHW, {2, 1, 1, 2}), {0.25, 1.0, 1.0}, {0}, 1.0, 0);
      },
      {"w_scale.size = 3"}));
}

TEST(OnnxErrors, QLinearConvOutputTypeAndBias) {
  EXPECT_TRUE(throws<InvalidArgument>(
      [] {
        onnx::qlinear_conv(view(kZpX, Layout::NCHW, {1, 1, 1, 2}), 0.5, 3,
                           view(kZpW, Layout::OIHW, {2, 1, 1, 2}), {0.25}, {0}, 1.0, 0, {}, {},
                           DType::s32);
      },
      {"y_dtype = s32: QLinearConv outputs uint8 or int8"}));
  const std::vector<std::int32_t> short_bias{1};
  EXPECT_TRUE(throws<ShapeMismatch>(
      [&] {
        onnx::qlinear_conv(view(kZpX, Layout::NCHW, {1, 1, 1, 2}), 0.5, 3,
                           view(kZpW, Layout::OIHW, {2, 1, 1, 2}), {0.25}, {0}, 1.0, 0,
                           std::span<const std::int32_t>(short_bias));
      },
      {"B.size = 1: QLinearConv's B holds one value per output channel (2)"}));
}

TEST(OnnxErrors, ConvTransposeRules) {
  const auto call = [](onnx::ConvTransposeAttributes a) { return [a] { transposed(a); }; };
  onnx::ConvTransposeAttributes a;
  a.output_shape = {1, 4};
  a.pads = {0, 1, 0, 0};
  EXPECT_TRUE(throws<InvalidArgument>(call(a),
                                      {"pads = [0, 1, 0, 0]: pads are derived from output_shape"}));
  a = {};
  a.output_shape = {4};
  EXPECT_TRUE(
      throws<InvalidArgument>(call(a), {"output_shape = [4]: holds the 2 spatial output sizes"}));
  a = {};
  a.output_shape = {1, 7};  // the natural width is 5
  EXPECT_TRUE(throws<ShapeMismatch>(call(a), {"output_shape[1] = 7: asks for an output larger"}));
  a = {};
  a.auto_pad = "VALID";
  a.output_shape = {1, 4};
  EXPECT_TRUE(throws<InvalidArgument>(call(a), {"auto_pad = VALID: VALID fixes the padding at 0"}));
  a = {};
  a.output_padding = {0, 2};  // stride 2: at most 1
  EXPECT_TRUE(throws<InvalidArgument>(call(a), {"output_padding[1] = 2"}));
  const S8 wrong_c{1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(throws<ShapeMismatch>(
      [&] {
        onnx::conv_transpose_integer(view(kTx, Layout::NCHW, {1, 1, 1, 2}),
                                     view(wrong_c, Layout::IOHW, {2, 1, 1, 3}));
      },
      {"w.shape = [2, 1, 1, 3]: ConvTranspose weights are [C, M/group, kh, kw]"}));
  // SAME with a 1-wide kernel and stride 2 asks for 2·2 = 4 columns, but at most 2·1 + 1 = 3
  // come out without negative padding.
  const S8 one{1};
  onnx::ConvTransposeAttributes same;
  same.auto_pad = "SAME_UPPER";
  same.strides = {1, 2};
  EXPECT_TRUE(throws<ShapeMismatch>(
      [&] {
        onnx::conv_transpose_integer(view(kTx, Layout::NCHW, {1, 1, 1, 2}),
                                     view(one, Layout::IOHW, {1, 1, 1, 1}), 0, {0}, same);
      },
      {"auto_pad output width = 4"}));
}

}  // namespace
