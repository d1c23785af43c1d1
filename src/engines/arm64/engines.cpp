// SPDX-License-Identifier: Apache-2.0
// The ARM64 engines: the GEMM planner (src/engines/gemm) on the NEON kernels (kernels.hpp). Built
// for the baseline ISA (ARMv8.0, which always has NEON): only the tables live here.
#include "engines/arm64/kernels.hpp"
#include "engines/engine.hpp"
#include "engines/gemm/gemm_engine.hpp"

namespace qconv::detail {
namespace {

// Both take an s8 input (a u8 one is read from a copy as x − 128: kernels.hpp), and share the
// depthwise tile, the im2col gather and the output stage; they differ in the GEMM tile. Neither
// has AMX blocks; both have grouped tiles (groups narrower than 16 channels sharing a panel).
constexpr gemm::KernelSet kNeonDotKernels{
    .name = "neon_dot",
    .tile = "4x16c4 sdot (4 rows x 16 channels per sub-panel)",
    .max_rows = arm64::kMaxRows,
    .u8_input = false,
    .gemm_tile = &arm64::neon_dot::gemm_tile_kernel,
    .gather_windows = &arm64::neon::gather_windows,
    .correct_tile = &arm64::neon::correct_tile,
    .epilogue = &arm64::neon::epilogue_kernel,
    .depthwise_tile = &arm64::neon::depthwise_tile,
    .amx_available = nullptr,
    .amx_begin = nullptr,
    .amx_end = nullptr,
    .amx_block = nullptr,
    .grouped_tile = &arm64::neon_dot::grouped_tile_kernel,
};

constexpr gemm::KernelSet kNeonKernels{
    .name = "neon",
    .tile = "4x16 smull/sadalp (2 rows at a time)",
    .max_rows = arm64::kMaxRows,
    .u8_input = false,
    .gemm_tile = &arm64::neon::gemm_tile_kernel,
    .gather_windows = &arm64::neon::gather_windows,
    .correct_tile = &arm64::neon::correct_tile,
    .epilogue = &arm64::neon::epilogue_kernel,
    .depthwise_tile = &arm64::neon::depthwise_tile,
    .amx_available = nullptr,
    .amx_begin = nullptr,
    .amx_end = nullptr,
    .amx_block = nullptr,
    .grouped_tile = &arm64::neon::grouped_tile_kernel,
};

}  // namespace

const Engine& neon_dot_engine() {
  static const auto engine =
      gemm::make_engine("neon_dot", kNeon | kNeonDot, kNeonDotKernels, false);
  return *engine;
}

const Engine& neon_engine() {
  static const auto engine = gemm::make_engine("neon", kNeon, kNeonKernels, false);
  return *engine;
}

}  // namespace qconv::detail
