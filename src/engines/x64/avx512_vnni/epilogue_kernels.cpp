// SPDX-License-Identifier: Apache-2.0
// The GEMM tiles' output stage in 16 lanes (each scheme's arithmetic: stage_lanes.hpp), bit for bit
// as OutputStage::apply (the scalar oracle these are tested against), plus the zero-point
// corrections that precede it. Built with AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using stage_lanes::apply;
using stage_lanes::Lanes;

inline __mmask16 channel_mask(std::int32_t channels, int vector) {
  const std::int32_t n = channels - vector * 16;
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

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

// Four vectors of one row's 64 channels (already in the dtype's range, or below it where the
// scheme left the low clamp to this) as 64 bytes: two signed-saturating packs to 16 bits, one to
// 8 bits (unsigned for u8), then the 128-bit lanes put back in order. kZeroPointOnWords: the
// vectors are r − zy, clamped (stage_lanes::zero_point_added_last), and zy is added to the words,
// saturating: one add per two vectors.
template <DType D, bool kZeroPointOnWords>
inline __m512i pack_bytes(const __m512i (&r)[4], __m512i zero_point_words) {
  __m512i low = _mm512_packs_epi32(r[0], r[1]);
  __m512i high = _mm512_packs_epi32(r[2], r[3]);
  if constexpr (kZeroPointOnWords) {
    low = _mm512_adds_epi16(low, zero_point_words);
    high = _mm512_adds_epi16(high, zero_point_words);
  }
  const __m512i bytes =
      D == DType::u8 ? _mm512_packus_epi16(low, high) : _mm512_packs_epi16(low, high);
  // Each 128-bit lane l now holds dwords (r0[l], r1[l], r2[l], r3[l]) of 4 channels each.
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}

// `kVectors` vectors of 16 channels: a compile-time count, so that the per-vector constants and
// results stay in registers.
// kWindow: the tile has window sums to correct by (a weight zero point); kTerms: channel terms to
// add (an AMX block); else the sums are exact.
// The stage and the tile are copied in: the output stores are bytes, which may alias anything the
// function reads through a pointer, so only locals stay in registers across rows.
template <SchemeKind K, DType D, int kVectors, bool kWindow, bool kTerms, bool kSaturatedLow>
void epilogue_vectors(const TileOutput& tile, const StageView& stage) {
  const StageView s = stage;
  const TileOutput t = tile;
  constexpr bool saturated_low = kSaturatedLow;
  // Rows packed to bytes by pack_bytes take zy on their words.
  constexpr bool kZeroPointOnWords =
      D != DType::s32 && (kVectors == 2 || kVectors == 4) && stage_lanes::zero_point_added_last(K);
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
      r[j] = apply<K>(acc, at[j], s, saturated_low, !kZeroPointOnWords);
    }
    const std::int64_t row = i * t.output_row_stride;
    if constexpr (D == DType::s32) {
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) {
        _mm512_mask_storeu_epi32(static_cast<std::int32_t*>(t.output) + row + j * 16,
                                 channel_mask(t.channels, j), r[j]);
      }
    } else if constexpr (kVectors == 4) {
      const __mmask64 mask = (~std::uint64_t{0}) >> (64 - t.channels);
      _mm512_mask_storeu_epi8(static_cast<std::int8_t*>(t.output) + row, mask,
                              pack_bytes<D, kZeroPointOnWords>(r, zero_point_words));
    } else if constexpr (kVectors == 2) {  // the packs of pack_bytes: 3 shuffles, not 4 (+ 2 max)
      const __mmask32 mask = (~std::uint32_t{0}) >> (32 - t.channels);
      _mm256_mask_storeu_epi8(static_cast<std::int8_t*>(t.output) + row, mask,
                              _mm512_castsi512_si256(pack_bytes<D, kZeroPointOnWords>(
                                  {r[0], r[1], r[0], r[1]}, zero_point_words)));
    } else {
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) {
        auto* out = static_cast<std::int8_t*>(t.output) + row + j * 16;
        if constexpr (D == DType::u8) {  // vpmovusdb reads unsigned: negatives first to 0
          _mm512_mask_cvtusepi32_storeu_epi8(out, channel_mask(t.channels, j),
                                             _mm512_max_epi32(r[j], _mm512_setzero_si512()));
        } else {
          _mm512_mask_cvtsepi32_storeu_epi8(out, channel_mask(t.channels, j), r[j]);
        }
      }
    }
  }
}

template <SchemeKind K, DType D, bool kWindow, bool kTerms, bool kSaturatedLow>
void epilogue_by_vectors(const TileOutput& t, const StageView& s) {
  switch ((t.channels + 15) / 16) {
    case 1: return epilogue_vectors<K, D, 1, kWindow, kTerms, kSaturatedLow>(t, s);
    case 2: return epilogue_vectors<K, D, 2, kWindow, kTerms, kSaturatedLow>(t, s);
    case 3: return epilogue_vectors<K, D, 3, kWindow, kTerms, kSaturatedLow>(t, s);
    default: return epilogue_vectors<K, D, 4, kWindow, kTerms, kSaturatedLow>(t, s);
  }
}

template <SchemeKind K, DType D, bool kWindow, bool kTerms>
void epilogue_by_range(const TileOutput& t, const StageView& s) {
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0): the
  // schemes may skip their own low clamp.
  const bool saturated_low =
      D != DType::s32 && s.zero_point >= 0 && s.lo == (D == DType::u8 ? 0 : -128);
  if (saturated_low) return epilogue_by_vectors<K, D, kWindow, kTerms, true>(t, s);
  epilogue_by_vectors<K, D, kWindow, kTerms, false>(t, s);
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

template <SchemeKind K>
EpilogueKernel for_dtype(DType output_dtype) {
  switch (output_dtype) {
    case DType::u8: return &epilogue<K, DType::u8>;
    case DType::s8: return &epilogue<K, DType::s8>;
    default: return nullptr;  // s32 from a requantizing scheme: r may exceed s32 before zy
  }
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
  switch (scheme) {
    case SchemeKind::int32:
      return output_dtype == DType::s32 ? &epilogue<SchemeKind::int32, DType::s32> : nullptr;
    case SchemeKind::fbgemm: return for_dtype<SchemeKind::fbgemm>(output_dtype);
    case SchemeKind::qnnpack: return for_dtype<SchemeKind::qnnpack>(output_dtype);
    case SchemeKind::onednn: return for_dtype<SchemeKind::onednn>(output_dtype);
    case SchemeKind::onnx: return for_dtype<SchemeKind::onnx>(output_dtype);
    case SchemeKind::tvm: return for_dtype<SchemeKind::tvm>(output_dtype);
    case SchemeKind::tvm_f32: return for_dtype<SchemeKind::tvm_f32>(output_dtype);
    case SchemeKind::tflite: return for_dtype<SchemeKind::tflite>(output_dtype);
    case SchemeKind::tflite_single: return for_dtype<SchemeKind::tflite_single>(output_dtype);
    case SchemeKind::onnxruntime: return for_dtype<SchemeKind::onnxruntime>(output_dtype);
  }
  return nullptr;
}

}  // namespace qconv::detail::avx512_vnni
