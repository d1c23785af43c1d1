// SPDX-License-Identifier: Apache-2.0
// The examples shown in README.md, compiled and checked here so they stay true. Each expected
// value is worked out by hand in the comment beside it.
#include <gtest/gtest.h>
#include <pthreadpool.h>

#include <array>
#include <vector>

#include "qconv/qconv.hpp"

namespace {

using qconv::DType;
using qconv::Layout;

// README: "The faces" — TVM QNN. A 1x1 u8 image of 2 channels, one 1x1 filter, zero points 1 and
// 2: acc = (5 - 1)(4 - 2) + (7 - 1)(1 - 2) = 8 - 6 = 2.
TEST(ReadmeExamples, TvmQnnConv2d) {
  const std::array<std::uint8_t, 2> data{5, 7};
  const std::array<std::uint8_t, 2> kernel{4, 1};
  const qconv::Tensor out = qconv::qnn::conv2d(
      {std::span<const std::uint8_t>(data), DType::u8, Layout::NCHW, {1, 2, 1, 1}},
      {std::span<const std::uint8_t>(kernel), DType::u8, Layout::OIHW, {1, 2, 1, 1}},
      /*input_zero_point=*/1, /*kernel_zero_point=*/{2}, /*input_scale=*/0.5,
      /*kernel_scale=*/{0.25}, /*kernel_size=*/{1, 1}, /*channels=*/1,
      {.padding = {0, 0, 0, 0}, .out_dtype = "int32"});
  EXPECT_EQ(out.as<std::int32_t>()[0], 2);
}

// README: PyTorch. One pixel, one channel: acc = (10 - 2) * 3 = 24; fbgemm:
// t = 0.5 * 0.25 = 0.125, m = t / 0.5 = 0.25, v = 24 + 1.0 / 0.125 = 32, q = rne(32 * 0.25) + 4
// = 12.
TEST(ReadmeExamples, PyTorchFunctionalConv2d) {
  const std::array<std::uint8_t, 1> x{10};
  const std::array<std::int8_t, 1> w{3};
  const std::array<float, 1> bias{1.0f};
  qconv::functional::QTensor input{
      {std::span<const std::uint8_t>(x), DType::u8, Layout::NCHW, {1, 1, 1, 1}}, {0.5}, {2}};
  qconv::functional::QTensor weight{
      {std::span<const std::int8_t>(w), DType::s8, Layout::OIHW, {1, 1, 1, 1}}, {0.25}, {0}};
  const auto y = qconv::functional::conv2d(input, weight, std::span<const float>(bias),
                                           {.scale = 0.5, .zero_point = 4, .engine = "fbgemm"});
  EXPECT_EQ(y.values.as<std::uint8_t>()[0], 12);
}

// README: ONNX. QLinearConv of one pixel: acc = (6 - 2) * (3 - 1) + B = 8 + 2 = 10;
// m = 1 * 0.5 / 1 = 0.5; R = 10 * 0.5 + 3 = 8.
TEST(ReadmeExamples, OnnxQLinearConv) {
  const std::array<std::uint8_t, 1> x{6};
  const std::array<std::uint8_t, 1> w{3};
  const std::array<std::int32_t, 1> b{2};
  const qconv::Tensor y = qconv::onnx::qlinear_conv(
      {std::span<const std::uint8_t>(x), DType::u8, Layout::NCHW, {1, 1, 1, 1}}, 1.0, 2,
      {std::span<const std::uint8_t>(w), DType::u8, Layout::OIHW, {1, 1, 1, 1}}, {0.5}, {1}, 1.0, 3,
      std::span<const std::int32_t>(b), {.auto_pad = "SAME_UPPER"});
  EXPECT_EQ(y.as<std::uint8_t>()[0], 8);
}

// README: "Using it" — a Plan executed on the host's pthreadpool gives what qconv's own pool gives.
// One 2x2 channel {3, 4, 5, 6}, zero point 2, a 1x1 weight of 3, int32 scheme: 3, 6, 9, 12.
TEST(ReadmeExamples, ExecuteOnTheHostsPool) {
  qconv::ProblemDesc d;
  d.in_height = d.in_width = 2;
  d.input_zero_point = 2;
  d.output_dtype = DType::s32;
  d.scheme.kind = qconv::SchemeKind::int32;
  const std::array<std::int8_t, 1> w{3};
  const qconv::Plan plan = qconv::Plan::prepare(
      qconv::Problem(d), {std::span<const std::int8_t>(w), DType::s8, Layout::OHWI, {1, 1, 1, 1}});
  const std::array<std::uint8_t, 4> x{3, 4, 5, 6};
  std::array<std::int32_t, 4> y{};
  pthreadpool_t host_pool = pthreadpool_create(2);
  qconv::RunOptions options;
  options.pool = host_pool;
  plan.execute({std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC, {1, 2, 2, 1}},
               {std::span<std::int32_t>(y), DType::s32, Layout::NHWC, {1, 2, 2, 1}}, {}, options);
  pthreadpool_destroy(host_pool);
  EXPECT_EQ(y, (std::array<std::int32_t, 4>{3, 6, 9, 12}));
}

// README: preparation (ttnn). Prepared once, run twice with different batch sizes; then a call
// with another stride is refused by name. acc = (9 - 1) * 2 = 16, int32 scheme: 16.
TEST(ReadmeExamples, PrepareOnceRunMany) {
  const std::array<std::int8_t, 1> w{2};
  const qconv::ttnn::QuantizedWeights weights{
      {std::span<const std::int8_t>(w), DType::s8, Layout::OIHW, {1, 1, 1, 1}}, {1.0}, {0}};
  qconv::ttnn::Conv2dConfig conv_config;
  conv_config.dtype = "int32";
  qconv::ttnn::ComputeConfig compute_config;
  compute_config.scheme = "int32";
  compute_config.input_zero_point = 1;
  const auto prepared = qconv::ttnn::prepare_conv_weights(
      weights, "NHWC", "OIHW", /*in_channels=*/1, /*out_channels=*/1, /*batch_size=*/1,
      /*input_height=*/1, /*input_width=*/1, /*kernel_size=*/{1, 1}, /*stride=*/{1, 1},
      /*padding=*/{0, 0, 0, 0}, /*dilation=*/{1, 1}, /*has_bias=*/false, /*groups=*/1, conv_config,
      compute_config);

  const std::array<std::uint8_t, 2> two_images{9, 9};
  const auto result = qconv::ttnn::conv2d(
      {std::span<const std::uint8_t>(two_images), DType::u8, Layout::NHWC, {2, 1, 1, 1}}, prepared,
      1, 1, /*batch_size=*/2, 1, 1, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 1, nullptr, conv_config,
      compute_config, /*return_output_dim=*/true);
  EXPECT_EQ(result.output.shape(), (qconv::Shape{1, 1, 2, 1}));  // [1, 1, N·H·W, C]
  EXPECT_EQ(result.output.as<std::int32_t>()[0], 16);
  EXPECT_EQ(result.output.as<std::int32_t>()[1], 16);
  ASSERT_TRUE(result.output_dim.has_value());
  EXPECT_EQ((*result.output_dim)[0], 1);

  try {
    qconv::ttnn::conv2d(
        {std::span<const std::uint8_t>(two_images), DType::u8, Layout::NHWC, {2, 1, 1, 1}},
        prepared, 1, 1, 2, 1, 1, {1, 1}, /*stride=*/{2, 2}, {0, 0, 0, 0}, {1, 1}, 1, nullptr,
        conv_config, compute_config);
    FAIL() << "a changed stride must be refused";
  } catch (const qconv::PreparedMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("stride[0]: prepared for 1, given 2"), std::string::npos)
        << e.what();
  }
}

}  // namespace
