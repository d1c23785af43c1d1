// SPDX-License-Identifier: Apache-2.0
// The fused depthwise tiles of full 64- and 32-lane blocks (depthwise_fused_kernels.cpp, and
// depthwise_fused_vbmi_kernels.cpp for 32-lane blocks interleaved by a VBMI byte permute): a
// tile's input columns interleaved in registers, never written to a buffer. Only for files built
// with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni::depthwise {

// Stride kStep (1 or 2), kColumns kernel columns and kGroups groups of 4 rows (3 and 1, or 5 and
// 2 for 5x5), a full block of 64 (kVectors 4) or 32 (kVectors 2) lanes of a u8 or s8 input, the
// columns never written to a buffer (DepthwiseOutputs::source): a tile interleaves the
// kStep·(kTile − 1) + kColumns input columns of each group it reads in registers and feeds each
// straight to its vpdpbusd. At stride 2 every pixel has two columns of
// its own; built into a buffer, their stores and the loads back cost more than the unpacks and the
// tile's vpdpbusd together (a 32-lane block took 1.6x the time per channel of a fused 64-lane one
// through the buffer: MobileNetV2's b2.dw, 96 channels). At stride 1 a tile of 4 pixels unpacks
// 6 columns where the buffer built 4 once for both rows of a pair, yet here the unpacks (4 a cycle
// on Zen 5, where vpdpbusd and the stage's converts and multiplies issue 2) overlap the vpdpbusd
// and the output stage, where the buffer's build, its stores and the kernel's loads back ran
// before the kernel: MobileNetV2's 14x14 and 7x7 layers 10-13 % faster.
// kParts: each kernel column's w − zw in that many s8 parts, one vpdpbusd each.
// kSplit column_sums (kColumnSums, kParts 1): w − zw as a + c, c per channel
// (depthwise_fused_kernel in kernels.hpp): after a group's taps its weights hold one vector of c,
// by which each interleaved column is multiplied once (add_column). A tile of 4 pixels so takes, a
// vector, 6 vpdpbusd and 7 adds at stride 1 (9 and 7 at stride 2) for the second part's 12
// vpdpbusd. With MobileNetV2's weight zero point 3 on an AMD Zen 5: b12.dw (576 channels at
// 14x14) 14.4 -> 12.2 us, b15.dw (960 at 7x7) 7.2 -> 5.6, b5.dw (192 at 28x28) 16.8 -> 14.8, b4.dw
// (144 at 56x56 stride 2) 18.0 -> 17.1 (without weight zero point 9.7, 4.5, 11.4 and 14.1 us).
// kSplit duplicated_row (kParts 1, 64 lanes, one group): the spare slot kSpareSlot (3 or 0) holds,
// per lane, the bytes of one of the other three slots (blended from their loads by the two masks
// after the group's taps), and its weights the remainder of that row's w − zw: where every w − zw
// outside s8 of a channel lies in one kernel row, a second part costs two byte blends a column.
// kFlip: an s8 input, each byte read as u8 by xor 0x80 (DepthwiseColumns::flip), which the
// interleave's byte moves commute with: the interleaved vectors are flipped, and the fill is the
// zero point before its flip.
// Interleave32: how a 32-lane block's column is interleaved (InterleaveRows32 or, on a CPU with
// VBMI, InterleaveRows32Vbmi: depthwise_interleave.hpp).
template <SchemeKind K, bool kSaturatedLow, bool kSaturatedHigh, int kParts, int kVectors,
          int kStep, int kColumns, int kGroups, bool kFlip,
          DepthwiseSplit kSplit = DepthwiseSplit::parts, class Interleave32 = InterleaveRows32,
          int kSpareSlot = 3>
struct FusedTiles {
  static constexpr bool kColumnSums = kSplit == DepthwiseSplit::column_sums;
  static constexpr bool kDuplicatedRow = kSplit == DepthwiseSplit::duplicated_row;
  static_assert(kSplit == DepthwiseSplit::parts || kParts == 1);
  static_assert(!kDuplicatedRow || (kVectors == 4 && kGroups == 1));
  static constexpr std::int64_t kTapBytes = 64 * kVectors;  // a tap's weights: [lanes][4 rows]
  // A group's weights: [tap][lanes][4 rows] (with kColumnSums, c after the taps; with
  // kDuplicatedRow, the spare slot's masks).
  static constexpr std::int64_t kGroupBytes =
      kTapBytes * (kColumns * kParts + (kSplit == DepthwiseSplit::parts ? 0 : 1));
  // Its start and output stage.
  BlockTiles<K, Written::bytes, kSaturatedLow, kSaturatedHigh, kColumns, kParts, kStep, kVectors>
      block;
  const std::uint8_t* row[4 * kGroups];  // input column 0 of each slot, or null: the zero point
  __m512i fill;
  std::int64_t pixel_bytes, first_column, in_width;
  // kDuplicatedRow: the lanes whose spare slot repeats the second (third) of the other slots.
  __mmask64 second = 0, third = 0;

  explicit FusedTiles(const DepthwiseOutputs& o)
      : block(o),
        fill(_mm512_set1_epi8(static_cast<char>(o.source->zero_point ^ (kFlip ? 0x80 : 0)))),
        pixel_bytes(o.source->pixel_bytes),
        first_column(o.source->first_column),
        in_width(o.source->in_width) {
    for (int i = 0; i < 4 * kGroups; ++i) row[i] = o.source->rows[i];
    if constexpr (kDuplicatedRow) {
      std::uint64_t masks[2];
      __builtin_memcpy(masks, o.weights + kTapBytes * kColumns + kSpareSlotMasksAt, sizeof masks);
      second = _cvtu64_mask64(masks[0]);
      third = _cvtu64_mask64(masks[1]);
    }
  }

  // Input column `column` of group g's 4 rows interleaved: q[v] is the column's vector v in the
  // buffer.
  [[gnu::always_inline]] void interleave(int g, std::int64_t column, __m512i (&q)[kVectors]) const {
    const bool inside = column >= 0 && column < in_width;
    const std::uint8_t* const* rows = row + 4 * g;
    // The column's offset once, not per row: GCC multiplied it out for each row it loads (behind
    // that row's null test), which cost 32-channel blocks at stride 2 a tenth of their time (96
    // channels at 112x112 37.2 -> 34.3 us on an AMD Zen 5).
    const std::int64_t offset = column * pixel_bytes;
    if constexpr (kVectors == 4) {
      const auto load = [&](int i) {
        return inside && rows[i] != nullptr ? _mm512_loadu_si512(rows[i] + offset) : fill;
      };
      if constexpr (kDuplicatedRow) {               // the spare slot never loaded
        constexpr int k = kSpareSlot == 0 ? 1 : 0;  // the first of the other slots
        const __m512i a = load(k), b = load(k + 1), c = load(k + 2);
        const __m512i spare =
            _mm512_mask_blend_epi8(third, _mm512_mask_blend_epi8(second, a, b), c);
        if constexpr (kSpareSlot == 0) {
          interleave_rows(spare, a, b, c, q);
        } else {
          interleave_rows(a, b, c, spare, q);
        }
      } else {
        interleave_rows(load(0), load(1), load(2), load(3), q);
      }
    } else {
      const auto load = [&](int i) {
        return inside && rows[i] != nullptr ? Interleave32::load(rows[i] + offset)
                                            : _mm512_castsi512_si256(fill);
      };
      Interleave32::rows(load(0), load(1), load(2), load(3), q);
    }
    if constexpr (kFlip) {
#pragma GCC unroll 4
      for (int v = 0; v < kVectors; ++v) {
        q[v] = _mm512_xor_si512(q[v], _mm512_set1_epi8(static_cast<char>(0x80)));
      }
    }
  }

  // kColumnSums: interleaved column t (q) into the tile's sums, a vector at a time: its a taps,
  // and c times the sum of the columns so far (`prefix`, one vpdpbusd a column) added to pixel p
  // at the last column of its window (t = kStep·p + kColumns − 1) and taken from the pixel after
  // the column before its window (p = (t + 1) / kStep): 2 adds a pixel, where adding each column's
  // own sum to the 3 pixels that read it took 3. The weights are read where they are used (memory
  // operands), so that the accumulators stay in registers (with a + c's 12 weight vectors kept in
  // registers as well, GCC spilled about 400 vectors a tile loop).
  template <int kTile>
  [[gnu::always_inline]] void add_column(int t, const __m512i (&q)[kVectors], const std::int8_t* w,
                                         __m512i (&prefix)[kVectors],
                                         __m512i (&acc)[kVectors][kTile]) const {
    asm("" : "+r"(w));
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      prefix[v] = _mm512_dpbusd_epi32(t == 0 ? _mm512_setzero_si512() : prefix[v], q[v],
                                      _mm512_load_si512(w + kTapBytes * kColumns + 64 * v));
#pragma GCC unroll 5
      for (int s = 0; s < kColumns; ++s) {
        if (t < s || (t - s) % kStep != 0 || (t - s) / kStep >= kTile) continue;
        const int p = (t - s) / kStep;
        acc[v][p] =
            _mm512_dpbusd_epi32(acc[v][p], q[v], _mm512_load_si512(w + kTapBytes * s + 64 * v));
      }
      if ((t - (kColumns - 1)) % kStep == 0 && t >= kColumns - 1 &&
          (t - (kColumns - 1)) / kStep < kTile) {
        const int p = (t - (kColumns - 1)) / kStep;
        acc[v][p] = _mm512_add_epi32(acc[v][p], prefix[v]);
      }
      if ((t + 1) % kStep == 0 && (t + 1) / kStep < kTile) {
        const int p = (t + 1) / kStep;
        acc[v][p] = _mm512_sub_epi32(acc[v][p], prefix[v]);
      }
    }
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    __m512i acc[kVectors][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
#pragma GCC unroll 8
      for (int p = 0; p < kTile; ++p) acc[v][p] = block.start[v];
    }
    __m512i prefix[kVectors];  // kColumnSums: see add_column
    for (int g = 0; g < kGroups; ++g) {
      // Weights [group][tap][lanes][4]: part k of kernel column s is tap kParts·s + k, its vector
      // v at kTapBytes·tap + 64·v.
      const std::int8_t* w = block.o.weights + kGroupBytes * g;
      // Column t of the tile feeds pixel p at kernel column s = t − kStep·p.
#pragma GCC unroll 16
      for (int t = 0; t < kStep * (kTile - 1) + kColumns; ++t) {
        __m512i q[kVectors];
        interleave(g, first_column + kStep * static_cast<std::int64_t>(first) + t, q);
        if constexpr (kColumnSums) {
          add_column<kTile>(t, q, w, prefix, acc);
          continue;
        }
        // 5 columns, or w − zw in two parts, at stride 2: the weights read where they are used
        // (memory operands). Left to itself GCC keeps a group's 20 (or 24) weight vectors in
        // registers and spills accumulators (100-200 stores a tile loop for 5 columns, 64 stack
        // accesses for two parts, against 2-4 so): on an AMD Zen 4, 256 at 56x56 82.4 -> 75.6 us;
        // with a weight zero point, MobileNetV2's b2.dw 66.9 -> 65.7 us and b4.dw 27.6 -> 26.8.
        // At stride 1, where each weight feeds more of a tile's pixels, the spilling version
        // measured faster (128 at 56x56 107.5 against 127.8 us; the buffer 134): kept.
        const std::int8_t* wt = w;
        if constexpr ((kColumns > 3 || kParts > 1) && kStep == 2) asm("" : "+r"(wt));
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

// Tiles of 4 pixels (for 32 lanes at stride 2, 6 or 8 measured no faster).
template <SchemeKind K, bool kFlip, int kParts, int kVectors, int kStep, int kColumns = 3,
          int kGroups = 1, DepthwiseSplit kSplit = DepthwiseSplit::parts,
          class Interleave32 = InterleaveRows32>
void run_fused(const DepthwiseOutputs& o) {
  constexpr int kTile = 4;
  with_saturating_clamps<K>(o, [&]<bool kLow, bool kHigh>() {
    if constexpr (kSplit == DepthwiseSplit::duplicated_row) {  // its spare slot, after the masks
      if (o.weights[64 * kVectors * kColumns + kSpareSlotIndexAt] == 0) {
        return for_tiles<kTile>(
            o.pixels, FusedTiles<K, kLow, kHigh, kParts, kVectors, kStep, kColumns, kGroups, kFlip,
                                 kSplit, Interleave32, 0>(o));
      }
    }
    for_tiles<kTile>(o.pixels, FusedTiles<K, kLow, kHigh, kParts, kVectors, kStep, kColumns,
                                          kGroups, kFlip, kSplit, Interleave32>(o));
  });
}

}  // namespace qconv::detail::avx512_vnni::depthwise
