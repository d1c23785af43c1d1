// SPDX-License-Identifier: Apache-2.0
// The fused stride-1 3x3 depthwise kernel of full 64-lane blocks (depthwise_fused_kernels.cpp) for
// both output rows of a row pair at once. The two rows read the same 4 input rows (the upper row
// with its kernel rows in slots 0-2, the lower in 1-3), so each input column is interleaved once
// and fed to both rows' vpdpbusd, where a kernel per row interleaved it twice.
//
// Why: on Intel cores 512-bit byte unpacks issue on one port only, shared with vpdpbusd and the
// output stage's float instructions. A row's tile of 4 pixels takes 48 unpacks for its 16 output
// vectors (3 a vector, beside 3 vpdpbusd and 4-5 of the output stage); a pair's tile of 3 pixels
// takes 40 for 24 (tiles of 2, 32 for 16, measured 1-2 % slower).
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_fused_tiles.hpp"
#include "engines/x64/avx512_vnni/depthwise_fused_vector.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using namespace depthwise;

// A tile of kTile pixels of both rows: 2·4·kTile accumulators, kTile + 2 columns interleaved.
// The weights are read where they are used (memory operands): both rows' 24 vectors do not fit
// the registers beside the accumulators.
template <SchemeKind K, bool kSaturatedLow, bool kSaturatedHigh, bool kFlip>
struct FusedPairTiles {
  // The pair's rows and their interleave, with the upper row's output stage and stores.
  FusedTiles<K, kSaturatedLow, kSaturatedHigh, 1, 4, 1, 3, 1, kFlip> upper;
  // The lower row's.
  BlockTiles<K, Written::bytes, kSaturatedLow, kSaturatedHigh, 3, 1, 1, 4> lower;

  FusedPairTiles(const DepthwiseOutputs& u, const DepthwiseOutputs& l) : upper(u), lower(l) {}

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    constexpr std::int64_t kTapBytes = 256;  // a kernel column's weights: [64 lanes][4 slots]
    __m512i acc[2][4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) {
#pragma GCC unroll 4
      for (int p = 0; p < kTile; ++p) {
        acc[0][v][p] = upper.block.start[v];
        acc[1][v][p] = lower.start[v];
      }
    }
    const std::int8_t* w[2] = {upper.block.o.weights, lower.o.weights};
    // Column t of the tile feeds pixel p at kernel column s = t − p.
#pragma GCC unroll 8
    for (int t = 0; t < kTile + 2; ++t) {
      __m512i q[4];
      upper.interleave(0, upper.first_column + first + t, q);
      // The pointers laundered per column, so that GCC reads the weights where they are used
      // rather than holding them in registers from column to column.
      const std::int8_t* wt[2] = {w[0], w[1]};
      asm("" : "+r"(wt[0]), "+r"(wt[1]));
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        if (t < s || t - s >= kTile) continue;
        const int p = t - s;
#pragma GCC unroll 4
        for (int v = 0; v < 4; ++v) {
#pragma GCC unroll 2
          for (int r = 0; r < 2; ++r) {
            acc[r][v][p] = _mm512_dpbusd_epi32(acc[r][v][p], q[v],
                                               _mm512_load_si512(wt[r] + kTapBytes * s + 64 * v));
          }
        }
      }
    }
    __m512i out[4][kTile];
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) upper.block.template finish_vector<kTile>(v, acc[0][v], out);
    upper.block.template store<kTile>(out, first, valid);
#pragma GCC unroll 4
    for (int v = 0; v < 4; ++v) lower.template finish_vector<kTile>(v, acc[1][v], out);
    lower.template store<kTile>(out, first, valid);
  }
};

template <SchemeKind K, bool kFlip>
void run_fused_pair(const DepthwiseOutputs& upper, const DepthwiseOutputs& lower) {
  constexpr int kTile = 3;
  // The two rows share the call's stage, dtype and bounds.
  with_saturating_clamps<K>(upper, [&]<bool kLow, bool kHigh>() {
    for_tiles<kTile>(upper.pixels, FusedPairTiles<K, kLow, kHigh, kFlip>(upper, lower));
  });
}

}  // namespace

DepthwisePairKernel depthwise_fused_pair_kernel(SchemeKind scheme, DType output_dtype, bool flip) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  return for_scheme_and_sign<DepthwisePairKernel>(
      scheme, flip,
      [&]<SchemeKind K, bool kFlip>() -> DepthwisePairKernel { return &run_fused_pair<K, kFlip>; });
}

}  // namespace qconv::detail::avx512_vnni
