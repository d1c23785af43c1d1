// SPDX-License-Identifier: Apache-2.0
// Built with AVX-512 flags; see transpose_kernels.hpp.
#include "engines/x64/avx512_vnni/transpose_kernels.hpp"

// GCC 12 warns falsely about the undefined upper lanes its own headers use (_mm_undefined_si128).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

namespace qconv::detail::avx512_vnni {

namespace {

// The interleaving rounds of the 16 x 16 SSE2 block (layout_transpose.cpp) in each 128-bit lane
// (the unpack instructions work within lanes): a[i] holds row i of four 16 x 16 blocks, one per
// lane; afterwards even[m] and odd[m] hold columns 2m and 2m + 1 of them, lane by lane.
inline void transpose_lanes(__m512i a[16], __m512i even[8], __m512i odd[8]) {
  __m512i b[16];
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = _mm512_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
    b[2 * i + 1] = _mm512_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
  }
  for (int g = 0; g < 4; ++g) {
    for (int h = 0; h < 2; ++h) {
      const __m512i lo = b[4 * g + h], hi = b[4 * g + 2 + h];
      a[4 * g + 2 * h] = _mm512_unpacklo_epi16(lo, hi);
      a[4 * g + 2 * h + 1] = _mm512_unpackhi_epi16(lo, hi);
    }
  }
  for (int e = 0; e < 2; ++e) {
    for (int q = 0; q < 4; ++q) {
      const __m512i lo = a[8 * e + q], hi = a[8 * e + 4 + q];
      b[8 * e + 2 * q] = _mm512_unpacklo_epi32(lo, hi);
      b[8 * e + 2 * q + 1] = _mm512_unpackhi_epi32(lo, hi);
    }
  }
  for (int m = 0; m < 8; ++m) {
    even[m] = _mm512_unpacklo_epi64(b[m], b[8 + m]);
    odd[m] = _mm512_unpackhi_epi64(b[m], b[8 + m]);
  }
}

}  // namespace

void transpose_16x64_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                           std::int64_t out_stride) {
  // Lane L of a 64-byte row is a block of columns 16L..16L+15.
  __m512i a[16], even[8], odd[8];
  for (int i = 0; i < 16; ++i) a[i] = _mm512_loadu_si512(in + i * in_stride);
  transpose_lanes(a, even, odd);
  // Lane L of the vector for column j of a block is column 16L + j; storing a lane is a store
  // (vextracti32x4 to memory), not a shuffle.
  for (int m = 0; m < 8; ++m) {
    std::uint8_t* column = out + (2 * m) * out_stride;
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column), _mm512_castsi512_si128(even[m]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + out_stride),
                     _mm512_castsi512_si128(odd[m]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 16 * out_stride),
                     _mm512_extracti32x4_epi32(even[m], 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 17 * out_stride),
                     _mm512_extracti32x4_epi32(odd[m], 1));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 32 * out_stride),
                     _mm512_extracti32x4_epi32(even[m], 2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 33 * out_stride),
                     _mm512_extracti32x4_epi32(odd[m], 2));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 48 * out_stride),
                     _mm512_extracti32x4_epi32(even[m], 3));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(column + 49 * out_stride),
                     _mm512_extracti32x4_epi32(odd[m], 3));
  }
}

namespace {

// Columns [0, cols) of 64 rows (kWhole: all 16, plain loads and stores).
template <bool kWhole>
void transpose_64_rows(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                       std::int64_t out_stride, int cols) {
  // Lane L holds rows 16L..16L+15: the vector of column j is then column j of all 64 rows, one
  // whole 64-byte store (a cache line where the output is aligned).
  const auto mask = static_cast<__mmask16>(kWhole ? 0xffff : (1u << cols) - 1);
  __m512i a[16], even[8], odd[8];
  for (int i = 0; i < 16; ++i) {
    const auto row = [&](int r) {
      const std::uint8_t* at = in + r * in_stride;
      // Masked: the bytes past the last column are not read (they may lie past the allocation).
      return kWhole ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(at))
                    : _mm_maskz_loadu_epi8(mask, at);
    };
    __m512i v = _mm512_castsi128_si512(row(i));
    v = _mm512_inserti32x4(v, row(16 + i), 1);
    v = _mm512_inserti32x4(v, row(32 + i), 2);
    a[i] = _mm512_inserti32x4(v, row(48 + i), 3);
  }
  transpose_lanes(a, even, odd);
  for (int m = 0; m < 8; ++m) {
    if (kWhole || 2 * m < cols) _mm512_storeu_si512(out + (2 * m) * out_stride, even[m]);
    if (kWhole || 2 * m + 1 < cols) _mm512_storeu_si512(out + (2 * m + 1) * out_stride, odd[m]);
  }
}

}  // namespace

void transpose_64x16_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                           std::int64_t out_stride) {
  transpose_64_rows<true>(in, in_stride, out, out_stride, 16);
}

void transpose_64xn_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                          std::int64_t out_stride, int cols) {
  transpose_64_rows<false>(in, in_stride, out, out_stride, cols);
}

void transpose_4x64_bytes_to_dwords(const std::uint8_t* in, std::int64_t in_stride, int rows,
                                    int cols, std::uint8_t* out) {
  // Masked loads: the bytes past the image are not read (they may lie past its allocation).
  const __mmask64 columns = cols >= 64 ? ~__mmask64{0} : (__mmask64{1} << cols) - 1;
  __m512i row[4];
  for (int r = 0; r < 4; ++r) {
    row[r] =
        r < rows ? _mm512_maskz_loadu_epi8(columns, in + r * in_stride) : _mm512_setzero_si512();
  }
  // Within each 128-bit lane L: byte pairs (rows 0-1, rows 2-3), then dwords of columns
  // 16L..16L+3, +4..+7, +8..+11, +12..+15.
  const __m512i low01 = _mm512_unpacklo_epi8(row[0], row[1]);
  const __m512i high01 = _mm512_unpackhi_epi8(row[0], row[1]);
  const __m512i low23 = _mm512_unpacklo_epi8(row[2], row[3]);
  const __m512i high23 = _mm512_unpackhi_epi8(row[2], row[3]);
  const __m512i q0 = _mm512_unpacklo_epi16(low01, low23);
  const __m512i q1 = _mm512_unpackhi_epi16(low01, low23);
  const __m512i q2 = _mm512_unpacklo_epi16(high01, high23);
  const __m512i q3 = _mm512_unpackhi_epi16(high01, high23);
  // Columns 16L..16L+15 are lane L of q0, q1, q2, q3: gather those lanes into one vector.
  const __m512i lanes01_of_q01 = _mm512_shuffle_i32x4(q0, q1, 0x44);
  const __m512i lanes01_of_q23 = _mm512_shuffle_i32x4(q2, q3, 0x44);
  const __m512i lanes23_of_q01 = _mm512_shuffle_i32x4(q0, q1, 0xEE);
  const __m512i lanes23_of_q23 = _mm512_shuffle_i32x4(q2, q3, 0xEE);
  _mm512_storeu_si512(out, _mm512_shuffle_i32x4(lanes01_of_q01, lanes01_of_q23, 0x88));
  _mm512_storeu_si512(out + 64, _mm512_shuffle_i32x4(lanes01_of_q01, lanes01_of_q23, 0xDD));
  _mm512_storeu_si512(out + 128, _mm512_shuffle_i32x4(lanes23_of_q01, lanes23_of_q23, 0x88));
  _mm512_storeu_si512(out + 192, _mm512_shuffle_i32x4(lanes23_of_q01, lanes23_of_q23, 0xDD));
}

void pack_dwords_to_3_bytes(const std::uint8_t* dwords, int count, std::uint8_t* out) {
  // Four dwords at a time, each 128-bit group's 12 bytes compacted by one shuffle and stored
  // masked to those 12 (a byte-sized copy per pixel took most of a 3-channel image's transpose).
  const __m128i compact = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  for (int j = 0; j < count; j += 4) {
    const int n = count - j < 4 ? count - j : 4;
    const auto mask = static_cast<__mmask16>((1u << (3 * n)) - 1);
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(dwords + 4 * j));
    _mm_mask_storeu_epi8(out + 3 * j, mask, _mm_shuffle_epi8(v, compact));
  }
}

}  // namespace qconv::detail::avx512_vnni
