// SPDX-License-Identifier: Apache-2.0
// One layer through the bench: prepare, time, verify.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "layer_table.hpp"
#include "options.hpp"
#include "timing.hpp"

namespace qconv::bench {

struct LayerResult {
  const LayerRow* row = nullptr;
  std::string engine;       // Plan::engine()
  std::string description;  // Plan::describe(): the engine, why it was chosen, the problem
  std::string problem;      // benchdnn_problem()
  std::string layout;       // qconv's activation layout: "nhwc" or "nchw"
  std::int64_t macs = 0;    // at the bench's batch size
  Timing timing;
  double prepare_ms = 0.0;  // Plan::prepare: checks, packing, constants
  // The peer, when one ran: its time, its creation + first run, what it ran.
  std::optional<Timing> peer_timing;
  double peer_prepare_ms = 0.0;
  std::string peer_implementation;
  std::string peer_problem;
  std::string verified;  // "exact", "exact@HxW" (verified at a reduced input size) or "off"
  // Peak resident memory of the whole network this layer belongs to (set once it has run).
  std::optional<std::int64_t> network_peak_rss_kib;
};

int resolve_threads(int threads);  // 0 = all hardware threads

// Prepares the layer's plan with the requested engine, times it, and (unless disabled) verifies
// its output against the reference engine; throws VerificationFailure on a difference.
LayerResult run_layer(const LayerRow& row, const Options& options, const RepeatPolicy& policy);

}  // namespace qconv::bench
