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

// 16 channels of 4 rows (16 bytes each) into one vector, each dword the 4 rows' bytes of one
// channel, channels in order: the rows side by side in the 128-bit lanes, one vpermd moving
// channels 4j..4j+3 of every row into lane j, one vpshufb transposing each lane's 4x4 bytes.
[[gnu::always_inline]] inline __m512i interleave_rows_16(__m128i a, __m128i b, __m128i x,
                                                         __m128i y) {
  __m512i v = _mm512_castsi128_si512(a);
  v = _mm512_inserti32x4(v, b, 1);
  v = _mm512_inserti32x4(v, x, 2);
  v = _mm512_inserti32x4(v, y, 3);
  // Dword 4j + r from dword 4r + j; then in each lane byte 4k + r from byte 4r + k.
  const __m512i lanes = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(lanes, v), bytes);
}

}  // namespace qconv::detail::avx512_vnni
