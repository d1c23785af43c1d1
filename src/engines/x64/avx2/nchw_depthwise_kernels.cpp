// SPDX-License-Identifier: Apache-2.0
// Output rows of NCHW depthwise planes with pixels in lanes (gemm::NchwDepthwiseRows) for the avx2
// kernel set: a vector is 8 consecutive output pixels of one channel, and each pair of kernel
// columns (2q, 2q + 1) of a kernel row is one vpmaddwd of the pixels' two input bytes, as u16
// pairs, by the channel's (w − zw) of those two taps, broadcast: at stride 1 a 16-byte load
// broadcast to both 128-bit lanes and one vpshufb (pixel i's bytes i and i + 1); at stride 2 a
// 16-byte load zero-extended (pixel i's bytes 2i and 2i + 1). An odd last column pairs with a zero
// weight. Up to 4 vectors share each broadcast; their sums go through the output stage with the
// channel's constants broadcast and out as bytes of the output row. No transposes: the NHWC tiles
// needed the input made NHWC before and the output NCHW after (a fifth to a half of a 3x3 layer's
// time). Built with AVX2 flags: see kernel_set.hpp.
#include <immintrin.h>

#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/stage_lanes.hpp"

namespace qconv::detail::avx2 {
namespace {

using gemm::NchwDepthwiseRows;

// Output pixels per vector, and vectors per register tile.
constexpr int kLanes = 8;
constexpr int kMaxVectors = 4;

// Pixel i's input bytes for the pair of taps at p: (p[i], p[i + 1]) at stride 1, (p[2i],
// p[2i + 1]) at stride 2, zero-extended to u16 pairs.
template <int kStride>
inline __m256i tap_pair(const std::uint8_t* p) {
  const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (kStride == 2) {
    return _mm256_cvtepu8_epi16(bytes);
  } else {
    const __m256i index =
        _mm256_setr_epi8(0, -1, 1, -1, 1, -1, 2, -1, 2, -1, 3, -1, 3, -1, 4, -1,  //
                         4, -1, 5, -1, 5, -1, 6, -1, 6, -1, 7, -1, 7, -1, 8, -1);
    return _mm256_shuffle_epi8(_mm256_broadcastsi128_si256(bytes), index);
  }
}

// kVectors vectors of output pixels from `first`, through the stage, stored (the row's last ones:
// only the pixels before `width`).
template <SchemeKind K, DType D, int kStride, int kVectors>
[[gnu::always_inline]] inline void pixels(const NchwDepthwiseRows& row, const Lanes& at,
                                          const Stage& stage, const std::uint8_t* input,
                                          std::uint8_t* output, std::int32_t first) {
  __m256i acc[kVectors];
  const __m256i start = _mm256_set1_epi32(row.start);
#pragma GCC unroll 4
  for (int v = 0; v < kVectors; ++v) acc[v] = start;
  const std::uint8_t* origin = input + std::int64_t{first} * kStride;
  const std::int32_t* w = row.weights;
  for (std::int32_t r = 0; r < row.kernel_h; ++r) {
    for (std::int32_t q = 0; q < row.pairs; ++q) {
      const __m256i weights = _mm256_set1_epi32(*w++);
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        const __m256i x = tap_pair<kStride>(origin + v * kLanes * kStride + 2 * q);
        acc[v] = _mm256_add_epi32(acc[v], _mm256_madd_epi16(x, weights));
      }
    }
    origin += row.row_stride;
  }
  __m256i r[kMaxVectors];
#pragma GCC unroll 4
  for (int v = 0; v < kMaxVectors; ++v) r[v] = v < kVectors ? apply<K>(acc[v], at, stage) : r[0];
  // Vector v's lanes (L, i) are pixels 8v + 4L + i: the packs work within 128-bit lanes, and one
  // vpermd puts their dwords back in pixel order.
  const __m256i words01 = _mm256_packs_epi32(r[0], r[1]);
  const __m256i words23 = _mm256_packs_epi32(r[2], r[3]);
  const __m256i packed =
      D == DType::u8 ? _mm256_packus_epi16(words01, words23) : _mm256_packs_epi16(words01, words23);
  const __m256i bytes =
      _mm256_permutevar8x32_epi32(packed, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  std::uint8_t* out = output + first;
  const std::int32_t count =
      row.width - first < kVectors * kLanes ? row.width - first : kVectors * kLanes;
  if (count == 4 * kLanes) {
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
    return;
  }
  alignas(32) std::uint8_t tmp[4 * kLanes];
  _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), bytes);
  std::int32_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    _mm_storel_epi64(reinterpret_cast<__m128i*>(out + i),
                     _mm_loadl_epi64(reinterpret_cast<const __m128i*>(tmp + i)));
  }
  for (; i < count; ++i) out[i] = tmp[i];
}

template <SchemeKind K, DType D, int kStride>
void output_rows(const NchwDepthwiseRows& given_rows, const StageView& given_view) {
  // Local copies: the byte stores may alias the caller's structs.
  const NchwDepthwiseRows row = given_rows;
  const StageView view = given_view;
  const Stage stage = Stage::make(view, saturated_low<D>(view));
  const Lanes at = Lanes::load<K, true>(view, row.channel);
  const std::uint8_t* input = row.input;
  auto* output = static_cast<std::uint8_t*>(row.output);
  for (std::int32_t y = 0; y < row.rows; ++y) {
    std::int32_t first = 0;
    for (; first + kMaxVectors * kLanes <= row.width; first += kMaxVectors * kLanes) {
      pixels<K, D, kStride, 4>(row, at, stage, input, output, first);
    }
    switch ((row.width - first + kLanes - 1) / kLanes) {
      case 1: pixels<K, D, kStride, 1>(row, at, stage, input, output, first); break;
      case 2: pixels<K, D, kStride, 2>(row, at, stage, input, output, first); break;
      case 3: pixels<K, D, kStride, 3>(row, at, stage, input, output, first); break;
      case 4: pixels<K, D, kStride, 4>(row, at, stage, input, output, first); break;
      default: break;
    }
    input += row.output_row_step;
    output += row.width;
  }
}

}  // namespace

gemm::NchwDepthwiseKernel nchw_depthwise_row_kernel(SchemeKind scheme, DType output_dtype,
                                                    int stride_w) {
  if (output_dtype == DType::s32 || (stride_w != 1 && stride_w != 2)) return nullptr;
  return for_vector_stage<gemm::NchwDepthwiseKernel>(
      scheme, output_dtype, [stride_w]<SchemeKind K, DType D>() -> gemm::NchwDepthwiseKernel {
        return stride_w == 1 ? &output_rows<K, D, 1> : &output_rows<K, D, 2>;
      });
}

}  // namespace qconv::detail::avx2
