// SPDX-License-Identifier: Apache-2.0
// The avx512_vnni engine's convolution of few input channels with NCHW input and output (a
// network's first layer): output planes cut into slots of pixels, pixels in lanes (DensePlanes in
// kernels.hpp, dense_plane_kernels.cpp), no transposes. It wraps the GEMM engine's kernel for the
// same problem, whose packed form it keeps (so prepared-weights files do not change). Built for the
// baseline ISA; the kernels run only on a CPU with AVX-512 VBMI.
#pragma once

#include <memory>

#include "engines/engine.hpp"

namespace qconv::detail::avx512_vnni {

// `gemm`, the GEMM engine's kernel for `problem` (prepared from `weights`), wrapped in the plane
// path where that applies: groups 1, 1 to 4 input channels, kernel rows of 3 columns or more, NCHW
// input and output, not transposed,
// a (scheme, output dtype) with a vector output stage, at most kDensePlaneInputs input planes
// times kernel-row entries, no kernel row of one output pixel spanning more than 64 input bytes,
// and a CPU with AVX-512 VBMI. Elsewhere `gemm` itself.
std::unique_ptr<PreparedKernel> with_dense_planes(const Problem& problem,
                                                  const CanonicalWeights& weights,
                                                  std::unique_ptr<PreparedKernel> gemm);

}  // namespace qconv::detail::avx512_vnni
