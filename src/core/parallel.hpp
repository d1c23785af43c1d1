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

// How finely a call of `macs` multiply-adds on `threads` threads is cut: one chunk per thread below
// 4M a thread (a few microseconds), else ThreadPool::kChunksPerThread. In a short call the chunks a
// thread took from another's range moved their output between the cores call after call (two
// threads: MobileNetV2's 14x14 and 28x28 depthwise layers 9-14 % faster with one chunk each, its
// 1x1 layers of that size 2-6 %); in a long one the few chunks even out a core that runs late or
// slowly (ResNet-50 with one chunk everywhere: 2.6 % slower).
inline int chunks_per_thread(std::int64_t macs, int threads) {
  constexpr std::int64_t kOneChunkMacs = std::int64_t{4} << 20;
  return macs / std::max(threads, 1) < kOneChunkMacs ? 1 : ThreadPool::kChunksPerThread;
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
