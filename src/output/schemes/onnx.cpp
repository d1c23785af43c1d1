// SPDX-License-Identifier: Apache-2.0
// onnx and onnxruntime (SPEC §4): QLinearConv as the ONNX reference implementation computes it, and
// as ONNX Runtime's CPU kernels do (MLAS MlasRequantizeOutput and the symmetric-convolution
// kernels). Both derive m = f32(f32(sx·sw[o]) / sy) per output channel, as qlinearconv.cc computes
// its output scales; they differ in how they apply it.
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {
namespace {

void derive(const DeriveArgs& a, ChannelConstants& c) {
  c.scale_f32 = (f32(a.input_scale) * f32(a.weight_scale)) / f32(a.output_scale);
  require_multiplier(c.scale_f32, "output_multiplier", a.channel);
}

// The reference: rne(f64(acc + b)·f64(m) + zy), the zero point added before rounding.
std::int32_t apply_reference(std::int32_t acc, const ChannelConstants& c,
                             const StageLimits& limits) {
  const double r = static_cast<double>(with_bias(acc, c)) * static_cast<double>(c.scale_f32) +
                   static_cast<double>(limits.zero_point);
  return static_cast<std::int32_t>(clamp_to(round_half_even(r), limits.lo, limits.hi));
}

// ONNX Runtime: v = f32(f32(acc + B) · m), all in binary32 (so acc + B loses precision above
// 2^24); r = rne(v); the zero point is added after rounding: q = clamp(r + zy, lo, hi). (ORT
// clamps v to [lo − zy, hi − zy] before rounding; with integer bounds that is the same.)
std::int32_t apply_onnxruntime(std::int32_t acc, const ChannelConstants& c,
                               const StageLimits& limits) {
  const float v = static_cast<float>(with_bias(acc, c)) * c.scale_f32;
  return finish(saturate_to_int64(round_half_even(v)), limits);
}

}  // namespace

extern const SchemeUnit kOnnx{derive, apply_reference, round_even, true, nullptr};
extern const SchemeUnit kOnnxruntime{derive, apply_onnxruntime, round_even, false, nullptr};

}  // namespace qconv::detail::scheme
