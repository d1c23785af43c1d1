// SPDX-License-Identifier: Apache-2.0
// The 16-lane fused depthwise kernel is one template over two column interleaves: unpacks and
// shuffles on every AVX-512 CPU, one VBMI byte permute on the CPUs that have it, where the
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

using Interleave = void (*)(const std::uint8_t* const[4], std::uint8_t[64]);

void expect_interleaved(Interleave interleave) {
  std::mt19937 rng(20261205);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int trial = 0; trial < 64; ++trial) {
    std::uint8_t data[4][16];
    for (auto& row : data) {
      for (auto& b : row) b = static_cast<std::uint8_t>(byte(rng));
    }
    const std::uint8_t* const rows[4] = {data[0], data[1], data[2], data[3]};
    std::uint8_t out[64];
    interleave(rows, out);
    for (int c = 0; c < 16; ++c) {
      for (int r = 0; r < 4; ++r) {
        ASSERT_EQ(out[4 * c + r], data[r][c]) << "channel " << c << ", row " << r;
      }
    }
  }
}

constexpr detail::CpuFeatures kAvx512 =
    detail::kAvx512f | detail::kAvx512bw | detail::kAvx512vl | detail::kAvx512dq;

TEST(DepthwiseInterleave, SixteenLanesByShuffles) {
  if ((detail::host_cpu_features() & kAvx512) != kAvx512) {
    GTEST_SKIP() << "needs AVX-512 F, BW, VL and DQ, which this CPU lacks";
  }
  expect_interleaved(&test::interleave_rows_16_shuffles);
}

TEST(DepthwiseInterleave, SixteenLanesByVbmiPermute) {
  const detail::CpuFeatures needs = kAvx512 | detail::kAvx512vbmi;
  if ((detail::host_cpu_features() & needs) != needs) {
    GTEST_SKIP() << "needs AVX-512 F, BW, VL, DQ and VBMI, which this CPU lacks";
  }
  expect_interleaved(&test::interleave_rows_16_vbmi);
}

}  // namespace
}  // namespace qconv
#endif
