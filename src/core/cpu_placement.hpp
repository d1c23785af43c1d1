// SPDX-License-Identifier: Apache-2.0
// Which CPU a thread runs on, and moving it off one: the pool's helpers use it so as not to share
// their caller's core (thread_pool.cpp).
#pragma once

namespace qconv::detail {

// The CPU the calling thread runs on now, or −1 where the system does not say.
int current_cpu();

// Moves the calling thread to another of the CPUs it may run on than `cpu`, then lets it run on
// all of them again (the scheduler leaves it where it now is until it has a reason to move it).
// Returns false, changing nothing, where there is no other such CPU (a thread pinned to `cpu`
// alone) or the system offers no way to do it.
bool move_off_cpu(int cpu);

}  // namespace qconv::detail
