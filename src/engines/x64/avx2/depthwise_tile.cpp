// SPDX-License-Identifier: Apache-2.0
// Depthwise tiles for the AVX2 kernel sets: channels in lanes, up to max_rows output pixels x 64
// channels, two taps per vpmaddwd, (x − zx) · (w − zw) in s32 — exact, so the output stage needs
// no correction (the same arithmetic as the AVX-512 tile). Built with AVX2 flags: see
// kernel_set.hpp.
#include <immintrin.h>

#include "engines/x64/avx2/kernels.hpp"

namespace qconv::detail::avx2 {
namespace {

// 16 channels' bytes at p, or (the last channels of the tensor) `n` < 16 of them, zero-filled:
// nothing past them is read.
inline __m128i load16(const std::uint8_t* p, std::int32_t n) {
  if (n >= 16) return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  alignas(16) std::uint8_t bytes[16] = {};
  for (std::int32_t c = 0; c < n; ++c) bytes[c] = p[c];
  return _mm_load_si128(reinterpret_cast<const __m128i*>(bytes));
}

}  // namespace

void depthwise_tile(const gemm::DepthwiseTile& t) {
  // Two taps per vpmaddwd: their input bytes interleaved and widened to 16 bits, less zx, times
  // (w − zw) of both taps as 16-bit pairs (|x − zx|, |w − zw| ≤ 255: each product and the pair's
  // sum are exact in s32).
  const __m256i zx = _mm256_set1_epi16(static_cast<short>(t.zero_point));
  const int vectors = (t.channels + 15) / 16;
  for (int j = 0; j < vectors; ++j) {
    const std::int32_t left = t.channels - 16 * j;
    for (std::int32_t i = 0; i < t.rows; ++i) {
      const std::int64_t row = t.first_row + i * t.row_stride + 16 * j;
      __m256i acc0 = _mm256_setzero_si256(), acc1 = _mm256_setzero_si256();
      std::int32_t tap = 0;
      for (; tap + 1 < t.taps; tap += 2) {
        const __m128i a = load16(t.input + (row + t.tap_offsets[tap]), left);
        const __m128i b = load16(t.input + (row + t.tap_offsets[tap + 1]), left);
        const __m256i x0 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b)), zx);
        const __m256i x1 = _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b)), zx);
        // The pair's weights: tap's and tap + 1's, interleaved as 16-bit values.
        const std::int16_t* w = t.weights + (tap / 2) * 128 + 32 * j;
        acc0 = _mm256_add_epi32(
            acc0, _mm256_madd_epi16(x0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
        acc1 = _mm256_add_epi32(
            acc1,
            _mm256_madd_epi16(x1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
      }
      if (tap < t.taps) {  // an odd last tap, paired with nothing (its partner weight is 0)
        const __m128i a = load16(t.input + (row + t.tap_offsets[tap]), left);
        const __m256i partner = _mm256_set1_epi32(0xffff);  // the partner lane: 0, not −zx
        const __m256i x0 = _mm256_and_si256(
            _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, _mm_setzero_si128())), zx),
            partner);
        const __m256i x1 = _mm256_and_si256(
            _mm256_sub_epi16(_mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, _mm_setzero_si128())), zx),
            partner);
        const std::int16_t* w = t.weights + (tap / 2) * 128 + 32 * j;
        acc0 = _mm256_add_epi32(
            acc0, _mm256_madd_epi16(x0, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w))));
        acc1 = _mm256_add_epi32(
            acc1,
            _mm256_madd_epi16(x1, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16))));
      }
      _mm256_store_si256(reinterpret_cast<__m256i*>(t.acc + i * 64 + 16 * j), acc0);
      _mm256_store_si256(reinterpret_cast<__m256i*>(t.acc + i * 64 + 16 * j + 8), acc1);
    }
  }
}

}  // namespace qconv::detail::avx2
