// SPDX-License-Identifier: Apache-2.0
// Depthwise tiles on NEON: channels in lanes, up to 4 output pixels x 64 channels, 8 channels per
// step. The input is s8 (kernels.hpp); x − zx and w − zw both lie in [−255, 255], so they are
// widened to s16 and multiplied into s32 by smlal (each product at most 255², exact): the sum is
// (x − zx)(w − zw) itself, which needs no correction. The planner's weights pair consecutive taps,
// [pair][64 channels][2]; ld2 splits a pair's 8 channels into each tap's 8 weights.
#include <arm_neon.h>

#include <cstring>

#include "engines/arm64/kernels.hpp"

namespace qconv::detail::arm64::neon {
namespace {

// 8 input bytes of a pixel (fewer at the end of a row of channels: nothing past the tensor is
// read), less the zero point, as s16.
inline int16x8_t centred(const std::int8_t* p, std::int32_t count, int16x8_t zx) {
  int8x8_t v;
  if (count >= 8) {
    v = vld1_s8(p);
  } else {
    std::int8_t bytes[8] = {};
    std::memcpy(bytes, p, static_cast<std::size_t>(count));
    v = vld1_s8(bytes);
  }
  return vsubq_s16(vmovl_s8(v), zx);
}

}  // namespace

void depthwise_tile(const gemm::DepthwiseTile& t) {
  const int16x8_t zx = vdupq_n_s16(static_cast<std::int16_t>(t.zero_point));
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  for (std::int32_t c = 0; c < t.channels; c += 8) {
    const std::int32_t count = t.channels - c;
    for (std::int32_t i = 0; i < t.rows; ++i) {
      const std::int8_t* row = input + (t.first_row + i * t.row_stride + c);
      int32x4_t low = vdupq_n_s32(0), high = vdupq_n_s32(0);
      for (std::int32_t tap = 0; tap < t.taps; tap += 2) {
        const int16x8x2_t w = vld2q_s16(t.weights + (tap / 2) * 128 + 2 * c);
        const int16x8_t x0 = centred(row + t.tap_offsets[tap], count, zx);
        low = vmlal_s16(low, vget_low_s16(x0), vget_low_s16(w.val[0]));
        high = vmlal_high_s16(high, x0, w.val[0]);
        if (tap + 1 < t.taps) {  // an odd last tap has no partner (its weight is 0 anyway)
          const int16x8_t x1 = centred(row + t.tap_offsets[tap + 1], count, zx);
          low = vmlal_s16(low, vget_low_s16(x1), vget_low_s16(w.val[1]));
          high = vmlal_high_s16(high, x1, w.val[1]);
        }
      }
      vst1q_s32(t.acc + i * 64 + c, low);
      vst1q_s32(t.acc + i * 64 + c + 4, high);
    }
  }
}

}  // namespace qconv::detail::arm64::neon
