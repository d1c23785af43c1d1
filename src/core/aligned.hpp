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

template <class T>
struct CacheLineAllocator {
  using value_type = T;
  CacheLineAllocator() = default;
  template <class U>
  CacheLineAllocator(const CacheLineAllocator<U>&) {}  // NOLINT: rebinding
  T* allocate(std::size_t n) {
    return static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{kCacheLine}));
  }
  void deallocate(T* p, std::size_t) { ::operator delete (p, std::align_val_t{kCacheLine}); }
  template <class U>
  bool operator==(const CacheLineAllocator<U>&) const {
    return true;
  }
};

template <class T>
using AlignedVector = std::vector<T, CacheLineAllocator<T>>;

// The same storage, but resize() leaves new elements of a trivial type uninitialized: for a
// buffer whose every element is written right after (zero-filling megabytes of packed weights
// first would be a pass over memory of its own).
template <class T>
struct UninitializedCacheLineAllocator : CacheLineAllocator<T> {
  template <class U>
  struct rebind {
    using other = UninitializedCacheLineAllocator<U>;
  };
  UninitializedCacheLineAllocator() = default;
  template <class U>
  UninitializedCacheLineAllocator(const UninitializedCacheLineAllocator<U>&) {}  // NOLINT
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
