// SPDX-License-Identifier: Apache-2.0
// The 16-lane fused depthwise kernel (depthwise_fused_vector.hpp) with its columns interleaved by
// AVX-512 VBMI's two-table byte permute (InterleaveRows16Vbmi). Built with AVX-512 and VBMI flags,
// called only on a CPU that has both (depthwise_fused_vector_vbmi_kernel in kernels.hpp); no other
// kernel lives here, so none can pick up a VBMI instruction by accident.
#include "engines/x64/avx512_vnni/depthwise_fused_vector.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

DepthwiseOutputKernel depthwise_fused_vector_vbmi_kernel(SchemeKind scheme, int parts, int step) {
  return depthwise::fused_vector_kernel<InterleaveRows16Vbmi>(scheme, parts, step);
}

}  // namespace qconv::detail::avx512_vnni
