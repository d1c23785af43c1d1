// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/derived_stage.hpp"

#include <atomic>

namespace qconv::detail::gemm {

DerivedStage& derived_stage(StageSlot slot) {
  thread_local DerivedStage held[2];
  return held[slot == StageSlot::grouped_lanes ? 0 : 1];
}

std::uint64_t new_stage_deriver() {
  static std::atomic<std::uint64_t> made{0};
  return made.fetch_add(1, std::memory_order_relaxed) + 1;
}

}  // namespace qconv::detail::gemm
