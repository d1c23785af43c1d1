// SPDX-License-Identifier: Apache-2.0
// One vector of 16 channels through the output stage: every scheme of SPEC §4, bit for bit as
// OutputStage::apply. Shared by the GEMM tiles' output stage (epilogue_kernels.cpp) and the
// depthwise kernels, which apply it straight to their accumulators. Each float operation is its
// own instruction, so nothing is contracted into an FMA. Only for files built with AVX-512 flags
// (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/gemm/vector_stage_dispatch.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/vector_halves.hpp"

namespace qconv::detail::avx512_vnni::stage_lanes {

// One vector of 16 channels' constants, loaded once per tile column: the output stores are bytes,
// which may alias anything, so constants read inside the row loop would be read again each row.
struct Lanes {
  __m512i bias_s32, q31, shift_left, shift_right, round_down;
  __m512 bias_f32, scale_f32;

  // Calls f(&Lanes::member, &StageView::array) for each per-channel array scheme K reads.
  template <SchemeKind K, class F>
  static void for_each_array(F&& f) {
    if constexpr (K != SchemeKind::fbgemm && K != SchemeKind::onednn) {
      f(&Lanes::bias_s32, &StageView::bias_s32);
    }
    if constexpr (K == SchemeKind::fbgemm || K == SchemeKind::onednn) {
      f(&Lanes::bias_f32, &StageView::bias_f32);
    }
    if constexpr (K != SchemeKind::int32 && K != SchemeKind::tvm && K != SchemeKind::tflite &&
                  K != SchemeKind::tflite_single) {
      f(&Lanes::scale_f32, &StageView::scale_f32);
    }
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite ||
                  K == SchemeKind::tflite_single) {
      f(&Lanes::q31, &StageView::q31);
      f(&Lanes::shift_right, &StageView::shift_right);
    }
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite) {
      f(&Lanes::shift_left, &StageView::shift_left);
    }
    if constexpr (K == SchemeKind::tvm) f(&Lanes::round_down, &StageView::round_down);
  }

  // Vector `channel`'s constants: channels [channel, channel + 16), one a lane; or, kBroadcast,
  // channel `channel`'s in every lane (a vector of pixels of one channel).
  template <SchemeKind K, bool kBroadcast = false>
  static Lanes load(const StageView& s, std::int64_t channel) {
    const std::int64_t at = channel * s.channel_step;
    Lanes l{};
    // Unaligned loads: a group's panel may start at any output channel.
    for_each_array<K>([&](auto lane, auto array) { set<kBroadcast>(l.*lane, s.*array + at); });
    return l;
  }

  // Channels [channel, channel + 8) in lanes 0-7 and again in lanes 8-15: two pixels' last 8
  // channels in one vector (register_tile::add_tap_paired).
  template <SchemeKind K>
  static Lanes load_twice(const StageView& s, std::int64_t channel) {
    const std::int64_t at = channel * s.channel_step;
    Lanes l{};
    for_each_array<K>([&](auto lane, auto array) { set_twice(l.*lane, s.*array + at); });
    return l;
  }

 private:
  static void set_twice(__m512i& v, const std::int32_t* at) { v = first_8_lanes_twice(at); }
  static void set_twice(__m512& v, const float* at) {
    v = _mm512_castsi512_ps(first_8_lanes_twice(at));
  }
  template <bool kBroadcast>
  static void set(__m512i& v, const std::int32_t* at) {
    v = kBroadcast ? _mm512_set1_epi32(*at) : _mm512_loadu_si512(at);
  }
  template <bool kBroadcast>
  static void set(__m512& v, const float* at) {
    v = kBroadcast ? _mm512_set1_ps(*at) : _mm512_loadu_ps(at);
  }
};

// clamp(r + zy, lo, hi) for an s32 r, exact for every r: the bounds move to r's side, where they
// fit in s32 for u8 and s8 outputs (and the int32 scheme, whose zero point is 0).
// add_zero_point false: r − zy's clamp, zy left to the caller (zero_point_added_last).
inline __m512i finish(__m512i r, const StageView& s, bool add_zero_point) {
  r = _mm512_max_epi32(r, _mm512_set1_epi32(s.lo - s.zero_point));
  r = _mm512_min_epi32(r, _mm512_set1_epi32(s.hi - s.zero_point));
  return add_zero_point ? _mm512_add_epi32(r, _mm512_set1_epi32(s.zero_point)) : r;
}

// The same for a 64-bit r in each even or odd lane pair, leaving r − zy's clamp in 64 bits.
inline __m512i clamp64(__m512i r, const StageView& s) {
  r = _mm512_max_epi64(r, _mm512_set1_epi64(std::int64_t{s.lo} - s.zero_point));
  return _mm512_min_epi64(r, _mm512_set1_epi64(std::int64_t{s.hi} - s.zero_point));
}

// Even lanes from `even`'s and odd lanes from `odd`'s low halves of 64-bit lanes, plus zy.
inline __m512i join64(__m512i even, __m512i odd, const StageView& s, bool add_zero_point) {
  const __m512i joined = _mm512_mask_blend_epi32(0xAAAA, even, _mm512_slli_epi64(odd, 32));
  return add_zero_point ? _mm512_add_epi32(joined, _mm512_set1_epi32(s.zero_point)) : joined;
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
// clamp done on x (integer bounds: the same). The high clamp unless the narrowing saturates there
// and |x| < 2^31 (saturated_high, below: 2^31 or more would convert to INT32_MIN); the low one
// unless the narrowing saturates there (saturated_low).
inline __m512i round_then_add_zero_point(__m512 x, const StageView& s, bool saturated_low,
                                         bool add_zero_point, bool saturated_high) {
  if (!saturated_high)
    x = _mm512_min_ps(x, _mm512_set1_ps(static_cast<float>(s.hi - s.zero_point)));
  if (!saturated_low) x = _mm512_max_ps(x, _mm512_set1_ps(static_cast<float>(s.lo - s.zero_point)));
  const __m512i r = _mm512_cvtps_epi32(x);
  return add_zero_point ? _mm512_add_epi32(r, _mm512_set1_epi32(s.zero_point)) : r;
}

// `saturated_low`: the output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥
// 0, so even INT32_MIN + zy stays negative): a scheme may skip its own low clamp.
// `saturated_high`: fbgemm only, the narrowing saturates above at hi (the dtype's maximum) and the
// value before rounding stays below 2^31 in magnitude (gemm::narrowing_saturates_high).
// Whether scheme K's last step is adding zy to an integer already clamped to [lo − zy, hi − zy]
// (or, with saturated_low, above it only): apply(…, add_zero_point = false) then leaves that add
// to the caller, who may do it after narrowing (saturating 16-bit adds on packed words).
constexpr bool zero_point_added_last(SchemeKind k) {
  return k != SchemeKind::onednn && k != SchemeKind::onnx && k != SchemeKind::tvm_f32;
}

// Always inlined: out of line, its per-channel constants would be read back from memory per vector.
template <SchemeKind K>
[[gnu::always_inline]] inline __m512i apply(__m512i acc, const Lanes& at, const StageView& s,
                                            bool saturated_low, bool add_zero_point = true,
                                            bool saturated_high = false) {
  const float zy = static_cast<float>(s.zero_point);
  if constexpr (K == SchemeKind::int32) {
    return finish(_mm512_add_epi32(acc, at.bias_s32), s, add_zero_point);
  } else if constexpr (K == SchemeKind::fbgemm) {
    const __m512 v = _mm512_add_ps(_mm512_cvtepi32_ps(acc), at.bias_f32);
    return round_then_add_zero_point(_mm512_mul_ps(v, at.scale_f32), s, saturated_low,
                                     add_zero_point, saturated_high);
  } else if constexpr (K == SchemeKind::onnxruntime) {
    // f32(f32(acc + B) · m), rounded half to even, the zero point added after (SPEC §4).
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    return round_then_add_zero_point(_mm512_mul_ps(_mm512_cvtepi32_ps(with_bias), at.scale_f32), s,
                                     saturated_low, add_zero_point, false);
  } else if constexpr (K == SchemeKind::qnnpack) {
    const __m512i with_bias = _mm512_add_epi32(acc, at.bias_s32);
    const __m512 v = _mm512_mul_ps(_mm512_cvtepi32_ps(with_bias), at.scale_f32);
    // |v| ≥ 2^31 converts to INT32_MIN, exactly as PyTorch's conversion does (SPEC §4 qnnpack).
    return finish(_mm512_cvtps_epi32(v), s, add_zero_point);
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
    return join64(even, odd, s, add_zero_point);
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
    return finish(r, s, add_zero_point);
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
                  lane(odd_lanes(with_bias), odd_lanes(q), odd_lanes(right)), s, add_zero_point);
  }
  return acc;
}

// The (scheme, output dtype) pairs with a vector stage (vector_stage_dispatch.hpp).
using gemm::for_vector_stage;

}  // namespace qconv::detail::avx512_vnni::stage_lanes
