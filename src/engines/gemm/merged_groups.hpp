// SPDX-License-Identifier: Apache-2.0
// Grouped convolution on AMX as a convolution with fewer, wider groups. AMX multiplies 64 input
// channels at a time; a layer with groups of 8, 16 or 32 channels (ResNeXt's) would leave it
// mostly idle, or fall to vpdpbusd tiles. Instead 64 / group_in groups
// are merged into one group of 64 input channels whose weights are block-diagonal: each output
// channel's weights outside its own group's block are its weight zero point, so they add
// (x − zx)·(zw − zw) = 0 and the merged problem computes exactly the grouped one. Most of the
// multiplies are then of such weights; AMX does them fast enough to be ahead anyway.
#pragma once

#include <cstdint>
#include <memory>

#include "engines/engine.hpp"

namespace qconv::detail::gemm {

// How many groups one merged group holds (1: not merged). Called for AMX plans only.
std::int64_t merged_group_factor(const Problem& problem);

// The problem with `factor` groups merged into one (fewer groups, the same tensors).
Problem merged_problem(const Problem& problem, std::int64_t factor);

// The weights of `merged` (merged_problem of `problem`): block-diagonal, the weight zero point
// outside the blocks.
CanonicalWeights merged_weights(const Problem& problem, const Problem& merged,
                                const CanonicalWeights& weights, std::int64_t factor);

// A kernel prepared for the merged problem that keeps the grouped problem's face: its packed
// form and canonical weights are the grouped problem's (files are the same as unmerged plans').
std::unique_ptr<PreparedKernel> with_merged_groups(std::unique_ptr<PreparedKernel> merged_kernel,
                                                   const Problem& problem, std::int64_t factor);

}  // namespace qconv::detail::gemm
