// SPDX-License-Identifier: Apache-2.0
// The vpdpbusd register tile's arithmetic: kRows output pixels x kVectors vectors of 16 output
// channels of s32 sums in zmm registers, one broadcast of 4 input bytes per row and K step reused
// across the weight vectors (a register broadcast beats the embedded {1to16} form: one load per
// row instead of one per vpdpbusd). Shared by the GEMM tiles, which store the sums
// (gemm_kernels.cpp), and the flat runs, which put them through the output stage in registers
// (flat_run_kernels.cpp). Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni::register_tile {

inline std::uint32_t load_u32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The sums' start: −zx·zero_point_sums[c] (GemmTile::zero_point_sums), or 0 without them.
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void start(__m512i (&acc)[kRows][kVectors],
                                         const std::int32_t* zero_point_sums,
                                         std::int32_t input_zero_point) {
  __m512i first[kVectors];
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    first[j] = _mm512_setzero_si512();
    if (zero_point_sums != nullptr) {
      first[j] = _mm512_sub_epi32(first[j],
                                  _mm512_mullo_epi32(_mm512_set1_epi32(input_zero_point),
                                                     _mm512_loadu_si512(zero_point_sums + j * 16)));
    }
  }
#pragma GCC unroll 16
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) acc[i][j] = first[j];
  }
}

// acc += one tap: row i reads `channels` bytes at row[i] as ceil(channels / 4) K steps, against
// the tap's weights `w`, [step][kVectors · 16][4] s8. vpdpbusd takes the u8 input first, the s8
// weights second.
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void add_tap(__m512i (&acc)[kRows][kVectors],
                                           const std::uint8_t* const (&row)[kRows],
                                           const std::int8_t* w, std::int32_t channels) {
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64;
  const std::int32_t full_steps = channels / 4;
  // The last 1 to 3 channels first: a masked load, so nothing past the tensor is read. (Taken
  // after the full steps, its branch joining the epilogue made the register allocator spill
  // accumulators inside the loop of the flat runs.)
  if ((channels & 3) != 0) {
    const auto tail = static_cast<__mmask16>((1u << (channels & 3)) - 1);
    const std::int8_t* const last = w + full_steps * kStepBytes;
    __m512i wv[kVectors];
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) wv[j] = _mm512_load_si512(last + j * 64);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m128i bytes = _mm_maskz_loadu_epi8(tail, row[i] + 4 * full_steps);
      const __m512i b = _mm512_broadcastd_epi32(bytes);
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], b, wv[j]);
    }
  }
  for (std::int32_t k = 0; k < full_steps; ++k) {
    __m512i wv[kVectors];
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) wv[j] = _mm512_load_si512(w + j * 64);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m512i b = _mm512_set1_epi32(static_cast<int>(load_u32(row[i] + 4 * k)));
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], b, wv[j]);
    }
    w += kStepBytes;
  }
}

}  // namespace qconv::detail::avx512_vnni::register_tile
