// SPDX-License-Identifier: Apache-2.0
// Two pixels' last 8 channels side by side in one vector (the flat runs' paired last vectors,
// register_tile::add_tap_paired): the 8 lanes at `at` in both halves, for the weights, the
// output stage's constants and the zero-point terms alike. Only for files built with AVX-512
// flags (see kernels.hpp).
#pragma once

#include <immintrin.h>

namespace qconv::detail::avx512_vnni {

// The 32 bytes at `at` (8 lanes of 4 bytes) in lanes 0-7 and again in lanes 8-15.
inline __m512i first_8_lanes_twice(const void* at) {
  return _mm512_broadcast_i64x4(_mm256_loadu_si256(static_cast<const __m256i*>(at)));
}

}  // namespace qconv::detail::avx512_vnni
