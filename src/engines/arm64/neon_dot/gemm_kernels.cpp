// SPDX-License-Identifier: Apache-2.0
// The sdot register tile, 4x16c4 (kernels.hpp): up to 4 output pixels x one 16-channel sub-panel,
// every tap and input channel summed in registers. Each row's input is read 16 bytes at a time —
// 4 K steps — and `sdot acc.4s, w.16b, x.4b[s]` takes step s's 4 bytes from lane s, so one input
// load serves 4 steps x 4 weight registers. Built with -march=armv8.2-a+dotprod (CMakeLists.txt);
// called only on a CPU with the dot product.
#include <arm_neon.h>

#include <cstring>

#include "engines/arm64/kernels.hpp"

namespace qconv::detail::arm64::neon_dot {
namespace {

inline std::int64_t row_offset(const gemm::GemmTile& t, int i) {
  return t.row_offsets != nullptr ? t.row_offsets[i] : i * t.row_stride;
}

// 1 to 3 bytes (the ragged end of a tap's channels) as one 4-byte group, zeros after them: nothing
// past the tensor is read.
inline int8x16_t ragged_group(const std::int8_t* p, std::int32_t bytes) {
  std::uint32_t word = 0;
  for (std::int32_t b = 0; b < bytes; ++b) word |= std::uint32_t{std::uint8_t(p[b])} << (8 * b);
  return vreinterpretq_s8_u32(vdupq_n_u32(word));
}

inline int8x16_t group(const std::int8_t* p) {
  std::int32_t word;
  std::memcpy(&word, p, 4);
  return vreinterpretq_s8_s32(vdupq_n_s32(word));
}

// K step S of a 16-byte input load: 4 bytes from lane S of each row's x, times the sub-panel's 4
// weight registers.
template <int S, int kRows>
inline void step(int32x4_t (&acc)[kRows][4], const std::int8_t* w, const int8x16_t (&x)[kRows]) {
  // Keeps the compiler from hoisting the next steps' weight loads above these sdots: 16 weight
  // registers at once would leave too few for the 16 accumulators (it spilled two of them).
  __asm__ volatile("" ::: "memory");
  const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32),
                  w3 = vld1q_s8(w + 48);
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
    acc[i][0] = vdotq_laneq_s32(acc[i][0], w0, x[i], S);
    acc[i][1] = vdotq_laneq_s32(acc[i][1], w1, x[i], S);
    acc[i][2] = vdotq_laneq_s32(acc[i][2], w2, x[i], S);
    acc[i][3] = vdotq_laneq_s32(acc[i][3], w3, x[i], S);
  }
}

// One sub-panel (16 channels, 4 q registers of accumulators per row) of a kRows-row tile.
template <int kRows>
void sub_panel(const gemm::GemmTile& t, int j) {
  int32x4_t start[4];
  for (int q = 0; q < 4; ++q) {
    start[q] = vdupq_n_s32(0);
    if (t.zero_point_sums != nullptr) {  // −zx'·Σ(w' − zw'), wrapping as s32
      start[q] = vmlsq_s32(start[q], vdupq_n_s32(t.input_zero_point),
                           vld1q_s32(t.zero_point_sums + j * 16 + q * 4));
    }
  }
  int32x4_t acc[kRows][4];
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) acc[i][q] = start[q];
  }
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64;
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  // Locals: the barrier in step() would otherwise reload these from the tile every K step.
  const std::int32_t channels = t.channels, taps = t.taps;
  const std::int64_t* const tap_offsets = t.tap_offsets;
  const std::int64_t* const tap_steps = t.tap_steps;
  std::int64_t rows_at[kRows];
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) rows_at[i] = t.first_row + row_offset(t, i);
  for (std::int32_t tap = 0; tap < taps; ++tap) {
    const std::int8_t* row[kRows];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) row[i] = input + (rows_at[i] + tap_offsets[tap]);
    const std::int8_t* w = t.weights + tap_steps[tap] * step_bytes + j * 64;
    std::int32_t c = 0;
    for (; c + 16 <= channels; c += 16) {  // 4 steps per input load
      int8x16_t x[kRows];
#pragma GCC unroll 4
      for (int i = 0; i < kRows; ++i) x[i] = vld1q_s8(row[i] + c);
      step<0, kRows>(acc, w, x);
      step<1, kRows>(acc, w + step_bytes, x);
      step<2, kRows>(acc, w + 2 * step_bytes, x);
      step<3, kRows>(acc, w + 3 * step_bytes, x);
      w += 4 * step_bytes;
    }
    for (; c < channels; c += 4) {  // single steps, the last one perhaps ragged
      const std::int32_t bytes = channels - c < 4 ? channels - c : 4;
      const int8x16_t w0 = vld1q_s8(w), w1 = vld1q_s8(w + 16), w2 = vld1q_s8(w + 32),
                      w3 = vld1q_s8(w + 48);
#pragma GCC unroll 4
      for (int i = 0; i < kRows; ++i) {
        const int8x16_t x = bytes == 4 ? group(row[i] + c) : ragged_group(row[i] + c, bytes);
        acc[i][0] = vdotq_s32(acc[i][0], w0, x);
        acc[i][1] = vdotq_s32(acc[i][1], w1, x);
        acc[i][2] = vdotq_s32(acc[i][2], w2, x);
        acc[i][3] = vdotq_s32(acc[i][3], w3, x);
      }
      w += step_bytes;
    }
  }
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int q = 0; q < 4; ++q) vst1q_s32(t.acc + i * 64 + j * 16 + q * 4, acc[i][q]);
  }
}

template <int kRows>
void gemm_tile(const gemm::GemmTile& t) {
  for (int j = 0; j < t.vectors; ++j) sub_panel<kRows>(t, j);
  if (t.window_sums != nullptr) neon::window_sums(t, kRows);
}

}  // namespace

gemm::GemmTileKernel gemm_tile_kernel(int rows, int /*vectors: read from the tile*/) {
  switch (rows) {
    case 1: return &gemm_tile<1>;
    case 2: return &gemm_tile<2>;
    case 3: return &gemm_tile<3>;
    default: return &gemm_tile<4>;
  }
}

}  // namespace qconv::detail::arm64::neon_dot
