// SPDX-License-Identifier: Apache-2.0
// First layers (up to 4 input channels, a k x k window: ResNet's 7x7/s2, MobileNet's 3x3/s2) on
// AMX without gathering each pixel's window (im2col). The input is copied once per call with R
// consecutive padded rows interleaved per pixel, channels padded to 4: group g holds padded rows
// g·stride_h .. g·stride_h + R − 1, position x their pixels at padded column x, R·4 bytes. A
// kernel row group's window of output pixel x is then Q consecutive positions, one contiguous run
// of Q·R·4 bytes (32, or a multiple of 64), and consecutive output pixels' runs are stride_w·R·4
// bytes apart: an AMX block loads them as tile rows at that stride, overlapping.
//
// That copy is the input of an ordinary convolution (the "interleaved problem"): R·4 channels,
// kernel ceil(kh / R) x Q, stride 1 x stride_w, row dilation R / stride_h, no padding, which the
// GEMM planner runs with each kernel row as one run (gemm_engine.cpp: row runs). Its weights are
// the layer's, each output channel's weight zero point where a tap is not one of the layer's (the
// padded channel, the rows and columns past the kernel): those add (x − zx)·(zw − zw) = 0
// whatever the copy holds there, so zero points, window sums and the accumulator bound are the
// layer's, exactly.
#pragma once

#include <cstdint>
#include <memory>

#include "engines/engine.hpp"
#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::gemm {

// The interleaving chosen for a problem.
struct RowInterleaving {
  std::int64_t rows = 0;           // R: padded input rows per group; 0 when the path does not apply
  std::int64_t run_positions = 0;  // Q: positions per kernel row group's run
  std::int64_t row_groups = 0;     // kernel row groups: ceil(kh / R)
};

// The interleaving for a problem run on AMX blocks, or rows = 0 where the im2col path is the
// better one or the only one (more than 4 channels, groups, dilation, transposed...).
RowInterleaving row_interleaving(const Problem& problem);

// The interleaved problem and its weights (see above).
Problem interleaved_problem(const Problem& problem, const RowInterleaving& interleaving,
                            bool u8_input);
CanonicalWeights interleaved_weights(const Problem& problem, const Problem& interleaved,
                                     const RowInterleaving& interleaving,
                                     const CanonicalWeights& weights);

// A kernel prepared for the interleaved problem that keeps the layer's face: it makes the copy
// (through the kernel set's interleave_rows) and runs `inner` on it; its packed form and canonical
// weights are the layer's.
std::unique_ptr<PreparedKernel> with_interleaved_rows(
    std::unique_ptr<PreparedKernel> inner, const Problem& problem, const Problem& interleaved,
    const RowInterleaving& interleaving, const CanonicalWeights& weights, const KernelSet& kernels);

}  // namespace qconv::detail::gemm
