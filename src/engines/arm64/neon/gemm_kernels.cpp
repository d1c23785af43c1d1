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
  std::uint32_t word = 0;
  if (bytes == 4) {
    std::memcpy(&word, p, 4);
  } else {
    for (std::int32_t b = 0; b < bytes; ++b) word |= std::uint32_t{std::uint8_t(p[b])} << (8 * b);
  }
  return vreinterpretq_s8_u32(vdupq_n_u32(word));
}

// One row's 16 channels as half sums: h[2q] holds channels 4q, 4q+1 and h[2q + 1] channels 4q+2,
// 4q+3, each as [c k01, c k23, c+1 k01, c+1 k23]. Named members, not an array: GCC keeps them in
// registers then (an array of vectors it kept on the stack).
struct HalfSums {
  int32x4_t h0, h1, h2, h3, h4, h5, h6, h7;
};

inline HalfSums zero_sums() {
  const int32x4_t z = vdupq_n_s32(0);
  return {z, z, z, z, z, z, z, z};
}

// Weight register w (4 channels x 4 bytes) times x (4 input bytes in every lane).
inline int32x4_t low_products(int32x4_t h, int8x16_t w, int8x16_t x) {
  return vpadalq_s16(h, vmull_s8(vget_low_s8(w), vget_low_s8(x)));
}
inline int32x4_t high_products(int32x4_t h, int8x16_t w, int8x16_t x) {
  return vpadalq_s16(h, vmull_high_s8(w, x));
}

// One K step of one row.
inline void step(HalfSums& s, const int8x16_t (&w)[4], int8x16_t x) {
  s.h0 = low_products(s.h0, w[0], x);
  s.h1 = high_products(s.h1, w[0], x);
  s.h2 = low_products(s.h2, w[1], x);
  s.h3 = high_products(s.h3, w[1], x);
  s.h4 = low_products(s.h4, w[2], x);
  s.h5 = high_products(s.h5, w[2], x);
  s.h6 = low_products(s.h6, w[3], x);
  s.h7 = high_products(s.h7, w[3], x);
}

inline void load_weights(int8x16_t (&w)[4], const std::int8_t* p) {
  // Keeps the compiler from hoisting later steps' weight loads above this step's multiplies: the
  // 16 half sums of two rows need the registers.
  __asm__ volatile("" ::: "memory");
  w[0] = vld1q_s8(p);
  w[1] = vld1q_s8(p + 16);
  w[2] = vld1q_s8(p + 32);
  w[3] = vld1q_s8(p + 48);
}

inline int8x16_t lane_group(int8x16_t v, int lane) {
  const int32x4_t words = vreinterpretq_s32_s8(v);
  switch (lane) {
    case 0: return vreinterpretq_s8_s32(vdupq_laneq_s32(words, 0));
    case 1: return vreinterpretq_s8_s32(vdupq_laneq_s32(words, 1));
    case 2: return vreinterpretq_s8_s32(vdupq_laneq_s32(words, 2));
    default: return vreinterpretq_s8_s32(vdupq_laneq_s32(words, 3));
  }
}

// The sums of one row into acc: channels j * 16 + [0, 16), plus the constant term `start`.
inline void store_row(std::int32_t* acc, const HalfSums& s, const int32x4_t (&start)[4]) {
  vst1q_s32(acc, vaddq_s32(start[0], vpaddq_s32(s.h0, s.h1)));
  vst1q_s32(acc + 4, vaddq_s32(start[1], vpaddq_s32(s.h2, s.h3)));
  vst1q_s32(acc + 8, vaddq_s32(start[2], vpaddq_s32(s.h4, s.h5)));
  vst1q_s32(acc + 12, vaddq_s32(start[3], vpaddq_s32(s.h6, s.h7)));
}

// Rows `first` and (with kTwo) first + 1 of sub-panel j.
template <bool kTwo>
void rows_of_sub_panel(const gemm::GemmTile& t, int j, int first) {
  HalfSums a = zero_sums(), b = zero_sums();
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64;
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  // Locals: the barrier in load_weights() would otherwise reload these from the tile every step.
  const std::int32_t channels = t.channels, taps = t.taps;
  const std::int64_t* const tap_offsets = t.tap_offsets;
  const std::int64_t* const tap_steps = t.tap_steps;
  const std::int64_t at_a = t.first_row + row_offset(t, first);
  const std::int64_t at_b = kTwo ? t.first_row + row_offset(t, first + 1) : at_a;
  int8x16_t w[4];
  for (std::int32_t tap = 0; tap < taps; ++tap) {
    const std::int8_t* row_a = input + (at_a + tap_offsets[tap]);
    const std::int8_t* row_b = input + (at_b + tap_offsets[tap]);
    const std::int8_t* p = t.weights + tap_steps[tap] * step_bytes + j * 64;
    std::int32_t c = 0;
    for (; c + 16 <= channels; c += 16) {  // one 16-byte load per row serves 4 steps
      const int8x16_t va = vld1q_s8(row_a + c);
      const int8x16_t vb = kTwo ? vld1q_s8(row_b + c) : va;
#pragma GCC unroll 4
      for (int k = 0; k < 4; ++k) {
        load_weights(w, p + k * step_bytes);
        step(a, w, lane_group(va, k));
        if (kTwo) step(b, w, lane_group(vb, k));
      }
      p += 4 * step_bytes;
    }
    for (; c < channels; c += 4) {
      const std::int32_t bytes = channels - c < 4 ? channels - c : 4;
      load_weights(w, p);
      step(a, w, group(row_a + c, bytes));
      if (kTwo) step(b, w, group(row_b + c, bytes));
      p += step_bytes;
    }
  }
  int32x4_t start[4];
  for (int q = 0; q < 4; ++q) {
    start[q] = vdupq_n_s32(0);
    if (t.zero_point_sums != nullptr) {  // −zx'·Σ(w' − zw'), wrapping as s32
      start[q] = vmlsq_s32(start[q], vdupq_n_s32(t.input_zero_point),
                           vld1q_s32(t.zero_point_sums + j * 16 + q * 4));
    }
  }
  store_row(t.acc + first * 64 + j * 16, a, start);
  if (kTwo) store_row(t.acc + (first + 1) * 64 + j * 16, b, start);
}

template <int kRows>
void gemm_tile(const gemm::GemmTile& t) {
  for (int j = 0; j < t.vectors; ++j) {
    int i = 0;
    for (; i + 2 <= kRows; i += 2) rows_of_sub_panel<true>(t, j, i);
    if (i < kRows) rows_of_sub_panel<false>(t, j, i);
  }
  if (t.window_sums != nullptr) window_sums(t, kRows);
}

// Grouped tiles, as the sdot ones (neon_dot/gemm_kernels.cpp: tbl hands each lane its own
// group's dword) with smull/sadalp half sums, and the window sums by saddlp/sadalp.
template <int kRows, bool kWindowSums>
void grouped_tile(const gemm::GroupedTile& g) {
  const gemm::GemmTile& t = g.gemm;
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64;
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  const uint8x16_t byte_of_dword = vreinterpretq_u8_u32(vdupq_n_u32(0x03020100));
  for (int i = 0; i < kRows; ++i) {
    const std::int64_t at = t.first_row + row_offset(t, i);
    for (int j = 0; j < t.vectors; ++j) {
      uint8x16_t index[4];
      int32x4_t low[4], high[4], sums[4];
      for (int q = 0; q < 4; ++q) {
        const uint32x4_t dwords = vreinterpretq_u32_s32(vld1q_s32(g.lane_dwords + j * 16 + q * 4));
        // Byte b of lane l: 4·lane_dwords[l] + b.
        index[q] = vaddq_u8(vreinterpretq_u8_u32(vshlq_n_u32(vmulq_n_u32(dwords, 0x01010101), 2)),
                            byte_of_dword);
        low[q] = high[q] = sums[q] = vdupq_n_s32(0);
      }
      for (std::int32_t tap = 0; tap < t.taps; ++tap) {
        const std::int8_t* row = input + (at + t.tap_offsets[tap]);
        int8x16x4_t table;
        if (g.span == 64) {
          table = vld1q_s8_x4(row);
        } else {  // only the panel's own channels: nothing past them (or the tensor) is read
          std::int8_t bytes[64] = {};
          std::memcpy(bytes, row, static_cast<std::size_t>(g.span));
          table = vld1q_s8_x4(bytes);
        }
        const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes + j * 64;
        uint8x16_t step_index[4] = {index[0], index[1], index[2], index[3]};
        for (std::int32_t k = 0; k < t.steps; ++k) {
          for (int q = 0; q < 4; ++q) {
            const int8x16_t mine = vqtbl4q_s8(table, step_index[q]);
            const int8x16_t wq = vld1q_s8(w + 16 * q);
            low[q] = low_products(low[q], wq, mine);
            high[q] = high_products(high[q], wq, mine);
            if constexpr (kWindowSums) sums[q] = vpadalq_s16(sums[q], vpaddlq_s8(mine));
            step_index[q] = vaddq_u8(step_index[q], vdupq_n_u8(4));
          }
          w += step_bytes;
        }
      }
      for (int q = 0; q < 4; ++q) {
        int32x4_t sum = vpaddq_s32(low[q], high[q]);
        if (t.zero_point_sums != nullptr) {  // −zx'·Σ(w' − zw'), wrapping as s32
          sum = vmlsq_s32(sum, vdupq_n_s32(t.input_zero_point),
                          vld1q_s32(t.zero_point_sums + j * 16 + q * 4));
        }
        if constexpr (kWindowSums) {
          sum = vmlsq_s32(sum, vld1q_s32(g.zero_points + j * 16 + q * 4), sums[q]);
        }
        vst1q_s32(t.acc + i * 64 + j * 16 + q * 4, sum);
      }
    }
  }
}

// Groups of 16 or 32 channels (GroupedLanes::one_group): sub-panel j is a plain GEMM sub-panel over
// its group's input channels (the broadcast, no tbl), as in the sdot kernels.
template <int kRows, bool kWindowSums>
void group_vectors_tile(const gemm::GroupedTile& g) {
  for (int j = 0; j < g.gemm.vectors; ++j) {
    gemm::GemmTile t = g.gemm;
    t.first_row += 4 * std::int64_t{g.lane_dwords[j * 16]};
    int i = 0;
    for (; i + 2 <= kRows; i += 2) rows_of_sub_panel<true>(t, j, i);
    if (i < kRows) rows_of_sub_panel<false>(t, j, i);
    if constexpr (kWindowSums) subtract_group_window_sums(g, t, j, kRows);
  }
}

// gathered: tbl; one_group: the plain sub-panel; four_groups: none (the planner then gathers).
template <int kRows, bool kWindowSums>
gemm::GroupedTileKernel grouped_for(gemm::GroupedLanes lanes) {
  switch (lanes) {
    case gemm::GroupedLanes::gathered: return &grouped_tile<kRows, kWindowSums>;
    case gemm::GroupedLanes::one_group: return &group_vectors_tile<kRows, kWindowSums>;
    default: return nullptr;
  }
}

template <bool kWindowSums>
gemm::GroupedTileKernel grouped_by_rows(int rows, gemm::GroupedLanes lanes) {
  switch (rows) {
    case 1: return grouped_for<1, kWindowSums>(lanes);
    case 2: return grouped_for<2, kWindowSums>(lanes);
    case 3: return grouped_for<3, kWindowSums>(lanes);
    default: return grouped_for<4, kWindowSums>(lanes);
  }
}

}  // namespace

void subtract_group_window_sums(const gemm::GroupedTile& g, const gemm::GemmTile& t, int j,
                                int rows) {
  std::int32_t sums[kMaxRows];
  gemm::GemmTile summed = t;
  summed.window_sums = sums;
  window_sums(summed, rows);
  for (int i = 0; i < rows; ++i) {
    for (int q = 0; q < 4; ++q) {
      std::int32_t* acc = t.acc + i * 64 + j * 16 + q * 4;
      vst1q_s32(acc, vmlsq_s32(vld1q_s32(acc), vld1q_s32(g.zero_points + j * 16 + q * 4),
                               vdupq_n_s32(sums[i])));
    }
  }
}

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

gemm::GroupedTileKernel grouped_tile_kernel(int rows, int /*vectors: read from the tile*/,
                                            bool window_sums, gemm::GroupedLanes lanes) {
  return window_sums ? grouped_by_rows<true>(rows, lanes) : grouped_by_rows<false>(rows, lanes);
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
