// SPDX-License-Identifier: Apache-2.0
// The 16- and 32-lane fused depthwise kernels are each one template over two column interleaves:
// unpacks and shuffles on every AVX-512 CPU, VBMI byte permutes on the CPUs that have it, where the
// conformance tests then run only the VBMI one through the kernel. Here both against the layout
// the kernel's weights assume (byte 4c + r: row r's channel c), on random rows, so that each is
// checked on any CPU that can run it.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>

#include "core/cpu_features.hpp"

#if defined(__x86_64__)
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

}  // namespace
}  // namespace qconv
#endif
