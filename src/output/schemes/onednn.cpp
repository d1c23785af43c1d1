// SPDX-License-Identifier: Apache-2.0
// onednn (SPEC §4): PyTorch's onednn engine. v = (f32(acc) + bb) · os, ReLU on v when fused, the
// zero point added before rounding half to even.
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {
namespace {

void derive(const DeriveArgs& a, ChannelConstants& c) {
  const float rx = f32(1.0 / a.input_scale);
  const float ry = f32(1.0 / a.output_scale);
  const float rw = a.per_channel_scale ? 1.0f / f32(a.weight_scale) : f32(1.0 / a.weight_scale);
  const float bs = rx * rw;
  require_multiplier(bs, "1/(input_scale*weight_scale)", a.channel);
  c.scale_f32 = ry / bs;  // os
  require_multiplier(c.scale_f32, "output_multiplier", a.channel);
  require_finite_bias(a.bias, a.channel);
  c.bias_f32 = f32(a.bias) * bs;  // bb
}

std::int32_t apply(std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
  float v = (static_cast<float>(acc) + c.bias_f32) * c.scale_f32;
  if (limits.relu) v = std::max(v, 0.0f);
  const float shifted = v + static_cast<float>(limits.zero_point);  // before rounding
  return static_cast<std::int32_t>(
      clamp_to(static_cast<double>(round_half_even(shifted)), limits.lo, limits.hi));
}

}  // namespace

extern const SchemeUnit kOnednn{derive, apply, round_even, true, nullptr};

}  // namespace qconv::detail::scheme
