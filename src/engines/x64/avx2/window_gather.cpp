// SPDX-License-Identifier: Apache-2.0
// im2col of one tile for the AVX2 kernel sets: each window's rows copied (nothing outside the
// input is read), padding filled with the zero point, each row's tail with zeros. Built with AVX2
// flags: see kernel_set.hpp.
#include <immintrin.h>

#include <cstring>

#include "engines/x64/avx2/kernels.hpp"

namespace qconv::detail::avx2 {

void gather_windows(const gemm::WindowGather& g) {
  const std::int64_t window_row = g.kernel_w * g.channels;
  const std::int64_t used = g.kernel_h * window_row;
  // A window row of up to 32 bytes (a first layer's: 9 for 3x3 of 3 channels, 21 for 7x7) is one
  // 32-byte load and store where the load stays inside image n: a memcpy of a variable count is a
  // library call, a tenth of a 3-channel layer's time. The bytes stored past the row are
  // overwritten by the next rows, and the window's tail by the zeros below (`out` has 64 bytes of
  // slack after the last window).
  const std::uint8_t* image_end = g.input + (g.n + 1) * g.in_height * g.in_width * g.channels;
  const bool short_rows = window_row <= 32;
  for (std::int32_t i = 0; i < g.rows; ++i) {
    std::uint8_t* out = g.out + i * g.row_bytes;
    const std::int64_t w0 = (g.x + i) * g.stride_w - g.pad_left;  // column of tap s = 0
    const std::int64_t w_last = w0 + (g.kernel_w - 1) * g.dilation_w;
    const bool inside_w = w0 >= 0 && w_last < g.in_width;
    for (std::int64_t r = 0; r < g.kernel_h; ++r) {
      std::uint8_t* dst = out + r * window_row;
      const std::int64_t h = g.y * g.stride_h + r * g.dilation_h - g.pad_top;
      if (h < 0 || h >= g.in_height) {
        std::memset(dst, g.zero_point, static_cast<std::size_t>(window_row));
        continue;
      }
      const std::uint8_t* line = g.input + (g.n * g.in_height + h) * g.in_width * g.channels;
      if (inside_w && g.dilation_w == 1) {  // the common case: one copy per kernel row
        const std::uint8_t* src = line + w0 * g.channels;
        if (short_rows && src + 32 <= image_end) {
          _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst),
                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)));
        } else {
          std::memcpy(dst, src, static_cast<std::size_t>(window_row));
        }
        continue;
      }
      for (std::int64_t s = 0; s < g.kernel_w; ++s) {
        const std::int64_t w = w0 + s * g.dilation_w;
        if (w >= 0 && w < g.in_width) {
          std::memcpy(dst + s * g.channels, line + w * g.channels,
                      static_cast<std::size_t>(g.channels));
        } else {
          std::memset(dst + s * g.channels, g.zero_point, static_cast<std::size_t>(g.channels));
        }
      }
    }
    std::memset(out + used, 0, static_cast<std::size_t>(g.row_bytes - used));
  }
}

}  // namespace qconv::detail::avx2
