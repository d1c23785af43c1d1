// SPDX-License-Identifier: Apache-2.0
// The AVX-512 block of the activation transposes (engines/layout_transpose.cpp calls it on a CPU
// with AVX-512 BW): four 16 x 16 byte blocks side by side, one in each 128-bit lane.
#pragma once

#include <cstdint>

namespace qconv::detail::avx512_vnni {

// out[c·out_stride + r] = in[r·in_stride + c] for r < 16, c < 64.
void transpose_16x64_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                           std::int64_t out_stride);

// out[c·out_stride + r] = in[r·in_stride + c] for r < 64, c < 16: 16-byte loads, 64-byte stores.
void transpose_64x16_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                           std::int64_t out_stride);
// The same for the first `cols` (1 to 15) columns: no byte past them read or written.
void transpose_64xn_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                          std::int64_t out_stride, int cols);

// out[4·c + r] = in[r·in_stride + c] for r < 4, c < cols (at most 64): up to 64 columns of up to
// 4 rows as dwords, rows past `rows` and columns past `cols` 0 (a 3-channel NCHW image's pixels,
// which the 16-row blocks would leave to byte copies).
void transpose_4x64_bytes_to_dwords(const std::uint8_t* in, std::int64_t in_stride, int rows,
                                    int cols, std::uint8_t* out);
// out[3·j + b] = dwords[4·j + b] for b < 3, j < count (at most 64): the first three bytes of each
// dword, packed (a 3-channel NCHW image's pixels to dense NHWC); nothing past out[3·count) written.
void pack_dwords_to_3_bytes(const std::uint8_t* dwords, int count, std::uint8_t* out);

}  // namespace qconv::detail::avx512_vnni
