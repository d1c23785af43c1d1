// SPDX-License-Identifier: Apache-2.0
// Storage that vector kernels read whole cache lines of: 64-byte aligned std::vector.
#pragma once

#include <cstddef>
#include <cstdint>
#include <new>
#include <utility>
#include <vector>

namespace qconv::detail {

inline constexpr std::size_t kCacheLine = 64;

// `bytes` of storage aligned to a cache line; from 64 KiB up (where pools_large_buffers()) carved
// from mappings of whole 2 MiB pages that buffers share, offered to the OS as huge pages (Linux:
// madvise; aligned.cpp). A prepared layer's megabytes of packed weights are otherwise a page fault
// per 4 KiB when first written (in a virtual machine each costs microseconds: milliseconds per
// megabyte), and as many TLB entries when the kernels stream them. Free with
// free_aligned(p, bytes), the same byte count.
void* allocate_aligned(std::size_t bytes);
void free_aligned(void* p, std::size_t bytes) noexcept;
// Whether buffers from 64 KiB up come from the shared huge-page mappings (Linux, except builds
// with AddressSanitizer, which keep operator new so that their bounds are checked).
bool pools_large_buffers() noexcept;

// For a buffer about to be written whole: from 64 KiB up, the pages wholly inside
// [p, p + bytes) made present in one call (Linux 5.14+; elsewhere nothing happens), not by a page
// fault per 4 KiB as the writes reach them.
void make_present(void* p, std::size_t bytes) noexcept;

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) { return static_cast<T*>(allocate_aligned(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { free_aligned(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// The same storage, but resize() leaves new elements of a trivial type uninitialized: for a
// buffer whose every element is written right after (zero-filling megabytes of packed weights
// first would be a pass over memory of its own), so its pages are made present when it is
// allocated (make_present).
template <class T>
struct UninitializedCacheLineAllocator : CacheLineAllocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedCacheLineAllocator<U>;
  };
  UninitializedCacheLineAllocator() = default;
  template <class U>
  UninitializedCacheLineAllocator(const UninitializedCacheLineAllocator<U>&) {}  // NOLINT
  T* allocate(std::size_t n) {
    T* p = CacheLineAllocator<T>::allocate(n);
    make_present(p, n * sizeof(T));
    return p;
  }
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;  // default-initialized
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};

template <class T>
using UninitializedAlignedVector = std::vector<T, UninitializedCacheLineAllocator<T>>;

// Rounds n up to a multiple of m (m > 0).
constexpr std::int64_t round_up(std::int64_t n, std::int64_t m) { return (n + m - 1) / m * m; }

}  // namespace qconv::detail
