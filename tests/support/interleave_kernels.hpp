// SPDX-License-Identifier: Apache-2.0
// The 16- and 32-lane depthwise kernels' column interleaves (engines/x64/avx512_vnni/
// depthwise_interleave.hpp) as plain functions for the tests: interleave_kernels.cpp is built with
// the AVX-512 and VBMI flags those need, so call each only on a CPU that has its features.
#pragma once

#include <cstdint>

namespace qconv::test {

// Rows a, b, x, y (16 bytes each) interleaved into out (64 bytes): InterleaveRows16 (AVX-512 F,
// BW, VL, DQ) and InterleaveRows16Vbmi (those and VBMI).
void interleave_rows_16_shuffles(const std::uint8_t* const rows[4], std::uint8_t out[64]);
void interleave_rows_16_vbmi(const std::uint8_t* const rows[4], std::uint8_t out[64]);
// Rows a, b, x, y (32 bytes each, read by the interleave's own load) interleaved into out (128
// bytes: channels 0-15, then 16-31): InterleaveRows32 and InterleaveRows32Vbmi.
void interleave_rows_32_shuffles(const std::uint8_t* const rows[4], std::uint8_t out[128]);
void interleave_rows_32_vbmi(const std::uint8_t* const rows[4], std::uint8_t out[128]);

}  // namespace qconv::test
