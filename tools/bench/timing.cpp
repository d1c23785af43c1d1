// SPDX-License-Identifier: Apache-2.0
#include "timing.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <vector>

namespace qconv::bench {

RepeatPolicy repeat_policy(const Options& options) {
  RepeatPolicy policy;
  if (options.repeat && !options.min_time_ms) {
    policy.min_runs = policy.max_runs = *options.repeat;
    policy.min_time_ms = 0.0;
    return policy;
  }
  if (options.repeat) policy.min_runs = *options.repeat;
  if (options.min_time_ms) policy.min_time_ms = *options.min_time_ms;
  policy.max_runs = std::max(policy.max_runs, policy.min_runs);
  return policy;
}

namespace {

Timing median_of(std::vector<double> times_ms) {
  std::sort(times_ms.begin(), times_ms.end());
  const std::size_t n = times_ms.size();
  if (n == 0) return {};
  const double median = n % 2 ? times_ms[n / 2] : (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2;
  double mean = 0.0;
  for (double t : times_ms) mean += t / static_cast<double>(n);
  double variance = 0.0;
  for (double t : times_ms) variance += (t - mean) * (t - mean) / static_cast<double>(n);
  return {median, static_cast<int>(n), times_ms.front(), std::sqrt(variance)};
}

}  // namespace

std::pair<Timing, Timing> time_alternating(const std::function<void()>& a,
                                           const std::function<void()>& b,
                                           const RepeatPolicy& policy, int threads) {
  using Clock = std::chrono::steady_clock;
  const double turn_ms = threads > 1 ? 10.0 : 1.0;
  const auto pause = std::chrono::milliseconds(threads > 1 ? 30 : 3);
  std::vector<double> times[2];
  double totals[2] = {0.0, 0.0};
  const std::function<void()>* runs[2] = {&a, &b};
  const auto satisfied = [&](int i) {
    const int n = static_cast<int>(times[i].size());
    return n >= policy.max_runs || (n >= policy.min_runs && totals[i] >= policy.min_time_ms);
  };
  while (!satisfied(0) || !satisfied(1)) {
    for (int i = 0; i < 2; ++i) {
      if (satisfied(i)) continue;
      // Between turns, time for the other side's helper threads to stop spinning (oneDNN's
      // OpenMP threads and qconv's pool both spin a while before sleeping): a spinning thread
      // would take a core from this turn's second thread.
      std::this_thread::sleep_for(pause);
      // Untimed warm-up: one run, and with more threads runs for half a turn: after the pause,
      // the other cores are idle, and a virtual machine's idle core can take milliseconds to wake.
      const auto warm_until =
          Clock::now() + std::chrono::duration<double, std::milli>(threads > 1 ? turn_ms / 2 : 0.0);
      do {
        (*runs[i])();
      } while (Clock::now() < warm_until);
      double turn = 0.0;
      do {
        const auto start = Clock::now();
        (*runs[i])();
        const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
        times[i].push_back(ms);
        totals[i] += ms;
        turn += ms;
      } while (turn < turn_ms && !satisfied(i));
    }
  }
  return {median_of(times[0]), median_of(times[1])};
}

Timing time_runs(const std::function<void()>& run, const RepeatPolicy& policy) {
  using Clock = std::chrono::steady_clock;
  run();  // warm-up: page faults, caches, lazily built state
  std::vector<double> times_ms;
  double total_ms = 0.0;
  while (static_cast<int>(times_ms.size()) < policy.max_runs &&
         (static_cast<int>(times_ms.size()) < policy.min_runs || total_ms < policy.min_time_ms)) {
    const auto start = Clock::now();
    run();
    const double ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
    times_ms.push_back(ms);
    total_ms += ms;
  }
  return median_of(std::move(times_ms));
}

}  // namespace qconv::bench
