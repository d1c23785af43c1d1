// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/panel_packing.hpp"

#include <cstring>

namespace qconv::detail::gemm {
namespace {

// Four 32-bit words in a 16-byte vector: SSE2 on x86-64, NEON on AArch64 (GCC and Clang
// vector extensions, so that this file stays free of any one ISA).
using Words = std::uint32_t __attribute__((vector_size(16)));

Words load(const std::uint8_t* p) {
  Words v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

void store(std::int8_t* p, Words v) { std::memcpy(p, &v, sizeof v); }

// Rows a, b, c, d of four words each in, columns out: a 4x4 transpose of words.
void transpose(Words& a, Words& b, Words& c, Words& d) {
  const Words ab_low = __builtin_shufflevector(a, b, 0, 4, 1, 5);
  const Words ab_high = __builtin_shufflevector(a, b, 2, 6, 3, 7);
  const Words cd_low = __builtin_shufflevector(c, d, 0, 4, 1, 5);
  const Words cd_high = __builtin_shufflevector(c, d, 2, 6, 3, 7);
  a = __builtin_shufflevector(ab_low, cd_low, 0, 1, 4, 5);
  b = __builtin_shufflevector(ab_low, cd_low, 2, 3, 6, 7);
  c = __builtin_shufflevector(ab_high, cd_high, 0, 1, 4, 5);
  d = __builtin_shufflevector(ab_high, cd_high, 2, 3, 6, 7);
}

// Σ of n bytes xor flip, read as s8: the bytes biased to u8, summed 256 at a time in 16 bits
// (a widening sum that vectorizes), less the bias.
std::uint32_t signed_sum(const std::uint8_t* row, std::int64_t n, std::uint8_t flip) {
  const auto biased = static_cast<std::uint8_t>(flip ^ 0x80);
  std::uint32_t sum = 0;
  for (std::int64_t begin = 0; begin < n; begin += 256) {
    const std::int64_t end = begin + 256 < n ? begin + 256 : n;
    std::uint16_t part = 0;  // at most 256 · 255
    for (std::int64_t i = begin; i < end; ++i) {
      part = static_cast<std::uint16_t>(part + static_cast<std::uint8_t>(row[i] ^ biased));
    }
    sum += part;
  }
  return sum - 128u * static_cast<std::uint32_t>(n);
}

}  // namespace

void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     std::uint32_t* sums) {
  const Words flip_words = Words{} + flip * 0x01010101u;
  std::int64_t c = 0;
  // Four K steps of four lanes at a time: 16 bytes of each of four rows, transposed.
  for (; c + 16 <= n; c += 16) {
    std::int8_t* to = out + (c / 4) * step_stride;
    for (int l = 0; l < kLaneBlock; l += 4) {
      Words a = load(rows[l] + c) ^ flip_words, b = load(rows[l + 1] + c) ^ flip_words,
            d = load(rows[l + 2] + c) ^ flip_words, e = load(rows[l + 3] + c) ^ flip_words;
      transpose(a, b, d, e);
      store(to + l * 4, a);
      store(to + step_stride + l * 4, b);
      store(to + 2 * step_stride + l * 4, d);
      store(to + 3 * step_stride + l * 4, e);
    }
  }
  // The last steps a word at a time, zeros after the last value.
  for (; c < n; c += 4) {
    std::int8_t* to = out + (c / 4) * step_stride;
    for (int l = 0; l < kLaneBlock; ++l) {
      std::uint32_t word = 0;
      for (std::int64_t i = 0; i < 4 && c + i < n; ++i) {
        word |= std::uint32_t{static_cast<std::uint8_t>(rows[l][c + i] ^ flip)} << (8 * i);
      }
      std::memcpy(to + l * 4, &word, 4);
    }
  }
  for (std::int64_t step = (n + 3) / 4; step < steps; ++step) {  // K padding
    std::memset(out + step * step_stride, 0, kLaneBlock * 4);
  }
  for (int l = 0; l < kLaneBlock; ++l) sums[l] = signed_sum(rows[l], n, flip);
}

}  // namespace qconv::detail::gemm
