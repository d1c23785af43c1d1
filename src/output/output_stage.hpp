// SPDX-License-Identifier: Apache-2.0
// The output stage: turns the exact accumulator of one output element into the output value,
// following one output scheme of SPEC §4 bit for bit. Per-channel constants are derived once
// (from the scales, the bias and the scheme) so every engine applies the same numbers. The
// formulas are the scheme's unit (scheme_unit.hpp, src/output/schemes/); this is the data.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/aligned.hpp"
#include "output/scheme_unit.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "qconv/scheme.hpp"

namespace qconv::detail {

// The same constants as data for a vector kernel that handles 16 channels at a time (the scalar
// apply() stays the oracle every vector form is tested against). Each array holds either 16 copies
// of one value (channel_step 0: every channel reads lanes [0, 16)) or one value per output channel,
// padded to a multiple of 16 (channel_step 1: channels [c, c + 16) read lanes [c, c + 16)); all are
// 64-byte aligned. A scheme leaves the arrays it does not use empty (the shift arrays are filled
// for the schemes with fixed-point vector lanes: tvm, tflite, tflite_single).
struct VectorConstants {
  std::int64_t channel_step = 0;
  AlignedVector<std::int32_t> bias_s32;  // as ChannelConstants::bias_s32
  AlignedVector<float> bias_f32;         // as ChannelConstants::bias_f32
  AlignedVector<float> scale_f32;        // as ChannelConstants::scale_f32
  AlignedVector<std::int32_t> q31;       // tvm: 0 where the result is always 0, 1 where saturated
  // tvm: r = ((s64(acc)·q31 + nudge) >> shift_right) << shift_left, the nudge 2^(shift_right − 1)
  //   (0 when shift_right is 0), less round_down for a negative product; exact in 64 bits.
  // tflite: shift_left = max(shift, 0), shift_right = max(−shift, 0). tflite_single: shift_right
  //   = 31 − shift.
  AlignedVector<std::int32_t> shift_left;
  AlignedVector<std::int32_t> shift_right;
  AlignedVector<std::int32_t> round_down;
  // The largest scale_f32 and |bias_f32|·scale_f32 of any channel (infinity when one is not
  // finite): |(acc + bias_f32)·scale_f32| ≤ |acc|·largest_scale + largest_scaled_bias, give or take
  // rounding, bounds the float schemes' values before they are rounded.
  double largest_scale = 0;
  double largest_scaled_bias = 0;
  std::int32_t zero_point = 0;
  std::int32_t lo = 0;  // the output range after the dtype and the fused activation
  std::int32_t hi = 0;
  bool round_upward = true;  // tvm_f32: UPWARD (floor(v + 0.5)) or TONEAREST (half away)

  // Offset of channel c's lane in every array.
  std::int64_t at(std::int64_t c) const { return c * channel_step; }
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

  // Different for every stage made (a copy shares its original's: the constants never change
  // after construction), so that a kernel may keep arrays it derives from a stage from one call to
  // the next (gemm::kept_stage).
  std::uint64_t serial() const { return serial_; }

  SchemeKind kind() const { return kind_; }
  std::int64_t lo() const { return limits_.lo; }
  std::int64_t hi() const { return limits_.hi; }
  std::int32_t zero_point() const { return limits_.zero_point; }
  const VectorConstants& vectors() const { return vectors_; }
  const ChannelConstants& channel(std::int64_t o) const {
    return channels_[channels_.size() == 1 ? 0 : static_cast<std::size_t>(o)];
  }

 private:
  OutputStage() = default;
  void derive_vectors();

  static std::uint64_t next_serial();

  std::uint64_t serial_ = next_serial();
  SchemeKind kind_ = SchemeKind::int32;
  const SchemeUnit* unit_ = nullptr;
  StageLimits limits_;
  std::vector<ChannelConstants> channels_;
  VectorConstants vectors_;
};

}  // namespace qconv::detail
