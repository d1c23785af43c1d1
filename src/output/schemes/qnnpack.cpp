// SPDX-License-Identifier: Apache-2.0
// qnnpack (SPEC §4): PyTorch's qnnpack engine. The bias is quantized to s32 (bq) and added to the
// accumulator; v = f32(acc + bq) · m, rounded half to even, then the zero point.
#include <limits>

#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {
namespace {

constexpr double kTwo31 = 2147483648.0;

void derive(const DeriveArgs& a, ChannelConstants& c) {
  const double sx = a.input_scale, sw = a.weight_scale;
  c.scale_f32 = (f32(sw) * f32(sx)) * (1.0f / f32(a.output_scale));
  require_multiplier(c.scale_f32, "output_multiplier", a.channel);
  if (!a.desc.has_bias && !a.bias_present) return;  // no bias: bq = 0
  require_finite_bias(a.bias, a.channel);
  const float inverse = 1.0f / f32(sw * sx);  // f32(1.0f / f32(f64(sw)·f64(sx)))
  // An infinite reciprocal would turn a zero bias into NaN: the formula has no value then.
  require(std::isfinite(inverse), channel_field("1/(weight_scale*input_scale)", a.channel), inverse,
          "the bias scale's reciprocal overflows binary32; the qnnpack scheme cannot "
          "quantize a bias with these scales");
  const float scaled = f32(a.bias) * inverse;  // may be ±inf: clamp_s32 saturates it
  c.bias_s32 = static_cast<std::int32_t>(clamp_to(static_cast<double>(round_half_even(scaled)),
                                                  std::numeric_limits<std::int32_t>::min(),
                                                  std::numeric_limits<std::int32_t>::max()));
}

std::int32_t apply(std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
  const float v = static_cast<float>(with_bias(acc, c)) * c.scale_f32;
  // PyTorch's float-to-int conversion gives INT32_MIN for |v| ≥ 2^31 (docs/PEERS.md defect 6).
  const std::int64_t r = std::fabs(v) < kTwo31 ? static_cast<std::int64_t>(round_half_even(v))
                                               : std::numeric_limits<std::int32_t>::min();
  return finish(r, limits);
}

}  // namespace

extern const SchemeUnit kQnnpack{derive, apply, round_even, false, nullptr};

}  // namespace qconv::detail::scheme
