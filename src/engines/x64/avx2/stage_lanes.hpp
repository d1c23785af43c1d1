// SPDX-License-Identifier: Apache-2.0
// The output stage in 8 lanes: every scheme of SPEC §4, bit for bit as OutputStage::apply (the
// scalar oracle these are tested against, tests/vector_output_stage_test.cpp); the same rules as
// the 16-lane AVX-512 stage. AVX2 has no 64-bit arithmetic shifts, no 64-bit min/max and no masks:
// the 64-bit rounding of tvm and tflite_single shifts right logically with the sign xored around
// it (exact), clamps with compares and blends, and the s32 lanes come back by blending. Each float
// operation is its own instruction: nothing is contracted into an FMA. Used by the epilogues
// (epilogue_kernels.cpp), the flat runs (flat_run_kernels.cpp) and the NCHW flat runs
// (nchw_flat_kernels.cpp). Included only by files built
// with AVX2 flags; internal linkage (see kernel_set.hpp).
#pragma once

#include <immintrin.h>

#include <cstddef>

#include "engines/gemm/kernel_set.hpp"
#include "engines/gemm/vector_stage_dispatch.hpp"

namespace qconv::detail::avx2 {
namespace {

using gemm::StageView;

// One vector of 8 channels' constants, loaded once per tile column: the output stores are bytes,
// which may alias anything, so constants read inside the row loop would be read again each row.
struct Lanes {
  __m256i bias_s32, q31, shift_left, shift_right, round_down;
  __m256 bias_f32, scale_f32;

  // Channels channel .. channel + 7, or (kBroadcast: lanes that are pixels of one channel)
  // `channel`'s constants in every lane.
  template <SchemeKind K, bool kBroadcast = false>
  static Lanes load(const StageView& s, std::int64_t channel) {
    const std::int64_t at = channel * s.channel_step;
    Lanes l{};
    const auto i32 = [&](const std::int32_t* base) {
      return kBroadcast ? _mm256_set1_epi32(base[at])
                        : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(base + at));
    };
    const auto f32 = [&](const float* base) {
      return kBroadcast ? _mm256_set1_ps(base[at]) : _mm256_loadu_ps(base + at);
    };
    if constexpr (K != SchemeKind::fbgemm && K != SchemeKind::onednn) l.bias_s32 = i32(s.bias_s32);
    if constexpr (K == SchemeKind::fbgemm || K == SchemeKind::onednn) l.bias_f32 = f32(s.bias_f32);
    if constexpr (K != SchemeKind::int32 && K != SchemeKind::tvm && K != SchemeKind::tflite &&
                  K != SchemeKind::tflite_single) {
      l.scale_f32 = f32(s.scale_f32);
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

// The stage's scalars as vectors, made once per tile: the byte stores may alias anything, so a
// scalar read inside the row loop would be read (and converted) again for every vector.
struct Stage {
  __m256i zero_point, lo_r, hi_r;       // zy, lo − zy, hi − zy (s32)
  __m256i lo64, hi64;                   // lo − zy, hi − zy (s64)
  __m256 zy, lo_f, hi_f, lo_rf, hi_rf;  // zy, lo, hi, lo − zy, hi − zy in binary32 (exact)
  __m256d lo_d, hi_d, zy_d;
  bool round_upward;
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0, so even
  // INT32_MIN + zy stays negative): a scheme may skip its own low clamp.
  bool saturated_low;

  static Stage make(const StageView& v, bool saturated_low) {
    Stage s;
    s.zero_point = _mm256_set1_epi32(v.zero_point);
    s.lo_r = _mm256_set1_epi32(v.lo - v.zero_point);
    s.hi_r = _mm256_set1_epi32(v.hi - v.zero_point);
    s.lo64 = _mm256_set1_epi64x(std::int64_t{v.lo} - v.zero_point);
    s.hi64 = _mm256_set1_epi64x(std::int64_t{v.hi} - v.zero_point);
    s.zy = _mm256_set1_ps(static_cast<float>(v.zero_point));
    s.lo_f = _mm256_set1_ps(static_cast<float>(v.lo));
    s.hi_f = _mm256_set1_ps(static_cast<float>(v.hi));
    s.lo_rf = _mm256_set1_ps(static_cast<float>(v.lo - v.zero_point));
    s.hi_rf = _mm256_set1_ps(static_cast<float>(v.hi - v.zero_point));
    s.lo_d = _mm256_set1_pd(v.lo);
    s.hi_d = _mm256_set1_pd(v.hi);
    s.zy_d = _mm256_set1_pd(v.zero_point);
    s.round_upward = v.round_upward;
    s.saturated_low = saturated_low;
    return s;
  }
};

// clamp(r + zy, lo, hi) for an s32 r, exact for every r: the bounds move to r's side, where they
// fit in s32 for u8 and s8 outputs (and the int32 scheme, whose zero point is 0).
inline __m256i finish(__m256i r, const Stage& s) {
  r = _mm256_max_epi32(r, s.lo_r);
  r = _mm256_min_epi32(r, s.hi_r);
  return _mm256_add_epi32(r, s.zero_point);
}

inline __m256i negative64(__m256i v) { return _mm256_cmpgt_epi64(_mm256_setzero_si256(), v); }

// v >> r arithmetically per 64-bit lane (0 ≤ r ≤ 63): a logical shift of v with its sign xored in
// and out again.
inline __m256i srav64(__m256i v, __m256i r) {
  const __m256i sign = negative64(v);
  return _mm256_xor_si256(_mm256_srlv_epi64(_mm256_xor_si256(v, sign), r), sign);
}

// r clamped to [lo − zy, hi − zy] in 64 bits.
inline __m256i clamp64(__m256i r, const Stage& s) {
  r = _mm256_blendv_epi8(r, s.lo64, _mm256_cmpgt_epi64(s.lo64, r));
  return _mm256_blendv_epi8(r, s.hi64, _mm256_cmpgt_epi64(r, s.hi64));
}

// Even lanes from `even`'s and odd lanes from `odd`'s low halves of 64-bit lanes, plus zy.
inline __m256i join64(__m256i even, __m256i odd, const Stage& s) {
  const __m256i joined = _mm256_blend_epi32(even, _mm256_slli_epi64(odd, 32), 0xAA);
  return _mm256_add_epi32(joined, s.zero_point);
}

inline __m256i odd_lanes(__m256i v) { return _mm256_srli_epi64(v, 32); }
inline __m256i even_lanes_unsigned(__m256i v) {
  return _mm256_and_si256(v, _mm256_set1_epi64x(0xffffffff));
}

// clamp to [lo, hi] in binary32 (exact: u8/s8 bounds), then round half to even.
inline __m256i round_clamped(__m256 v, const Stage& s) {
  v = _mm256_min_ps(_mm256_max_ps(v, s.lo_f), s.hi_f);
  return _mm256_cvtps_epi32(v);  // MXCSR's default rounding: to nearest, ties to even
}

// rne(x) + zy clamped to [lo, hi] (fbgemm, onnxruntime: the zero point added after rounding), the
// clamp done on x. The high clamp always: 2^31 or more would convert to INT32_MIN; the low one
// unless the narrowing saturates there (saturated_low).
inline __m256i round_then_add_zero_point(__m256 x, const Stage& s) {
  x = _mm256_min_ps(x, s.hi_rf);
  if (!s.saturated_low) x = _mm256_max_ps(x, s.lo_rf);
  return _mm256_add_epi32(_mm256_cvtps_epi32(x), s.zero_point);
}

template <SchemeKind K>
__m256i apply(__m256i acc, const Lanes& at, const Stage& s) {
  if constexpr (K == SchemeKind::int32) {
    return finish(_mm256_add_epi32(acc, at.bias_s32), s);
  } else if constexpr (K == SchemeKind::fbgemm) {
    const __m256 v = _mm256_add_ps(_mm256_cvtepi32_ps(acc), at.bias_f32);
    return round_then_add_zero_point(_mm256_mul_ps(v, at.scale_f32), s);
  } else if constexpr (K == SchemeKind::onnxruntime) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    return round_then_add_zero_point(_mm256_mul_ps(_mm256_cvtepi32_ps(with_bias), at.scale_f32), s);
  } else if constexpr (K == SchemeKind::qnnpack) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256 v = _mm256_mul_ps(_mm256_cvtepi32_ps(with_bias), at.scale_f32);
    // |v| ≥ 2^31 converts to INT32_MIN, exactly as PyTorch's conversion does (SPEC §4 qnnpack).
    return finish(_mm256_cvtps_epi32(v), s);
  } else if constexpr (K == SchemeKind::onednn) {
    const __m256 v =
        _mm256_mul_ps(_mm256_add_ps(_mm256_cvtepi32_ps(acc), at.bias_f32), at.scale_f32);
    const __m256 shifted = _mm256_add_ps(v, s.zy);
    return round_clamped(shifted, s);
  } else if constexpr (K == SchemeKind::onnx) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256d lo = s.lo_d, hi = s.hi_d, z = s.zy_d;
    const auto half = [&](__m128i a, __m128 mh) {
      __m256d r = _mm256_add_pd(_mm256_mul_pd(_mm256_cvtepi32_pd(a), _mm256_cvtps_pd(mh)), z);
      r = _mm256_min_pd(_mm256_max_pd(r, lo), hi);
      return _mm256_cvtpd_epi32(r);  // ties to even
    };
    const __m128i low =
        half(_mm256_castsi256_si128(with_bias), _mm256_castps256_ps128(at.scale_f32));
    const __m128i high =
        half(_mm256_extracti128_si256(with_bias, 1), _mm256_extractf128_ps(at.scale_f32, 1));
    return _mm256_set_m128i(high, low);
  } else if constexpr (K == SchemeKind::tvm_f32) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256 v =
        _mm256_add_ps(_mm256_mul_ps(_mm256_cvtepi32_ps(with_bias), at.scale_f32), s.zy);
    __m256 r;
    if (s.round_upward) {  // floor(v + 0.5) in binary32
      r = _mm256_round_ps(_mm256_add_ps(v, _mm256_set1_ps(0.5f)),
                          _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    } else {  // half away from zero: |v − trunc(v)| is exact
      const __m256 t = _mm256_round_ps(v, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
      const __m256 frac = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), _mm256_sub_ps(v, t));
      const __m256 up = _mm256_cmp_ps(frac, _mm256_set1_ps(0.5f), _CMP_GE_OQ);
      const __m256 one =
          _mm256_or_ps(_mm256_set1_ps(1.0f), _mm256_and_ps(v, _mm256_set1_ps(-0.0f)));  // ±1
      r = _mm256_add_ps(t, _mm256_and_ps(up, one));
    }
    return round_clamped(r, s);
  } else if constexpr (K == SchemeKind::tvm) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256i one = _mm256_set1_epi64x(1);
    const auto lane = [&](__m256i a, __m256i qq, __m256i l, __m256i r, __m256i d) {
      const __m256i p = _mm256_mul_epi32(a, qq);  // s64(acc)·q31, exact
      const __m256i half = _mm256_sllv_epi64(one, _mm256_sub_epi64(r, one));  // 0 when r = 0
      const __m256i nudge = _mm256_blendv_epi8(half, _mm256_sub_epi64(half, d), negative64(p));
      const __m256i v = _mm256_sllv_epi64(srav64(_mm256_add_epi64(p, nudge), r), l);
      return clamp64(v, s);
    };
    const __m256i even =
        lane(with_bias, at.q31, even_lanes_unsigned(at.shift_left),
             even_lanes_unsigned(at.shift_right), even_lanes_unsigned(at.round_down));
    const __m256i odd = lane(odd_lanes(with_bias), odd_lanes(at.q31), odd_lanes(at.shift_left),
                             odd_lanes(at.shift_right), odd_lanes(at.round_down));
    return join64(even, odd, s);
  } else if constexpr (K == SchemeKind::tflite) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256i shifted = _mm256_sllv_epi32(with_bias, at.shift_left);  // wraps, as s32
    // SaturatingRoundingDoublingHighMul (q31 ≥ 0, so never INT32_MIN·INT32_MIN): a nudge of 2^30 or
    // 1 − 2^30 by the product's sign, then a division by 2^31 that truncates toward zero. The
    // quotient fits in s32, so its low 32 bits are those of a logical shift.
    const auto high_half = [](__m256i a, __m256i b) {
      const __m256i ab = _mm256_mul_epi32(a, b);
      const __m256i nudge = _mm256_blendv_epi8(_mm256_set1_epi64x(1 << 30),
                                               _mm256_set1_epi64x(1 - (1 << 30)), negative64(ab));
      __m256i t = _mm256_add_epi64(ab, nudge);
      t = _mm256_add_epi64(
          t, _mm256_and_si256(negative64(t), _mm256_set1_epi64x((std::int64_t{1} << 31) - 1)));
      return _mm256_srli_epi64(t, 31);
    };
    const __m256i high = _mm256_blend_epi32(
        high_half(shifted, at.q31),
        _mm256_slli_epi64(high_half(odd_lanes(shifted), odd_lanes(at.q31)), 32), 0xAA);
    // RoundingDivideByPOT: half away from zero.
    const __m256i exponent = at.shift_right;
    const __m256i one = _mm256_set1_epi32(1);
    const __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(one, exponent), one);
    const __m256i remainder = _mm256_and_si256(high, mask);
    const __m256i threshold =
        _mm256_add_epi32(_mm256_srli_epi32(mask, 1),
                         _mm256_and_si256(_mm256_cmpgt_epi32(_mm256_setzero_si256(), high), one));
    __m256i r = _mm256_srav_epi32(high, exponent);
    r = _mm256_add_epi32(r, _mm256_and_si256(_mm256_cmpgt_epi32(remainder, threshold), one));
    return finish(r, s);
  } else if constexpr (K == SchemeKind::tflite_single) {
    const __m256i with_bias = _mm256_add_epi32(acc, at.bias_s32);
    const __m256i one = _mm256_set1_epi64x(1);
    const auto lane = [&](__m256i a, __m256i qq, __m256i r) {
      const __m256i p = _mm256_mul_epi32(a, qq);
      const __m256i nudge = _mm256_sllv_epi64(one, _mm256_sub_epi64(r, one));  // 2^(30 − shift)
      return clamp64(srav64(_mm256_add_epi64(p, nudge), r), s);
    };
    return join64(lane(with_bias, at.q31, even_lanes_unsigned(at.shift_right)),
                  lane(odd_lanes(with_bias), odd_lanes(at.q31), odd_lanes(at.shift_right)), s);
  }
  return acc;
}

// Two vectors of 8 channels (already in the dtype's range, or below it where the scheme left the
// low clamp to the narrowing) as 16 bytes: signed-saturating packs to 16 bits, then to 8 bits
// (unsigned for u8), the dwords put back in channel order.
template <DType D>
inline __m128i pack_bytes(__m256i a, __m256i b) {
  const __m256i words = _mm256_packs_epi32(a, b);  // lane l: a[4l..4l+3], b[4l..4l+3]
  const __m256i bytes =
      D == DType::u8 ? _mm256_packus_epi16(words, words) : _mm256_packs_epi16(words, words);
  // dword 0: a0-3, 1: b0-3, 4: a4-7, 5: b4-7.
  const __m256i ordered =
      _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 0, 0, 0, 0));
  return _mm256_castsi256_si128(ordered);
}

inline __m256i lane_mask(std::int32_t n) {  // lanes below n set
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

// Whether the narrowing to D saturates at the stage's lower bound (Stage::saturated_low).
template <DType D>
bool saturated_low(const StageView& v) {
  return D != DType::s32 && v.zero_point >= 0 && v.lo == (D == DType::u8 ? 0 : -128);
}

// Bytes per output element.
template <DType D>
constexpr std::int64_t element_bytes() {
  return D == DType::s32 ? 4 : 1;
}

// A row's `kVectors` results (8 channels each) stored at `out`, its first `channels` channels
// only: s32 as they are; u8 and s8 narrowed two vectors (16 bytes) at a time.
template <DType D, int kVectors>
inline void store_row(void* out, const __m256i (&r)[kVectors], std::int32_t channels) {
  if constexpr (D == DType::s32) {
#pragma GCC unroll 8
    for (int j = 0; j < kVectors; ++j) {
      auto* at = static_cast<std::int32_t*>(out) + j * 8;
      const std::int32_t left = channels - 8 * j;
      if (left >= 8) {
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(at), r[j]);
      } else if (left > 0) {
        _mm256_maskstore_epi32(at, lane_mask(left), r[j]);
      }
    }
  } else {
#pragma GCC unroll 4
    for (int p = 0; 2 * p < kVectors; ++p) {
      auto* at = static_cast<std::uint8_t*>(out) + p * 16;
      const __m128i bytes = pack_bytes<D>(r[2 * p], r[2 * p + 1 < kVectors ? 2 * p + 1 : 2 * p]);
      const std::int32_t left = channels - 16 * p;
      if (left >= 16) {
        _mm_storeu_si128(reinterpret_cast<__m128i*>(at), bytes);
      } else if (left == 8) {
        _mm_storel_epi64(reinterpret_cast<__m128i*>(at), bytes);
      } else if (left > 0) {  // the panel's last channels: no byte-masked store in AVX2
        alignas(16) std::uint8_t tmp[16];
        _mm_store_si128(reinterpret_cast<__m128i*>(tmp), bytes);
        for (std::int32_t c = 0; c < left; ++c) at[c] = tmp[c];
      }
    }
  }
}

// The (scheme, output dtype) pairs with a vector stage (vector_stage_dispatch.hpp).
using gemm::for_vector_stage;

}  // namespace
}  // namespace qconv::detail::avx2
