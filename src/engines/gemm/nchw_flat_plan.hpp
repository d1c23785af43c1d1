// SPDX-License-Identifier: Apache-2.0
// 1x1, stride-1, unpadded layers whose input and output are both NCHW, run with pixels in lanes
// (KernelSet::nchw_flat_run): each input channel's row and each output channel's row is contiguous
// there, so blocks of 64 pixels are read and written in place, where the NHWC tiles needed the
// input transposed before and the output after (together about as long as the layer's multiplies
// at MobileNet's sizes).
#pragma once

#include <cstdint>

#include "core/aligned.hpp"
#include "engines/engine.hpp"
#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::gemm {

class NchwFlatPlan {
 public:
  // The kernel set's kernel for `problem`, or null where this plan does not take it: not a 1x1,
  // stride-1, unpadded, ungrouped convolution with NCHW input and output; weights that are not
  // symmetric (symmetric_weights: a weight zero point needs window sums, which this plan has not);
  // an output the kernel set has no such kernel for.
  static NchwFlatKernel kernel_for(const Problem& problem, const KernelSet& kernels);

  // `shift`: every channel's weight zero point (0 for s8 weights, 128 for u8), so that the packed
  // w − shift fits s8. `input_widening`: the kernel set's (KernelSet::input_widening), the factor
  // of its kernels' scratch (NchwFlatRun::scratch).
  NchwFlatPlan(const Problem& problem, const CanonicalWeights& weights, std::int32_t shift,
               NchwFlatKernel kernel, int input_widening);

  // One call: `input_zero_point` and `flip_input` as the kernels read the input (u8: an s8 input's
  // bytes xor 0x80, its zero point + 128), zero_point_sums Σ(w − zw) per output channel (null when
  // that zero point is 0).
  void run(const RunContext& ctx, const StageView& stage, std::int32_t input_zero_point,
           bool flip_input, const std::int32_t* zero_point_sums) const;

 private:
  NchwFlatKernel kernel_;
  int input_widening_;
  std::int64_t channels_, out_channels_, pixels_;  // pixels: of one image (H·W)
  AlignedVector<std::int8_t> weights_;             // [out_channels][channels rounded up to 4]
};

}  // namespace qconv::detail::gemm
