// SPDX-License-Identifier: Apache-2.0
// Scratch for the bodies of one parallel_for: a slot for each body that can run at once, all in
// one buffer the calling thread provides (its own scratch, grown on its first call). A body claims
// a free slot for its range and gives it back when done. Storage of each thread's own would be
// allocated the first time that thread takes part, and with a host's pool (or a worker late to
// the first call) that may be any later call: execute would no longer be allocation-free.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "core/aligned.hpp"
#include "core/parallel.hpp"

namespace qconv::detail {

// How many bodies a parallel_for(threads, ...) made now may run at once.
inline int parallel_participants(int threads) {
  if (inside_host_pool_task()) return 1;
  if (const pthreadpool_t pool = current_host_pool(); pool != nullptr) {
    return host_pool_threads(pool);
  }
  return std::min(std::max(threads, 1), ThreadPool::kMaxWorkers + 1);
}

class WorkerScratch {
 public:
  static constexpr int kMaxSlots = ThreadPool::kMaxWorkers + 1;

  // The buffer WorkerScratch(storage, slot_bytes, slots) carves: slots of whole cache lines.
  static std::size_t bytes(std::size_t slot_bytes, int slots) {
    return round_slot(slot_bytes) * static_cast<std::size_t>(slots);
  }

  // `storage`: bytes(slot_bytes, slots) bytes, 64-byte aligned; slots ≤ kMaxSlots, at least the
  // parallel_participants of the parallel_for whose bodies claim them.
  WorkerScratch(std::uint8_t* storage, std::size_t slot_bytes, int slots)
      : storage_(storage), slot_bytes_(round_slot(slot_bytes)), slots_(slots) {}
  WorkerScratch(const WorkerScratch&) = delete;
  WorkerScratch& operator=(const WorkerScratch&) = delete;

  // Slot `index`'s bytes (for the caller, before or after the bodies that claim them run).
  std::uint8_t* slot(int index) const {
    return storage_ + static_cast<std::size_t>(index) * slot_bytes_;
  }

  // A slot held for the life of this object: `preferred` if it is free (a thread that takes the
  // same slot in each of its bodies finds there what it left, in its own cache), else the first.
  class Claim {
   public:
    explicit Claim(WorkerScratch& scratch, int preferred = 0)
        : scratch_(scratch), slot_(scratch.acquire(preferred)) {}
    ~Claim() { scratch_.release(slot_); }
    Claim(const Claim&) = delete;
    Claim& operator=(const Claim&) = delete;
    std::uint8_t* data() const { return scratch_.slot(slot_); }
    int slot() const { return slot_; }

   private:
    WorkerScratch& scratch_;
    int slot_;
  };

 private:
  static std::size_t round_slot(std::size_t bytes) {
    return (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
  }

  // Never more bodies run at once than there are slots, so a free one is always found.
  int acquire(int preferred) {
    if (preferred >= 0 && preferred < slots_ && take(preferred)) return preferred;
    for (;;) {
      for (int slot = 0; slot < slots_; ++slot) {
        if (take(slot)) return slot;
      }
    }
  }
  bool take(int slot) {
    std::atomic<bool>& busy = busy_[slot];
    return !busy.load(std::memory_order_relaxed) && !busy.exchange(true, std::memory_order_acquire);
  }
  void release(int slot) { busy_[slot].store(false, std::memory_order_release); }

  std::uint8_t* storage_;
  std::size_t slot_bytes_;
  int slots_;
  std::atomic<bool> busy_[kMaxSlots] = {};
};

}  // namespace qconv::detail
