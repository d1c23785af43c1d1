// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels at stride 2 that interleave their input columns in registers, tile by tile,
// instead of reading a column buffer (depthwise_fused_stride2_kernel in kernels.hpp): the tiles'
// accumulation order and output stage are those of depthwise_tiles.hpp.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/depthwise_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using namespace depthwise;

// Stride 2, 3 kernel columns, one group of 4 rows, a full block of 64 (kVectors 4) or 32
// (kVectors 2) lanes of a u8 input, the columns never written to a buffer
// (DepthwiseOutputs::source): a tile interleaves the 2·kTile + 1 input columns it reads in
// registers and feeds each straight to its vpdpbusd. At stride 2 every pixel has two columns of
// its own; built into a buffer, their stores and the loads back cost more than the unpacks and the
// tile's vpdpbusd together (a 32-lane block took 1.6x the time per channel of a fused 64-lane one
// through the buffer: MobileNetV2's b2.dw, 96 channels).
// kParts: each kernel column's w − zw in that many s8 parts, one vpdpbusd each.
template <SchemeKind K, bool kSaturatedLow, bool kSaturatedHigh, int kParts, int kVectors>
struct FusedStride2Tiles {
  static constexpr std::int64_t kTapBytes = 64 * kVectors;  // a tap's weights: [lanes][4 rows]
  // Its start and output stage.
  BlockTiles<K, Written::bytes, kSaturatedLow, kSaturatedHigh, 3, kParts, 2, kVectors> block;
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
  [[gnu::always_inline]] void interleave(std::int64_t column, __m512i (&q)[kVectors]) const {
    const bool inside = column >= 0 && column < in_width;
    if constexpr (kVectors == 4) {
      const auto load = [&](int i) {
        return inside && row[i] != nullptr ? _mm512_loadu_si512(row[i] + column * pixel_bytes)
                                           : fill;
      };
      interleave_rows(load(0), load(1), load(2), load(3), q);
    } else {  // 256-bit unpacks (as the buffer's), their four results paired into two vectors
      const auto load = [&](int i) {
        return inside && row[i] != nullptr
                   ? Narrow<32>::load(row[i] + column * pixel_bytes, ~std::uint32_t{0}, true)
                   : _mm512_castsi512_si256(fill);
      };
      __m256i h[4];
      interleave_narrow_rows<32>(load(0), load(1), load(2), load(3), h);
      q[0] = _mm512_inserti64x4(_mm512_castsi256_si512(h[0]), h[1], 1);
      q[1] = _mm512_inserti64x4(_mm512_castsi256_si512(h[2]), h[3], 1);
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
    // Weights [tap][lanes][4]: part k of kernel column s is tap kParts·s + k, its vector v at
    // kTapBytes·tap + 64·v.
    const std::int8_t* w = block.o.weights;
    // Column t of the tile feeds pixel p at kernel column s = t − 2p.
#pragma GCC unroll 16
    for (int t = 0; t < 2 * kTile + 1; ++t) {
      __m512i q[kVectors];
      interleave(first_column + 2 * static_cast<std::int64_t>(first) + t, q);
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        if (t < s || (t - s) % 2 != 0 || (t - s) / 2 >= kTile) continue;
        const int p = (t - s) / 2;
#pragma GCC unroll 4
        for (int v = 0; v < kVectors; ++v) {
#pragma GCC unroll 2
          for (int k = 0; k < kParts; ++k) {
            const std::int8_t* at = w + kTapBytes * (kParts * s + k) + 64 * v;
            acc[v][p] = _mm512_dpbusd_epi32(acc[v][p], q[v], _mm512_load_si512(at));
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

// The same for a full 16-lane block: one vector, tiles of 8 pixels, each sum narrowed and stored on
// its own (as VectorTiles, the buffer's kernel for such a block, which took 3.5x the time per
// channel of a fused 64-lane block at stride 2: MobileNetV2's b4.dw, 144 channels: 64 + 64 + 16).
template <SchemeKind K, int kParts, bool kSaturatedHigh>
struct FusedStride2Vector {
  const DepthwiseOutputs o;  // a copy: the byte stores may alias anything behind a reference
  const std::uint8_t* row[4];
  __m128i fill;
  std::int64_t pixel_bytes, first_column, in_width;
  __m512i start;
  Sink<K, Written::bytes, kSaturatedHigh> sink;

  explicit FusedStride2Vector(const DepthwiseOutputs& outputs)
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
    // Column t of the tile feeds pixel p at kernel column s = t − 2p; weights [tap][16 lanes][4].
    __m512i acc[kTile];
#pragma GCC unroll 8
    for (int p = 0; p < kTile; ++p) acc[p] = start;
#pragma GCC unroll 24
    for (int t = 0; t < 2 * kTile + 1; ++t) {
      const std::int64_t column = first_column + 2 * static_cast<std::int64_t>(first) + t;
      const bool inside = column >= 0 && column < in_width;
      const auto load = [&](int i) {
        return inside && row[i] != nullptr ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(
                                                 row[i] + column * pixel_bytes))
                                           : fill;
      };
      const __m512i x = interleave_rows_16(load(0), load(1), load(2), load(3));
#pragma GCC unroll 3
      for (int s = 0; s < 3; ++s) {
        if (t < s || (t - s) % 2 != 0 || (t - s) / 2 >= kTile) continue;
        const int p = (t - s) / 2;
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

template <SchemeKind K, int kParts>
void run_fused_stride2_vector(const DepthwiseOutputs& o) {
  if constexpr (K == SchemeKind::fbgemm && kEveryKernelVariant) {
    if (o.saturated_high) return for_tiles<8>(o.pixels, FusedStride2Vector<K, kParts, true>(o));
  }
  for_tiles<8>(o.pixels, FusedStride2Vector<K, kParts, false>(o));
}

// Tiles of 4 pixels (for 32 lanes, 6 or 8 measured no faster).
template <SchemeKind K, int kParts, int kVectors>
void run_fused_stride2(const DepthwiseOutputs& o) {
  constexpr int kTile = 4;
  // The output's narrowing saturates below at lo (lo is the dtype's minimum and zy ≥ 0).
  const StageView& s = *o.stage;
  if constexpr (kEveryKernelVariant) {
    if (s.zero_point >= 0 && s.lo == (o.signed_output ? -128 : 0)) {
      if constexpr (K == SchemeKind::fbgemm) {
        if (o.saturated_high) {
          return for_tiles<kTile>(o.pixels, FusedStride2Tiles<K, true, true, kParts, kVectors>(o));
        }
      }
      return for_tiles<kTile>(o.pixels, FusedStride2Tiles<K, true, false, kParts, kVectors>(o));
    }
  }
  for_tiles<kTile>(o.pixels, FusedStride2Tiles<K, false, false, kParts, kVectors>(o));
}

template <SchemeKind K>
DepthwiseOutputKernel fused_stride2_parts(int parts, int width) {
  if (width == 64) {
    if (parts == 1) return &run_fused_stride2<K, 1, 4>;
    return parts == 2 ? &run_fused_stride2<K, 2, 4> : nullptr;
  }
  if (width == 32) {
    if (parts == 1) return &run_fused_stride2<K, 1, 2>;
    return parts == 2 ? &run_fused_stride2<K, 2, 2> : nullptr;
  }
  if (width == 16) {
    if (parts == 1) return &run_fused_stride2_vector<K, 1>;
    return parts == 2 ? &run_fused_stride2_vector<K, 2> : nullptr;
  }
  return nullptr;
}

}  // namespace

DepthwiseOutputKernel depthwise_fused_stride2_kernel(SchemeKind scheme, DType output_dtype,
                                                     int parts, int width) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  switch (scheme) {
    case SchemeKind::fbgemm: return fused_stride2_parts<SchemeKind::fbgemm>(parts, width);
    case SchemeKind::qnnpack: return fused_stride2_parts<SchemeKind::qnnpack>(parts, width);
    case SchemeKind::onednn: return fused_stride2_parts<SchemeKind::onednn>(parts, width);
    case SchemeKind::onnx: return fused_stride2_parts<SchemeKind::onnx>(parts, width);
    case SchemeKind::tvm: return fused_stride2_parts<SchemeKind::tvm>(parts, width);
    case SchemeKind::tvm_f32: return fused_stride2_parts<SchemeKind::tvm_f32>(parts, width);
    case SchemeKind::tflite: return fused_stride2_parts<SchemeKind::tflite>(parts, width);
    case SchemeKind::tflite_single:
      return fused_stride2_parts<SchemeKind::tflite_single>(parts, width);
    case SchemeKind::onnxruntime: return fused_stride2_parts<SchemeKind::onnxruntime>(parts, width);
    case SchemeKind::int32: break;
  }
  return nullptr;
}

}  // namespace qconv::detail::avx512_vnni
