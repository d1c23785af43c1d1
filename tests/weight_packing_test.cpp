// SPDX-License-Identifier: Apache-2.0
// A kernel set's own weight packer (KernelSet::pack_lane_block) against the portable one
// (gemm::pack_lane_block): the same packed bytes, padding steps and sums, on random rows of every
// length from 1 to 200 values (the 64-byte chunks' tails), both flips, zero points at both ends
// of the s8 range, and step counts past the values (K padding); the portable one against its
// definition. The conformance suites reach the packer only through whole convolutions; here a
// wrong byte or sum names its lane and step.
#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <vector>

#include "core/cpu_features.hpp"
#include "engines/gemm/kernel_set.hpp"
#include "engines/gemm/panel_packing.hpp"

#if defined(__x86_64__)
#include "engines/x64/avx512_vnni/kernel_set.hpp"

namespace qconv {
namespace {

using detail::gemm::kLaneBlock;
using detail::gemm::LaneSums;

struct Packed {
  std::vector<std::int8_t> bytes;
  std::vector<std::uint32_t> sums;
  std::vector<std::int64_t> abs_sums;
};

using PackLaneBlock = void (*)(const std::uint8_t* const*, std::int64_t, std::int64_t, std::uint8_t,
                               std::int8_t*, std::int64_t, const LaneSums&);

Packed pack(PackLaneBlock packer, const std::vector<std::vector<std::uint8_t>>& rows,
            std::int64_t n, std::int64_t steps, std::uint8_t flip, std::int64_t step_stride,
            const std::vector<std::int32_t>& zero_points) {
  const std::uint8_t* row_pointers[kLaneBlock];
  for (int l = 0; l < kLaneBlock; ++l) row_pointers[l] = rows[static_cast<std::size_t>(l)].data();
  // Bytes the packer must leave alone (a panel's other lanes) hold 0x5a.
  Packed p{std::vector<std::int8_t>(static_cast<std::size_t>(steps * step_stride), 0x5a),
           std::vector<std::uint32_t>(kLaneBlock, 0xdeadbeef),
           std::vector<std::int64_t>(kLaneBlock, 1000)};  // abs sums add to what is there
  packer(row_pointers, n, steps, flip, p.bytes.data(), step_stride,
         {zero_points.data(), p.sums.data(), p.abs_sums.data()});
  return p;
}

void expect_same_packing(PackLaneBlock packer) {
  std::mt19937 rng(20261205);
  for (std::int64_t n = 1; n <= 200; ++n) {
    const std::int64_t steps = (n + 3) / 4 + static_cast<std::int64_t>(rng() % 20);
    const std::int64_t step_stride = 64 * (1 + static_cast<std::int64_t>(rng() % 4));
    const auto flip = static_cast<std::uint8_t>(n % 2 == 0 ? 0x80 : 0);
    std::vector<std::vector<std::uint8_t>> rows(kLaneBlock);
    for (auto& row : rows) {
      row.resize(static_cast<std::size_t>(n));
      for (auto& b : row) b = static_cast<std::uint8_t>(rng());
    }
    std::vector<std::int32_t> zero_points(kLaneBlock);
    for (int l = 0; l < kLaneBlock; ++l) {
      zero_points[static_cast<std::size_t>(l)] = l == 0   ? -128
                                                 : l == 1 ? 127
                                                 : l == 2
                                                     ? 0
                                                     : static_cast<std::int32_t>(rng() % 256) - 128;
    }
    const Packed want =
        pack(&detail::gemm::pack_lane_block, rows, n, steps, flip, step_stride, zero_points);
    const Packed got = pack(packer, rows, n, steps, flip, step_stride, zero_points);
    for (std::size_t i = 0; i < want.bytes.size(); ++i) {
      const auto step = static_cast<std::int64_t>(i) / step_stride;
      ASSERT_EQ(got.bytes[i], want.bytes[i]) << "n " << n << ", step " << step << ", byte "
                                             << static_cast<std::int64_t>(i) % step_stride;
    }
    for (int l = 0; l < kLaneBlock; ++l) {
      const auto i = static_cast<std::size_t>(l);
      ASSERT_EQ(got.sums[i], want.sums[i]) << "n " << n << ", lane " << l;
      ASSERT_EQ(got.abs_sums[i], want.abs_sums[i]) << "n " << n << ", lane " << l;
    }
  }
}

// The portable packer against values worked out here, so that the reference above is itself
// checked: lane l's byte c at step c / 4, byte c % 4, xor the flip; zeros past n.
TEST(WeightPacking, PortablePackerPlacesEveryByte) {
  const std::int64_t n = 37, steps = 12, step_stride = 128;
  std::vector<std::vector<std::uint8_t>> rows(kLaneBlock, std::vector<std::uint8_t>(n));
  for (int l = 0; l < kLaneBlock; ++l) {
    for (std::int64_t c = 0; c < n; ++c) {
      rows[static_cast<std::size_t>(l)][static_cast<std::size_t>(c)] =
          static_cast<std::uint8_t>(l * 16 + c * 7);
    }
  }
  const std::vector<std::int32_t> zero_points(kLaneBlock, 3);
  const Packed p =
      pack(&detail::gemm::pack_lane_block, rows, n, steps, 0x80, step_stride, zero_points);
  for (int l = 0; l < kLaneBlock; ++l) {
    std::int64_t sum = 0, abs_sum = 1000;
    for (std::int64_t c = 0; c < steps * 4; ++c) {
      const auto at = static_cast<std::size_t>(c / 4 * step_stride + l * 4 + c % 4);
      const std::int8_t want =
          c < n ? static_cast<std::int8_t>(
                      rows[static_cast<std::size_t>(l)][static_cast<std::size_t>(c)] ^ 0x80)
                : 0;
      ASSERT_EQ(p.bytes[at], want) << "lane " << l << ", value " << c;
      if (c < n) {
        sum += want;
        abs_sum += want > 3 ? want - 3 : 3 - want;
      }
    }
    EXPECT_EQ(p.sums[static_cast<std::size_t>(l)], static_cast<std::uint32_t>(sum)) << l;
    EXPECT_EQ(p.abs_sums[static_cast<std::size_t>(l)], abs_sum) << l;
    for (std::int64_t step = 0; step < steps; ++step) {  // the other lanes of the line untouched
      EXPECT_EQ(p.bytes[static_cast<std::size_t>(step * step_stride + 64)], 0x5a);
    }
  }
}

TEST(WeightPacking, Avx512PackerMatchesThePortableOne) {
  const detail::CpuFeatures needs = detail::kAvx512f | detail::kAvx512bw | detail::kAvx512vl |
                                    detail::kAvx512dq | detail::kAvx512vnni;
  if ((detail::host_cpu_features() & needs) != needs) {
    GTEST_SKIP() << "needs AVX-512 F, BW, VL, DQ and VNNI, which this CPU lacks";
  }
  const auto packer = detail::avx512_vnni::kernel_set().pack_lane_block;
  ASSERT_NE(packer, nullptr);
  expect_same_packing(packer);
}

}  // namespace
}  // namespace qconv
#endif
