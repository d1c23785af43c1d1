// SPDX-License-Identifier: Apache-2.0
// The rounding and fixed-point primitives the frameworks use, each exactly as they define it.
#pragma once

#include <cfenv>
#include <cmath>
#include <cstdint>
#include <limits>

namespace qconv::detail {

// Round half to even, in the type's own precision (the default FP environment is round-to-nearest).
inline float round_half_even(float v) { return std::nearbyint(v); }
inline double round_half_even(double v) { return std::nearbyint(v); }

// Round half away from zero (C's round()).
inline double round_half_away(double v) { return std::round(v); }
inline float round_half_away(float v) { return std::round(v); }

// Round half toward +infinity. Not floor(v + 0.5): that sum is itself rounded, so the largest
// double below 0.5 would come out as 1. The fraction v − floor(v) is exact for every double.
inline double round_half_up(double v) {
  const double below = std::floor(v);
  return v - below >= 0.5 ? below + 1.0 : below;
}

// Two's-complement wrap of an exact integer into s32 (what a 32-bit accumulator register holds).
inline std::int32_t wrap_s32(std::int64_t v) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
}

// Clamps a value of any real magnitude into [lo, hi] and converts it; NaN never reaches here
// (every derived constant is checked finite at preparation).
inline std::int64_t clamp_to(double v, std::int64_t lo, std::int64_t hi) {
  if (v <= static_cast<double>(lo)) return lo;
  if (v >= static_cast<double>(hi)) return hi;
  return static_cast<std::int64_t>(v);
}

inline std::int64_t clamp_to(std::int64_t v, std::int64_t lo, std::int64_t hi) {
  return v < lo ? lo : (v > hi ? hi : v);
}

// gemmlowp / TFLite SaturatingRoundingDoublingHighMul: a·b / 2^31 rounded to nearest, written as
// gemmlowp writes it (a nudge of 2^30 or 1 − 2^30, then a division that truncates toward zero).
// That makes ties round toward +infinity for either sign — −0.5 gives 0, not −1 — which is what
// ARM's VQRDMULH computes; it is not "half away from zero". The one overflow case,
// INT32_MIN·INT32_MIN, saturates to INT32_MAX.
inline std::int32_t saturating_rounding_doubling_high_mul(std::int32_t a, std::int32_t b) {
  if (a == b && a == std::numeric_limits<std::int32_t>::min()) {
    return std::numeric_limits<std::int32_t>::max();
  }
  const std::int64_t ab = static_cast<std::int64_t>(a) * static_cast<std::int64_t>(b);
  const std::int64_t nudge = ab >= 0 ? (std::int64_t{1} << 30) : (1 - (std::int64_t{1} << 30));
  return static_cast<std::int32_t>((ab + nudge) / (std::int64_t{1} << 31));  // truncating division
}

// gemmlowp / TFLite RoundingDivideByPOT: x / 2^exponent rounded half away from zero, 0 <= exponent
// <= 31.
inline std::int32_t rounding_divide_by_pot(std::int32_t x, int exponent) {
  const std::int64_t mask = (std::int64_t{1} << exponent) - 1;
  const std::int64_t remainder = static_cast<std::int64_t>(x) & mask;
  const std::int64_t threshold = (mask >> 1) + (x < 0 ? 1 : 0);
  return static_cast<std::int32_t>((static_cast<std::int64_t>(x) >> exponent) +
                                   (remainder > threshold ? 1 : 0));
}

// The (q31, exponent) pair of a positive real multiplier, as TFLite's QuantizeMultiplier and TVM's
// GetFixedPointMultiplierShift compute it: M = q31 · 2^(exponent − 31), q31 in [2^30, 2^31).
struct FixedPointMultiplier {
  std::int32_t q31 = 0;
  int exponent = 0;
};

inline FixedPointMultiplier quantize_multiplier(double m) {
  if (m == 0.0) return {};
  int exponent = 0;
  const double fraction = std::frexp(m, &exponent);
  auto q = static_cast<std::int64_t>(std::round(fraction * 2147483648.0));  // half away from zero
  if (q == (std::int64_t{1} << 31)) {
    q /= 2;
    ++exponent;
  }
  return {static_cast<std::int32_t>(q), exponent};
}

}  // namespace qconv::detail
