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

// Grouped tiles (kernel_set.hpp: GroupedTile): a panel holds several groups narrower than 16
// channels side by side, and each lane multiplies 4 bytes of its own group's input channels. A
// row's input channels for the panel (span bytes, at most 64) are loaded once per tap as a 4-q
// table; per K step, tbl hands every lane its group's dword (byte indices 4·lane_dwords[l] + 4k +
// 0..3), then sdot as in the GEMM tile. With window sums, an sdot by ones sums each lane's own
// bytes, and zw'·Σx comes off that lane's sum here.
namespace qconv::detail::arm64::neon_dot {
namespace {

template <int kRows, bool kWindowSums>
void grouped_tile(const gemm::GroupedTile& g) {
  const gemm::GemmTile& t = g.gemm;
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 64;
  const auto* input = reinterpret_cast<const std::int8_t*>(t.input);
  const int8x16_t ones = vdupq_n_s8(1);
  const uint8x16_t byte_of_dword = vreinterpretq_u8_u32(vdupq_n_u32(0x03020100));
  for (int i = 0; i < kRows; ++i) {
    const std::int64_t at = t.first_row + row_offset(t, i);
    for (int j = 0; j < t.vectors; ++j) {
      uint8x16_t index[4];
      int32x4_t acc[4], sums[4];
      for (int q = 0; q < 4; ++q) {
        const uint32x4_t dwords = vreinterpretq_u32_s32(vld1q_s32(g.lane_dwords + j * 16 + q * 4));
        // Byte b of lane l: 4·lane_dwords[l] + b.
        index[q] = vaddq_u8(vreinterpretq_u8_u32(vshlq_n_u32(vmulq_n_u32(dwords, 0x01010101), 2)),
                            byte_of_dword);
        acc[q] = vdupq_n_s32(0);
        if (t.zero_point_sums != nullptr) {
          acc[q] = vmlsq_s32(acc[q], vdupq_n_s32(t.input_zero_point),
                             vld1q_s32(t.zero_point_sums + j * 16 + q * 4));
        }
        sums[q] = vdupq_n_s32(0);
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
            acc[q] = vdotq_s32(acc[q], vld1q_s8(w + 16 * q), mine);
            if constexpr (kWindowSums) sums[q] = vdotq_s32(sums[q], ones, mine);
            step_index[q] = vaddq_u8(step_index[q], vdupq_n_u8(4));
          }
          w += step_bytes;
        }
      }
      for (int q = 0; q < 4; ++q) {
        int32x4_t sum = acc[q];
        if constexpr (kWindowSums) {
          sum = vmlsq_s32(sum, vld1q_s32(g.zero_points + j * 16 + q * 4), sums[q]);
        }
        vst1q_s32(t.acc + i * 64 + j * 16 + q * 4, sum);
      }
    }
  }
}

// Groups of 16 or 32 channels (GroupedLanes::one_group): every lane of sub-panel j reads the same
// group's dwords, so the sub-panel is a plain GEMM sub-panel over that group's input channels —
// the broadcast sdot, no tbl.
template <int kRows, bool kWindowSums>
void group_vectors_tile(const gemm::GroupedTile& g) {
  for (int j = 0; j < g.gemm.vectors; ++j) {
    gemm::GemmTile t = g.gemm;
    t.first_row += 4 * std::int64_t{g.lane_dwords[j * 16]};
    sub_panel<kRows>(t, j);
    if constexpr (kWindowSums) neon::subtract_group_window_sums(g, t, j, kRows);
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

gemm::GroupedTileKernel grouped_tile_kernel(int rows, int /*vectors: read from the tile*/,
                                            bool window_sums, gemm::GroupedLanes lanes) {
  return window_sums ? grouped_by_rows<true>(rows, lanes) : grouped_by_rows<false>(rows, lanes);
}

}  // namespace qconv::detail::arm64::neon_dot
