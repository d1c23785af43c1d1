// SPDX-License-Identifier: Apache-2.0
// Output-stage arrays a kernel derives per call (its lanes' order of the per-channel constants),
// kept in the calling thread's scratch from one call to the next while the kernel and the stage
// stay the same.
#pragma once

#include <cstddef>
#include <cstdint>

#include "engines/gemm/activation_copies.hpp"
#include "engines/gemm/stage_view.hpp"
#include "output/output_stage.hpp"

namespace qconv::detail::gemm {

// The thread_scratch slots that hold such arrays, one kind of kernel each.
enum class StageSlot { grouped_lanes = 7, depthwise_blocks = 8 };

// What the calling thread's scratch slot holds: the arrays `kernel` (a serial from
// new_stage_deriver()) derived there from the output stage `stage` (OutputStage::serial), at
// `storage`, and the view of them.
struct DerivedStage {
  std::uint64_t kernel = 0;  // 0: nothing
  std::uint64_t stage = 0;
  const std::uint8_t* storage = nullptr;
  StageView view{};
};
DerivedStage& derived_stage(StageSlot slot);
// A serial for a kernel that keeps its stage arrays (never 0, never the same twice).
std::uint64_t new_stage_deriver();

// The view of the `bytes` of arrays derive(storage, view) writes into `slot` for `kernel` from
// `stage`, derived only where the slot holds anything else: derived again each call, their cache
// lines were written on the calling core and read on a helper's every time (two threads:
// MobileNetV2's 14x14 depthwise layers 7.3 -> 5.7 us).
template <class Derive>  // void(std::uint8_t* storage, StageView& view)
const StageView& kept_stage(StageSlot slot, std::uint64_t kernel, const OutputStage& stage,
                            std::size_t bytes, const Derive& derive) {
  std::uint8_t* storage = thread_scratch(bytes, static_cast<int>(slot));
  DerivedStage& held = derived_stage(slot);
  if (held.kernel != kernel || held.stage != stage.serial() || held.storage != storage) {
    held.kernel = 0;  // nothing valid while the arrays are rewritten
    derive(storage, held.view);
    held = {kernel, stage.serial(), storage, held.view};
  }
  return held.view;
}

}  // namespace qconv::detail::gemm
