// SPDX-License-Identifier: Apache-2.0
// Regressions of issue 10 found by probing the faces as a careless caller would: arithmetic on
// attributes before they are checked (undefined behaviour, caught by the sanitizer job), errors
// in qconv's words instead of the caller's, a valid bias refused, a bare out-of-memory error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "face_test_support.hpp"
#include "qconv/faces/functional.hpp"
#include "qconv/faces/onnx.hpp"
#include "qconv/faces/qnn.hpp"
#include "qconv/faces/ttnn.hpp"

// Under AddressSanitizer (GCC says so by __SANITIZE_ADDRESS__, clang by __has_feature).
#if defined(__SANITIZE_ADDRESS__)
#define QCONV_TEST_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QCONV_TEST_UNDER_ASAN 1
#endif
#endif
#ifndef QCONV_TEST_UNDER_ASAN
#define QCONV_TEST_UNDER_ASAN 0
#endif

namespace {

using namespace qconv::test_support;
namespace onnx = qconv::onnx;
namespace qnn = qconv::qnn;
namespace ttnn = qconv::ttnn;
namespace functional = qconv::functional;

const U8 kX(16, 3);  // [1, 1, 4, 4]
const S8 kW(4, 1);   // [1, 1, 2, 2]

// ---- failure 7: no arithmetic on an attribute before its range is checked ----

TEST(FaceOverflow, OnnxSamePaddingWithAHugeDilationNamesTheDilation) {
  onnx::ConvAttributes a;
  a.auto_pad = "SAME_UPPER";
  a.dilations = {1, std::int64_t{1} << 62};
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        onnx::conv_integer(view(kX, Layout::NCHW, {1, 1, 4, 4}),
                           view(kW, Layout::OIHW, {1, 1, 2, 2}), 0, {0}, a);
      },
      {"dilations = [1, 4611686018427387904]: every dilation must be between 1 and 2^31 - 1"}));
  a.dilations = {};
  a.strides = {std::int64_t{1} << 62, 1};
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        onnx::conv_integer(view(kX, Layout::NCHW, {1, 1, 4, 4}),
                           view(kW, Layout::OIHW, {1, 1, 2, 2}), 0, {0}, a);
      },
      {"strides = [4611686018427387904, 1]"}));
}

TEST(FaceOverflow, OnnxTransposedOutputShapeAndPaddingAreCheckedBeforeUse) {
  const auto call = [](const onnx::ConvTransposeAttributes& a) {
    return [a] {
      onnx::conv_transpose_integer(view(kX, Layout::NCHW, {1, 1, 4, 4}),
                                   view(kW, Layout::IOHW, {1, 1, 2, 2}), 0, {0}, a);
    };
  };
  onnx::ConvTransposeAttributes a;
  a.output_shape = {std::numeric_limits<std::int64_t>::min(), 5};
  EXPECT_TRUE(throws<ShapeMismatch>(call(a), {"output_shape[0] = -9223372036854775808"}));
  a.output_shape = {5, std::int64_t{1} << 62};
  EXPECT_TRUE(throws<ShapeMismatch>(call(a), {"output_shape[1] = 4611686018427387904"}));
  a = {};
  a.auto_pad = "SAME_LOWER";
  a.output_padding = {std::numeric_limits<std::int64_t>::max(), 0};
  EXPECT_TRUE(throws<InvalidArgument>(call(a), {"output_padding = [9223372036854775807, 0]"}));
  // Never a padding the caller did not give.
  a.strides = {std::int64_t{1} << 61, 1};
  a.output_padding = {};
  try {
    call(a)();
    ADD_FAILURE() << "accepted";
  } catch (const qconv::Error& e) {
    EXPECT_EQ(std::string(e.what()).find("pad"), std::string::npos) << e.what();
  }
}

TEST(FaceOverflow, QnnGroupsAreCheckedBeforeTheyMultiply) {
  qnn::Conv2DTransposeAttrs t;
  t.groups = std::int64_t{1} << 62;
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        qnn::conv2d_transpose(view(kX, Layout::NCHW, {1, 1, 4, 4}),
                              view(kW, Layout::IOHW, {1, 1, 2, 2}), 0, {0}, 1.0, {1.0}, t);
      },
      {"groups = 4611686018427387904: must be between 1 and 2^31 - 1"}));
  qnn::Conv2DAttrs c;
  c.groups = std::numeric_limits<std::int64_t>::max();
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        qnn::conv2d(view(kX, Layout::NCHW, {1, 1, 4, 4}), view(kW, Layout::OIHW, {1, 1, 2, 2}), 0,
                    {0}, 1.0, {1.0}, {2, 2}, 1, c);
      },
      {"groups = 9223372036854775807"}));
}

// ---- failure 8: prepare_conv_bias takes every problem prepare_conv_weights takes ----

TEST(TtnnBias, ATfliteProblemWithTinyWeightScalesPreparesItsBias) {
  // Real multiplier 2^-40 · 1 / 2^-35 = 2^-5: valid, while a weight scale of 1 would give 2^35.
  ttnn::ComputeConfig compute;
  compute.scheme = "tflite";
  compute.input_scale = 1.0;
  compute.output_scale = std::ldexp(1.0, -35);
  ttnn::Conv2dConfig conv;
  conv.output_layout = "NCHW";
  conv.dtype = "int8";
  const ttnn::QuantizedWeights weights{
      view(kW, Layout::OIHW, {1, 1, 2, 2}), {std::ldexp(1.0, -40)}, {0}};
  const auto prepared = ttnn::prepare_conv_weights(weights, "NCHW", "OIHW", 1, 1, 1, 4, 4, {2, 2},
                                                   {1, 1}, {0}, {1, 1}, true, 1, conv, compute);
  const S32 bias{64};
  const auto prepared_bias =
      ttnn::prepare_conv_bias(view(bias, Layout::X, {1}), "NCHW", 1, 1, 1, 4, 4, {2, 2}, {1, 1},
                              {0}, {1, 1}, 1, conv, compute);
  const auto result = ttnn::conv2d(view(kX, Layout::NCHW, {1, 1, 4, 4}), prepared, 1, 1, 1, 4, 4,
                                   {2, 2}, {1, 1}, {0}, {1, 1}, 1, &prepared_bias, conv, compute);
  // acc = 4 · (3 · 1) = 12, + 64 = 76; · 2^-5 = 2.375 → 2.
  EXPECT_EQ(ints(result.output), std::vector<int>(9, 2));
}

// ---- failure 12: errors in the caller's words ----

TEST(FaceWords, TtnnNamesItsOwnArguments) {
  const ttnn::QuantizedWeights weights{view(kW, Layout::OIHW, {1, 1, 2, 2})};
  const auto prepare = [&](std::int64_t batch, std::int64_t height) {
    return [=] {
      ttnn::prepare_conv_weights(weights, "NHWC", "OIHW", 1, 1, batch, height, 4, {2, 2}, {1, 1},
                                 {0}, {1, 1}, false, 1);
    };
  };
  EXPECT_TRUE(throws<InvalidArgument>(prepare(0, 4), {"batch_size = 0: must be between"}));
  EXPECT_TRUE(throws<InvalidArgument>(prepare(1, -2), {"input_height = -2: must be between"}));
}

TEST(FaceWords, EachFaceNamesItsStrideAndPaddingArguments) {
  functional::Conv2dOptions options;
  options.stride = {1, 0};
  const functional::QTensor x{view(kX, Layout::NCHW, {1, 1, 4, 4})};
  const functional::QTensor w{view(kW, Layout::OIHW, {1, 1, 2, 2})};
  EXPECT_TRUE(throws<InvalidArgument>([&] { functional::conv2d(x, w, std::nullopt, options); },
                                      {"stride[1] = 0: must be between 1 and 2^31 - 1"}));
  qnn::Conv2DAttrs attrs;
  attrs.padding = {0, std::int64_t{1} << 40, 0, 0};  // (top, left, bottom, right)
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        qnn::conv2d(view(kX, Layout::NCHW, {1, 1, 4, 4}), view(kW, Layout::OIHW, {1, 1, 2, 2}), 0,
                    {0}, 1.0, {1.0}, {2, 2}, 1, attrs);
      },
      {"padding[left] = 1099511627776"}));
  onnx::ConvAttributes a;
  a.pads = {0, 0, std::int64_t{1} << 40, 0};  // [top, left, bottom, right]
  EXPECT_TRUE(throws<InvalidArgument>(
      [&] {
        onnx::conv_integer(view(kX, Layout::NCHW, {1, 1, 4, 4}),
                           view(kW, Layout::OIHW, {1, 1, 2, 2}), 0, {0}, a);
      },
      {"pads[2] = 1099511627776"}));
}

TEST(FaceWords, AnOutputTooLargeToAllocateSaysWhichAndHowLarge) {
#if QCONV_TEST_UNDER_ASAN
  GTEST_SKIP() << "AddressSanitizer aborts on allocations beyond its limit instead of failing them";
#else
  // 2 x 2 input, stride 2^24: a 2^24 x 2^24 int32 output is over 2^50 bytes, beyond any address
  // space.
  const U8 x(4, 1);
  const S8 w(1, 1);
  qnn::Conv2DTransposeAttrs t;
  t.strides = {std::int64_t{1} << 24, std::int64_t{1} << 24};
  try {
    qnn::conv2d_transpose(view(x, Layout::NCHW, {1, 1, 2, 2}), view(w, Layout::IOHW, {1, 1, 1, 1}),
                          0, {0}, 1.0, {1.0}, t);
    ADD_FAILURE() << "allocated 2^50 bytes";
  } catch (const std::bad_alloc& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.rfind("output: cannot allocate 1125900041060356 bytes", 0), 0u) << message;
    EXPECT_NE(message.find("[1, 1, 16777217, 16777217]"), std::string::npos) << message;
  }
#endif
}

}  // namespace
