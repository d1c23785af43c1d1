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

// Eight qword partial sums (each below 2^32) of the pixel's bytes: kWhole 64-byte loads and, if
// kTail, the masked tail after them, unrolled (a loop per pixel of two or three loads, with the
// tail's test, ran at half the speed). kWhole −1: any count, at run time, in two chains.
template <int kWhole, bool kTail>
inline __m512i pixel_partials(const std::uint8_t* p, const ChannelSpan& span) {
  const __m512i zero = _mm512_setzero_si512();
  const auto sad = [&](__m512i v) { return _mm512_sad_epu8(v, zero); };
  if constexpr (kWhole < 0) {
    __m512i a = zero, b = zero;
    std::int64_t i = 0;
    for (; i + 2 <= span.whole; i += 2) {
      a = _mm512_add_epi64(a, sad(_mm512_loadu_si512(p + 64 * i)));
      b = _mm512_add_epi64(b, sad(_mm512_loadu_si512(p + 64 * i + 64)));
    }
    if (i < span.whole) a = _mm512_add_epi64(a, sad(_mm512_loadu_si512(p + 64 * i)));
    // A tail of no bytes loads nothing and adds 0.
    b = _mm512_add_epi64(b, sad(_mm512_maskz_loadu_epi8(span.tail, p + 64 * span.whole)));
    return _mm512_add_epi64(a, b);
  } else {
    __m512i sums = kTail ? sad(_mm512_maskz_loadu_epi8(span.tail, p + 64 * kWhole)) : zero;
#pragma GCC unroll 4
    for (int i = 0; i < kWhole; ++i) {
      const __m512i part = sad(_mm512_loadu_si512(p + 64 * i));
      sums = kTail || i > 0 ? _mm512_add_epi64(sums, part) : part;
    }
    return sums;
  }
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

template <int kWhole, bool kTail>
void sum_pixels_of(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                   const ChannelSpan& span, std::int32_t* out) {
  const auto partials = [&](std::int64_t i) {
    return pixel_partials<kWhole, kTail>(in + i * pixel_bytes, span);
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

// Pixels of at most kSlot (16 or 32) channels, 64 / kSlot of them per vector, each in its kSlot-
// byte slot (one plain load where pixels of kSlot channels lie packed, else a masked load per
// pixel put in its slot): one vpsadbw per vector, not per pixel, and 8 pixels' partials reduced
// together. For a first layer's im2col rows and the 16 or 32 channels of an early 1x1 layer, the
// per-pixel form took 6-16 % of the layer's time.
template <int kSlot>
void sum_short_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                      std::int64_t channels, std::int32_t* out) {
  const __m512i zero = _mm512_setzero_si512();
  ChannelSpan span(channels);  // channels < 64: the tail's mask covers them all
  const auto slot = static_cast<__mmask32>(span.tail);
  const bool packed = pixel_bytes == kSlot && channels == kSlot;
  // Pixels first .. first + 64 / kSlot − 1 in their slots: qword partial sums, kSlot / 8 a pixel.
  const auto partials = [&](std::int64_t first) {
    const std::uint8_t* p = in + first * pixel_bytes;
    if (packed) return _mm512_sad_epu8(_mm512_loadu_si512(p), zero);
    __m512i v;  // bytes j·kSlot + c: pixel j's byte c
    if constexpr (kSlot == 32) {
      v = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_maskz_loadu_epi8(slot, p)),
                             _mm256_maskz_loadu_epi8(slot, p + pixel_bytes), 1);
    } else {
      const auto quarter = static_cast<__mmask16>(slot);
      v = _mm512_castsi128_si512(_mm_maskz_loadu_epi8(quarter, p));
      v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(quarter, p + pixel_bytes), 1);
      v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(quarter, p + 2 * pixel_bytes), 2);
      v = _mm512_inserti32x4(v, _mm_maskz_loadu_epi8(quarter, p + 3 * pixel_bytes), 3);
    }
    return _mm512_sad_epu8(v, zero);
  };
  std::int64_t i = 0;
  for (; i + 8 <= pixels; i += 8) {
    __m512i sums;  // dword d: pixel i + d's sum
    if constexpr (kSlot == 16) {
      // 128-bit lane k: pixel k's two qwords (u: pixels 0-3, w: 4-7); interleaved, the lane's two
      // halves added put pixels k and 4 + k in its dwords 0 and 1.
      const __m512i x = interleave(partials(i), partials(i + 4));
      const __m512i lanes = _mm512_add_epi32(x, _mm512_shuffle_epi32(x, _MM_PERM_BADC));
      sums = _mm512_permutexvar_epi32(
          _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0), lanes);
    } else {
      // Vector m: pixel 2m in lanes 0-1, 2m + 1 in lanes 2-3. four(): lane l holds each vector's
      // lane-l sum; lanes 0 + 1 are then pixels 0, 2, 4, 6 and lanes 2 + 3 pixels 1, 3, 5, 7.
      const __m512i t = four(interleave(partials(i), partials(i + 2)),
                             interleave(partials(i + 4), partials(i + 6)));
      const __m512i lanes =
          _mm512_add_epi32(t, _mm512_shuffle_i64x2(t, t, _MM_SHUFFLE(2, 3, 0, 1)));
      sums = _mm512_permutexvar_epi32(
          _mm512_setr_epi32(0, 8, 1, 9, 2, 10, 3, 11, 0, 0, 0, 0, 0, 0, 0, 0), lanes);
    }
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(out + i), _mm512_castsi512_si256(sums));
  }
  for (; i < pixels; ++i) {
    out[i] = static_cast<std::int32_t>(
        _mm512_reduce_add_epi64(pixel_partials<0, true>(in + i * pixel_bytes, span)));
  }
}

}  // namespace

void sum_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                std::int64_t channels, std::int32_t* out) {
  if (channels <= 16) return sum_short_pixels<16>(in, pixels, pixel_bytes, channels, out);
  if (channels <= 32) return sum_short_pixels<32>(in, pixels, pixel_bytes, channels, out);
  ChannelSpan span(channels);
  if (channels <= 64) {  // every byte in the one masked load
    span.tail = (~std::uint64_t{0}) >> (64 - channels);
    return sum_pixels_of<0, true>(in, pixels, pixel_bytes, span, out);
  }
  // Up to 4 loads a pixel unrolled (MobileNet's 96 to 192 channels), more in a loop.
  const bool tail = span.tail != 0;
  switch (span.whole) {
    case 1: return sum_pixels_of<1, true>(in, pixels, pixel_bytes, span, out);  // 65-127
    case 2:
      return tail ? sum_pixels_of<2, true>(in, pixels, pixel_bytes, span, out)
                  : sum_pixels_of<2, false>(in, pixels, pixel_bytes, span, out);
    case 3:
      return tail ? sum_pixels_of<3, true>(in, pixels, pixel_bytes, span, out)
                  : sum_pixels_of<3, false>(in, pixels, pixel_bytes, span, out);
    default: return sum_pixels_of<-1, true>(in, pixels, pixel_bytes, span, out);
  }
}

}  // namespace qconv::detail::avx512_vnni
