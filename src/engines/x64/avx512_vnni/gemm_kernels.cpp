// SPDX-License-Identifier: Apache-2.0
// The GEMM register tiles: up to 6 output pixels x 64 output channels, all taps and input channels
// summed in registers (register_tile.hpp), the sums stored for the epilogue; and the im2col
// gather. Built with AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/register_tile.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

template <int kRows, int kVectors>
void gemm_tile(const GemmTile& t) {
  __m512i acc[kRows][kVectors];
  register_tile::start(acc, t.zero_point_sums, t.input_zero_point);
  const std::int64_t step_bytes = std::int64_t{kVectors} * 64;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    tap_rows(t, tap, 0, row);
    register_tile::add_tap(acc, row, t.weights + t.tap_steps[tap] * step_bytes, t.channels);
  }
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
    for (int j = 0; j < kVectors; ++j) _mm512_store_si512(t.acc + i * 64 + j * 16, acc[i][j]);
  }
}

template <int kRows>
GemmTileKernel by_vectors(int vectors) {
  switch (vectors) {
    case 1: return &gemm_tile<kRows, 1>;
    case 2: return &gemm_tile<kRows, 2>;
    case 3: return &gemm_tile<kRows, 3>;
    default: return &gemm_tile<kRows, 4>;
  }
}

// Copies `bytes` from `from` (or, with from == nullptr, the fill byte) to `to`, 64 at a time.
// Loads are masked (nothing past the input is read); stores are whole 64-byte vectors, which may
// write up to 63 bytes of garbage past `to + bytes`: the caller writes in increasing order, so the
// next copy overwrites it, and the buffer has 64 bytes of slack at its end. (A masked store would
// also stall the tile's loads that follow: it cannot forward to them.)
inline void copy_bytes(std::uint8_t* to, const std::uint8_t* from, std::int64_t bytes,
                       __m512i fill) {
  for (std::int64_t at = 0; at < bytes; at += 64) {
    const std::int64_t n = bytes - at < 64 ? bytes - at : 64;
    const __mmask64 mask = (~std::uint64_t{0}) >> (64 - n);
    const __m512i v = from != nullptr ? _mm512_maskz_loadu_epi8(mask, from + at) : fill;
    _mm512_storeu_si512(to + at, v);
  }
}

}  // namespace

void gather_windows(const WindowGather& g) {
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(g.zero_point));
  const std::int64_t window_row = g.kernel_w * g.channels;
  const std::int64_t used = g.kernel_h * window_row;
  // The input line of each kernel row for this output row (null: in the padding), once.
  constexpr std::int64_t kMaxKernelRows = 64;
  const std::uint8_t* lines[kMaxKernelRows];
  const std::int64_t kernel_rows = g.kernel_h < kMaxKernelRows ? g.kernel_h : kMaxKernelRows;
  for (std::int64_t r = 0; r < kernel_rows; ++r) {
    const std::int64_t h = g.y * g.stride_h + r * g.dilation_h - g.pad_top;
    lines[r] = h < 0 || h >= g.in_height
                   ? nullptr
                   : g.input + (g.n * g.in_height + h) * g.in_width * g.channels;
  }
  const bool short_rows = window_row <= 64 && g.dilation_w == 1 && g.kernel_h <= kMaxKernelRows;
  const __mmask64 row_mask = (~std::uint64_t{0}) >> (64 - (window_row < 64 ? window_row : 64));
  // A whole window within 64 bytes (a 3x3 first layer): its kernel rows merged into one vector in
  // registers by masked loads, each filling the lanes its bytes occupy (lanes masked out are not
  // read), and stored once. Storing each kernel row's 64 bytes where it goes instead makes
  // overlapping stores that split cache lines, several per window. (With longer windows the
  // merging's bookkeeping cost more than it saved: a 7x7 first layer.)
  const bool one_vector = short_rows && used <= 64;
  __mmask64 row_lanes[kMaxKernelRows];
  for (std::int64_t r = 0; one_vector && r < g.kernel_h; ++r)
    row_lanes[r] = row_mask << (r * window_row);
  for (std::int32_t i = 0; i < g.rows; ++i) {
    std::uint8_t* out = g.out + i * g.row_bytes;
    const std::int64_t w0 = (g.x + i) * g.stride_w - g.pad_left;  // column of tap s = 0
    const std::int64_t w_last = w0 + (g.kernel_w - 1) * g.dilation_w;
    if (one_vector && w0 >= 0 && w_last < g.in_width) {
      __m512i v = _mm512_setzero_si512();  // the bytes past the window stay 0
      for (std::int64_t r = 0; r < g.kernel_h; ++r) {
        // Lane l reads the kernel row's byte l − r·window_row: the address lies below the row
        // by that much, and the lanes below it are masked out.
        const auto at = reinterpret_cast<const void*>(reinterpret_cast<std::uintptr_t>(lines[r]) +
                                                      w0 * g.channels - r * window_row);
        v = lines[r] != nullptr ? _mm512_mask_loadu_epi8(v, row_lanes[r], at)
                                : _mm512_mask_mov_epi8(v, row_lanes[r], fill);
      }
      _mm512_storeu_si512(out, v);
      continue;
    }
    if (short_rows && w0 >= 0 && w_last < g.in_width) {  // one vector per kernel row
      for (std::int64_t r = 0; r < g.kernel_h; ++r) {
        const __m512i v = lines[r] != nullptr
                              ? _mm512_maskz_loadu_epi8(row_mask, lines[r] + w0 * g.channels)
                              : fill;
        _mm512_storeu_si512(out + r * window_row, v);
      }
      _mm512_storeu_si512(out + used, _mm512_setzero_si512());
      continue;
    }
    for (std::int64_t r = 0; r < g.kernel_h; ++r) {
      std::uint8_t* dst = out + r * window_row;
      const std::int64_t h = g.y * g.stride_h + r * g.dilation_h - g.pad_top;
      if (h < 0 || h >= g.in_height) {
        copy_bytes(dst, nullptr, window_row, fill);
        continue;
      }
      const std::uint8_t* line = g.input + (g.n * g.in_height + h) * g.in_width * g.channels;
      for (std::int64_t s = 0; s < g.kernel_w; ++s) {
        const std::int64_t w = w0 + s * g.dilation_w;
        const bool inside = w >= 0 && w < g.in_width;
        copy_bytes(dst + s * g.channels, inside ? line + w * g.channels : nullptr, g.channels,
                   fill);
      }
    }
    copy_bytes(out + used, nullptr, g.row_bytes - used, _mm512_setzero_si512());
  }
}

GemmTileKernel gemm_tile_kernel(int rows, int vectors) {
  switch (rows) {
    case 1: return by_vectors<1>(vectors);
    case 2: return by_vectors<2>(vectors);
    case 3: return by_vectors<3>(vectors);
    case 4: return by_vectors<4>(vectors);
    case 5: return by_vectors<5>(vectors);
    default: return by_vectors<6>(vectors);
  }
}

}  // namespace qconv::detail::avx512_vnni
