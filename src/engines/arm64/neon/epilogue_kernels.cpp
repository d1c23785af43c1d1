// SPDX-License-Identifier: Apache-2.0
// The output stage in 4-lane NEON: every scheme of SPEC §4, bit for bit as OutputStage::apply (the
// scalar oracle these are tested against, tests/neon_output_stage_test.cpp), plus the zero-point
// corrections that precede it. Each float operation is its own instruction (the library is built
// with -ffp-contract=off: nothing is fused into an FMA), and every conversion names its rounding:
// fcvtns (to nearest, ties to even), frintm (floor), frinta (half away from zero).
#include <arm_neon.h>

#include <cstring>

#include "engines/arm64/kernels.hpp"
#include "engines/gemm/vector_stage_dispatch.hpp"

namespace qconv::detail::arm64::neon {
namespace {

// One vector of 4 channels' constants: only the tables the scheme has (the others are empty).
struct Lanes {
  int32x4_t bias_s32, q31, shift_left, shift_right, round_down;
  float32x4_t bias_f32, scale_f32;

  template <SchemeKind K>
  static Lanes load(const gemm::StageView& s, std::int64_t channel) {
    const std::int64_t at = channel * s.channel_step;
    Lanes l{};
    l.bias_s32 = vld1q_s32(s.bias_s32 + at);
    l.bias_f32 = vld1q_f32(s.bias_f32 + at);
    l.scale_f32 = vld1q_f32(s.scale_f32 + at);
    l.q31 = vld1q_s32(s.q31 + at);
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite) {
      l.shift_left = vld1q_s32(s.shift_left + at);
    }
    if constexpr (K == SchemeKind::tvm || K == SchemeKind::tflite ||
                  K == SchemeKind::tflite_single) {
      l.shift_right = vld1q_s32(s.shift_right + at);
    }
    if constexpr (K == SchemeKind::tvm) l.round_down = vld1q_s32(s.round_down + at);
    return l;
  }
};

// clamp(r + zy, lo, hi) for an s32 r, exact for every r: the bounds move to r's side, where they
// fit in s32 (u8 and s8 outputs; the int32 scheme, whose zero point is 0).
inline int32x4_t finish(int32x4_t r, const gemm::StageView& s) {
  r = vmaxq_s32(r, vdupq_n_s32(s.lo - s.zero_point));
  r = vminq_s32(r, vdupq_n_s32(s.hi - s.zero_point));
  return vaddq_s32(r, vdupq_n_s32(s.zero_point));
}

// The same for 64-bit r (two lanes), narrowed to s32 once inside the bounds.
inline int32x2_t finish64(int64x2_t r, const gemm::StageView& s) {
  const int64x2_t lo = vdupq_n_s64(std::int64_t{s.lo} - s.zero_point);
  const int64x2_t hi = vdupq_n_s64(std::int64_t{s.hi} - s.zero_point);
  r = vbslq_s64(vcltq_s64(r, lo), lo, r);
  r = vbslq_s64(vcgtq_s64(r, hi), hi, r);
  return vmovn_s64(r);
}

inline int32x4_t join(int32x2_t low, int32x2_t high, const gemm::StageView& s) {
  return vaddq_s32(vcombine_s32(low, high), vdupq_n_s32(s.zero_point));
}

// rne(x) + zy clamped to [lo, hi] (fbgemm, onnxruntime: the zero point added after rounding), the
// clamp done on x first (integer bounds, exact in binary32: the same, and no conversion saturates).
inline int32x4_t round_then_add_zero_point(float32x4_t x, const gemm::StageView& s) {
  x = vmaxq_f32(x, vdupq_n_f32(static_cast<float>(s.lo - s.zero_point)));
  x = vminq_f32(x, vdupq_n_f32(static_cast<float>(s.hi - s.zero_point)));
  return vaddq_s32(vcvtnq_s32_f32(x), vdupq_n_s32(s.zero_point));
}

// clamp to [lo, hi] in binary32 (exact: u8/s8 bounds), then round half to even.
inline int32x4_t round_clamped(float32x4_t v, const gemm::StageView& s) {
  v = vmaxq_f32(v, vdupq_n_f32(static_cast<float>(s.lo)));
  v = vminq_f32(v, vdupq_n_f32(static_cast<float>(s.hi)));
  return vcvtnq_s32_f32(v);
}

// (p + nudge) >> right << left on 64-bit products, as the tvm scheme's vector constants define it
// (output_stage.hpp): sshl by a negative count is an arithmetic right shift.
inline int64x2_t shift_product(int64x2_t p, int64x2_t nudge, int64x2_t right, int64x2_t left) {
  return vshlq_s64(vshlq_s64(vaddq_s64(p, nudge), vnegq_s64(right)), left);
}

template <SchemeKind K>
int32x4_t apply(int32x4_t acc, const Lanes& at, const gemm::StageView& s) {
  // The s32 bias added with wrap-around, as OutputStage::apply does.
  const int32x4_t with_bias = vaddq_s32(acc, at.bias_s32);
  if constexpr (K == SchemeKind::int32) {
    return finish(with_bias, s);
  } else if constexpr (K == SchemeKind::fbgemm) {
    const float32x4_t v = vaddq_f32(vcvtq_f32_s32(acc), at.bias_f32);
    return round_then_add_zero_point(vmulq_f32(v, at.scale_f32), s);
  } else if constexpr (K == SchemeKind::onnxruntime) {
    // f32(f32(acc + B) · m), rounded half to even, the zero point added after (SPEC §4).
    return round_then_add_zero_point(vmulq_f32(vcvtq_f32_s32(with_bias), at.scale_f32), s);
  } else if constexpr (K == SchemeKind::qnnpack) {
    const float32x4_t v = vmulq_f32(vcvtq_f32_s32(with_bias), at.scale_f32);
    // |v| ≥ 2^31 gives INT32_MIN, as PyTorch's conversion does (SPEC §4 qnnpack); fcvtns would
    // saturate to INT32_MAX above.
    const uint32x4_t huge = vcageq_f32(v, vdupq_n_f32(2147483648.0f));
    const int32x4_t r = vbslq_s32(huge, vdupq_n_s32(INT32_MIN), vcvtnq_s32_f32(v));
    return finish(r, s);
  } else if constexpr (K == SchemeKind::onednn) {
    const float32x4_t v = vmulq_f32(vaddq_f32(vcvtq_f32_s32(acc), at.bias_f32), at.scale_f32);
    // ReLU's max(v, 0) is implied: lo ≥ zy then, and v < 0 gives v + zy ≤ zy.
    return round_clamped(vaddq_f32(v, vdupq_n_f32(static_cast<float>(s.zero_point))), s);
  } else if constexpr (K == SchemeKind::onnx) {
    // f64(acc + B)·f64(m) + f64(zy) in binary64, clamped, rounded half to even.
    const float64x2_t z = vdupq_n_f64(s.zero_point), lo = vdupq_n_f64(s.lo), hi = vdupq_n_f64(s.hi);
    const auto half = [&](int64x2_t a, float64x2_t m) {
      float64x2_t r = vaddq_f64(vmulq_f64(vcvtq_f64_s64(a), m), z);
      r = vminq_f64(vmaxq_f64(r, lo), hi);
      return vmovn_s64(vcvtnq_s64_f64(r));
    };
    const int32x2_t low =
        half(vmovl_s32(vget_low_s32(with_bias)), vcvt_f64_f32(vget_low_f32(at.scale_f32)));
    const int32x2_t high = half(vmovl_high_s32(with_bias), vcvt_high_f64_f32(at.scale_f32));
    return vcombine_s32(low, high);
  } else if constexpr (K == SchemeKind::tvm_f32) {
    const float32x4_t v = vaddq_f32(vmulq_f32(vcvtq_f32_s32(with_bias), at.scale_f32),
                                    vdupq_n_f32(static_cast<float>(s.zero_point)));
    // UPWARD: floor(v + 0.5) in binary32; TONEAREST: half away from zero (frinta, C's round).
    const float32x4_t r =
        s.round_upward ? vrndmq_f32(vaddq_f32(v, vdupq_n_f32(0.5f))) : vrndaq_f32(v);
    return round_clamped(r, s);  // r is integral: the rounding of the conversion does nothing
  } else if constexpr (K == SchemeKind::tvm) {
    // p = s64(acc)·q31; r = ((p + nudge) >> right) << left, the nudge 2^(right − 1) (0 when
    // right = 0) less round_down for a negative p (output_stage.hpp).
    const auto half = [&](int64x2_t p, int64x2_t right, int64x2_t left, int64x2_t down) {
      const int64x2_t nudge = vshlq_s64(vdupq_n_s64(1), vsubq_s64(right, vdupq_n_s64(1)));
      const int64x2_t negative = vreinterpretq_s64_u64(vcltzq_s64(p));  // all ones where p < 0
      return finish64(shift_product(p, vsubq_s64(nudge, vandq_s64(negative, down)), right, left),
                      s);
    };
    const int32x2_t low =
        half(vmull_s32(vget_low_s32(with_bias), vget_low_s32(at.q31)),
             vmovl_s32(vget_low_s32(at.shift_right)), vmovl_s32(vget_low_s32(at.shift_left)),
             vmovl_s32(vget_low_s32(at.round_down)));
    const int32x2_t high = half(vmull_high_s32(with_bias, at.q31), vmovl_high_s32(at.shift_right),
                                vmovl_high_s32(at.shift_left), vmovl_high_s32(at.round_down));
    return join(low, high, s);
  } else if constexpr (K == SchemeKind::tflite) {
    const int32x4_t shifted = vshlq_s32(with_bias, at.shift_left);  // wraps, as s32
    // SaturatingRoundingDoublingHighMul is sqrdmulh exactly (rounding.hpp).
    const int32x4_t high = vqrdmulhq_s32(shifted, at.q31);
    // RoundingDivideByPOT: half away from zero.
    const int32x4_t exponent = at.shift_right;
    const int32x4_t one = vdupq_n_s32(1);
    const int32x4_t mask = vsubq_s32(vshlq_s32(one, exponent), one);
    const int32x4_t remainder = vandq_s32(high, mask);
    // threshold = mask / 2, plus 1 for a negative value (the comparison's −1 subtracted).
    const int32x4_t threshold =
        vsubq_s32(vshrq_n_s32(mask, 1), vreinterpretq_s32_u32(vcltzq_s32(high)));
    const int32x4_t r = vshlq_s32(high, vnegq_s32(exponent));
    return finish(vsubq_s32(r, vreinterpretq_s32_u32(vcgtq_s32(remainder, threshold))), s);
  } else if constexpr (K == SchemeKind::tflite_single) {
    // (s64(acc)·q31 + 2^(30 − shift)) >> (31 − shift), right = 31 − shift ≥ 1.
    const auto half = [&](int64x2_t p, int64x2_t right) {
      const int64x2_t nudge = vshlq_s64(vdupq_n_s64(1), vsubq_s64(right, vdupq_n_s64(1)));
      return finish64(vshlq_s64(vaddq_s64(p, nudge), vnegq_s64(right)), s);
    };
    const int32x2_t low = half(vmull_s32(vget_low_s32(with_bias), vget_low_s32(at.q31)),
                               vmovl_s32(vget_low_s32(at.shift_right)));
    const int32x2_t high = half(vmull_high_s32(with_bias, at.q31), vmovl_high_s32(at.shift_right));
    return join(low, high, s);
  }
  return acc;
}

// acc − zw'·Σx', the exact sum (the kernel started it at −zx'·Σ(w' − zw')), wrapping as s32.
inline int32x4_t corrected(const gemm::TileOutput& t, std::int32_t i, std::int32_t c,
                           int32x4_t acc) {
  if (t.window_sums == nullptr || t.weight_zero_points == nullptr) return acc;
  const int32x4_t zw = t.uniform_weight_zero_point ? vdupq_n_s32(t.weight_zero_points[0])
                                                   : vld1q_s32(t.weight_zero_points + c);
  return vmlsq_s32(acc, zw, vdupq_n_s32(t.window_sums[i]));
}

// 16 channels' results (already inside the dtype's range) as 16 bytes.
template <DType D>
inline void store_bytes(void* out, const int32x4_t (&r)[4], std::int32_t count) {
  const int16x8_t low = vcombine_s16(vmovn_s32(r[0]), vmovn_s32(r[1]));
  const int16x8_t high = vcombine_s16(vmovn_s32(r[2]), vmovn_s32(r[3]));
  const int8x16_t bytes = vcombine_s8(vmovn_s16(low), vmovn_s16(high));
  if (count >= 16) {
    vst1q_s8(static_cast<std::int8_t*>(out), bytes);
  } else {  // a partial panel: only the valid channels, nothing past the row
    std::int8_t all[16];
    vst1q_s8(all, bytes);
    std::memcpy(out, all, static_cast<std::size_t>(count));
  }
}

template <SchemeKind K, DType D>
void epilogue(const gemm::TileOutput& t, const gemm::StageView& stage) {
  const gemm::StageView s = stage;  // a local copy: the byte stores may alias the caller's
  for (std::int32_t c0 = 0; c0 < t.channels; c0 += 16) {
    Lanes at[4];
    for (int q = 0; q < 4; ++q) at[q] = Lanes::load<K>(s, t.channel + c0 + 4 * q);
    const std::int32_t count = t.channels - c0 < 16 ? t.channels - c0 : 16;
    for (std::int32_t i = 0; i < t.rows; ++i) {
      int32x4_t r[4];
      for (int q = 0; q < 4; ++q) {
        const std::int32_t c = c0 + 4 * q;
        r[q] = apply<K>(corrected(t, i, c, vld1q_s32(t.acc + i * 64 + c)), at[q], s);
      }
      const std::int64_t row = i * t.output_row_stride + c0;
      if constexpr (D == DType::s32) {
        auto* out = static_cast<std::int32_t*>(t.output) + row;
        std::int32_t all[16];
        for (int q = 0; q < 4; ++q) vst1q_s32(all + 4 * q, r[q]);
        std::memcpy(out, all, static_cast<std::size_t>(count) * 4);
      } else {
        store_bytes<D>(static_cast<std::int8_t*>(t.output) + row, r, count);
      }
    }
  }
}

}  // namespace

void correct_tile(const gemm::TileOutput& t) {
  if (t.window_sums == nullptr || t.weight_zero_points == nullptr) return;
  for (std::int32_t i = 0; i < t.rows; ++i) {
    for (std::int32_t c = 0; c < t.channels; c += 4) {
      std::int32_t* a = t.acc + i * 64 + c;
      vst1q_s32(a, corrected(t, i, c, vld1q_s32(a)));
    }
  }
}

gemm::EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype) {
  // s32 from a requantizing scheme has none: r may exceed s32 before zy.
  return gemm::for_vector_stage<gemm::EpilogueKernel>(
      scheme, output_dtype,
      []<SchemeKind K, DType D>() -> gemm::EpilogueKernel { return &epilogue<K, D>; });
}

}  // namespace qconv::detail::arm64::neon
