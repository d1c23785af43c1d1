// SPDX-License-Identifier: Apache-2.0
// The 16- and 32-lane fused depthwise kernels (depthwise_fused_vector.hpp, depthwise_fused_tiles
// .hpp) with their columns interleaved by AVX-512 VBMI's two-table byte permute
// (InterleaveRows16Vbmi, InterleaveRows32Vbmi). Built with AVX-512 and VBMI flags, called only on a
// CPU that has both (depthwise_fused_vector_vbmi_kernel and depthwise_fused_32_vbmi_kernel in
// kernels.hpp); no other kernel lives here, so none can pick up a VBMI instruction by accident.
#include "engines/x64/avx512_vnni/depthwise_fused_tiles.hpp"
#include "engines/x64/avx512_vnni/depthwise_fused_vector.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

using depthwise::for_scheme_and_sign;
using depthwise::run_fused;
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

// The 32-lane kernel at stride 2 for `parts` (1 or 2), or null. At stride 1 a 32-lane block
// reads the column buffer: fused with these permutes, 32 channels at 112x112 took as long on an
// AMD Zen 5 (MobileNetV2's b1.dw 35.3 -> 34.8 us, another such layer 34.9 -> 35.3).
template <SchemeKind K, bool kFlip>
DepthwiseOutputKernel fused_32_kernel(int parts, int step) {
  if (step != 2) return nullptr;
  if (parts == 1)
    return &run_fused<K, kFlip, 1, 2, 2, 3, 1, DepthwiseSplit::parts, InterleaveRows32Vbmi>;
  return parts == 2
             ? &run_fused<K, kFlip, 2, 2, 2, 3, 1, DepthwiseSplit::parts, InterleaveRows32Vbmi>
             : nullptr;
}

}  // namespace

DepthwiseOutputKernel depthwise_fused_32_vbmi_kernel(SchemeKind scheme, int parts, int step,
                                                     bool flip) {
  return for_scheme_and_sign(scheme, flip, [&]<SchemeKind K, bool kFlip>() {
    return fused_32_kernel<K, kFlip>(parts, step);
  });
}

DepthwiseOutputKernel depthwise_fused_vector_vbmi_kernel(SchemeKind scheme, int parts, int step,
                                                         bool flip) {
  return for_scheme_and_sign(scheme, flip, [&]<SchemeKind K, bool kFlip>() {
    return fused_vector_kernel<K, kFlip>(parts, step);
  });
}

}  // namespace qconv::detail::avx512_vnni
