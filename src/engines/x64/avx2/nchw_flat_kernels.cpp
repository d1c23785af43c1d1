// SPDX-License-Identifier: Apache-2.0
// NCHW 1x1 layers with pixels in lanes (gemm::NchwFlatRun) for the avx2 kernel set: where both
// tensors are NCHW, 32 pixels of 4 input channels are 4 rows of 32 bytes, which two rounds of
// byte and word unpacks interleave into 4 vectors of 8 pixels x 4 channels. vpmaddwd then
// multiplies each vector's even bytes (x0, x2) and odd bytes (x1, x3), as 16-bit pairs, by one
// output channel's (w0, w2) and (w1, w3), broadcast: exact in s32, as the NHWC tiles' widened
// multiply. An output channel's 32 sums go through the output stage with its constants broadcast
// and are stored as 32 bytes of its row. The NHWC tiles instead needed the input transposed before
// and the output after (MobileNetV2's 16->96 expand at 112x112 took 1.2x its NHWC time so).
// Built with AVX2 flags: see kernel_set.hpp.
#include <immintrin.h>

#include <cstring>

#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/stage_lanes.hpp"
#include "engines/x64/ymm_gemm_tile.hpp"

namespace qconv::detail::avx2 {
namespace {

using gemm::NchwFlatRun;

// Pixels per half of a block (a run covers at most 64): the 4 vectors of one register tile row.
constexpr int kHalfPixels = 32;
// Output channels per register tile: 2 x 4 vectors of accumulators, the two channels' weight
// pairs, and one input vector's two halves.
constexpr int kChannels = 2;
// Scratch bytes per step and half: 4 vectors of (x0, x2), 4 of (x1, x3).
constexpr std::int64_t kStepBytes = 8 * 32;

// 32 bytes at p, or the first n < 32 of them and zeros.
inline __m256i load_pixels(const std::uint8_t* p, std::int32_t n) {
  if (n >= kHalfPixels) return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  alignas(32) std::uint8_t bytes[kHalfPixels] = {};
  std::memcpy(bytes, p, static_cast<std::size_t>(n));
  return _mm256_load_si256(reinterpret_cast<const __m256i*>(bytes));
}

// The block's input channels, 4 at a time, as [half][step][2][4 vectors][32 bytes]: vector j's
// lane 4L + r (L: its 128-bit lane) is pixel 32·half + 16L + 4j + r (the unpacks work inside
// 128-bit lanes), its dword that pixel's (x0, x2) as u16 in the step's first 4 vectors and its
// (x1, x3) in the next 4. The packs of the output stage then leave each output channel's 32 bytes
// in pixel order. Channels past the input's are zeros (their weights are 0); pixels past the
// block's are not read.
void interleave_channels(const NchwFlatRun& run, std::int32_t steps) {
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(run.flip_input ? 0x80 : 0));
  const __m256i even_bytes = _mm256_set1_epi16(0x00ff);
  for (int half = 0; half * kHalfPixels < run.pixels; ++half) {
    const std::int32_t pixels = run.pixels - half * kHalfPixels;
    const std::uint8_t* in = run.input + half * kHalfPixels;
    auto* out = reinterpret_cast<__m256i*>(run.scratch + std::int64_t{half} * steps * kStepBytes);
    for (std::int32_t k = 0; k < steps; ++k) {
      __m256i row[4];
      for (int i = 0; i < 4; ++i) {
        const std::int32_t c = 4 * k + i;
        row[i] = c < run.channels
                     ? _mm256_xor_si256(load_pixels(in + c * run.channel_stride, pixels), flip)
                     : _mm256_setzero_si256();
      }
      const __m256i low01 = _mm256_unpacklo_epi8(row[0], row[1]);
      const __m256i high01 = _mm256_unpackhi_epi8(row[0], row[1]);
      const __m256i low23 = _mm256_unpacklo_epi8(row[2], row[3]);
      const __m256i high23 = _mm256_unpackhi_epi8(row[2], row[3]);
      const __m256i dwords[4] = {
          _mm256_unpacklo_epi16(low01, low23), _mm256_unpackhi_epi16(low01, low23),
          _mm256_unpacklo_epi16(high01, high23), _mm256_unpackhi_epi16(high01, high23)};
      for (int j = 0; j < 4; ++j) {
        _mm256_store_si256(out + j, _mm256_and_si256(dwords[j], even_bytes));
        _mm256_store_si256(out + 4 + j, _mm256_srli_epi16(dwords[j], 8));
      }
      out += 8;
    }
  }
}

// Output channels [first, first + rows) (rows ≤ kChannels) of one half of the block, from the
// interleaved input: a channel past `rows` repeats the last one's weights and is not stored.
template <SchemeKind K, DType D>
[[gnu::always_inline]] inline void channel_tile(const NchwFlatRun& run, const StageView& s,
                                                const Stage& stage, std::int32_t steps, int half,
                                                std::int32_t first, std::int32_t rows) {
  // The walk in locals: the byte stores may alias anything read through a pointer.
  const std::uint8_t* x = run.scratch + std::int64_t{half} * steps * kStepBytes;
  const std::int64_t row_bytes = std::int64_t{steps} * 4;
  const std::uint8_t* w[kChannels];
#pragma GCC unroll 2
  for (int i = 0; i < kChannels; ++i) {
    w[i] = reinterpret_cast<const std::uint8_t*>(run.weights) +
           (first + (i < rows ? i : rows - 1)) * row_bytes;
  }
  __m256i acc[kChannels][4];
#pragma GCC unroll 2
  for (int i = 0; i < kChannels; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) acc[i][j] = _mm256_setzero_si256();
  }
  for (std::int32_t k = 0; k < steps; ++k) {
    // (w0, w2) and (w1, w3) of each channel as s16 pairs: the dword's words sign-extended from
    // their low and their high byte.
    __m256i w_even[kChannels], w_odd[kChannels];
#pragma GCC unroll 2
    for (int i = 0; i < kChannels; ++i) {
      const __m256i b = _mm256_set1_epi32(static_cast<int>(x64_ymm::load_u32(w[i] + 4 * k)));
      w_even[i] = _mm256_srai_epi16(_mm256_slli_epi16(b, 8), 8);
      w_odd[i] = _mm256_srai_epi16(b, 8);
    }
    const auto* v = reinterpret_cast<const __m256i*>(x + k * kStepBytes);
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
#pragma GCC unroll 2
      for (int i = 0; i < kChannels; ++i) {
        acc[i][j] =
            _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(_mm256_load_si256(v + j), w_even[i]));
        acc[i][j] =
            _mm256_add_epi32(acc[i][j], _mm256_madd_epi16(_mm256_load_si256(v + 4 + j), w_odd[i]));
      }
    }
  }
  // The stage read after the multiplies (hoisted above them, its broadcasts would hold registers
  // through the step loop).
  asm volatile("" ::: "memory");
  const std::int32_t pixels = run.pixels - half * kHalfPixels;
#pragma GCC unroll 2
  for (int i = 0; i < kChannels; ++i) {
    if (i >= rows) break;
    const std::int64_t o = run.first_channel + first + i;
    const __m256i start =
        _mm256_set1_epi32(run.zero_point_sums != nullptr
                              ? gemm::zero_point_term(run.input_zero_point, run.zero_point_sums[o])
                              : 0);
    const Lanes at = Lanes::load<K, true>(s, o);
    __m256i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) r[j] = apply<K>(_mm256_add_epi32(acc[i][j], start), at, stage);
    // Pixels 16L + 4j + r of vector j's lane (L, r) come out of the packs in order.
    const __m256i words01 = _mm256_packs_epi32(r[0], r[1]);
    const __m256i words23 = _mm256_packs_epi32(r[2], r[3]);
    const __m256i bytes = D == DType::u8 ? _mm256_packus_epi16(words01, words23)
                                         : _mm256_packs_epi16(words01, words23);
    auto* out = static_cast<std::uint8_t*>(run.output) + (first + i) * run.channel_stride +
                half * kHalfPixels;
    if (pixels >= kHalfPixels) {
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), bytes);
    } else {  // the block's last pixels: no byte-masked store in AVX2
      alignas(32) std::uint8_t tmp[kHalfPixels];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), bytes);
      std::memcpy(out, tmp, static_cast<std::size_t>(pixels));
    }
  }
}

template <SchemeKind K, DType D>
void nchw_flat_run(const NchwFlatRun& given_run, const StageView& given_view) {
  // Local copies: the byte stores may alias the caller's structs.
  const NchwFlatRun run = given_run;
  const StageView view = given_view;
  const Stage stage = Stage::make(view, saturated_low<D>(view));
  const std::int32_t steps = (run.channels + 3) / 4;
  interleave_channels(run, steps);
  for (int half = 0; half * kHalfPixels < run.pixels; ++half) {
    for (std::int32_t first = 0; first < run.out_channels; first += kChannels) {
      const std::int32_t left = run.out_channels - first;
      channel_tile<K, D>(run, view, stage, steps, half, first, left < kChannels ? left : kChannels);
    }
  }
}

}  // namespace

gemm::NchwFlatKernel nchw_flat_run_kernel(SchemeKind scheme, DType output_dtype) {
  if (output_dtype == DType::s32) return nullptr;
  return for_vector_stage<gemm::NchwFlatKernel>(
      scheme, output_dtype,
      []<SchemeKind K, DType D>() -> gemm::NchwFlatKernel { return &nchw_flat_run<K, D>; });
}

}  // namespace qconv::detail::avx2
