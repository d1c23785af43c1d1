// SPDX-License-Identifier: Apache-2.0
// The avx2 kernels as a KernelSet (built for the baseline ISA: only the table lives here).
#include "engines/x64/avx2/kernels.hpp"

namespace qconv::detail::avx2 {

const gemm::KernelSet& kernel_set() {
  static constexpr gemm::KernelSet kernels{
      .name = "avx2",
      .tile = "4x16 ymm vpmaddwd, exact",
      .max_rows = kMaxRows,
      .u8_input = true,
      .gemm_tile = &gemm_tile_kernel,
      .gather_windows = &gather_windows,
      .correct_tile = &correct_tile,
      .epilogue = &epilogue_kernel,
      .weight_widening = 2,
      .widen_weights = &widen_weights,
      .narrow_weights = &narrow_weights,
      .input_widening = 2,
      .grouped_widening = &grouped_widening,
      .depthwise_tile = &depthwise_tile,
      .depthwise_output_tile = &depthwise_output_tile,
      .depthwise_output_rows = gemm::kMaxDepthwiseOutputRows,
      .amx_available = nullptr,
      .amx_begin = nullptr,
      .amx_end = nullptr,
      .amx_block = nullptr,
      .grouped_tile = &grouped_tile_kernel,
      .takes_tap_row_offsets = false,
      .sum_pixels = &sum_pixels,
      .flat_run = &flat_run_kernel,
      .nchw_flat_run = &nchw_flat_run_kernel,
      .nchw_depthwise_row = &nchw_depthwise_row_kernel,
  };
  return kernels;
}

}  // namespace qconv::detail::avx2
