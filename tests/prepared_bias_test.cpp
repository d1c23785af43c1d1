// SPDX-License-Identifier: Apache-2.0
// Plan::prepare_bias: the bias checked and folded once, giving what a BiasView gives per call.
#include <gtest/gtest.h>

#include <string>
#include <type_traits>
#include <vector>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"

namespace {

using qconv::DType;
using qconv::Layout;

// No default constructor, so that `execute(x, y, {})` keeps meaning "no bias".
static_assert(!std::is_default_constructible_v<qconv::PreparedBias>);

// 1×1 conv, one input and two output channels, int32 scheme with an s32 bias:
// y[o] = (x − 1)·w[o] + b[o].
qconv::Plan tiny_plan(bool has_bias) {
  qconv::ProblemDesc d;
  d.out_channels = 2;
  d.input_zero_point = 1;
  d.output_dtype = DType::s32;
  d.scheme.kind = qconv::SchemeKind::int32;
  d.has_bias = has_bias;
  static const std::int8_t w[] = {3, -4};
  return qconv::Plan::prepare(
      qconv::Problem(d), {std::span<const std::int8_t>(w), DType::s8, Layout::OHWI, {2, 1, 1, 1}});
}

struct Call {
  std::uint8_t x[1] = {6};
  std::int32_t y[2] = {0, 0};
  qconv::ConstTensorView input{
      std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC, {1, 1, 1, 1}};
  qconv::TensorView output{std::span<std::int32_t>(y), DType::s32, Layout::NHWC, {1, 1, 1, 2}};
};

TEST(PreparedBias, GivesWhatTheBiasViewGivesAndCopiesTheValues) {
  const qconv::Plan plan = tiny_plan(true);
  std::vector<std::int32_t> bias = {100, -200};
  const qconv::PreparedBias prepared = plan.prepare_bias(std::span<const std::int32_t>(bias));
  bias = {0, 0};  // the prepared constants no longer depend on the caller's buffer
  Call call;
  plan.execute(call.input, call.output, prepared);
  EXPECT_EQ(call.y[0], 5 * 3 + 100);
  EXPECT_EQ(call.y[1], 5 * -4 - 200);
}

TEST(PreparedBias, NoBiasIsStillWrittenAsEmptyBraces) {
  const qconv::Plan plan = tiny_plan(false);
  Call call;
  plan.execute(call.input, call.output, {});
  EXPECT_EQ(call.y[0], 15);
  plan.execute(call.input, call.output, plan.prepare_bias({}));
  EXPECT_EQ(call.y[1], -20);
}

TEST(PreparedBias, IsCheckedLikeABiasViewAndBelongsToItsPlan) {
  const qconv::Plan with_bias = tiny_plan(true);
  const std::int32_t three[] = {1, 2, 3};
  try {
    (void)with_bias.prepare_bias(std::span<const std::int32_t>(three));
    ADD_FAILURE() << "a bias of 3 values was accepted for 2 channels";
  } catch (const qconv::ShapeMismatch& e) {
    EXPECT_EQ(std::string(e.what()), "bias.size = 3: needs out_channels = 2");
  }
  const float floats[] = {1.0f, 2.0f};
  EXPECT_THROW((void)with_bias.prepare_bias(std::span<const float>(floats)), qconv::ShapeMismatch);
  EXPECT_THROW((void)tiny_plan(false).prepare_bias(std::span<const std::int32_t>(three, 2)),
               qconv::PreparedMismatch);

  const qconv::Plan twin = tiny_plan(true);  // the same problem, prepared again
  const std::int32_t two[] = {1, 2};
  const qconv::PreparedBias foreign = twin.prepare_bias(std::span<const std::int32_t>(two));
  Call call;
  call.y[0] = 77;
  try {
    with_bias.execute(call.input, call.output, foreign);
    ADD_FAILURE() << "a PreparedBias of another plan was accepted";
  } catch (const qconv::PreparedMismatch& e) {
    EXPECT_NE(std::string(e.what()).find("bias: prepared for another plan"), std::string::npos);
  }
  EXPECT_EQ(call.y[0], 77);  // nothing written
}

}  // namespace
