// SPDX-License-Identifier: Apache-2.0
// The depthwise kernels' tiles (see depthwise_kernels.cpp): the accumulation over interleaved
// columns, the output stage straight from the accumulators and the stores, for blocks of 16 or 32
// lanes (VectorTiles) and of 64 (BlockTiles). Shared by the kernels that read a column buffer
// (depthwise_kernels.cpp) and those that interleave their columns in registers
// (depthwise_fused_kernels.cpp). Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/lane_transpose.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni::depthwise {

// The valid lanes of vector `vector` of a block with `channels` valid channels (none past them).
inline __mmask16 lane_mask(std::int32_t channels, int vector) {
  const std::int32_t n = channels - vector * 16;
  if (n <= 0) return 0;
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1);
}

// What a kernel writes: u8 or s8 through the output stage (the two differ only in the final pack
// and the bound it saturates at), s32 through it (the int32 scheme), or the exact sums into
// DepthwiseOutputs::sums for the scalar stage. The sums depend on neither the scheme nor the dtype,
// so every pair without a vector stage shares one kernel per layout.
enum class Written { bytes, s32, sums };

// Where a vector of sums goes: through the output stage of scheme K, straight from the accumulator
// (per-channel constants loaded once per vector of a run), or into DepthwiseOutputs::sums.
// kSaturatedHigh (fbgemm to bytes, DepthwiseOutputs::saturated_high): the stage skips its high
// clamp and the store's narrowing saturates there instead.
template <SchemeKind K, Written W, bool kSaturatedHigh = false>
struct Sink {
  static constexpr std::int64_t kElement = W == Written::s32 ? 4 : 1;
  stage_lanes::Lanes at;
  StageView stage;
  __mmask16 mask;
  std::byte* out;            // the run's pixel 0, this vector's first channel
  std::int64_t pixel_bytes;  // between consecutive output pixels
  std::int32_t* sums;        // Written::sums: the run's pixel 0, this vector's first lane
  bool signed_output;

  Sink(const DepthwiseOutputs& o, int v)
      : at(W == Written::sums ? stage_lanes::Lanes{}
                              : stage_lanes::Lanes::load<K>(*o.stage, o.channel + 16 * v)),
        stage(*o.stage),
        mask(lane_mask(o.channels, v)),
        out(static_cast<std::byte*>(o.output) + 16 * v * kElement),
        pixel_bytes(o.output_stride * kElement),
        sums(o.sums + 16 * v),
        signed_output(o.signed_output) {}
  [[gnu::always_inline]] void put(std::int32_t pixel, __m512i acc) const {
    if constexpr (W == Written::sums) {
      _mm512_store_si512(sums + pixel * 64, acc);
    } else {
      // Every scheme clamps below to lo here, and above to hi unless kSaturatedHigh; clamped, the
      // result fits the output dtype and a truncating narrowing is exact, for u8 and s8 alike.
      const __m512i r = stage_lanes::apply<K>(acc, at, stage, false, true, kSaturatedHigh);
      std::byte* to = out + pixel * pixel_bytes;
      if constexpr (W == Written::s32) {
        _mm512_mask_storeu_epi32(to, mask, r);
      } else if constexpr (kSaturatedHigh) {  // r ≥ lo ≥ the dtype's minimum: saturate above
        if (signed_output) {
          _mm512_mask_cvtsepi32_storeu_epi8(to, mask, r);
        } else {
          _mm512_mask_cvtusepi32_storeu_epi8(to, mask, r);
        }
      } else {
        _mm512_mask_cvtepi32_storeu_epi8(to, mask, r);
      }
    }
  }
};

// The sums of one tile of kTile pixels (the buffer has columns for all of them) in vector v, from
// `start`: the accumulators stay in registers from the first tap to the output stage.
// kColumns > 0: that many kernel columns per group at consecutive buffer columns (ascending),
// each kParts taps (w − zw split into kParts s8 parts), pixels kStep columns apart, a schedule
// fixed at compile time: each input vector is loaded once and fed to every (pixel, tap) that reads
// it (a 3x3 stride-1 tile of 4 pixels loads 6 vectors for its 12 vpdpbusd). kColumns = 0: any
// layout, one load per vpdpbusd. kWidth: the block's lanes where the caller knows them at compile
// time (BlockTiles: 64 or 32), else 0 (o.width): the buffer's column offsets then fold into the
// loads' displacements, where GCC kept one per tile column in a register or on the stack (32
// channels at 112x112, stride 1, on an AMD Zen 5: 32.4 -> 29.7 us).
template <int kTile, int kColumns, int kParts, int kStep, int kWidth = 0>
[[gnu::always_inline]] inline void accumulate(const DepthwiseOutputs& o, int v, std::int32_t first,
                                              __m512i start, __m512i (&acc)[kTile]) {
  const std::int64_t column_bytes = static_cast<std::int64_t>(kWidth > 0 ? kWidth : o.width) * 4;
  const std::int64_t group_bytes = o.buffer_columns * column_bytes;
  const std::int64_t pixel_bytes = o.column_step * column_bytes;
  const std::int64_t weight_group_bytes = static_cast<std::int64_t>(o.taps) * column_bytes;
  const std::uint8_t* tile = o.columns + first * pixel_bytes + 64 * v;
  const std::int8_t* weights = o.weights + 64 * v;
#pragma GCC unroll 8
  for (int p = 0; p < kTile; ++p) acc[p] = start;
  for (std::int32_t g = 0; g < o.groups; ++g) {
    const std::uint8_t* group = tile + g * group_bytes;
    const std::int8_t* w_group = weights + g * weight_group_bytes;
    if constexpr (kColumns > 0) {
      const std::uint8_t* base = group + o.tap_columns[0] * column_bytes;
      __m512i w[kColumns * kParts];
#pragma GCC unroll 8
      for (int t = 0; t < kColumns * kParts; ++t) {
        w[t] = _mm512_load_si512(w_group + t * column_bytes);
      }
      // Column j of the tile feeds pixel p at kernel column s = j − kStep·p.
#pragma GCC unroll 32
      for (int j = 0; j < kStep * (kTile - 1) + kColumns; ++j) {
        const __m512i x = _mm512_load_si512(base + j * column_bytes);
#pragma GCC unroll 8
        for (int s = 0; s < kColumns; ++s) {
          const int p = (j - s) / kStep;
          if ((j - s) % kStep != 0 || j < s || p >= kTile) continue;
#pragma GCC unroll 4
          for (int k = 0; k < kParts; ++k) {
            acc[p] = _mm512_dpbusd_epi32(acc[p], x, w[s * kParts + k]);
          }
        }
      }
    } else {
      for (std::int32_t t = 0; t < o.taps; ++t) {
        const std::uint8_t* at = group + o.tap_columns[t] * column_bytes;
        const __m512i w = _mm512_load_si512(w_group + t * column_bytes);
#pragma GCC unroll 8
        for (int p = 0; p < kTile; ++p) {
          acc[p] = _mm512_dpbusd_epi32(acc[p], _mm512_load_si512(at + p * pixel_bytes), w);
        }
      }
    }
  }
}

// Runs of pixels in tiles of kTile, the last one of kTile − 1, kTile or kTile / 2 pixels (the
// fewest computed: a 7-pixel row is 4 + 3): tile.run<n>(first, valid) with `valid` pixels to write
// (the buffer has columns for whole tiles of up to 8).
// Always inlined: out of line, `tile` would live in memory and every byte store would make the
// tile loop read its copy of DepthwiseOutputs back.
template <int kTile, class Tile>
[[gnu::always_inline]] inline void for_tiles(std::int32_t pixels, const Tile& tile) {
  std::int32_t first = 0;
  for (; first + kTile <= pixels; first += kTile) tile.template run<kTile>(first, kTile);
  const std::int32_t left = pixels - first;
  if (left == kTile - 1) {
    tile.template run<kTile - 1>(first, left);
  } else if (left > kTile / 2) {
    tile.template run<kTile>(first, left);
  } else if (left > 0) {
    tile.template run<kTile / 2>(first, left);
  }
}

// run.template operator()<kSaturatedLow, kSaturatedHigh>() for a kernel to bytes: the clamps that
// the output's narrowing stands for (below at lo where lo is the dtype's minimum and zy ≥ 0; above
// for fbgemm where DepthwiseOutputs::saturated_high says so), in the builds with every kernel
// variant; none skipped in the others.
template <SchemeKind K, class Run>
[[gnu::always_inline]] inline void with_saturating_clamps(const DepthwiseOutputs& o,
                                                          const Run& run) {
  const StageView& s = *o.stage;
  if constexpr (kEveryKernelVariant) {
    if (s.zero_point >= 0 && s.lo == (o.signed_output ? -128 : 0)) {
      if constexpr (K == SchemeKind::fbgemm) {
        if (o.saturated_high) return run.template operator()<true, true>();
      }
      return run.template operator()<true, false>();
    }
  }
  run.template operator()<false, false>();
}

// Blocks of 16 lanes, and of 32 to s32 or the sums (channels in order): one vector of 16 channels
// at a time over the whole run (its output-stage constants and weights loaded once), each sum
// narrowed on its own.
template <SchemeKind K, Written W, int kColumns, int kParts, int kStep, bool kSaturatedHigh>
struct VectorTiles {
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  int v;
  __m512i start;
  Sink<K, W, kSaturatedHigh> sink;
  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    __m512i acc[kTile];
    accumulate<kTile, kColumns, kParts, kStep>(o, v, first, start, acc);
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) {
      if (p < valid) sink.put(first + p, acc[p]);
    }
  }
};

// A 64-lane block (kVectors 4): a tile's four vectors' sums first, then each vector through the
// output stage (one vector's sums then its stage, the next vector's after: its few tap chains did
// not hide vpdpbusd's latency, MobileNetV2's 14x14 and 28x28 layers took a fifth longer), then per
// pixel: to u8 or s8, two packs to 16 bits and one to 8, which leave the channels in order (see
// depthwise_columns.cpp), and one 64-byte store; to s32 (or the exact sums), the lanes transposed
// back and four stores. The pack to bytes is the only step where u8 and s8 differ (chosen once per
// tile). A 32-lane block to bytes (kVectors 2, channels in order): its two vectors packed the same
// way, then two pixels' words to bytes together and one vpermd putting both pixels' 32 bytes in
// order (store_pairs; narrowed one vector at a time, the 32-channel layers took a third more time
// per channel than the 64-lane blocks). kSaturatedLow: the pack to bytes saturates at the
// output's lower bound, so the schemes skip their own low clamp; kSaturatedHigh (fbgemm):
// likewise at the upper bound (DepthwiseOutputs::saturated_high).
template <SchemeKind K, Written W, bool kSaturatedLow, bool kSaturatedHigh, int kColumns,
          int kParts, int kStep, int kVectors = 4>
struct BlockTiles {
  static_assert(kVectors == 4 || (kVectors == 2 && W == Written::bytes));
  static constexpr bool kRaw = W == Written::sums;
  static constexpr bool kBytes = W == Written::bytes;
  // zy added to the packed words (saturating, as the packs narrow) rather than to each vector.
  static constexpr bool kZeroPointOnWords = kBytes && stage_lanes::zero_point_added_last(K);
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  StageView stage;
  __m512i start[4];

  [[gnu::always_inline]] explicit BlockTiles(const DepthwiseOutputs& outputs)
      : o(outputs), stage(*outputs.stage) {
    const __m512i minus_zx = _mm512_set1_epi32(-o.zero_point);
    for (int v = 0; v < kVectors; ++v) {
      start[v] = _mm512_mullo_epi32(minus_zx, _mm512_loadu_si512(o.weight_sums + 16 * v));
    }
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    __m512i r[4][kTile];
    __m512i acc[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) {
      accumulate<kTile, kColumns, kParts, kStep, 16 * kVectors>(o, v, first, start[v], acc[v]);
    }
#pragma GCC unroll 4
    for (int v = 0; v < kVectors; ++v) finish_vector<kTile>(v, acc[v], r);
    store<kTile>(r, first, valid);
  }

  // Vector v of a tile's sums through the output stage into r[v] (u8 and s8: pairs of vectors
  // packed to words as soon as both are done).
  template <int kTile>
  [[gnu::always_inline]] void finish_vector(int v, const __m512i (&acc)[kTile],
                                            __m512i (&r)[4][kTile]) const {
    // Loaded per tile (memory operands, mostly): kept for the whole run, four vectors' worth
    // would be stored to the stack and read back. The stage's arrays are in the block's lane
    // order (depthwise_block_stage).
    stage_lanes::Lanes at{};
    if constexpr (!kRaw) at = stage_lanes::Lanes::load<K>(stage, o.channel + 16 * v);
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) {
      const __m512i result = kRaw ? acc[p]
                                  : stage_lanes::apply<K>(acc[p], at, stage, kSaturatedLow,
                                                          !kZeroPointOnWords, kSaturatedHigh);
      if constexpr (kBytes) {  // words as soon as a pair of vectors is done
        if (v % 2 == 0) {
          r[v][p] = result;
        } else {
          r[v][p] = _mm512_packs_epi32(r[v - 1][p], result);
          if constexpr (kZeroPointOnWords) {
            r[v][p] = _mm512_adds_epi16(
                r[v][p], _mm512_set1_epi16(static_cast<std::int16_t>(stage.zero_point)));
          }
        }
      } else {
        r[v][p] = result;
      }
    }
  }

  // The first `valid` pixels of a finished tile to the output (or the sums).
  // The pack to bytes chosen once per tile: only this loop is compiled twice, not the kernel.
  template <int kTile>
  [[gnu::always_inline]] void store(const __m512i (&r)[4][kTile], std::int32_t first,
                                    std::int32_t valid) const {
    if constexpr (kBytes) {
      if (o.signed_output) return store_bytes<kTile, true>(r, first, valid);
      store_bytes<kTile, false>(r, first, valid);
    } else {
      store_words<kTile>(r, first, valid);
    }
  }
  template <int kTile, bool kSigned>
  [[gnu::always_inline]] void store_bytes(const __m512i (&r)[4][kTile], std::int32_t first,
                                          std::int32_t valid) const {
    auto* out = static_cast<std::int8_t*>(o.output) + first * o.output_stride;
    const std::int64_t stride = o.output_stride;
    if constexpr (kVectors == 2) {
      store_pairs<kTile, kSigned>(r, out, stride, valid);
    } else {
      const __mmask64 mask = (~std::uint64_t{0}) >> (64 - o.channels);
#pragma GCC unroll 8
      for (int p = 0; p < kTile; ++p) {
        if (p >= valid) continue;
        const __m512i bytes =
            kSigned ? _mm512_packs_epi16(r[1][p], r[3][p]) : _mm512_packus_epi16(r[1][p], r[3][p]);
        _mm512_mask_storeu_epi8(out + p * stride, mask, bytes);
      }
    }
  }
  // A 32-lane block's pixels two at a time: one pack to bytes and one vpermd for both (128-bit
  // lane l's dwords 0 and 1 hold the first pixel's channels 4l.. and 16 + 4l.., dwords 2 and 3
  // the second's), then each pixel's 32 bytes stored on their own, or as one 64-byte store where
  // the two pixels lie next to each other (an output of exactly 32 channels). A pixel at a time,
  // with half of each pack's and vpermd's lanes unused, MobileNetV1's dw1 and V2's b1.dw (32
  // channels, 112x112) took 6 % longer and b2.dw (96 = 64 + 32 channels) 2 % on an AMD Zen 4.
  template <int kTile, bool kSigned>
  [[gnu::always_inline]] void store_pairs(const __m512i (&r)[4][kTile], std::int8_t* out,
                                          std::int64_t stride, std::int32_t valid) const {
    const auto mask = static_cast<__mmask32>((~std::uint32_t{0}) >> (32 - o.channels));
    const bool packed = stride == 32 && o.channels == 32;
    const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
#pragma GCC unroll 8
    for (int p = 0; p < kTile; p += 2) {
      if (p >= valid) continue;
      const __m512i high = p + 1 < kTile ? r[1][p + 1] : r[1][p];
      const __m512i bytes = _mm512_permutexvar_epi32(
          order, kSigned ? _mm512_packs_epi16(r[1][p], high) : _mm512_packus_epi16(r[1][p], high));
      if (packed && p + 1 < valid) {
        _mm512_storeu_si512(out + p * stride, bytes);
        continue;
      }
      _mm256_mask_storeu_epi8(out + p * stride, mask, _mm512_castsi512_si256(bytes));
      if (p + 1 < valid) {
        _mm256_mask_storeu_epi8(out + (p + 1) * stride, mask, _mm512_extracti64x4_epi64(bytes, 1));
      }
    }
  }
  template <int kTile>
  [[gnu::always_inline]] void store_words(const __m512i (&r)[4][kTile], std::int32_t first,
                                          std::int32_t valid) const {
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) {
      if (p >= valid) continue;
      const std::int64_t pixel = first + p;
      {  // s32, or the exact sums: the 64-lane order back to channel order
        __m512i n[4] = {r[0][p], r[1][p], r[2][p], r[3][p]};
        transpose_lanes(n[0], n[1], n[2], n[3]);
#pragma GCC unroll 4
        for (int j = 0; j < 4; ++j) {
          if constexpr (kRaw) {
            _mm512_store_si512(o.sums + pixel * 64 + 16 * j, n[j]);
          } else {
            _mm512_mask_storeu_epi32(
                static_cast<std::int32_t*>(o.output) + pixel * o.output_stride + 16 * j,
                lane_mask(o.channels, j), n[j]);
          }
        }
      }
    }
  }
};

}  // namespace qconv::detail::avx512_vnni::depthwise
