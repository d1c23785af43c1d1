// SPDX-License-Identifier: Apache-2.0
#include <gtest/gtest.h>

#include <array>

#include "qconv/plan.hpp"

TEST(Smoke, OnePixelOneChannel) {
  qconv::ProblemDesc d;
  d.scheme.kind = qconv::SchemeKind::int32;
  d.output_dtype = qconv::DType::s32;
  d.input_zero_point = 3;
  const qconv::Problem p(d);
  std::array<std::int8_t, 1> w{-2};
  std::array<std::uint8_t, 1> x{10};
  std::array<std::int32_t, 1> y{0};
  auto plan = qconv::Plan::prepare(
      p, {std::span<const std::int8_t>(w), qconv::DType::s8, qconv::Layout::OHWI, {1, 1, 1, 1}});
  plan.execute(
      {std::span<const std::uint8_t>(x), qconv::DType::u8, qconv::Layout::NHWC, {1, 1, 1, 1}},
      {std::span<std::int32_t>(y), qconv::DType::s32, qconv::Layout::NHWC, {1, 1, 1, 1}});
  EXPECT_EQ(y[0], (10 - 3) * -2);
}
