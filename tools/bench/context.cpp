// SPDX-License-Identifier: Apache-2.0
#include "context.hpp"

#include <chrono>
#include <ctime>
#include <fstream>
#include <sstream>
#include <thread>

#include "bench_commit.inc"  // QCONV_BENCH_COMMIT, written at build time (bench_commit.cmake)
#include "qconv/plan.hpp"

namespace qconv::bench {

Context measure_context() {
  Context c;
  c.cpu = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("model name", 0) == 0 && line.find(':') != std::string::npos) {
      c.cpu = line.substr(line.find(':') + 2);
      break;
    }
  }
  c.cores = std::thread::hardware_concurrency();
  for (const EngineInfo& e : engines()) {
    if (!e.available) continue;
    if (!c.engines.empty()) c.engines += ',';
    c.engines += e.name;
  }
#if defined(__clang__)
  c.compiler = "clang " __clang_version__;
#elif defined(__GNUC__)
  c.compiler = "gcc " __VERSION__;
#else
  c.compiler = "unknown";
#endif
  c.commit = QCONV_BENCH_COMMIT;
  const std::time_t now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.date = date;
  std::ifstream loadavg("/proc/loadavg");
  if (!(loadavg >> c.load_average)) c.load_average = -1.0;
  return c;
}

std::string busy_warning(const Context& context) {
  if (context.load_average < 0.5) return {};
  std::ostringstream out;
  out << "warning: the machine is busy (load average " << context.load_average << " on "
      << context.cores << " core(s)): times are noisy; compare ratios measured side by side";
  return out.str();
}

}  // namespace qconv::bench
