// SPDX-License-Identifier: Apache-2.0
// Depthwise layers (multiplier 1, dilation 1) whose input and output are both NCHW, run on the
// planes themselves with pixels in lanes (KernelSet::nchw_depthwise_row): each channel's input
// plane is copied with its padding (the input zero point) into a worker's scratch, then each
// output row is one kernel call, straight into the output plane. The channels-in-lanes tiles
// instead needed the input transposed to NHWC before and the output back after (a fifth to a half
// of a MobileNet 3x3 layer's time, the most at stride 2, whose input is four times its output).
#pragma once

#include <cstdint>
#include <memory>

#include "core/aligned.hpp"
#include "engines/engine.hpp"
#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::gemm {

class NchwDepthwisePlan {
 public:
  // The plan for `problem`, or null where it does not take it: not a depthwise convolution of
  // multiplier 1 with NCHW input and output, a transposed one, a dilation, a kernel wider than
  // kMaxKernelWidth, output rows of fewer than 28 pixels (the transposes measured faster), or no
  // kernel in `kernels` for its stride and output (s32 outputs, strides other than 1 and 2).
  static std::unique_ptr<NchwDepthwisePlan> make(const Problem& problem,
                                                 const CanonicalWeights& weights,
                                                 const KernelSet& kernels);

  // One call: the input as its RunContext gives it (s8 flipped here).
  void run(const RunContext& ctx, const StageView& stage) const;

  // Kernel columns at most: a pair of taps reads 16 bytes from its first (stride 2: pixel i's
  // bytes 2i and 2i + 1), so the padded rows' 64 bytes of slack cover every read.
  static constexpr std::int64_t kMaxKernelWidth = 8;

 private:
  NchwDepthwisePlan() = default;

  NchwDepthwiseKernel kernel_ = nullptr;
  std::int64_t channels_ = 0, in_h_ = 0, in_w_ = 0, out_h_ = 0, out_w_ = 0;
  std::int64_t kernel_h_ = 0, pairs_ = 0, stride_h_ = 0;
  std::int64_t pad_top_ = 0, pad_left_ = 0;
  std::int64_t padded_h_ = 0, padded_w_ = 0;  // a padded plane's rows and bytes per row
  bool flip_ = false;                         // an s8 input, read as u8 (x + 128)
  AlignedVector<std::int32_t> weights_;       // [channel][kernel_h][pairs] s16 pairs
  AlignedVector<std::int32_t> weight_sums_;   // Σ(w − zw) per channel
};

}  // namespace qconv::detail::gemm
