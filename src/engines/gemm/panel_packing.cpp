// SPDX-License-Identifier: Apache-2.0
#include "engines/gemm/panel_packing.hpp"

#include <cstdlib>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

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

// Per lane of a block, running sums of its packed bytes b taken as u = b + 128 (the s8 bits
// with the top bit flipped): Σ u and Σ |u − r| with r = z + 128, z the lane's zero point. Fed 16
// bytes at a time from the packing loop, so the rows are read once.
class LaneSumAccumulators {
 public:
  explicit LaneSumAccumulators(const std::int32_t* zero_points) {
    for (int l = 0; l < kLaneBlock; ++l) {
      reference_[l] = static_cast<std::uint8_t>(zero_points[l] + 128);
#if defined(__SSE2__)
      sum_[l] = abs_[l] = _mm_setzero_si128();
      reference_bytes_[l] = _mm_set1_epi8(static_cast<char>(reference_[l]));
#endif
    }
  }

  // Sixteen packed bytes of lane l.
  void add(int l, Words packed) {
#if defined(__SSE2__)
    // psadbw against zero and against the reference: both sums in two 64-bit halves.
    const __m128i u = _mm_xor_si128(to_m128(packed), _mm_set1_epi8(static_cast<char>(0x80)));
    sum_[l] = _mm_add_epi64(sum_[l], _mm_sad_epu8(u, _mm_setzero_si128()));
    abs_[l] = _mm_add_epi64(abs_[l], _mm_sad_epu8(u, reference_bytes_[l]));
#else
    std::uint8_t bytes[16];
    std::memcpy(bytes, &packed, sizeof bytes);
    for (const std::uint8_t b : bytes) add_byte(l, b);
#endif
  }

  void add_byte(int l, std::uint8_t packed) {
    const auto u = static_cast<std::uint8_t>(packed ^ 0x80);
    totals_[l] += u;
    abs_totals_[l] += std::abs(u - reference_[l]);
  }

  // Once every byte is in: Σ u and Σ |u − r| of lane l.
  void finish() {
#if defined(__SSE2__)
    for (int l = 0; l < kLaneBlock; ++l) {
      totals_[l] += halves(sum_[l]);
      abs_totals_[l] += halves(abs_[l]);
    }
#endif
  }
  std::int64_t sum(int l) const { return totals_[l]; }
  std::int64_t abs(int l) const { return abs_totals_[l]; }

 private:
#if defined(__SSE2__)
  static __m128i to_m128(Words v) {
    __m128i m;
    std::memcpy(&m, &v, sizeof m);
    return m;
  }
  static std::int64_t halves(__m128i sums) {
    std::int64_t parts[2];
    std::memcpy(parts, &sums, sizeof parts);
    return parts[0] + parts[1];
  }
  __m128i sum_[kLaneBlock], abs_[kLaneBlock], reference_bytes_[kLaneBlock];
#endif
  std::uint8_t reference_[kLaneBlock];
  std::int64_t totals_[kLaneBlock] = {};
  std::int64_t abs_totals_[kLaneBlock] = {};
};

}  // namespace

void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     const LaneSums& lane_sums) {
  const Words flip_words = Words{} + flip * 0x01010101u;
  LaneSumAccumulators totals(lane_sums.zero_points);
  std::int64_t c = 0;
  // Four K steps of four lanes at a time: 16 bytes of each of four rows, transposed.
  for (; c + 16 <= n; c += 16) {
    std::int8_t* to = out + (c / 4) * step_stride;
    for (int l = 0; l < kLaneBlock; l += 4) {
      Words a = load(rows[l] + c) ^ flip_words, b = load(rows[l + 1] + c) ^ flip_words,
            d = load(rows[l + 2] + c) ^ flip_words, e = load(rows[l + 3] + c) ^ flip_words;
      totals.add(l, a);
      totals.add(l + 1, b);
      totals.add(l + 2, d);
      totals.add(l + 3, e);
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
        const auto packed = static_cast<std::uint8_t>(rows[l][c + i] ^ flip);
        totals.add_byte(l, packed);
        word |= std::uint32_t{packed} << (8 * i);
      }
      std::memcpy(to + l * 4, &word, 4);
    }
  }
  for (std::int64_t step = (n + 3) / 4; step < steps; ++step) {  // K padding
    std::memset(out + step * step_stride, 0, kLaneBlock * 4);
  }
  totals.finish();
  for (int l = 0; l < kLaneBlock; ++l) {  // Σ b = Σ u − 128 n, modulo 2^32
    lane_sums.sums[l] = static_cast<std::uint32_t>(totals.sum(l) - 128 * n);
    lane_sums.abs_sums[l] += totals.abs(l);
  }
}

}  // namespace qconv::detail::gemm
