// SPDX-License-Identifier: Apache-2.0
// tflite and tflite_single (SPEC §4): TFLite's and CMSIS-NN's requantization, the Q31 multiplier
// applied with double rounding (SaturatingRoundingDoublingHighMul then RoundingDivideByPOT) or
// with one rounding (a 64-bit product shifted once).
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {
namespace {

FixedPointMultiplier tflite_multiplier(const ProblemDesc& d, std::int64_t o, double m) {
  const auto& s = d.scheme;
  if (!s.multiplier_q31.empty()) {
    const std::size_t i = s.multiplier_q31.size() == 1 ? 0 : static_cast<std::size_t>(o);
    return {s.multiplier_q31[i], s.shift[i]};
  }
  require_multiplier(m, "output_multiplier", o);
  FixedPointMultiplier fpm = quantize_multiplier(m);
  if (fpm.exponent < -31) return {};  // TFLite: too small to represent, the output is zy
  require(fpm.exponent <= 30, channel_field("output_multiplier", o), m,
          "the TFLite schemes need a shift of at most 30, i.e. input_scale * weight_scale / "
          "output_scale below 2^30 once rounded to Q31");
  return fpm;
}

void derive(const DeriveArgs& a, ChannelConstants& c) {
  // TFLite stores scales as float32 and widens them: f64(sx)·f64(sw[o])/f64(sy).
  const FixedPointMultiplier fpm = tflite_multiplier(a.desc, a.channel,
                                                     static_cast<double>(f32(a.input_scale)) *
                                                         static_cast<double>(f32(a.weight_scale)) /
                                                         static_cast<double>(f32(a.output_scale)));
  c.q31 = fpm.q31;
  c.shift = fpm.exponent;
}

}  // namespace

extern const SchemeUnit kTflite{
    derive,
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      const std::int32_t shifted =
          wrap_s32(std::int64_t{with_bias(acc, c)} << std::max(c.shift, 0));
      const std::int32_t high = saturating_rounding_doubling_high_mul(shifted, c.q31);
      return finish(rounding_divide_by_pot(high, std::max(-c.shift, 0)), limits);
    },
    round_away, false,
    [](const ChannelConstants& c, Rounding) {
      return VectorLane{c.q31, std::max(c.shift, 0), std::max(-c.shift, 0), 0};
    }};

extern const SchemeUnit kTfliteSingle{
    derive,
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      const std::int64_t p = std::int64_t{with_bias(acc, c)} * c.q31;
      return finish((p + (std::int64_t{1} << (30 - c.shift))) >> (31 - c.shift), limits);
    },
    round_away, false,
    [](const ChannelConstants& c, Rounding) {
      return VectorLane{c.q31, 0, 31 - c.shift, 0};
    }};

}  // namespace qconv::detail::scheme
