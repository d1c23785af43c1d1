// SPDX-License-Identifier: Apache-2.0
// SPEC §4, one scheme per case. Each formula is written in the order the spec gives, with f32(·)
// as a float operation and f64(·) as a double operation; comments name the spec's symbols.
#include "output/output_stage.hpp"

// Every float operation below must round on its own: the library is built with -ffp-contract=off
// (CMakeLists.txt), or a compiler targeting a CPU with FMA would fuse `x * m + zy` (onnx, tvm_f32,
// onednn) into one rounding, even across statements, and silently change tie results.

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "core/check.hpp"
#include "output/rounding.hpp"

namespace qconv::detail {
namespace {

constexpr double kTwo31 = 2147483648.0;

float f32(double v) { return static_cast<float>(v); }

// A rounded real of any magnitude as an integer that still lies outside every output range
// when it is outside: converting a float beyond int64 directly is undefined.
std::int64_t saturate_to_int64(double v) {
  return static_cast<std::int64_t>(std::clamp(v, -0x1p40, 0x1p40));
}

std::string channel_field(std::string_view what, std::int64_t o) {
  return std::string(what) + "[" + std::to_string(o) + "]";
}

// Every derived multiplier must be a positive finite number, or the formula has no meaning.
void require_multiplier(double v, std::string_view what, std::int64_t o) {
  if (std::isfinite(v) && v > 0.0) return;  // the message is built only for a failure
  require(false, channel_field(what, o), v,
          "the scales give a multiplier that is zero or not finite in the scheme's precision; "
          "check input_scale, weight_scale and output_scale");
}

// A float bias is data: NaN or an infinity in it has no meaning in any formula. A finite bias whose
// scaled value overflows binary32 is not refused: the formula then gives ±infinity, which the
// output clamp turns into the low or high bound (qnnpack: clamp_s32), as SPEC §4 writes it.
void require_finite_bias(double b, std::int64_t o) {
  if (std::isfinite(b)) return;
  require(false, channel_field("bias", o), b, "a float bias must be finite");
}

// Rounds a real clamp bound the way the scheme rounds its outputs.
double round_like(SchemeKind kind, Rounding rounding, double v) {
  switch (kind) {
    case SchemeKind::tflite:
    case SchemeKind::tflite_single: return round_half_away(v);
    case SchemeKind::tvm:
    case SchemeKind::tvm_f32:
      return rounding == Rounding::upward ? round_half_up(v) : round_half_away(v);
    default: return round_half_even(v);
  }
}

// The schemes whose output is round(v + zy) rather than round(v) + zy. With an odd zero point the
// two differ on ties (rne, away), so the clamp bounds must follow the scheme here too.
bool adds_zero_point_before_rounding(SchemeKind kind) {
  return kind == SchemeKind::onnx || kind == SchemeKind::onednn || kind == SchemeKind::tvm_f32;
}

// A real clamp bound a becomes Q(a), the output the scheme gives for the real value a. Q is
// monotone, so clamping Q(v) to [Q(a), Q(b)] equals quantizing clamp(v, a, b) — what a fused clamp
// means. TFLite (CalculateActivationRangeQuantized) divides in binary32: zy + round(f32(f32(a) /
// f32(sy))); the other schemes have no fused clamp of their own and divide in binary64.
std::int64_t quantize_bound(const ProblemDesc& d, double real) {
  const SchemeKind kind = d.scheme.kind;
  const bool tflite = kind == SchemeKind::tflite || kind == SchemeKind::tflite_single;
  const double scaled =
      tflite ? static_cast<double>(f32(real) / f32(d.output_scale)) : real / d.output_scale;
  const double limit = 0x1p62;  // beyond every output range, and safe to convert
  if (adds_zero_point_before_rounding(kind)) {
    const double q = round_like(kind, d.scheme.rounding, scaled + d.output_zero_point);
    return static_cast<std::int64_t>(std::clamp(q, -limit, limit));
  }
  const double q = round_like(kind, d.scheme.rounding, scaled);
  return static_cast<std::int64_t>(std::clamp(q, -limit, limit)) + d.output_zero_point;
}

FixedPointMultiplier tflite_multiplier(const ProblemDesc& d, std::int64_t o, double m) {
  const auto& s = d.scheme;
  if (!s.multiplier_q31.empty()) {
    const std::size_t i = s.multiplier_q31.size() == 1 ? 0 : static_cast<std::size_t>(o);
    return {s.multiplier_q31[i], s.shift[i]};
  }
  require_multiplier(m, "output_multiplier", o);
  FixedPointMultiplier fpm = quantize_multiplier(m);
  if (fpm.exponent < -31)
    return {};  // TFLite: too small to represent, the output is the zero point
  require(fpm.exponent <= 30, channel_field("output_multiplier", o), m,
          "the TFLite schemes need a shift of at most 30, i.e. input_scale * weight_scale / "
          "output_scale below 2^30 once rounded to Q31");
  return fpm;
}

// onnxruntime (SPEC §4): ONNX Runtime's QLinearConv, its CPU kernels (MLAS
// MlasRequantizeOutput and the symmetric-convolution kernels). Derive: m = f32(f32(sx·sw[o]) / sy)
// per output channel, as qlinearconv.cc computes its output scales.
float onnxruntime_multiplier(double sx, double sw, double sy, std::int64_t o) {
  const float m = (f32(sx) * f32(sw)) / f32(sy);
  require_multiplier(m, "output_multiplier", o);
  return m;
}

// Apply: v = f32(f32(acc + B) · m), all in binary32 (so acc + B loses precision above 2^24);
// r = rne(v); the zero point is added after rounding: q = clamp(r + zy, lo, hi). (ORT clamps v to
// [lo − zy, hi − zy] before rounding; with integer bounds that is the same.)
std::int64_t onnxruntime_rounded(std::int32_t with_bias, float m) {
  return saturate_to_int64(round_half_even(static_cast<float>(with_bias) * m));
}

}  // namespace

OutputStage::OutputStage(const ProblemDesc& d, BiasView bias)
    : kind_(d.scheme.kind),
      rounding_(d.scheme.rounding),
      relu_(d.activation.kind == Activation::Kind::relu),
      zero_point_(d.output_zero_point) {
  lo_ = dtype_min(d.output_dtype);
  hi_ = dtype_max(d.output_dtype);
  if (relu_) lo_ = std::max<std::int64_t>(lo_, d.output_zero_point);
  if (d.activation.kind == Activation::Kind::clamp) {
    lo_ = std::max(lo_, quantize_bound(d, d.activation.min));
    hi_ = std::min(hi_, quantize_bound(d, d.activation.max));
    require(
        lo_ <= hi_, "activation",
        "clamp(" + describe_value(d.activation.min) + ", " + describe_value(d.activation.max) + ")",
        "the clamp range is empty once quantized and intersected with the output dtype's range");
  }

  const bool per_channel_scale = d.weight_scale.size() > 1;
  // One entry serves every channel when nothing differs between channels (channel() broadcasts
  // it): a Problem is validated without a table proportional to out_channels.
  const bool per_channel =
      per_channel_scale || bias.present() || d.scheme.multiplier_q31.size() > 1;
  const std::int64_t entries = per_channel ? d.out_channels : 1;
  channels_.resize(static_cast<std::size_t>(entries));
  for (std::int64_t o = 0; o < entries; ++o) {
    ChannelConstants& c = channels_[static_cast<std::size_t>(o)];
    const double sx = d.input_scale;
    const double sw = d.weight_scale[per_channel_scale ? static_cast<std::size_t>(o) : 0];
    const double sy = d.output_scale;
    const auto index = static_cast<std::size_t>(o);
    const double b = bias.is_float() ? bias.f32()[index] : 0.0;
    if (bias.present() && !bias.is_float()) c.bias_s32 = bias.s32()[index];

    switch (kind_) {
      case SchemeKind::int32: break;
      case SchemeKind::fbgemm: {
        const float t = f32(sx) * f32(sw);  // t = f32(sx·sw[o])
        require_multiplier(t, "input_scale*weight_scale", o);
        c.scale_f32 = t / f32(sy);  // m = f32(t / sy)
        require_multiplier(c.scale_f32, "output_multiplier", o);
        require_finite_bias(b, o);
        c.bias_f32 = f32(b) / t;  // f32(b[o] / t)
        break;
      }
      case SchemeKind::qnnpack: {
        c.scale_f32 = (f32(sw) * f32(sx)) * (1.0f / f32(sy));
        require_multiplier(c.scale_f32, "output_multiplier", o);
        if (!d.has_bias && !bias.present()) break;  // no bias: bq = 0
        require_finite_bias(b, o);
        const float inverse = 1.0f / f32(sw * sx);  // f32(1.0f / f32(f64(sw)·f64(sx)))
        // An infinite reciprocal would turn a zero bias into NaN: the formula has no value then.
        require(std::isfinite(inverse), channel_field("1/(weight_scale*input_scale)", o), inverse,
                "the bias scale's reciprocal overflows binary32; the qnnpack scheme cannot "
                "quantize a bias with these scales");
        const float scaled = f32(b) * inverse;  // may be ±inf: clamp_s32 saturates it
        c.bias_s32 = static_cast<std::int32_t>(clamp_to(
            static_cast<double>(round_half_even(scaled)), std::numeric_limits<std::int32_t>::min(),
            std::numeric_limits<std::int32_t>::max()));
        break;
      }
      case SchemeKind::onednn: {
        const float rx = f32(1.0 / sx);
        const float ry = f32(1.0 / sy);
        const float rw = per_channel_scale ? 1.0f / f32(sw) : f32(1.0 / sw);
        const float bs = rx * rw;
        require_multiplier(bs, "1/(input_scale*weight_scale)", o);
        c.scale_f32 = ry / bs;  // os
        require_multiplier(c.scale_f32, "output_multiplier", o);
        require_finite_bias(b, o);
        c.bias_f32 = f32(b) * bs;  // bb
        break;
      }
      case SchemeKind::onnx:
        c.scale_f32 = (f32(sx) * f32(sw)) / f32(sy);
        require_multiplier(c.scale_f32, "output_multiplier", o);
        break;
      case SchemeKind::onnxruntime: c.scale_f32 = onnxruntime_multiplier(sx, sw, sy, o); break;
      case SchemeKind::tvm:
      case SchemeKind::tvm_f32: {
        const float si = f32(sx) * f32(sw);
        require_multiplier(si, "input_scale*weight_scale", o);
        // TVM holds scales as float32 constants: sy is a binary32 value before it is widened.
        const double m = static_cast<double>(si) / static_cast<double>(f32(sy));
        require_multiplier(m, "output_multiplier", o);
        const FixedPointMultiplier fpm = quantize_multiplier(m);
        c.q31 = fpm.q31;
        c.shift = fpm.exponent;
        c.scale_f32 = f32(m);
        if (kind_ == SchemeKind::tvm_f32) require_multiplier(c.scale_f32, "output_multiplier", o);
        break;
      }
      case SchemeKind::tflite:
      case SchemeKind::tflite_single: {
        // TFLite stores scales as float32 and widens them: f64(sx)·f64(sw[o])/f64(sy).
        const FixedPointMultiplier fpm =
            tflite_multiplier(d, o,
                              static_cast<double>(f32(sx)) * static_cast<double>(f32(sw)) /
                                  static_cast<double>(f32(sy)));
        c.q31 = fpm.q31;
        c.shift = fpm.exponent;
        break;
      }
    }
  }
  derive_vectors();
}

// The vector form of the constants (VectorConstants): the same numbers, padded for 16 lanes, plus
// the tvm scheme's shifts rewritten so that 64-bit lanes compute exactly what apply_wide() does in
// 128 bits.
void OutputStage::derive_vectors() {
  VectorConstants& v = vectors_;
  const bool per_channel = channels_.size() > 1;
  v.channel_step = per_channel ? 1 : 0;
  const auto lanes = static_cast<std::size_t>(
      per_channel ? round_up(static_cast<std::int64_t>(channels_.size()), 16) + 16 : 16);
  v.zero_point = zero_point_;
  v.lo = static_cast<std::int32_t>(lo_);
  v.hi = static_cast<std::int32_t>(hi_);
  v.round_upward = rounding_ == Rounding::upward;
  const auto fill = [&](auto& array, auto value_of) {
    array.assign(lanes, {});
    for (std::size_t i = 0; i < lanes; ++i) {
      array[i] = value_of(channels_[per_channel ? std::min(i, channels_.size() - 1) : 0]);
    }
  };
  fill(v.bias_s32, [](const ChannelConstants& c) { return c.bias_s32; });
  fill(v.bias_f32, [](const ChannelConstants& c) { return c.bias_f32; });
  fill(v.scale_f32, [](const ChannelConstants& c) { return c.scale_f32; });
  fill(v.q31, [](const ChannelConstants& c) { return c.q31; });
  switch (kind_) {
    case SchemeKind::tvm: {
      // e ≤ 30: r = (p + 2^(T−1)) >> T with T = 31 − e (the left shift by e and the right shift
      // by 31 cancel); T > 62 leaves |p| < 2^62 < 2^(T−1), so r = 0. e = 31, 32: r = p·2^(e−31)
      // exactly. e > 32: |acc·M| ≥ 2^32 whenever acc ≠ 0, beyond every output range: acc·2^32
      // keeps the sign and is far enough.
      fill(v.q31, [](const ChannelConstants& c) {
        if (c.shift > 32) return 1;
        if (c.shift <= 30 && 31 - c.shift > 62) return 0;
        return c.q31;
      });
      fill(v.shift_left, [](const ChannelConstants& c) {
        return c.shift > 32 ? 32 : (c.shift >= 31 ? c.shift - 31 : 0);
      });
      fill(v.shift_right, [](const ChannelConstants& c) {
        if (c.shift >= 31) return 0;
        return 31 - c.shift > 62 ? 1 : 31 - c.shift;
      });
      const bool to_nearest = rounding_ == Rounding::tonearest;
      fill(v.round_down,
           [&](const ChannelConstants& c) { return to_nearest && c.shift < 31 ? 1 : 0; });
      break;
    }
    case SchemeKind::tflite:
      fill(v.shift_left, [](const ChannelConstants& c) { return std::max(c.shift, 0); });
      fill(v.shift_right, [](const ChannelConstants& c) { return std::max(-c.shift, 0); });
      break;
    case SchemeKind::tflite_single:
      fill(v.shift_right, [](const ChannelConstants& c) { return 31 - c.shift; });
      break;
    default: break;
  }
}

OutputStage OutputStage::for_requantize(SchemeKind kind, Rounding rounding,
                                        std::span<const double> input_scales, double output_scale,
                                        std::int32_t output_zero_point, DType output_dtype) {
  require(kind == SchemeKind::tvm || kind == SchemeKind::tvm_f32, "compute_dtype", to_string(kind),
          "requantize computes in int64 (tvm) or float32 (tvm_f32)");
  OutputStage stage;
  stage.kind_ = kind;
  stage.rounding_ = rounding;
  stage.zero_point_ = output_zero_point;
  stage.lo_ = dtype_min(output_dtype);
  stage.hi_ = dtype_max(output_dtype);
  for (std::size_t i = 0; i < input_scales.size(); ++i) {
    const auto o = static_cast<std::int64_t>(i);
    const float si = f32(input_scales[i]);
    const double m = static_cast<double>(si) / static_cast<double>(f32(output_scale));
    require_multiplier(m, "input_scale/output_scale", o);
    const FixedPointMultiplier fpm = quantize_multiplier(m);
    ChannelConstants c;
    c.q31 = fpm.q31;
    c.shift = fpm.exponent;
    c.scale_f32 = f32(m);
    if (kind == SchemeKind::tvm_f32) require_multiplier(c.scale_f32, "input_scale/output_scale", o);
    stage.channels_.push_back(c);
  }
  stage.derive_vectors();
  return stage;
}

std::int32_t OutputStage::finish(std::int64_t rounded) const {
  return static_cast<std::int32_t>(clamp_to(rounded + zero_point_, lo_, hi_));
}

std::int32_t OutputStage::apply_wide(std::int64_t a, std::int64_t o) const {
  const ChannelConstants& c = channel(o);
  if (kind_ == SchemeKind::tvm_f32) {
    // v = f32(f32(acc)·f32(M)) + zy in f32; UPWARD: floor(v + 0.5); TONEAREST: half away from zero.
    const float v = static_cast<float>(a) * c.scale_f32 + static_cast<float>(zero_point_);
    const float r = rounding_ == Rounding::upward ? std::floor(v + 0.5f) : std::round(v);
    return static_cast<std::int32_t>(clamp_to(static_cast<double>(r), lo_, hi_));
  }
  // tvm: p = (s64(acc) << max(e, 0)) · q31, then a rounding right shift by T = 31 + max(−e, 0).
  // Computed in 128 bits: TVM's int64 would overflow only where the output saturates anyway.
  if (a == 0) return finish(0);
  if (c.shift > 32) {  // |acc · M| ≥ 2^32: beyond every output range
    return finish(a > 0 ? (std::int64_t{1} << 40) : -(std::int64_t{1} << 40));
  }
  const __int128 p = (static_cast<__int128>(a) << std::max(c.shift, 0)) * c.q31;
  const int t = 31 + std::max(-c.shift, 0);
  if (t > 100) return finish(0);  // |p| < 2^95 < 2^(T−1): the rounded quotient is 0
  const __int128 half = static_cast<__int128>(1) << (t - 1);
  const __int128 nudge = (rounding_ == Rounding::upward || p >= 0) ? half : half - 1;
  // |value| < 2^33 and M < 2^33 bound the quotient by 2^66: saturate before narrowing to 64 bits.
  const __int128 limit = static_cast<__int128>(1) << 40;
  return finish(static_cast<std::int64_t>(std::clamp((p + nudge) >> t, -limit, limit)));
}

std::int32_t OutputStage::apply(std::int32_t acc, std::int64_t o) const {
  const ChannelConstants& c = channel(o);
  const std::int32_t with_bias = wrap_s32(std::int64_t{acc} + c.bias_s32);
  switch (kind_) {
    case SchemeKind::int32: return finish(with_bias);
    case SchemeKind::fbgemm: {
      const float v = static_cast<float>(acc) + c.bias_f32;
      return finish(saturate_to_int64(round_half_even(v * c.scale_f32)));
    }
    case SchemeKind::qnnpack: {
      const float v = static_cast<float>(with_bias) * c.scale_f32;
      // PyTorch's float-to-int conversion gives INT32_MIN for |v| ≥ 2^31 (docs/PEERS.md defect 6).
      const std::int64_t r = std::fabs(v) < kTwo31 ? static_cast<std::int64_t>(round_half_even(v))
                                                   : std::numeric_limits<std::int32_t>::min();
      return finish(r);
    }
    case SchemeKind::onednn: {
      float v = (static_cast<float>(acc) + c.bias_f32) * c.scale_f32;
      if (relu_) v = std::max(v, 0.0f);
      const float shifted =
          v + static_cast<float>(zero_point_);  // zero point added before rounding
      return static_cast<std::int32_t>(
          clamp_to(static_cast<double>(round_half_even(shifted)), lo_, hi_));
    }
    case SchemeKind::onnx: {
      const double r = static_cast<double>(with_bias) * static_cast<double>(c.scale_f32) +
                       static_cast<double>(zero_point_);  // zero point added before rounding
      return static_cast<std::int32_t>(clamp_to(round_half_even(r), lo_, hi_));
    }
    case SchemeKind::onnxruntime: return finish(onnxruntime_rounded(with_bias, c.scale_f32));
    case SchemeKind::tvm:
    case SchemeKind::tvm_f32: return apply_wide(with_bias, o);
    case SchemeKind::tflite: {
      const std::int32_t shifted = wrap_s32(std::int64_t{with_bias} << std::max(c.shift, 0));
      const std::int32_t high = saturating_rounding_doubling_high_mul(shifted, c.q31);
      return finish(rounding_divide_by_pot(high, std::max(-c.shift, 0)));
    }
    case SchemeKind::tflite_single: {
      const std::int64_t p = std::int64_t{with_bias} * c.q31;
      return finish((p + (std::int64_t{1} << (30 - c.shift))) >> (31 - c.shift));
    }
  }
  return 0;
}

}  // namespace qconv::detail
