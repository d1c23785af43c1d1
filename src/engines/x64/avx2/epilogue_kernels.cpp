// SPDX-License-Identifier: Apache-2.0
// The epilogues in 8 lanes: a tile's stored sums, the zero-point corrections, then the output
// stage (stage_lanes.hpp) into the output tensor. Built with AVX2 flags: see kernel_set.hpp.
#include <immintrin.h>

#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/stage_lanes.hpp"

namespace qconv::detail::avx2 {
namespace {

using gemm::TileOutput;

// acc − zw'·Σx, the exact sum (gemm_engine.cpp; the kernel started it at −zx·Σ(w' − zw')), for
// row i of vector j.
struct Corrections {
  bool window;
  __m256i weight_zero_points;
  static Corrections load(const TileOutput& t, int j) {
    const bool window = t.window_sums != nullptr && t.weight_zero_points != nullptr;
    return {window,
            window && !t.uniform_weight_zero_point
                ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.weight_zero_points + j * 8))
                : _mm256_setzero_si256()};
  }
  // With one weight zero point for every channel the product is one scalar per row.
  static std::int32_t row_term(const TileOutput& t, std::int32_t i) {
    return t.window_sums != nullptr && t.weight_zero_points != nullptr &&
                   t.uniform_weight_zero_point
               ? static_cast<std::int32_t>(static_cast<std::uint32_t>(t.weight_zero_points[0]) *
                                           static_cast<std::uint32_t>(t.window_sums[i]))
               : 0;
  }
  __m256i apply(__m256i acc, const TileOutput& t, std::int32_t i, __m256i row) const {
    if (!window) return acc;
    if (t.uniform_weight_zero_point) return _mm256_sub_epi32(acc, row);
    return _mm256_sub_epi32(
        acc, _mm256_mullo_epi32(weight_zero_points, _mm256_set1_epi32(t.window_sums[i])));
  }
};

// `kPairs` pairs of 8-channel vectors (16 channels each): a compile-time count, so that the
// per-vector constants and results stay in registers. kWindow: the weight zero point's
// correction zw'·Σx comes off first.
template <SchemeKind K, DType D, int kPairs, bool kWindow>
void epilogue_pairs(const TileOutput& t, const StageView& view) {
  constexpr int kVectors = 2 * kPairs;
  const Stage s = Stage::make(view, saturated_low<D>(view));
  // The tile's fields as locals: the byte stores may alias anything.
  const std::int32_t* const acc_rows = t.acc;
  const std::int32_t rows = t.rows, channels = t.channels;
  const std::int64_t stride = t.output_row_stride;
  void* const output = t.output;
  const std::int32_t* const window_sums = t.window_sums;
  const bool uniform = t.uniform_weight_zero_point;
  const std::uint32_t first_zero_point =
      kWindow ? static_cast<std::uint32_t>(t.weight_zero_points[0]) : 0;
  Lanes at[kVectors];
  __m256i zero_points[kVectors];
#pragma GCC unroll 8
  for (int j = 0; j < kVectors; ++j) {
    at[j] = Lanes::load<K>(view, t.channel + 8 * j);
    zero_points[j] =
        kWindow ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(t.weight_zero_points + j * 8))
                : _mm256_setzero_si256();
  }
  for (std::int32_t i = 0; i < rows; ++i) {
    __m256i r[kVectors];
    __m256i window = _mm256_setzero_si256(), row_term = _mm256_setzero_si256();
    if constexpr (kWindow) {
      window = _mm256_set1_epi32(window_sums[i]);
      row_term = _mm256_set1_epi32(
          static_cast<std::int32_t>(first_zero_point * static_cast<std::uint32_t>(window_sums[i])));
    }
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      __m256i acc = _mm256_load_si256(reinterpret_cast<const __m256i*>(acc_rows + i * 64 + j * 8));
      if constexpr (kWindow) {  // acc − zw'·Σx, the exact sum (gemm_engine.cpp)
        acc =
            _mm256_sub_epi32(acc, uniform ? row_term : _mm256_mullo_epi32(zero_points[j], window));
      }
      r[j] = apply<K>(acc, at[j], s);
    }
    store_row<D, kVectors>(static_cast<std::byte*>(output) + i * stride * element_bytes<D>(), r,
                           channels);
  }
}

template <SchemeKind K, DType D, bool kWindow>
void epilogue_window(const TileOutput& t, const StageView& s) {
  switch ((t.channels + 15) / 16) {
    case 1: return epilogue_pairs<K, D, 1, kWindow>(t, s);
    case 2: return epilogue_pairs<K, D, 2, kWindow>(t, s);
    case 3: return epilogue_pairs<K, D, 3, kWindow>(t, s);
    default: return epilogue_pairs<K, D, 4, kWindow>(t, s);
  }
}

template <SchemeKind K, DType D>
void epilogue(const TileOutput& t, const StageView& stage) {
  const StageView s = stage;  // a local copy: the byte stores may alias the caller's
  if (t.window_sums != nullptr && t.weight_zero_points != nullptr) {
    epilogue_window<K, D, true>(t, s);
  } else {
    epilogue_window<K, D, false>(t, s);
  }
}

}  // namespace

void correct_tile(const TileOutput& t) {
  const int vectors = (t.channels + 7) / 8;
  for (int j = 0; j < vectors; ++j) {
    const Corrections fix = Corrections::load(t, j);
    for (std::int32_t i = 0; i < t.rows; ++i) {
      auto* a = reinterpret_cast<__m256i*>(t.acc + i * 64 + j * 8);
      const __m256i row_term = _mm256_set1_epi32(Corrections::row_term(t, i));
      _mm256_store_si256(a, fix.apply(_mm256_load_si256(a), t, i, row_term));
    }
  }
}

gemm::EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype) {
  return for_vector_stage<gemm::EpilogueKernel>(
      scheme, output_dtype,
      []<SchemeKind K, DType D>() -> gemm::EpilogueKernel { return &epilogue<K, D>; });
}

}  // namespace qconv::detail::avx2
