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

// 32 channels: a row's 4-byte channel groups put in the order that 256-bit unpacks then leave in
// channel order (channel_order<32> in depthwise_columns.cpp does the same to a 512-bit load).
[[gnu::always_inline]] inline __m256i order_for_unpacks_32(__m256i row) {
  return _mm256_permutevar8x32_epi32(row, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
}

// The 256-bit form of interleave_rows for rows in order_for_unpacks_32: q[0] holds channels 0-15
// (each dword the 4 rows' bytes of one channel, in order), q[1] channels 16-31: the two vectors of
// a 32-lane block's column.
[[gnu::always_inline]] inline void interleave_rows_32(__m256i a, __m256i b, __m256i x, __m256i y,
                                                      __m512i (&q)[2]) {
  const __m256i ab_low = _mm256_unpacklo_epi8(a, b), ab_high = _mm256_unpackhi_epi8(a, b);
  const __m256i xy_low = _mm256_unpacklo_epi8(x, y), xy_high = _mm256_unpackhi_epi8(x, y);
  q[0] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_unpacklo_epi16(ab_low, xy_low)),
                            _mm256_unpackhi_epi16(ab_low, xy_low), 1);
  q[1] = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_unpacklo_epi16(ab_high, xy_high)),
                            _mm256_unpackhi_epi16(ab_high, xy_high), 1);
}

}  // namespace qconv::detail::avx512_vnni
