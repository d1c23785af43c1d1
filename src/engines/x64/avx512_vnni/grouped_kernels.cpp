// SPDX-License-Identifier: Apache-2.0
// Grouped-convolution tiles: one 64-lane panel holds several small groups side by side, so the
// lanes stay full however few channels a group has, and a tile's fixed costs (its setup, the
// output stage) spread over 64 channels. A plain GEMM tile broadcasts the same 4 input bytes to
// every lane; here each lane needs bytes of its own group, which it gets in one of four ways
// (gemm::GroupedLanes): a vpermd of the row's channels, or, for the common group widths, a
// broadcast straight from memory (no shuffle per multiply). Built with AVX-512 flags: see
// kernels.hpp.
// GCC 12 warns falsely about the undefined upper lanes its own headers use (_mm_undefined_si128).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include <cstring>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using gemm::GroupedLanes;

template <typename T>
inline T load(const std::uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// four_groups: lane l holds channel (l % 4)·4 + l / 4 of its vector; this index puts channel m at
// lane m (a 4 x 4 transpose).
inline __m512i channel_order_of_four_groups() {
  return _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
}

// −zx·Σ(w' − zw') of 16 channels, or 0.
inline __m512i constant_term(const GemmTile& t, int at) {
  if (t.zero_point_sums == nullptr) return _mm512_setzero_si512();
  return _mm512_sub_epi32(_mm512_setzero_si512(),
                          _mm512_mullo_epi32(_mm512_set1_epi32(t.input_zero_point),
                                             _mm512_loadu_si512(t.zero_point_sums + at)));
}

// Rows [first, first + kRows) of the tile. With kWindowSums, each lane also sums the input bytes it
// multiplied (its own group's window) and takes zw'·Σx off its sum at the end. kPairs (one_group
// with 32 output channels per group): vectors 2j and 2j + 1 are one group, fed by one broadcast;
// a broadcast per vector would make the loads, not the multiplies, the bound. kPairs of
// two_groups (22 to 31 channels a group, two to a panel): vectors 2j and 2j + 1 start in one
// group, and only the odd ones reach into the next pair's.
// The sums, in acc (in the tile's lane order), are left in registers: grouped_rows stores them,
// two_groups_output_rows takes them through the output stage.
template <int kRows, int kVectors, bool kWindowSums, GroupedLanes kLanes, bool kPairs>
[[gnu::always_inline]] inline void grouped_sums(const GroupedTile& g, int first,
                                                __m512i (&acc)[kRows][kVectors]) {
  static_assert(!kPairs || (kLanes == GroupedLanes::one_group && kVectors % 2 == 0) ||
                (kLanes == GroupedLanes::two_groups && kVectors >= 2));
  static_assert(!kWindowSums || kLanes != GroupedLanes::two_groups);
  const GemmTile& t = g.gemm;
  __m512i lanes[kVectors], sums[kRows][kVectors];
  // one_group, two_groups: the first byte of each vector's (first) group.
  std::int32_t group_byte[kVectors];
  // two_groups: the lanes of vector j in the next vector's first group.
  __mmask16 second[kVectors];
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    if constexpr (kLanes == GroupedLanes::gathered) {
      lanes[j] = _mm512_loadu_si512(g.lane_dwords + 16 * j);
    } else if constexpr (kLanes == GroupedLanes::one_group || kLanes == GroupedLanes::two_groups) {
      group_byte[j] = 4 * g.lane_dwords[16 * j];
    }
    if constexpr (kLanes == GroupedLanes::two_groups) {
      // The last vector's lanes past the panel's groups (only those can differ) keep its first.
      second[j] = j + 1 < kVectors
                      ? _mm512_cmpneq_epi32_mask(_mm512_loadu_si512(g.lane_dwords + 16 * j),
                                                 _mm512_set1_epi32(g.lane_dwords[16 * j]))
                      : __mmask16{0};
    }
    const __m512i start = constant_term(t, 16 * j);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      acc[i][j] = start;
      if constexpr (kWindowSums) sums[i][j] = _mm512_setzero_si512();
    }
  }
  const __m512i ones = _mm512_set1_epi8(1);
  const std::int64_t step_bytes = std::int64_t{kVectors} * 64;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    tap_rows(t, tap, first, row);
    const std::int8_t* w = t.weights + t.tap_steps[tap] * step_bytes;
    for (std::int32_t k = 0; k < t.steps; ++k) {
      __m512i wv[kVectors];
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) wv[j] = _mm512_load_si512(w + j * 64);
      // gathered: step k reads bytes 4k .. span of the panel's channels, lane l's dword
      // lane_dwords[l] past byte 4k. Masked: nothing past the panel's channels (or the tensor).
      const std::int32_t left = g.span - 4 * k;
      const __mmask64 mask = left >= 64 ? ~__mmask64{0} : (~std::uint64_t{0}) >> (64 - left);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        __m512i x = _mm512_setzero_si512();
        if constexpr (kLanes == GroupedLanes::gathered) {
          x = _mm512_maskz_loadu_epi8(mask, row[i] + 4 * k);
        }
        // two_groups: each vector's first group's dword (kPairs: each pair's), in registers
        // (left to itself GCC reloads them as masked broadcasts in place of the blends).
        __m512i firsts[kVectors];
        if constexpr (kLanes == GroupedLanes::two_groups) {
#pragma GCC unroll 4
          for (int j = 0; j < kVectors; j += kPairs ? 2 : 1) {
            firsts[j] = _mm512_set1_epi32(load<std::int32_t>(row[i] + group_byte[j] + 4 * k));
            asm("" : "+v"(firsts[j]));
          }
        }
        __m512i mine = _mm512_setzero_si512();
#pragma GCC unroll 4
        for (int j = 0; j < kVectors; ++j) {
          if constexpr (kLanes == GroupedLanes::two_groups) {
            const int own = kPairs ? j - j % 2 : j, next = kPairs ? j + 2 - j % 2 : j + 1;
            if (kPairs && j % 2 == 0) {
              mine = firsts[own];
            } else {
              mine = next < kVectors ? _mm512_mask_blend_epi32(second[j], firsts[own], firsts[next])
                                     : firsts[own];
            }
          } else if constexpr (kLanes == GroupedLanes::gathered) {
            mine = _mm512_permutexvar_epi32(lanes[j], x);
          } else if constexpr (kLanes == GroupedLanes::one_group) {
            if (!kPairs || j % 2 == 0) {
              mine = _mm512_set1_epi32(load<std::int32_t>(row[i] + group_byte[j] + 4 * k));
            }
          } else {  // four_groups: groups 4j..4j+3
            mine = _mm512_broadcast_i32x4(
                _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[i] + 16 * j + 4 * k)));
          }
          acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], mine, wv[j]);
          if constexpr (kWindowSums) sums[i][j] = _mm512_dpbusd_epi32(sums[i][j], mine, ones);
        }
      }
      w += step_bytes;
    }
  }

  if constexpr (kWindowSums) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) {
      const __m512i zw = _mm512_loadu_si512(g.zero_points + 16 * j);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        acc[i][j] = _mm512_sub_epi32(acc[i][j], _mm512_mullo_epi32(zw, sums[i][j]));
      }
    }
  }
}

template <int kRows, int kVectors, bool kWindowSums, GroupedLanes kLanes, bool kPairs>
void grouped_rows(const GroupedTile& g, int first) {
  __m512i acc[kRows][kVectors];
  grouped_sums<kRows, kVectors, kWindowSums, kLanes, kPairs>(g, first, acc);
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      __m512i sum = acc[i][j];
      if constexpr (kLanes == GroupedLanes::four_groups) {
        sum = _mm512_permutexvar_epi32(channel_order_of_four_groups(), sum);
      }
      _mm512_store_si512(g.gemm.acc + (first + i) * 64 + j * 16, sum);
    }
  }
}

// Rows at most kChunk at a time, so that accumulators, lane indices and weights stay in the 32
// registers (4 vectors through vpermd: 3 rows x 4 = 12 accumulators, or 2 rows with window sums;
// broadcasts need no lane indices: 6 rows x 4, or 3 rows with window sums).
template <int kRows, int kVectors, bool kWindowSums, GroupedLanes kLanes, bool kPairs = false>
void grouped_chunks(const GroupedTile& g) {
  // (GCC 12 spills an accumulator of the 16-byte broadcast form at 4 rows or more: 3 there.)
  // (two_groups at 4 vectors, 6 rows against 5: 160 -> 160 in 8 groups at 28x28 135 against
  // 160 us on an AMD Zen 4, no spills.)
  constexpr bool kBroadcasts =
      kLanes == GroupedLanes::one_group || kLanes == GroupedLanes::two_groups;
  constexpr int kWide = kLanes == GroupedLanes::gathered ? (kWindowSums ? 2 : 3)
                        : kBroadcasts                    ? (kWindowSums ? 3 : 6)
                                                         : (kWindowSums ? 2 : 3);
  constexpr int kChunk = kVectors <= 2 ? (kWindowSums ? 3 : 6) : kWide;
  constexpr int kChunks = (kRows + kChunk - 1) / kChunk;
  constexpr int kLast = kRows - (kChunks - 1) * kChunk;
  for (int c = 0; c + 1 < kChunks; ++c) {
    grouped_rows<kChunk, kVectors, kWindowSums, kLanes, kPairs>(g, c * kChunk);
  }
  grouped_rows<kLast, kVectors, kWindowSums, kLanes, kPairs>(g, (kChunks - 1) * kChunk);
}

// two_groups: whether vectors 2j and 2j + 1 start in one group and the even ones hold no other
// (lanes past the last vector aside).
inline bool two_groups_in_pairs(const GroupedTile& g, int vectors) {
  for (int j = 0; j < vectors; j += 2) {
    if (j + 1 < vectors && g.lane_dwords[16 * j + 16] != g.lane_dwords[16 * j]) return false;
    if (j + 1 < vectors && g.lane_dwords[16 * j + 15] != g.lane_dwords[16 * j]) return false;
  }
  return true;
}

template <int kRows, int kVectors, bool kWindowSums, GroupedLanes kLanes>
void grouped_tile(const GroupedTile& g) {
  // one_group: the vectors' first dwords tell whether vectors 0 and 1 share a group (a panel's
  // groups are all as wide).
  if constexpr (kLanes == GroupedLanes::one_group && kVectors % 2 == 0) {
    if (g.lane_dwords[16] == g.lane_dwords[0]) {
      return grouped_chunks<kRows, kVectors, kWindowSums, kLanes, true>(g);
    }
  }
  if constexpr (kLanes == GroupedLanes::two_groups && kVectors >= 2) {
    if (two_groups_in_pairs(g, kVectors)) {
      return grouped_chunks<kRows, kVectors, kWindowSums, kLanes, true>(g);
    }
  }
  grouped_chunks<kRows, kVectors, kWindowSums, kLanes>(g);
}

// GroupedLanes::in_lane_groups with kWidth (4, 8 or 16) channels per group: in each 128-bit lane,
// 16 / kWidth groups of kWidth / 4 lanes each. Lane r of a 128-bit lane reads, at K step s, this
// dword of its 128-bit lane: its group's dword s.
template <int kWidth>
constexpr int in_lane_dword(int r, int step) {
  return r / (kWidth / 4) * (kWidth / 4) + step;
}

template <int kWidth, int kStep>
constexpr int in_lane_shuffle() {
  return in_lane_dword<kWidth>(0, kStep) | in_lane_dword<kWidth>(1, kStep) << 2 |
         in_lane_dword<kWidth>(2, kStep) << 4 | in_lane_dword<kWidth>(3, kStep) << 6;
}

// After the 128-bit transpose of in_lane_rows, vector J's lane 4j + r holds vector j's lane
// 4J + r: output m = j·(kWidth / 4) + r % (kWidth / 4) of the group r / (kWidth / 4) of those
// 16 channels. This index puts each at its channel's lane.
template <int kWidth>
inline __m512i in_lane_channel_order() {
  constexpr int kPerGroup = kWidth / 4;
  alignas(64) std::int32_t order[16] = {};
  for (int j = 0; j < 4; ++j) {
    for (int r = 0; r < 4; ++r) {
      order[r / kPerGroup * kWidth + j * kPerGroup + r % kPerGroup] = 4 * j + r;
    }
  }
  return _mm512_load_si512(order);
}

// Each lane's dword for K step `step` (a constant once the caller's step loop is unrolled).
template <int kWidth>
[[gnu::always_inline]] inline __m512i in_lane_dwords(__m512i x, int step) {
  constexpr auto k0 = static_cast<_MM_PERM_ENUM>(in_lane_shuffle<kWidth, 0>());
  constexpr auto k1 = static_cast<_MM_PERM_ENUM>(in_lane_shuffle<kWidth, 1>());
  if constexpr (kWidth == 4) {
    return x;  // one step, each lane's own dword
  } else if constexpr (kWidth == 8) {
    return step == 0 ? _mm512_shuffle_epi32(x, k0) : _mm512_shuffle_epi32(x, k1);
  } else {
    constexpr auto k2 = static_cast<_MM_PERM_ENUM>(in_lane_shuffle<kWidth, 2>());
    constexpr auto k3 = static_cast<_MM_PERM_ENUM>(in_lane_shuffle<kWidth, 3>());
    switch (step) {
      case 0: return _mm512_shuffle_epi32(x, k0);
      case 1: return _mm512_shuffle_epi32(x, k1);
      case 2: return _mm512_shuffle_epi32(x, k2);
      default: return _mm512_shuffle_epi32(x, k3);
    }
  }
}

// The sums of rows [first, first + kRows) of an in_lane_groups tile (4 vectors), in lane order:
// K steps of one tap are the group's kWidth / 4 dwords, each an in-lane shuffle of the row's 64
// bytes. With kWindowSums one sum per row serves every vector: a lane's group is its 128-bit
// lane's, whatever the vector.
template <int kRows, int kWidth, bool kWindowSums>
[[gnu::always_inline]] inline void in_lane_sums(const GroupedTile& g, int first,
                                                __m512i (&acc)[kRows][4]) {
  const GemmTile& t = g.gemm;
  __m512i sums[kRows];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) {
    const __m512i start = constant_term(t, 16 * j);
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) acc[i][j] = start;
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) sums[i] = _mm512_setzero_si512();
  const __m512i ones = _mm512_set1_epi8(1);
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    tap_rows(t, tap, first, row);
    const std::int8_t* w = t.weights + t.tap_steps[tap] * 256;
#pragma GCC unroll 4
    for (int step = 0; step < kWidth / 4; ++step) {
      __m512i wv[4];
#pragma GCC unroll 4
      for (int j = 0; j < 4; ++j) wv[j] = _mm512_load_si512(w + step * 256 + j * 64);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        const __m512i x = in_lane_dwords<kWidth>(_mm512_loadu_si512(row[i]), step);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], x, wv[j]);
        if constexpr (kWindowSums) sums[i] = _mm512_dpbusd_epi32(sums[i], x, ones);
      }
    }
  }
  if constexpr (kWindowSums) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const __m512i zw = _mm512_loadu_si512(g.zero_points + 16 * j);
#pragma GCC unroll 8
      for (int i = 0; i < kRows; ++i) {
        acc[i][j] = _mm512_sub_epi32(acc[i][j], _mm512_mullo_epi32(zw, sums[i]));
      }
    }
  }
}

// Rows [first, first + kRows) of an in_lane_groups tile, their sums stored as they are;
// in_lane_to_channels puts them in channel order. (Transposing here, GCC 12 spills accumulators
// inside the tap loop.)
template <int kRows, int kWidth, bool kWindowSums>
void in_lane_rows(const GroupedTile& g, int first) {
  __m512i acc[kRows][4];
  in_lane_sums<kRows, kWidth, kWindowSums>(g, first, acc);
  std::int32_t* const out = g.gemm.acc + first * 64;
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) _mm512_store_si512(out + i * 64 + j * 16, acc[i][j]);
  }
}

// Rows of an in_lane_groups tile's sums back in channel order: a 4 x 4 transpose of 128-bit lanes
// (vector J gathers 128-bit lane J of each vector: one 128-bit lane's groups, 16 channels), then
// within each vector (in_lane_channel_order).
template <int kWidth>
void in_lane_to_channels(std::int32_t* acc, int rows) {
  const __m512i order = in_lane_channel_order<kWidth>();
  for (int i = 0; i < rows; ++i) {
    std::int32_t* row = acc + i * 64;
    const __m512i v0 = _mm512_load_si512(row), v1 = _mm512_load_si512(row + 16);
    const __m512i v2 = _mm512_load_si512(row + 32), v3 = _mm512_load_si512(row + 48);
    const __m512i a = _mm512_shuffle_i32x4(v0, v1, 0x44), b = _mm512_shuffle_i32x4(v0, v1, 0xEE);
    const __m512i c = _mm512_shuffle_i32x4(v2, v3, 0x44), d = _mm512_shuffle_i32x4(v2, v3, 0xEE);
    __m512i out[4] = {_mm512_shuffle_i32x4(a, c, 0x88), _mm512_shuffle_i32x4(a, c, 0xDD),
                      _mm512_shuffle_i32x4(b, d, 0x88), _mm512_shuffle_i32x4(b, d, 0xDD)};
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      if constexpr (kWidth != 16) out[j] = _mm512_permutexvar_epi32(order, out[j]);
      _mm512_store_si512(row + j * 16, out[j]);
    }
  }
}

// Chunks kC.. of kChunks over kRows rows, as even as possible (9 rows: 5 + 4, not 6 + 3: a chunk
// loads the weights per tap whatever its rows).
template <int kRows, int kWidth, bool kWindowSums, int kChunks, int kC = 0>
[[gnu::always_inline]] inline void in_lane_even_chunks(const GroupedTile& g) {
  if constexpr (kC < kChunks) {
    constexpr int kBase = kRows / kChunks, kExtra = kRows % kChunks;
    in_lane_rows<kBase + (kC < kExtra ? 1 : 0), kWidth, kWindowSums>(
        g, kC * kBase + (kC < kExtra ? kC : kExtra));
    in_lane_even_chunks<kRows, kWidth, kWindowSums, kChunks, kC + 1>(g);
  }
}

template <int kRows, int kWidth, bool kWindowSums>
void in_lane_chunks(const GroupedTile& g) {
  // Accumulators, weights and the rows' loads in the 32 registers: 6 rows x 4 vectors; 5 at 8 and
  // 16 channels per group (GCC keeps each row's load for the group's K steps: at 6 rows it spilled
  // accumulators in the tap loop); 3 with window sums (GCC 12 spills at 4).
  constexpr int kChunk = kWindowSums ? 3 : gemm::in_lane_chunk_rows(kWidth);
  in_lane_even_chunks<kRows, kWidth, kWindowSums, (kRows + kChunk - 1) / kChunk>(g);
  if (!g.lane_order) in_lane_to_channels<kWidth>(g.gemm.acc, kRows);
}

// The channel (of its 128-bit lane's 16) that in_lane_rows' vector j computes at lane 4L + r of
// 128-bit lane L: in_lane_channel_order's arrangement, read the other way.
template <int kWidth>
constexpr int in_lane_channel(int j, int r) {
  constexpr int kPerGroup = kWidth / 4;
  return r / kPerGroup * kWidth + j * kPerGroup + r % kPerGroup;
}

// The in-lane byte shuffle from a row's results packed to bytes in lane order (byte 4j + r of
// 128-bit lane L: vector j's lane 4L + r, row_stores::pack_bytes_in_lanes) to channel order.
template <int kWidth>
inline __m512i in_lane_byte_order() {
  alignas(64) std::int8_t order[64] = {};
  for (int lane = 0; lane < 4; ++lane) {
    for (int j = 0; j < 4; ++j) {
      for (int r = 0; r < 4; ++r) {
        order[16 * lane + in_lane_channel<kWidth>(j, r)] = static_cast<std::int8_t>(4 * j + r);
      }
    }
  }
  return _mm512_load_si512(order);
}

// The epilogue of an in-lane tile's sums in lane order (KernelSet::in_lane_epilogue): each row's
// four vectors through the stage of scheme K with the per-channel arrays in lane order
// (in_lane_stage), packed to bytes D, one vpshufb to channel order, one store of 64 channels.
// The stage and the tile are copied in: the byte stores may alias anything read through a pointer.
// kSaturatedLow, kSaturatedHigh: as epilogue_kernels.cpp's, the clamps the narrowing stands for.
template <int kWidth, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
void in_lane_epilogue(const TileOutput& tile, const StageView& lane_stage) {
  const StageView s = lane_stage;
  const TileOutput t = tile;
  constexpr bool kOnWords = row_stores::kZeroPointOnWords<K, D, 4>;
  const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(s.zero_point));
  const __m512i to_channels = in_lane_byte_order<kWidth>();
  stage_lanes::Lanes at[4];
#pragma GCC unroll 4
  for (int j = 0; j < 4; ++j) at[j] = stage_lanes::Lanes::load<K>(s, t.channel + 16 * j);
  auto* const out = static_cast<std::int8_t*>(t.output);
  for (std::int32_t i = 0; i < t.rows; ++i) {
    __m512i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      r[j] = stage_lanes::apply<K>(_mm512_load_si512(t.acc + i * 64 + j * 16), at[j], s,
                                   kSaturatedLow, !kOnWords, kSaturatedHigh);
    }
    const __m512i bytes = row_stores::pack_bytes_in_lanes<D, kOnWords>(r, zero_point_words);
    _mm512_storeu_si512(out + i * t.output_row_stride, _mm512_shuffle_epi8(bytes, to_channels));
  }
}

template <int kWidth, SchemeKind K, DType D>
void in_lane_epilogue_by_range(const TileOutput& t, const StageView& s) {
  row_stores::by_saturation<K, D>(s, t.saturated_high, [&]<bool kLow, bool kHigh>() {
    in_lane_epilogue<kWidth, K, D, kLow, kHigh>(t, s);
  });
}

// The group width is the tile's K steps per tap (its channels / 4).
template <int kRows, bool kWindowSums>
void in_lane_tile(const GroupedTile& g) {
  switch (g.gemm.steps) {
    case 1: return in_lane_chunks<kRows, 4, kWindowSums>(g);
    case 2: return in_lane_chunks<kRows, 8, kWindowSums>(g);
    default: return in_lane_chunks<kRows, 16, kWindowSums>(g);
  }
}

template <int kRows, bool kWindowSums, GroupedLanes kLanes>
GroupedTileKernel by_vectors(int vectors) {
  if constexpr (kLanes == GroupedLanes::in_lane_groups) {
    return vectors == 4 ? &in_lane_tile<kRows, kWindowSums> : nullptr;
  } else {
    switch (vectors) {
      case 1: return &grouped_tile<kRows, 1, kWindowSums, kLanes>;
      case 2: return &grouped_tile<kRows, 2, kWindowSums, kLanes>;
      case 3: return &grouped_tile<kRows, 3, kWindowSums, kLanes>;
      default: return &grouped_tile<kRows, 4, kWindowSums, kLanes>;
    }
  }
}

// Rows kRows.. up to kMaxRows; in lane order up to gemm::kMaxInLaneRows (null past them).
template <bool kWindowSums, GroupedLanes kLanes, int kRows = 1>
GroupedTileKernel by_rows(int rows, int vectors) {
  constexpr int kMost = kLanes == GroupedLanes::in_lane_groups ? gemm::kMaxInLaneRows : kMaxRows;
  if constexpr (kRows > kMost) {
    return nullptr;
  } else {
    if (rows == kRows) return by_vectors<kRows, kWindowSums, kLanes>(vectors);
    return by_rows<kWindowSums, kLanes, kRows + 1>(rows, vectors);
  }
}

template <GroupedLanes kLanes>
GroupedTileKernel by_sums(int rows, int vectors, bool window_sums) {
  return window_sums ? by_rows<true, kLanes>(rows, vectors) : by_rows<false, kLanes>(rows, vectors);
}

// Rows [first, first + kRows) of an in-lane tile through the output stage from the registers
// (in_lane_output_tile): the stage in lane order, the bytes put in channel order by one vpshufb per
// row, one store of 64 channels. Not inlined: each chunk's tap loop is allocated on its own.
template <int kRows, int kWidth, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
[[gnu::noinline]] void in_lane_output_rows(const GroupedTile& g, const TileOutput& tile,
                                           const StageView& lane_stage, int first) {
  __m512i acc[kRows][4];
  in_lane_sums<kRows, kWidth, false>(g, first, acc);
  row_stores::sums_leave_in_registers(acc);
  const StageView s = lane_stage;
  constexpr bool kOnWords = row_stores::kZeroPointOnWords<K, D, 4>;
  const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(s.zero_point));
  const __m512i to_channels = in_lane_byte_order<kWidth>();
  const std::int64_t channel = tile.channel, stride = tile.output_row_stride;
  auto* const out = static_cast<std::int8_t*>(tile.output) + first * stride;
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    __m512i r[4];
#pragma GCC unroll 4
    for (int j = 0; j < 4; ++j) {
      const stage_lanes::Lanes at = stage_lanes::Lanes::load<K>(s, channel + 16 * j);
      r[j] = stage_lanes::apply<K>(acc[i][j], at, s, kSaturatedLow, !kOnWords, kSaturatedHigh);
    }
    const __m512i bytes = row_stores::pack_bytes_in_lanes<D, kOnWords>(r, zero_point_words);
    _mm512_storeu_si512(out + i * stride, _mm512_shuffle_epi8(bytes, to_channels));
  }
}

// An in-lane tile of a full panel whose sums need no correction, through the output stage from
// the registers (KernelSet::in_lane_output_tile), in chunks of in_lane_chunks' rows; a last chunk
// short of them starts earlier, overlapping the one before (those rows are computed and stored
// twice, the same bytes). A tile of fewer rows than a chunk leaves its sums in `acc` in lane
// order for in_lane_epilogue.
template <int kWidth, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
void in_lane_output_tile(const GroupedTile& g, const TileOutput& t, const StageView& s) {
  constexpr int kChunk = gemm::in_lane_chunk_rows(kWidth);
  const int rows = t.rows;
  if (rows < kChunk) {
    by_rows<false, GroupedLanes::in_lane_groups>(rows, 4)(g);
    return in_lane_epilogue<kWidth, K, D, kSaturatedLow, kSaturatedHigh>(t, s);
  }
  for (int first = 0; first < rows; first += kChunk) {
    in_lane_output_rows<kChunk, kWidth, K, D, kSaturatedLow, kSaturatedHigh>(
        g, t, s, first + kChunk <= rows ? first : rows - kChunk);
  }
}

template <int kWidth, SchemeKind K, DType D>
void in_lane_output_by_range(const GroupedTile& g, const TileOutput& t, const StageView& s) {
  row_stores::by_saturation<K, D>(s, t.saturated_high, [&]<bool kLow, bool kHigh>() {
    in_lane_output_tile<kWidth, K, D, kLow, kHigh>(g, t, s);
  });
}

// Rows [first, first + kRows) of a tile of a full panel whose sums are in channel order, through
// the output stage from the registers (the stage's arrays as they are), one row's 48 or 64 bytes
// in one masked store: two_groups with kVectors 3 (kPairs: 22-24 channels a group, two to a
// panel) or 4 (17-21, three), one_group with 4 (kPairs: 32 channels a group, two to a panel). Not
// inlined: each tile's multiplies are allocated on their own.
template <GroupedLanes kLanes, int kRows, int kVectors, bool kPairs, SchemeKind K, DType D,
          bool kSaturatedLow, bool kSaturatedHigh>
[[gnu::noinline]] void channel_order_output_rows(const GroupedTile& g, const TileOutput& tile,
                                                 const StageView& stage, int first) {
  __m512i acc[kRows][kVectors];
  grouped_sums<kRows, kVectors, false, kLanes, kPairs>(g, first, acc);
  row_stores::stage_rows<kRows, kVectors, K, D, kSaturatedLow, kSaturatedHigh>(acc, tile, stage,
                                                                               first);
}

// A tile's rows through channel_order_output_rows in chunks of 6, a last chunk short of them
// starting earlier, overlapping the one before (those rows computed and stored twice, the same
// bytes); rows 6 or more.
template <GroupedLanes kLanes, int kVectors, bool kPairs, SchemeKind K, DType D, bool kSaturatedLow,
          bool kSaturatedHigh>
void channel_order_output_chunks(const GroupedTile& g, const TileOutput& t, const StageView& s) {
  constexpr int kChunk = 6;
  for (int first = 0; first < t.rows; first += kChunk) {
    channel_order_output_rows<kLanes, kChunk, kVectors, kPairs, K, D, kSaturatedLow,
                              kSaturatedHigh>(g, t, s,
                                              first + kChunk <= t.rows ? first : t.rows - kChunk);
  }
}

// A tile whose sums are in channel order through the output stage from the registers
// (KernelSet::grouped_output_tile): full panels of two_groups of 6 rows or more, and of one_group
// (32 channels a group) of 5 rows or more (the 5s and 6s of a 7x7 output's pixel tiles); any
// other tile (a last panel's fewer groups, fewer rows) stores its sums for the epilogue.
template <GroupedLanes kLanes, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
void channel_order_output_tile(const GroupedTile& g, const TileOutput& t, const StageView& s) {
  const int vectors = g.gemm.vectors;
  if constexpr (kLanes == GroupedLanes::two_groups) {
    const bool pairs = two_groups_in_pairs(g, vectors);
    if (t.rows >= 6 && vectors == 3 && pairs) {
      return channel_order_output_chunks<kLanes, 3, true, K, D, kSaturatedLow, kSaturatedHigh>(g, t,
                                                                                               s);
    }
    if (t.rows >= 6 && vectors == 4 && !pairs) {
      return channel_order_output_chunks<kLanes, 4, false, K, D, kSaturatedLow, kSaturatedHigh>(
          g, t, s);
    }
  } else if (vectors == 4 && g.lane_dwords[16] == g.lane_dwords[0]) {  // one_group: 2 groups
    if (t.rows >= 6) {
      return channel_order_output_chunks<kLanes, 4, true, K, D, kSaturatedLow, kSaturatedHigh>(g, t,
                                                                                               s);
    }
    if (t.rows == 5) {
      return channel_order_output_rows<kLanes, 5, 4, true, K, D, kSaturatedLow, kSaturatedHigh>(
          g, t, s, 0);
    }
  }
  static const EpilogueKernel epilogue = epilogue_kernel(K, D);  // looked up once
  by_rows<false, kLanes>(t.rows, vectors)(g);
  epilogue(t, s);
}

template <GroupedLanes kLanes, SchemeKind K, DType D>
void channel_order_output_by_range(const GroupedTile& g, const TileOutput& t, const StageView& s) {
  row_stores::by_saturation<K, D>(s, t.saturated_high, [&]<bool kLow, bool kHigh>() {
    channel_order_output_tile<kLanes, K, D, kLow, kHigh>(g, t, s);
  });
}

// make.template operator()<kWidth, K, D>() for a group width of 4, 8 or 16 channels and a
// (scheme, dtype) with a vector stage to bytes; null otherwise.
template <class Kernel, class Make>
Kernel by_width_and_stage(int width, SchemeKind scheme, DType output_dtype, const Make& make) {
  if (output_dtype == DType::s32) return nullptr;
  return stage_lanes::for_vector_stage<Kernel>(scheme, output_dtype,
                                               [&]<SchemeKind K, DType D>() -> Kernel {
                                                 switch (width) {
                                                   case 4:
                                                     return make.template operator()<4, K, D>();
                                                   case 8:
                                                     return make.template operator()<8, K, D>();
                                                   default:
                                                     return make.template operator()<16, K, D>();
                                                 }
                                               });
}

}  // namespace

EpilogueKernel in_lane_epilogue_kernel(int width, SchemeKind scheme, DType output_dtype) {
  return by_width_and_stage<EpilogueKernel>(
      width, scheme, output_dtype,
      []<int kWidth, SchemeKind K, DType D>() { return &in_lane_epilogue_by_range<kWidth, K, D>; });
}

InLaneOutputKernel in_lane_output_kernel(int width, SchemeKind scheme, DType output_dtype) {
  return by_width_and_stage<InLaneOutputKernel>(
      width, scheme, output_dtype,
      []<int kWidth, SchemeKind K, DType D>() { return &in_lane_output_by_range<kWidth, K, D>; });
}

InLaneOutputKernel grouped_output_kernel(GroupedLanes lanes, SchemeKind scheme,
                                         DType output_dtype) {
  if (output_dtype == DType::s32) return nullptr;
  if (lanes == GroupedLanes::two_groups) {
    return stage_lanes::for_vector_stage<InLaneOutputKernel>(
        scheme, output_dtype, []<SchemeKind K, DType D>() {
          return &channel_order_output_by_range<GroupedLanes::two_groups, K, D>;
        });
  }
  if (lanes == GroupedLanes::one_group) {
    return stage_lanes::for_vector_stage<InLaneOutputKernel>(
        scheme, output_dtype, []<SchemeKind K, DType D>() {
          return &channel_order_output_by_range<GroupedLanes::one_group, K, D>;
        });
  }
  return nullptr;
}

void in_lane_stage(int width, const StageView& in, std::int64_t channels, std::int32_t* storage,
                   StageView& out) {
  out = in;
  if (in.channel_step == 0) return;  // one set of constants for every channel
  const std::int64_t length = (channels + 63) / 64 * 64;
  const std::int64_t panels = channels / 64;  // only full panels run in lane order
  std::int32_t* to = storage;
  // Array `array` (int32 or float: copied as bits) in lane order: panel p's vector j, lane 4L + r
  // holds channel 64p + 16L + in_lane_channel(j, r).
  const auto permute = [&](const void* array) -> const std::int32_t* {
    if (array == nullptr) return nullptr;
    const auto* from = static_cast<const std::int32_t*>(array);
    for (std::int64_t p = 0; p < panels; ++p) {
      for (int lane = 0; lane < 4; ++lane) {
        for (int j = 0; j < 4; ++j) {
          for (int r = 0; r < 4; ++r) {
            const int channel = width == 4   ? in_lane_channel<4>(j, r)
                                : width == 8 ? in_lane_channel<8>(j, r)
                                             : in_lane_channel<16>(j, r);
            to[64 * p + 16 * j + 4 * lane + r] = from[64 * p + 16 * lane + channel];
          }
        }
      }
    }
    const std::int32_t* permuted = to;
    to += length;
    return permuted;
  };
  out.bias_s32 = permute(in.bias_s32);
  out.bias_f32 = reinterpret_cast<const float*>(permute(in.bias_f32));
  out.scale_f32 = reinterpret_cast<const float*>(permute(in.scale_f32));
  out.q31 = permute(in.q31);
  out.shift_left = permute(in.shift_left);
  out.shift_right = permute(in.shift_right);
  out.round_down = permute(in.round_down);
}

GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums, GroupedLanes lanes) {
  switch (lanes) {
    case GroupedLanes::one_group:
      return by_sums<GroupedLanes::one_group>(rows, vectors, window_sums);
    case GroupedLanes::four_groups:
      return by_sums<GroupedLanes::four_groups>(rows, vectors, window_sums);
    case GroupedLanes::in_lane_groups:
      return by_sums<GroupedLanes::in_lane_groups>(rows, vectors, window_sums);
    case GroupedLanes::two_groups:  // symmetric weights only: see gemm_engine.cpp
      return window_sums ? nullptr : by_rows<false, GroupedLanes::two_groups>(rows, vectors);
    case GroupedLanes::gathered: return by_sums<GroupedLanes::gathered>(rows, vectors, window_sums);
    default: return nullptr;
  }
}

}  // namespace qconv::detail::avx512_vnni
