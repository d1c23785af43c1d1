// SPDX-License-Identifier: Apache-2.0
// The bench's results: a table for people, JSON records for scripts.
#pragma once

#include <cstdint>
#include <ostream>
#include <span>

#include "clock.hpp"
#include "context.hpp"
#include "peak.hpp"
#include "run_layer.hpp"

namespace qconv::bench {

struct RunSettings {
  std::int64_t batch = 1;
  int threads = 1;  // resolved: never 0
  CoreClock clock;
  PeakRate peak;  // per core, measured on this machine (peak.hpp)

  // The int8 multiply-add peak of the threads used, in ops (2 per MAC) per ns.
  double peak_gops() const { return 2.0 * peak.macs_per_cycle * clock.ghz * threads; }
};

// One line per layer and a count-weighted total per network (MACs and time multiplied by how
// often the layer occurs in the network).
void print_table(std::ostream& out, std::span<const LayerResult> results,
                 const RunSettings& settings);

// A JSON array, one record per layer: network, layer, count, macs (at this batch), batch,
// threads, engine, ms (median), runs, gops, peak_share, verified, and the peer fields (peer,
// peer_ms, peer_gops, ratio), null until a peer is measured.
// {"context": {...}, "layers": [records]}: where it was measured (context.hpp), then the records.
void write_json(std::ostream& out, std::span<const LayerResult> results,
                const RunSettings& settings, const Context& context);

}  // namespace qconv::bench
