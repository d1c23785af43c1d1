// SPDX-License-Identifier: Apache-2.0
// How many times a layer is run and how its time is summarised.
#pragma once

#include <functional>
#include <utility>

#include "options.hpp"

namespace qconv::bench {

// Timed runs continue until there are at least min_runs of them and they add up to at least
// min_time_ms, but stop at max_runs.
struct RepeatPolicy {
  int min_runs = 1;
  double min_time_ms = 500.0;
  int max_runs = 1000;
};

// --repeat N alone: exactly N runs. --min-time-ms T alone: at least one run and T ms. Both: at
// least N runs and T ms. Neither: at least one run and 500 ms, so that a slow engine (a layer
// over half a second) is timed once and a whole network still finishes in minutes.
RepeatPolicy repeat_policy(const Options& options);

struct Timing {
  double median_ms = 0.0;
  int runs = 0;
  double min_ms = 0.0;
  double stddev_ms = 0.0;  // of the timed runs (a noisy machine shows here)
};

// One untimed warm-up run, then timed runs as the policy says; the median of the timed runs.
Timing time_runs(const std::function<void()>& run, const RepeatPolicy& policy);

// Two workloads timed side by side in alternating rounds, so that a change of machine load hits
// both alike: each round runs `a` then `b` for a turn of about a millisecond each, after a pause
// and an untimed warm-up run, until both meet the policy. The pause is for the other side's helper
// threads to stop spinning: oneDNN's OpenMP threads (libgomp) spin for milliseconds after a
// parallel region, and one still spinning takes a core from the next turn's second thread. With
// more than one thread, the pause is 30 ms, the warm-up lasts 5 ms (an idle core of a virtual
// machine can take milliseconds to wake) and a turn 10 ms; with one, 3 ms, one run and 1 ms.
std::pair<Timing, Timing> time_alternating(const std::function<void()>& a,
                                           const std::function<void()>& b,
                                           const RepeatPolicy& policy, int threads);

}  // namespace qconv::bench
