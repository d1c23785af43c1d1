#include "timing.hpp"

#include <algorithm>
#include <chrono>
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
  std::sort(times_ms.begin(), times_ms.end());
  const std::size_t n = times_ms.size();
  const double median = n % 2 ? times_ms[n / 2] : (times_ms[n / 2 - 1] + times_ms[n / 2]) / 2;
  return {median, static_cast<int>(n)};
}

}  // namespace qconv::bench
