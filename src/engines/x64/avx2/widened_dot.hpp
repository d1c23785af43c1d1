// SPDX-License-Identifier: Apache-2.0
// The avx2 kernel set's exact multiply of 4 input values by 4 weights per lane, on 16-bit
// operands (gemm_kernels.cpp says why not vpmaddubsw): the input zero-extended to u16 by the
// planner (KernelSet::input_widening), a row's 4 values as two 32-bit broadcasts (x0, x1) and
// (x2, x3); the weights in the set's own form of the panels, (w0, w1) and (w2, w3) as s16 pairs
// widened at preparation; vpmaddwd sums x0·w0 + x1·w1 and x2·w2 + x3·w3 exactly in s32. The `Dot`
// policy of ymm_gemm_tile.hpp, and the grouped tiles' arithmetic. Included only by files built
// with AVX2 flags; internal linkage (see kernel_set.hpp).
#pragma once

#include <immintrin.h>

#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2 {
namespace {

struct Widened {
  static constexpr int kWidening = 2;
  static constexpr int kInputWidening = 2;
  struct Input {
    __m256i low, high;  // (x0, x1) and (x2, x3) as u16 pairs in every lane
  };
  struct Weights {
    __m256i low, high;  // (w0, w1) and (w2, w3) as s16 pairs per lane, widened at preparation
  };
  static Input input(const std::uint8_t* p) {  // 4 u16 input values at p
    return {_mm256_set1_epi32(static_cast<int>(x64_ymm::load_u32(p))),
            _mm256_set1_epi32(static_cast<int>(x64_ymm::load_u32(p + 4)))};
  }
  // The last n < 4 channels: the values after them (the next pixel's, or the widened copy's zero
  // slack) meet zero weights.
  static Input input_tail(const std::uint8_t* p, std::int32_t /*n*/) { return input(p); }
  static Weights weights(const std::int8_t* p) {
    return {_mm256_load_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_load_si256(reinterpret_cast<const __m256i*>(p + 32))};
  }
  static __m256i add(__m256i acc, const Input& x, const Weights& w) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x.low, w.low));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(x.high, w.high));
  }
};

}  // namespace
}  // namespace qconv::detail::avx2
