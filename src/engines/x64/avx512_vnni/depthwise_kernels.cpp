// SPDX-License-Identifier: Apache-2.0
// Depthwise tiles: channels in lanes, up to 6 output pixels x 64 channels, each tap one widening
// load of 16 input bytes, (x − zx) · (w − zw) in s32 — exact, so the output stage needs no
// correction. Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library
// templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

void depthwise_tile(const DepthwiseTile& t) {
  const __m512i zx = _mm512_set1_epi32(t.zero_point);
  const int vectors = (t.channels + 15) / 16;
  for (int j = 0; j < vectors; ++j) {
    const std::int32_t left = t.channels - 16 * j;
    const __mmask16 mask =
        left >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << left) - 1);
    for (std::int32_t i = 0; i < t.rows; ++i) {
      const std::int64_t row = t.first_row + i * t.row_stride + 16 * j;
      __m512i acc = _mm512_setzero_si512();
      for (std::int32_t tap = 0; tap < t.taps; ++tap) {
        // Masked: the last channels of the last pixel are the tensor's last bytes.
        const __m128i bytes = _mm_maskz_loadu_epi8(mask, t.input + (row + t.tap_offsets[tap]));
        const __m512i x = _mm512_sub_epi32(_mm512_cvtepu8_epi32(bytes), zx);
        const __m512i w = _mm512_loadu_si512(t.weights + t.tap_weights[tap] + 16 * j);
        acc = _mm512_add_epi32(acc, _mm512_mullo_epi32(x, w));
      }
      _mm512_store_si512(t.acc + i * 64 + 16 * j, acc);
    }
  }
}

}  // namespace qconv::detail::avx512_vnni
