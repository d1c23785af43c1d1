// SPDX-License-Identifier: Apache-2.0
// onnx (SPEC §4): QLinearConv as the ONNX reference implementation computes it. m = f32(sx·sw) /
// f32(sy) in binary32; the output rne(f64(acc + b)·f64(m) + zy), the zero point before rounding.
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {

extern const SchemeUnit kOnnx{
    [](const DeriveArgs& a, ChannelConstants& c) {
      c.scale_f32 = (f32(a.input_scale) * f32(a.weight_scale)) / f32(a.output_scale);
      require_multiplier(c.scale_f32, "output_multiplier", a.channel);
    },
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      const double r = static_cast<double>(with_bias(acc, c)) * static_cast<double>(c.scale_f32) +
                       static_cast<double>(limits.zero_point);  // zero point before rounding
      return static_cast<std::int32_t>(clamp_to(round_half_even(r), limits.lo, limits.hi));
    },
    round_even, true, nullptr};

}  // namespace qconv::detail::scheme
