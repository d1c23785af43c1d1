// SPDX-License-Identifier: Apache-2.0
// TVM QNN face: qnn::conv2d, qnn::conv2d_transpose and qnn::requantize. Every expected value is
// worked out by hand in the comment beside it.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "face_test_support.hpp"
#include "qconv/faces/qnn.hpp"

namespace {

using namespace qconv::test_support;
namespace qnn = qconv::qnn;

// ---- conv2d: padding ----

// data [[3, 5], [7, 9]] with zero point 1, one 1x1 weight 2: inside the image (x - 1) * 2 =
// [[4, 8], [12, 16]]; padding stands for the real value 0, so it gives 0.
const U8 kPadData{3, 5, 7, 9};
const S8 kPadKernel{2};

qconv::Tensor pad_conv(std::vector<std::int64_t> padding) {
  qnn::Conv2DAttrs attrs;
  attrs.padding = std::move(padding);
  return qnn::conv2d(view(kPadData, Layout::NCHW, {1, 1, 2, 2}),
                     view(kPadKernel, Layout::OIHW, {1, 1, 1, 1}), 1, {0}, 1.0, {1.0}, {1, 1}, 1,
                     attrs);
}

TEST(QnnConv2d, FourValuePaddingIsTopLeftBottomRight) {
  // (top, left, bottom, right) = (1, 2, 0, 0): one row above, two columns on the left: 3 x 4.
  // Read as ttnn's (top, bottom, left, right) it would be 5 x 2 instead.
  const auto y = pad_conv({1, 2, 0, 0});
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 1, 3, 4}));
  EXPECT_EQ(ints(y), (std::vector<int>{0, 0, 0, 0,  //
                                       0, 0, 4, 8,  //
                                       0, 0, 12, 16}));
}

TEST(QnnConv2d, FourValuePaddingBottomAndRight) {
  // (top, left, bottom, right) = (0, 0, 2, 1): two rows below, one column on the right: 4 x 3.
  const auto y = pad_conv({0, 0, 2, 1});
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 1, 4, 3}));
  EXPECT_EQ(ints(y), (std::vector<int>{4, 8, 0,    //
                                       12, 16, 0,  //
                                       0, 0, 0,    //
                                       0, 0, 0}));
}

TEST(QnnConv2d, TwoValuePaddingIsHeightThenWidth) {
  // (pad_h, pad_w) = (0, 1): one column on each side: 2 x 4.
  const auto y = pad_conv({0, 1});
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 1, 2, 4}));
  EXPECT_EQ(ints(y), (std::vector<int>{0, 4, 8, 0, 0, 12, 16, 0}));
}

TEST(QnnConv2d, StridesAndDilationAreHeightThenWidth) {
  // data 1 x 5 = [1, 2, 3, 4, 5], kernel 1 x 2 = [1, 1], dilation (1, 2): taps x and x + 2,
  // stride (1, 2): outputs at x = 0 and 2: [1 + 3, 3 + 5] = [4, 8].
  const U8 data{1, 2, 3, 4, 5};
  const S8 kernel{1, 1};
  qnn::Conv2DAttrs attrs;
  attrs.strides = {1, 2};
  attrs.dilation = {1, 2};
  const auto y =
      qnn::conv2d(view(data, Layout::NCHW, {1, 1, 1, 5}), view(kernel, Layout::OIHW, {1, 1, 1, 2}),
                  0, {0}, 1.0, {1.0}, {1, 2}, 1, attrs);
  EXPECT_EQ(ints(y), (std::vector<int>{4, 8}));
}

// ---- conv2d: zero points ----

// data [5, 7] (1 x 2), input zero point 3: centred [2, 4]. Kernel 1 x 2, two output channels:
// o0 = [2, 4], o1 = [0, -1].
const U8 kZpData{5, 7};
const S8 kZpKernel{2, 4, 0, -1};

qconv::Tensor zero_point_conv(const qnn::ZeroPoints& kernel_zero_point) {
  return qnn::conv2d(view(kZpData, Layout::NCHW, {1, 1, 1, 2}),
                     view(kZpKernel, Layout::OIHW, {2, 1, 1, 2}), 3, kernel_zero_point, 0.5,
                     {0.25, 1.0}, {1, 2}, 2);
}

TEST(QnnConv2d, PerChannelKernelZeroPoints) {
  // zw = [1, -2]: o0 = 2·(2−1) + 4·(4−1) = 14; o1 = 2·(0+2) + 4·(−1+2) = 8.
  EXPECT_EQ(ints(zero_point_conv({1, -2})), (std::vector<int>{14, 8}));
}

TEST(QnnConv2d, PerTensorKernelZeroPoint) {
  // zw = 1 for both: o0 = 14; o1 = 2·(0−1) + 4·(−1−1) = −10.
  EXPECT_EQ(ints(zero_point_conv({1})), (std::vector<int>{14, -10}));
}

// ---- conv2d: layouts ----

// Logical weights w[o][c][kw] (kh = 1), 3 output channels, 2 input channels, kernel 1 x 2:
//   o0: c0 [1, 2],  c1 [3, 4]
//   o1: c0 [-1, 0], c1 [0, 2]
//   o2: c0 [0, -2], c1 [1, 0]
// data x[c][w] (H = 1, W = 2): c0 [1, 2], c1 [3, 4]. One output pixel:
//   o0 = 1 + 4 + 9 + 16 = 30;  o1 = −1 + 8 = 7;  o2 = −4 + 3 = −1.
struct KernelInLayout {
  const char* name;
  Layout layout;
  qconv::Shape shape;
  S8 values;
};

const std::vector<KernelInLayout> kKernels{
    {"OIHW", Layout::OIHW, {3, 2, 1, 2}, {1, 2, 3, 4, -1, 0, 0, 2, 0, -2, 1, 0}},
    // [o][kh][kw][c]
    {"OHWI", Layout::OHWI, {3, 1, 2, 2}, {1, 3, 2, 4, -1, 0, 0, 2, 0, 1, -2, 0}},
    // [kh][kw][c][o]
    {"HWIO", Layout::HWIO, {1, 2, 2, 3}, {1, -1, 0, 3, 0, 1, 2, 0, -2, 4, 2, 0}},
};

const U8 kDataNCHW{1, 2, 3, 4};  // [c][w]
const U8 kDataNHWC{1, 3, 2, 4};  // [w][c]

TEST(QnnConv2d, EveryKernelLayoutWithEveryDataLayoutGivesTheSameResult) {
  for (const auto& k : kKernels) {
    for (const bool nhwc : {false, true}) {
      SCOPED_TRACE(std::string(k.name) + (nhwc ? " NHWC" : " NCHW"));
      qnn::Conv2DAttrs attrs;
      attrs.data_layout = nhwc ? "NHWC" : "NCHW";
      attrs.kernel_layout = k.name;
      const auto data = nhwc ? view(kDataNHWC, Layout::NHWC, {1, 1, 2, 2})
                             : view(kDataNCHW, Layout::NCHW, {1, 2, 1, 2});
      const auto y = qnn::conv2d(data, view(k.values, k.layout, k.shape), 0, {0}, 1.0, {1.0},
                                 {1, 2}, 3, attrs);
      EXPECT_EQ(y.layout(), nhwc ? Layout::NHWC : Layout::NCHW);
      EXPECT_EQ(y.shape(), nhwc ? (qconv::Shape{1, 1, 1, 3}) : (qconv::Shape{1, 3, 1, 1}));
      EXPECT_EQ(ints(y), (std::vector<int>{30, 7, -1}));
    }
  }
}

TEST(QnnConv2d, DepthwiseHWOIMatchesOIHW) {
  // Depthwise, groups = C = 2, multiplier 2: output channel o = c·2 + m. Kernel 1 x 2:
  //   o0 (c0, m0) [1, 1]; o1 (c0, m1) [2, -1]; o2 (c1, m0) [-1, 3]; o3 (c1, m1) [0, 5].
  // data c0 [1, 2], c1 [3, 4]: o0 = 3, o1 = 2 − 2 = 0, o2 = −3 + 12 = 9, o3 = 20.
  const S8 oihw{1, 1, 2, -1, -1, 3, 0, 5};  // [o][1][1][kw]
  const S8 hwoi{1, 2, -1, 0, 1, -1, 3, 5};  // [1][kw][c][m]
  qnn::Conv2DAttrs attrs;
  attrs.groups = 2;
  attrs.data_layout = "NHWC";
  attrs.kernel_layout = "HWOI";
  const auto from_hwoi =
      qnn::conv2d(view(kDataNHWC, Layout::NHWC, {1, 1, 2, 2}),
                  view(hwoi, Layout::HWOI, {1, 2, 2, 2}), 0, {0}, 1.0, {1.0}, {1, 2}, 4, attrs);
  attrs.data_layout = "NCHW";
  attrs.kernel_layout = "OIHW";
  const auto from_oihw =
      qnn::conv2d(view(kDataNCHW, Layout::NCHW, {1, 2, 1, 2}),
                  view(oihw, Layout::OIHW, {4, 1, 1, 2}), 0, {0}, 1.0, {1.0}, {1, 2}, 4, attrs);
  EXPECT_EQ(ints(from_hwoi), (std::vector<int>{3, 0, 9, 20}));
  EXPECT_EQ(ints(from_oihw), (std::vector<int>{3, 0, 9, 20}));
}

TEST(QnnConv2d, OutLayoutDefaultsToDataLayoutAndCanDiffer) {
  // data 1 x 2 = [1, 2] (one channel), two 1x1 output channels with weights 1 and 10:
  // o0 = [1, 2], o1 = [10, 20]. NCHW flat: 1, 2, 10, 20; NHWC flat: 1, 10, 2, 20.
  const U8 data{1, 2};
  const S8 kernel{1, 10};
  const auto x = view(data, Layout::NCHW, {1, 1, 1, 2});
  const auto w = view(kernel, Layout::OIHW, {2, 1, 1, 1});
  const auto same = qnn::conv2d(x, w, 0, {0}, 1.0, {1.0}, {1, 1}, 2);
  EXPECT_EQ(same.layout(), Layout::NCHW);
  EXPECT_EQ(ints(same), (std::vector<int>{1, 2, 10, 20}));
  qnn::Conv2DAttrs attrs;
  attrs.out_layout = "NHWC";
  const auto other = qnn::conv2d(x, w, 0, {0}, 1.0, {1.0}, {1, 1}, 2, attrs);
  EXPECT_EQ(other.layout(), Layout::NHWC);
  EXPECT_EQ(other.shape(), (qconv::Shape{1, 1, 2, 2}));
  EXPECT_EQ(ints(other), (std::vector<int>{1, 10, 2, 20}));
}

TEST(QnnConv2d, WraparoundOnlyWhenAsked) {
  // K = 33100 products of 255 · 255 (u8 data and u8 kernel, zero points 0): the exact sum
  // 2,152,327,500 (65,025 · 33,100) exceeds 2^31 − 1; wrapped it is 2,152,327,500 − 2^32 =
  // −2,142,639,796.
  const U8 data(33100, 255);
  const U8 kernel(33100, 255);
  const auto x = view(data, Layout::NCHW, {1, 33100, 1, 1});
  const auto w = view(kernel, Layout::OIHW, {1, 33100, 1, 1});
  EXPECT_TRUE(throws<qconv::OverflowRisk>(
      [&] {
        qnn::conv2d(x, w, 0, {0}, 1.0, {1.0}, {1, 1}, 1);
      },
      {"allow_wraparound"}));
  qnn::Conv2DAttrs attrs;
  attrs.allow_wraparound = true;
  EXPECT_EQ(ints(qnn::conv2d(x, w, 0, {0}, 1.0, {1.0}, {1, 1}, 1, attrs)),
            (std::vector<int>{-2142639796}));
}

// ---- conv2d: errors ----

// A valid call: data NCHW [1, 2, 1, 2], kernel OIHW [3, 2, 1, 2]; each test breaks one thing.
struct Conv2dCall {
  U8 data = kDataNCHW;
  S8 kernel = kKernels[0].values;
  Layout data_tag = Layout::NCHW;
  qconv::Shape data_shape{1, 2, 1, 2};
  Layout kernel_tag = Layout::OIHW;
  qconv::Shape kernel_shape{3, 2, 1, 2};
  std::array<std::int64_t, 2> kernel_size{1, 2};
  std::int64_t channels = 3;
  qnn::Conv2DAttrs attrs;

  qconv::Tensor operator()() const {
    return qnn::conv2d(view(data, data_tag, data_shape), view(kernel, kernel_tag, kernel_shape), 0,
                       {0}, 1.0, {1.0}, kernel_size, channels, attrs);
  }
};

TEST(QnnConv2dErrors, TheValidCallRuns) {
  EXPECT_EQ(ints(Conv2dCall{}()), (std::vector<int>{30, 7, -1}));
}

TEST(QnnConv2dErrors, UnknownLayoutStrings) {
  Conv2dCall call;
  call.attrs.data_layout = "NCWH";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"data_layout = NCWH: unknown layout"}));
  call = {};
  call.attrs.kernel_layout = "OIWH";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"kernel_layout = OIWH: unknown layout"}));
  call = {};
  call.attrs.out_layout = "NWHC";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"out_layout = NWHC: unknown layout"}));
}

TEST(QnnConv2dErrors, LayoutsOfTheWrongKind) {
  Conv2dCall call;
  call.attrs.data_layout = "OIHW";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"data_layout = OIHW: data layouts are NCHW or NHWC"}));
  call = {};
  call.attrs.kernel_layout = "IOHW";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"kernel_layout = IOHW: qnn.conv2d kernels are"}));
  call = {};
  call.attrs.out_layout = "HWIO";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"out_layout = HWIO: data layouts are NCHW or NHWC"}));
}

TEST(QnnConv2dErrors, TensorLayoutTagsMustMatchTheLayoutStrings) {
  Conv2dCall call;
  call.attrs.data_layout = "NHWC";  // the tensor says NCHW
  EXPECT_TRUE(throws<ShapeMismatch>(call, {"data.layout = NCHW: must match data_layout = NHWC"}));
  call = {};
  call.attrs.kernel_layout = "OHWI";  // the tensor says OIHW
  EXPECT_TRUE(
      throws<ShapeMismatch>(call, {"kernel.layout = OIHW: must match kernel_layout = OHWI"}));
}

TEST(QnnConv2dErrors, OutDtypeMustBeInt32) {
  Conv2dCall call;
  call.attrs.out_dtype = "int8";
  EXPECT_TRUE(
      throws<InvalidArgument>(call, {"out_dtype = int8: the qnn convolutions output the int32"}));
  call.attrs.out_dtype = "int16";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"out_dtype = int16: unknown dtype"}));
}

TEST(QnnConv2dErrors, ChannelsMustAgreeWithTheKernel) {
  Conv2dCall call;
  call.channels = 4;
  EXPECT_TRUE(
      throws<ShapeMismatch>(call, {"channels = 4: must equal the kernel's output channels 3"}));
}

TEST(QnnConv2dErrors, KernelSizeMustAgreeWithTheKernel) {
  Conv2dCall call;
  call.kernel_size = {2, 1};  // the kernel is 1 x 2
  EXPECT_TRUE(throws<ShapeMismatch>(
      call, {"kernel_size = [2, 1]: must equal the kernel's (kh, kw) = (1, 2)"}));
}

TEST(QnnConv2dErrors, Groups) {
  Conv2dCall call;
  call.attrs.groups = 0;
  EXPECT_TRUE(throws<InvalidArgument>(call, {"groups = 0: must be between 1 and 2^31 - 1"}));
  call.attrs.groups = 3;  // the data has 2 channels
  EXPECT_TRUE(throws<InvalidArgument>(call, {"groups = 3: must divide the data's channels = 2"}));
  call.attrs.groups = 2;  // divides 2 but not channels = 3
  EXPECT_TRUE(throws<InvalidArgument>(call, {"groups = 2: must divide channels = 3"}));
}

TEST(QnnConv2dErrors, KernelInputChannelsTimesGroupsMustBeTheDataChannels) {
  Conv2dCall call;
  call.data = U8(6, 1);
  call.data_shape = {1, 3, 1, 2};  // 3 channels, the kernel's I is 2
  EXPECT_TRUE(throws<ShapeMismatch>(
      call, {"kernel.shape = [3, 2, 1, 2]: its input channels per group (2)"}));
}

TEST(QnnConv2dErrors, HWOIIsDepthwiseOnly) {
  Conv2dCall call;
  call.kernel_tag = Layout::HWOI;
  call.kernel_shape = {1, 2, 2, 3};
  call.channels = 6;
  call.attrs.kernel_layout = "HWOI";
  EXPECT_TRUE(throws<InvalidArgument>(call, {"groups = 1: kernel_layout HWOI is depthwise"}));
}

TEST(QnnConv2dErrors, PaddingCount) {
  Conv2dCall call;
  call.attrs.padding = {1, 1, 1};
  EXPECT_TRUE(throws<InvalidArgument>(
      call, {"padding = [1, 1, 1]: padding takes 1, 2 (pad_h, pad_w) or 4"}));
}

// ---- conv2d_transpose ----

// data 1 x 2 = [1, 2], kernel 1 x 3 = [1, 10, 100], stride (1, 2): out[2w + s] += x[w] · k[s]:
//   w0: out0 += 1, out1 += 10, out2 += 100;  w1: out2 += 2, out3 += 20, out4 += 200
//   natural output (width 2·1 + 3 = 5): [1, 10, 102, 20, 200].
const U8 kTData{1, 2};
const S8 kTKernel{1, 10, 100};

qconv::Tensor transpose_row(qnn::Conv2DTransposeAttrs attrs) {
  attrs.strides = {1, 2};
  return qnn::conv2d_transpose(view(kTData, Layout::NCHW, {1, 1, 1, 2}),
                               view(kTKernel, Layout::IOHW, {1, 1, 1, 3}), 0, {0}, 1.0, {1.0},
                               attrs);
}

TEST(QnnConv2dTranspose, NaturalOutput) {
  const auto y = transpose_row({});
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 1, 1, 5}));
  EXPECT_EQ(ints(y), (std::vector<int>{1, 10, 102, 20, 200}));
}

TEST(QnnConv2dTranspose, FourValuePaddingCropsTopLeftBottomRight) {
  qnn::Conv2DTransposeAttrs attrs;
  attrs.padding = {0, 1, 0, 0};  // left 1: drop the first column
  EXPECT_EQ(ints(transpose_row(attrs)), (std::vector<int>{10, 102, 20, 200}));
  attrs.padding = {0, 0, 0, 2};  // right 2: drop the last two
  EXPECT_EQ(ints(transpose_row(attrs)), (std::vector<int>{1, 10, 102}));
}

TEST(QnnConv2dTranspose, OutputPaddingAddsColumnsAtTheRight) {
  qnn::Conv2DTransposeAttrs attrs;
  attrs.output_padding = {0, 1};  // one more column, which no tap reaches: 0
  EXPECT_EQ(ints(transpose_row(attrs)), (std::vector<int>{1, 10, 102, 20, 200, 0}));
}

TEST(QnnConv2dTranspose, IOHWAndOIHWAgreeWithGroups) {
  // 2 input channels, 4 output channels, groups 2, 1x1 kernels: c0 feeds o0, o1 with [1, 2],
  // c1 feeds o2, o3 with [3, 4]. data [1, 2]: [1·1, 1·2, 2·3, 2·4] = [1, 2, 6, 8].
  const U8 data{1, 2};
  const S8 iohw{1, 2, 3, 4};  // [c][o within group]
  const S8 oihw{1, 2, 3, 4};  // [o][c within group]: the same memory for 1 channel per group
  qnn::Conv2DTransposeAttrs attrs;
  attrs.groups = 2;
  const auto x = view(data, Layout::NCHW, {1, 2, 1, 1});
  EXPECT_EQ(ints(qnn::conv2d_transpose(x, view(iohw, Layout::IOHW, {2, 2, 1, 1}), 0, {0}, 1.0,
                                       {1.0}, attrs)),
            (std::vector<int>{1, 2, 6, 8}));
  attrs.kernel_layout = "OIHW";
  EXPECT_EQ(ints(qnn::conv2d_transpose(x, view(oihw, Layout::OIHW, {4, 1, 1, 1}), 0, {0}, 1.0,
                                       {1.0}, attrs)),
            (std::vector<int>{1, 2, 6, 8}));
}

TEST(QnnConv2dTranspose, IOHWAndOIHWAgreeWithoutGroups) {
  // 2 input, 3 output channels, 1x1: y[o] = Σ_c x[c] · W[c→o]; W from c0 = [1, 2, 3], from
  // c1 = [10, 20, 30]; x = [1, 2]: [1 + 20, 2 + 40, 3 + 60] = [21, 42, 63].
  const U8 data{1, 2};
  const S8 iohw{1, 2, 3, 10, 20, 30};  // [c][o]
  const S8 oihw{1, 10, 2, 20, 3, 30};  // [o][c]
  const auto x = view(data, Layout::NCHW, {1, 2, 1, 1});
  qnn::Conv2DTransposeAttrs attrs;
  attrs.channels = 3;
  attrs.kernel_size = {1, 1};
  EXPECT_EQ(ints(qnn::conv2d_transpose(x, view(iohw, Layout::IOHW, {2, 3, 1, 1}), 0, {0}, 1.0,
                                       {1.0}, attrs)),
            (std::vector<int>{21, 42, 63}));
  attrs.kernel_layout = "OIHW";
  EXPECT_EQ(ints(qnn::conv2d_transpose(x, view(oihw, Layout::OIHW, {3, 2, 1, 1}), 0, {0}, 1.0,
                                       {1.0}, attrs)),
            (std::vector<int>{21, 42, 63}));
}

TEST(QnnConv2dTransposeErrors, Rules) {
  const auto x = view(kTData, Layout::NCHW, {1, 1, 1, 2});
  const auto w = view(kTKernel, Layout::IOHW, {1, 1, 1, 3});
  const auto run = [&](const qnn::Conv2DTransposeAttrs& attrs, qconv::ConstTensorView weight) {
    return [=] { qnn::conv2d_transpose(x, weight, 0, {0}, 1.0, {1.0}, attrs); };
  };
  qnn::Conv2DTransposeAttrs attrs;
  attrs.kernel_layout = "OHWI";
  EXPECT_TRUE(
      throws<InvalidArgument>(run(attrs, w), {"kernel_layout = OHWI: qnn.conv2d_transpose"}));
  attrs = {};
  attrs.kernel_layout = "OIHW";
  EXPECT_TRUE(
      throws<ShapeMismatch>(run(attrs, w), {"weight.layout = IOHW: must match kernel_layout"}));
  attrs = {};
  attrs.channels = 2;
  EXPECT_TRUE(
      throws<ShapeMismatch>(run(attrs, w), {"channels = 2: must equal the weight's output"}));
  attrs = {};
  attrs.kernel_size = {1, 2};
  EXPECT_TRUE(
      throws<ShapeMismatch>(run(attrs, w), {"kernel_size = [1, 2]: must equal the weight's"}));
  attrs = {};
  attrs.out_dtype = "uint8";
  EXPECT_TRUE(throws<InvalidArgument>(run(attrs, w), {"out_dtype = uint8"}));
  attrs = {};
  attrs.output_padding = {0, 1};  // stride 1: output padding must be 0
  EXPECT_TRUE(throws<InvalidArgument>(run(attrs, w), {"output_padding[1] = 1"}));
  const S8 two_inputs{1, 2, 3, 4, 5, 6};
  EXPECT_TRUE(
      throws<ShapeMismatch>(run({}, view(two_inputs, Layout::IOHW, {2, 1, 1, 3})),
                            {"weight.shape = [2, 1, 1, 3]: IOHW is [C_in, C_out/groups, kh, kw]"}));
}

// ---- requantize ----

// input_scale 0.5, output_scale 1: M = 0.5 exactly, so odd values land on exact ties.
const S32 kTies{1, -1, 3, -3, 5, -5};  // · 0.5 = 0.5, −0.5, 1.5, −1.5, 2.5, −2.5

qconv::Tensor requantize_ties(const char* rounding, const char* compute_dtype) {
  qnn::RequantizeAttrs attrs;
  attrs.rounding = rounding;
  attrs.compute_dtype = compute_dtype;
  return qnn::requantize(view(kTies, Layout::X, {6}), {0.5}, 0, 1.0, 0, attrs);
}

TEST(QnnRequantize, UpwardRoundsTiesTowardPlusInfinity) {
  for (const char* compute : {"int64", "float32"}) {
    SCOPED_TRACE(compute);
    EXPECT_EQ(ints(requantize_ties("UPWARD", compute)), (std::vector<int>{1, 0, 2, -1, 3, -2}));
  }
}

TEST(QnnRequantize, ToNearestRoundsTiesAwayFromZero) {
  for (const char* compute : {"int64", "float32"}) {
    SCOPED_TRACE(compute);
    EXPECT_EQ(ints(requantize_ties("TONEAREST", compute)), (std::vector<int>{1, -1, 2, -2, 3, -3}));
  }
}

TEST(QnnRequantize, Int64AndFloat32DifferWhereBinary32LosesTheValue) {
  // 2^24 + 1 = 16,777,217 times 0.5 is 8,388,608.5: the integer path rounds the tie up to
  // 8,388,609; the float path first rounds 2^24 + 1 to binary32 (2^24), giving 8,388,608.
  const S32 data{16777217};
  qnn::RequantizeAttrs attrs;
  attrs.out_dtype = "int32";
  EXPECT_EQ(ints(qnn::requantize(view(data, Layout::X, {1}), {0.5}, 0, 1.0, 0, attrs)),
            (std::vector<int>{8388609}));
  attrs.compute_dtype = "float32";
  EXPECT_EQ(ints(qnn::requantize(view(data, Layout::X, {1}), {0.5}, 0, 1.0, 0, attrs)),
            (std::vector<int>{8388608}));
}

TEST(QnnRequantize, ZeroPointsAndSaturation) {
  // input zero point 4: (10 − 4)·0.5 = 3, + output zero point 5 = 8;
  // (1000 − 4)·0.5 = 498 + 5 → 255 (uint8); (−1000 − 4)·0.5 = −502 + 5 → 0.
  const S32 data{10, 1000, -1000};
  qnn::RequantizeAttrs attrs;
  attrs.out_dtype = "uint8";
  const auto y = qnn::requantize(view(data, Layout::X, {3}), {0.5}, 4, 1.0, 5, attrs);
  EXPECT_EQ(y.dtype(), DType::u8);
  EXPECT_EQ(ints(y), (std::vector<int>{8, 255, 0}));
}

TEST(QnnRequantize, InputZeroPointIsSubtractedIn64Bits) {
  // INT32_MIN − 1 would wrap to INT32_MAX in 32 bits; in 64 bits it is −2^31 − 1, and
  // · 0.5 = −1,073,741,824.5, TONEAREST → −1,073,741,825.
  const S32 data{INT32_MIN};
  qnn::RequantizeAttrs attrs;
  attrs.out_dtype = "int32";
  attrs.rounding = "TONEAREST";
  EXPECT_EQ(ints(qnn::requantize(view(data, Layout::X, {1}), {0.5}, 1, 1.0, 0, attrs)),
            (std::vector<int>{-1073741825}));
}

// NCHW [1, 2, 1, 2]: channel 0 = [4, 8], channel 1 = [12, 16].
const S32 kPerChannel{4, 8, 12, 16};

qconv::Tensor requantize_along(std::int64_t axis) {
  qnn::RequantizeAttrs attrs;
  attrs.axis = axis;
  return qnn::requantize(view(kPerChannel, Layout::NCHW, {1, 2, 1, 2}), {0.5, 0.25}, 0, 1.0, 0,
                         attrs);
}

TEST(QnnRequantize, PerChannelAlongTheChannelAxis) {
  // axis 1 (C): channel 0 · 0.5 = [2, 4], channel 1 · 0.25 = [3, 4].
  const auto y = requantize_along(1);
  EXPECT_EQ(y.layout(), Layout::NCHW);
  EXPECT_EQ(y.shape(), (qconv::Shape{1, 2, 1, 2}));
  EXPECT_EQ(ints(y), (std::vector<int>{2, 4, 3, 4}));
  EXPECT_EQ(ints(requantize_along(-3)), (std::vector<int>{2, 4, 3, 4}));  // −3 is axis 1 of 4
}

TEST(QnnRequantize, PerChannelAlongTheLastAxis) {
  // axis −1 (W): column 0 · 0.5, column 1 · 0.25: [4·0.5, 8·0.25, 12·0.5, 16·0.25] = [2, 2, 6, 4].
  EXPECT_EQ(ints(requantize_along(-1)), (std::vector<int>{2, 2, 6, 4}));
}

TEST(QnnRequantize, OneDimensionalPerChannel) {
  // [8, 8, 8] with scales [1, 0.5, 0.25]: [8, 4, 2].
  const S32 data{8, 8, 8};
  EXPECT_EQ(ints(qnn::requantize(view(data, Layout::X, {3}), {1.0, 0.5, 0.25}, 0, 1.0, 0)),
            (std::vector<int>{8, 4, 2}));
}

TEST(QnnRequantizeErrors, Rules) {
  const auto data = view(kPerChannel, Layout::NCHW, {1, 2, 1, 2});
  const auto run = [&](qnn::Scales scales, double output_scale, std::int32_t output_zero_point,
                       qnn::RequantizeAttrs attrs) {
    return [=] { qnn::requantize(data, scales, 0, output_scale, output_zero_point, attrs); };
  };
  qnn::RequantizeAttrs attrs;
  attrs.compute_dtype = "float64";
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5}, 1.0, 0, attrs), {"compute_dtype = float64"}));
  attrs = {};
  attrs.rounding = "DOWNWARD";
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5}, 1.0, 0, attrs), {"rounding = DOWNWARD"}));
  attrs = {};
  attrs.out_dtype = "float32";
  EXPECT_TRUE(throws<InvalidArgument>(
      run({0.5}, 1.0, 0, attrs),
      {"out_dtype = float32: qnn.requantize outputs int8, uint8 or int32"}));
  attrs = {};
  attrs.axis = 4;
  EXPECT_TRUE(
      throws<InvalidArgument>(run({0.5}, 1.0, 0, attrs), {"axis = 4: must lie in [-4, 3]"}));
  attrs.axis = -5;
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5}, 1.0, 0, attrs), {"axis = -5"}));
  attrs = {};
  attrs.axis = 1;
  EXPECT_TRUE(
      throws<InvalidArgument>(run({0.5, 0.5, 0.5}, 1.0, 0, attrs),
                              {"input_scale.size = 3: holds 1 value or one per channel along "
                               "axis 1 (2)"}));
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5, -1.0}, 1.0, 0, attrs), {"input_scale[1] = -1"}));
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5}, 0.0, 0, attrs), {"output_scale = 0"}));
  EXPECT_TRUE(throws<InvalidArgument>(run({0.5}, 1.0, 128, attrs),
                                      {"output_zero_point = 128: must lie in the range of s8"}));
  const U8 bytes{1, 2};
  EXPECT_TRUE(
      throws<ShapeMismatch>([&] { qnn::requantize(view(bytes, Layout::X, {2}), {0.5}, 0, 1.0, 0); },
                            {"data.dtype = u8: qnn.requantize takes an int32 tensor"}));
}

}  // namespace
