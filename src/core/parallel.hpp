// Splits [0, count) into contiguous chunks run on up to `threads` threads. Each index is handled
// by exactly one call, so results never depend on the thread count.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

namespace qconv::detail {

inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

template <class Body>  // Body: void(std::int64_t begin, std::int64_t end)
void parallel_for(int threads, std::int64_t count, const Body& body) {
  const std::int64_t workers = std::min<std::int64_t>(std::max(threads, 1), count);
  if (workers <= 1) {
    if (count > 0) body(0, count);
    return;
  }
  std::vector<std::jthread> pool;
  pool.reserve(static_cast<std::size_t>(workers - 1));
  const std::int64_t chunk = (count + workers - 1) / workers;
  for (std::int64_t w = 1; w < workers; ++w) {
    const std::int64_t begin = w * chunk;
    const std::int64_t end = std::min(count, begin + chunk);
    if (begin < end) pool.emplace_back([&body, begin, end] { body(begin, end); });
  }
  body(0, std::min(count, chunk));
}

}  // namespace qconv::detail
