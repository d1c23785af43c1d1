// SPDX-License-Identifier: Apache-2.0
// KernelSet::interleave_rows: a first layer's few-channel input as groups of padded rows, each
// position holding its rows' pixels side by side (kernel_set.hpp: RowInterleave). One dword per
// (row, position) — a pixel's channels and the fill byte — 16 of them per 64-byte store, fetched
// by one masked gather: the lanes in the padding keep the fill word. Built with AVX-512 flags: see
// kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

void interleave_rows(const RowInterleave& r) {
  const auto rows = static_cast<std::int32_t>(r.rows_per_group);  // 2, 4, 8 or 16
  const auto channels = static_cast<std::int32_t>(r.channels);
  const auto width = static_cast<std::int32_t>(r.width);
  const std::int64_t image_bytes = r.height * r.width * r.channels;
  const std::int64_t group_bytes = r.positions * rows * 4;
  const std::int32_t per_vector = 16 / rows;  // positions per store
  int shift = 0;
  while ((1 << shift) < rows) ++shift;
  const __m512i lane = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512i row_of_lane = _mm512_and_si512(lane, _mm512_set1_epi32(rows - 1));
  const __m512i position_of_lane = _mm512_srlv_epi32(lane, _mm512_set1_epi32(shift));
  const __m512i fill = _mm512_set1_epi32(static_cast<std::int32_t>(r.fill * 0x01010101u));
  // The pixel's bytes of a dword read at its first channel; the rest is the next pixel's.
  const std::uint32_t pixel_mask = channels == 4 ? 0xffffffffu : (1u << (8 * channels)) - 1;
  const __m512i keep = _mm512_set1_epi32(static_cast<std::int32_t>(pixel_mask));
  const __m512i flip = _mm512_set1_epi32(r.flip_sign ? static_cast<std::int32_t>(0x80808080u &
                                                                                 pixel_mask)
                                                     : 0);
  // A dword read at the image's last pixel would pass its end: that lane reads the dword ending
  // at the pixel instead and shifts it down.
  const __m512i last_read = _mm512_set1_epi32(static_cast<std::int32_t>(image_bytes - 4));
  const __m512i back = _mm512_set1_epi32(4 - channels);
  const __m512i back_bits = _mm512_set1_epi32(8 * (4 - channels));
  const std::int64_t positions = r.positions;
  for (std::int64_t at = r.first_group; at < r.first_group + r.group_count; ++at) {
    const std::int64_t n = at / r.groups, g = at % r.groups;
    const std::uint8_t* image = r.input + n * image_bytes;
    std::uint8_t* out = r.out + at * group_bytes;
    // Each lane's input row, and whether it lies in the input.
    const __m512i h = _mm512_add_epi32(
        row_of_lane, _mm512_set1_epi32(static_cast<std::int32_t>(g * r.group_step - r.top)));
    const __mmask16 row_inside =
        _mm512_cmpge_epi32_mask(h, _mm512_setzero_si512()) &
        _mm512_cmplt_epi32_mask(h, _mm512_set1_epi32(static_cast<std::int32_t>(r.height)));
    const __m512i row_offset = _mm512_mullo_epi32(h, _mm512_set1_epi32(width * channels));
    __m512i w = _mm512_sub_epi32(position_of_lane,
                                 _mm512_set1_epi32(static_cast<std::int32_t>(r.left)));
    for (std::int64_t x = 0; x < positions; x += per_vector) {
      const __mmask16 inside = row_inside & _mm512_cmpge_epi32_mask(w, _mm512_setzero_si512()) &
                               _mm512_cmplt_epi32_mask(w, _mm512_set1_epi32(width));
      __m512i offset = _mm512_add_epi32(row_offset, _mm512_mullo_epi32(w, _mm512_set1_epi32(channels)));
      const __mmask16 at_end = _mm512_mask_cmpgt_epi32_mask(inside, offset, last_read);
      offset = _mm512_mask_sub_epi32(offset, at_end, offset, back);
      __m512i v = _mm512_mask_i32gather_epi32(fill, inside, offset, image, 1);
      v = _mm512_mask_srlv_epi32(v, at_end, v, back_bits);
      // Inside: the pixel's bytes (flipped), the fill byte after them.
      // (keep ? x ^ flip : fill), 0xe4 being "C ? A : B".
      v = _mm512_mask_mov_epi32(
          v, inside, _mm512_ternarylogic_epi32(_mm512_xor_si512(v, flip), fill, keep, 0xe4));
      const std::int64_t left = (positions - x) * rows;  // dwords still to write
      if (left >= 16) {
        _mm512_storeu_si512(out + x * rows * 4, v);
      } else {
        _mm512_mask_storeu_epi32(out + x * rows * 4,
                                 static_cast<__mmask16>((1u << left) - 1), v);
      }
      w = _mm512_add_epi32(w, _mm512_set1_epi32(per_vector));
    }
  }
}

}  // namespace qconv::detail::avx512_vnni
