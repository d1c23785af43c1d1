// SPDX-License-Identifier: Apache-2.0
// onnxruntime (SPEC §4): ONNX Runtime's QLinearConv, its CPU kernels (MLAS MlasRequantizeOutput and
// the symmetric-convolution kernels).
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {

extern const SchemeUnit kOnnxruntime{
    // Derive: m = f32(f32(sx·sw[o]) / sy) per output channel, as qlinearconv.cc computes its
    // output scales.
    [](const DeriveArgs& a, ChannelConstants& c) {
      c.scale_f32 = (f32(a.input_scale) * f32(a.weight_scale)) / f32(a.output_scale);
      require_multiplier(c.scale_f32, "output_multiplier", a.channel);
    },
    // Apply: v = f32(f32(acc + B) · m), all in binary32 (so acc + B loses precision above 2^24);
    // r = rne(v); the zero point is added after rounding: q = clamp(r + zy, lo, hi). (ORT clamps v
    // to [lo − zy, hi − zy] before rounding; with integer bounds that is the same.)
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      const float v = static_cast<float>(with_bias(acc, c)) * c.scale_f32;
      return finish(saturate_to_int64(round_half_even(v)), limits);
    },
    round_even, false, nullptr};

}  // namespace qconv::detail::scheme
