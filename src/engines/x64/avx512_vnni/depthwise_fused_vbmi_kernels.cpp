// SPDX-License-Identifier: Apache-2.0
// The 16-lane fused depthwise kernel (depthwise_fused_vector.hpp) with its columns interleaved by
// AVX-512 VBMI's two-table byte permute (InterleaveRows16Vbmi). Built with AVX-512 and VBMI flags,
// called only on a CPU that has both (depthwise_fused_vector_vbmi_kernel in kernels.hpp); no other
// kernel lives here, so none can pick up a VBMI instruction by accident.
#include "engines/gemm/vector_stage_dispatch.hpp"
#include "engines/x64/avx512_vnni/depthwise_fused_vector.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using depthwise::run_fused_vector;

// The kernel for w − zw in `parts` (1 or 2) s8 parts at stride `step` (1 or 2), or null.
template <SchemeKind K, bool kFlip>
DepthwiseOutputKernel fused_vector_kernel(int parts, int step) {
  if (parts == 1) {
    if (step == 1) return &run_fused_vector<K, 1, 1, InterleaveRows16Vbmi, kFlip>;
    if (step == 2) return &run_fused_vector<K, 1, 2, InterleaveRows16Vbmi, kFlip>;
  } else if (parts == 2) {
    if (step == 1) return &run_fused_vector<K, 2, 1, InterleaveRows16Vbmi, kFlip>;
    if (step == 2) return &run_fused_vector<K, 2, 2, InterleaveRows16Vbmi, kFlip>;
  }
  return nullptr;
}

}  // namespace

DepthwiseOutputKernel depthwise_fused_vector_vbmi_kernel(SchemeKind scheme, int parts, int step,
                                                         bool flip) {
  return gemm::for_scheme<DepthwiseOutputKernel>(
      scheme, [&]<SchemeKind K>() -> DepthwiseOutputKernel {
        if constexpr (K == SchemeKind::int32) {
          return nullptr;  // int32 to bytes has no vector form
        } else {
          return depthwise::for_input_sign(
              flip, [&]<bool kFlip>() { return fused_vector_kernel<K, kFlip>(parts, step); });
        }
      });
}

}  // namespace qconv::detail::avx512_vnni
