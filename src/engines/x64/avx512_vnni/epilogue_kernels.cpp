// SPDX-License-Identifier: Apache-2.0
// The GEMM tiles' output stage in 16 lanes (each scheme's arithmetic: stage_lanes.hpp), bit for bit
// as OutputStage::apply (the scalar oracle these are tested against), plus the zero-point
// corrections that precede it. Built with AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using stage_lanes::apply;
using stage_lanes::Lanes;

// acc − zw'·Σx, the exact sum (gemm_engine.cpp; the kernel started it at −zx·Σ(w' − zw'), or an
// AMX block left that to channel_terms), for row i of vector j.
struct Corrections {
  bool window;
  __m512i weight_zero_points;
  __m512i terms;  // TileOutput::channel_terms, or 0
  static Corrections load(const TileOutput& t, int j) {
    const bool window = t.window_sums != nullptr && t.weight_zero_points != nullptr;
    return {window,
            window && !t.uniform_weight_zero_point
                ? _mm512_loadu_si512(t.weight_zero_points + j * 16)
                : _mm512_setzero_si512(),
            t.channel_terms != nullptr ? _mm512_loadu_si512(t.channel_terms + j * 16)
                                       : _mm512_setzero_si512()};
  }
  // With one weight zero point for every channel the product is one scalar per row.
  static std::int32_t row_term(const TileOutput& t, std::int32_t i) {
    return t.window_sums != nullptr && t.weight_zero_points != nullptr &&
                   t.uniform_weight_zero_point
               ? static_cast<std::int32_t>(static_cast<std::uint32_t>(t.weight_zero_points[0]) *
                                           static_cast<std::uint32_t>(t.window_sums[i]))
               : 0;
  }
  __m512i apply(__m512i acc, const TileOutput& t, std::int32_t i, __m512i row) const {
    if (!window) return acc;
    if (t.uniform_weight_zero_point) return _mm512_sub_epi32(acc, row);
    return _mm512_sub_epi32(
        acc, _mm512_mullo_epi32(weight_zero_points, _mm512_set1_epi32(t.window_sums[i])));
  }
};

// `kVectors` vectors of 16 channels: a compile-time count, so that the per-vector constants and
// results stay in registers.
// kWindow: the tile has window sums to correct by (a weight zero point); kTerms: channel terms to
// add (an AMX block); else the sums are exact. kSaturatedLow, kSaturatedHigh: the stores' narrowing
// saturates at the output's lower (upper) bound, so the stage skips that clamp
// (row_stores::saturated_low, TileOutput::saturated_high).
// The stage and the tile are copied in: the output stores are bytes, which may alias anything the
// function reads through a pointer, so only locals stay in registers across rows.
template <SchemeKind K, DType D, int kVectors, bool kWindow, bool kTerms, bool kSaturatedLow,
          bool kSaturatedHigh>
void epilogue_vectors(const TileOutput& tile, const StageView& stage) {
  const StageView s = stage;
  const TileOutput t = tile;
  constexpr bool saturated_low = kSaturatedLow;
  constexpr bool kZeroPointOnWords = row_stores::kZeroPointOnWords<K, D, kVectors>;
  const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(s.zero_point));
  Lanes at[kVectors];
  Corrections fix[kVectors];
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    at[j] = Lanes::load<K>(s, t.channel + 16 * j);
    if constexpr (kWindow || kTerms) fix[j] = Corrections::load(t, j);
  }
  for (std::int32_t i = 0; i < t.rows; ++i) {
    __m512i r[4];
    __m512i row_term = _mm512_setzero_si512();
    if constexpr (kWindow) row_term = _mm512_set1_epi32(Corrections::row_term(t, i));
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      __m512i acc = _mm512_load_si512(t.acc + i * 64 + j * 16);
      if constexpr (kTerms) acc = _mm512_add_epi32(acc, fix[j].terms);
      if constexpr (kWindow) acc = fix[j].apply(acc, t, i, row_term);
      r[j] = apply<K>(acc, at[j], s, saturated_low, !kZeroPointOnWords, kSaturatedHigh);
    }
    row_stores::store_row<K, D, kVectors>(t.output, i * t.output_row_stride, t.channels, r,
                                          zero_point_words);
  }
}

template <SchemeKind K, DType D, bool kWindow, bool kTerms, bool kSaturatedLow, bool kSaturatedHigh>
void epilogue_by_vectors(const TileOutput& t, const StageView& s) {
  switch ((t.channels + 15) / 16) {
    case 1: return epilogue_vectors<K, D, 1, kWindow, kTerms, kSaturatedLow, kSaturatedHigh>(t, s);
    case 2: return epilogue_vectors<K, D, 2, kWindow, kTerms, kSaturatedLow, kSaturatedHigh>(t, s);
    case 3: return epilogue_vectors<K, D, 3, kWindow, kTerms, kSaturatedLow, kSaturatedHigh>(t, s);
    default: return epilogue_vectors<K, D, 4, kWindow, kTerms, kSaturatedLow, kSaturatedHigh>(t, s);
  }
}

template <SchemeKind K, DType D, bool kWindow, bool kTerms>
void epilogue_by_range(const TileOutput& t, const StageView& s) {
  if (row_stores::saturated_low<D>(s)) {
    if constexpr (K == SchemeKind::fbgemm) {
      if (t.saturated_high) return epilogue_by_vectors<K, D, kWindow, kTerms, true, true>(t, s);
    }
    return epilogue_by_vectors<K, D, kWindow, kTerms, true, false>(t, s);
  }
  epilogue_by_vectors<K, D, kWindow, kTerms, false, false>(t, s);
}

template <SchemeKind K, DType D, bool kWindow>
void epilogue_by_terms(const TileOutput& t, const StageView& s) {
  if (t.channel_terms != nullptr) return epilogue_by_range<K, D, kWindow, true>(t, s);
  epilogue_by_range<K, D, kWindow, false>(t, s);
}

template <SchemeKind K, DType D>
void epilogue(const TileOutput& t, const StageView& s) {
  if (t.window_sums != nullptr && t.weight_zero_points != nullptr) {
    return epilogue_by_terms<K, D, true>(t, s);
  }
  epilogue_by_terms<K, D, false>(t, s);
}

}  // namespace

void correct_tile(const TileOutput& t) {
  const int vectors = (t.channels + 15) / 16;
  for (int j = 0; j < vectors; ++j) {
    const Corrections fix = Corrections::load(t, j);
    for (std::int32_t i = 0; i < t.rows; ++i) {
      std::int32_t* a = t.acc + i * 64 + j * 16;
      const __m512i row_term = _mm512_set1_epi32(Corrections::row_term(t, i));
      _mm512_store_si512(
          a, fix.apply(_mm512_add_epi32(_mm512_load_si512(a), fix.terms), t, i, row_term));
    }
  }
}

EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype) {
  return stage_lanes::for_vector_stage<EpilogueKernel>(
      scheme, output_dtype, []<SchemeKind K, DType D>() { return &epilogue<K, D>; });
}

}  // namespace qconv::detail::avx512_vnni
