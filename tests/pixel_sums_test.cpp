// SPDX-License-Identifier: Apache-2.0
// A kernel set's pixel sums (KernelSet::sum_pixels, a weight zero point's window sums) against
// sums worked out here: every channel count from 1 to 320 (each load count, with and without a
// tail, the 16- and 32-channel slots) and 1,000 and 2,000, pixels packed or further apart, every
// pixel count from 1 to 19 (the 8-pixel steps and the ones after them), bytes of 255 throughout
// for the largest sums. The conformance suites reach these only through whole convolutions, at a
// few channel counts; here a wrong sum names its pixel.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "engines/gemm/kernel_set.hpp"

#if defined(__x86_64__)
#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx512_vnni/kernel_set.hpp"

namespace qconv {
namespace {

using SumPixels = void (*)(const std::uint8_t*, std::int64_t, std::int64_t, std::int64_t,
                           std::int32_t*);

void expect_sums(SumPixels sum_pixels, std::int64_t channels, std::int64_t pixel_bytes,
                 std::int64_t pixels, bool all_255, std::mt19937& rng) {
  // The bytes past the last pixel's channels are never part of a sum: 0xff there too.
  std::vector<std::uint8_t> input(static_cast<std::size_t>(pixels * pixel_bytes + 64), 0xff);
  for (auto& b : input) {
    if (!all_255) b = static_cast<std::uint8_t>(rng());
  }
  std::vector<std::int32_t> got(static_cast<std::size_t>(pixels + 1), -7);
  sum_pixels(input.data(), pixels, pixel_bytes, channels, got.data());
  for (std::int64_t p = 0; p < pixels; ++p) {
    std::int32_t want = 0;
    for (std::int64_t c = 0; c < channels; ++c)
      want += input[static_cast<std::size_t>(p * pixel_bytes + c)];
    ASSERT_EQ(got[static_cast<std::size_t>(p)], want)
        << "channels " << channels << ", pixel bytes " << pixel_bytes << ", pixels " << pixels
        << ": pixel " << p;
  }
  EXPECT_EQ(got[static_cast<std::size_t>(pixels)], -7) << "written past the last pixel";
}

void expect_every_shape(SumPixels sum_pixels) {
  ASSERT_NE(sum_pixels, nullptr);
  std::mt19937 rng(20261206);
  std::vector<std::int64_t> channel_counts;
  for (std::int64_t c = 1; c <= 320; ++c) channel_counts.push_back(c);
  channel_counts.push_back(1000);
  channel_counts.push_back(2000);
  for (const std::int64_t channels : channel_counts) {
    for (const std::int64_t gap : {0, 1, 61}) {
      for (std::int64_t pixels = 1; pixels <= 19; pixels += channels > 64 ? 6 : 1) {
        expect_sums(sum_pixels, channels, channels + gap, pixels, false, rng);
        if (::testing::Test::HasFatalFailure()) return;
      }
    }
    expect_sums(sum_pixels, channels, channels, 17, true, rng);
    if (::testing::Test::HasFatalFailure()) return;
  }
}

bool has(detail::CpuFeatures needs) { return (detail::host_cpu_features() & needs) == needs; }

TEST(PixelSums, Avx512KernelsSumEveryPixel) {
  if (!has(detail::kAvx512f | detail::kAvx512bw | detail::kAvx512vl | detail::kAvx512dq |
           detail::kAvx512vnni)) {
    GTEST_SKIP() << "needs AVX-512 F, BW, VL, DQ and VNNI, which this CPU lacks";
  }
  expect_every_shape(detail::avx512_vnni::kernel_set().sum_pixels);
}

TEST(PixelSums, Avx2KernelsSumEveryPixel) {
  if (!has(detail::kAvx2)) GTEST_SKIP() << "needs AVX2, which this CPU lacks";
  expect_every_shape(detail::avx2::kernel_set().sum_pixels);
}

}  // namespace
}  // namespace qconv
#endif
