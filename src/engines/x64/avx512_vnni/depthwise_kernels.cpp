// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels, four taps per vpdpbusd: channels in lanes, each s32 lane's 4 bytes the same
// input column of 4 kernel rows, so one vpdpbusd does 4 taps of 16 channels (the 2-taps-per-
// vpdpwssd form it replaces needed twice the instructions and widened every byte to 16 bits).
//
// depthwise_columns(): per output row, the 4 input rows of each group interleaved with byte and
// word unpacks (vpunpck{l,h}bw, vpunpck{l,h}wd) into columns of 4·width bytes. The unpacks work
// inside 128-bit lanes, so a 64-channel column holds 4 vectors q whose lane l, dword i is channel
// 16·l + 4·q + i; the packed weights follow that order and the sums are put back in channel order
// (a 4 x 4 transpose of 128-bit lanes) before the output stage. An interleaved column is shared by
// every output pixel whose window covers it (3 pixels of a 3x3 stride-1 row).
//
// depthwise_outputs(): register tiles of 4 to 8 pixels x 16 to 64 channels; per tap one weight
// vector per 16 channels reused across the tile's pixels. The sums start at −zx·Σ(w − zw) and add
// x·(w − zw) with padding read as zx, so they are exact: Σ (x − zx)(w − zw) over the window.
//
// Built with AVX-512 flags: see kernels.hpp for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// The bytes of one input column of one row: `width` channels (m = 1), or the span of input
// channels widened to one byte per output lane (m ≥ 2: vpermw on 16-bit copies picks each lane's
// input byte, vpmovwb narrows back).
inline __m512i load_row(const std::uint8_t* at, __mmask64 mask, bool expand, __m512i expand_low,
                        __m512i expand_high, __m512i flip) {
  if (!expand) return _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, at), flip);
  const __m512i words =
      _mm512_cvtepu8_epi16(_mm256_maskz_loadu_epi8(static_cast<__mmask32>(mask), at));
  const __m256i low = _mm512_cvtepi16_epi8(_mm512_permutexvar_epi16(expand_low, words));
  const __m256i high = _mm512_cvtepi16_epi8(_mm512_permutexvar_epi16(expand_high, words));
  return _mm512_xor_si512(_mm512_inserti64x4(_mm512_castsi256_si512(low), high, 1), flip);
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

template <int kWidth, bool kExpand>
void build_columns(const DepthwiseColumns& c) {
  constexpr int kColumnBytes = 4 * kWidth;
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(c.flip ? 0x80 : 0));
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(c.zero_point));
  // A null row reads this instead, at step 0: the zero point once flipped.
  alignas(64) std::uint8_t padding[64];
  _mm512_store_si512(padding, _mm512_xor_si512(fill, flip));
  const __mmask64 mask = c.input_bytes >= 64 ? ~__mmask64{0} : (__mmask64{1} << c.input_bytes) - 1;
  __m512i expand_low = _mm512_setzero_si512(), expand_high = _mm512_setzero_si512();
  if constexpr (kExpand) {
    expand_low = _mm512_loadu_si512(c.expand);
    expand_high = _mm512_loadu_si512(c.expand + 32);
  }
  // Buffer columns [0, left) and [right, columns) lie outside the input.
  const std::int64_t left64 = c.first_column < 0 ? -c.first_column : 0;
  const std::int32_t left = left64 < c.columns ? static_cast<std::int32_t>(left64) : c.columns;
  std::int64_t right64 = c.in_width - c.first_column;
  if (right64 > c.columns) right64 = c.columns;
  const std::int32_t right = right64 < left ? left : static_cast<std::int32_t>(right64);
  for (std::int32_t g = 0; g < c.groups; ++g) {
    std::uint8_t* out = c.out + static_cast<std::int64_t>(g) * c.columns * kColumnBytes;
    const std::uint8_t* row[4];
    std::int64_t step[4];
    for (int i = 0; i < 4; ++i) {
      const std::uint8_t* r = c.rows[g * 4 + i];
      row[i] = r != nullptr ? r + c.first_column * c.pixel_bytes : padding;
      step[i] = r != nullptr ? c.pixel_bytes : 0;
    }
    for (std::int32_t j = 0; j < left; ++j) {
      store_column<kWidth>(out + j * kColumnBytes, fill, fill, fill, fill);
    }
    for (std::int32_t j = left; j < right; ++j) {
      const __m512i a =
          load_row(row[0] + j * step[0], mask, kExpand, expand_low, expand_high, flip);
      const __m512i b =
          load_row(row[1] + j * step[1], mask, kExpand, expand_low, expand_high, flip);
      const __m512i x =
          load_row(row[2] + j * step[2], mask, kExpand, expand_low, expand_high, flip);
      const __m512i y =
          load_row(row[3] + j * step[3], mask, kExpand, expand_low, expand_high, flip);
      const __m512i ab_low = _mm512_unpacklo_epi8(a, b), ab_high = _mm512_unpackhi_epi8(a, b);
      const __m512i xy_low = _mm512_unpacklo_epi8(x, y), xy_high = _mm512_unpackhi_epi8(x, y);
      store_column<kWidth>(out + j * kColumnBytes, _mm512_unpacklo_epi16(ab_low, xy_low),
                           _mm512_unpackhi_epi16(ab_low, xy_low),
                           _mm512_unpacklo_epi16(ab_high, xy_high),
                           _mm512_unpackhi_epi16(ab_high, xy_high));
    }
    for (std::int32_t j = right; j < c.columns; ++j) {
      store_column<kWidth>(out + j * kColumnBytes, fill, fill, fill, fill);
    }
  }
}

// The sums of one tile's vectors (kVectors per pixel, in the columns' lane order) into channel
// order: vector q's 128-bit lane l holds channels 16·l + 4·q .. + 3 (width 64), or vector v's lanes
// (2v, 2v + 1) × (l = 0, 1) (width 32), or already channel order (width 16).
template <int kVectors>
inline void store_in_channel_order(std::int32_t* out, const __m512i (&v)[kVectors]) {
  if constexpr (kVectors == 4) {
    const __m512i t0 = _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i t1 = _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(3, 2, 3, 2));
    const __m512i t2 = _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(1, 0, 1, 0));
    const __m512i t3 = _mm512_shuffle_i64x2(v[2], v[3], _MM_SHUFFLE(3, 2, 3, 2));
    _mm512_store_si512(out, _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_store_si512(out + 16, _mm512_shuffle_i64x2(t0, t2, _MM_SHUFFLE(3, 1, 3, 1)));
    _mm512_store_si512(out + 32, _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_store_si512(out + 48, _mm512_shuffle_i64x2(t1, t3, _MM_SHUFFLE(3, 1, 3, 1)));
  } else if constexpr (kVectors == 2) {
    _mm512_store_si512(out, _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(2, 0, 2, 0)));
    _mm512_store_si512(out + 16, _mm512_shuffle_i64x2(v[0], v[1], _MM_SHUFFLE(3, 1, 3, 1)));
  } else {
    _mm512_store_si512(out, v[0]);
  }
}

template <int kVectors, int kTile>
void run_tiles(const DepthwiseOutputs& o) {
  constexpr std::int64_t kColumnBytes = 64 * kVectors;
  const std::int64_t group_bytes = static_cast<std::int64_t>(o.buffer_columns) * kColumnBytes;
  const std::int64_t pixel_bytes = static_cast<std::int64_t>(o.column_step) * kColumnBytes;
  const std::int64_t tap_bytes = kColumnBytes;  // weights per tap
  __m512i start[kVectors];
  const __m512i minus_zx = _mm512_set1_epi32(-o.zero_point);
  for (int v = 0; v < kVectors; ++v) {
    start[v] = _mm512_mullo_epi32(minus_zx, _mm512_loadu_si512(o.weight_sums + 16 * v));
  }
  alignas(64) std::int32_t sums[kTile * 64];
  for (std::int32_t first = 0; first < o.pixels; first += kTile) {
    __m512i acc[kTile][kVectors];
    for (int p = 0; p < kTile; ++p) {
      for (int v = 0; v < kVectors; ++v) acc[p][v] = start[v];
    }
    const std::uint8_t* tile = o.columns + first * pixel_bytes;
    for (std::int32_t g = 0; g < o.groups; ++g) {
      const std::uint8_t* group = tile + g * group_bytes;
      const std::int8_t* weights = o.weights + static_cast<std::int64_t>(g) * o.taps * tap_bytes;
      for (std::int32_t t = 0; t < o.taps; ++t) {
        const std::uint8_t* at = group + o.tap_columns[t] * kColumnBytes;
        __m512i w[kVectors];
        for (int v = 0; v < kVectors; ++v)
          w[v] = _mm512_load_si512(weights + t * tap_bytes + 64 * v);
        for (int p = 0; p < kTile; ++p) {
          for (int v = 0; v < kVectors; ++v) {
            acc[p][v] = _mm512_dpbusd_epi32(acc[p][v],
                                            _mm512_load_si512(at + p * pixel_bytes + 64 * v), w[v]);
          }
        }
      }
    }
    const std::int32_t rows = o.pixels - first < kTile ? o.pixels - first : kTile;
    if (o.epilogue == nullptr) {  // the exact sums for the engine's scalar output stage
      for (int p = 0; p < rows; ++p)
        store_in_channel_order<kVectors>(o.sums + (first + p) * 64, acc[p]);
      continue;
    }
    for (int p = 0; p < kTile; ++p) store_in_channel_order<kVectors>(sums + p * 64, acc[p]);
    const TileOutput out{
        sums,
        rows,
        o.channels,
        o.channel,
        nullptr,
        nullptr,
        true,
        static_cast<std::byte*>(o.output) + first * o.output_stride * o.element_bytes,
        o.output_stride};
    o.epilogue(out, *o.stage);
  }
}

template <int kVectors>
void outputs_for_width(const DepthwiseOutputs& o) {
  switch (o.tile) {
    case 4: return run_tiles<kVectors, 4>(o);
    case 5: return run_tiles<kVectors, 5>(o);
    default: return run_tiles<kVectors, 6>(o);
  }
}

}  // namespace

void depthwise_columns(const DepthwiseColumns& c) {
  const bool expand = c.expand != nullptr;
  switch (c.width) {
    case 16: return expand ? build_columns<16, true>(c) : build_columns<16, false>(c);
    case 32: return expand ? build_columns<32, true>(c) : build_columns<32, false>(c);
    default: return expand ? build_columns<64, true>(c) : build_columns<64, false>(c);
  }
}

void depthwise_outputs(const DepthwiseOutputs& o) {
  switch (o.width) {
    case 16:
      if (o.tile == 8) return run_tiles<1, 8>(o);
      return outputs_for_width<1>(o);
    case 32:
      if (o.tile == 8) return run_tiles<2, 8>(o);
      return outputs_for_width<2>(o);
    default: return outputs_for_width<4>(o);
  }
}

}  // namespace qconv::detail::avx512_vnni
