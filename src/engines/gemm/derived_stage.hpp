// SPDX-License-Identifier: Apache-2.0
// Output-stage arrays a kernel derives per call (its lanes' order of the per-channel constants),
// kept in the calling thread's scratch from one call to the next while the kernel and the stage
// stay the same.
#pragma once

#include <cstdint>

#include "engines/gemm/stage_view.hpp"
#include "output/output_stage.hpp"

namespace qconv::detail::gemm {

// What the calling thread's scratch slot 7 or 8 (thread_scratch) holds: the arrays `kernel` (a
// serial from new_stage_deriver()) derived there from the output stage `stage`
// (OutputStage::serial), at `storage`, and the view of them. A kernel whose call finds its own
// kernel, stage and storage there uses them as they are: derived again each call, their cache lines
// were written on the calling core and read on a helper's every time (two threads: MobileNetV2's
// 14x14 depthwise layers 7.3 -> 5.7 us). Only the slot's owner writes the slot (after which it sets
// this).
struct DerivedStage {
  std::uint64_t kernel = 0;  // 0: nothing
  std::uint64_t stage = 0;
  const std::uint8_t* storage = nullptr;
  StageView view{};

  bool holds(std::uint64_t k, const OutputStage& s, const std::uint8_t* at) const {
    return kernel == k && stage == s.serial() && storage == at;
  }
};
DerivedStage& derived_stage(int slot);
// A serial for a kernel that keeps a DerivedStage (never 0, never the same twice).
std::uint64_t new_stage_deriver();

}  // namespace qconv::detail::gemm
