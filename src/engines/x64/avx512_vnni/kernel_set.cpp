// SPDX-License-Identifier: Apache-2.0
// The AVX-512 VNNI kernels as a KernelSet (built for the baseline ISA: only the table lives here).
#include "engines/x64/avx512_vnni/kernel_set.hpp"

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

// No depthwise tile: the AVX-512 engines run depthwise problems on their own kernel
// (depthwise_plan.cpp, engines.cpp), four taps per vpdpbusd.
const gemm::KernelSet& kernel_set() {
  static constexpr gemm::KernelSet kernels{
      "avx512_vnni",     "6x64 zmm vpdpbusd",  kMaxRows,      true,
      &gemm_tile_kernel, &gather_windows,      &correct_tile, &epilogue_kernel,
      nullptr,           &amx_available,       &amx_begin,    &amx_end,
      &amx_block,        &grouped_tile_kernel, true,
  };
  return kernels;
}

}  // namespace qconv::detail::avx512_vnni
