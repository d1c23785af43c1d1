// SPDX-License-Identifier: Apache-2.0
// The AVX-512 VNNI (and AMX) kernels as the GEMM planner takes them.
#pragma once

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::avx512_vnni {

// 6x64 zmm vpdpbusd tiles, AMX blocks, depthwise, the output stage in 16 lanes.
const gemm::KernelSet& kernel_set();

}  // namespace qconv::detail::avx512_vnni
