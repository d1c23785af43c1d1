// SPDX-License-Identifier: Apache-2.0
// The output stage's vector constants as the kernels read them (plain pointers): kernels.hpp keeps
// standard-library types out of the ISA-specific files, so the view is made on the baseline side.
#pragma once

#include "engines/gemm/kernel_set.hpp"
#include "output/output_stage.hpp"

namespace qconv::detail::gemm {

inline StageView stage_view(const VectorConstants& v) {
  return {v.bias_s32.data(),
          v.bias_f32.data(),
          v.scale_f32.data(),
          v.q31.data(),
          v.shift_left.data(),
          v.shift_right.data(),
          v.round_down.data(),
          v.channel_step,
          v.zero_point,
          v.lo,
          v.hi,
          v.round_upward};
}

// Whether the packs to bytes may stand for fbgemm's high clamp on this call (FlatRun's and
// DepthwiseOutputs' saturated_high): a u8 or s8 output whose range reaches the dtype's maximum,
// and (acc + bias)·scale below 2^30 in magnitude for every |acc| ≤ K·255² (2^31 or more would
// convert to INT32_MIN), K an output's multiply-adds.
inline bool narrowing_saturates_high(const ProblemDesc& d, const VectorConstants& v) {
  const double largest_sum =
      static_cast<double>(d.kernel_h * d.kernel_w * (d.in_channels / d.groups)) * 255.0 * 255.0;
  const bool full_range =
      (d.output_dtype == DType::u8 && v.hi == 255) || (d.output_dtype == DType::s8 && v.hi == 127);
  return d.scheme.kind == SchemeKind::fbgemm && full_range &&
         largest_sum * v.largest_scale + v.largest_scaled_bias < 0x1p30;
}

}  // namespace qconv::detail::gemm
