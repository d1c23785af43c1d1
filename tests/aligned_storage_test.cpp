// SPDX-License-Identifier: Apache-2.0
// make_present (core/aligned.hpp): the pages wholly inside a buffer are present after it, none
// outside them, the bytes unchanged; small buffers are left alone. Residency read with mincore on
// a fresh anonymous mapping, whose pages are not present until touched.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/aligned.hpp"

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace qconv::detail {
namespace {

#if defined(__linux__) && defined(MADV_POPULATE_WRITE)

class FreshMapping {
 public:
  explicit FreshMapping(std::size_t pages)
      : page_(static_cast<std::size_t>(sysconf(_SC_PAGESIZE))), pages_(pages) {
    void* p =
        mmap(nullptr, pages_ * page_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    bytes_ = p == MAP_FAILED ? nullptr : static_cast<std::uint8_t*>(p);
  }
  ~FreshMapping() {
    if (bytes_ != nullptr) munmap(bytes_, pages_ * page_);
  }
  FreshMapping(const FreshMapping&) = delete;
  FreshMapping& operator=(const FreshMapping&) = delete;

  std::uint8_t* bytes() const { return bytes_; }
  std::size_t page() const { return page_; }
  // Which pages are present; empty where mincore fails (an emulator may not carry it out).
  std::vector<bool> resident() const {
    std::vector<unsigned char> flags(pages_);
    if (mincore(bytes_, pages_ * page_, flags.data()) != 0) return {};
    std::vector<bool> out(pages_);
    for (std::size_t i = 0; i < pages_; ++i) out[i] = (flags[i] & 1) != 0;
    return out;
  }

 private:
  std::size_t page_;
  std::size_t pages_;
  std::uint8_t* bytes_;
};

// Whether this system carries MADV_POPULATE_WRITE out (Linux 5.14 on; judged by its effect: an
// emulator may accept the advice and do nothing).
bool kernel_populates() {
  const FreshMapping probe(1);
  if (probe.bytes() == nullptr || probe.resident() != std::vector<bool>{false}) return false;
  return madvise(probe.bytes(), probe.page(), MADV_POPULATE_WRITE) == 0 &&
         probe.resident() == std::vector<bool>{true};
}

TEST(AlignedStorage, MakePresentTakesTheWholePagesInsideTheBuffer) {
  if (!kernel_populates())
    GTEST_SKIP() << "MADV_POPULATE_WRITE has no effect here (Linux < 5.14, or emulated)";
  constexpr std::size_t kPages = 40;  // 160 KiB of 4 KiB pages: above make_present's 64 KiB
  const FreshMapping mapping(kPages);
  ASSERT_NE(mapping.bytes(), nullptr);
  const std::size_t page = mapping.page();
  ASSERT_EQ(mapping.resident(), std::vector<bool>(kPages, false));
  // From 100 bytes into page 1 to 100 bytes into page kPages − 2: pages 2 .. kPages − 3 whole.
  make_present(mapping.bytes() + page + 100, (kPages - 3) * page);
  const std::vector<bool> resident = mapping.resident();
  ASSERT_EQ(resident.size(), kPages);
  for (std::size_t i = 0; i < kPages; ++i) {
    EXPECT_EQ(resident[i], i >= 2 && i + 3 <= kPages) << "page " << i;
  }
  for (std::size_t i = 0; i < kPages * page; i += 97) ASSERT_EQ(mapping.bytes()[i], 0) << i;
}

TEST(AlignedStorage, MakePresentLeavesSmallBuffersAlone) {
  if (!kernel_populates())
    GTEST_SKIP() << "MADV_POPULATE_WRITE has no effect here (Linux < 5.14, or emulated)";
  const FreshMapping mapping(8);
  ASSERT_NE(mapping.bytes(), nullptr);
  make_present(mapping.bytes(), std::size_t{32} << 10);  // 8 pages of 4 KiB, or a part of one
  EXPECT_EQ(mapping.resident(), std::vector<bool>(8, false));
}

#endif

// Through the allocator that calls it: a buffer of a few hundred KiB, written whole and read back.
TEST(AlignedStorage, UninitializedVectorHoldsWhatIsWritten) {
  UninitializedAlignedVector<std::uint8_t> buffer;
  buffer.resize(300 << 10);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(buffer.data()) % kCacheLine, 0u);
  for (std::size_t i = 0; i < buffer.size(); ++i) buffer[i] = static_cast<std::uint8_t>(i * 7);
  for (std::size_t i = 0; i < buffer.size(); ++i) {
    ASSERT_EQ(buffer[i], static_cast<std::uint8_t>(i * 7)) << i;
  }
}

}  // namespace
}  // namespace qconv::detail
