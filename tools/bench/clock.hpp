// SPDX-License-Identifier: Apache-2.0
// The core clock the peak share is computed with, and where it came from.
#pragma once

#include <optional>
#include <string>

namespace qconv::bench {

struct CoreClock {
  double ghz = 0.0;
  std::string source;  // e.g. "measured by a dependent-add loop"
};

// The given clock when there is one; otherwise measured with a chain of dependent integer adds
// (one per cycle) on x86-64, or read from /proc/cpuinfo, or, failing all, an assumed 3.0 GHz.
CoreClock core_clock(std::optional<double> given_ghz);

}  // namespace qconv::bench
