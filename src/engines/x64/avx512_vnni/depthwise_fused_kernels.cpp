// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels at stride 1 and 2 that interleave their input columns in registers, tile by
// tile, instead of reading a column buffer (depthwise_fused_kernel in kernels.hpp): the tiles'
// accumulation order and output stage are those of depthwise_tiles.hpp.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_fused_tiles.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using namespace depthwise;

// The same for a full 16-lane block: one vector, tiles of 8 pixels, each sum narrowed and stored on
// its own (as VectorTiles, the buffer's kernel for such a block, which took 3.5x the time per
// channel of a fused 64-lane block at stride 2: MobileNetV2's b4.dw, 144 channels: 64 + 64 + 16).
template <SchemeKind K, int kParts, bool kSaturatedHigh, int kStep>
struct FusedVector {
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  const std::uint8_t* row[4];
  __m128i fill;
  std::int64_t pixel_bytes, first_column, in_width;
  __m512i start;
  Sink<K, Written::bytes, kSaturatedHigh> sink;

  explicit FusedVector(const DepthwiseOutputs& outputs)
      : o(outputs),
        fill(_mm_set1_epi8(static_cast<char>(outputs.source->zero_point))),
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
      const auto load = [&](int i) {
        return inside && row[i] != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                                 row[i] + column * pixel_bytes))
                                           : fill;
      };
      const __m512i x = interleave_rows_16(load(0), load(1), load(2), load(3));
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

template <SchemeKind K, int kParts, int kStep>
void run_fused_vector(const DepthwiseOutputs& o) {
  if constexpr (K == SchemeKind::fbgemm && kEveryKernelVariant) {
    if (o.saturated_high) return for_tiles<8>(o.pixels, FusedVector<K, kParts, true, kStep>(o));
  }
  for_tiles<8>(o.pixels, FusedVector<K, kParts, false, kStep>(o));
}

template <SchemeKind K, int kParts, int kStep>
DepthwiseOutputKernel fused_for_width(int width) {
  if (width == 64) return &run_fused<K, kParts, kStep>;
  // 32 lanes: depthwise_stacked_kernel at stride 2; at stride 1 they read the buffer (fused, with
  // tiles of 4 or 8 pixels, they took 1.2-1.3x the time: MobileNetV2's b1.dw).
  return width == 16 ? &run_fused_vector<K, kParts, kStep> : nullptr;
}

template <SchemeKind K>
DepthwiseOutputKernel fused_kernel(int parts, int width, int step, int columns) {
  // 5 columns (5x5: two groups of rows) on full 64-lane blocks, at stride 1 one part only (as 3
  // columns); the rest read the buffer.
  if (columns == 5) {
    if (width != 64) return nullptr;
    if (step == 1) return parts == 1 ? &run_fused<K, 1, 1, 5, 2> : nullptr;
    if (step != 2) return nullptr;
    if (parts == 1) return &run_fused<K, 1, 2, 5, 2>;
    return parts == 2 ? &run_fused<K, 2, 2, 5, 2> : nullptr;
  }
  if (columns != 3) return nullptr;
  if (step == 2) {
    if (parts == 1) return fused_for_width<K, 1, 2>(width);
    return parts == 2 ? fused_for_width<K, 2, 2>(width) : nullptr;
  }
  // At stride 1, w − zw in two parts reads the buffer: fused, MobileNetV2's stride-1 layers took
  // 9-18 % longer (twice the vpdpbusd leave no port idle for the unpacks).
  if (step == 1 && parts == 1) return fused_for_width<K, 1, 1>(width);
  return nullptr;
}

}  // namespace

DepthwiseOutputKernel depthwise_fused_kernel(SchemeKind scheme, DType output_dtype, int parts,
                                             int width, int step, int columns) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  switch (scheme) {
    case SchemeKind::fbgemm: return fused_kernel<SchemeKind::fbgemm>(parts, width, step, columns);
    case SchemeKind::qnnpack: return fused_kernel<SchemeKind::qnnpack>(parts, width, step, columns);
    case SchemeKind::onednn: return fused_kernel<SchemeKind::onednn>(parts, width, step, columns);
    case SchemeKind::onnx: return fused_kernel<SchemeKind::onnx>(parts, width, step, columns);
    case SchemeKind::tvm: return fused_kernel<SchemeKind::tvm>(parts, width, step, columns);
    case SchemeKind::tvm_f32: return fused_kernel<SchemeKind::tvm_f32>(parts, width, step, columns);
    case SchemeKind::tflite: return fused_kernel<SchemeKind::tflite>(parts, width, step, columns);
    case SchemeKind::tflite_single:
      return fused_kernel<SchemeKind::tflite_single>(parts, width, step, columns);
    case SchemeKind::onnxruntime:
      return fused_kernel<SchemeKind::onnxruntime>(parts, width, step, columns);
    case SchemeKind::int32: break;
  }
  return nullptr;
}

}  // namespace qconv::detail::avx512_vnni
