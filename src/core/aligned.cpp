// SPDX-License-Identifier: Apache-2.0
#include "core/aligned.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace qconv::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;
// make_present's smallest buffer (smaller ones are a few pages: not worth a system call).
constexpr std::size_t kPopulateFrom = std::size_t{64} << 10;

std::align_val_t alignment(std::size_t bytes) {
  return std::align_val_t{bytes >= kHugePage ? kHugePage : kCacheLine};
}

}  // namespace

void* allocate_aligned(std::size_t bytes) {
  void* p = ::operator new(bytes, alignment(bytes));
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  // Only whole huge pages: a tail past the last one stays in small pages, so nothing is committed
  // beyond what was asked for. A refusal (no transparent huge pages) changes nothing.
  if (bytes >= kHugePage) (void)madvise(p, bytes / kHugePage * kHugePage, MADV_HUGEPAGE);
#endif
  return p;
}

void free_aligned(void* p, std::size_t bytes) noexcept { ::operator delete(p, alignment(bytes)); }

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
