// SPDX-License-Identifier: Apache-2.0
// KernelSet::interleave_rows: a first layer's few-channel input as groups of padded rows, each
// position holding its rows' pixels side by side (kernel_set.hpp: RowInterleave). One dword per
// (row, position) — a pixel's channels and the fill byte — 16 of them per 64-byte store. Inside
// the input, with 2 or 4 rows per group, each 128-bit lane loads 4 consecutive pixels of one row
// and a byte shuffle spreads them to dwords, a dword permute interleaving the rows; elsewhere
// (the borders, other row counts) one masked gather fetches the 16 dwords, the lanes in the
// padding keeping the fill word: a gather costs about three times the loads and shuffles. Built
// with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// The shuffle path's constants: lane l = q·R + j of a store holds pixels 4q .. 4q + 3 of its
// positions in row j, dword p of the lane pixel p's channels (0x80: zeroed, then the fill byte).
// The store's dword p·R + j (position p, row j) is then the lanes' dword 4·((p / 4)·R + j) + p % 4.
struct Quads {
  __m512i spread;      // vpshufb: a lane's 4 pixels' bytes to their dwords
  __m512i interleave;  // vpermd: the lanes' dwords in the store's order
  __m512i flip;        // 0x80 in the channel bytes of a dword for an s8 input, else 0
  __m512i fill;        // the fill byte in the other bytes of a dword
  __mmask16 bytes;     // a lane's 4 pixels' bytes: 4·C
};

// One store: lane l's 4 pixels from `at[l]`, 16 bytes read whole (kWhole: the bytes past them
// are the input's too) or only the pixels' (masked).
template <bool kWhole>
inline __m512i quad_lanes(const Quads& c, const std::uint8_t* const* at, std::int64_t offset) {
  const auto load = [&](int l) {
    return kWhole ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(at[l] + offset))
                  : _mm_maskz_loadu_epi8(c.bytes, at[l] + offset);
  };
  __m512i v = _mm512_castsi128_si512(load(0));
  v = _mm512_inserti32x4(v, load(1), 1);
  v = _mm512_inserti32x4(v, load(2), 2);
  v = _mm512_inserti32x4(v, load(3), 3);
  // (x ^ flip) | fill bytes, 0xbe being "(A ^ B) | C".
  v = _mm512_ternarylogic_epi32(_mm512_shuffle_epi8(v, c.spread), c.flip, c.fill, 0xbe);
  return _mm512_permutexvar_epi32(c.interleave, v);
}

// `stores` stores of 16 / kRows positions each, their first position at input column `column`
// of rows row_at[0 .. kRows), all inside the input, which ends at `end`.
template <int kRows>
void interleave_quads(const Quads& c, const std::uint8_t* const* row_at, std::int64_t column,
                      std::int64_t channels, std::int64_t stores, const std::uint8_t* end,
                      std::uint8_t* out) {
  constexpr int kPositions = 16 / kRows;
  const std::uint8_t* at[4];
  const std::uint8_t* last = nullptr;  // the lane reading furthest
#pragma GCC unroll 4
  for (int l = 0; l < 4; ++l) {
    at[l] = row_at[l % kRows] + (column + 4 * (l / kRows)) * channels;
    if (at[l] > last) last = at[l];
  }
  const std::int64_t step = kPositions * channels;
  // Stores whose lanes may read 16 whole bytes: the masked loads cost a shuffle port each.
  const std::int64_t room = end - last - 16;
  std::int64_t whole = room < 0 ? 0 : room / step + 1;
  if (whole > stores) whole = stores;
  std::int64_t i = 0;
  for (; i < whole; ++i) _mm512_storeu_si512(out + i * 64, quad_lanes<true>(c, at, i * step));
  for (; i < stores; ++i) _mm512_storeu_si512(out + i * 64, quad_lanes<false>(c, at, i * step));
}

}  // namespace

void interleave_rows(const RowInterleave& r) {
  const auto rows = static_cast<std::int32_t>(r.rows_per_group);  // 2, 4, 8 or 16
  const auto channels = static_cast<std::int32_t>(r.channels);
  const auto width = static_cast<std::int32_t>(r.width);
  const std::int64_t image_bytes = r.height * r.width * r.channels;
  const std::int64_t group_bytes = r.positions * rows * 4;
  const std::int32_t per_vector = 16 / rows;  // positions per store
  alignas(64) std::int32_t lane_rows[16], lane_positions[16], order[16];
  alignas(64) std::int8_t spread[64];
  for (int k = 0; k < 16; ++k) {
    lane_rows[k] = k % rows;
    lane_positions[k] = k / rows;
    const int p = k / rows, j = k % rows;
    order[k] = 4 * ((p / 4) * rows + j) + p % 4;
  }
  for (int k = 0; k < 64; ++k) {
    const int p = k % 16 / 4, b = k % 4;
    spread[k] = static_cast<std::int8_t>(b < channels ? p * channels + b : 0x80);
  }
  const __m512i row_of_lane = _mm512_load_si512(lane_rows);
  const __m512i position_of_lane = _mm512_load_si512(lane_positions);
  const std::uint32_t fill_word = r.fill * 0x01010101u;
  const __m512i fill = _mm512_set1_epi32(static_cast<std::int32_t>(fill_word));
  // The pixel's bytes of a dword read at its first channel; the rest is the next pixel's.
  const std::uint32_t pixel_mask = channels == 4 ? 0xffffffffu : (1u << (8 * channels)) - 1;
  const __m512i keep = _mm512_set1_epi32(static_cast<std::int32_t>(pixel_mask));
  const __m512i flip =
      _mm512_set1_epi32(r.flip_sign ? static_cast<std::int32_t>(0x80808080u & pixel_mask) : 0);
  const Quads quads{_mm512_load_si512(spread), _mm512_load_si512(order), flip,
                    _mm512_set1_epi32(static_cast<std::int32_t>(fill_word & ~pixel_mask)),
                    static_cast<__mmask16>((1u << (4 * channels)) - 1)};
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
    // The stores [inner_begin, inner_end) (in positions) whose pixels are all inside the input
    // go the shuffle path, where every row is inside and there are 2 or 4 of them.
    std::int64_t inner_begin = 0, inner_end = 0;
    if ((rows == 2 || rows == 4) && row_inside == 0xffff) {
      inner_begin = (r.left + per_vector - 1) / per_vector * per_vector;
      const std::int64_t last = r.left + r.width < positions ? r.left + r.width : positions;
      inner_end = inner_begin < last ? inner_begin + (last - inner_begin) / per_vector * per_vector
                                     : inner_begin;
    }
    if (inner_end > inner_begin) {
      const std::uint8_t* row_at[4];
      for (int j = 0; j < rows; ++j) {
        row_at[j] = image + (g * r.group_step + j - r.top) * r.width * channels;
      }
      const std::int64_t stores = (inner_end - inner_begin) / per_vector;
      std::uint8_t* to = out + inner_begin * rows * 4;
      if (rows == 2) {
        interleave_quads<2>(quads, row_at, inner_begin - r.left, channels, stores,
                            image + image_bytes, to);
      } else {
        interleave_quads<4>(quads, row_at, inner_begin - r.left, channels, stores,
                            image + image_bytes, to);
      }
    }
    for (std::int64_t x = 0; x < positions; x += per_vector) {
      if (x == inner_begin && inner_end > inner_begin) x = inner_end;
      if (x >= positions) break;
      const __m512i w = _mm512_add_epi32(position_of_lane,
                                         _mm512_set1_epi32(static_cast<std::int32_t>(x - r.left)));
      const __mmask16 inside = row_inside & _mm512_cmpge_epi32_mask(w, _mm512_setzero_si512()) &
                               _mm512_cmplt_epi32_mask(w, _mm512_set1_epi32(width));
      __m512i offset =
          _mm512_add_epi32(row_offset, _mm512_mullo_epi32(w, _mm512_set1_epi32(channels)));
      const __mmask16 at_end = _mm512_mask_cmpgt_epi32_mask(inside, offset, last_read);
      offset = _mm512_mask_sub_epi32(offset, at_end, offset, back);
      __m512i v = _mm512_mask_i32gather_epi32(fill, inside, offset, image, 1);
      v = _mm512_mask_srlv_epi32(v, at_end, v, back_bits);
      // Inside: the pixel's bytes (flipped), the fill byte after them: (keep ? x ^ flip : fill),
      // 0xe4 being "C ? A : B".
      v = _mm512_mask_mov_epi32(
          v, inside, _mm512_ternarylogic_epi32(_mm512_xor_si512(v, flip), fill, keep, 0xe4));
      const std::int64_t left = (positions - x) * rows;  // dwords still to write
      if (left >= 16) {
        _mm512_storeu_si512(out + x * rows * 4, v);
      } else {
        _mm512_mask_storeu_epi32(out + x * rows * 4, static_cast<__mmask16>((1u << left) - 1), v);
      }
    }
  }
}

}  // namespace qconv::detail::avx512_vnni
