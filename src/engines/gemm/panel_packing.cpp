// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/panel_packing.hpp"

#include <cstdlib>
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

using Bytes = std::uint8_t __attribute__((vector_size(16)));

// A 16x16 tile of bytes transposed: four rounds of interleaving row i with row i + 8 (each round
// moves one bit of the row index into the column index).
void transpose_tile(const std::uint8_t* src, std::int64_t src_stride, std::uint8_t* dst,
                    std::int64_t dst_stride) {
  Bytes r[16];
  for (int i = 0; i < 16; ++i) std::memcpy(&r[i], src + i * src_stride, sizeof(Bytes));
  for (int round = 0; round < 4; ++round) {
    Bytes t[16];
    for (int i = 0; i < 8; ++i) {
      t[2 * i] = __builtin_shufflevector(r[i], r[i + 8], 0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21,
                                         6, 22, 7, 23);
      t[2 * i + 1] = __builtin_shufflevector(r[i], r[i + 8], 8, 24, 9, 25, 10, 26, 11, 27, 12, 28,
                                             13, 29, 14, 30, 15, 31);
    }
    for (int i = 0; i < 16; ++i) r[i] = t[i];
  }
  for (int i = 0; i < 16; ++i) std::memcpy(dst + i * dst_stride, &r[i], sizeof(Bytes));
}

struct RowSums {
  std::uint32_t sum;  // Σ b as s8, modulo 2^32
  std::int64_t abs;   // Σ |b − zero_point|
};

// The sums of n bytes b = row[i] xor flip: the bytes biased to u8, summed 256 at a time in 16 bits
// (a widening sum that vectorizes), less the bias; the absolute differences as unsigned bytes
// (psadbw, uabal). Out of line: inlined, GCC 12 no longer finds the psadbw form.
[[gnu::noinline]] RowSums row_sums(const std::uint8_t* row, std::int64_t n, std::uint8_t flip,
                                   std::int32_t zero_point) {
  const auto biased = static_cast<std::uint8_t>(flip ^ 0x80);
  const auto reference = static_cast<std::uint8_t>(zero_point + 128);
  std::uint32_t sum = 0;
  std::int64_t abs = 0;
  for (std::int64_t begin = 0; begin < n; begin += 256) {
    const std::int64_t end = begin + 256 < n ? begin + 256 : n;
    std::uint16_t part = 0;  // at most 256 · 255
    int part_abs = 0;
    for (std::int64_t i = begin; i < end; ++i) {
      const auto u = static_cast<std::uint8_t>(row[i] ^ biased);
      part = static_cast<std::uint16_t>(part + u);
      part_abs += std::abs(u - reference);
    }
    sum += part;
    abs += part_abs;
  }
  return {sum - 128u * static_cast<std::uint32_t>(n), abs};
}

}  // namespace

void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     const LaneSums& lane_sums) {
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
  for (int l = 0; l < kLaneBlock; ++l) {
    const RowSums row = row_sums(rows[l], n, flip, lane_sums.zero_points[l]);
    lane_sums.sums[l] = row.sum;
    lane_sums.abs_sums[l] += row.abs;
  }
}

void transpose_bytes(const std::uint8_t* src, std::int64_t src_stride, std::int64_t rows,
                     std::int64_t cols, std::uint8_t* dst, std::int64_t dst_stride) {
  std::int64_t i = 0;
  for (; i + 16 <= rows; i += 16) {
    std::int64_t j = 0;
    for (; j + 16 <= cols; j += 16) {
      transpose_tile(src + i * src_stride + j, src_stride, dst + j * dst_stride + i, dst_stride);
    }
    for (; j < cols; ++j) {
      for (std::int64_t k = 0; k < 16; ++k)
        dst[j * dst_stride + i + k] = src[(i + k) * src_stride + j];
    }
  }
  for (; i < rows; ++i) {
    for (std::int64_t j = 0; j < cols; ++j) dst[j * dst_stride + i] = src[i * src_stride + j];
  }
}

}  // namespace qconv::detail::gemm
