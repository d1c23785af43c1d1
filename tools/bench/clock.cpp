// SPDX-License-Identifier: Apache-2.0
#include "clock.hpp"

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <fstream>
#include <sstream>

namespace qconv::bench {

namespace {

// Measured clocks outside this range mean the loop was disturbed (or emulated): not trusted.
constexpr double kPlausibleMinGhz = 0.3;
constexpr double kPlausibleMaxGhz = 8.0;

#if defined(__x86_64__)
// Each iteration is 64 integer adds, each depending on the previous one: 64 cycles on any
// x86-64 core (add latency is one cycle; the loop counter runs alongside). The value added is in a
// register, not an immediate: some cores fold additions of an immediate before they execute (an
// Intel Xeon of the Emerald Rapids line ran that loop at "12 GHz", at a clock of 2.9). The best of
// a few tries discards time lost to interrupts; the time is the thread's CPU time, so that time
// spent descheduled on a busy machine does not count. This is the clock while running scalar code;
// a core may clock lower under sustained vector load.
double thread_seconds() {
  timespec now{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
  return static_cast<double>(now.tv_sec) + 1e-9 * static_cast<double>(now.tv_nsec);
}

std::optional<double> measured_ghz() {
  constexpr std::uint64_t kIterations = 1'000'000;  // 64 M cycles, about 20 ms
  double best = 0.0;
  for (int attempt = 0; attempt < 5; ++attempt) {
    std::uint64_t value = 0;
    const std::uint64_t one = 1;
    std::uint64_t remaining = kIterations;
    const double start = thread_seconds();
    asm volatile(
        "1:\n\t"
        ".rept 64\n\t"
        "addq %[one], %[value]\n\t"
        ".endr\n\t"
        "decq %[remaining]\n\t"
        "jnz 1b\n\t"
        : [value] "+r"(value), [remaining] "+r"(remaining)
        : [one] "r"(one)
        : "cc");
    const double seconds = thread_seconds() - start;
    best = std::max(best, 64.0 * static_cast<double>(kIterations) / seconds / 1e9);
  }
  if (best < kPlausibleMinGhz || best > kPlausibleMaxGhz) return std::nullopt;
  return best;
}
#else
std::optional<double> measured_ghz() { return std::nullopt; }
#endif

// The highest "cpu MHz" line of /proc/cpuinfo (Linux).
std::optional<double> cpuinfo_ghz() {
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  double best_mhz = 0.0;
  while (std::getline(cpuinfo, line)) {
    if (!line.starts_with("cpu MHz")) continue;
    const std::size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream value(line.substr(colon + 1));
    double mhz = 0.0;
    if (value >> mhz) best_mhz = std::max(best_mhz, mhz);
  }
  if (best_mhz <= 0.0) return std::nullopt;
  return best_mhz / 1000.0;
}

}  // namespace

CoreClock core_clock(std::optional<double> given_ghz) {
  if (given_ghz) return {*given_ghz, "given by --clock-ghz"};
  if (const auto ghz = measured_ghz()) return {*ghz, "measured by a dependent-add loop"};
  if (const auto ghz = cpuinfo_ghz()) return {*ghz, "read from /proc/cpuinfo (cpu MHz)"};
  return {3.0, "assumed; pass --clock-ghz to set it"};
}

}  // namespace qconv::bench
