// SPDX-License-Identifier: Apache-2.0
// One output pixel's row of a register tile, through the output stage (stage_lanes.hpp), narrowed
// to the output dtype and stored: shared by the tile epilogues, which read the sums back from
// memory (epilogue_kernels.cpp), and the flat runs, which take them straight from the accumulator
// registers (flat_run_kernels.cpp); and a vector of one channel's pixels, stored by the NCHW
// plane kernels. Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni::row_stores {

// The valid lanes of vector `vector` of a row with `channels` valid channels (at least one in it).
inline __mmask16 channel_mask(std::int32_t channels, int vector) {
  const std::int32_t n = channels - vector * 16;
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// Lanes `lanes` of r (a vector of pixels of one output channel, through the output stage and
// clamped to the output's range) at element `first` of `output`: s32 words where kWords, else
// bytes, which the clamp makes a plain truncation (the NCHW plane kernels).
template <bool kWords>
inline void store_lanes(void* output, std::int64_t first, __mmask16 lanes, __m512i r) {
  if constexpr (kWords) {
    _mm512_mask_storeu_epi32(static_cast<std::int32_t*>(output) + first, lanes, r);
  } else {
    _mm512_mask_cvtepi32_storeu_epi8(static_cast<std::uint8_t*>(output) + first, lanes, r);
  }
}

// Whether the output's narrowing to D saturates below at lo (lo is the dtype's minimum and zy ≥ 0):
// the schemes may then skip their own low clamp (stage_lanes::apply's saturated_low).
template <DType D>
inline bool saturated_low(const StageView& s) {
  return D != DType::s32 && s.zero_point >= 0 && s.lo == (D == DType::u8 ? 0 : -128);
}

// Runs run.template operator()<kSaturatedLow, kSaturatedHigh>() with the clamps this call's
// narrowing to D stands for: low where saturated_low, high as well for fbgemm where the caller's
// `saturated_high` says so (gemm::narrowing_saturates_high). Builds with fewer kernel variants
// (kEveryKernelVariant) compile <false, false> alone.
template <SchemeKind K, DType D, class Run>
[[gnu::always_inline]] inline void by_saturation(const StageView& s, bool saturated_high,
                                                 const Run& run) {
  if constexpr (kEveryKernelVariant) {
    if (saturated_low<D>(s)) {
      if constexpr (K == SchemeKind::fbgemm) {
        if (saturated_high) return run.template operator()<true, true>();
      }
      return run.template operator()<true, false>();
    }
  }
  run.template operator()<false, false>();
}

// Whether rows of kVectors vectors of scheme K to dtype D take zy on their packed 16-bit words
// (pack_bytes): then stage_lanes::apply leaves it out (add_zero_point = false).
template <SchemeKind K, DType D, int kVectors>
inline constexpr bool kZeroPointOnWords =
    D != DType::s32 && (kVectors == 2 || kVectors == 4) && stage_lanes::zero_point_added_last(K);

// Four vectors of one row's 64 channels (already in the dtype's range, or below it where the
// scheme left the low clamp to this) as 64 bytes: two signed-saturating packs to 16 bits, one to
// 8 bits (unsigned for u8), then the 128-bit lanes put back in order. kZeroPointOnWords: the
// vectors are r − zy, clamped (stage_lanes::zero_point_added_last), and zy is added to the words,
// saturating: one add per two vectors.
// pack_bytes before its last step: 128-bit lane l holds dwords (r0[l], r1[l], r2[l], r3[l]), the
// bytes of 4 lanes each.
template <DType D, bool kZeroPointOnWords>
inline __m512i pack_bytes_in_lanes(const __m512i (&r)[4], __m512i zero_point_words) {
  __m512i low = _mm512_packs_epi32(r[0], r[1]);
  __m512i high = _mm512_packs_epi32(r[2], r[3]);
  if constexpr (kZeroPointOnWords) {
    low = _mm512_adds_epi16(low, zero_point_words);
    high = _mm512_adds_epi16(high, zero_point_words);
  }
  return D == DType::u8 ? _mm512_packus_epi16(low, high) : _mm512_packs_epi16(low, high);
}
template <DType D, bool kZeroPointOnWords>
inline __m512i pack_bytes(const __m512i (&r)[4], __m512i zero_point_words) {
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
      pack_bytes_in_lanes<D, kZeroPointOnWords>(r, zero_point_words));
}

// Stores the first `channels` (1 to kVectors·16) of a row's stage results r[0 .. kVectors) as
// dtype D at element `at` of `output` (the row's first channel). zero_point_words: zy in every
// 16-bit word, read only under kZeroPointOnWords<K, D, kVectors> (the caller's apply left zy out).
template <SchemeKind K, DType D, int kVectors>
[[gnu::always_inline]] inline void store_row(void* output, std::int64_t at, std::int32_t channels,
                                             const __m512i (&r)[4], __m512i zero_point_words) {
  constexpr bool kOnWords = kZeroPointOnWords<K, D, kVectors>;
  // Element `at` of a byte or s32 output.
  void* const out = D == DType::s32 ? static_cast<void*>(static_cast<std::int32_t*>(output) + at)
                                    : static_cast<void*>(static_cast<std::int8_t*>(output) + at);
  if constexpr (D == DType::s32) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      _mm512_mask_storeu_epi32(static_cast<std::int32_t*>(out) + j * 16, channel_mask(channels, j),
                               r[j]);
    }
  } else if constexpr (kVectors == 4) {
    const __mmask64 mask = (~std::uint64_t{0}) >> (64 - channels);
    _mm512_mask_storeu_epi8(out, mask, pack_bytes<D, kOnWords>(r, zero_point_words));
  } else if constexpr (kVectors == 2) {  // the packs of pack_bytes: 3 shuffles, not 4 (+ 2 max)
    const __mmask32 mask = (~std::uint32_t{0}) >> (32 - channels);
    _mm256_mask_storeu_epi8(out, mask,
                            _mm512_castsi512_si256(pack_bytes<D, kOnWords>({r[0], r[1], r[0], r[1]},
                                                                           zero_point_words)));
  } else {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      auto* to = static_cast<std::int8_t*>(out) + j * 16;
      if constexpr (D == DType::u8) {  // vpmovusdb reads unsigned: negatives first to 0
        _mm512_mask_cvtusepi32_storeu_epi8(to, channel_mask(channels, j),
                                           _mm512_max_epi32(r[j], _mm512_setzero_si512()));
      } else {
        _mm512_mask_cvtsepi32_storeu_epi8(to, channel_mask(channels, j), r[j]);
      }
    }
  }
}

// Four rows of one vector each (pixels at..at + 3·stride of a panel of up to 16 channels), the
// first `rows` (1 to 4) of them stored: packed to bytes together as pack_bytes packs one row's four
// vectors (16 channels of each pixel in turn), one store where the pixels lie back to back (16
// channels), else one per pixel: MobileNetV2's 32 -> 16 projection at 112x112 ran 5 % faster on
// an AMD Zen 4 than with a masked vpmovusdb store per row (store_row).
template <DType D>
[[gnu::always_inline]] inline void store_four_rows(void* output, std::int64_t at,
                                                   std::int64_t stride, std::int32_t channels,
                                                   int rows, const __m512i (&r)[4]) {
  static_assert(D != DType::s32);
  const __m512i bytes = pack_bytes<D, false>(r, _mm512_setzero_si512());
  auto* const out = static_cast<std::int8_t*>(output) + at;
  if (channels == 16 && stride == 16) {
    _mm512_mask_storeu_epi8(out, (~std::uint64_t{0}) >> (64 - 16 * rows), bytes);
    return;
  }
  const __mmask16 mask = channel_mask(channels, 0);
  _mm_mask_storeu_epi8(out, mask, _mm512_castsi512_si128(bytes));
  if (rows > 1) _mm_mask_storeu_epi8(out + stride, mask, _mm512_extracti32x4_epi32(bytes, 1));
  if (rows > 2) _mm_mask_storeu_epi8(out + 2 * stride, mask, _mm512_extracti32x4_epi32(bytes, 2));
  if (rows > 3) _mm_mask_storeu_epi8(out + 3 * stride, mask, _mm512_extracti32x4_epi32(bytes, 3));
}

// Between a tile's tap loop and its output stage from the registers: the sums leave the tap loop
// in registers (without the empty asm GCC 12 kept a stack copy of some accumulators up to date in
// every tap, for the stage to read as memory operands), and the stage's constants, read per row
// as memory operands after it, are not moved up into it (held in registers through the tap loop
// they would push accumulators to the stack).
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void sums_leave_in_registers(__m512i (&acc)[kRows][kVectors]) {
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) asm("" : "+v"(acc[i][j]));
  }
  asm volatile("" ::: "memory");
}

// Rows [first, first + kRows) of a tile whose sums `acc` (kVectors 3 or 4) are in channel order,
// through the output stage to tile.output, one row's channels in one store: the tiles that take
// the stage from the registers.
template <int kRows, int kVectors, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
[[gnu::always_inline]] inline void stage_rows(__m512i (&acc)[kRows][kVectors],
                                              const TileOutput& tile, const StageView& stage,
                                              int first) {
  static_assert(kVectors == 3 || kVectors == 4);
  sums_leave_in_registers(acc);
  const StageView s = stage;
  constexpr bool kOnWords = kZeroPointOnWords<K, D, 4>;
  const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(s.zero_point));
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    __m512i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      const stage_lanes::Lanes at = stage_lanes::Lanes::load<K>(s, tile.channel + 16 * j);
      r[j] = stage_lanes::apply<K>(acc[i][j], at, s, kSaturatedLow, !kOnWords, kSaturatedHigh);
    }
    if constexpr (kVectors == 3) r[3] = r[2];  // past tile.channels: not stored
    store_row<K, D, 4>(tile.output, (first + i) * tile.output_row_stride, tile.channels, r,
                       zero_point_words);
  }
}

}  // namespace qconv::detail::avx512_vnni::row_stores
