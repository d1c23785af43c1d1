// SPDX-License-Identifier: Apache-2.0
// The tiles of the depthwise kernels that interleave their input columns in registers, tile by
// tile, instead of reading a column buffer: full blocks of 64 lanes (depthwise_fused_kernels.cpp),
// and blocks of 32 channels run as 64 lanes over two stretches of the output row side by side
// (depthwise_stacked_kernels.cpp). The accumulation order and output stage are those of
// depthwise_tiles.hpp. Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni::depthwise {

// Stride kStep (1 or 2), kColumns kernel columns and kGroups groups of 4 rows (3 and 1, or 5 and
// 2 for 5x5), a block of 64 lanes of a u8 input, the columns never written to a buffer
// (DepthwiseOutputs::source): a tile interleaves the kStep·(kTile − 1) + kColumns input columns of
// each group it reads in registers and feeds each straight to its vpdpbusd. At stride 2 every
// pixel has two columns of its own; built into a buffer, their stores and the loads back cost more
// than the unpacks and the tile's vpdpbusd together (a 32-lane block took 1.6x the time per
// channel of a fused 64-lane one through the buffer: MobileNetV2's b2.dw, 96 channels). At stride
// 1 a tile of 4 pixels unpacks 6 columns where the buffer built 4 once for both rows of a pair,
// yet here the unpacks (4 a cycle on Zen 5, where vpdpbusd and the stage's converts and
// multiplies issue 2) overlap the vpdpbusd and the output stage, where the buffer's build, its
// stores and the kernel's loads back ran before the kernel: MobileNetV2's 14x14 and 7x7 layers
// 10-13 % faster.
// kParts: each kernel column's w − zw in that many s8 parts, one vpdpbusd each.
// kStreams 2: a full block of 32 channels (depthwise_stacked_kernel) whose output row is cut into
// two stretches of ceil(pixels / 2) pixels, run side by side as the 64 lanes of one block: each
// row's input vector holds the first stretch's column in its low 32 bytes and the second's in its
// high 32, so the unpacks, the vpdpbusd, the output stage and the packs are the 64-lane block's,
// and its weights and stage constants are the block's channels twice in that block's lane order.
// On its own a 32-lane block took 256-bit unpacks, a vpermd per row and a vpermd per pixel's
// store besides (MobileNetV2's b2.dw, 96 channels: 53.6 -> 50.1 us on an AMD Zen 4). Not at
// stride 1, where the buffer's columns serve both rows of a pair and were faster (b1.dw, 32
// channels: 55.8 against 63.8 us); nor for 16 channels as four stretches, whose three inserts per
// row cost what FusedVector's own shuffles do (b4.dw, 144 channels: 20.9 against 22.3 us).
template <SchemeKind K, bool kSaturatedLow, bool kSaturatedHigh, int kParts, int kStep,
          int kColumns = 3, int kGroups = 1, int kStreams = 1>
struct FusedTiles {
  static_assert(kStreams == 1 || kStreams == 2);
  static constexpr int kVectors = 4;
  static constexpr std::int64_t kTapBytes = 64 * kVectors;  // a tap's weights: [lanes][4 rows]
  // A group's weights: [tap][lanes][4 rows].
  static constexpr std::int64_t kGroupBytes = kTapBytes * kColumns * kParts;
  // Its start and output stage.
  BlockTiles<K, Written::bytes, kSaturatedLow, kSaturatedHigh, kColumns, kParts, kStep> block;
  const std::uint8_t* row[4 * kGroups];  // input column 0 of each slot, or null: the zero point
  __m512i fill;
  std::int64_t pixel_bytes, first_column, in_width;
  std::int32_t stretch;        // the pixels the tiles walk (kStreams 2: DepthwiseOutputs::stretch)
  std::int64_t stretch_bytes;  // between the input columns of the two stretches' pixels

  explicit FusedTiles(const DepthwiseOutputs& o)
      : block(o),
        fill(_mm512_set1_epi8(static_cast<char>(o.source->zero_point))),
        pixel_bytes(o.source->pixel_bytes),
        first_column(o.source->first_column),
        in_width(o.source->in_width),
        stretch(kStreams == 1 ? o.pixels : o.stretch),
        stretch_bytes(kStep * static_cast<std::int64_t>(stretch) * pixel_bytes) {
    for (int i = 0; i < 4 * kGroups; ++i) row[i] = o.source->rows[i];
  }

  // The pixels the tiles walk: each stretch's.
  std::int32_t pixels() const { return stretch; }

  // Input column `column` of group g's 4 rows interleaved: q[v] is the column's vector v in the
  // buffer.
  [[gnu::always_inline]] void interleave(int g, std::int64_t column, __m512i (&q)[kVectors]) const {
    const bool inside = column >= 0 && column < in_width;
    const std::uint8_t* const* rows = row + 4 * g;
    const auto load = [&](int i) {
      return inside && rows[i] != nullptr ? _mm512_loadu_si512(rows[i] + column * pixel_bytes)
                                          : fill;
    };
    interleave_rows(load(0), load(1), load(2), load(3), q);
  }

  // The same for two stretches: the first's input column `column` in the low 32 bytes of each
  // row's vector, the second's (kStep·stretch columns on) in the high 32. kEdges: either may lie
  // outside the input (the zero point there); else neither does and nothing is checked.
  template <bool kEdges>
  [[gnu::always_inline]] void interleave_stretches(int g, std::int64_t column,
                                                   __m512i (&q)[kVectors]) const {
    const std::int64_t second = column + kStep * static_cast<std::int64_t>(stretch);
    const bool low = !kEdges || (column >= 0 && column < in_width);
    const bool high = !kEdges || (second >= 0 && second < in_width);
    const std::int64_t offset = column * pixel_bytes;
    const std::uint8_t* const* rows = row + 4 * g;
    const __m256i none = _mm512_castsi512_si256(fill);
    const auto load = [&](int i) {
      if (rows[i] == nullptr) return fill;
      const std::uint8_t* at = rows[i] + offset;
      const __m256i a = low ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at)) : none;
      const __m256i b =
          high ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at + stretch_bytes)) : none;
      return _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    };
    interleave_rows(load(0), load(1), load(2), load(3), q);
  }

  // Two stretches: whether a tile's columns all lie inside the input in both (the first's first
  // column and the second's last).
  template <int kTile>
  [[gnu::always_inline]] bool all_inside(std::int32_t first) const {
    const std::int64_t begin = first_column + kStep * static_cast<std::int64_t>(first);
    const std::int64_t end =
        begin + kStep * static_cast<std::int64_t>(stretch) + kStep * (kTile - 1) + kColumns;
    return begin >= 0 && end <= in_width;
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    if constexpr (kStreams == 1) {
      run_tile<kTile, true>(first, valid);
    } else if (all_inside<kTile>(first)) {
      run_tile<kTile, false>(first, valid);
    } else {
      run_tile<kTile, true>(first, valid);
    }
  }

  template <int kTile, bool kEdges>
  [[gnu::always_inline]] void run_tile(std::int32_t first, std::int32_t valid) const {
    __m512i acc[kVectors][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
#pragma GCC unroll 8
      for (int p = 0; p < kTile; ++p) acc[v][p] = block.start[v];
    }
    for (int g = 0; g < kGroups; ++g) {
      // Weights [group][tap][lanes][4]: part k of kernel column s is tap kParts·s + k, its vector
      // v at kTapBytes·tap + 64·v.
      const std::int8_t* w = block.o.weights + kGroupBytes * g;
      // Column t of the tile feeds pixel p at kernel column s = t − kStep·p.
#pragma GCC unroll 16
      for (int t = 0; t < kStep * (kTile - 1) + kColumns; ++t) {
        __m512i q[kVectors];
        if constexpr (kStreams == 1) {
          interleave(g, first_column + kStep * static_cast<std::int64_t>(first) + t, q);
        } else {
          interleave_stretches<kEdges>(
              g, first_column + kStep * static_cast<std::int64_t>(first) + t, q);
        }
        // 5 columns at stride 2: the weights read where they are used (memory operands). Left to
        // itself GCC keeps a group's 20 weight vectors in registers and spills accumulators
        // (100-200 stores a tile loop, against 2-4 so): 256 at 56x56 82.4 -> 75.6 us on an AMD
        // Zen 4. At stride 1, where each weight feeds more of a tile's pixels, the spilling
        // version measured faster (128 at 56x56 107.5 against 127.8 us; the buffer 134): kept.
        const std::int8_t* wt = w;
        if constexpr (kColumns > 3 && kStep == 2) asm("" : "+r"(wt));
#pragma GCC unroll 5
        for (int s = 0; s < kColumns; ++s) {
          if (t < s || (t - s) % kStep != 0 || (t - s) / kStep >= kTile) continue;
          const int p = (t - s) / kStep;
#pragma GCC unroll 4
          for (int v = 0; v < kVectors; ++v) {
#pragma GCC unroll 2
            for (int k = 0; k < kParts; ++k) {
              const std::int8_t* at = wt + kTapBytes * (kParts * s + k) + 64 * v;
              acc[v][p] = _mm512_dpbusd_epi32(acc[v][p], q[v], _mm512_load_si512(at));
            }
          }
        }
      }
    }
    __m512i r[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) block.template finish_vector<kTile>(v, acc[v], r);
    block.template store<kTile>(r, first, valid);
  }
};

// A run of pixels in tiles of 4 (for 32 lanes at stride 2, 6 or 8 measured no faster), with the
// shortcuts the output's bounds allow.
template <SchemeKind K, int kParts, int kStep, int kColumns = 3, int kGroups = 1, int kStreams = 1>
void run_fused(const DepthwiseOutputs& o) {
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0).
  const StageView& s = *o.stage;
  if constexpr (kEveryKernelVariant) {
    if (s.zero_point >= 0 && s.lo == (o.signed_output ? -128 : 0)) {
      if constexpr (K == SchemeKind::fbgemm) {
        if (o.saturated_high) {
          return run_tiles<4,
                           FusedTiles<K, true, true, kParts, kStep, kColumns, kGroups, kStreams>>(
              o);
        }
      }
      return run_tiles<4, FusedTiles<K, true, false, kParts, kStep, kColumns, kGroups, kStreams>>(
          o);
    }
  }
  run_tiles<4, FusedTiles<K, false, false, kParts, kStep, kColumns, kGroups, kStreams>>(o);
}

}  // namespace qconv::detail::avx512_vnni::depthwise
