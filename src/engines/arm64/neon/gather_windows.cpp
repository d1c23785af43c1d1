// SPDX-License-Identifier: Apache-2.0
// im2col of one tile for the ARM engines (kernel_set.hpp: WindowGather): each output pixel's window
// as a row of (r, s, c) bytes, the padding holding the zero point, zeros after the window. Plain
// copies: beside the tile's multiplies they need no vector instruction of their own.
#include <cstring>

#include "engines/arm64/kernels.hpp"

namespace qconv::detail::arm64::neon {

void gather_windows(const gemm::WindowGather& g) {
  const std::int64_t window_row = g.kernel_w * g.channels;
  const std::int64_t used = g.kernel_h * window_row;
  for (std::int32_t i = 0; i < g.rows; ++i) {
    std::uint8_t* out = g.out + i * g.row_bytes;
    const std::int64_t w0 = (g.x + i) * g.stride_w - g.pad_left;  // column of tap s = 0
    for (std::int64_t r = 0; r < g.kernel_h; ++r) {
      std::uint8_t* dst = out + r * window_row;
      const std::int64_t h = g.y * g.stride_h + r * g.dilation_h - g.pad_top;
      if (h < 0 || h >= g.in_height) {
        std::memset(dst, g.zero_point, static_cast<std::size_t>(window_row));
        continue;
      }
      const std::uint8_t* line = g.input + (g.n * g.in_height + h) * g.in_width * g.channels;
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

}  // namespace qconv::detail::arm64::neon
