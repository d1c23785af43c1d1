// SPDX-License-Identifier: Apache-2.0
// fbgemm (SPEC §4): PyTorch's fbgemm and x86 engines. The float bias is folded into the
// accumulator's scale: v = f32(acc) + f32(b / t), q = rne(v · m) + zy.
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {

extern const SchemeUnit kFbgemm{
    [](const DeriveArgs& a, ChannelConstants& c) {
      const float t = f32(a.input_scale) * f32(a.weight_scale);  // t = f32(sx·sw[o])
      require_multiplier(t, "input_scale*weight_scale", a.channel);
      c.scale_f32 = t / f32(a.output_scale);  // m = f32(t / sy)
      require_multiplier(c.scale_f32, "output_multiplier", a.channel);
      require_finite_bias(a.bias, a.channel);
      c.bias_f32 = f32(a.bias) / t;  // f32(b[o] / t)
    },
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      const float v = static_cast<float>(acc) + c.bias_f32;
      return finish(saturate_to_int64(round_half_even(v * c.scale_f32)), limits);
    },
    round_even, false, nullptr};

}  // namespace qconv::detail::scheme
