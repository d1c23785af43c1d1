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

}  // namespace qconv::detail::gemm
