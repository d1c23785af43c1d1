// SPDX-License-Identifier: Apache-2.0
// tvm and tvm_f32 (SPEC §4): TVM's qnn.requantize after qnn.conv2d, in int64 fixed point (tvm) or
// in float32 (tvm_f32), with its UPWARD or TONEAREST rounding.
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {
namespace {

// M = f64(f32(sx)·f32(sw)) / f64(f32(sy)) as a Q31 multiplier and exponent, and as f32(M).
void derive(const DeriveArgs& a, ChannelConstants& c) {
  const float si = f32(a.input_scale) * f32(a.weight_scale);
  require_multiplier(si, "input_scale*weight_scale", a.channel);
  // TVM holds scales as float32 constants: sy is a binary32 value before it is widened.
  const double m = static_cast<double>(si) / static_cast<double>(f32(a.output_scale));
  require_multiplier(m, "output_multiplier", a.channel);
  const FixedPointMultiplier fpm = quantize_multiplier(m);
  c.q31 = fpm.q31;
  c.shift = fpm.exponent;
  c.scale_f32 = f32(m);
  if (a.desc.scheme.kind == SchemeKind::tvm_f32) {
    require_multiplier(c.scale_f32, "output_multiplier", a.channel);
  }
}

double round_tvm(double v, Rounding rounding) {
  return rounding == Rounding::upward ? round_half_up(v) : round_half_away(v);
}

// e ≤ 30: r = (p + 2^(T−1)) >> T with T = 31 − e (the left shift by e and the right shift by 31
// cancel); T > 62 leaves |p| < 2^62 < 2^(T−1), so r = 0. e = 31, 32: r = p·2^(e−31) exactly.
// e > 32: |acc·M| ≥ 2^32 whenever acc ≠ 0, beyond every output range: acc·2^32 keeps the sign and
// is far enough. So 64-bit lanes compute exactly what apply_tvm_wide() does in 128 bits.
VectorLane vector_lane(const ChannelConstants& c, Rounding rounding) {
  VectorLane lane;
  lane.q31 = c.shift > 32 ? 1 : (c.shift <= 30 && 31 - c.shift > 62 ? 0 : c.q31);
  lane.shift_left = c.shift > 32 ? 32 : (c.shift >= 31 ? c.shift - 31 : 0);
  lane.shift_right = c.shift >= 31 ? 0 : (31 - c.shift > 62 ? 1 : 31 - c.shift);
  lane.round_down = rounding == Rounding::tonearest && c.shift < 31 ? 1 : 0;
  return lane;
}

}  // namespace

extern const SchemeUnit kTvm{
    derive,
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      return apply_tvm_wide(SchemeKind::tvm, with_bias(acc, c), c, limits);
    },
    round_tvm, false, vector_lane};

extern const SchemeUnit kTvmF32{
    derive,
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      return apply_tvm_wide(SchemeKind::tvm_f32, with_bias(acc, c), c, limits);
    },
    round_tvm, true, nullptr};

}  // namespace qconv::detail::scheme

namespace qconv::detail {

std::int32_t apply_tvm_wide(SchemeKind kind, std::int64_t a, const ChannelConstants& c,
                            const StageLimits& limits) {
  if (kind == SchemeKind::tvm_f32) {
    // v = f32(f32(acc)·f32(M)) + zy in f32; UPWARD: floor(v + 0.5); TONEAREST: half away from zero.
    const float v = static_cast<float>(a) * c.scale_f32 + static_cast<float>(limits.zero_point);
    const float r = limits.rounding == Rounding::upward ? std::floor(v + 0.5f) : std::round(v);
    return static_cast<std::int32_t>(clamp_to(static_cast<double>(r), limits.lo, limits.hi));
  }
  // tvm: p = (s64(acc) << max(e, 0)) · q31, then a rounding right shift by T = 31 + max(−e, 0).
  // Computed in 128 bits: TVM's int64 would overflow only where the output saturates anyway.
  if (a == 0) return scheme::finish(0, limits);
  if (c.shift > 32) {  // |acc · M| ≥ 2^32: beyond every output range
    return scheme::finish(a > 0 ? (std::int64_t{1} << 40) : -(std::int64_t{1} << 40), limits);
  }
  const __int128 p = (static_cast<__int128>(a) << std::max(c.shift, 0)) * c.q31;
  const int t = 31 + std::max(-c.shift, 0);
  if (t > 100) return scheme::finish(0, limits);  // |p| < 2^95 < 2^(T−1): the rounded quotient is 0
  const __int128 half = static_cast<__int128>(1) << (t - 1);
  const __int128 nudge = (limits.rounding == Rounding::upward || p >= 0) ? half : half - 1;
  // |value| < 2^33 and M < 2^33 bound the quotient by 2^66: saturate before narrowing to 64 bits.
  const __int128 limit = static_cast<__int128>(1) << 40;
  return scheme::finish(static_cast<std::int64_t>(std::clamp((p + nudge) >> t, -limit, limit)),
                        limits);
}

ChannelConstants derive_requantize(SchemeKind kind, double input_scale, double output_scale,
                                   std::int64_t o) {
  const float si = scheme::f32(input_scale);
  const double m = static_cast<double>(si) / static_cast<double>(scheme::f32(output_scale));
  scheme::require_multiplier(m, "input_scale/output_scale", o);
  const FixedPointMultiplier fpm = quantize_multiplier(m);
  ChannelConstants c;
  c.q31 = fpm.q31;
  c.shift = fpm.exponent;
  c.scale_f32 = scheme::f32(m);
  if (kind == SchemeKind::tvm_f32)
    scheme::require_multiplier(c.scale_f32, "input_scale/output_scale", o);
  return c;
}

}  // namespace qconv::detail
