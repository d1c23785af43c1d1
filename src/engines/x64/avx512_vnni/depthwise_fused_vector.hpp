// SPDX-License-Identifier: Apache-2.0
// The depthwise kernel for a full block of 16 lanes that interleaves its input columns in
// registers (see depthwise_fused_kernels.cpp), over a column interleave of the including file's
// choice: depthwise_fused_kernels.cpp instantiates it with unpacks and shuffles for every AVX-512
// CPU, depthwise_fused_vbmi_kernels.cpp with one VBMI byte permute for the CPUs that have it (a
// separate file, built with VBMI, so that no other kernel can pick up a VBMI instruction). Only
// for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include "engines/gemm/vector_stage_dispatch.hpp"
#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni::depthwise {

// A full 16-lane block at stride kStep (1 or 2) over 3 kernel columns and one group of 4 rows, its
// columns interleaved in registers: one vector, tiles of 8 pixels, each sum narrowed and stored on
// its own (as VectorTiles, the buffer's kernel for such a block, which took 3.5x the time per
// channel of a fused 64-lane block at stride 2: MobileNetV2's b4.dw, 144 channels: 64 + 64 + 16).
// Interleave::rows(a, b, x, y): a column's 4 rows of 16 bytes as one vector, each dword the 4 rows'
// bytes of one channel, channels in order.
// kFlip: an s8 input, flipped to u8 after the interleave (as FusedTiles in
// depthwise_fused_kernels.cpp).
template <SchemeKind K, int kParts, bool kSaturatedHigh, int kStep, class Interleave, bool kFlip>
struct FusedVector {
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  const std::uint8_t* row[4];
  __m128i fill;
  std::int64_t pixel_bytes, first_column, in_width;
  __m512i start;
  Sink<K, Written::bytes, kSaturatedHigh> sink;

  explicit FusedVector(const DepthwiseOutputs& outputs)
      : o(outputs),
        fill(_mm_set1_epi8(static_cast<char>(outputs.source->zero_point ^ (kFlip ? 0x80 : 0)))),
        pixel_bytes(outputs.source->pixel_bytes),
        first_column(outputs.source->first_column),
        in_width(outputs.source->in_width),
        start(_mm512_mullo_epi32(_mm512_set1_epi32(-outputs.zero_point),
                                 _mm512_loadu_si512(outputs.weight_sums))),
        sink(outputs, 0) {
    for (int i = 0; i < 4; ++i) row[i] = outputs.source->rows[i];
  }

  template <int kTile>
  [[gnu::always_inline]] void run(std::int32_t first, std::int32_t valid) const {
    // Column t of the tile feeds pixel p at kernel column s = t − kStep·p; weights
    // [tap][16 lanes][4].
    __m512i acc[kTile];
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) acc[p] = start;
#pragma GCC unroll 24
    for (int t = 0; t < kStep * (kTile - 1) + 3; ++t) {
      const std::int64_t column = first_column + kStep * static_cast<std::int64_t>(first) + t;
      const bool inside = column >= 0 && column < in_width;
      // Once, not per row (as FusedTiles::interleave): MobileNetV2's b4.dw (144 = 64 + 64 + 16
      // channels at 56x56, stride 2) 14.1 -> 12.9 us on an AMD Zen 5.
      const std::int64_t offset = column * pixel_bytes;
      const auto load = [&](int i) {
        return inside && row[i] != nullptr
                   ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(row[i] + offset))
                   : fill;
      };
      __m512i x = Interleave::rows(load(0), load(1), load(2), load(3));
      if constexpr (kFlip) x = _mm512_xor_si512(x, _mm512_set1_epi8(static_cast<char>(0x80)));
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        if (t < s || (t - s) % kStep != 0 || (t - s) / kStep >= kTile) continue;
        const int p = (t - s) / kStep;
#pragma GCC unroll 2
        for (int k = 0; k < kParts; ++k) {
          acc[p] =
              _mm512_dpbusd_epi32(acc[p], x, _mm512_load_si512(o.weights + 64 * (kParts * s + k)));
        }
      }
    }
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) {
      if (p < valid) sink.put(first + p, acc[p]);
    }
  }
};

// f.template operator()<kFlip>() for a u8 input (kFlip false) or an s8 one (true): the fused
// kernels' choice of flipping instantiation, made once where a plan takes its kernel. Null for an
// s8 input in builds with fewer kernel variants (kEveryKernelVariant), which leave it to the
// column buffer: the flipping set doubles the instrumented compile.
template <class R = DepthwiseOutputKernel, class F>
R for_input_sign(bool flip, const F& f) {
  if (!flip) return f.template operator()<false>();
  if constexpr (kEveryKernelVariant) {
    return f.template operator()<true>();
  } else {
    return nullptr;
  }
}

// f.template operator()<K, kFlip>() for `scheme` (every scheme but int32, which has no vector
// stage to bytes: null) and the input's sign (for_input_sign): how the fused kernels' getters
// pick their instantiation (R: the kernel pointer's type).
template <class R = DepthwiseOutputKernel, class F>
R for_scheme_and_sign(SchemeKind scheme, bool flip, const F& f) {
  return gemm::for_scheme<R>(scheme, [&]<SchemeKind K>() -> R {
    if constexpr (K == SchemeKind::int32) {
      return nullptr;  // int32 to bytes has no vector form
    } else {
      return for_input_sign<R>(flip,
                               [&]<bool kFlip>() { return f.template operator()<K, kFlip>(); });
    }
  });
}

template <SchemeKind K, int kParts, int kStep, class Interleave, bool kFlip>
void run_fused_vector(const DepthwiseOutputs& o) {
  if constexpr (K == SchemeKind::fbgemm && kEveryKernelVariant) {
    if (o.saturated_high) {
      return for_tiles<8>(o.pixels, FusedVector<K, kParts, true, kStep, Interleave, kFlip>(o));
    }
  }
  for_tiles<8>(o.pixels, FusedVector<K, kParts, false, kStep, Interleave, kFlip>(o));
}

}  // namespace qconv::detail::avx512_vnni::depthwise
