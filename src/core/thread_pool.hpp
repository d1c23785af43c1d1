// SPDX-License-Identifier: Apache-2.0
// A persistent pool of worker threads that any number of callers may use at once.
//
// A caller hands in a range [0, count) and a body; the range is cut into contiguous chunks, dealt
// out in a home range per participant (the caller's first), which the caller and the workers that
// join claim one chunk at a time, their own range first, then the others'. The caller always
// works, so it finishes even when every worker is busy elsewhere: no call waits for a worker to
// become free, and a body may itself call the pool (nested calls run on the thread that makes
// them).
// Each index is given to exactly one body call, so a body that writes only what its indices own
// computes the same result for every thread count. After the pool has grown to the largest thread
// count asked for, a call allocates nothing: its bookkeeping lives on the caller's stack.
//
// A host that already has a pool hands it in instead (RunOptions::pool, a pthreadpool_t as
// XNNPACK takes): for the duration of one Plan::execute (HostPoolScope), every parallel_for of
// the calling thread runs on that pool's threads, and this pool is neither started nor woken.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

// pthreadpool's handle, declared as <pthreadpool.h> (and qconv/plan.hpp) declare it.
typedef struct pthreadpool* pthreadpool_t;  // NOLINT(modernize-use-using): C's own declaration

namespace qconv::detail {

class ThreadPool {
 public:
  using Body = void (*)(const void* context, std::int64_t begin, std::int64_t end);

  // The library's pool, created on first use, its workers joined at exit.
  static ThreadPool& instance();

  ThreadPool() = default;
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  // Runs body(context, begin, end) over chunks covering [0, count) on up to `threads` threads
  // (the calling one included) and returns when all of them are done, cut into
  // `chunks_per_thread` chunks per thread taking part (fewer where count is smaller). An exception
  // thrown by a body stops the claiming of further chunks and is rethrown here once every helper
  // has left.
  void run(int threads, std::int64_t count, Body body, const void* context,
           int chunks_per_thread = kChunksPerThread);

  // How long an idle worker keeps looking for work before it sleeps on the condition variable.
  static constexpr std::chrono::microseconds kSpin{100};

  // Workers started so far (for tests).
  int workers() const;
  // Calls that handed work to the workers so far (for tests: a call on a host pool adds none).
  std::int64_t shared_calls() const { return shared_calls_.load(std::memory_order_relaxed); }

  // Chunks a call is cut into per thread taking part, by default (fewer where count is smaller):
  // the first thread's home range is chunks [0, kChunksPerThread), and so on (see
  // thread_pool.cpp). A few, so that a thread that runs late or slowly (another caller's work, a
  // virtual machine's slower core) holds up little; a call of a few microseconds per thread may
  // ask for one (parallel_for's chunks_per_thread): each chunk a thread takes from another's range
  // costs a claim on the other's cache line and moves the output it writes between the cores.
  static constexpr int kChunksPerThread = 4;

  // More threads than this are never started; larger requests share them.
  static constexpr int kMaxWorkers = 255;

 private:
  struct Job;
  void ensure_workers(int wanted);
  void worker_loop();
  void work_on(Job& job, int home);
  void remove_from_queue(Job& job);

  mutable std::mutex mutex_;
  std::condition_variable work_available_;
  std::condition_variable helper_left_;
  Job* queue_head_ = nullptr;  // jobs still wanting helpers, oldest first (intrusive list)
  // Jobs in that queue, readable without the mutex: an idle worker spins on it for a while
  // before it sleeps, so that a call made soon after the last one (the next layer of a network,
  // some microseconds later) does not wait for a sleeping thread to be woken.
  std::atomic<int> queued_{0};
  Job* queue_tail_ = nullptr;
  std::vector<std::thread> workers_;
  bool stopping_ = false;
  std::atomic<std::int64_t> shared_calls_{0};
};

// Runs body(context, begin, end) over tiles covering [0, count) on the caller's pthreadpool (the
// calling thread is one of its threads, as pthreadpool does) and returns when all are done. As
// ThreadPool::run: each index goes to exactly one body call, an exception thrown by a body stops
// the remaining tiles and is rethrown here, and nothing is allocated. A parallel_for made inside
// a body runs on the thread that makes it (pthreadpool's calls do not nest).
void run_on_host_pool(pthreadpool_t pool, std::int64_t count, ThreadPool::Body body,
                      const void* context, int chunks_per_thread = ThreadPool::kChunksPerThread);

// The number of threads of a host pool (pthreadpool_get_threads_count, at least 1).
int host_pool_threads(pthreadpool_t pool);

// The host pool parallel_for uses on this thread: null for none (qconv's own pool).
pthreadpool_t current_host_pool();
// Whether this thread is running a body that run_on_host_pool handed it.
bool inside_host_pool_task();

// Makes `pool` the calling thread's host pool until the scope ends (null: qconv's own pool).
class HostPoolScope {
 public:
  explicit HostPoolScope(pthreadpool_t pool);
  ~HostPoolScope();
  HostPoolScope(const HostPoolScope&) = delete;
  HostPoolScope& operator=(const HostPoolScope&) = delete;

 private:
  pthreadpool_t previous_;
};

}  // namespace qconv::detail
