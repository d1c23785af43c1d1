// SPDX-License-Identifier: Apache-2.0
// One output scheme of SPEC §4 as a unit: `derive` (its per-channel constants, once, at
// preparation) beside `apply` (one accumulator to one output value), with how it rounds a real
// clamp bound and the vector lanes of its fixed-point constants. OutputStage (output_stage.cpp)
// holds the data and calls the unit of its scheme; each unit is a file of src/output/schemes/.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>

#include "core/check.hpp"
#include "output/rounding.hpp"
#include "qconv/problem.hpp"
#include "qconv/scheme.hpp"

namespace qconv::detail {

// Constants of one output channel. Which fields a scheme uses is listed beside each.
struct ChannelConstants {
  std::int32_t bias_s32 =
      0;                   // int32, onnx, tvm, tvm_f32, tflite(_single): the s32 bias; qnnpack: bq
  float bias_f32 = 0.0f;   // fbgemm: f32(b / t); onednn: bb = f32(b · bs); ±inf saturates
  float scale_f32 = 0.0f;  // fbgemm, qnnpack, onnx: m; onednn: os; tvm_f32: f32(M)
  std::int32_t q31 = 0;    // tvm, tflite, tflite_single: the Q31 multiplier
  int shift = 0;           // tvm: frexp exponent e; tflite, tflite_single: the shift
};

// What deriving output channel o's constants reads.
struct DeriveArgs {
  const ProblemDesc& desc;
  std::int64_t channel;    // o
  double input_scale;      // sx
  double weight_scale;     // sw[o]
  double output_scale;     // sy
  bool per_channel_scale;  // sw has one value per output channel
  bool bias_present;       // a bias tensor is bound (float or s32)
  double bias;             // the float bias b[o]; 0 without one
};

// The stage's values every channel shares.
struct StageLimits {
  std::int64_t lo = 0;  // the output range after the dtype and the fused activation
  std::int64_t hi = 0;
  std::int32_t zero_point = 0;
  bool relu = false;
  Rounding rounding = Rounding::upward;
};

// A channel's fixed-point constants as the vector kernels read them (VectorConstants).
struct VectorLane {
  std::int32_t q31 = 0;
  std::int32_t shift_left = 0;
  std::int32_t shift_right = 0;
  std::int32_t round_down = 0;
};

struct SchemeUnit {
  // Fills `c` (its bias_s32 is already the s32 bias, when one is bound). Throws InvalidArgument
  // naming the field when a constant has no meaning (zero or not finite, out of range).
  void (*derive)(const DeriveArgs& args, ChannelConstants& c);
  // The output of accumulator `acc` (SPEC §3 sum, wrapped to s32, bias not yet added).
  std::int32_t (*apply)(std::int32_t acc, const ChannelConstants& c, const StageLimits& limits);
  // Rounds a real value the way the scheme rounds its outputs (for the clamp bounds).
  double (*round)(double v, Rounding rounding);
  // round(v + zy) rather than round(v) + zy (with an odd zero point the two differ on ties).
  bool zero_point_before_rounding;
  // The vector form of c's fixed-point constants; null: q31 as is, no shifts.
  VectorLane (*vector_lane)(const ChannelConstants& c, Rounding rounding);
};

const SchemeUnit& scheme_unit(SchemeKind kind);

// tvm and tvm_f32 on a 64-bit value (qnn.requantize subtracts its input zero point in 64 bits).
std::int32_t apply_tvm_wide(SchemeKind kind, std::int64_t value, const ChannelConstants& c,
                            const StageLimits& limits);
// qnn.requantize's constants: tvm or tvm_f32 with one input scale and no weight scale.
ChannelConstants derive_requantize(SchemeKind kind, double input_scale, double output_scale,
                                   std::int64_t channel);

// The helpers the units share.
namespace scheme {

inline float f32(double v) { return static_cast<float>(v); }

// A rounded real of any magnitude as an integer that still lies outside every output range
// when it is outside: converting a float beyond int64 directly is undefined.
inline std::int64_t saturate_to_int64(double v) {
  return static_cast<std::int64_t>(std::clamp(v, -0x1p40, 0x1p40));
}

inline std::string channel_field(std::string_view what, std::int64_t o) {
  return std::string(what) + "[" + std::to_string(o) + "]";
}

// Every derived multiplier must be a positive finite number, or the formula has no meaning.
inline void require_multiplier(double v, std::string_view what, std::int64_t o) {
  if (std::isfinite(v) && v > 0.0) return;  // the message is built only for a failure
  require(false, channel_field(what, o), v,
          "the scales give a multiplier that is zero or not finite in the scheme's precision; "
          "check input_scale, weight_scale and output_scale");
}

// A float bias is data: NaN or an infinity in it has no meaning in any formula. A finite bias whose
// scaled value overflows binary32 is not refused: the formula then gives ±infinity, which the
// output clamp turns into the low or high bound (qnnpack: clamp_s32), as SPEC §4 writes it.
inline void require_finite_bias(double b, std::int64_t o) {
  if (std::isfinite(b)) return;
  require(false, channel_field("bias", o), b, "a float bias must be finite");
}

// round(v) + zy, clamped to the output range.
inline std::int32_t finish(std::int64_t rounded, const StageLimits& limits) {
  return static_cast<std::int32_t>(clamp_to(rounded + limits.zero_point, limits.lo, limits.hi));
}

// The s32 sum of the accumulator and the s32 bias, wrapped as the register would.
inline std::int32_t with_bias(std::int32_t acc, const ChannelConstants& c) {
  return wrap_s32(std::int64_t{acc} + c.bias_s32);
}

inline double round_even(double v, Rounding) { return round_half_even(v); }
inline double round_away(double v, Rounding) { return round_half_away(v); }

}  // namespace scheme
}  // namespace qconv::detail
