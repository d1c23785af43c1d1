// SPDX-License-Identifier: Apache-2.0
// Seeded random bytes for test tensors: the same seed gives the same bytes on every platform
// (std::mt19937's sequence is fixed by the standard).
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

namespace qconv::test {

// `n` bytes, each below `bound` (at most 256).
inline std::vector<std::uint8_t> random_bytes(std::size_t n, unsigned seed, unsigned bound = 256) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> v(n);
  for (auto& x : v) x = static_cast<std::uint8_t>(rng() % bound);
  return v;
}

}  // namespace qconv::test
