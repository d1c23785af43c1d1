// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels at stride 1 and 2 that interleave their input columns in registers, tile by
// tile, instead of reading a column buffer (depthwise_fused_kernel in kernels.hpp): the tiles'
// accumulation order and output stage are those of depthwise_tiles.hpp.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_fused_tiles.hpp"
#include "engines/x64/avx512_vnni/depthwise_fused_vector.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using namespace depthwise;

template <SchemeKind K, bool kFlip, int kParts, int kStep>
DepthwiseOutputKernel fused_for_width(int width, bool vbmi) {
  if (width == 64) return &run_fused<K, kFlip, kParts, 4, kStep>;
  if (width == 16) {
    return vbmi ? depthwise_fused_vector_vbmi_kernel(K, kParts, kStep, kFlip)
                : &run_fused_vector<K, kParts, kStep, InterleaveRows16, kFlip>;
  }
  // At stride 1 a 32-lane block reads the buffer: fused, with tiles of 4 or 8 pixels, it took
  // 1.2-1.3x the time (MobileNetV2's b1.dw); with VBMI's permutes, as long.
  if constexpr (kStep == 2) {
    if (width != 32) return nullptr;
    // With VBMI the columns interleaved by byte permutes (4 shuffles a column, not 10): b2.dw (96
    // channels at 112x112: 64 + 32) 41.2 -> 38.9 us on an AMD Zen 5, 32 channels alone 14.9 ->
    // 12.9.
    if (vbmi) return depthwise_fused_32_vbmi_kernel(K, kParts, kStep, kFlip);
    return &run_fused<K, kFlip, kParts, 2, kStep>;
  }
  return nullptr;
}

template <SchemeKind K, bool kFlip>
DepthwiseOutputKernel fused_kernel(int parts, int width, int step, int columns, bool vbmi,
                                   DepthwiseSplit split) {
  if (split != DepthwiseSplit::parts) {
    if (parts != 1 || width != 64 || columns != 3) return nullptr;
    if (split == DepthwiseSplit::column_sums) {
      if (step == 1) return &run_fused<K, kFlip, 1, 4, 1, 3, 1, DepthwiseSplit::column_sums>;
      if (step == 2) return &run_fused<K, kFlip, 1, 4, 2, 3, 1, DepthwiseSplit::column_sums>;
      return nullptr;
    }
    if (step == 1) return &run_fused<K, kFlip, 1, 4, 1, 3, 1, DepthwiseSplit::duplicated_row>;
    if (step == 2) return &run_fused<K, kFlip, 1, 4, 2, 3, 1, DepthwiseSplit::duplicated_row>;
    return nullptr;
  }
  // 5 columns (5x5: two groups of rows) on full 64-lane blocks, at stride 1 one part only (as 3
  // columns); the rest read the buffer.
  if (columns == 5) {
    if (width != 64) return nullptr;
    if (step == 1) return parts == 1 ? &run_fused<K, kFlip, 1, 4, 1, 5, 2> : nullptr;
    if (step != 2) return nullptr;
    if (parts == 1) return &run_fused<K, kFlip, 1, 4, 2, 5, 2>;
    return parts == 2 ? &run_fused<K, kFlip, 2, 4, 2, 5, 2> : nullptr;
  }
  if (columns != 3) return nullptr;
  if (step == 2) {
    if (parts == 1) return fused_for_width<K, kFlip, 1, 2>(width, vbmi);
    return parts == 2 ? fused_for_width<K, kFlip, 2, 2>(width, vbmi) : nullptr;
  }
  // At stride 1, w − zw in two parts reads the buffer: fused, MobileNetV2's stride-1 layers took
  // 9-18 % longer (twice the vpdpbusd leave no port idle for the unpacks).
  if (step == 1 && parts == 1) return fused_for_width<K, kFlip, 1, 1>(width, vbmi);
  return nullptr;
}

}  // namespace

DepthwiseOutputKernel depthwise_fused_kernel(SchemeKind scheme, DType output_dtype, int parts,
                                             int width, int step, int columns, bool flip, bool vbmi,
                                             DepthwiseSplit split) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  return for_scheme_and_sign(scheme, flip, [&]<SchemeKind K, bool kFlip>() {
    return fused_kernel<K, kFlip>(parts, width, step, columns, vbmi, split);
  });
}

}  // namespace qconv::detail::avx512_vnni
