// SPDX-License-Identifier: Apache-2.0
// Depthwise tiles for the AVX2 kernel sets: channels in lanes, up to max_rows output pixels x 64
// channels, two taps per vpmaddwd, x · (w − zw) in s32 from sums started at −zx · Σ(w − zw)
// (DepthwiseTile::zero_point_sums) — exact, so the output stage needs no correction: the sums go
// through it from the registers straight to the output (depthwise_output_tile), or are stored for
// an epilogue (depthwise_tile, for the pairs without a vector stage). Built with AVX2 flags: see
// kernel_set.hpp.
#include <immintrin.h>

#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/stage_lanes.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

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

// Two taps' 16 channels as 16-bit pairs, channels 0-7 and 8-15.
inline void pairs(__m128i a, __m128i b, __m256i& low, __m256i& high) {
  low = _mm256_cvtepu8_epi16(_mm_unpacklo_epi8(a, b));
  high = _mm256_cvtepu8_epi16(_mm_unpackhi_epi8(a, b));
}

// Where a tile's sums go: stored as [rows][64] s32 for an epilogue.
struct StoreSums {
  std::int32_t* acc;
  template <int kRows>
  void finish(const __m256i (&sums)[kRows][2], std::int32_t first, int j,
              std::int32_t /*left*/) const {
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      std::int32_t* out = acc + (first + i) * 64 + 16 * j;
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), sums[i][0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), sums[i][1]);
    }
  }
};

// Or through the output stage, each row's (up to) 16 channels stored as they come.
template <SchemeKind K, DType D>
struct StageSums {
  const gemm::TileOutput& out;
  const StageView& view;
  template <int kRows>
  void finish(const __m256i (&sums)[kRows][2], std::int32_t first, int j, std::int32_t left) const {
    // Made here, where it is used: the scheme's few constants alone, in registers.
    const Stage stage = Stage::make(view, saturated_low<D>(view));
    const Lanes at[2] = {Lanes::load<K>(view, out.channel + 16 * j),
                         Lanes::load<K>(view, out.channel + 16 * j + 8)};
    auto* to = static_cast<std::byte*>(out.output) +
               (first * out.output_row_stride + 16 * j) * element_bytes<D>();
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      const __m256i r[2] = {apply<K>(sums[i][0], at[0], stage), apply<K>(sums[i][1], at[1], stage)};
      store_row<D, 2>(to, r, left < 16 ? left : 16);
      to += out.output_row_stride * element_bytes<D>();
    }
  }
};

// kRows rows x 16 channels (vector j): each pair of taps' weights loaded once for all the rows.
// (Not inlined into its callers, and the stage read after the multiplies: with the stage's
// constants in registers through the tap loops GCC 12 kept the sums on the stack.)
template <int kRows, bool kFull, class Sums>
[[gnu::noinline]] void rows16(const gemm::DepthwiseTile& t, const Sums& sums,
                              const __m256i (&start)[2], std::int32_t first, int j,
                              std::int32_t left) {
  const auto load = [&](const std::uint8_t* p) {
    return kFull ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)) : load16(p, left);
  };
  const std::uint8_t* row[kRows];
  __m256i acc[kRows][2];
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
    row[i] = t.input + (t.first_row + (first + i) * t.row_stride + 16 * j);
    acc[i][0] = start[0];
    acc[i][1] = start[1];
  }
  std::int32_t tap = 0;
  for (; tap + 1 < t.taps; tap += 2) {
    // The pair's weights: tap's and tap + 1's, interleaved as 16-bit values.
    const std::int16_t* w = t.weights + (tap / 2) * 128 + 32 * j;
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
    const std::int64_t off_a = t.tap_offsets[tap], off_b = t.tap_offsets[tap + 1];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      __m256i x0, x1;
      pairs(load(row[i] + off_a), load(row[i] + off_b), x0, x1);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(x0, w0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(x1, w1));
    }
  }
  if (tap < t.taps) {  // an odd last tap, paired with a zero input and a zero weight
    const std::int16_t* w = t.weights + (tap / 2) * 128 + 32 * j;
    const __m256i w0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w));
    const __m256i w1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 16));
    const std::int64_t off_a = t.tap_offsets[tap];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      __m256i x0, x1;
      pairs(load(row[i] + off_a), _mm_setzero_si128(), x0, x1);
      acc[i][0] = _mm256_add_epi32(acc[i][0], _mm256_madd_epi16(x0, w0));
      acc[i][1] = _mm256_add_epi32(acc[i][1], _mm256_madd_epi16(x1, w1));
    }
  }
  asm volatile("" ::: "memory");
  sums.finish(acc, first, j, left);
}

template <bool kFull, class Sums>
void vector16(const gemm::DepthwiseTile& t, const Sums& sums, int j, std::int32_t left) {
  // The passes' sums start at −zx·Σ(w − zw) (or 0: zx = 0), made once. (The stage's constants
  // are not: made here and passed in memory, all of a Stage's fields were computed, a fifth of a
  // 14x14 layer; made in each pass, only the scheme's.)
  const __m256i start[2] = {x64_ymm::constant_term(t.zero_point_sums, t.zero_point, 16 * j),
                            x64_ymm::constant_term(t.zero_point_sums, t.zero_point, 16 * j + 8)};
  std::int32_t i = 0;
  for (; i + 4 <= t.rows; i += 4) rows16<4, kFull>(t, sums, start, i, j, left);
  switch (t.rows - i) {
    case 3: rows16<3, kFull>(t, sums, start, i, j, left); break;
    case 2: rows16<2, kFull>(t, sums, start, i, j, left); break;
    case 1: rows16<1, kFull>(t, sums, start, i, j, left); break;
    default: break;
  }
}

template <class Sums>
void tile(const gemm::DepthwiseTile& t, const Sums& sums) {
  // Two taps per vpmaddwd: their input bytes interleaved and widened to 16 bits, times (w − zw)
  // of both taps as 16-bit pairs (x ≤ 255, |w − zw| ≤ 255: each product and the pair's sum are
  // exact in s32). Up to 4 rows at a time share each pair's weights. (x − zx) cost a vpsubw per
  // pair of taps, row and 8 channels: 9 % of a MobileNetV2 depthwise layer.
  const int vectors = (t.channels + 15) / 16;
  for (int j = 0; j < vectors; ++j) {
    const std::int32_t left = t.channels - 16 * j;
    if (left >= 16) {
      vector16<true>(t, sums, j, left);
    } else {
      vector16<false>(t, sums, j, left);
    }
  }
}

template <SchemeKind K, DType D>
void output_tile(const gemm::DepthwiseTile& given_tile, const gemm::TileOutput& given_out,
                 const StageView& given_view) {
  // Local copies: the byte stores may alias the caller's structs.
  const gemm::DepthwiseTile t = given_tile;
  const gemm::TileOutput out = given_out;
  const StageView view = given_view;
  tile(t, StageSums<K, D>{out, view});
}

}  // namespace

void depthwise_tile(const gemm::DepthwiseTile& t) { tile(t, StoreSums{t.acc}); }

gemm::DepthwiseOutputKernel depthwise_output_tile(SchemeKind scheme, DType output_dtype) {
  return for_vector_stage<gemm::DepthwiseOutputKernel>(
      scheme, output_dtype,
      []<SchemeKind K, DType D>() -> gemm::DepthwiseOutputKernel { return &output_tile<K, D>; });
}

}  // namespace qconv::detail::avx2
