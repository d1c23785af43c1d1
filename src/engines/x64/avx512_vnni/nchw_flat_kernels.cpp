// SPDX-License-Identifier: Apache-2.0
// NCHW 1x1 layers with pixels in lanes (gemm::NchwFlatRun): where both tensors are NCHW, a block of
// 64 pixels of 4 input channels is 4 rows of 64 bytes, which two rounds of byte and word unpacks
// interleave into 4 vectors of 16 pixels x 4 channels; vpdpbusd then multiplies them by the 4
// weights of one output channel, broadcast, and an output channel's 64 sums go through the output
// stage with its constants broadcast and are stored as 64 bytes of its row. Transposing both
// tensors around the NHWC kernels instead took about as long as the layer (MobileNetV2's
// 16->96 expand at 112x112, 1 thread: 149 us so, 94 us this way). Built with AVX-512 flags: see
// kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/register_tile.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// Output channels per register tile: 4 x 4 vectors of accumulators, 4 input vectors and a
// broadcast, 8 loads per 16 vpdpbusd. (With 5 or 6 output channels GCC 12 kept accumulators on
// the stack through the step loop.)
constexpr int kChannels = 4;

// The block's input channels, 4 at a time, as [step][4 vectors][64 bytes]: vector j's lane 4L + r
// holds pixel 16L + 4j + r (the unpacks work inside 128-bit lanes), its dword that pixel's 4
// channels. The packs of the output stage (row_stores::pack_bytes_in_lanes) then leave each
// output channel's 64 bytes in pixel order. Channels past the input's are zeros (their weights
// are 0); pixels past the block's are not read.
void interleave_channels(const NchwFlatRun& run, std::int32_t steps) {
  const __mmask64 pixels = run.pixels >= 64 ? ~__mmask64{0} : (__mmask64{1} << run.pixels) - 1;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(run.flip_input ? 0x80 : 0));
  for (std::int32_t k = 0; k < steps; ++k) {
    __m512i row[4];
    for (int i = 0; i < 4; ++i) {
      const std::int32_t c = 4 * k + i;
      row[i] = c < run.channels
                   ? _mm512_xor_si512(
                         _mm512_maskz_loadu_epi8(pixels, run.input + c * run.channel_stride), flip)
                   : _mm512_setzero_si512();
    }
    const __m512i low01 = _mm512_unpacklo_epi8(row[0], row[1]);
    const __m512i high01 = _mm512_unpackhi_epi8(row[0], row[1]);
    const __m512i low23 = _mm512_unpacklo_epi8(row[2], row[3]);
    const __m512i high23 = _mm512_unpackhi_epi8(row[2], row[3]);
    std::uint8_t* out = run.scratch + k * 256;
    _mm512_store_si512(out, _mm512_unpacklo_epi16(low01, low23));
    _mm512_store_si512(out + 64, _mm512_unpackhi_epi16(low01, low23));
    _mm512_store_si512(out + 128, _mm512_unpacklo_epi16(high01, high23));
    _mm512_store_si512(out + 192, _mm512_unpackhi_epi16(high01, high23));
  }
}

// Output channels [first, first + rows) of the block, rows ≤ kRows, from the interleaved input:
// rows past `rows` repeat the last one's weights and are not stored.
template <int kRows, SchemeKind K, DType D, bool kSaturatedLow>
[[gnu::always_inline]] inline void channel_tile(const NchwFlatRun& run, const StageView& s,
                                                std::int32_t steps, std::int32_t first,
                                                std::int32_t rows) {
  // The walk in locals: the byte stores may alias anything read through a pointer.
  const std::uint8_t* const x = run.scratch;
  const std::int64_t row_bytes = std::int64_t{steps} * 4;
  const std::int8_t* w[kRows];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    w[i] = run.weights + (first + (i < rows ? i : rows - 1)) * row_bytes;
  }
  __m512i acc[kRows][4];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_setzero_si512();
  }
  for (std::int32_t k = 0; k < steps; ++k) {
    __m512i v[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) v[j] = _mm512_load_si512(x + k * 256 + 64 * j);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const __m512i b = _mm512_set1_epi32(static_cast<int>(
          register_tile::load_u32(reinterpret_cast<const std::uint8_t*>(w[i]) + 4 * k)));
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], v[j], b);
    }
  }
  // The stage read after the multiplies (hoisted above them, its broadcasts would hold registers
  // through the step loop: see flat_run_kernels.cpp).
  asm volatile("" ::: "memory");
  const StageView stage = s;
  constexpr bool kOnWords = row_stores::kZeroPointOnWords<K, D, 4>;
  const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(stage.zero_point));
  const __mmask64 store = run.pixels >= 64 ? ~__mmask64{0} : (__mmask64{1} << run.pixels) - 1;
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    if (i >= rows) break;
    const std::int64_t o = run.first_channel + first + i;
    const __m512i start =
        _mm512_set1_epi32(run.zero_point_sums != nullptr
                              ? gemm::zero_point_term(run.input_zero_point, run.zero_point_sums[o])
                              : 0);
    const stage_lanes::Lanes at = stage_lanes::Lanes::load<K, true>(stage, o);
    __m512i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      r[j] = stage_lanes::apply<K>(_mm512_add_epi32(acc[i][j], start), at, stage, kSaturatedLow,
                                   !kOnWords);
    }
    _mm512_mask_storeu_epi8(
        static_cast<std::int8_t*>(run.output) + (first + i) * run.channel_stride, store,
        row_stores::pack_bytes_in_lanes<D, kOnWords>(r, zero_point_words));
  }
}

template <SchemeKind K, DType D, bool kSaturatedLow>
void nchw_flat_run(const NchwFlatRun& run, const StageView& s) {
  const std::int32_t steps = (run.channels + 3) / 4;
  interleave_channels(run, steps);
  for (std::int32_t first = 0; first < run.out_channels; first += kChannels) {
    const std::int32_t left = run.out_channels - first;
    channel_tile<kChannels, K, D, kSaturatedLow>(run, s, steps, first,
                                                 left < kChannels ? left : kChannels);
  }
}

template <SchemeKind K, DType D>
void nchw_flat_by_range(const NchwFlatRun& run, const StageView& s) {
  if constexpr (kEveryKernelVariant) {
    if (row_stores::saturated_low<D>(s)) return nchw_flat_run<K, D, true>(run, s);
  }
  nchw_flat_run<K, D, false>(run, s);
}

}  // namespace

NchwFlatKernel nchw_flat_run_kernel(SchemeKind scheme, DType output_dtype) {
  if (output_dtype == DType::s32) return nullptr;
  return stage_lanes::for_vector_stage<NchwFlatKernel>(
      scheme, output_dtype,
      []<SchemeKind K, DType D>() -> NchwFlatKernel { return &nchw_flat_by_range<K, D>; });
}

}  // namespace qconv::detail::avx512_vnni
