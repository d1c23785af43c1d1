// SPDX-License-Identifier: Apache-2.0
// Uses the installed headers and library: a 1x1 convolution whose result is known by hand.
#include <array>
#include <cstdio>
#include <qconv/qconv.hpp>

int main() {
  qconv::ProblemDesc desc;
  desc.in_channels = 2;
  desc.out_channels = 1;
  desc.scheme.kind = qconv::SchemeKind::int32;
  desc.output_dtype = qconv::DType::s32;
  desc.input_zero_point = 1;
  const qconv::Problem problem(desc);
  const std::array<std::int8_t, 2> weights{3, -2};
  const std::array<std::uint8_t, 2> input{5, 7};
  const auto plan = qconv::Plan::prepare(
      problem,
      {std::span<const std::int8_t>(weights), qconv::DType::s8, qconv::Layout::OHWI, {1, 1, 1, 2}});
  const qconv::Tensor out = plan.execute(
      {std::span<const std::uint8_t>(input), qconv::DType::u8, qconv::Layout::NHWC, {1, 1, 1, 2}});
  const int expected = (5 - 1) * 3 + (7 - 1) * -2;  // 0
  const int got = out.as<std::int32_t>()[0];
  std::printf("consumer: got %d, expected %d\n", got, expected);
  return got == expected ? 0 : 1;
}
