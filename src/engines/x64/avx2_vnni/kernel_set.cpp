// SPDX-License-Identifier: Apache-2.0
// The avx2_vnni kernels as a KernelSet (built for the baseline ISA: only the table lives here):
// its own GEMM tiles; the gather, depthwise tile and 8-lane output stage of the avx2 set.
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2_vnni/kernels.hpp"

namespace qconv::detail::avx2_vnni {

const gemm::KernelSet& kernel_set() {
  static constexpr gemm::KernelSet kernels{
      .name = "avx2_vnni",
      .tile = "6x16 ymm vpdpbusd",
      .max_rows = kMaxRows,
      .u8_input = true,
      .gemm_tile = &gemm_tile_kernel,
      .gather_windows = &avx2::gather_windows,
      .correct_tile = &avx2::correct_tile,
      .epilogue = &avx2::epilogue_kernel,
      .weight_widening = 1,
      .widen_weights = nullptr,
      .narrow_weights = nullptr,
      .input_widening = 1,
      .depthwise_tile = &avx2::depthwise_tile,
      .depthwise_output_tile = &avx2::depthwise_output_tile,
      .depthwise_output_rows = gemm::kMaxDepthwiseOutputRows,
      .amx_available = nullptr,
      .amx_begin = nullptr,
      .amx_end = nullptr,
      .amx_block = nullptr,
      .grouped_tile = nullptr,
      .takes_tap_row_offsets = false,
  };
  return kernels;
}

}  // namespace qconv::detail::avx2_vnni
