// SPDX-License-Identifier: Apache-2.0
// Two's-complement wrap of an exact sum into s32: what a 32-bit accumulator register holds, and
// what SPEC §3 asks for when a caller accepts wrap-around. The tests' own, so an expected value
// never comes from the library's conversion.
#pragma once

#include <cstdint>

namespace qconv::test {

inline std::int32_t wrap_s32(std::int64_t exact) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<std::uint64_t>(exact)));
}

}  // namespace qconv::test
