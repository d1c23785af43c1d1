// SPDX-License-Identifier: Apache-2.0
// The GEMM register tile on 256-bit registers, shared by the avx2_vnni and avx2 kernel sets: each
// 16-lane sub-panel of a panel (kernel_set.hpp: 64 bytes of each K step, two ymm of 8 lanes x 4
// bytes) in turn, `kRows` output pixels x 16 channels in 2·kRows accumulators, all taps and steps
// summed in registers, the rows' input bytes read again from L1 for the next sub-panel. The
// multiply-accumulate of 4 input values by 4 weights per lane is the policy `Dot`'s:
//   Dot::Input Dot::input(const std::uint8_t* p)   a row's 4 input values at p, broadcast
//   Dot::Input Dot::input_tail(p, n)               the same for the last n < 4 channels
//   Dot::Weights Dot::weights(const std::int8_t*)  8 lanes x 4 weights
//   __m256i Dot::add(__m256i acc, Dot::Input, Dot::Weights)
//   Dot::kWidening       the weights' bytes per packed byte (KernelSet::weight_widening)
//   Dot::kInputWidening  the input's bytes per value (KernelSet::input_widening): offsets scale
// Included only by files built with AVX2 (or wider) flags; everything here has internal linkage
// (see kernel_set.hpp for why no standard-library template may be instantiated there).
#pragma once

#include <immintrin.h>

#include <cstring>

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::x64_ymm {
namespace {

using gemm::GemmTile;

inline std::uint32_t load_u32(const std::uint8_t* p) {
  std::uint32_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// The last 1 to 3 bytes of a row's channels, zero-extended: nothing past them is read.
inline std::uint32_t load_tail(const std::uint8_t* p, std::int32_t n) {
  std::uint32_t v = p[0];
  if (n > 1) v |= std::uint32_t{p[1]} << 8;
  if (n > 2) v |= std::uint32_t{p[2]} << 16;
  return v;
}

inline std::int64_t row_offset(const GemmTile& t, int i) {
  return t.row_offsets != nullptr ? t.row_offsets[i] : i * t.row_stride;
}

// Σ of `count` u8 bytes at p: vpsadbw 32, then 16 and 8 at a time, the last 1 to 7 one by one
// (nothing past them is read).
inline std::int64_t sum_bytes(const std::uint8_t* p, std::int64_t count) {
  __m256i sums = _mm256_setzero_si256();
  std::int64_t c = 0;
  for (; c + 32 <= count; c += 32) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + c));
    sums = _mm256_add_epi64(sums, _mm256_sad_epu8(v, _mm256_setzero_si256()));
  }
  __m128i half = _mm_add_epi64(_mm256_castsi256_si128(sums), _mm256_extracti128_si256(sums, 1));
  if (c + 16 <= count) {
    const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p + c));
    half = _mm_add_epi64(half, _mm_sad_epu8(v, _mm_setzero_si128()));
    c += 16;
  }
  if (c + 8 <= count) {
    const __m128i v = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + c));
    half = _mm_add_epi64(half, _mm_sad_epu8(v, _mm_setzero_si128()));
    c += 8;
  }
  std::int64_t total = _mm_cvtsi128_si64(half) + _mm_extract_epi64(half, 1);
  for (; c < count; ++c) total += p[c];
  return total;
}

// Σ of `count` u16 values at p (a widened input).
inline std::int64_t sum_words(const std::uint8_t* p, std::int32_t count) {
  std::int64_t total = 0;
  for (std::int32_t c = 0; c < count; ++c) {
    std::uint16_t v;
    std::memcpy(&v, p + 2 * c, sizeof v);
    total += v;
  }
  return total;
}

// The sums' start for the 8 lanes from `lane` of the panel: −zx·zero_point_sums, or 0 when
// zero_point_sums is null (GemmTile, FlatRun).
inline __m256i constant_term(const std::int32_t* zero_point_sums, std::int32_t input_zero_point,
                             int lane) {
  if (zero_point_sums == nullptr) return _mm256_setzero_si256();
  const __m256i sums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(zero_point_sums + lane));
  return _mm256_sub_epi32(_mm256_setzero_si256(),
                          _mm256_mullo_epi32(_mm256_set1_epi32(input_zero_point), sums));
}
inline __m256i constant_term(const GemmTile& t, int lane) {
  return constant_term(t.zero_point_sums, t.input_zero_point, lane);
}

template <class Dot, int kRows>
void sub_panel(const GemmTile& t, int j) {
  constexpr int kIn = Dot::kInputWidening;
  const __m256i start[2] = {constant_term(t, j * 16), constant_term(t, j * 16 + 8)};
  __m256i acc[kRows][2];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    acc[i][0] = start[0];
    acc[i][1] = start[1];
  }
  constexpr int kHalf = 32 * Dot::kWidening;  // 8 lanes of a step
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64 * Dot::kWidening;
  const std::int32_t tail = t.channels & 3;
  const std::int32_t full_steps = tail != 0 ? t.steps - 1 : t.steps;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    const std::int64_t origin = t.first_row + t.tap_offsets[tap];
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) row[i] = t.input + kIn * (origin + row_offset(t, i));
    const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes + j * 2 * kHalf;
    for (std::int32_t k = 0; k < full_steps; ++k) {
      const typename Dot::Weights w0 = Dot::weights(w);
      const typename Dot::Weights w1 = Dot::weights(w + kHalf);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const typename Dot::Input x = Dot::input(row[i] + 4 * kIn * k);
        acc[i][0] = Dot::add(acc[i][0], x, w0);
        acc[i][1] = Dot::add(acc[i][1], x, w1);
      }
      w += step_bytes;
    }
    if (tail != 0) {
      const typename Dot::Weights w0 = Dot::weights(w);
      const typename Dot::Weights w1 = Dot::weights(w + kHalf);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const typename Dot::Input x = Dot::input_tail(row[i] + 4 * kIn * full_steps, tail);
        acc[i][0] = Dot::add(acc[i][0], x, w0);
        acc[i][1] = Dot::add(acc[i][1], x, w1);
      }
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    auto* out = reinterpret_cast<__m256i*>(t.acc + i * 64 + j * 16);
    _mm256_store_si256(out, acc[i][0]);
    _mm256_store_si256(out + 1, acc[i][1]);
  }
}

template <class Dot, int kRows>
void gemm_tile(const GemmTile& t) {
  for (int j = 0; j < t.vectors; ++j) sub_panel<Dot, kRows>(t, j);
  if (t.window_sums == nullptr) return;
  // Σx of each row's window, for the weight zero point's correction (the bytes are in L1).
  for (int i = 0; i < kRows; ++i) {
    std::int64_t sum = 0;
    for (std::int32_t tap = 0; tap < t.taps; ++tap) {
      const std::int64_t at = t.first_row + t.tap_offsets[tap] + row_offset(t, i);
      sum += Dot::kInputWidening == 1 ? sum_bytes(t.input + at, t.channels)
                                      : sum_words(t.input + 2 * at, t.channels);
    }
    t.window_sums[i] = static_cast<std::int32_t>(static_cast<std::uint32_t>(sum));
  }
}

}  // namespace
}  // namespace qconv::detail::x64_ymm
