// SPDX-License-Identifier: Apache-2.0
// Depthwise tiles: channels in lanes, up to 6 output pixels x 64 channels, two taps per vpdpwssd,
// (x − zx) · (w − zw) in s32 — exact, so the output stage needs no correction. Built with AVX-512
// flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

void depthwise_tile(const DepthwiseTile& t) {
  // Two taps per vpdpwssd: their input bytes interleaved and widened to 16 bits, less zx, times
  // (w − zw) of both taps as 16-bit pairs (|x − zx|, |w − zw| ≤ 255: each product and the pair's
  // sum are exact in s32).
  const __m512i zx = _mm512_set1_epi16(static_cast<short>(t.zero_point));
  const int vectors = (t.channels + 15) / 16;
  for (int j = 0; j < vectors; ++j) {
    const std::int32_t left = t.channels - 16 * j;
    const __mmask16 mask =
        left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    for (std::int32_t i = 0; i < t.rows; ++i) {
      const std::int64_t row = t.first_row + i * t.row_stride + 16 * j;
      __m512i acc = _mm512_setzero_si512();
      std::int32_t tap = 0;
      for (; tap + 1 < t.taps; tap += 2) {
        // Masked: the last channels of the last pixel are the tensor's last bytes.
        const __m128i a = _mm_maskz_loadu_epi8(mask, t.input + (row + t.tap_offsets[tap]));
        const __m128i b = _mm_maskz_loadu_epi8(mask, t.input + (row + t.tap_offsets[tap + 1]));
        const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi8(a, b), _mm_unpacklo_epi8(a, b));
        const __m512i x = _mm512_sub_epi16(_mm512_cvtepu8_epi16(pairs), zx);
        // The pair's weights: tap's and tap + 1's, interleaved as 16-bit values.
        const __m512i w = _mm512_loadu_si512(t.weights + (tap / 2) * 128 + 32 * j);
        acc = _mm512_dpwssd_epi32(acc, x, w);
      }
      if (tap < t.taps) {  // an odd last tap, paired with nothing (its partner weight is 0)
        const __m128i a = _mm_maskz_loadu_epi8(mask, t.input + (row + t.tap_offsets[tap]));
        const __m256i pairs = _mm256_set_m128i(_mm_unpackhi_epi8(a, _mm_setzero_si128()),
                                               _mm_unpacklo_epi8(a, _mm_setzero_si128()));
        __m512i x = _mm512_sub_epi16(_mm512_cvtepu8_epi16(pairs), zx);
        x = _mm512_and_si512(x, _mm512_set1_epi32(0xffff));  // the partner lane: 0, not −zx
        const __m512i w = _mm512_loadu_si512(t.weights + (tap / 2) * 128 + 32 * j);
        acc = _mm512_dpwssd_epi32(acc, x, w);
      }
      _mm512_store_si512(t.acc + i * 64 + 16 * j, acc);
    }
  }
}

}  // namespace qconv::detail::avx512_vnni
