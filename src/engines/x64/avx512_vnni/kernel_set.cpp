// SPDX-License-Identifier: Apache-2.0
// The AVX-512 VNNI kernels as a KernelSet (built for the baseline ISA: only the table lives here).
#include "engines/x64/avx512_vnni/kernel_set.hpp"

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

// No depthwise tile: the AVX-512 engines run depthwise problems on their own kernel
// (depthwise_plan.cpp, engines.cpp), four taps per vpdpbusd.
const gemm::KernelSet& kernel_set() {
  static constexpr gemm::KernelSet kernels{
      .name = "avx512_vnni",
      .tile = "6x64 zmm vpdpbusd",
      .max_rows = kMaxRows,
      .u8_input = true,
      .gemm_tile = &gemm_tile_kernel,
      .gather_windows = &gather_windows,
      .correct_tile = &correct_tile,
      .epilogue = &epilogue_kernel,
      .weight_widening = 1,
      .widen_weights = nullptr,
      .narrow_weights = nullptr,
      .input_widening = 1,
      .depthwise_tile = nullptr,
      .amx_available = &amx_available,
      .amx_begin = &amx_begin,
      .amx_end = &amx_end,
      .amx_block = &amx_block,
      .grouped_tile = &grouped_tile_kernel,
      .gathers_any_group_width = true,
      .in_lane_epilogue = &in_lane_epilogue_kernel,
      .in_lane_stage = &in_lane_stage,
      .in_lane_output_tile = &in_lane_output_kernel,
      .grouped_output_tile = &grouped_output_kernel,
      .gemm_output_tile = &gemm_output_kernel,
      .takes_tap_row_offsets = true,
      .sum_pixels = &sum_pixels,
      .pack_lane_block = &pack_lane_block,
      .interleave_rows = &interleave_rows,
      .flat_run = &flat_run_kernel,
      .nchw_flat_run = &nchw_flat_run_kernel,
  };
  return kernels;
}

}  // namespace qconv::detail::avx512_vnni
