// SPDX-License-Identifier: Apache-2.0
// The output stage in 16 lanes: every scheme of SPEC §4, bit for bit as OutputStage::apply (the
// scalar oracle these are tested against), plus the zero-point corrections that precede it. Each
// float operation is its own instruction, so nothing is contracted into an FMA. Built with AVX-512
// flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// One vector of 16 channels' constants, loaded once per tile column: the output stores are bytes,
// which may alias anything, so constants read inside the row loop would be read again each row.
struct Lanes {
  __m512i bias_s32, q31, shift_left, shift_right, round_down;
  __m512 bias_f32, scale_f32;

  template <SchemeKind K>
  static Lanes load(const StageView& s, std::int64_t channel) {
    const std::int64_t at = channel * s.channel_step;
    Lanes l{};
    // Unaligned loads: a group's panel may start at any output channel.
    const auto i32 = [&](const std::int32_t* base) { return _mm512_loadu_si512(base + at); };
    if constexpr (K != SchemeKind::fbgemm && K != SchemeKind::onednn) l.bias_s32 = i32(s.bias_s32);
    if constexpr (K == SchemeKind::fbgemm || K == SchemeKind::onednn) {
      l.bias_f32 = _mm512_loadu_ps(s.bias_f32 + at);
    }
    if constexpr (K != SchemeKind::int32 && K != SchemeKind::tvm && K != SchemeKind::tflite &&
                  K != SchemeKind::tflite_single) {
      l.scale_f32 = _mm512_loadu_ps(s.scale_f32 + at);
    }
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite ||
                  K == SchemeKind::tflite_single) {
      l.q31 = i32(s.q31);
      l.shift_right = i32(s.shift_right);
    }
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite) l.shift_left = i32(s.shift_left);
    if constexpr (K == SchemeKind::tvm) l.round_down = i32(s.round_down);
    return l;
  }
};

// clamp(r + zy, lo, hi) for an s32 r, exact for every r: the bounds move to r's side, where they
// fit in s32 for u8 and s8 outputs (and the int32 scheme, whose zero point is 0).
inline __m512i finish(__m512i r, const StageView& s) {
  r = _mm512_max_epi32(r, _mm512_set1_epi32(s.lo - s.zero_point));
  r = _mm512_min_epi32(r, _mm512_set1_epi32(s.hi - s.zero_point));
  return _mm512_add_epi32(r, _mm512_set1_epi32(s.zero_point));
}

// The same for a 64-bit r in each even or odd lane pair, leaving r − zy's clamp in 64 bits.
inline __m512i clamp64(__m512i r, const StageView& s) {
  r = _mm512_max_epi64(r, _mm512_set1_epi64(std::int64_t{s.lo} - s.zero_point));
  return _mm512_min_epi64(r, _mm512_set1_epi64(std::int64_t{s.hi} - s.zero_point));
}

// Even lanes from `even`'s and odd lanes from `odd`'s low halves of 64-bit lanes, plus zy.
inline __m512i join64(__m512i even, __m512i odd, const StageView& s) {
  const __m512i joined = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  return _mm512_add_epi32(joined, _mm512_set1_epi32(s.zero_point));
}

inline __m512i odd_lanes(__m512i v) { return _mm512_srli_epi64(v, 32); }
inline __m512i even_lanes_unsigned(__m512i v) {
  return _mm512_and_si512(v, _mm512_set1_epi64(0xffffffff));
}

// clamp to [lo, hi] in binary32 (exact: u8/s8 bounds), then round half to even.
inline __m512i round_clamped(__m512 v, float lo, float hi) {
  v = _mm512_min_ps(_mm512_max_ps(v, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
  return _mm512_cvtps_epi32(v);  // MXCSR's default rounding: to nearest, ties to even
}

// rne(x) + zy clamped to [lo, hi] (fbgemm, onnxruntime: the zero point added after rounding), the
// clamp done on x (integer bounds: the same). The high clamp always: 2^31 or more would convert to
// INT32_MIN; the low one unless the narrowing saturates there (saturated_low, below).
inline __m512i round_then_add_zero_point(__m512 x, const StageView& s, bool saturated_low) {
  x = _mm512_min_ps(x, _mm512_set1_ps(static_cast<float>(s.hi - s.zero_point)));
  if (!saturated_low) x = _mm512_max_ps(x, _mm512_set1_ps(static_cast<float>(s.lo - s.zero_point)));
  return _mm512_add_epi32(_mm512_cvtps_epi32(x), _mm512_set1_epi32(s.zero_point));
}

// `saturated_low`: the output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥
// 0, so even INT32_MIN + zy stays negative): a scheme may skip its own low clamp.
template <SchemeKind K>
__m512i apply(__m512i acc, const Lanes& at, const StageView& s, bool saturated_low) {
  const float zy = static_cast<float>(s.zero_point);
  if constexpr (K == SchemeKind::int32) {
    return finish(_mm512_add_epi32(acc, at.bias_s32), s);
  } else if constexpr (K == SchemeKind::fbgemm) {
    const __m512 v = _mm512_add_ps(_mm512_cvtepi32_ps(acc), at.bias_f32);
    return round_then_add_zero_point(_mm512_mul_ps(v, at.scale_f32), s, saturated_low);
  } else if constexpr (K == SchemeKind::onnxruntime) {
    // f32(f32(acc + B) · m), rounded half to even, the zero point added after (SPEC §4).
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    return round_then_add_zero_point(_mm512_mul_ps(_mm512_cvtepi32_ps(with_bias), at.scale_f32), s,
                                     saturated_low);
  } else if constexpr (K == SchemeKind::qnnpack) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(with_bias), at.scale_f32);
    // |v| ≥ 2^31 converts to INT32_MIN, exactly as PyTorch's conversion does (SPEC §4 qnnpack).
    return finish(_mm512_cvtps_epi32(v), s);
  } else if constexpr (K == SchemeKind::onednn) {
    const __m512 v =
        _mm512_mul_ps(_mm512_add_ps(_mm512_cvtepi32_ps(acc), at.bias_f32), at.scale_f32);
    // ReLU's max(v, 0) is implied: lo ≥ zy then, and v < 0 gives v + zy ≤ zy.
    const __m512 shifted = _mm512_add_ps(v, _mm512_set1_ps(zy));
    return round_clamped(shifted, static_cast<float>(s.lo), static_cast<float>(s.hi));
  } else if constexpr (K == SchemeKind::onnx) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512 m = at.scale_f32;
    const __m512d lo = _mm512_set1_pd(s.lo), hi = _mm512_set1_pd(s.hi),
                  z = _mm512_set1_pd(s.zero_point);
    const auto half = [&](__m256i a, __m256 mh) {
      __m512d r = _mm512_add_pd(_mm512_mul_pd(_mm512_cvtepi32_pd(a), _mm512_cvtps_pd(mh)), z);
      r = _mm512_min_pd(_mm512_max_pd(r, lo), hi);
      return _mm512_cvtpd_epi32(r);  // ties to even
    };
    const __m256i low = half(_mm512_castsi512_si256(with_bias), _mm512_castps512_ps256(m));
    const __m256i high = half(_mm512_extracti64x4_epi64(with_bias, 1),
                              _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(m), 1)));
    return _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  } else if constexpr (K == SchemeKind::tvm_f32) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512 v = _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(with_bias), at.scale_f32),
                                   _mm512_set1_ps(zy));
    __m512 r;
    if (s.round_upward) {  // floor(v + 0.5) in binary32
      r = _mm512_roundscale_ps(_mm512_add_ps(v, _mm512_set1_ps(0.5f)),
                               _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    } else {  // half away from zero: |v − trunc(v)| is exact
      const __m512 t = _mm512_roundscale_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m512 frac = _mm512_abs_ps(_mm512_sub_ps(v, t));
      const __mmask16 up = _mm512_cmp_ps_mask(frac, _mm512_set1_ps(0.5f), _CMP_GE_OQ);
      const __m512 one =
          _mm512_or_ps(_mm512_set1_ps(1.0f), _mm512_and_ps(v, _mm512_set1_ps(-0.0f)));  // ±1
      r = _mm512_mask_add_ps(t, up, t, one);
    }
    return round_clamped(r, static_cast<float>(s.lo), static_cast<float>(s.hi));
  } else if constexpr (K == SchemeKind::tvm) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512i q = at.q31, left = at.shift_left, right = at.shift_right;
    const __m512i down = at.round_down;
    const __m512i one = _mm512_set1_epi64(1);
    const auto lane = [&](__m512i a, __m512i qq, __m512i l, __m512i r, __m512i d) {
      const __m512i p = _mm512_mul_epi32(a, qq);  // s64(acc)·q31, exact
      const __m512i half = _mm512_sllv_epi64(one, _mm512_sub_epi64(r, one));  // 0 when r = 0
      const __mmask8 negative = _mm512_cmplt_epi64_mask(p, _mm512_setzero_si512());
      const __m512i nudge = _mm512_mask_sub_epi64(half, negative, half, d);
      const __m512i v = _mm512_sllv_epi64(_mm512_srav_epi64(_mm512_add_epi64(p, nudge), r), l);
      return clamp64(v, s);
    };
    const __m512i even = lane(with_bias, q, even_lanes_unsigned(left), even_lanes_unsigned(right),
                              even_lanes_unsigned(down));
    const __m512i odd = lane(odd_lanes(with_bias), odd_lanes(q), odd_lanes(left), odd_lanes(right),
                             odd_lanes(down));
    return join64(even, odd, s);
  } else if constexpr (K == SchemeKind::tflite) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512i shifted = _mm512_sllv_epi32(with_bias, at.shift_left);  // wraps, as s32
    const __m512i q = at.q31;
    // SaturatingRoundingDoublingHighMul (q31 ≥ 0, so never INT32_MIN·INT32_MIN): a nudge of 2^30 or
    // 1 − 2^30 by the product's sign, then a division by 2^31 that truncates toward zero.
    const auto high_half = [](__m512i a, __m512i b) {
      const __m512i ab = _mm512_mul_epi32(a, b);
      const __mmask8 negative = _mm512_cmplt_epi64_mask(ab, _mm512_setzero_si512());
      const __m512i nudge = _mm512_mask_blend_epi64(negative, _mm512_set1_epi64(1 << 30),
                                                    _mm512_set1_epi64(1 - (1 << 30)));
      __m512i t = _mm512_add_epi64(ab, nudge);
      const __mmask8 below = _mm512_cmplt_epi64_mask(t, _mm512_setzero_si512());
      t = _mm512_mask_add_epi64(t, below, t, _mm512_set1_epi64((std::int64_t{1} << 31) - 1));
      return _mm512_srai_epi64(t, 31);
    };
    const __m512i high =
        _mm512_mask_blend_epi32(0xAAAA, high_half(shifted, q),
                                _mm512_slli_epi64(high_half(odd_lanes(shifted), odd_lanes(q)), 32));
    // RoundingDivideByPOT: half away from zero.
    const __m512i exponent = at.shift_right;
    const __m512i one = _mm512_set1_epi32(1);
    const __m512i mask = _mm512_sub_epi32(_mm512_sllv_epi32(one, exponent), one);
    const __m512i remainder = _mm512_and_si512(high, mask);
    __m512i threshold = _mm512_srli_epi32(mask, 1);
    threshold = _mm512_mask_add_epi32(
        threshold, _mm512_cmplt_epi32_mask(high, _mm512_setzero_si512()), threshold, one);
    __m512i r = _mm512_srav_epi32(high, exponent);
    r = _mm512_mask_add_epi32(r, _mm512_cmpgt_epi32_mask(remainder, threshold), r, one);
    return finish(r, s);
  } else if constexpr (K == SchemeKind::tflite_single) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512i q = at.q31, right = at.shift_right;
    const __m512i one = _mm512_set1_epi64(1);
    const auto lane = [&](__m512i a, __m512i qq, __m512i r) {
      const __m512i p = _mm512_mul_epi32(a, qq);
      const __m512i nudge = _mm512_sllv_epi64(one, _mm512_sub_epi64(r, one));  // 2^(30 − shift)
      return clamp64(_mm512_srav_epi64(_mm512_add_epi64(p, nudge), r), s);
    };
    return join64(lane(with_bias, q, even_lanes_unsigned(right)),
                  lane(odd_lanes(with_bias), odd_lanes(q), odd_lanes(right)), s);
  }
  return acc;
}

inline __mmask16 channel_mask(std::int32_t channels, int vector) {
  const std::int32_t n = channels - vector * 16;
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// acc − zw'·Σx, the exact sum (gemm_engine.cpp; the kernel started it at −zx·Σ(w' − zw')), for row
// i of vector j.
struct Corrections {
  bool window;
  __m512i weight_zero_points;
  static Corrections load(const TileOutput& t, int j) {
    const bool window = t.window_sums != nullptr && t.weight_zero_points != nullptr;
    return {window, window && !t.uniform_weight_zero_point
                        ? _mm512_loadu_si512(t.weight_zero_points + j * 16)
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
// 8 bits (unsigned for u8), then the 128-bit lanes put back in order.
template <DType D>
inline __m512i pack_bytes(const __m512i (&r)[4]) {
  const __m512i low = _mm512_packs_epi32(r[0], r[1]);
  const __m512i high = _mm512_packs_epi32(r[2], r[3]);
  const __m512i bytes =
      D == DType::u8 ? _mm512_packus_epi16(low, high) : _mm512_packs_epi16(low, high);
  // Each 128-bit lane l now holds dwords (r0[l], r1[l], r2[l], r3[l]) of 4 channels each.
  return _mm512_permutexvar_epi32(
      _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), bytes);
}

// `kVectors` vectors of 16 channels: a compile-time count, so that the per-vector constants and
// results stay in registers.
// kWindow: the tile has window sums to correct by (a weight zero point), else the sums are exact.
// The stage and the tile are copied in: the output stores are bytes, which may alias anything the
// function reads through a pointer, so only locals stay in registers across rows.
template <SchemeKind K, DType D, int kVectors, bool kWindow, bool kSaturatedLow>
void epilogue_vectors(const TileOutput& tile, const StageView& stage) {
  const StageView s = stage;
  const TileOutput t = tile;
  constexpr bool saturated_low = kSaturatedLow;
  Lanes at[kVectors];
  Corrections fix[kVectors];
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    at[j] = Lanes::load<K>(s, t.channel + 16 * j);
    if constexpr (kWindow) fix[j] = Corrections::load(t, j);
  }
  for (std::int32_t i = 0; i < t.rows; ++i) {
    __m512i r[4];
    __m512i row_term = _mm512_setzero_si512();
    if constexpr (kWindow) row_term = _mm512_set1_epi32(Corrections::row_term(t, i));
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      __m512i acc = _mm512_load_si512(t.acc + i * 64 + j * 16);
      if constexpr (kWindow) acc = fix[j].apply(acc, t, i, row_term);
      r[j] = apply<K>(acc, at[j], s, saturated_low);
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
      _mm512_mask_storeu_epi8(static_cast<std::int8_t*>(t.output) + row, mask, pack_bytes<D>(r));
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

template <SchemeKind K, DType D, bool kWindow, bool kSaturatedLow>
void epilogue_by_vectors(const TileOutput& t, const StageView& s) {
  switch ((t.channels + 15) / 16) {
    case 1: return epilogue_vectors<K, D, 1, kWindow, kSaturatedLow>(t, s);
    case 2: return epilogue_vectors<K, D, 2, kWindow, kSaturatedLow>(t, s);
    case 3: return epilogue_vectors<K, D, 3, kWindow, kSaturatedLow>(t, s);
    default: return epilogue_vectors<K, D, 4, kWindow, kSaturatedLow>(t, s);
  }
}

template <SchemeKind K, DType D, bool kWindow>
void epilogue_by_range(const TileOutput& t, const StageView& s) {
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0): the
  // schemes may skip their own low clamp.
  const bool saturated_low =
      D != DType::s32 && s.zero_point >= 0 && s.lo == (D == DType::u8 ? 0 : -128);
  if (saturated_low) return epilogue_by_vectors<K, D, kWindow, true>(t, s);
  epilogue_by_vectors<K, D, kWindow, false>(t, s);
}

template <SchemeKind K, DType D>
void epilogue(const TileOutput& t, const StageView& s) {
  if (t.window_sums != nullptr && t.weight_zero_points != nullptr) {
    return epilogue_by_range<K, D, true>(t, s);
  }
  epilogue_by_range<K, D, false>(t, s);
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
      _mm512_store_si512(a, fix.apply(_mm512_load_si512(a), t, i, row_term));
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
