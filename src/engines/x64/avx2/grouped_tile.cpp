// SPDX-License-Identifier: Apache-2.0
// Grouped tiles for the avx2 kernel set (KernelSet::grouped_tile): one panel holds several groups
// of 4 to 32 output channels side by side, so the lanes stay full (a panel of its own per group of
// 4 used a quarter of its 16 lanes: ResNeXt's 4-channel groups ran at a fifth of oneDNN's speed).
// Lanes `gathered` in channel order: each 8-lane half of a 16-lane vector is one group (8 or more
// output channels per group: two broadcasts of its u16 pairs, as a plain tile's; 16 or more: one
// pair for both halves) or two (4 per group: one 16-byte load, two vpermd). Lanes `four_groups`
// and `four_groups_of_8` (4 or 8 input and output channels per group): two 128-bit broadcasts of
// the input widened in their order (grouped_widening) feed a whole vector, whose lanes go back to
// channel order at the end. (With the plain widened copy each row and step took two vshufps more
// at 4 channels per group, 7 % of a ResNeXt layer; at 8, four 32-bit broadcasts for two 128-bit
// ones, 4-5 %.) The multiply is the plain tile's
// (widened_dot.hpp), exact. No in_lane_groups or one_group tiles: the planner then picks these.
// Built with AVX2 flags: see kernel_set.hpp.
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/widened_dot.hpp"

namespace qconv::detail::avx2 {
namespace {

using gemm::GemmTile;
using gemm::GroupedTile;

// Rows per register pass: 4 rows x 2 halves of accumulators, and with window sums as many again
// at 2 rows (16 ymm registers).
constexpr int kRowsPerPass = 4;
constexpr int kRowsPerPassWithSums = 2;

// How an 8-lane half of a vector gets its input.
enum class Feed {
  whole_vector,  // lanes gathered in channel order, 16 or more output channels per group: both
                 // halves of a vector read the same input
  one_group,     // lanes gathered in channel order, 8 output channels per group
  two_groups,    // lanes gathered in channel order, 4 output channels per group: lanes 0-3 and 4-7
  four_groups,   // GroupedLanes::four_groups: both halves hold outputs of the vector's 4 groups
  four_groups_of_8  // GroupedLanes::four_groups_of_8: the same, groups of 8
};

// Channels per group of the feeds whose input is widened in their order, else 0.
template <Feed kFeed>
constexpr int kFourGroupsWidth = kFeed == Feed::four_groups        ? 4
                                 : kFeed == Feed::four_groups_of_8 ? 8
                                                                   : 0;

// Vector j's input (x0, x1) and (x2, x3) of step k of a row (widened) for half h: `at` the widened
// bytes of its groups' first dwords (one_group, whole_vector: at[h][0]; two_groups: at[h][0] and
// at[h][1]; four_groups, four_groups_of_8: at[0][0], the step's pairs of the vector's 4 groups).
template <Feed kFeed>
inline Widened::Input half_input(const std::uint8_t* row, const std::int64_t (&at)[2]) {
  if constexpr (kFeed == Feed::two_groups) {
    // Lanes 0-3 read the first group's pairs and 4-7 the next one's, 8 bytes later.
    const __m256i both =
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + at[0])));
    return {_mm256_permutevar8x32_epi32(both, _mm256_setr_epi32(0, 0, 0, 0, 2, 2, 2, 2)),
            _mm256_permutevar8x32_epi32(both, _mm256_setr_epi32(1, 1, 1, 1, 3, 3, 3, 3))};
  } else if constexpr (kFourGroupsWidth<kFeed> != 0) {
    // Groups 0-3 of the vector in each 128-bit lane: (x0, x1) of every group, then (x2, x3), as
    // grouped_widening wrote them. (vbroadcastf128 from memory: with a 16-byte load then a
    // broadcast GCC 12 hoisted the loads of all the rows and kept them on the stack.)
    const __m256 first = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(row + at[0]));
    const __m256 second = _mm256_broadcast_ps(reinterpret_cast<const __m128*>(row + at[0] + 16));
    return {_mm256_castps_si256(first), _mm256_castps_si256(second)};
  } else {
    return Widened::input(row + at[0]);
  }
}

// four_groups, four_groups_of_8: half h holds outputs 2h and 2h + 1 of the vector's 4 outputs of
// groups 0-3, lane 4o' + g of the half output 2h + o' of group g; output o of group g is stored
// at out[kWidth·g + o].
template <int kWidth>
inline void store_four_groups(__m256i low, __m256i high, std::int32_t* out) {
  const __m256i blend_mask = _mm256_setr_epi32(0, 0, -1, -1, 0, 0, -1, -1);
  for (int half = 0; half < 2; ++half) {
    const int g = 2 * half;  // groups g and g + 1: lanes g, g + 4 and g + 1, g + 5 of each half
    const __m256i from_low =
        _mm256_permutevar8x32_epi32(low, _mm256_setr_epi32(g, g + 4, 0, 0, g + 1, g + 5, 0, 0));
    const __m256i from_high =
        _mm256_permutevar8x32_epi32(high, _mm256_setr_epi32(0, 0, g, g + 4, 0, 0, g + 1, g + 5));
    const __m256i both = _mm256_blendv_epi8(from_low, from_high, blend_mask);
    if constexpr (kWidth == 4) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8 * half), both);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kWidth * g), _mm256_castsi256_si128(both));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + kWidth * (g + 1)),
                       _mm256_extracti128_si256(both, 1));
    }
  }
}

// Rows [first, first + kRows) x the 16 lanes of vector j.
template <int kRows, bool kWindowSums, Feed kFeed>
void grouped_rows(const GroupedTile& g, int first, int j) {
  const GemmTile& t = g.gemm;
  // Where both halves of a vector read the same input, one window sum serves both.
  constexpr int kWidth = kFourGroupsWidth<kFeed>;
  constexpr bool kShared = kWidth != 0 || kFeed == Feed::whole_vector;
  constexpr int kSumHalves = kShared ? 1 : 2;
  // Widened bytes from one K step of a row to the next.
  constexpr int kStepBytes = kWidth != 0 ? 32 : 8;
  std::int64_t at[2][2];  // per half: widened bytes of its groups' first dwords (see half_input)
  __m256i start[2];
  for (int h = 0; h < 2; ++h) {
    const int lane = 16 * j + 8 * h;
    at[h][0] = 8 * std::int64_t{g.lane_dwords[lane]};
    at[h][1] = 8 * std::int64_t{g.lane_dwords[lane + 4]};
    start[h] = x64_ymm::constant_term(t, lane);
  }
  // Groups 4q..4q+3 of the panel, q = j / (kWidth / 4): their blocks of widened bytes.
  if constexpr (kWidth != 0) at[0][0] = 8 * kWidth * std::int64_t{j / (kWidth / 4)};
  __m256i acc[kRows][2], sums[kRows][kSumHalves];
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
    for (int h = 0; h < 2; ++h) acc[i][h] = start[h];
    if constexpr (kWindowSums) {
      for (int h = 0; h < kSumHalves; ++h) sums[i][h] = _mm256_setzero_si256();
    }
  }
  const Widened::Weights ones{_mm256_set1_epi16(1), _mm256_set1_epi16(1)};
  constexpr int kHalf = 64;  // widened bytes of 8 lanes of a step
  const std::int64_t step_bytes = std::int64_t{t.vectors} * 128;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    const std::int64_t origin = t.first_row + t.tap_offsets[tap];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      row[i] = t.input + 2 * (origin + x64_ymm::row_offset(t, first + i));
    }
    const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes + j * 2 * kHalf;
    for (std::int32_t k = 0; k < t.steps; ++k) {
      const Widened::Weights w0 = Widened::weights(w);
      const Widened::Weights w1 = Widened::weights(w + kHalf);
#pragma GCC unroll 4
      for (int i = 0; i < kRows; ++i) {
        const std::uint8_t* x_at = row[i] + kStepBytes * k;
        if constexpr (kShared) {
          const Widened::Input x = half_input<kFeed>(x_at, at[0]);
          acc[i][0] = Widened::add(acc[i][0], x, w0);
          acc[i][1] = Widened::add(acc[i][1], x, w1);
          if constexpr (kWindowSums) sums[i][0] = Widened::add(sums[i][0], x, ones);
        } else {
          const Widened::Input x0 = half_input<kFeed>(x_at, at[0]);
          acc[i][0] = Widened::add(acc[i][0], x0, w0);
          if constexpr (kWindowSums) sums[i][0] = Widened::add(sums[i][0], x0, ones);
          const Widened::Input x1 = half_input<kFeed>(x_at, at[1]);
          acc[i][1] = Widened::add(acc[i][1], x1, w1);
          if constexpr (kWindowSums) sums[i][1] = Widened::add(sums[i][1], x1, ones);
        }
      }
      w += step_bytes;
    }
  }
  __m256i zw[2];
  for (int h = 0; h < 2; ++h) {
    zw[h] =
        kWindowSums
            ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.zero_points + 16 * j + 8 * h))
            : _mm256_setzero_si256();
  }
#pragma GCC unroll 4
  for (int i = 0; i < kRows; ++i) {
    __m256i sum[2];
    for (int h = 0; h < 2; ++h) {
      sum[h] = acc[i][h];
      if constexpr (kWindowSums) {
        sum[h] = _mm256_sub_epi32(sum[h], _mm256_mullo_epi32(zw[h], sums[i][h % kSumHalves]));
      }
    }
    std::int32_t* out = t.acc + (first + i) * 64;
    if constexpr (kWidth != 0) {
      // Vector j: outputs 4·r..4·r + 3 of groups 4q..4q+3, q = j / (kWidth / 4), r = j % it.
      constexpr int kVectorsPerQuad = kWidth / 4;
      const int q = j / kVectorsPerQuad, r = j % kVectorsPerQuad;
      store_four_groups<kWidth>(sum[0], sum[1], out + 4 * kWidth * q + 4 * r);
    } else {
      out += 16 * j;
      _mm256_store_si256(reinterpret_cast<__m256i*>(out), sum[0]);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 8), sum[1]);
    }
  }
}

template <int kRows, bool kWindowSums, Feed kFeed>
void grouped_vectors(const GroupedTile& g) {
  constexpr int kPass = kWindowSums ? kRowsPerPassWithSums : kRowsPerPass;
  constexpr int kFull = kRows / kPass, kLast = kRows % kPass;
  for (int j = 0; j < g.gemm.vectors; ++j) {
    for (int c = 0; c < kFull; ++c) grouped_rows<kPass, kWindowSums, kFeed>(g, c * kPass, j);
    if constexpr (kLast != 0) grouped_rows<kLast, kWindowSums, kFeed>(g, kFull * kPass, j);
  }
}

// gathered: 4 output channels per group when lane 4 of a half is in another group than lane 0,
// 16 or more when lane 8 (the second half) is in the same group.
template <int kRows, bool kWindowSums>
void gathered_tile(const GroupedTile& g) {
  if (g.lane_dwords[4] != g.lane_dwords[0]) {
    grouped_vectors<kRows, kWindowSums, Feed::two_groups>(g);
  } else if (g.lane_dwords[8] == g.lane_dwords[0]) {
    grouped_vectors<kRows, kWindowSums, Feed::whole_vector>(g);
  } else {
    grouped_vectors<kRows, kWindowSums, Feed::one_group>(g);
  }
}

template <bool kWindowSums, Feed kFeed>
gemm::GroupedTileKernel grouped_tile_of_feed(int rows) {
  switch (rows) {
    case 1: return &grouped_vectors<1, kWindowSums, kFeed>;
    case 2: return &grouped_vectors<2, kWindowSums, kFeed>;
    case 3: return &grouped_vectors<3, kWindowSums, kFeed>;
    default: return &grouped_vectors<4, kWindowSums, kFeed>;
  }
}

template <bool kWindowSums>
gemm::GroupedTileKernel grouped_tile_of_rows(int rows, gemm::GroupedLanes lanes) {
  if (lanes == gemm::GroupedLanes::four_groups) {
    return grouped_tile_of_feed<kWindowSums, Feed::four_groups>(rows);
  }
  if (lanes == gemm::GroupedLanes::four_groups_of_8) {
    return grouped_tile_of_feed<kWindowSums, Feed::four_groups_of_8>(rows);
  }
  switch (rows) {
    case 1: return &gathered_tile<1, kWindowSums>;
    case 2: return &gathered_tile<2, kWindowSums>;
    case 3: return &gathered_tile<3, kWindowSums>;
    default: return &gathered_tile<4, kWindowSums>;
  }
}

}  // namespace

// GroupedLanes::four_groups: each 16 bytes (4 groups of 4) as their (x0, x1) pairs, then (x2, x3).
void widen_four_groups_of_4(const std::uint8_t* in, std::int64_t bytes, std::uint16_t* out) {
  const __m128i pairs_first = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  std::int64_t i = 0;
  for (; i + 16 <= bytes; i += 16) {
    const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_cvtepu8_epi16(_mm_shuffle_epi8(x, pairs_first)));
  }
  for (; i < bytes; ++i) out[i] = in[i];  // not a whole block: no group of the tiles
}

// GroupedLanes::four_groups_of_8: each 32 bytes (4 groups of 8) as two K steps of 4 channels, each
// the 4 groups' (x0, x1) pairs, then their (x2, x3).
void widen_four_groups_of_8(const std::uint8_t* in, std::int64_t bytes, std::uint16_t* out) {
  // Within 2 groups: pair p of both groups side by side, p = 0..3.
  const __m128i pairs_side_by_side =
      _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15);
  std::int64_t i = 0;
  for (; i + 32 <= bytes; i += 32) {
    const __m128i first = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i)), pairs_side_by_side);
    const __m128i second = _mm_shuffle_epi8(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i + 16)), pairs_side_by_side);
    // Pairs 0 and 1 of groups 0-3, then pairs 2 and 3.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i),
                        _mm256_cvtepu8_epi16(_mm_unpacklo_epi32(first, second)));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i + 16),
                        _mm256_cvtepu8_epi16(_mm_unpackhi_epi32(first, second)));
  }
  for (; i < bytes; ++i) out[i] = in[i];  // not a whole block: no group of the tiles
}

gemm::WidenBytes grouped_widening(gemm::GroupedLanes lanes) {
  switch (lanes) {
    case gemm::GroupedLanes::four_groups: return &widen_four_groups_of_4;
    case gemm::GroupedLanes::four_groups_of_8: return &widen_four_groups_of_8;
    default: return nullptr;
  }
}

gemm::GroupedTileKernel grouped_tile_kernel(int rows, int /*vectors*/, bool window_sums,
                                            gemm::GroupedLanes lanes) {
  if (rows > kMaxRows ||
      (lanes != gemm::GroupedLanes::gathered && lanes != gemm::GroupedLanes::four_groups &&
       lanes != gemm::GroupedLanes::four_groups_of_8)) {
    return nullptr;
  }
  return window_sums ? grouped_tile_of_rows<true>(rows, lanes)
                     : grouped_tile_of_rows<false>(rows, lanes);
}

}  // namespace qconv::detail::avx2
