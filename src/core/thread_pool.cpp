// SPDX-License-Identifier: Apache-2.0
#include "core/thread_pool.hpp"

#include "core/check.hpp"
#include "core/cpu_placement.hpp"

#if QCONV_WITH_PTHREADPOOL
#include <pthreadpool.h>
#endif

#include <algorithm>
#include <atomic>

namespace qconv::detail {

// One caller's range. It lives on the caller's stack: the caller does not return before every
// helper that joined it has left (`helpers_active` back to 0, under the pool's mutex).
//
// The chunks are dealt out in contiguous home ranges, one per participant (the caller first, then
// each helper in the order it joins); a participant runs its own range from the front, then takes
// chunks from the front of the others' ranges. When every participant turns up, each one gets the
// same chunks in every call: a layer run again (or the next layer, split the same way) finds the
// output it writes in its own core's cache, not in the other core's, which costs two cores about
// a third of their speed on layers of tens of microseconds (a shared counter deals the chunks
// differently each call). A participant that is late loses its range to the others.
struct ThreadPool::Job {
  struct Range {
    std::atomic<std::int64_t> next{0};  // first chunk not yet claimed (may run past end)
    std::int64_t end = 0;
  };
  Body body;
  const void* context;
  std::int64_t count;
  std::int64_t chunks;  // chunk c is [count·c / chunks, count·(c + 1) / chunks)
  int ranges;           // participants with a home range: the caller and up to ranges − 1 helpers
  Range range[kMaxWorkers + 1];
  std::atomic<int> next_participant{1};  // the home range of the next helper to join
  int helpers_wanted;                    // workers that may still join (guarded by mutex_)
  int helpers_active = 0;                // workers inside work_on (guarded by mutex_)
  std::atomic<int> helpers_busy{0};    // the same count, readable without the mutex (for spinning)
  int caller_cpu = -1;                 // the caller's CPU as it queued the job (−1: unknown)
  bool queued = false;                 // guarded by mutex_
  Job* next = nullptr;                 // guarded by mutex_
  std::exception_ptr error = nullptr;  // first exception thrown by a body (guarded by mutex_)

  // Deals `chunks` chunks out to `participants` home ranges of (nearly) equal length.
  void deal(std::int64_t chunks, int participants) {
    ranges = participants;
    for (int r = 0; r < participants; ++r) {
      range[r].next.store(chunks * r / participants, std::memory_order_relaxed);
      range[r].end = chunks * (r + 1) / participants;
    }
  }
};

ThreadPool& ThreadPool::instance() {
  static ThreadPool pool;
  return pool;
}

ThreadPool::~ThreadPool() {
  {
    const std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  work_available_.notify_all();
  for (std::thread& worker : workers_) worker.join();
}

int ThreadPool::workers() const {
  const std::lock_guard lock(mutex_);
  return static_cast<int>(workers_.size());
}

void ThreadPool::ensure_workers(int wanted) {
  wanted = std::min(wanted, kMaxWorkers);
  const std::lock_guard lock(mutex_);
  if (static_cast<int>(workers_.size()) >= wanted) return;
  workers_.reserve(static_cast<std::size_t>(wanted));
  while (static_cast<int>(workers_.size()) < wanted)
    workers_.emplace_back([this] { worker_loop(); });
}

// Claims chunks until none is left: those of home range `home` first, then the others'. Shared by
// the caller (home 0) and its helpers.
void ThreadPool::work_on(Job& job, int home) {
  for (int k = 0; k < job.ranges; ++k) {
    Job::Range& range = job.range[(home + k) % job.ranges];
    for (;;) {
      const std::int64_t chunk = range.next.fetch_add(1, std::memory_order_relaxed);
      if (chunk >= range.end) break;
      try {
        job.body(job.context, job.count * chunk / job.chunks, job.count * (chunk + 1) / job.chunks);
      } catch (...) {
        for (int r = 0; r < job.ranges; ++r) {  // nobody starts another chunk
          job.range[r].next.store(job.range[r].end, std::memory_order_relaxed);
        }
        const std::lock_guard lock(mutex_);
        if (!job.error) job.error = std::current_exception();
        return;
      }
    }
  }
}

void ThreadPool::remove_from_queue(Job& job) {
  if (!job.queued) return;
  Job* previous = nullptr;
  for (Job* j = queue_head_; j != nullptr; previous = j, j = j->next) {
    if (j != &job) continue;
    (previous != nullptr ? previous->next : queue_head_) = j->next;
    if (queue_tail_ == j) queue_tail_ = previous;
    break;
  }
  job.next = nullptr;
  job.queued = false;
  queued_.fetch_sub(1, std::memory_order_relaxed);
}

namespace {

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

// Takes the pool's mutex, trying for a while before blocking on it. Its holders keep it for a
// fraction of a microsecond, but a thread that blocks sleeps in the kernel and is woken by the
// holder's unlock through a system call and a reschedule: on a virtual machine's cores several
// microseconds, which a two-thread call paid every time its helper joined as the caller was
// queueing the job (an empty call took 3.4 us instead of 0.3).
void lock_spinning(std::unique_lock<std::mutex>& lock) {
  // About 5 us at a pause of 20 ns (AMD Zen 5; Intel's since Skylake take longer): ten times the
  // longest hold, and short enough where the holder was preempted and a core is better given up.
  constexpr int kTries = 256;
  for (int i = 0; i < kTries; ++i) {
    if (lock.try_lock()) return;
    cpu_relax();
  }
  lock.lock();
}

}  // namespace

void ThreadPool::worker_loop() {
  std::unique_lock lock(mutex_);
  for (;;) {
    if (!stopping_ && queue_head_ == nullptr) {
      // Spin a little before sleeping: waking a sleeping thread costs tens of microseconds, as
      // much as a whole small layer.
      lock.unlock();
      const auto until = std::chrono::steady_clock::now() + kSpin;
      for (int i = 0; queued_.load(std::memory_order_relaxed) == 0; ++i) {
        cpu_relax();
        if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
      }
      lock_spinning(lock);
    }
    work_available_.wait(lock, [this] { return stopping_ || queue_head_ != nullptr; });
    if (queue_head_ == nullptr) return;  // stopping, and nothing left to help with
    Job& job = *queue_head_;
    ++job.helpers_active;
    job.helpers_busy.fetch_add(1, std::memory_order_relaxed);
    if (--job.helpers_wanted == 0) remove_from_queue(job);
    const int caller_cpu = job.caller_cpu;
    lock.unlock();
    // Woken onto its caller's core, a helper would halve the caller's speed for as long as the
    // scheduler left it there: on a two-core virtual machine, next to another library's OpenMP
    // threads, whole 10 ms stretches of two-thread calls ran no faster than one thread. Moved off
    // (six alternating runs of each build of the bench's MobileNetV2 at two threads): 1.40x
    // oneDNN on average, not 1.32x; layers short of 1.2x their one-thread speed 1.8 a run, not 5.
    if (caller_cpu >= 0 && current_cpu() == caller_cpu) move_off_cpu(caller_cpu);
    // Late helpers (beyond the ranges dealt) start on the caller's range.
    const int home = job.next_participant.fetch_add(1, std::memory_order_relaxed);
    work_on(job, home < job.ranges ? home : 0);
    lock_spinning(lock);
    // The caller may destroy `job` as soon as this reaches 0 and the lock is released.
    job.helpers_busy.fetch_sub(1, std::memory_order_release);
    if (--job.helpers_active == 0) helper_left_.notify_all();
  }
}

void ThreadPool::run(int threads, std::int64_t count, Body body, const void* context,
                     int chunks_per_thread) {
  if (count <= 0) return;
  const auto parallelism =
      static_cast<std::int64_t>(std::min(std::max(threads, 1), kMaxWorkers + 1));
  if (parallelism == 1 || count == 1) {
    body(context, 0, count);
    return;
  }
  ensure_workers(static_cast<int>(parallelism - 1));
  shared_calls_.fetch_add(1, std::memory_order_relaxed);

  // A few chunks per thread, so that a thread delayed by another caller's work holds up little.
  const std::int64_t chunks = std::min(count, parallelism * std::max(chunks_per_thread, 1));
  const int helpers = static_cast<int>(std::min(parallelism, chunks) - 1);
  Job job{.body = body,
          .context = context,
          .count = count,
          .chunks = chunks,
          .ranges = 1,
          .range = {},
          .next_participant = 1,
          .helpers_wanted = helpers};
  job.deal(chunks, helpers + 1);
  job.caller_cpu = current_cpu();
  {
    std::unique_lock lock(mutex_, std::defer_lock);
    lock_spinning(lock);
    job.queued = true;
    (queue_tail_ != nullptr ? queue_tail_->next : queue_head_) = &job;
    queue_tail_ = &job;
    queued_.fetch_add(1, std::memory_order_relaxed);
  }
  for (int i = 0; i < helpers; ++i) work_available_.notify_one();

  work_on(job, 0);

  std::unique_lock lock(mutex_, std::defer_lock);
  lock_spinning(lock);
  remove_from_queue(job);  // every chunk is claimed: no worker needs to join any more
  if (job.helpers_active != 0) {
    // A helper is finishing its last chunk, typically within microseconds: wait for it spinning,
    // for a while, rather than asleep (waking a sleeping caller costs as much as a small layer).
    lock.unlock();
    const auto until = std::chrono::steady_clock::now() + kSpin;
    for (int i = 0; job.helpers_busy.load(std::memory_order_acquire) != 0; ++i) {
      cpu_relax();
      if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) break;
    }
    lock_spinning(lock);
  }
  helper_left_.wait(lock, [&job] { return job.helpers_active == 0; });
  if (job.error) std::rethrow_exception(job.error);
}

// ---- The caller's pool -----------------------------------------------------------------------

namespace {

thread_local pthreadpool_t host_pool = nullptr;
thread_local bool in_host_task = false;

// Marks this thread as running a host pool's body until the scope ends.
class InsideHostTask {
 public:
  InsideHostTask() : was_inside_(in_host_task) { in_host_task = true; }
  ~InsideHostTask() { in_host_task = was_inside_; }
  InsideHostTask(const InsideHostTask&) = delete;
  InsideHostTask& operator=(const InsideHostTask&) = delete;

 private:
  bool was_inside_;
};

#if QCONV_WITH_PTHREADPOOL
// One call on a host pool. It lives on the caller's stack; pthreadpool returns only after every
// tile has run. The two atomics carry the happens-before edges (caller → tiles, tiles → caller)
// in code a race detector sees: pthreadpool's own synchronisation happens inside the library.
struct HostJob {
  ThreadPool::Body body;
  const void* context;
  std::int64_t count;
  std::atomic<bool> published{false};
  std::atomic<bool> failed{false};
  std::atomic<std::int64_t> tiles_done{0};
  std::exception_ptr error = nullptr;  // written once, by the tile that set `failed`
};

void run_host_tile(void* raw, std::size_t begin, std::size_t tile) {
  HostJob& job = *static_cast<HostJob*>(raw);
  (void)job.published.load(std::memory_order_acquire);
  if (!job.failed.load(std::memory_order_relaxed)) {
    const InsideHostTask inside;
    try {
      const auto first = static_cast<std::int64_t>(begin);
      job.body(job.context, first, std::min(job.count, first + static_cast<std::int64_t>(tile)));
    } catch (...) {
      // An exception must not unwind through pthreadpool's C frames: it is kept for the caller.
      if (!job.failed.exchange(true, std::memory_order_relaxed)) {
        job.error = std::current_exception();
      }
    }
  }
  job.tiles_done.fetch_add(1, std::memory_order_release);
}
#endif

}  // namespace

#if QCONV_WITH_PTHREADPOOL
int host_pool_threads(pthreadpool_t pool) {
  constexpr std::size_t kMost = 1 << 16;  // keeps tile arithmetic far from overflow
  return static_cast<int>(std::clamp<std::size_t>(pthreadpool_get_threads_count(pool), 1, kMost));
}

void run_on_host_pool(pthreadpool_t pool, std::int64_t count, ThreadPool::Body body,
                      const void* context, int chunks_per_thread) {
  if (count <= 0) return;
  const std::int64_t threads = host_pool_threads(pool);
  if (threads == 1 || count == 1) {
    // pthreadpool would run it on this thread too; the nesting rule still holds for the body.
    const InsideHostTask inside;
    body(context, 0, count);
    return;
  }
  // A few tiles per thread, as ThreadPool::run cuts its chunks.
  const std::int64_t tiles = std::min(count, threads * std::max(chunks_per_thread, 1));
  const std::int64_t tile = (count + tiles - 1) / tiles;
  HostJob job{.body = body, .context = context, .count = count};
  job.published.store(true, std::memory_order_release);
  pthreadpool_parallelize_1d_tile_1d(pool, &run_host_tile, &job, static_cast<std::size_t>(count),
                                     static_cast<std::size_t>(tile), /*flags=*/0);
  (void)job.tiles_done.load(std::memory_order_acquire);
  if (job.failed.load(std::memory_order_relaxed)) std::rethrow_exception(job.error);
}
#else
// Built without pthreadpool (QCONV_WITH_PTHREADPOOL=OFF): a pool is refused before a call starts.
int host_pool_threads(pthreadpool_t) {
  fail("pool", "a pthreadpool_t",
       "this build of qconv has no pthreadpool (built with QCONV_WITH_PTHREADPOOL=OFF); pass "
       "a thread count instead");
}

void run_on_host_pool(pthreadpool_t, std::int64_t, ThreadPool::Body, const void*, int) {
  host_pool_threads(nullptr);
}
#endif

pthreadpool_t current_host_pool() { return host_pool; }

bool inside_host_pool_task() { return in_host_task; }

HostPoolScope::HostPoolScope(pthreadpool_t pool) : previous_(host_pool) { host_pool = pool; }

HostPoolScope::~HostPoolScope() { host_pool = previous_; }

}  // namespace qconv::detail
