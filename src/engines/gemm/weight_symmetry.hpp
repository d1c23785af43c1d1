// SPDX-License-Identifier: Apache-2.0
// Whether a problem's weights need no window sums: the test the GEMM path's plans share.
#pragma once

#include <cstdint>

#include "qconv/problem.hpp"

namespace qconv::detail::gemm {

// Whether every weight zero point is the weights' middle (0 for s8, 128 for u8): packed as s8
// (w' = w − 128 for u8), every zw' is then 0, and no window sums are needed.
inline bool symmetric_weights(const Problem& problem) {
  const auto& d = problem.desc();
  const std::int32_t middle = d.weight_dtype == DType::u8 ? 128 : 0;
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    if (problem.weight_zero_point(o) != middle) return false;
  }
  return true;
}

}  // namespace qconv::detail::gemm
