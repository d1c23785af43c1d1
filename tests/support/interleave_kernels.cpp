// SPDX-License-Identifier: Apache-2.0
// Built with AVX-512 and VBMI flags (tests/CMakeLists.txt); see interleave_kernels.hpp. Functions
// only: nothing here runs unless called.
#include "support/interleave_kernels.hpp"

// GCC 12 warns falsely about the undefined upper lanes its own headers use (_mm_undefined_si128).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engines/x64/avx512_vnni/depthwise_interleave.hpp"

namespace qconv::test {
namespace {

template <class Interleave>
void interleave(const std::uint8_t* const rows[4], std::uint8_t out[64]) {
  const auto row = [&](int r) {
    return _mm_loadu_si128(reinterpret_cast<const __m128i*>(rows[r]));
  };
  _mm512_storeu_si512(out, Interleave::rows(row(0), row(1), row(2), row(3)));
}

template <class Interleave>
void interleave_32(const std::uint8_t* const rows[4], std::uint8_t out[128]) {
  __m512i q[2];
  Interleave::rows(Interleave::load(rows[0]), Interleave::load(rows[1]), Interleave::load(rows[2]),
                   Interleave::load(rows[3]), q);
  _mm512_storeu_si512(out, q[0]);
  _mm512_storeu_si512(out + 64, q[1]);
}

}  // namespace

void interleave_rows_16_shuffles(const std::uint8_t* const rows[4], std::uint8_t out[64]) {
  interleave<detail::avx512_vnni::InterleaveRows16>(rows, out);
}

void interleave_rows_16_vbmi(const std::uint8_t* const rows[4], std::uint8_t out[64]) {
  interleave<detail::avx512_vnni::InterleaveRows16Vbmi>(rows, out);
}

void interleave_rows_32_shuffles(const std::uint8_t* const rows[4], std::uint8_t out[128]) {
  interleave_32<detail::avx512_vnni::InterleaveRows32>(rows, out);
}

void interleave_rows_32_vbmi(const std::uint8_t* const rows[4], std::uint8_t out[128]) {
  interleave_32<detail::avx512_vnni::InterleaveRows32Vbmi>(rows, out);
}

}  // namespace qconv::test
