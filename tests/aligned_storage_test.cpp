// SPDX-License-Identifier: Apache-2.0
// core/aligned.hpp. make_present: the pages wholly inside a buffer are present after it, none
// outside them, the bytes unchanged; small buffers are left alone. Residency read with mincore on
// a fresh anonymous mapping, whose pages are not present until touched. allocate_aligned: buffers
// of every size, live at once and freed in any order, never overlap and keep what is written;
// the shared huge-page mappings of large ones are given back when their last buffer is freed
// (the newest one kept for the next buffers).
#include <gtest/gtest.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <random>
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

// Buffers from 64 bytes to 5 MiB (the pooled ones from 64 KiB up, some past a 2 MiB page), up to
// 12 live at once, each filled with its own bytes: all of them checked whole after every
// allocation and before every free, so that any overlap or move shows.
TEST(AlignedStorage, BuffersOfEverySizeNeverOverlap) {
  struct Buffer {
    std::uint8_t* data;
    std::size_t bytes;
    std::uint8_t seed;
  };
  const auto fill = [](const Buffer& b) {
    for (std::size_t i = 0; i < b.bytes; i += 61) b.data[i] = static_cast<std::uint8_t>(b.seed + i);
  };
  const auto intact = [](const Buffer& b) {
    for (std::size_t i = 0; i < b.bytes; i += 61) {
      if (b.data[i] != static_cast<std::uint8_t>(b.seed + i)) return false;
    }
    return true;
  };
  std::mt19937 rng(20261205);
  const std::size_t sizes[] = {64,        4000,           200 << 10, 256 << 10,
                               300 << 10, 700 << 10,      1 << 20,   (2 << 20) - 64,
                               2 << 20,   (2 << 20) + 64, 3 << 20,   5 << 20};
  std::vector<Buffer> live;
  for (int step = 0; step < 200; ++step) {
    if (live.size() < 12 && (live.empty() || rng() % 3 != 0)) {
      const std::size_t bytes = sizes[rng() % std::size(sizes)] + 64 * (rng() % 4);
      Buffer b{static_cast<std::uint8_t*>(allocate_aligned(bytes)), bytes,
               static_cast<std::uint8_t>(step)};
      ASSERT_EQ(reinterpret_cast<std::uintptr_t>(b.data) % kCacheLine, 0u) << bytes;
      fill(b);
      live.push_back(b);
      for (const Buffer& other : live) ASSERT_TRUE(intact(other)) << "step " << step;
    } else {
      const std::size_t i = rng() % live.size();
      ASSERT_TRUE(intact(live[i])) << "step " << step;
      free_aligned(live[i].data, live[i].bytes);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }
  for (const Buffer& b : live) free_aligned(b.data, b.bytes);
}

#if defined(__linux__)
// Whether the page at p is mapped (mincore fails with ENOMEM where it is not).
bool mapped(const void* p) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  unsigned char flag = 0;
  void* start = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) / page * page);
  return mincore(start, page, &flag) == 0 || errno != ENOMEM;
}

// A 3 MiB buffer gets a mapping of its own (4 MiB: two 2 MiB pages); a 512 KiB one after it may
// take the rest of that mapping (when its unused end is the largest). The mapping stays while
// either is live; once both are freed it is kept whole, as the newest, and the next 3 MiB buffer
// takes its start. A 7 MiB buffer's mapping (8 MiB, its rest 1 MiB: not the largest unused end)
// is given back when that buffer is freed.
TEST(AlignedStorage, PooledMappingsAreGivenBackWithTheirLastBuffer) {
  if (!pools_large_buffers()) GTEST_SKIP() << "no huge-page pool in this build (non-Linux or ASan)";
  constexpr std::size_t kLarge = 3 << 20, kSmall = 512 << 10, kLarger = 7 << 20;
  auto* large = static_cast<std::uint8_t*>(allocate_aligned(kLarge));
  auto* small = static_cast<std::uint8_t*>(allocate_aligned(kSmall));
  large[0] = large[kLarge - 1] = small[0] = small[kSmall - 1] = 1;
  const bool shared = small >= large + kLarge && small < large + (4 << 20);
  free_aligned(large, kLarge);
  if (shared) {
    EXPECT_TRUE(mapped(large)) << "the mapping went with its first buffer, the second still live";
    small[0] = 2;
  }
  free_aligned(small, kSmall);
  if (shared) {
    EXPECT_TRUE(mapped(large)) << "the newest mapping is kept for the next buffers";
    auto* again = static_cast<std::uint8_t*>(allocate_aligned(kLarge));
    EXPECT_EQ(again, large) << "the kept mapping serves the next buffer that fits";
    again[kLarge - 1] = 3;
    auto* larger = static_cast<std::uint8_t*>(allocate_aligned(kLarger));
    larger[0] = larger[kLarger - 1] = 4;
    free_aligned(larger, kLarger);
    EXPECT_FALSE(mapped(larger)) << "a mapping with no buffer left, not the newest, is given back";
    free_aligned(again, kLarge);
  } else {
    EXPECT_FALSE(mapped(large)) << "a mapping with no buffer left, not the newest, is given back";
  }
}

// A kept mapping too small for the next buffer gives way to that buffer's own, which is kept in
// turn: a network prepared and freed layer by layer ends up reusing the mapping of its largest.
TEST(AlignedStorage, AKeptMappingTooSmallGivesWayToTheNext) {
  if (!pools_large_buffers()) GTEST_SKIP() << "no huge-page pool in this build (non-Linux or ASan)";
  constexpr std::size_t kFirst = 3 << 20, kSecond = 5 << 20, kThird = 1 << 20;
  auto* first = static_cast<std::uint8_t*>(allocate_aligned(kFirst));
  first[0] = 1;
  free_aligned(first, kFirst);
  if (!mapped(first)) {  // where another mapping, with buffers of other tests live, is the newest
    GTEST_SKIP() << "the first buffer's mapping was not the newest (buffers of other tests live)";
  }
  auto* second = static_cast<std::uint8_t*>(allocate_aligned(kSecond));
  second[0] = second[kSecond - 1] = 2;
  EXPECT_FALSE(mapped(first)) << "the kept mapping, empty and too small, is given back";
  free_aligned(second, kSecond);
  EXPECT_TRUE(mapped(second)) << "the new mapping is the newest: kept";
  auto* third = static_cast<std::uint8_t*>(allocate_aligned(kThird));
  EXPECT_EQ(third, second) << "the kept mapping serves the next buffer that fits";
  third[kThird - 1] = 3;
  free_aligned(third, kThird);
}
#endif

}  // namespace
}  // namespace qconv::detail
