// SPDX-License-Identifier: Apache-2.0
// The sum of each pixel's channel bytes (KernelSet::sum_pixels): one vpsadbw per 64 bytes, and the
// eight partial sums of 8 pixels reduced together, so a pixel costs about two instructions more
// than its loads rather than a horizontal reduction of its own. Built with AVX-512 flags: see
// kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// A pixel's channel bytes as whole 64-byte loads and a masked tail, worked out once per call.
struct ChannelSpan {
  std::int64_t whole;  // 64-byte loads
  __mmask64 tail;      // the bytes after them (0: none)
  explicit ChannelSpan(std::int64_t channels)
      : whole(channels / 64),
        tail(channels % 64 == 0 ? 0 : (~std::uint64_t{0}) >> (64 - channels % 64)) {}
};

// Eight qword partial sums (each below 2^32) of the pixel's bytes. kOneLoad: at most 64 channels,
// all in the tail's masked load (no loop, no branch per pixel).
template <bool kOneLoad>
inline __m512i pixel_partials(const std::uint8_t* p, const ChannelSpan& span) {
  const __m512i zero = _mm512_setzero_si512();
  if constexpr (kOneLoad) return _mm512_sad_epu8(_mm512_maskz_loadu_epi8(span.tail, p), zero);
  __m512i sums = zero;
  for (std::int64_t i = 0; i < span.whole; ++i) {
    sums = _mm512_add_epi64(sums, _mm512_sad_epu8(_mm512_loadu_si512(p + 64 * i), zero));
  }
  if (span.tail != 0) {
    sums = _mm512_add_epi64(
        sums, _mm512_sad_epu8(_mm512_maskz_loadu_epi8(span.tail, p + 64 * span.whole), zero));
  }
  return sums;
}

// Two pixels' partials in one vector: a's in the even dwords, b's in the odd ones.
inline __m512i interleave(__m512i a, __m512i b) {
  return _mm512_add_epi64(a, _mm512_slli_epi64(b, 32));
}

// Four pixels (two interleaved pairs): each 128-bit lane ends up as [a b c d], that lane's two
// qword positions added.
inline __m512i four(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

template <bool kOneLoad>
void sum_pixels_of(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                   const ChannelSpan& span, std::int32_t* out) {
  const auto partials = [&](std::int64_t i) {
    return pixel_partials<kOneLoad>(in + i * pixel_bytes, span);
  };
  std::int64_t i = 0;
  for (; i + 8 <= pixels; i += 8) {
    const __m512i abcd = four(interleave(partials(i), partials(i + 1)),
                              interleave(partials(i + 2), partials(i + 3)));
    const __m512i efgh = four(interleave(partials(i + 4), partials(i + 5)),
                              interleave(partials(i + 6), partials(i + 7)));
    // Lanes (abcd 0, abcd 2, efgh 0, efgh 2) + (abcd 1, abcd 3, efgh 1, efgh 3), then the two
    // halves of each: abcd's four lanes in dwords 0-3, efgh's in 4-7.
    const __m512i pairs =
        _mm512_add_epi32(_mm512_shuffle_i64x2(abcd, efgh, _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_i64x2(abcd, efgh, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m512i order = _mm512_shuffle_i64x2(pairs, pairs, _MM_SHUFFLE(3, 1, 2, 0));
    const __m256i sums =
        _mm256_add_epi32(_mm512_castsi512_si256(order), _mm512_extracti64x4_epi64(order, 1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), sums);
  }
  for (; i < pixels; ++i) {
    out[i] = static_cast<std::int32_t>(_mm512_reduce_add_epi64(partials(i)));
  }
}

}  // namespace

void sum_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                std::int64_t channels, std::int32_t* out) {
  ChannelSpan span(channels);
  if (channels <= 64) {  // every byte in the one masked load
    span.tail = (~std::uint64_t{0}) >> (64 - channels);
    return sum_pixels_of<true>(in, pixels, pixel_bytes, span, out);
  }
  sum_pixels_of<false>(in, pixels, pixel_bytes, span, out);
}

}  // namespace qconv::detail::avx512_vnni
