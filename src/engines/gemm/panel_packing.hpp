// SPDX-License-Identifier: Apache-2.0
// The inner loop of GEMM weight packing: one tap of 16 output channels side by side in a panel,
// four input channels per 32-bit word (the K steps of vpdpbusd, tdpbusd and sdot), each K step's
// 16 words one 64-byte line; with the sums the padding patterns and the accumulator bound need,
// from the same rows (other layouts come into those rows through detail::transpose_bytes).
#pragma once

#include <cstdint>

namespace qconv::detail::gemm {

inline constexpr int kLaneBlock = 16;

// Packs lane l's n values, the contiguous bytes from rows[l] (l < 16), as the words at
// out + (c / 4) * step_stride + l * 4 (value c in byte c % 4), each byte xor `flip` (0x80 turns
// u8 weights w into the s8 bits of w − 128); zeros after the last value, up to `steps` words per
// lane (steps >= (n + 3) / 4): every byte of the block is written. The sums, from the same rows:
// sums[l] = Σ of lane l's packed bytes b read as s8 (modulo 2^32), and abs_sums[l] += Σ |b − z|
// with z = zero_points[l] (lane l's zero point in the packed form, within [−128, 127]).
struct LaneSums {
  const std::int32_t* zero_points;
  std::uint32_t* sums;
  std::int64_t* abs_sums;
};
void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     const LaneSums& lane_sums);

}  // namespace qconv::detail::gemm
