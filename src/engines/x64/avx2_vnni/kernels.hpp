// SPDX-License-Identifier: Apache-2.0
// The avx2_vnni micro-kernels (256-bit vpdpbusd of AVX-VNNI), behind the plain-C interface of
// gemm/kernel_set.hpp; the gather and the 8-lane output stage are the avx2 engine's
// (avx2/kernels.hpp), which need nothing beyond AVX2.
#pragma once

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::avx2_vnni {

// Output pixels per register tile: 6 rows x 2 vectors = 12 accumulators of 16.
inline constexpr int kMaxRows = 6;

gemm::GemmTileKernel gemm_tile_kernel(int rows, int vectors);

// The kernel set (kernel_set.cpp, baseline ISA).
const gemm::KernelSet& kernel_set();

}  // namespace qconv::detail::avx2_vnni
