// SPDX-License-Identifier: Apache-2.0
// Where a run was measured, as benchmark tools report it (Google Benchmark's "context"): the CPU,
// its cores, the engines qconv can run on it, the compiler, the commit, the date and the load —
// two runs' numbers can only be compared knowing these.
#pragma once

#include <string>

namespace qconv::bench {

struct Context {
  std::string cpu;     // "model name" of /proc/cpuinfo, or "unknown"
  unsigned cores = 0;  // hardware threads
  std::string
      engines;  // qconv's engines this process can run, e.g. "avx512_amx,avx512_vnni,reference"
  std::string compiler;        // the compiler that built the bench
  std::string commit;          // the source's commit at build time ("-dirty": changes beside it)
  std::string date;            // UTC, ISO 8601
  double load_average = -1.0;  // 1-minute load average of the machine (-1: unknown)
};

Context measure_context();

// A warning line when the machine was busy (load average above half a core), else empty.
std::string busy_warning(const Context& context);

}  // namespace qconv::bench
