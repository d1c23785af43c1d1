// SPDX-License-Identifier: Apache-2.0
// The inner loop of GEMM weight packing: one tap of 16 output channels side by side in a panel,
// four input channels per 32-bit word (the K steps of vpdpbusd, tdpbusd and sdot), each K step's
// 16 words one 64-byte line; with the sums the padding patterns need, from the same rows.
#pragma once

#include <cstdint>

namespace qconv::detail::gemm {

inline constexpr int kLaneBlock = 16;

// Packs lane l's n values, the contiguous bytes from rows[l] (l < 16), as the words at
// out + (c / 4) * step_stride + l * 4 (value c in byte c % 4), each byte xor `flip` (0x80 turns
// u8 weights w into the s8 bits of w − 128); zeros after the last value, up to `steps` words per
// lane (steps >= (n + 3) / 4): every byte of the block is written. sums[l]: the sum of lane l's
// packed bytes read as s8, modulo 2^32.
void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     std::uint32_t* sums);

}  // namespace qconv::detail::gemm
