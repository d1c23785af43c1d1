// SPDX-License-Identifier: Apache-2.0
// The 4x4 transpose of 128-bit lanes among four vectors, shared by the depthwise tiles (channels
// to and from the 64-lane blocks' order) and the weight packer (the last round of its 16x16
// transpose of words). Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

namespace qconv::detail::avx512_vnni {

// Vector v's lane l ↔ vector l's lane v.
inline void transpose_lanes(__m512i& a, __m512i& b, __m512i& c, __m512i& d) {
  const __m512i ab_low = _mm512_shuffle_i32x4(a, b, 0x44),
                ab_high = _mm512_shuffle_i32x4(a, b, 0xee);
  const __m512i cd_low = _mm512_shuffle_i32x4(c, d, 0x44),
                cd_high = _mm512_shuffle_i32x4(c, d, 0xee);
  a = _mm512_shuffle_i32x4(ab_low, cd_low, 0x88);
  b = _mm512_shuffle_i32x4(ab_low, cd_low, 0xdd);
  c = _mm512_shuffle_i32x4(ab_high, cd_high, 0x88);
  d = _mm512_shuffle_i32x4(ab_high, cd_high, 0xdd);
}

}  // namespace qconv::detail::avx512_vnni
