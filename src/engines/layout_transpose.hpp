// SPDX-License-Identifier: Apache-2.0
// Matrix transposes of activation bytes, for engines that run NCHW tensors through NHWC copies:
// NCHW -> NHWC is, per image, the transpose of a [channels][pixels] matrix, and NHWC -> NCHW the
// transpose of a [pixels][channels] one. Blocked for the cache and, on x86-64, 16 x 16 bytes at a
// time in SSE2 registers (part of the x86-64 baseline, so this file needs no ISA flags).
#pragma once

#include <cstddef>
#include <cstdint>

namespace qconv::detail {

// out[c·out_stride + r] = in[r·in_stride + c] for r < rows, c < cols, for 1-byte values.
void transpose_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                     std::int64_t out_stride, std::int64_t rows, std::int64_t cols);

// The same for `element`-byte values (1, 2, 4 or 8); strides count values, not bytes.
void transpose_values(const void* in, std::int64_t in_stride, void* out, std::int64_t out_stride,
                      std::int64_t rows, std::int64_t cols, std::size_t element);

}  // namespace qconv::detail
