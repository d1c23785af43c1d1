// SPDX-License-Identifier: Apache-2.0
#include "core/cpu_placement.hpp"

#if defined(__linux__)
#include <sched.h>
#endif

namespace qconv::detail {

int current_cpu() {
#if defined(__linux__)
  return sched_getcpu();
#else
  return -1;
#endif
}

bool move_off_cpu(int cpu) {
#if defined(__linux__)
  cpu_set_t allowed;
  if (cpu < 0 || cpu >= CPU_SETSIZE || sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
    return false;
  }
  cpu_set_t others = allowed;
  CPU_CLR(cpu, &others);
  if (CPU_COUNT(&others) == 0 || sched_setaffinity(0, sizeof others, &others) != 0) return false;
  // The move is made by the first call (a thread is never left on a CPU it may not use); the mask
  // it had is the caller's to keep.
  (void)sched_setaffinity(0, sizeof allowed, &allowed);
  return true;
#else
  (void)cpu;
  return false;
#endif
}

}  // namespace qconv::detail
