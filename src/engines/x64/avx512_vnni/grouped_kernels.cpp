// SPDX-License-Identifier: Apache-2.0
// Grouped-convolution tiles: one 64-lane panel holds several small groups side by side (64 / group
// width of them), so the lanes stay full however few channels a group has. A plain GEMM tile
// broadcasts the same 4 input bytes to every lane; here each lane needs 4 bytes of its own group,
// so each row loads the panel's input channels once per K step (64 bytes at most) and one vpermd
// per vector hands every lane its group's dword. Built with AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

inline std::int64_t row_offset(const GemmTile& t, int i) {
  return t.row_offsets != nullptr ? t.row_offsets[i] : i * t.row_stride;
}

// Rows [first, first + kRows) of the tile. With kWindowSums, each lane also sums the input bytes it
// multiplied (its own group's window) and takes zw'·Σx off its sum at the end.
template <int kRows, int kVectors, bool kWindowSums>
void grouped_rows(const GroupedTile& g, int first) {
  const GemmTile& t = g.gemm;
  __m512i lanes[kVectors], acc[kRows][kVectors], sums[kRows][kVectors];
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    lanes[j] = _mm512_loadu_si512(g.lane_dwords + 16 * j);
    __m512i start = _mm512_setzero_si512();
    if (t.zero_point_sums != nullptr) {
      start = _mm512_sub_epi32(start,
                               _mm512_mullo_epi32(_mm512_set1_epi32(t.input_zero_point),
                                                  _mm512_loadu_si512(t.zero_point_sums + j * 16)));
    }
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      acc[i][j] = start;
      if constexpr (kWindowSums) sums[i][j] = _mm512_setzero_si512();
    }
  }
  const __m512i ones = _mm512_set1_epi8(1);
  const std::int64_t step_bytes = std::int64_t{kVectors} * 64;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    const std::int64_t origin = t.first_row + t.tap_offsets[tap];
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) row[i] = t.input + (origin + row_offset(t, first + i));
    const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes;
    for (std::int32_t k = 0; k < t.steps; ++k) {
      // Step k reads bytes 4k .. span of the panel's channels: lane l's dword is lane_dwords[l]
      // past byte 4k. Masked: nothing past the panel's channels (or the tensor) is read.
      const std::int32_t left = g.span - 4 * k;
      const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (~std::uint64_t{0}) >> (64 - left);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const __m512i x = _mm512_maskz_loadu_epi8(mask, row[i] + 4 * k);
#pragma GCC unroll 4
        for (int j = 0; j < kVectors; ++j) {
          const __m512i mine = _mm512_permutexvar_epi32(lanes[j], x);
          acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], mine, _mm512_load_si512(w + j * 64));
          if constexpr (kWindowSums) sums[i][j] = _mm512_dpbusd_epi32(sums[i][j], mine, ones);
        }
      }
      w += step_bytes;
    }
  }
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    const __m512i zw =
        kWindowSums ? _mm512_loadu_si512(g.zero_points + 16 * j) : _mm512_setzero_si512();
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      __m512i sum = acc[i][j];
      if constexpr (kWindowSums) sum = _mm512_sub_epi32(sum, _mm512_mullo_epi32(zw, sums[i][j]));
      _mm512_store_si512(t.acc + (first + i) * 64 + j * 16, sum);
    }
  }
}

// Rows at most kChunk at a time, so that accumulators, lane indices and weights stay in the 32
// registers (4 vectors: 3 rows x 4 = 12 accumulators, or 2 rows with window sums).
template <int kRows, int kVectors, bool kWindowSums>
void grouped_tile(const GroupedTile& g) {
  constexpr int kChunk = kVectors <= 2 ? (kWindowSums ? 3 : 6) : (kWindowSums ? 2 : 3);
  if constexpr (kRows <= kChunk) {
    grouped_rows<kRows, kVectors, kWindowSums>(g, 0);
  } else {
    grouped_rows<kChunk, kVectors, kWindowSums>(g, 0);
    if constexpr (kRows - kChunk <= kChunk) {
      grouped_rows<kRows - kChunk, kVectors, kWindowSums>(g, kChunk);
    } else {
      grouped_rows<kChunk, kVectors, kWindowSums>(g, kChunk);
      grouped_rows<kRows - 2 * kChunk, kVectors, kWindowSums>(g, 2 * kChunk);
    }
  }
}

template <int kRows, bool kWindowSums>
GroupedTileKernel by_vectors(int vectors) {
  switch (vectors) {
    case 1: return &grouped_tile<kRows, 1, kWindowSums>;
    case 2: return &grouped_tile<kRows, 2, kWindowSums>;
    case 3: return &grouped_tile<kRows, 3, kWindowSums>;
    default: return &grouped_tile<kRows, 4, kWindowSums>;
  }
}

template <bool kWindowSums>
GroupedTileKernel by_rows(int rows, int vectors) {
  switch (rows) {
    case 1: return by_vectors<1, kWindowSums>(vectors);
    case 2: return by_vectors<2, kWindowSums>(vectors);
    case 3: return by_vectors<3, kWindowSums>(vectors);
    case 4: return by_vectors<4, kWindowSums>(vectors);
    case 5: return by_vectors<5, kWindowSums>(vectors);
    default: return by_vectors<6, kWindowSums>(vectors);
  }
}

}  // namespace

GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums) {
  return window_sums ? by_rows<true>(rows, vectors) : by_rows<false>(rows, vectors);
}

}  // namespace qconv::detail::avx512_vnni
