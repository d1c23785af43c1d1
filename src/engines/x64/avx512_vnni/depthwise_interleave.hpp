// SPDX-License-Identifier: Apache-2.0
// One column of 4 input rows interleaved for vpdpbusd: each s32 lane the 4 rows' bytes of one
// channel. Shared by the column buffer's build (depthwise_columns.cpp) and the kernels that
// interleave their columns in registers (depthwise_kernels.cpp). Only for files built with AVX-512
// flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

namespace qconv::detail::avx512_vnni {

// Byte then word unpacks inside 128-bit lanes: vector q of the result holds dword k of 128-bit
// lane l from channel 16·l + 4·q + k of the rows (depthwise_lane in kernels.hpp).
[[gnu::always_inline]] inline void interleave_rows(__m512i a, __m512i b, __m512i x, __m512i y,
                                                   __m512i (&q)[4]) {
  const __m512i ab_low = _mm512_unpacklo_epi8(a, b), ab_high = _mm512_unpackhi_epi8(a, b);
  const __m512i xy_low = _mm512_unpacklo_epi8(x, y), xy_high = _mm512_unpackhi_epi8(x, y);
  q[0] = _mm512_unpacklo_epi16(ab_low, xy_low);
  q[1] = _mm512_unpackhi_epi16(ab_low, xy_low);
  q[2] = _mm512_unpacklo_epi16(ab_high, xy_high);
  q[3] = _mm512_unpackhi_epi16(ab_high, xy_high);
}

}  // namespace qconv::detail::avx512_vnni
