// SPDX-License-Identifier: Apache-2.0
// depthwise_columns(): per output row, the 4 input rows of each group interleaved with byte and
// word unpacks (vpunpck{l,h}bw, vpunpck{l,h}wd) into columns of 4·width bytes (the unpacks work
// inside 128-bit lanes, see channel_order for where each channel lands), for the depthwise kernels
// of depthwise_kernels.cpp. An interleaved column is shared by every output pixel whose window
// covers it (3 pixels of a 3x3 stride-1 row).
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_column_span.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// Where the unpacks put the channels. 64 lanes: channel 16·l + 4·q + k of a row lands in
// vector q of the column, 128-bit lane l, dword k (the block's lane 16·q + 4·l + k, see
// depthwise_lane in kernels.hpp); the weights are packed to match and the output stage's packs to
// bytes undo it (packssdw and packuswb interleave the same 128-bit lanes back), so no shuffle
// puts channels in order on either side. 32 lanes: each row is loaded with its 4-byte channel
// groups permuted by this order first, so the unpacks leave the channels in order (the output
// stage narrows each 16-lane vector on its own). 16 lanes: in order already.
template <int kWidth>
inline __m512i channel_order() {
  return _mm512_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7, 8, 9, 10, 11, 12, 13, 14, 15);
}

// The bytes of one input column of one row, in channel_order: `width` channels (m = 1), or the span
// of input channels widened to one byte per output lane (m ≥ 2: vpermw on 16-bit copies picks
// each lane's input byte, vpmovwb narrows back).
// kFull: 64 channels, all in the block: a plain load (a masked one costs a shuffle-port uop).
template <int kWidth, bool kExpand, bool kFlip, bool kFull>
inline __m512i load_row(const std::uint8_t* at, __mmask64 mask, __m512i expand_low,
                        __m512i expand_high, __m512i order) {
  __m512i v;
  if constexpr (kFull) {
    v = _mm512_loadu_si512(at);
  } else if constexpr (!kExpand) {
    v = _mm512_maskz_loadu_epi8(mask, at);
  } else {
    const __m512i words =
        _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(static_cast<__mmask32>(mask), at));
    const __m256i low = _mm512_cvtepi16_epi8(_mm512_permutexvar_epi16(expand_low, words));
    const __m256i high = _mm512_cvtepi16_epi8(_mm512_permutexvar_epi16(expand_high, words));
    v = _mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1);
  }
  if constexpr (kWidth == 32) v = _mm512_permutexvar_epi32(order, v);
  if constexpr (kFlip) v = _mm512_xor_si512(v, _mm512_set1_epi8(static_cast<char>(0x80)));
  return v;
}

// Four interleaved vectors q of a column: its first `kWidth` / 16 128-bit lanes each.
template <int kWidth>
inline void store_column(std::uint8_t* out, __m512i q0, __m512i q1, __m512i q2, __m512i q3) {
  if constexpr (kWidth == 64) {
    _mm512_store_si512(out, q0);
    _mm512_store_si512(out + 64, q1);
    _mm512_store_si512(out + 128, q2);
    _mm512_store_si512(out + 192, q3);
  } else if constexpr (kWidth == 32) {
    _mm256_store_si256(reinterpret_cast<__m256i*>(out), _mm512_castsi512_si256(q0));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 32), _mm512_castsi512_si256(q1));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64), _mm512_castsi512_si256(q2));
    _mm256_store_si256(reinterpret_cast<__m256i*>(out + 96), _mm512_castsi512_si256(q3));
  } else {
    _mm_store_si128(reinterpret_cast<__m128i*>(out), _mm512_castsi512_si128(q0));
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 16), _mm512_castsi512_si128(q1));
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 32), _mm512_castsi512_si128(q2));
    _mm_store_si128(reinterpret_cast<__m128i*>(out + 48), _mm512_castsi512_si128(q3));
  }
}

template <int kWidth, bool kExpand, bool kFlip, bool kFull>
void build_columns(const DepthwiseColumns& c) {
  constexpr int kColumnBytes = 4 * kWidth;
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(c.zero_point));
  const __m512i order = channel_order<kWidth>();
  const __mmask64 mask = c.input_bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << c.input_bytes) - 1;
  __m512i expand_low = _mm512_setzero_si512(), expand_high = _mm512_setzero_si512();
  if constexpr (kExpand) {
    expand_low = _mm512_loadu_si512(c.expand);
    expand_high = _mm512_loadu_si512(c.expand + 32);
  }
  // Buffer columns [0, left) and [right, columns) lie outside the input.
  const ColumnSpan span(c);
  const std::int32_t left = span.left, right = span.right;
  for (std::int32_t g = 0; g < c.groups; ++g) {
    std::uint8_t* out = c.out + static_cast<std::int64_t>(g) * c.columns * kColumnBytes;
    const std::uint8_t* row[4];
    group_rows(c, g, row);
    for (std::int32_t j = 0; j < left; ++j) {
      store_column<kWidth>(out + j * kColumnBytes, fill, fill, fill, fill);
    }
    const std::int64_t step = c.pixel_bytes;
    // A null row (padding, or past the kernel's rows) is the zero point: a predictable branch.
    const auto load = [&](int i, std::int32_t j) {
      return row[i] != nullptr ? load_row<kWidth, kExpand, kFlip, kFull>(
                                     row[i] + j * step, mask, expand_low, expand_high, order)
                               : fill;
    };
    for (std::int32_t j = left; j < right; ++j) {
      __m512i q[4];
      interleave_rows(load(0, j), load(1, j), load(2, j), load(3, j), q);
      store_column<kWidth>(out + j * kColumnBytes, q[0], q[1], q[2], q[3]);
    }
    for (std::int32_t j = right; j < c.columns; ++j) {
      store_column<kWidth>(out + j * kColumnBytes, fill, fill, fill, fill);
    }
  }
}

template <int kWidth, bool kFlip>
void build_narrow_columns(const DepthwiseColumns& c) {
  using N = Narrow<kWidth>;
  using V = typename N::V;
  constexpr int kBytes = kWidth;  // one byte per channel
  constexpr int kColumnBytes = 4 * kBytes;
  const V fill = N::fill(c.zero_point);
  const bool full = c.input_bytes >= kBytes;
  const std::uint32_t mask = full ? ~std::uint32_t{0} : (std::uint32_t{1} << c.input_bytes) - 1;
  const ColumnSpan span(c);
  const std::int32_t left = span.left, right = span.right;
  const auto store = [&](std::uint8_t* at, V q0, V q1, V q2, V q3) {
    N::store(at, q0);
    N::store(at + kBytes, q1);
    N::store(at + 2 * kBytes, q2);
    N::store(at + 3 * kBytes, q3);
  };
  for (std::int32_t g = 0; g < c.groups; ++g) {
    std::uint8_t* out = c.out + static_cast<std::int64_t>(g) * c.columns * kColumnBytes;
    const std::uint8_t* row[4];
    group_rows(c, g, row);
    for (std::int32_t j = 0; j < left; ++j) store(out + j * kColumnBytes, fill, fill, fill, fill);
    const std::int64_t step = c.pixel_bytes;
    const auto load = [&](int i, std::int32_t j) {
      if (row[i] == nullptr) return fill;
      const V v = N::load(row[i] + j * step, mask, full);
      return kFlip ? N::flip(v) : v;
    };
    for (std::int32_t j = left; j < right; ++j) {
      V q[4];
      interleave_narrow_rows<kWidth>(load(0, j), load(1, j), load(2, j), load(3, j), q);
      store(out + j * kColumnBytes, q[0], q[1], q[2], q[3]);
    }
    for (std::int32_t j = right; j < c.columns; ++j) {
      store(out + j * kColumnBytes, fill, fill, fill, fill);
    }
  }
}

template <int kWidth, bool kExpand>
void build_columns_for(const DepthwiseColumns& c) {
  const bool full = kWidth == 64 && !kExpand && c.input_bytes == 64;
  if (full) {
    if (c.flip) return build_columns<kWidth, kExpand, true, true>(c);
    return build_columns<kWidth, kExpand, false, true>(c);
  }
  if (c.flip) return build_columns<kWidth, kExpand, true, false>(c);
  build_columns<kWidth, kExpand, false, false>(c);
}

}  // namespace

void depthwise_columns(const DepthwiseColumns& c) {
  const bool expand = c.expand != nullptr;
  switch (c.width) {
    case 16:
      if (expand) return build_columns_for<16, true>(c);
      return c.flip ? build_narrow_columns<16, true>(c) : build_narrow_columns<16, false>(c);
    case 32:
      if (expand) return build_columns_for<32, true>(c);
      return c.flip ? build_narrow_columns<32, true>(c) : build_narrow_columns<32, false>(c);
    default: return expand ? build_columns_for<64, true>(c) : build_columns_for<64, false>(c);
  }
}

}  // namespace qconv::detail::avx512_vnni
