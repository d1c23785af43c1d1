// SPDX-License-Identifier: Apache-2.0
// The AVX-512 engines' depthwise path (groups = C_in, C_out = m·C_in, convolution or transposed):
// its own PreparedKernel, four taps per vpdpbusd (depthwise_kernels.cpp). Built for the baseline
// ISA; the engine creates it from prepare() and unpack() for the problems it takes.
#pragma once

#include <memory>

#include "engines/engine.hpp"

namespace qconv::detail::avx512_vnni {

// Whether the depthwise kernel runs `problem`: depthwise (groups = C_in ≥ 2), at most 64 output
// phases when transposed, and per-thread scratch of a sane size. Others go to the GEMM path.
bool depthwise_takes(const Problem& problem);

std::unique_ptr<PreparedKernel> make_depthwise_kernel(const Problem& problem,
                                                      const CanonicalWeights& weights);

}  // namespace qconv::detail::avx512_vnni
