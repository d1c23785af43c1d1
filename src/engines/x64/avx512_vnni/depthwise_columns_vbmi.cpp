// SPDX-License-Identifier: Apache-2.0
// depthwise_columns_32_vbmi(): depthwise_columns() for 32-lane blocks (multiplier 1), each column
// of 4 rows interleaved by two AVX-512 VBMI two-table byte permutes (InterleaveRows32Vbmi) where
// the unpacks took a channel-order permute per row and eight unpacks. Built with AVX-512 and VBMI
// flags, called only on a CPU that has both.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_column_span.hpp"
#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// kFull: all 32 channels read (else the first input_bytes, masked); kFlip: an s8 input.
template <bool kFull, bool kFlip>
void build_columns_32(const DepthwiseColumns& c) {
  constexpr int kColumnBytes = 4 * 32;
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(c.zero_point));
  const auto mask = static_cast<__mmask32>(kFull ? ~0u : (1u << c.input_bytes) - 1);
  const ColumnSpan span(c);
  const std::int32_t left = span.left, right = span.right;
  const auto store = [](std::uint8_t* at, __m512i q0, __m512i q1) {
    _mm512_store_si512(at, q0);
    _mm512_store_si512(at + 64, q1);
  };
  for (std::int32_t g = 0; g < c.groups; ++g) {
    std::uint8_t* out = c.out + static_cast<std::int64_t>(g) * c.columns * kColumnBytes;
    const std::uint8_t* row[4];
    group_rows(c, g, row);
    for (std::int32_t j = 0; j < left; ++j) store(out + j * kColumnBytes, fill, fill);
    const std::int64_t step = c.pixel_bytes;
    // A null row (padding, or past the kernel's rows) is the zero point: a predictable branch.
    const auto load = [&](int i, std::int32_t j) {
      if (row[i] == nullptr) return _mm512_castsi512_si256(fill);
      const std::uint8_t* at = row[i] + j * step;
      const __m256i v = kFull ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(at))
                              : _mm256_maskz_loadu_epi8(mask, at);
      return kFlip ? _mm256_xor_si256(v, _mm256_set1_epi8(static_cast<char>(0x80))) : v;
    };
    for (std::int32_t j = left; j < right; ++j) {
      __m512i q[2];
      InterleaveRows32Vbmi::rows(load(0, j), load(1, j), load(2, j), load(3, j), q);
      store(out + j * kColumnBytes, q[0], q[1]);
    }
    for (std::int32_t j = right; j < c.columns; ++j) store(out + j * kColumnBytes, fill, fill);
  }
}

}  // namespace

void depthwise_columns_32_vbmi(const DepthwiseColumns& c) {
  const bool full = c.input_bytes >= 32;
  if (c.flip) return full ? build_columns_32<true, true>(c) : build_columns_32<false, true>(c);
  full ? build_columns_32<true, false>(c) : build_columns_32<false, false>(c);
}

}  // namespace qconv::detail::avx512_vnni
