// SPDX-License-Identifier: Apache-2.0
#include "core/aligned.hpp"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>

#include <map>
#include <mutex>
#endif

namespace qconv::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
// make_present's smallest buffer (smaller ones are a few pages: not worth a system call).
constexpr std::size_t kPopulateFrom = std::size_t{64} << 10;

#if defined(__SANITIZE_ADDRESS__)
#define QCONV_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define QCONV_ADDRESS_SANITIZER 1
#endif
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(QCONV_ADDRESS_SANITIZER)
#define QCONV_HUGE_PAGE_POOL 1
#endif

#ifdef QCONV_HUGE_PAGE_POOL
// Buffers from 64 KiB up (a prepared layer's packed weights, its constants, large scratch) share
// mappings whose size is a whole number of 2 MiB pages, offered to the OS as huge pages. A buffer
// that does not fit the unused end of the newest mapping gets a mapping of its own, its size
// rounded up to 2 MiB, whose unused end the next buffers take. A mapping is unmapped when its last
// buffer is freed, except the newest one up to kKeptAtMost, kept whole for the next buffers (as
// malloc keeps the top of its heap; kept and too small for one, it gives way to that one's): a
// plan prepared again, or the next of a sequence prepared and freed one at a time, then writes
// pages already there. So a network's weights, prepared one layer
// after another, lie in as many huge pages as they fill, no buffer leaves more than the rest of
// one page unused, and at most one empty mapping is held. Why: in a virtual machine, a 4 KiB page
// costs microseconds the first time it is written (ResNet-50's 1 MB layer of 512 -> 2048 channels
// took 1.4 ms to prepare in memory new to the process, most of it those first writes; a 2 MiB page
// usually costs a few of them, now and then milliseconds where the host backs it anew). Preparing
// all 53 layers of ResNet-50 at once took 36 ms in 4 KiB pages, 17 ms so (an AMD Zen 5 guest).
// Address-sanitized builds keep operator new, whose bounds the sanitizer checks. (Below 64 KiB, a
// plan's buffers are few pages each; pooled too from 16 KiB up, preparing all of ResNet-50's 53
// layers took 16.5 ms instead of 17.)
constexpr std::size_t kPooledFrom = std::size_t{64} << 10;
constexpr std::size_t kKeptAtMost = std::size_t{8} << 20;

class HugePagePool {
 public:
  void* allocate(std::size_t bytes) {
    bytes = (bytes + kCacheLine - 1) / kCacheLine * kCacheLine;
    const std::lock_guard<std::mutex> lock(mutex_);
    if (free_end_ - free_begin_ >= bytes) {
      const std::uintptr_t p = free_begin_;
      buffers_.emplace(p, newest_);  // first: it may throw
      free_begin_ += bytes;
      ++mappings_.at(newest_).live;
      return reinterpret_cast<void*>(p);
    }
    const std::size_t size = (bytes + kHugePage - 1) / kHugePage * kHugePage;
    const std::uintptr_t start = map_aligned(size);
    try {
      mappings_.emplace(start, Mapping{size, 1});
      buffers_.emplace(start, start);
    } catch (...) {
      mappings_.erase(start);
      (void)munmap(reinterpret_cast<void*>(start), size);
      throw;
    }
    // The larger unused end serves the next buffers; a kept mapping (empty) too small for this
    // buffer gives way to this one, which then holds the larger buffers of the network.
    const bool newest_empty = newest_ != 0 && mappings_.at(newest_).live == 0;
    if (newest_empty || size - bytes > free_end_ - free_begin_) {
      if (newest_empty) unmap(mappings_.find(newest_));
      newest_ = start;
      free_begin_ = start + bytes;
      free_end_ = start + size;
    }
    return reinterpret_cast<void*>(start);
  }

  void free(void* p) noexcept {
    const std::lock_guard<std::mutex> lock(mutex_);
    const auto buffer = buffers_.find(reinterpret_cast<std::uintptr_t>(p));
    const auto mapping = mappings_.find(buffer->second);
    buffers_.erase(buffer);
    if (--mapping->second.live != 0) return;
    if (mapping->first == newest_ && mapping->second.bytes <= kKeptAtMost) {
      free_begin_ = newest_;  // kept, whole, for the next buffers
      return;
    }
    if (mapping->first == newest_) free_begin_ = free_end_ = newest_ = 0;
    unmap(mapping);
  }

 private:
  struct Mapping {
    std::size_t bytes;
    std::size_t live;  // buffers in it not yet freed
  };

  void unmap(std::map<std::uintptr_t, Mapping>::iterator mapping) noexcept {
    (void)munmap(reinterpret_cast<void*>(mapping->first), mapping->second.bytes);
    mappings_.erase(mapping);
  }

  // `size` bytes (a multiple of 2 MiB) at a 2 MiB boundary, offered as huge pages.
  static std::uintptr_t map_aligned(std::size_t size) {
    void* p =
        mmap(nullptr, size + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    const auto raw = reinterpret_cast<std::uintptr_t>(p);
    const std::uintptr_t start = (raw + kHugePage - 1) / kHugePage * kHugePage;
    if (start != raw) (void)munmap(p, start - raw);
    const std::uintptr_t end = raw + size + kHugePage;
    if (end != start + size)
      (void)munmap(reinterpret_cast<void*>(start + size), end - start - size);
    // A refusal (no transparent huge pages) leaves small pages: the same memory, only slower.
    (void)madvise(reinterpret_cast<void*>(start), size, MADV_HUGEPAGE);
    return start;
  }

  std::mutex mutex_;
  std::map<std::uintptr_t, Mapping> mappings_;  // by start
  // Each buffer's mapping, by the buffer's start. A record per buffer also makes every allocation
  // here one operator new (a map node), which the tests that count allocations see.
  std::map<std::uintptr_t, std::uintptr_t> buffers_;
  std::uintptr_t newest_ = 0;  // the mapping whose unused end is [free_begin_, free_end_)
  std::uintptr_t free_begin_ = 0, free_end_ = 0;
};

HugePagePool& pool() {
  static auto* pool = new HugePagePool;  // never destroyed: plans may outlive static destructors
  return *pool;
}
#endif

}  // namespace

void* allocate_aligned(std::size_t bytes) {
#ifdef QCONV_HUGE_PAGE_POOL
  if (bytes >= kPooledFrom) return pool().allocate(bytes);
#endif
  return ::operator new (bytes, std::align_val_t{kCacheLine});
}

void free_aligned(void* p, std::size_t bytes) noexcept {
#ifdef QCONV_HUGE_PAGE_POOL
  if (bytes >= kPooledFrom) return pool().free(p);
#endif
  (void)bytes;
  ::operator delete (p, std::align_val_t{kCacheLine});
}

bool pools_large_buffers() noexcept {
#ifdef QCONV_HUGE_PAGE_POOL
  return true;
#else
  return false;
#endif
}

void make_present(void* p, std::size_t bytes) noexcept {
#if defined(__linux__) && defined(MADV_POPULATE_WRITE)
  // In a virtual machine each page fault costs microseconds: preparing a 1x1 layer of 1024 to 512
  // channels (0.5 MB of packed weights) took 1.4 ms with its memory new to the process, most of it
  // faults; 0.7 ms with the pages made present first, 0.05 ms with them present already. A kernel
  // without MADV_POPULATE_WRITE refuses it, and the pages fault in as before.
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  if (bytes < kPopulateFrom || page == 0) return;
  const auto begin = (reinterpret_cast<std::uintptr_t>(p) + page - 1) / page * page;
  const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) / page * page;
  if (end > begin) (void)madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p;
  (void)bytes;
#endif
}

}  // namespace qconv::detail
