// SPDX-License-Identifier: Apache-2.0
// Splits [0, count) into contiguous chunks run on up to `threads` threads of the library's
// persistent pool (src/core/thread_pool.hpp), or, while a HostPoolScope names the caller's pool,
// on that pool's threads (then `threads` is not read: the pool's size decides). Each index is
// handled by exactly one call, so results never depend on the thread count or the pool; after
// the pool has grown to `threads`, a call allocates nothing.
#pragma once

#include <algorithm>
#include <cstdint>
#include <thread>

#include "core/thread_pool.hpp"

namespace qconv::detail {

inline int resolve_threads(int requested) {
  if (requested > 0) return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// `chunks_per_thread`: how finely the range is cut per thread (ThreadPool::kChunksPerThread).
template <class Body>  // Body: void(std::int64_t begin, std::int64_t end)
void parallel_for(int threads, std::int64_t count, const Body& body,
                  int chunks_per_thread = ThreadPool::kChunksPerThread) {
  constexpr ThreadPool::Body call = [](const void* context, std::int64_t begin, std::int64_t end) {
    (*static_cast<const Body*>(context))(begin, end);
  };
  if (inside_host_pool_task()) {  // pthreadpool's calls do not nest: run here
    if (count > 0) body(0, count);
  } else if (const pthreadpool_t pool = current_host_pool(); pool != nullptr) {
    run_on_host_pool(pool, count, call, &body, chunks_per_thread);
  } else {
    ThreadPool::instance().run(threads, count, call, &body, chunks_per_thread);
  }
}

}  // namespace qconv::detail
