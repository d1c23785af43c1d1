// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels for a full block of 32 channels (a layer's last, or its only one) at stride 2
// that run two stretches of the output row side by side as the 64 lanes of one block, interleaving
// their columns in registers (depthwise_stacked_kernel in kernels.hpp; FusedTiles with kStreams 2
// in depthwise_fused_tiles.hpp). A file of its own: the fused kernels' file is the engine's
// longest to compile.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_fused_tiles.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {

using depthwise::run_fused;

DepthwiseOutputKernel depthwise_stacked_kernel(SchemeKind scheme, DType output_dtype, int parts,
                                               int width, int step) {
  if (output_dtype == DType::s32 || epilogue_kernel(scheme, output_dtype) == nullptr) {
    return nullptr;
  }
  return stage_lanes::for_vector_stage<DepthwiseOutputKernel>(
      scheme, output_dtype, [&]<SchemeKind K, DType>() -> DepthwiseOutputKernel {
        if constexpr (K == SchemeKind::int32) {
          return nullptr;
        } else {
          if (width != 32 || step != 2) return nullptr;
          if (parts == 1) return &run_fused<K, 1, 2, 3, 1, 2>;
          return parts == 2 ? &run_fused<K, 2, 2, 3, 1, 2> : nullptr;
        }
      });
}

}  // namespace qconv::detail::avx512_vnni
