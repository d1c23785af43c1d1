// SPDX-License-Identifier: Apache-2.0
// One column of 4 input rows interleaved for vpdpbusd: each s32 lane the 4 rows' bytes of one
// channel. Shared by the column buffer's build (depthwise_columns.cpp) and the kernels that
// interleave their columns in registers (depthwise_fused_kernels.cpp, depthwise_fused_vbmi_kernels
// .cpp). Only for files built with AVX-512 flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace qconv::detail::avx512_vnni {

// Byte then word unpacks inside 128-bit lanes: vector q of the result holds dword k of 128-bit
// lane l from channel 16·l + 4·q + k of the rows (depthwise_lane in kernels.hpp).
[[gnu::always_inline]] inline void interleave_rows(__m512i a, __m512i b, __m512i x, __m512i y,
                                                   __m512i (&q)[4]) {
  const __m512i ab_low = _mm512_unpacklo_epi8(a, b), ab_high = _mm512_unpackhi_epi8(a, b);
  const __m512i xy_low = _mm512_unpacklo_epi8(x, y), xy_high = _mm512_unpackhi_epi8(x, y);
  q[0] = _mm512_unpacklo_epi16(ab_low, xy_low);
  q[1] = _mm512_unpackhi_epi16(ab_low, xy_low);
  q[2] = _mm512_unpacklo_epi16(ab_high, xy_high);
  q[3] = _mm512_unpackhi_epi16(ab_high, xy_high);
}

// Blocks of 32 or 16 channels (m = 1) in ymm or xmm registers: half the lanes of a zmm would be
// wasted, and on Intel cores 256- and 128-bit byte unpacks issue on two ports where 512-bit ones
// have one (on Zen 5 all of them measured 4 per cycle).
template <int kWidth>
struct Narrow;
template <>
struct Narrow<32> {
  using V = __m256i;
  static __m256i load(const std::uint8_t* at, std::uint32_t mask, bool full) {
    const __m256i v = full ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at))
                           : _mm256_maskz_loadu_epi8(mask, at);
    // Channel groups in the order of channel_order<32> (depthwise_columns.cpp): the unpacks then
    // leave them in order.
    return _mm256_permutevar8x32_epi32(v, _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7));
  }
  static __m256i fill(std::uint8_t v) { return _mm256_set1_epi8(static_cast<char>(v)); }
  static __m256i flip(__m256i v) { return _mm256_xor_si256(v, fill(0x80)); }
  static __m256i lo8(__m256i a, __m256i b) { return _mm256_unpacklo_epi8(a, b); }
  static __m256i hi8(__m256i a, __m256i b) { return _mm256_unpackhi_epi8(a, b); }
  static __m256i lo16(__m256i a, __m256i b) { return _mm256_unpacklo_epi16(a, b); }
  static __m256i hi16(__m256i a, __m256i b) { return _mm256_unpackhi_epi16(a, b); }
  static void store(std::uint8_t* at, __m256i v) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(at), v);
  }
};
template <>
struct Narrow<16> {
  using V = __m128i;
  static __m128i load(const std::uint8_t* at, std::uint32_t mask, bool full) {
    return full ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(at))
                : _mm_maskz_loadu_epi8(static_cast<__mmask16>(mask), at);
  }
  static __m128i fill(std::uint8_t v) { return _mm_set1_epi8(static_cast<char>(v)); }
  static __m128i flip(__m128i v) { return _mm_xor_si128(v, fill(0x80)); }
  static __m128i lo8(__m128i a, __m128i b) { return _mm_unpacklo_epi8(a, b); }
  static __m128i hi8(__m128i a, __m128i b) { return _mm_unpackhi_epi8(a, b); }
  static __m128i lo16(__m128i a, __m128i b) { return _mm_unpacklo_epi16(a, b); }
  static __m128i hi16(__m128i a, __m128i b) { return _mm_unpackhi_epi16(a, b); }
  static void store(std::uint8_t* at, __m128i v) {
    _mm_store_si128(reinterpret_cast<__m128i*>(at), v);
  }
};

// interleave_rows for a block of 32 or 16 channels, its rows loaded by Narrow<kWidth>::load: q[i]
// is the column's bytes kWidth·i to kWidth·(i + 1) (with 32 channels q[0] and q[1] make its first
// vector, channels 0-15 in order; with 16, q[0] to q[3] are its one vector's 128-bit lanes).
template <int kWidth>
[[gnu::always_inline]] inline void interleave_narrow_rows(typename Narrow<kWidth>::V a,
                                                          typename Narrow<kWidth>::V b,
                                                          typename Narrow<kWidth>::V x,
                                                          typename Narrow<kWidth>::V y,
                                                          typename Narrow<kWidth>::V (&q)[4]) {
  using N = Narrow<kWidth>;
  const auto ab_low = N::lo8(a, b), ab_high = N::hi8(a, b);
  const auto xy_low = N::lo8(x, y), xy_high = N::hi8(x, y);
  q[0] = N::lo16(ab_low, xy_low);
  q[1] = N::hi16(ab_low, xy_low);
  q[2] = N::lo16(ab_high, xy_high);
  q[3] = N::hi16(ab_high, xy_high);
}

// A 32-lane block's column of 4 rows (32 bytes each, read by load) interleaved into two vectors,
// channels 0-15 and 16-31 in order (the fused tiles' Interleave32, depthwise_fused_tiles.hpp):
// 256-bit unpacks (as the buffer's), their four results paired into two vectors.
struct InterleaveRows32 {
  [[gnu::always_inline]] static __m256i load(const std::uint8_t* at) {
    return Narrow<32>::load(at, ~std::uint32_t{0}, true);
  }
  [[gnu::always_inline]] static void rows(__m256i a, __m256i b, __m256i x, __m256i y,
                                          __m512i (&q)[2]) {
    __m256i h[4];
    interleave_narrow_rows<32>(a, b, x, y, h);
    q[0] = _mm512_inserti64x4(_mm512_castsi256_si512(h[0]), h[1], 1);
    q[1] = _mm512_inserti64x4(_mm512_castsi256_si512(h[2]), h[3], 1);
  }
};

// 16 channels of 4 rows (16 bytes each) into one vector, each dword the 4 rows' bytes of one
// channel, channels in order: the rows side by side in the 128-bit lanes, one vpermd moving
// channels 4j..4j+3 of every row into lane j, one vpshufb transposing each lane's 4x4 bytes.
[[gnu::always_inline]] inline __m512i interleave_rows_16(__m128i a, __m128i b, __m128i x,
                                                         __m128i y) {
  __m512i v = _mm512_castsi128_si512(a);
  v = _mm512_inserti32x4(v, b, 1);
  v = _mm512_inserti32x4(v, x, 2);
  v = _mm512_inserti32x4(v, y, 3);
  // Dword 4j + r from dword 4r + j; then in each lane byte 4k + r from byte 4r + k.
  const __m512i lanes = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  const __m512i bytes =
      _mm512_broadcast_i32x4(_mm_setr_epi8(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15));
  return _mm512_shuffle_epi8(_mm512_permutexvar_epi32(lanes, v), bytes);
}

// interleave_rows_16 as the 16-lane fused kernel's column interleave (depthwise_fused_vector.hpp):
// 3 lane inserts, one vpermd and one vpshufb, on every AVX-512 CPU.
struct InterleaveRows16 {
  [[gnu::always_inline]] static __m512i rows(__m128i a, __m128i b, __m128i x, __m128i y) {
    return interleave_rows_16(a, b, x, y);
  }
};

#if defined(__AVX512VBMI__)
// The same result with VBMI (only in files built with it, for CPUs that have it): rows a and b in
// one 256-bit half, x and y in another (two 128-bit inserts on 256-bit vectors), then one vpermt2b
// taking byte 4c + r of the result from row r's byte c: 3 shuffles a column where
// interleave_rows_16 takes 5.
struct InterleaveRows16Vbmi {
  [[gnu::always_inline]] static __m512i rows(__m128i a, __m128i b, __m128i x, __m128i y) {
    const __m256i ab = _mm256_inserti128_si256(_mm256_castsi128_si256(a), b, 1);
    const __m256i xy = _mm256_inserti128_si256(_mm256_castsi128_si256(x), y, 1);
    // Table bytes 0-31: a, b; 64-95: x, y.
    const __m512i index = _mm512_set_epi8(
        95, 79, 31, 15, 94, 78, 30, 14, 93, 77, 29, 13, 92, 76, 28, 12, 91, 75, 27, 11, 90, 74, 26,
        10, 89, 73, 25, 9, 88, 72, 24, 8, 87, 71, 23, 7, 86, 70, 22, 6, 85, 69, 21, 5, 84, 68, 20,
        4, 83, 67, 19, 3, 82, 66, 18, 2, 81, 65, 17, 1, 80, 64, 16, 0);
    return _mm512_permutex2var_epi8(_mm512_castsi256_si512(ab), index, _mm512_castsi256_si512(xy));
  }
};

// InterleaveRows32 with VBMI: rows a and b side by side in one vector, x and y in another (one
// 256-bit insert each), then one vpermt2b per 16 channels, taking byte 4c + r of the result from
// row r's byte c: 4 shuffles a column where the unpacks take 10, and the loads no channel-order
// permute.
struct InterleaveRows32Vbmi {
  [[gnu::always_inline]] static __m256i load(const std::uint8_t* at) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at));
  }
  [[gnu::always_inline]] static void rows(__m256i a, __m256i b, __m256i x, __m256i y,
                                          __m512i (&q)[2]) {
    const __m512i ab = _mm512_inserti64x4(_mm512_castsi256_si512(a), b, 1);
    const __m512i xy = _mm512_inserti64x4(_mm512_castsi256_si512(x), y, 1);
    // Table bytes 0-31: a, 32-63: b, 64-95: x, 96-127: y; channel c of row r at 32·r + c.
    alignas(64) static constexpr std::uint8_t kIndex[2][64] = {
        {0,  32, 64, 96,  1,  33, 65, 97,  2,  34, 66, 98,  3,  35, 67, 99,
         4,  36, 68, 100, 5,  37, 69, 101, 6,  38, 70, 102, 7,  39, 71, 103,
         8,  40, 72, 104, 9,  41, 73, 105, 10, 42, 74, 106, 11, 43, 75, 107,
         12, 44, 76, 108, 13, 45, 77, 109, 14, 46, 78, 110, 15, 47, 79, 111},
        {16, 48, 80, 112, 17, 49, 81, 113, 18, 50, 82, 114, 19, 51, 83, 115,
         20, 52, 84, 116, 21, 53, 85, 117, 22, 54, 86, 118, 23, 55, 87, 119,
         24, 56, 88, 120, 25, 57, 89, 121, 26, 58, 90, 122, 27, 59, 91, 123,
         28, 60, 92, 124, 29, 61, 93, 125, 30, 62, 94, 126, 31, 63, 95, 127}};
    q[0] = _mm512_permutex2var_epi8(ab, _mm512_load_si512(kIndex[0]), xy);
    q[1] = _mm512_permutex2var_epi8(ab, _mm512_load_si512(kIndex[1]), xy);
  }
};
#endif

}  // namespace qconv::detail::avx512_vnni
