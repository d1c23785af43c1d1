// SPDX-License-Identifier: Apache-2.0
// SPEC §4: the data of an output stage (the clamp range, the per-channel constants and their
// vector form); the formulas are the scheme units of src/output/schemes/.
#include "output/output_stage.hpp"

// Every float operation of a scheme must round on its own: the library is built with
// -ffp-contract=off (CMakeLists.txt), or a compiler targeting a CPU with FMA would fuse `x * m +
// zy` (onnx, tvm_f32, onednn) into one rounding, even across statements, and silently change tie
// results.

#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>

#include "core/check.hpp"
#include "output/rounding.hpp"

namespace qconv::detail {
namespace {

// A real clamp bound a becomes Q(a), the output the scheme gives for the real value a. Q is
// monotone, so clamping Q(v) to [Q(a), Q(b)] equals quantizing clamp(v, a, b) — what a fused clamp
// means. TFLite (CalculateActivationRangeQuantized) divides in binary32: zy + round(f32(f32(a) /
// f32(sy))); the other schemes have no fused clamp of their own and divide in binary64.
std::int64_t quantize_bound(const ProblemDesc& d, const SchemeUnit& unit, double real) {
  const SchemeKind kind = d.scheme.kind;
  const bool tflite = kind == SchemeKind::tflite || kind == SchemeKind::tflite_single;
  const double scaled = tflite
                            ? static_cast<double>(scheme::f32(real) / scheme::f32(d.output_scale))
                            : real / d.output_scale;
  const double limit = 0x1p62;  // beyond every output range, and safe to convert
  if (unit.zero_point_before_rounding) {
    const double q = unit.round(scaled + d.output_zero_point, d.scheme.rounding);
    return static_cast<std::int64_t>(std::clamp(q, -limit, limit));
  }
  const double q = unit.round(scaled, d.scheme.rounding);
  return static_cast<std::int64_t>(std::clamp(q, -limit, limit)) + d.output_zero_point;
}

}  // namespace

std::uint64_t OutputStage::next_serial() {
  static std::atomic<std::uint64_t> made{0};
  return made.fetch_add(1, std::memory_order_relaxed) + 1;
}

OutputStage::OutputStage(const ProblemDesc& d, BiasView bias)
    : kind_(d.scheme.kind), unit_(&scheme_unit(d.scheme.kind)) {
  limits_.zero_point = d.output_zero_point;
  limits_.relu = d.activation.kind == Activation::Kind::relu;
  limits_.rounding = d.scheme.rounding;
  limits_.lo = dtype_min(d.output_dtype);
  limits_.hi = dtype_max(d.output_dtype);
  if (limits_.relu) limits_.lo = std::max<std::int64_t>(limits_.lo, d.output_zero_point);
  if (d.activation.kind == Activation::Kind::clamp) {
    limits_.lo = std::max(limits_.lo, quantize_bound(d, *unit_, d.activation.min));
    limits_.hi = std::min(limits_.hi, quantize_bound(d, *unit_, d.activation.max));
    require(
        limits_.lo <= limits_.hi, "activation",
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
    const auto index = static_cast<std::size_t>(o);
    if (bias.present() && !bias.is_float()) c.bias_s32 = bias.s32()[index];
    unit_->derive(
        {d, o, d.input_scale, d.weight_scale[per_channel_scale ? index : 0], d.output_scale,
         per_channel_scale, bias.present(), bias.is_float() ? bias.f32()[index] : 0.0},
        c);
  }
  derive_vectors();
}

// The vector form of the constants (VectorConstants): the same numbers, padded for 16 lanes, with
// the fixed-point schemes' shifts as their units give them.
void OutputStage::derive_vectors() {
  VectorConstants& v = vectors_;
  const bool per_channel = channels_.size() > 1;
  v.channel_step = per_channel ? 1 : 0;
  const auto lanes = static_cast<std::size_t>(
      per_channel ? round_up(static_cast<std::int64_t>(channels_.size()), 16) + 16 : 16);
  v.zero_point = limits_.zero_point;
  v.lo = static_cast<std::int32_t>(limits_.lo);
  v.hi = static_cast<std::int32_t>(limits_.hi);
  v.round_upward = limits_.rounding == Rounding::upward;
  const auto fill = [&](auto& array, auto value_of) {
    array.assign(lanes, {});
    for (std::size_t i = 0; i < lanes; ++i) {
      array[i] = value_of(channels_[per_channel ? std::min(i, channels_.size() - 1) : 0]);
    }
  };
  fill(v.bias_s32, [](const ChannelConstants& c) { return c.bias_s32; });
  fill(v.bias_f32, [](const ChannelConstants& c) { return c.bias_f32; });
  fill(v.scale_f32, [](const ChannelConstants& c) { return c.scale_f32; });
  v.largest_scale = v.largest_scaled_bias = 0;
  for (const ChannelConstants& c : channels_) {
    const double scale = std::fabs(static_cast<double>(c.scale_f32));
    const double scaled_bias = std::fabs(static_cast<double>(c.bias_f32)) * scale;
    const bool finite = std::isfinite(scale) && std::isfinite(scaled_bias);
    v.largest_scale = finite ? std::max(v.largest_scale, scale) : HUGE_VAL;
    v.largest_scaled_bias = finite ? std::max(v.largest_scaled_bias, scaled_bias) : HUGE_VAL;
  }
  const auto vector_lane = unit_->vector_lane;
  if (vector_lane == nullptr) {
    fill(v.q31, [](const ChannelConstants& c) { return c.q31; });
    return;
  }
  const Rounding rounding = limits_.rounding;
  fill(v.q31, [&](const ChannelConstants& c) { return vector_lane(c, rounding).q31; });
  fill(v.shift_left,
       [&](const ChannelConstants& c) { return vector_lane(c, rounding).shift_left; });
  fill(v.shift_right,
       [&](const ChannelConstants& c) { return vector_lane(c, rounding).shift_right; });
  fill(v.round_down,
       [&](const ChannelConstants& c) { return vector_lane(c, rounding).round_down; });
}

OutputStage OutputStage::for_requantize(SchemeKind kind, Rounding rounding,
                                        std::span<const double> input_scales, double output_scale,
                                        std::int32_t output_zero_point, DType output_dtype) {
  require(kind == SchemeKind::tvm || kind == SchemeKind::tvm_f32, "compute_dtype", to_string(kind),
          "requantize computes in int64 (tvm) or float32 (tvm_f32)");
  OutputStage stage;
  stage.kind_ = kind;
  stage.unit_ = &scheme_unit(kind);
  stage.limits_.rounding = rounding;
  stage.limits_.zero_point = output_zero_point;
  stage.limits_.lo = dtype_min(output_dtype);
  stage.limits_.hi = dtype_max(output_dtype);
  for (std::size_t i = 0; i < input_scales.size(); ++i) {
    stage.channels_.push_back(
        derive_requantize(kind, input_scales[i], output_scale, static_cast<std::int64_t>(i)));
  }
  stage.derive_vectors();
  return stage;
}

std::int32_t OutputStage::apply_wide(std::int64_t value, std::int64_t o) const {
  return apply_tvm_wide(kind_, value, channel(o), limits_);
}

std::int32_t OutputStage::apply(std::int32_t acc, std::int64_t o) const {
  return unit_->apply(acc, channel(o), limits_);
}

}  // namespace qconv::detail
