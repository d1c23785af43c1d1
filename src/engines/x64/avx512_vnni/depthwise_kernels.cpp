// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels, four taps per vpdpbusd: channels in lanes, each s32 lane's 4 bytes the same
// input column of 4 kernel rows, so one vpdpbusd does 4 taps of 16 channels (the 2-taps-per-
// vpdpwssd form it replaces needed twice the instructions and widened every byte to 16 bits).
//
// The columns come from depthwise_columns.cpp, or (stride 2, full 64-lane blocks) are interleaved
// here in registers the same way.
//
// depthwise_output_kernel(): tiles of 8 pixels (the last of 4 or 8), one 16-channel vector at a
// time (its weight vector per tap reused across the tile's pixels), each sum put through the output
// stage straight from its register (no pass of s32 sums through memory). The sums start at
// −zx·Σ(w − zw) and add x·(w − zw) with padding read as zx, so they are exact: Σ (x − zx)(w − zw)
// over the window. The common tap layouts (3x3 at stride 1 and 2, a transposed 4x4 stride 2's 2
// taps per phase) have their schedule fixed at compile time.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

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
template <SchemeKind K, Written W>
struct Sink {
  static constexpr std::int64_t kElement = W == Written::s32 ? 4 : 1;
  stage_lanes::Lanes at;
  StageView stage;
  __mmask16 mask;
  std::byte* out;            // the run's pixel 0, this vector's first channel
  std::int64_t pixel_bytes;  // between consecutive output pixels
  std::int32_t* sums;        // Written::sums: the run's pixel 0, this vector's first lane

  Sink(const DepthwiseOutputs& o, int v)
      : at(W == Written::sums ? stage_lanes::Lanes{}
                              : stage_lanes::Lanes::load<K>(*o.stage, o.channel + 16 * v)),
        stage(*o.stage),
        mask(lane_mask(o.channels, v)),
        out(static_cast<std::byte*>(o.output) + 16 * v * kElement),
        pixel_bytes(o.output_stride * kElement),
        sums(o.sums + 16 * v) {}
  [[gnu::always_inline]] void put(std::int32_t pixel, __m512i acc) const {
    if constexpr (W == Written::sums) {
      _mm512_store_si512(sums + pixel * 64, acc);
    } else {
      // Every scheme clamps to [lo, hi] here (no narrowing-saturation shortcut), so the result
      // already fits the output dtype and a truncating narrowing is exact, for u8 and s8 alike.
      const __m512i r = stage_lanes::apply<K>(acc, at, stage, false);
      std::byte* to = out + pixel * pixel_bytes;
      if constexpr (W == Written::s32) {
        _mm512_mask_storeu_epi32(to, mask, r);
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
// layout, one load per vpdpbusd.
template <int kTile, int kColumns, int kParts, int kStep>
[[gnu::always_inline]] inline void accumulate(const DepthwiseOutputs& o, int v, std::int32_t first,
                                              __m512i start, __m512i (&acc)[kTile]) {
  const std::int64_t column_bytes = static_cast<std::int64_t>(o.width) * 4;
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
template <int kTile, class Tile>
inline void for_tiles(std::int32_t pixels, const Tile& tile) {
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

// Blocks of 16 or 32 lanes (channels in order): one vector of 16 channels at a time over the
// whole run (its output-stage constants and weights loaded once), each sum narrowed on its own.
template <SchemeKind K, Written W, int kColumns, int kParts, int kStep>
struct VectorTiles {
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  int v;
  __m512i start;
  Sink<K, W> sink;
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

// The 4x4 transpose of 128-bit lanes: vector v's lane l ↔ vector l's lane v. It takes 16
// consecutive channels per vector to the 64-lane blocks' lanes (depthwise_lane) and back.
inline void transpose_lanes(__m512i& a, __m512i& b, __m512i& c, __m512i& d) {
  const __m512i ab_low = _mm512_shuffle_i32x4(a, b, 0x44),
                ab_high = _mm512_shuffle_i32x4(a, b, 0xee);
  const __m512i cd_low = _mm512_shuffle_i32x4(c, d, 0x44),
                cd_high = _mm512_shuffle_i32x4(c, d, 0xee);
  a = _mm512_shuffle_i32x4(ab_low, cd_low, 0x88);
  b = _mm512_shuffle_i32x4(ab_low, cd_low, 0xdd);
  c = _mm512_shuffle_i32x4(ab_high, cd_high, 0x88);
  d = _mm512_shuffle_i32x4(ab_high, cd_high, 0xdd);
}
// A 64-lane block: a tile's four vectors one after the other, then per pixel: to u8 or s8, two
// packs to 16 bits and one to 8, which leave the channels in order (see depthwise_columns.cpp), and
// one 64-byte store; to s32 (or the exact sums), the lanes transposed back and four stores. The
// pack to bytes is the only step where u8 and s8 differ: one branch per pixel (the same way all
// run). kSaturatedLow: the pack to bytes saturates at the output's lower bound, so the schemes skip
// their own low clamp.
template <SchemeKind K, Written W, bool kSaturatedLow, int kColumns, int kParts, int kStep>
struct BlockTiles {
  static constexpr bool kRaw = W == Written::sums;
  static constexpr bool kBytes = W == Written::bytes;
  // zy added to the packed words (saturating, as the packs narrow) rather than to each vector.
  static constexpr bool kZeroPointOnWords = kBytes && stage_lanes::zero_point_added_last(K);
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  StageView stage;
  __m512i start[4];

  explicit BlockTiles(const DepthwiseOutputs& outputs) : o(outputs), stage(*outputs.stage) {
    const __m512i minus_zx = _mm512_set1_epi32(-o.zero_point);
    for (int v = 0; v < 4; ++v) {
      start[v] = _mm512_mullo_epi32(minus_zx, _mm512_loadu_si512(o.weight_sums + 16 * v));
    }
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    __m512i r[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
      __m512i acc[kTile];
      accumulate<kTile, kColumns, kParts, kStep>(o, v, first, start[v], acc);
      finish_vector<kTile>(v, acc, r);
    }
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
      const __m512i result =
          kRaw ? acc[p]
               : stage_lanes::apply<K>(acc[p], at, stage, kSaturatedLow, !kZeroPointOnWords);
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
    const __mmask64 mask = (~std::uint64_t{0}) >> (64 - o.channels);
    auto* out = static_cast<std::int8_t*>(o.output) + first * o.output_stride;
    const std::int64_t stride = o.output_stride;
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) {
      if (p >= valid) continue;
      const __m512i bytes =
          kSigned ? _mm512_packs_epi16(r[1][p], r[3][p]) : _mm512_packus_epi16(r[1][p], r[3][p]);
      _mm512_mask_storeu_epi8(out + p * stride, mask, bytes);
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

// Stride 2, 3 kernel columns, one group of 4 rows, a full 64-lane block of a u8 input, the
// columns never written to a buffer (DepthwiseOutputs::source): a tile interleaves the 2·kTile + 1
// input columns it reads in registers and feeds each straight to its vpdpbusd. At stride 2 every
// pixel has two columns of its own; built into a buffer, their stores and the loads back cost
// more than the unpacks and the tile's vpdpbusd together.
// kParts: each kernel column's w − zw in that many s8 parts, one vpdpbusd each.
template <SchemeKind K, bool kSaturatedLow, int kParts>
struct FusedStride2Tiles {
  BlockTiles<K, Written::bytes, kSaturatedLow, 3, kParts, 2> block;  // its start and output stage
  const std::uint8_t* row[4];  // input column 0 of each slot, or null: the zero point
  __m512i fill;
  std::int64_t pixel_bytes, first_column, in_width;

  explicit FusedStride2Tiles(const DepthwiseOutputs& o)
      : block(o),
        fill(_mm512_set1_epi8(static_cast<char>(o.source->zero_point))),
        pixel_bytes(o.source->pixel_bytes),
        first_column(o.source->first_column),
        in_width(o.source->in_width) {
    for (int i = 0; i < 4; ++i) row[i] = o.source->rows[i];
  }

  // Input column `column` of the 4 rows interleaved: q[v] is the column's vector v in the buffer.
  [[gnu::always_inline]] void interleave(std::int64_t column, __m512i (&q)[4]) const {
    const bool inside = column >= 0 && column < in_width;
    const auto load = [&](int i) {
      return inside && row[i] != nullptr ? _mm512_loadu_si512(row[i] + column * pixel_bytes) : fill;
    };
    interleave_rows(load(0), load(1), load(2), load(3), q);
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    __m512i acc[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
#pragma GCC unroll 8
      for (int p = 0; p < kTile; ++p) acc[v][p] = block.start[v];
    }
    // Weights [tap][64 lanes][4]: part k of kernel column s is tap kParts·s + k, its vector v at
    // 256·tap + 64·v.
    const std::int8_t* w = block.o.weights;
    // Column t of the tile feeds pixel p at kernel column s = t − 2p.
#pragma GCC unroll 16
    for (int t = 0; t < 2 * kTile + 1; ++t) {
      __m512i q[4];
      interleave(first_column + 2 * static_cast<std::int64_t>(first) + t, q);
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        if (t < s || (t - s) % 2 != 0 || (t - s) / 2 >= kTile) continue;
        const int p = (t - s) / 2;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
#pragma GCC unroll 2
          for (int k = 0; k < kParts; ++k) {
            const std::int8_t* at = w + 256 * (kParts * s + k) + 64 * v;
            acc[v][p] = _mm512_dpbusd_epi32(acc[v][p], q[v], _mm512_load_si512(at));
          }
        }
      }
    }
    __m512i r[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) block.template finish_vector<kTile>(v, acc[v], r);
    block.template store<kTile>(r, first, valid);
  }
};

template <SchemeKind K, int kParts>
void run_fused_stride2(const DepthwiseOutputs& o) {
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0).
  const StageView& s = *o.stage;
  if (s.zero_point >= 0 && s.lo == (o.signed_output ? -128 : 0)) {
    return for_tiles<4>(o.pixels, FusedStride2Tiles<K, true, kParts>(o));
  }
  for_tiles<4>(o.pixels, FusedStride2Tiles<K, false, kParts>(o));
}

template <SchemeKind K>
DepthwiseOutputKernel fused_stride2_parts(int parts) {
  if (parts == 1) return &run_fused_stride2<K, 1>;
  return parts == 2 ? &run_fused_stride2<K, 2> : nullptr;
}

template <SchemeKind K, Written W, int kColumns, int kParts, int kStep>
void run_outputs(const DepthwiseOutputs& o) {
  if (o.width == 64) {
    // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0).
    const StageView& s = *o.stage;
    if constexpr (W == Written::bytes) {
      if (s.zero_point >= 0 && s.lo == (o.signed_output ? -128 : 0)) {
        return for_tiles<4>(o.pixels, BlockTiles<K, W, true, kColumns, kParts, kStep>(o));
      }
    }
    return for_tiles<4>(o.pixels, BlockTiles<K, W, false, kColumns, kParts, kStep>(o));
  }
  const __m512i minus_zx = _mm512_set1_epi32(-o.zero_point);
  for (int v = 0; v < o.width / 16 && 16 * v < o.channels; ++v) {
    const VectorTiles<K, W, kColumns, kParts, kStep> tiles{
        o, v, _mm512_mullo_epi32(minus_zx, _mm512_loadu_si512(o.weight_sums + 16 * v)),
        Sink<K, W>(o, v)};
    for_tiles<8>(o.pixels, tiles);
  }
}

inline void point(const std::int32_t*& array, const std::int32_t* at) { array = at; }
inline void point(const float*& array, const std::int32_t* at) {
  array = reinterpret_cast<const float*>(at);
}

template <SchemeKind K>
void block_stage(const StageView& in, std::int64_t blocks64, std::int64_t channels,
                 std::int32_t* storage, StageView& out) {
  out = in;
  if (in.channel_step == 0) return;  // one set of constants for every channel
  const std::int64_t length = (channels + 63) / 64 * 64;
  std::int32_t* to = storage;
  stage_lanes::Lanes::for_each_array<K>([&](auto, auto array) {
    const auto* from = reinterpret_cast<const std::int32_t*>(in.*array);
    for (std::int64_t b = 0; b < blocks64 * 64; b += 64) {
      __m512i n[4];
      for (int j = 0; j < 4; ++j) n[j] = _mm512_loadu_si512(from + b + 16 * j);
      transpose_lanes(n[0], n[1], n[2], n[3]);
      for (int j = 0; j < 4; ++j) _mm512_storeu_si512(to + b + 16 * j, n[j]);
    }
    for (std::int64_t c = blocks64 * 64; c < channels; c += 16) {
      _mm512_storeu_si512(to + c, _mm512_loadu_si512(from + c));
    }
    point(out.*array, to);
    to += length;
  });
}

template <SchemeKind K, Written W>
DepthwiseOutputKernel for_layout(int columns, int parts, int column_step) {
  const auto is = [&](int c, int k, int step) {
    return columns == c && parts == k && column_step == step;
  };
  if (is(3, 1, 1)) return &run_outputs<K, W, 3, 1, 1>;
  if (is(3, 1, 2)) return &run_outputs<K, W, 3, 1, 2>;
  if (is(2, 1, 1)) return &run_outputs<K, W, 2, 1, 1>;
  if (is(3, 2, 1)) return &run_outputs<K, W, 3, 2, 1>;
  if (is(3, 2, 2)) return &run_outputs<K, W, 3, 2, 2>;
  if (is(2, 2, 1)) return &run_outputs<K, W, 2, 2, 1>;
  return &run_outputs<K, W, 0, 1, 1>;
}

}  // namespace

void depthwise_block_stage(SchemeKind scheme, const StageView& in, std::int64_t blocks64,
                           std::int64_t channels, std::int32_t* storage, StageView& out) {
  switch (scheme) {
    case SchemeKind::int32:
      return block_stage<SchemeKind::int32>(in, blocks64, channels, storage, out);
    case SchemeKind::fbgemm:
      return block_stage<SchemeKind::fbgemm>(in, blocks64, channels, storage, out);
    case SchemeKind::qnnpack:
      return block_stage<SchemeKind::qnnpack>(in, blocks64, channels, storage, out);
    case SchemeKind::onednn:
      return block_stage<SchemeKind::onednn>(in, blocks64, channels, storage, out);
    case SchemeKind::onnx:
      return block_stage<SchemeKind::onnx>(in, blocks64, channels, storage, out);
    case SchemeKind::tvm: return block_stage<SchemeKind::tvm>(in, blocks64, channels, storage, out);
    case SchemeKind::tvm_f32:
      return block_stage<SchemeKind::tvm_f32>(in, blocks64, channels, storage, out);
    case SchemeKind::tflite:
      return block_stage<SchemeKind::tflite>(in, blocks64, channels, storage, out);
    case SchemeKind::tflite_single:
      return block_stage<SchemeKind::tflite_single>(in, blocks64, channels, storage, out);
    case SchemeKind::onnxruntime:
      return block_stage<SchemeKind::onnxruntime>(in, blocks64, channels, storage, out);
  }
  out = in;
}

DepthwiseOutputKernel depthwise_output_kernel(SchemeKind scheme, DType output_dtype, int columns,
                                              int parts, int column_step) {
  const int t = columns, c = parts, step = column_step;
  // A pair without a vector output stage: the exact sums, whatever the scheme and dtype.
  if (epilogue_kernel(scheme, output_dtype) == nullptr) {
    return for_layout<SchemeKind::int32, Written::sums>(t, c, step);
  }
  if (output_dtype == DType::s32) return for_layout<SchemeKind::int32, Written::s32>(t, c, step);
  constexpr Written kBytes = Written::bytes;
  switch (scheme) {
    case SchemeKind::fbgemm: return for_layout<SchemeKind::fbgemm, kBytes>(t, c, step);
    case SchemeKind::qnnpack: return for_layout<SchemeKind::qnnpack, kBytes>(t, c, step);
    case SchemeKind::onednn: return for_layout<SchemeKind::onednn, kBytes>(t, c, step);
    case SchemeKind::onnx: return for_layout<SchemeKind::onnx, kBytes>(t, c, step);
    case SchemeKind::tvm: return for_layout<SchemeKind::tvm, kBytes>(t, c, step);
    case SchemeKind::tvm_f32: return for_layout<SchemeKind::tvm_f32, kBytes>(t, c, step);
    case SchemeKind::tflite: return for_layout<SchemeKind::tflite, kBytes>(t, c, step);
    case SchemeKind::tflite_single:
      return for_layout<SchemeKind::tflite_single, kBytes>(t, c, step);
    case SchemeKind::onnxruntime: return for_layout<SchemeKind::onnxruntime, kBytes>(t, c, step);
    case SchemeKind::int32: break;  // int32 to bytes has no vector form: the sums, above
  }
  return for_layout<SchemeKind::int32, Written::sums>(t, c, step);
}

DepthwiseOutputKernel depthwise_fused_stride2_kernel(SchemeKind scheme, DType output_dtype,
                                                     int parts) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  switch (scheme) {
    case SchemeKind::fbgemm: return fused_stride2_parts<SchemeKind::fbgemm>(parts);
    case SchemeKind::qnnpack: return fused_stride2_parts<SchemeKind::qnnpack>(parts);
    case SchemeKind::onednn: return fused_stride2_parts<SchemeKind::onednn>(parts);
    case SchemeKind::onnx: return fused_stride2_parts<SchemeKind::onnx>(parts);
    case SchemeKind::tvm: return fused_stride2_parts<SchemeKind::tvm>(parts);
    case SchemeKind::tvm_f32: return fused_stride2_parts<SchemeKind::tvm_f32>(parts);
    case SchemeKind::tflite: return fused_stride2_parts<SchemeKind::tflite>(parts);
    case SchemeKind::tflite_single: return fused_stride2_parts<SchemeKind::tflite_single>(parts);
    case SchemeKind::onnxruntime: return fused_stride2_parts<SchemeKind::onnxruntime>(parts);
    case SchemeKind::int32: break;
  }
  return nullptr;
}

}  // namespace qconv::detail::avx512_vnni
