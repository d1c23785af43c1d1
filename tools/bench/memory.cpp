// SPDX-License-Identifier: Apache-2.0
#include "memory.hpp"

#include <fstream>
#include <sstream>
#include <string>

namespace qconv::bench {

bool reset_peak_resident_memory() {
  std::ofstream clear_refs("/proc/self/clear_refs");
  clear_refs << "5\n";
  clear_refs.close();
  return static_cast<bool>(clear_refs);
}

std::optional<std::int64_t> peak_resident_memory_kib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmHWM:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::int64_t kib = 0;
    if (fields >> kib) return kib;
  }
  return std::nullopt;
}

}  // namespace qconv::bench
