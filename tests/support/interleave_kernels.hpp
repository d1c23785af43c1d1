// SPDX-License-Identifier: Apache-2.0
// The 16-lane depthwise kernels' column interleaves (engines/x64/avx512_vnni/
// depthwise_interleave.hpp) as plain functions for the tests: interleave_kernels.cpp is built with
// the AVX-512 and VBMI flags those need, so call each only on a CPU that has its features.
#pragma once

#include <cstdint>

namespace qconv::test {

// Rows a, b, x, y (16 bytes each) interleaved into out (64 bytes): InterleaveRows16 (AVX-512 F,
// BW, VL, DQ) and InterleaveRows16Vbmi (those and VBMI).
void interleave_rows_16_shuffles(const std::uint8_t* const rows[4], std::uint8_t out[64]);
void interleave_rows_16_vbmi(const std::uint8_t* const rows[4], std::uint8_t out[64]);

}  // namespace qconv::test
