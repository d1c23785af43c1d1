// SPDX-License-Identifier: Apache-2.0
// SPEC §4 written out literally and independently of src/output: every output scheme's formula
// with exact integer arithmetic (__int128) and explicit binary32 steps, counting the exact ties it
// meets. The expected value of the output-scheme tests and of the differential test, so that a
// wrong rounding in the library cannot also be the expected one.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>

#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::test::spec {

using qconv::DType;
using qconv::Rounding;
using qconv::SchemeKind;

inline constexpr std::int32_t kMin32 = std::numeric_limits<std::int32_t>::min();
inline constexpr std::int32_t kMax32 = std::numeric_limits<std::int32_t>::max();

using Int = __int128;

// Every rounding decision below counts the exact ties it meets, so the test can insist that it
// exercised them.
inline std::int64_t g_ties = 0;

inline float f32(double v) { return static_cast<float>(v); }
// One binary32 operation: done in binary64 and rounded once, which is exactly the binary32 result
// for +, −, ×, ÷ of binary32 operands (53 ≥ 2·24 + 2, so the double rounding is innocuous).
inline float mul(float a, float b) { return f32(static_cast<double>(a) * static_cast<double>(b)); }
inline float div(float a, float b) { return f32(static_cast<double>(a) / static_cast<double>(b)); }
inline float add(float a, float b) { return f32(static_cast<double>(a) + static_cast<double>(b)); }
inline float from_int(std::int64_t v) {
  return f32(static_cast<double>(v));
}  // |v| < 2^53: exact first

enum class Mode { half_even, half_up, half_away };

// Rounds a real held exactly in a double, deciding by its fractional part.
inline double round_real(double x, Mode mode) {
  if (!std::isfinite(x)) return x;
  const double below = std::floor(x);
  const double fraction = x - below;  // exact
  if (fraction < 0.5) return below;
  if (fraction > 0.5) return below + 1;
  ++g_ties;
  switch (mode) {
    case Mode::half_even: return std::fmod(below, 2.0) == 0.0 ? below : below + 1;
    case Mode::half_up: return below + 1;
    case Mode::half_away: return x < 0 ? below : below + 1;
  }
  return below;
}

// N / 2^k rounded, by quotient and remainder.
inline Int round_ratio(Int n, int k, Mode mode) {
  if (k <= 0) return n * (Int{1} << -k);
  if (k > 120) return 0;  // every |n| used here is below 2^100
  const Int d = Int{1} << k;
  Int q = n / d;
  Int r = n - q * d;
  if (r < 0) {
    q -= 1;
    r += d;
  }  // now n = q·d + r with 0 ≤ r < d
  if (2 * r < d) return q;
  if (2 * r > d) return q + 1;
  ++g_ties;
  switch (mode) {
    case Mode::half_even: return q % 2 == 0 ? q : q + 1;
    case Mode::half_up: return q + 1;
    case Mode::half_away: return n < 0 ? q : q + 1;
  }
  return q;
}

inline std::int32_t wrap32(std::int64_t v) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(v)));
}

// (q31, e) with M = q31·2^(e − 31), q31 = M's fraction in [0.5, 1) times 2^31 rounded half away.
struct Q31 {
  std::int64_t q = 0;
  int e = 0;
};
inline Q31 quantize(double m) {
  const int e = std::ilogb(m) + 1;
  const double scaled = std::scalbn(m, 31 - e);  // in [2^30, 2^31), exact
  auto q = static_cast<std::int64_t>(round_real(scaled, Mode::half_away));
  if (q == (std::int64_t{1} << 31)) return {std::int64_t{1} << 30, e + 1};
  return {q, e};
}

struct Params {
  SchemeKind kind = SchemeKind::int32;
  Rounding rounding = Rounding::upward;
  DType out = DType::s32;
  bool relu = false;
  double sx = 1, sw = 1, sy = 1;
  bool per_channel = false;
  std::int32_t zy = 0;
  bool has_bias = false;
  float fbias = 0;
  std::int32_t sbias = 0;
  bool given = false;
  std::int32_t q31 = 0;
  int shift = 0;
};

inline std::int64_t low(const Params& p) {
  const std::int64_t lo = p.out == DType::u8 ? 0 : p.out == DType::s8 ? -128 : kMin32;
  return p.relu ? std::max<std::int64_t>(lo, p.zy) : lo;
}
inline std::int64_t high(const Params& p) {
  return p.out == DType::u8 ? 255 : p.out == DType::s8 ? 127 : kMax32;
}

inline std::int64_t clamp_real(const Params& p, double v) {
  if (v <= static_cast<double>(low(p))) return low(p);
  if (v >= static_cast<double>(high(p))) return high(p);
  return static_cast<std::int64_t>(v);
}
inline std::int64_t clamp_int(const Params& p, Int v) {
  if (v <= low(p)) return low(p);
  if (v >= high(p)) return high(p);
  return static_cast<std::int64_t>(v);
}

// `value` is the accumulator, or for qnn.requantize the 64-bit value minus its zero point.
inline std::int64_t output(const Params& p, std::int64_t value) {
  const std::int64_t with_bias = wrap32(value + (p.has_bias ? p.sbias : 0));
  switch (p.kind) {
    case SchemeKind::int32: return clamp_int(p, with_bias);
    case SchemeKind::fbgemm: {
      const float t = mul(f32(p.sx), f32(p.sw));
      const float m = div(t, f32(p.sy));
      float v = from_int(value);
      if (p.has_bias) v = add(v, div(p.fbias, t));
      return clamp_real(p, round_real(mul(v, m), Mode::half_even) + p.zy);
    }
    case SchemeKind::qnnpack: {
      const float m = mul(mul(f32(p.sw), f32(p.sx)), div(1.0f, f32(p.sy)));
      std::int64_t bq = 0;
      if (p.has_bias) {
        const float scaled = mul(p.fbias, div(1.0f, f32(p.sw * p.sx)));
        const double r = round_real(scaled, Mode::half_even);
        bq = r <= kMin32 ? kMin32 : r >= kMax32 ? kMax32 : static_cast<std::int64_t>(r);
      }
      const float v = mul(from_int(wrap32(value + bq)), m);
      const double r = std::fabs(v) >= 0x1p31 ? kMin32 : round_real(v, Mode::half_even);
      return clamp_real(p, r + p.zy);
    }
    case SchemeKind::onednn: {
      const float rx = f32(1.0 / p.sx);
      const float ry = f32(1.0 / p.sy);
      const float rw = p.per_channel ? div(1.0f, f32(p.sw)) : f32(1.0 / p.sw);
      const float bs = mul(rx, rw);
      const float os = div(ry, bs);
      float v = from_int(value);
      if (p.has_bias) v = add(v, mul(p.fbias, bs));
      v = mul(v, os);
      if (p.relu) v = std::max(v, 0.0f);
      return clamp_real(p, round_real(add(v, f32(p.zy)), Mode::half_even));
    }
    case SchemeKind::onnx: {
      const float m = div(mul(f32(p.sx), f32(p.sw)), f32(p.sy));
      // 32-bit × 24-bit fits the 64-bit long double significand: exact, then one rounding.
      const auto product = static_cast<double>(static_cast<long double>(with_bias) * m);
      return clamp_real(p, round_real(product + p.zy, Mode::half_even));
    }
    case SchemeKind::onnxruntime: {
      const float m = div(mul(f32(p.sx), f32(p.sw)), f32(p.sy));
      const float v = mul(from_int(with_bias), m);  // f32(acc + B), then a binary32 product
      return clamp_real(p, round_real(v, Mode::half_even) + p.zy);
    }
    case SchemeKind::tvm: {
      const Q31 fp = quantize(static_cast<double>(mul(f32(p.sx), f32(p.sw))) / f32(p.sy));
      const Mode mode = p.rounding == Rounding::upward ? Mode::half_up : Mode::half_away;
      const Int r = fp.e > 40 ? (with_bias > 0   ? Int{1} << 50
                                 : with_bias < 0 ? -(Int{1} << 50)
                                                 : 0)
                              : round_ratio(Int{with_bias} * fp.q, 31 - fp.e, mode);
      return clamp_int(p, r + p.zy);
    }
    case SchemeKind::tvm_f32: {
      const double m = static_cast<double>(mul(f32(p.sx), f32(p.sw))) / f32(p.sy);
      const float v = add(mul(from_int(with_bias), f32(m)), f32(p.zy));
      if (p.rounding == Rounding::tonearest) return clamp_real(p, round_real(v, Mode::half_away));
      if (v - std::floor(v) == 0.5f) ++g_ties;
      return clamp_real(p, std::floor(add(v, 0.5f)));  // the + 0.5 rounds in binary32 too
    }
    case SchemeKind::tflite:
    case SchemeKind::tflite_single: {
      std::int64_t q = p.q31;
      int shift = p.shift;
      if (!p.given) {
        // TFLite stores its scales as float32 and widens them.
        const Q31 fp = quantize(double{f32(p.sx)} * double{f32(p.sw)} / double{f32(p.sy)});
        q = fp.e < -31 ? 0 : fp.q;
        shift = fp.e < -31 ? 0 : fp.e;
      }
      if (p.kind == SchemeKind::tflite_single) {
        return clamp_int(p, round_ratio(Int{with_bias} * q, 31 - shift, Mode::half_up) + p.zy);
      }
      const std::int32_t x = wrap32(with_bias * (std::int64_t{1} << std::max(shift, 0)));
      const Int high_mul =
          (x == kMin32 && q == kMin32) ? Int{kMax32} : round_ratio(Int{x} * q, 31, Mode::half_up);
      return clamp_int(p, round_ratio(high_mul, std::max(-shift, 0), Mode::half_away) + p.zy);
    }
  }
  return 0;
}

// The multiplier the scheme applies to the accumulator, as an exact dyadic number (binary32
// values and q31·2^k are exact in binary64). Used only to pick accumulators that land on ties.
inline double effective_multiplier(const Params& p) {
  switch (p.kind) {
    case SchemeKind::int32: return 1.0;
    case SchemeKind::fbgemm: return div(mul(f32(p.sx), f32(p.sw)), f32(p.sy));
    case SchemeKind::qnnpack: return mul(mul(f32(p.sw), f32(p.sx)), div(1.0f, f32(p.sy)));
    case SchemeKind::onednn: {
      const float rw = p.per_channel ? div(1.0f, f32(p.sw)) : f32(1.0 / p.sw);
      return div(f32(1.0 / p.sy), mul(f32(1.0 / p.sx), rw));
    }
    case SchemeKind::onnx:
    case SchemeKind::onnxruntime: return div(mul(f32(p.sx), f32(p.sw)), f32(p.sy));
    case SchemeKind::tvm_f32: return f32(static_cast<double>(mul(f32(p.sx), f32(p.sw))) / p.sy);
    case SchemeKind::tvm: {
      const Q31 fp = quantize(static_cast<double>(mul(f32(p.sx), f32(p.sw))) / f32(p.sy));
      return std::ldexp(static_cast<double>(fp.q), fp.e - 31);
    }
    case SchemeKind::tflite:
    case SchemeKind::tflite_single: {
      if (p.given) return std::ldexp(static_cast<double>(p.q31), p.shift - 31);
      // TFLite stores its scales as float32 and widens them.
      const Q31 fp = quantize(double{f32(p.sx)} * double{f32(p.sw)} / double{f32(p.sy)});
      return std::ldexp(static_cast<double>(fp.q), fp.e - 31);
    }
  }
  return 1.0;
}

// An accumulator whose product with the dyadic multiplier m = odd·2^-j is an exact half:
// acc = (2r + 1)·2^(j − 1). Returns false when no s32 value can do that.
inline bool tie_accumulator(double m, std::mt19937_64& rng, std::int32_t& acc) {
  if (m == 0.0) return false;
  int exponent = std::ilogb(m) - 52;
  auto significand = static_cast<std::int64_t>(std::scalbn(m, -exponent));
  while (significand % 2 == 0) {
    significand /= 2;
    ++exponent;
  }
  const int j = -exponent;
  if (j < 1 || j > 31) return false;
  const std::int64_t odd_limit = std::min<std::int64_t>((std::int64_t{1} << (32 - j)) - 1, 1 << 16);
  const std::int64_t half = std::uniform_int_distribution<std::int64_t>(0, odd_limit / 2)(rng);
  const std::int64_t odd = (rng() & 1 ? 1 : -1) * (2 * half + 1);
  acc = static_cast<std::int32_t>(odd * (std::int64_t{1} << (j - 1)));
  return true;
}

}  // namespace qconv::test::spec
