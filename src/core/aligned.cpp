// SPDX-License-Identifier: Apache-2.0
#include "core/aligned.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace qconv::detail {
namespace {

constexpr std::size_t kHugePage = std::size_t{2} << 20;

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

}  // namespace qconv::detail
