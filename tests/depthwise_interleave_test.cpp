// SPDX-License-Identifier: Apache-2.0
// The 16- and 32-lane fused depthwise kernels are each one template over two column interleaves:
// unpacks and shuffles on every AVX-512 CPU, VBMI byte permutes on the CPUs that have it, where the
// conformance tests then run only the VBMI one through the kernel. Here both against the layout
// the kernel's weights assume (byte 4c + r: row r's channel c), on random rows, so that each is
// checked on any CPU that can run it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/aligned.hpp"
#include "core/cpu_features.hpp"

#if defined(__x86_64__)
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "support/interleave_kernels.hpp"

namespace qconv {
namespace {

template <int kChannels>
using Interleave = void (*)(const std::uint8_t* const[4], std::uint8_t[4 * kChannels]);

template <int kChannels>
void expect_interleaved(Interleave<kChannels> interleave) {
  std::mt19937 rng(20261205);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 64; ++trial) {
    std::uint8_t data[4][kChannels];
    for (auto& row : data) {
      for (auto& b : row) b = static_cast<std::uint8_t>(byte(rng));
    }
    const std::uint8_t* const rows[4] = {data[0], data[1], data[2], data[3]};
    std::uint8_t out[4 * kChannels];
    interleave(rows, out);
    for (int c = 0; c < kChannels; ++c) {
      for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(out[4 * c + r], data[r][c]) << "channel " << c << ", row " << r;
      }
    }
  }
}

constexpr detail::CpuFeatures kAvx512 =
    detail::kAvx512f | detail::kAvx512bw | detail::kAvx512vl | detail::kAvx512dq;
constexpr detail::CpuFeatures kAvx512Vbmi = kAvx512 | detail::kAvx512vbmi;

// expect_interleaved on this CPU where it has `needs` (named by `named`), else the test skipped.
template <int kChannels>
void expect_interleaved_where(detail::CpuFeatures needs, const char* named,
                              Interleave<kChannels> interleave) {
  if ((detail::host_cpu_features() & needs) != needs) {
    GTEST_SKIP() << "needs " << named << ", which this CPU lacks";
  }
  expect_interleaved<kChannels>(interleave);
}

TEST(DepthwiseInterleave, SixteenLanesByShuffles) {
  expect_interleaved_where<16>(kAvx512, "AVX-512 F, BW, VL and DQ",
                               &test::interleave_rows_16_shuffles);
}

TEST(DepthwiseInterleave, SixteenLanesByVbmiPermute) {
  expect_interleaved_where<16>(kAvx512Vbmi, "AVX-512 F, BW, VL, DQ and VBMI",
                               &test::interleave_rows_16_vbmi);
}

TEST(DepthwiseInterleave, ThirtyTwoLanesByShuffles) {
  expect_interleaved_where<32>(kAvx512, "AVX-512 F, BW, VL and DQ",
                               &test::interleave_rows_32_shuffles);
}

TEST(DepthwiseInterleave, ThirtyTwoLanesByVbmiPermutes) {
  expect_interleaved_where<32>(kAvx512Vbmi, "AVX-512 F, BW, VL, DQ and VBMI",
                               &test::interleave_rows_32_vbmi);
}

// The column buffer of a 32-lane block built by VBMI permutes (depthwise_columns_32_vbmi) against
// the unpacks' (depthwise_columns): byte for byte the same, over columns in the left and right
// padding, null rows, two groups, all 32 channels read or fewer (masked), u8 and s8 (flipped)
// inputs, pixels of 32 channels or more.
TEST(DepthwiseInterleave, ThirtyTwoLaneColumnBuffersAlike) {
  if ((detail::host_cpu_features() & kAvx512Vbmi) != kAvx512Vbmi) {
    GTEST_SKIP() << "needs AVX-512 F, BW, VL, DQ and VBMI, which this CPU lacks";
  }
  std::mt19937 rng(20261206);
  for (int trial = 0; trial < 48; ++trial) {
    const std::int64_t pixel_bytes = trial % 3 == 0 ? 32 : 40 + trial % 5;
    const std::int64_t in_width = 5 + trial % 7, rows = 8;
    std::vector<std::uint8_t> image(static_cast<std::size_t>(rows * in_width * pixel_bytes + 64));
    for (auto& b : image) b = static_cast<std::uint8_t>(rng());
    const std::uint8_t* row_at[8];
    for (int i = 0; i < 8; ++i) {  // rows 3 and 6 null (padding)
      row_at[i] = i % 3 == 0 && i > 0 ? nullptr : image.data() + i * in_width * pixel_bytes;
    }
    detail::avx512_vnni::DepthwiseColumns c{};
    c.rows = row_at;
    c.channel_offset = pixel_bytes - 32 - trial % 2 * (pixel_bytes - 32);  // last or first 32
    c.groups = 2;
    c.pixel_bytes = pixel_bytes;
    c.in_width = in_width;
    c.first_column = -1 - trial % 2;
    c.columns = static_cast<std::int32_t>(in_width + 3);
    c.width = 32;
    c.input_bytes = trial % 4 == 3 ? 17 + trial % 15 : 32;
    c.flip = trial % 2 == 1;
    c.zero_point = static_cast<std::uint8_t>(rng());
    const auto bytes = static_cast<std::size_t>(c.groups * c.columns * 4 * 32);
    detail::AlignedVector<std::uint8_t> want(bytes, 1), got(bytes, 2);  // 64-byte aligned
    c.out = want.data();
    detail::avx512_vnni::depthwise_columns(c);
    c.out = got.data();
    detail::avx512_vnni::depthwise_columns_32_vbmi(c);
    for (std::size_t i = 0; i < bytes; ++i) {
      ASSERT_EQ(got[i], want[i]) << "trial " << trial << ", column "
                                 << i / 128 % static_cast<std::size_t>(c.columns) << ", byte "
                                 << i % 128;
    }
  }
}

}  // namespace
}  // namespace qconv
#endif
