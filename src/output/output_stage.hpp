// The output stage: turns the exact accumulator of one output element into the output value,
// following one output scheme of SPEC §4 bit for bit. Per-channel constants are derived once
// (from the scales, the bias and the scheme) so every engine applies the same numbers.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "qconv/plan.hpp"
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

class OutputStage {
 public:
  // Derives the constants of every output channel. Throws InvalidArgument when a derived constant
  // is not finite or out of its range, when a float bias value is NaN or infinite, or when the
  // clamp range is empty after quantization.
  // The bias must already have been checked for kind and length.
  OutputStage(const ProblemDesc& desc, BiasView bias);

  // qnn.requantize: the tvm or tvm_f32 scheme applied to `value − input_zero_point`, with one
  // input scale per channel (or one for all) and no weight scale.
  static OutputStage for_requantize(SchemeKind kind, Rounding rounding,
                                    std::span<const double> input_scales, double output_scale,
                                    std::int32_t output_zero_point, DType output_dtype);

  // Output of channel `o` for accumulator `acc` (SPEC §3 sum, wrapped to s32, bias not yet added).
  std::int32_t apply(std::int32_t acc, std::int64_t o) const;
  // tvm and tvm_f32 only: the same for a 64-bit value (qnn.requantize subtracts its input zero
  // point in 64 bits).
  std::int32_t apply_wide(std::int64_t value, std::int64_t o) const;

  SchemeKind kind() const { return kind_; }
  std::int64_t lo() const { return lo_; }
  std::int64_t hi() const { return hi_; }
  std::int32_t zero_point() const { return zero_point_; }
  const ChannelConstants& channel(std::int64_t o) const {
    return channels_[channels_.size() == 1 ? 0 : static_cast<std::size_t>(o)];
  }

 private:
  OutputStage() = default;
  std::int32_t finish(std::int64_t rounded) const;

  SchemeKind kind_ = SchemeKind::int32;
  Rounding rounding_ = Rounding::upward;
  bool relu_ = false;
  std::int64_t lo_ = 0;
  std::int64_t hi_ = 0;
  std::int32_t zero_point_ = 0;
  std::vector<ChannelConstants> channels_;
};

}  // namespace qconv::detail
