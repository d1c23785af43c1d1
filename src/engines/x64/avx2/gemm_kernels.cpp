// SPDX-License-Identifier: Apache-2.0
// The avx2 GEMM tiles, exact on any AVX2 CPU: up to 4 output pixels x 16 channels of a panel per
// pass. vpmaddubsw would be one instruction per 4 bytes as with vpdpbusd, but it saturates its
// 16-bit pair sums (255·127·2 > 32767): the numbers would differ from the reference. Instead each
// 4 input bytes x0..x3 of a row and 4 weight bytes w0..w3 of a lane are widened to 16 bits in
// registers — (x0, x2) and (x1, x3) with a mask and a shift, (w0, w2) and (w1, w3) with sign-
// extending shifts — and vpmaddwd sums x0·w0 + x2·w2 and x1·w1 + x3·w3 exactly in s32. The packed
// panels stay the common s8 form. (Measured against splitting the input into nibbles so that
// vpmaddubsw cannot saturate — two vpmaddubsw and two vpmaddwd per 4 bytes — this is faster:
// see the README's engines section.) Built with AVX2 flags: see kernel_set.hpp.
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2 {
namespace {

#if !defined(QCONV_AVX2_NIBBLES)
struct Widened {
  struct Input {
    __m256i even, odd;  // (x0, x2) and (x1, x3) as u16 pairs in every lane
  };
  struct Weights {
    __m256i even, odd;  // (w0, w2) and (w1, w3) as s16 pairs per lane
  };
  static Input input(std::uint32_t bytes) {
    const __m256i b = _mm256_set1_epi32(static_cast<int>(bytes));
    return {_mm256_and_si256(b, _mm256_set1_epi16(0x00ff)), _mm256_srli_epi16(b, 8)};
  }
  static Weights weights(const std::int8_t* p) {
    const __m256i w = _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
    return {_mm256_srai_epi16(_mm256_slli_epi16(w, 8), 8), _mm256_srai_epi16(w, 8)};
  }
  static __m256i add(__m256i acc, const Input& x, const Weights& w) {
    acc = _mm256_add_epi32(acc, _mm256_madd_epi16(x.even, w.even));
    return _mm256_add_epi32(acc, _mm256_madd_epi16(x.odd, w.odd));
  }
};
using Dot = Widened;
#else
// The alternative measured: x = 16·hi + lo, each nibble times s8 weights in vpmaddubsw (pair sums
// at most 2·15·128: no saturation), widened and weighted 16 and 1 by vpmaddwd.
struct Nibbles {
  struct Input {
    __m256i lo, hi;
  };
  using Weights = __m256i;
  static Input input(std::uint32_t bytes) {
    const __m256i b = _mm256_set1_epi32(static_cast<int>(bytes));
    const __m256i mask = _mm256_set1_epi8(0x0f);
    return {_mm256_and_si256(b, mask), _mm256_and_si256(_mm256_srli_epi16(b, 4), mask)};
  }
  static Weights weights(const std::int8_t* p) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(p));
  }
  static __m256i add(__m256i acc, const Input& x, Weights w) {
    const __m256i lo = _mm256_madd_epi16(_mm256_maddubs_epi16(x.lo, w), _mm256_set1_epi16(1));
    const __m256i hi = _mm256_madd_epi16(_mm256_maddubs_epi16(x.hi, w), _mm256_set1_epi16(16));
    return _mm256_add_epi32(acc, _mm256_add_epi32(lo, hi));
  }
};
using Dot = Nibbles;
#endif

}  // namespace

gemm::GemmTileKernel gemm_tile_kernel(int rows, int /*vectors*/) {
  switch (rows) {
    case 1: return &x64_ymm::gemm_tile<Dot, 1>;
    case 2: return &x64_ymm::gemm_tile<Dot, 2>;
    case 3: return &x64_ymm::gemm_tile<Dot, 3>;
    default: return &x64_ymm::gemm_tile<Dot, 4>;
  }
}

}  // namespace qconv::detail::avx2
