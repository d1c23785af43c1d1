// SPDX-License-Identifier: Apache-2.0
// KernelSet::pack_lane_block in 512-bit vectors: a lane block's 16 rows 64 bytes at a time (16 K
// steps), one 16x16 transpose of words in registers, and the sums the packer owes taken from the
// transposed lines with two vpdpbusd each (lane l of every line is channel l), so that no
// per-row accumulators are needed. Preparing a ResNet-50 layer of 512 channels was mostly this
// loop in its portable form (16-byte words, the per-row sums kept in memory). Built with
// AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include <cstdlib>

#include "engines/gemm/panel_packing.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/lane_transpose.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

static_assert(gemm::kLaneBlock == 16, "one 64-byte line of 16 words per K step");

// Rows r[0..15] of 16 words each in, lines out: line s (r[s] afterwards) holds word s of every
// row, row l in lane l. Two rounds of unpacks within 128-bit lanes, then the lanes transposed.
inline void transpose_words(__m512i (&r)[16]) {
  __m512i t[16];
#pragma GCC unroll 8
  for (int k = 0; k < 8; ++k) {  // per 128-bit lane L: rows 2k, 2k + 1 of words 4L .. 4L + 3
    t[2 * k] = _mm512_unpacklo_epi32(r[2 * k], r[2 * k + 1]);
    t[2 * k + 1] = _mm512_unpackhi_epi32(r[2 * k], r[2 * k + 1]);
  }
  __m512i v[4][4];  // v[g][m], lane L: word 4L + m of rows 4g .. 4g + 3
#pragma GCC unroll 4
  for (int g = 0; g < 4; ++g) {
    v[g][0] = _mm512_unpacklo_epi64(t[4 * g], t[4 * g + 2]);
    v[g][1] = _mm512_unpackhi_epi64(t[4 * g], t[4 * g + 2]);
    v[g][2] = _mm512_unpacklo_epi64(t[4 * g + 1], t[4 * g + 3]);
    v[g][3] = _mm512_unpackhi_epi64(t[4 * g + 1], t[4 * g + 3]);
  }
#pragma GCC unroll 4
  for (int m = 0; m < 4; ++m) {
    transpose_lanes(v[0][m], v[1][m], v[2][m], v[3][m]);  // vector L: word 4L + m of all rows
#pragma GCC unroll 4
    for (int lane = 0; lane < 4; ++lane) r[4 * lane + m] = v[lane][m];
  }
}

}  // namespace

void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     const gemm::LaneSums& lane_sums) {
  const __m512i flips = _mm512_set1_epi8(static_cast<char>(flip));
  const __m512i ones = _mm512_set1_epi8(1);
  // Each lane's zero point in all four bytes of its word.
  const __m512i zero_points =
      _mm512_shuffle_epi8(_mm512_loadu_si512(lane_sums.zero_points),
                          _mm512_set4_epi32(0x0c0c0c0c, 0x08080808, 0x04040404, 0x00000000));
  __m512i sums = _mm512_setzero_si512();  // Σ b (s8), modulo 2^32
  __m512i abs = _mm512_setzero_si512();   // Σ |b − z| since the last flush
  // Σ |b − z| must not wrap (the accumulator bound is checked with it): a chunk adds at most
  // 64 · 255 per lane, so the s32 lanes go into 64-bit totals every kFlushChunks chunks.
  constexpr std::int64_t kFlushChunks = std::int64_t{1} << 16;
  std::int64_t abs_total[16] = {};
  const auto flush = [&] {
    alignas(64) std::int32_t lanes[16];
    _mm512_store_si512(lanes, abs);
    for (int l = 0; l < 16; ++l) abs_total[l] += lanes[l];
    abs = _mm512_setzero_si512();
  };
  std::int64_t chunks = 0;
  for (std::int64_t c = 0; c < n; c += 64, ++chunks) {
    if (chunks % kFlushChunks == kFlushChunks - 1) flush();
    // Bytes past the last value load as `flip`, which packs to 0. The rows' next lines are
    // prefetched: 16 short strided streams (a 3x3 layer's tap of 512 channels is 8 chunks, rows
    // 4.6 KB apart) that the hardware prefetcher does not follow; without it ResNet-50's
    // 512-channel 3x3 layers took 0.24-0.33 ms to pack after other work, 0.09-0.11 with it (AMD Zen
    // 5).
    const __mmask64 valid = n - c >= 64 ? ~__mmask64{0} : (~__mmask64{0}) >> (64 - (n - c));
    __m512i r[16];
#pragma GCC unroll 16
    for (int l = 0; l < 16; ++l) {
      r[l] = _mm512_xor_si512(_mm512_mask_loadu_epi8(flips, valid, rows[l] + c), flips);
      _mm_prefetch(reinterpret_cast<const char*>(rows[l] + c + 256), _MM_HINT_T0);
    }
    transpose_words(r);
    const std::int64_t first_step = c / 4;
#pragma GCC unroll 16
    for (int s = 0; s < 16; ++s) {
      sums = _mm512_dpbusd_epi32(sums, ones, r[s]);
      const __m512i distance =
          _mm512_sub_epi8(_mm512_max_epi8(r[s], zero_points), _mm512_min_epi8(r[s], zero_points));
      abs = _mm512_dpbusd_epi32(abs, distance, ones);
      if (first_step + s < steps) _mm512_storeu_si512(out + (first_step + s) * step_stride, r[s]);
    }
  }
  for (std::int64_t step = chunks * 16; step < steps; ++step) {  // K padding
    _mm512_storeu_si512(out + step * step_stride, _mm512_setzero_si512());
  }
  flush();
  alignas(64) std::int32_t lane_sum[16];
  _mm512_store_si512(lane_sum, sums);
  // The padding bytes of the last chunk (b = 0) added |0 − z| each to the distances.
  const std::int64_t padding = chunks * 64 - n;
  for (int l = 0; l < 16; ++l) {
    lane_sums.sums[l] = static_cast<std::uint32_t>(lane_sum[l]);
    lane_sums.abs_sums[l] += abs_total[l] - padding * std::abs(lane_sums.zero_points[l]);
  }
}

}  // namespace qconv::detail::avx512_vnni
