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
#include "engines/x64/avx512_vnni/vector_halves.hpp"

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

// acc[i][j] += b · w[j] for every vector j; kHalfLast: the last vector's first 8 lanes only (a
// 256-bit vpdpbusd, half the cost of a 512-bit one), its upper 8 lanes left unspecified (they hold
// no channel: the stores mask them off).
template <int kVectors, bool kHalfLast>
[[gnu::always_inline]] inline void add_row(__m512i (&acc)[kVectors], __m512i b,
                                           const __m512i (&w)[kVectors]) {
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    if (kHalfLast && j == kVectors - 1) {
      acc[j] = _mm512_castsi256_si512(_mm256_dpbusd_epi32(
          _mm512_castsi512_si256(acc[j]), _mm512_castsi512_si256(b), _mm512_castsi512_si256(w[j])));
    } else {
      acc[j] = _mm512_dpbusd_epi32(acc[j], b, w[j]);
    }
  }
}

// The weights of one K step, [kVectors · 16][4] s8 at `w` (kHalfLast: of the last vector only its
// first 8 lanes, the rest unspecified).
template <int kVectors, bool kHalfLast>
[[gnu::always_inline]] inline void load_step(const std::int8_t* w, __m512i (&wv)[kVectors]) {
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    wv[j] = kHalfLast && j == kVectors - 1 ? _mm512_castsi256_si512(_mm256_load_si256(
                                                 reinterpret_cast<const __m256i*>(w + j * 64)))
                                           : _mm512_load_si512(w + j * 64);
  }
}

// acc += the last K step of a tap's `channels` bytes where they are not a multiple of 4 (add_tap's
// operands): a masked load of its 1 to 3 bytes, so nothing past the tensor is read.
template <int kRows, int kVectors, bool kHalfLast>
[[gnu::always_inline]] inline void add_tail_step(__m512i (&acc)[kRows][kVectors],
                                                 const std::uint8_t* const (&row)[kRows],
                                                 const std::int8_t* w, std::int32_t channels) {
  if ((channels & 3) == 0) return;
  const std::int32_t full_steps = channels / 4;
  const auto tail = static_cast<__mmask16>((1u << (channels & 3)) - 1);
  __m512i wv[kVectors];
  load_step<kVectors, kHalfLast>(w + full_steps * std::int64_t{kVectors} * 64, wv);
#pragma GCC unroll 16
  for (int i = 0; i < kRows; ++i) {
    const __m128i bytes = _mm_maskz_loadu_epi8(tail, row[i] + 4 * full_steps);
    add_row<kVectors, kHalfLast>(acc[i], _mm512_broadcastd_epi32(bytes), wv);
  }
}

// acc += one tap: row i reads `channels` bytes at row[i] as ceil(channels / 4) K steps, against
// the tap's weights `w`, [step][kVectors · 16][4] s8. vpdpbusd takes the u8 input first, the s8
// weights second. kHalfLast: the last vector's lanes past its first 8 are not computed (a panel
// whose channels end in those 8; the lanes past them are left unspecified).
template <int kRows, int kVectors, bool kHalfLast = false>
[[gnu::always_inline]] inline void add_tap(__m512i (&acc)[kRows][kVectors],
                                           const std::uint8_t* const (&row)[kRows],
                                           const std::int8_t* w, std::int32_t channels) {
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64;
  const std::int32_t full_steps = channels / 4;
  // The last 1 to 3 channels first. (Taken after the full steps, its branch joining the epilogue
  // made the register allocator spill accumulators inside the loop of the flat runs.)
  add_tail_step<kRows, kVectors, kHalfLast>(acc, row, w, channels);
  for (std::int32_t k = 0; k < full_steps; ++k) {
    __m512i wv[kVectors];
    load_step<kVectors, kHalfLast>(w, wv);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m512i b = _mm512_set1_epi32(static_cast<int>(load_u32(row[i] + 4 * k)));
      add_row<kVectors, kHalfLast>(acc[i], b, wv);
    }
    w += kStepBytes;
  }
}

// acc += one tap, as add_tap (without kHalfLast), for tiles of at most 4 accumulators: the even
// K steps into acc, the odd ones into a second set added at the end. With one set each vpdpbusd
// waits for the one before it on its accumulator (a latency of 4 to 7 cycles, where two issue a
// cycle): the 1-pixel tiles of a 3x3 layer's border columns took 6 % of a 56-wide layer's time.
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void add_tap_two_sets(__m512i (&acc)[kRows][kVectors],
                                                    const std::uint8_t* const (&row)[kRows],
                                                    const std::int8_t* w, std::int32_t channels) {
  static_assert(kRows * kVectors <= 4, "two sets of accumulators fit in registers");
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64;
  const std::int32_t full_steps = channels / 4;
  if (full_steps < 4) {  // too few steps to gain: the sets' start and sum would cost more
    add_tap(acc, row, w, channels);
    return;
  }
  // The last 1 to 3 channels into acc, then pairs of steps.
  add_tail_step<kRows, kVectors, false>(acc, row, w, channels);
  __m512i odd[kRows][kVectors];
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) odd[i][j] = _mm512_setzero_si512();
  }
  const auto step = [&](__m512i(&sums)[kRows][kVectors], std::int32_t k) {
    __m512i wv[kVectors];
    load_step<kVectors, false>(w + k * kStepBytes, wv);
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      const __m512i b = _mm512_set1_epi32(static_cast<int>(load_u32(row[i] + 4 * k)));
      add_row<kVectors, false>(sums[i], b, wv);
    }
  };
  std::int32_t k = 0;
  for (; k + 1 < full_steps; k += 2) {
    step(acc, k);
    step(odd, k + 1);
  }
  if (k < full_steps) step(acc, k);
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) acc[i][j] = _mm512_add_epi32(acc[i][j], odd[i][j]);
  }
}

// acc += one tap, as add_tap, for a panel whose channels end in the first 8 lanes of its last
// vector, with every vpdpbusd a whole vector (where a 256-bit one costs what a 512-bit one does,
// as on an AMD Zen 5): the rows in pairs, the last vector of row i (i even) holding both rows'
// last 8 channels, lanes 0-7 row i's and lanes 8-15 row i + 1's, against those channels' weights
// in both halves. A pair of rows then takes 2·kVectors − 1 vpdpbusd a K step, where add_tap's
// take 2·kVectors (kHalfLast: two of them half vectors). acc[i + 1][kVectors − 1] is left as it
// is. kRows even.
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void add_tap_paired(__m512i (&acc)[kRows][kVectors],
                                                  const std::uint8_t* const (&row)[kRows],
                                                  const std::int8_t* w, std::int32_t channels) {
  static_assert(kRows % 2 == 0 && kVectors >= 2);
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64;
  constexpr int kLast = kVectors - 1;
  // One K step's weights: the full vectors, then the last vector's first 8 lanes in both halves.
  const auto load = [](const std::int8_t* at, __m512i(&wv)[kVectors]) {
#pragma GCC unroll 4
    for (int j = 0; j < kLast; ++j) wv[j] = _mm512_load_si512(at + j * 64);
    wv[kLast] = first_8_lanes_twice(at + kLast * 64);
  };
  // Rows i and i + 1 against one K step, their input dwords broadcast in b0 and b1.
  const auto add_pair = [&](int i, __m512i b0, __m512i b1, const __m512i(&wv)[kVectors]) {
#pragma GCC unroll 4
    for (int j = 0; j < kLast; ++j) {
      acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], b0, wv[j]);
      acc[i + 1][j] = _mm512_dpbusd_epi32(acc[i + 1][j], b1, wv[j]);
    }
    acc[i][kLast] =
        _mm512_dpbusd_epi32(acc[i][kLast], _mm512_mask_blend_epi32(0xff00, b0, b1), wv[kLast]);
  };
  const std::int32_t full_steps = channels / 4;
  // The last 1 to 3 channels first, masked (as add_tap).
  if ((channels & 3) != 0) {
    const auto tail = static_cast<__mmask16>((1u << (channels & 3)) - 1);
    __m512i wv[kVectors];
    load(w + full_steps * kStepBytes, wv);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; i += 2) {
      add_pair(i, _mm512_broadcastd_epi32(_mm_maskz_loadu_epi8(tail, row[i] + 4 * full_steps)),
               _mm512_broadcastd_epi32(_mm_maskz_loadu_epi8(tail, row[i + 1] + 4 * full_steps)),
               wv);
    }
  }
  for (std::int32_t k = 0; k < full_steps; ++k) {
    __m512i wv[kVectors];
    load(w, wv);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; i += 2) {
      add_pair(i, _mm512_set1_epi32(static_cast<int>(load_u32(row[i] + 4 * k))),
               _mm512_set1_epi32(static_cast<int>(load_u32(row[i + 1] + 4 * k))), wv);
    }
    w += kStepBytes;
  }
}

// acc += `steps` K steps whose input dwords lie at row[i] + offsets[k], against their weights `w`,
// [step][kVectors · 16][4] s8: a first layer's kernel rows one after the other
// (gemm::FlatRun::kernel_rows) in one loop, none of them a few steps long with the rows' pointers
// made anew before it (a 3x3 layer of 3 channels: 3 steps a kernel row).
template <int kRows, int kVectors, bool kHalfLast = false>
[[gnu::always_inline]] inline void add_steps_at(__m512i (&acc)[kRows][kVectors],
                                                const std::uint8_t* const (&row)[kRows],
                                                const std::int8_t* w, const std::int64_t* offsets,
                                                std::int32_t steps) {
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64;
  for (std::int32_t k = 0; k < steps; ++k) {
    __m512i wv[kVectors];
    load_step<kVectors, kHalfLast>(w, wv);
    const std::int64_t offset = offsets[k];
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m512i b = _mm512_set1_epi32(static_cast<int>(load_u32(row[i] + offset)));
      add_row<kVectors, kHalfLast>(acc[i], b, wv);
    }
    w += kStepBytes;
  }
}

}  // namespace qconv::detail::avx512_vnni::register_tile
