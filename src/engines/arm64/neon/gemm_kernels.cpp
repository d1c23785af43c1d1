// SPDX-License-Identifier: Apache-2.0
// The plain-NEON register tile, for ARMv8.0 CPUs without the dot product: the same panels and
// tile interface as the sdot tile (kernels.hpp), up to 4 rows x 16 channels, taken two rows at a
// time. Per K step a row's 4 input bytes are broadcast to the 4 lanes of a q register and
// multiplied with each weight register by smull/smull2 (s8 x s8 -> 8 s16 products; no s8 product
// overflows s16), then sadalp adds adjacent products into s32 (pairwise, so no s16 sum can
// overflow): each accumulator holds two channels' half sums, [c k01, c k23, c+1 k01, c+1 k23],
// folded into channels by one addp at the end. Also the window sums, for both tiles.
#include <arm_neon.h>

#include <cstring>

#include "engines/arm64/kernels.hpp"

namespace qconv::detail::arm64::neon {
namespace {

inline std::int64_t row_offset(const gemm::GemmTile& t, int i) {
  return t.row_offsets != nullptr ? t.row_offsets[i] : i * t.row_stride;
}

// Up to 4 bytes (a tap's ragged end reads fewer: nothing past the tensor) broadcast to 4 lanes.
inline int8x16_t group(const std::int8_t* p, std::int32_t bytes) {
  std::int32_t word = 0;
  std::memcpy(&word, p, static_cast<std::size_t>(bytes));
  return vreinterpretq_s8_s32(vdupq_n_s32(word));
}

// One K step of kRows rows: x[i] holds row i's 4 bytes in every lane.
template <int kRows>
inline void step(int32x4_t (&half)[kRows][8], const std::int8_t* w, const int8x16_t (&x)[kRows]) {
  int8x16_t wq[4];
#pragma GCC unroll 4
  for (int q = 0; q < 4; ++q) wq[q] = vld1q_s8(w + 16 * q);
#pragma GCC unroll 2
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) {
      half[i][2 * q] = vpadalq_s16(half[i][2 * q], vmull_s8(vget_low_s8(wq[q]), vget_low_s8(x[i])));
      half[i][2 * q + 1] = vpadalq_s16(half[i][2 * q + 1], vmull_high_s8(wq[q], x[i]));
    }
  }
}

// Rows [first, first + kRows) of sub-panel j.
template <int kRows>
void rows_of_sub_panel(const gemm::GemmTile& t, int j, int first) {
  int32x4_t half[kRows][8];
#pragma GCC unroll 2
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 8
    for (int q = 0; q < 8; ++q) half[i][q] = vdupq_n_s32(0);
  }
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64;
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::int8_t* row[kRows];
    const std::int64_t origin = t.first_row + t.tap_offsets[tap];
#pragma GCC unroll 2
    for (int i = 0; i < kRows; ++i) row[i] = input + (origin + row_offset(t, first + i));
    const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes + j * 64;
    std::int32_t c = 0;
    for (; c + 16 <= t.channels; c += 16) {  // one 16-byte load per row serves 4 steps
      int8x16_t v[kRows];
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) v[i] = vld1q_s8(row[i] + c);
      int8x16_t x[kRows];
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) {
        x[i] = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(v[i]), 0));
      }
      step<kRows>(half, w, x);
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) {
        x[i] = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(v[i]), 1));
      }
      step<kRows>(half, w + step_bytes, x);
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) {
        x[i] = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(v[i]), 2));
      }
      step<kRows>(half, w + 2 * step_bytes, x);
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) {
        x[i] = vreinterpretq_s8_s32(vdupq_laneq_s32(vreinterpretq_s32_s8(v[i]), 3));
      }
      step<kRows>(half, w + 3 * step_bytes, x);
      w += 4 * step_bytes;
    }
    for (; c < t.channels; c += 4) {
      const std::int32_t bytes = t.channels - c < 4 ? t.channels - c : 4;
      int8x16_t x[kRows];
#pragma GCC unroll 2
      for (int i = 0; i < kRows; ++i) x[i] = group(row[i] + c, bytes);
      step<kRows>(half, w, x);
      w += step_bytes;
    }
  }
  for (int q = 0; q < 4; ++q) {
    int32x4_t start = vdupq_n_s32(0);
    if (t.zero_point_sums != nullptr) {  // −zx'·Σ(w' − zw'), wrapping as s32
      start = vmlsq_s32(start, vdupq_n_s32(t.input_zero_point),
                        vld1q_s32(t.zero_point_sums + j * 16 + q * 4));
    }
#pragma GCC unroll 2
    for (int i = 0; i < kRows; ++i) {
      const int32x4_t sums = vpaddq_s32(half[i][2 * q], half[i][2 * q + 1]);
      vst1q_s32(t.acc + (first + i) * 64 + j * 16 + q * 4, vaddq_s32(start, sums));
    }
  }
}

template <int kRows>
void gemm_tile(const gemm::GemmTile& t) {
  for (int j = 0; j < t.vectors; ++j) {
    int i = 0;
    for (; i + 2 <= kRows; i += 2) rows_of_sub_panel<2>(t, j, i);
    if (i < kRows) rows_of_sub_panel<1>(t, j, i);
  }
  if (t.window_sums != nullptr) window_sums(t, kRows);
}

}  // namespace

void window_sums(const gemm::GemmTile& t, int rows) {
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  for (int i = 0; i < rows; ++i) {
    int32x4_t sums = vdupq_n_s32(0);
    std::int32_t tail = 0;
    for (std::int32_t tap = 0; tap < t.taps; ++tap) {
      const std::int8_t* p = input + (t.first_row + t.tap_offsets[tap] + row_offset(t, i));
      std::int32_t c = 0;
      for (; c + 16 <= t.channels; c += 16) sums = vpadalq_s16(sums, vpaddlq_s8(vld1q_s8(p + c)));
      for (; c < t.channels; ++c) tail += p[c];
    }
    t.window_sums[i] = vaddvq_s32(sums) + tail;
  }
}

gemm::GemmTileKernel gemm_tile_kernel(int rows, int /*vectors: read from the tile*/) {
  switch (rows) {
    case 1: return &gemm_tile<1>;
    case 2: return &gemm_tile<2>;
    case 3: return &gemm_tile<3>;
    default: return &gemm_tile<4>;
  }
}

}  // namespace qconv::detail::arm64::neon
