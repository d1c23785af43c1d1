// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels, four taps per vpdpbusd: channels in lanes, each s32 lane's 4 bytes the same
// input column of 4 kernel rows, so one vpdpbusd does 4 taps of 16 channels (the 2-taps-per-
// vpdpwssd form it replaces needed twice the instructions and widened every byte to 16 bits).
//
// The columns come from depthwise_columns.cpp; the tile machinery (accumulation, output stage,
// stores) is depthwise_tiles.hpp, shared with the stride-2 kernels that interleave their columns
// in registers (depthwise_fused_kernels.cpp).
//
// depthwise_output_kernel(): tiles of 8 pixels (the last of 4 or 8), one 16-channel vector at a
// time (its weight vector per tap reused across the tile's pixels), each sum put through the output
// stage straight from its register (no pass of s32 sums through memory). The sums start at
// −zx·Σ(w − zw) and add x·(w − zw) with padding read as zx, so they are exact: Σ (x − zx)(w − zw)
// over the window. The common tap layouts (3x3 and 5x5 at stride 1 and 2, a transposed 4x4 stride
// 2's 2 taps per phase) have their schedule fixed at compile time (5x5 layers of 14x14 to 112x112
// 11-22 % faster so than on the general loop, one load per vpdpbusd, on an AMD Zen 4).
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using namespace depthwise;

// A block of 16 lanes, or of 32 to s32 or the sums, vector after vector.
template <SchemeKind K, Written W, int kColumns, int kParts, int kStep, bool kSaturatedHigh>
void run_vectors(const DepthwiseOutputs& o) {
  const __m512i minus_zx = _mm512_set1_epi32(-o.zero_point);
  for (int v = 0; v < o.width / 16 && 16 * v < o.channels; ++v) {
    const VectorTiles<K, W, kColumns, kParts, kStep, kSaturatedHigh> tiles{
        o, v, _mm512_mullo_epi32(minus_zx, _mm512_loadu_si512(o.weight_sums + 16 * v)),
        Sink<K, W, kSaturatedHigh>(o, v)};
    for_tiles<8>(o.pixels, tiles);
  }
}

// Blocks of kVectors vectors (64 or 32 lanes) through BlockTiles of kTile pixels, with the clamps
// their narrowing stands for.
template <SchemeKind K, Written W, int kColumns, int kParts, int kStep, int kVectors, int kTile>
[[gnu::always_inline]] inline void run_blocks(const DepthwiseOutputs& o) {
  if constexpr (W == Written::bytes) {
    with_saturating_clamps<K>(o, [&]<bool kLow, bool kHigh>() {
      for_tiles<kTile>(o.pixels,
                       BlockTiles<K, W, kLow, kHigh, kColumns, kParts, kStep, kVectors>(o));
    });
  } else {
    for_tiles<kTile>(o.pixels,
                     BlockTiles<K, W, false, false, kColumns, kParts, kStep, kVectors>(o));
  }
}

// A 32-lane block to bytes: two vectors packed together, tiles of 8 pixels as VectorTiles' (of 4 or
// 6 it ran no faster than a vector at a time). Out of line: inlined into run_outputs beside the
// 64-lane tiles, it cost those 5 % (their registers allocated differently).
template <SchemeKind K, int kColumns, int kParts, int kStep>
[[gnu::noinline]] void run_pairs(const DepthwiseOutputs& o) {
  run_blocks<K, Written::bytes, kColumns, kParts, kStep, 2, 8>(o);
}

template <SchemeKind K, Written W, int kColumns, int kParts, int kStep>
void run_outputs(const DepthwiseOutputs& o) {
  if (o.width == 64) return run_blocks<K, W, kColumns, kParts, kStep, 4, 4>(o);
  if constexpr (W == Written::bytes) {
    if (o.width == 32) return run_pairs<K, kColumns, kParts, kStep>(o);
  }
  if constexpr (K == SchemeKind::fbgemm && W == Written::bytes && kEveryKernelVariant) {
    if (o.saturated_high) return run_vectors<K, W, kColumns, kParts, kStep, true>(o);
  }
  run_vectors<K, W, kColumns, kParts, kStep, false>(o);
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
  if constexpr (kEveryKernelVariant) {
    if (is(3, 1, 1)) return &run_outputs<K, W, 3, 1, 1>;
    if (is(3, 1, 2)) return &run_outputs<K, W, 3, 1, 2>;
    if (is(2, 1, 1)) return &run_outputs<K, W, 2, 1, 1>;
    if (is(3, 2, 1)) return &run_outputs<K, W, 3, 2, 1>;
    if (is(3, 2, 2)) return &run_outputs<K, W, 3, 2, 2>;
    if (is(2, 2, 1)) return &run_outputs<K, W, 2, 2, 1>;
    if (is(5, 1, 1)) return &run_outputs<K, W, 5, 1, 1>;
    if (is(5, 1, 2)) return &run_outputs<K, W, 5, 1, 2>;
  }
  return &run_outputs<K, W, 0, 1, 1>;
}

}  // namespace

void depthwise_block_stage(SchemeKind scheme, const StageView& in, std::int64_t blocks64,
                           std::int64_t channels, std::int32_t* storage, StageView& out) {
  gemm::for_scheme<void>(
      scheme, [&]<SchemeKind K>() { block_stage<K>(in, blocks64, channels, storage, out); });
}

DepthwiseOutputKernel depthwise_output_kernel(SchemeKind scheme, DType output_dtype, int columns,
                                              int parts, int column_step) {
  const int t = columns, c = parts, step = column_step;
  // A pair without a vector output stage: the exact sums, whatever the scheme and dtype.
  if (epilogue_kernel(scheme, output_dtype) == nullptr) {
    return for_layout<SchemeKind::int32, Written::sums>(t, c, step);
  }
  if (output_dtype == DType::s32) return for_layout<SchemeKind::int32, Written::s32>(t, c, step);
  return gemm::for_scheme<DepthwiseOutputKernel>(
      scheme, [&]<SchemeKind K>() -> DepthwiseOutputKernel {
        if constexpr (K == SchemeKind::int32) {
          // int32 to bytes has no vector form: the sums.
          return for_layout<SchemeKind::int32, Written::sums>(t, c, step);
        } else {
          return for_layout<K, Written::bytes>(t, c, step);
        }
      });
}

}  // namespace qconv::detail::avx512_vnni
