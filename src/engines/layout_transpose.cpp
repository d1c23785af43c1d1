// SPDX-License-Identifier: Apache-2.0
#include "engines/layout_transpose.hpp"

#include <algorithm>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if defined(__x86_64__)
#include "core/cpu_features.hpp"
#include "engines/x64/avx512_vnni/transpose_kernels.hpp"
#endif

namespace qconv::detail {
namespace {

constexpr std::int64_t kBlock = 16;

// The scalar transpose of the [row_begin, row_end) x [col_begin, col_end) part.
template <typename T>
void transpose_part(const T* in, std::int64_t in_stride, T* out, std::int64_t out_stride,
                    std::int64_t row_begin, std::int64_t row_end, std::int64_t col_begin,
                    std::int64_t col_end) {
  for (std::int64_t c = col_begin; c < col_end; ++c) {
    for (std::int64_t r = row_begin; r < row_end; ++r) {
      out[c * out_stride + r] = in[r * in_stride + c];
    }
  }
}

#if defined(__SSE2__)
// One 16 x 16 block in registers (a[i]: row i), transposed into a[j]: column j. Four rounds of
// interleaving, each doubling the run of values that belong to one column (1, 2, 4, 8 rows, then
// all 16).
inline __attribute__((always_inline)) void transpose_16x16_registers(__m128i (&a)[16]) {
  __m128i b[16];
  // b[2i]: 16-bit values (rows 2i, 2i+1) of columns 0-7; b[2i+1]: of columns 8-15.
  for (int i = 0; i < 8; ++i) {
    b[2 * i] = _mm_unpacklo_epi8(a[2 * i], a[2 * i + 1]);
    b[2 * i + 1] = _mm_unpackhi_epi8(a[2 * i], a[2 * i + 1]);
  }
  // a[4g + q]: 32-bit values (rows 4g..4g+3) of columns 4q..4q+3.
  for (int g = 0; g < 4; ++g) {
    for (int h = 0; h < 2; ++h) {  // h: columns 0-7 or 8-15
      const __m128i lo = b[4 * g + h], hi = b[4 * g + 2 + h];
      a[4 * g + 2 * h] = _mm_unpacklo_epi16(lo, hi);
      a[4 * g + 2 * h + 1] = _mm_unpackhi_epi16(lo, hi);
    }
  }
  // b[8e + 2q + k]: 64-bit values (rows 8e..8e+7) of columns 4q + 2k and 4q + 2k + 1.
  for (int e = 0; e < 2; ++e) {
    for (int q = 0; q < 4; ++q) {
      const __m128i lo = a[8 * e + q], hi = a[8 * e + 4 + q];
      b[8 * e + 2 * q] = _mm_unpacklo_epi32(lo, hi);
      b[8 * e + 2 * q + 1] = _mm_unpackhi_epi32(lo, hi);
    }
  }
  // Column 2m and 2m + 1: rows 0-7 from b[m], rows 8-15 from b[8 + m].
  for (int m = 0; m < 8; ++m) {
    a[2 * m] = _mm_unpacklo_epi64(b[m], b[8 + m]);
    a[2 * m + 1] = _mm_unpackhi_epi64(b[m], b[8 + m]);
  }
}

inline __attribute__((always_inline)) void transpose_16x16(const std::uint8_t* in,
                                                           std::int64_t in_stride,
                                                           std::uint8_t* out,
                                                           std::int64_t out_stride) {
  __m128i a[16];
  for (int i = 0; i < 16; ++i) {
    a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * in_stride));
  }
  transpose_16x16_registers(a);
  for (int j = 0; j < 16; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j * out_stride), a[j]);
  }
}

// The first `cols` (1 to 15) columns of 16 rows: a row's 16-byte load where it stays within the
// `readable` bytes from `in` (the bytes after a row's columns are then the next rows'), otherwise
// through a local copy; the `cols` output rows written whole. A 14x14 image's 196 pixels leave 4
// such columns per block of 16 channels, which a byte at a time cost as much as the blocks
// themselves.
void transpose_16xn(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                    std::int64_t out_stride, int cols, std::int64_t readable) {
  __m128i a[16];
  for (int i = 0; i < 16; ++i) {
    if (i * in_stride + 16 <= readable) {
      a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i * in_stride));
    } else {
      alignas(16) std::uint8_t row[16] = {};
      std::memcpy(row, in + i * in_stride, static_cast<std::size_t>(cols));
      a[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(row));
    }
  }
  transpose_16x16_registers(a);
  for (int j = 0; j < cols; ++j) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j * out_stride), a[j]);
  }
}

// `R` bytes of each of `count` dwords to its own output row (a fixed-size copy: one or two
// stores, where a copy of a variable count costs a library call).
template <int R>
void scatter_dword_bytes(const std::uint8_t* dwords, std::int64_t count, std::uint8_t* out,
                         std::int64_t out_stride) {
  for (std::int64_t j = 0; j < count; ++j) std::memcpy(out + j * out_stride, dwords + 4 * j, R);
}

// The first `rows` (1 to 4) bytes of each of `count` dwords (one per column) to the column's
// output row.
void scatter_columns(const std::uint8_t* dwords, int rows, std::int64_t count, std::uint8_t* out,
                     std::int64_t out_stride) {
  switch (rows) {
    case 1: scatter_dword_bytes<1>(dwords, count, out, out_stride); break;
    case 2: scatter_dword_bytes<2>(dwords, count, out, out_stride); break;
    case 3:
      if (out_stride == 3) {  // dense (a 3-channel image): each dword whole, the next overwriting
        for (std::int64_t j = 0; j + 1 < count; ++j) std::memcpy(out + 3 * j, dwords + 4 * j, 4);
        std::memcpy(out + 3 * (count - 1), dwords + 4 * (count - 1), 3);
      } else {
        scatter_dword_bytes<3>(dwords, count, out, out_stride);
      }
      break;
    default: scatter_dword_bytes<4>(dwords, count, out, out_stride); break;
  }
}

// Rows [first, rows), fewer than 16, four at a time: 16 columns of the four rows interleaved
// into 16 dwords (a column's bytes in row order) by two rounds of unpacking, then scattered to
// the columns' output rows. A 3-channel NCHW image is all such rows: through a 16 x 16 block per
// 16 columns and a copy of a variable count per column, its transpose took a fifth of
// MobileNetV2's first layer.
void transpose_last_rows(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                         std::int64_t out_stride, std::int64_t first, std::int64_t rows,
                         std::int64_t cols) {
  const std::int64_t readable = (rows - 1) * in_stride + cols;  // bytes from `in`
  alignas(16) std::uint8_t dwords[64];
  for (std::int64_t r = first; r < rows; r += 4) {
    const int count = static_cast<int>(std::min<std::int64_t>(4, rows - r));
    for (std::int64_t c = 0; c < cols; c += kBlock) {
      const std::int64_t n = std::min(kBlock, cols - c);
      __m128i a[4];
      for (int i = 0; i < 4; ++i) {
        const std::int64_t at = (r + i) * in_stride + c;
        if (i >= count) {
          a[i] = _mm_setzero_si128();
        } else if (at + kBlock <= readable) {
          a[i] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in + at));
        } else {
          alignas(16) std::uint8_t row[16] = {};
          std::memcpy(row, in + at, static_cast<std::size_t>(n));
          a[i] = _mm_load_si128(reinterpret_cast<const __m128i*>(row));
        }
      }
      const __m128i low01 = _mm_unpacklo_epi8(a[0], a[1]), high01 = _mm_unpackhi_epi8(a[0], a[1]);
      const __m128i low23 = _mm_unpacklo_epi8(a[2], a[3]), high23 = _mm_unpackhi_epi8(a[2], a[3]);
      auto* d = reinterpret_cast<__m128i*>(dwords);
      _mm_store_si128(d, _mm_unpacklo_epi16(low01, low23));
      _mm_store_si128(d + 1, _mm_unpackhi_epi16(low01, low23));
      _mm_store_si128(d + 2, _mm_unpacklo_epi16(high01, high23));
      _mm_store_si128(d + 3, _mm_unpackhi_epi16(high01, high23));
      scatter_columns(dwords, count, n, out + c * out_stride + r, out_stride);
    }
  }
}
#endif

#if defined(__x86_64__)
// Rows [first, rows) (AVX-512 BW): four rows of 64 columns at a time as dwords, then each
// column's bytes to its output row.
void transpose_last_rows_as_dwords(const std::uint8_t* in, std::int64_t in_stride,
                                   std::uint8_t* out, std::int64_t out_stride, std::int64_t first,
                                   std::int64_t rows, std::int64_t cols) {
  alignas(64) std::uint8_t dwords[4 * 64];
  for (std::int64_t r = first; r < rows; r += 4) {
    const int count = static_cast<int>(std::min<std::int64_t>(4, rows - r));
    for (std::int64_t c = 0; c < cols; c += 64) {
      const int n = static_cast<int>(std::min<std::int64_t>(64, cols - c));
      avx512_vnni::transpose_4x64_bytes_to_dwords(in + r * in_stride + c, in_stride, count, n,
                                                  dwords);
      std::uint8_t* to = out + c * out_stride + r;
      if (count == 3 && out_stride == 3) {  // dense: the columns' bytes follow each other
        avx512_vnni::pack_dwords_to_3_bytes(dwords, n, to);
      } else {
        scatter_columns(dwords, count, n, to, out_stride);
      }
    }
  }
}
#endif

}  // namespace

void transpose_bytes(const std::uint8_t* in, std::int64_t in_stride, std::uint8_t* out,
                     std::int64_t out_stride, std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0) return;  // nothing to move (and the pointers may be null)
#if defined(__SSE2__)
  const std::int64_t full_rows = rows / kBlock * kBlock, full_cols = cols / kBlock * kBlock;
  std::int64_t c = 0;
#if defined(__x86_64__)
  // Where the CPU has AVX-512 BW: four 16 x 16 blocks per shuffle, and the rows past the last
  // block of 16 four at a time.
  static const bool avx512 = (host_cpu_features() & kAvx512bw) != 0;
  if (avx512) {
    // Rows in blocks of 64, 16 columns at a time: whole 64-byte output rows, and the next block
    // reads the next 16 bytes of the same input lines. Not where the input lines lie a multiple of
    // 1 KiB apart (an NHWC tensor of 1024 or 2048 channels, an NCHW image of 32 x 32 pixels): a
    // block's 64 lines then fall in 4 of the 64 sets of a 32 KiB 8-way L1 and evict each other
    // before the next block reads them again; the 16-row blocks below read whole lines once
    // (a [196][1024] transpose 1.6x faster on an AMD Zen 4, a [784][1024] one 1.6x).
    const std::int64_t wide_rows = in_stride % 1024 != 0 ? rows / (4 * kBlock) * (4 * kBlock) : 0;
    for (std::int64_t r = 0; r < wide_rows; r += 4 * kBlock) {
      for (std::int64_t j = 0; j < full_cols; j += kBlock) {
        avx512_vnni::transpose_64x16_bytes(in + r * in_stride + j, in_stride,
                                           out + j * out_stride + r, out_stride);
      }
    }
    if (full_cols < cols) {  // the last columns, masked
      for (std::int64_t r = 0; r < wide_rows; r += 4 * kBlock) {
        avx512_vnni::transpose_64xn_bytes(in + r * in_stride + full_cols, in_stride,
                                          out + full_cols * out_stride + r, out_stride,
                                          static_cast<int>(cols - full_cols));
      }
    }
    // The rest of the blocks of 16 rows, 64 columns at a time.
    in += wide_rows * in_stride;
    out += wide_rows;
    rows -= wide_rows;
    const std::int64_t block_rows = full_rows - wide_rows;
    for (; c + 4 * kBlock <= cols; c += 4 * kBlock) {
      for (std::int64_t r = 0; r < block_rows; r += kBlock) {
        avx512_vnni::transpose_16x64_bytes(in + r * in_stride + c, in_stride,
                                           out + c * out_stride + r, out_stride);
      }
    }
    for (; c < full_cols; c += kBlock) {
      for (std::int64_t r = 0; r < block_rows; r += kBlock) {
        transpose_16x16(in + r * in_stride + c, in_stride, out + c * out_stride + r, out_stride);
      }
    }
    transpose_part(in, in_stride, out, out_stride, 0, block_rows, full_cols, cols);
    transpose_last_rows_as_dwords(in, in_stride, out, out_stride, block_rows, rows, cols);
    return;
  }
#endif
  // Columns outermost, 64 at a time: the 64 output rows of a column block are written whole
  // before the next block, and each input line is read a whole cache line at a time.
  for (; c < full_cols; c += 4 * kBlock) {
    const std::int64_t end = std::min(full_cols, c + 4 * kBlock);
    for (std::int64_t r = 0; r < full_rows; r += kBlock) {
      for (std::int64_t j = c; j < end; j += kBlock) {
        transpose_16x16(in + r * in_stride + j, in_stride, out + j * out_stride + r, out_stride);
      }
    }
  }
  if (full_cols < cols) {  // the last columns of the blocks of 16 rows
    for (std::int64_t r = 0; r < full_rows; r += kBlock) {
      transpose_16xn(in + r * in_stride + full_cols, in_stride, out + full_cols * out_stride + r,
                     out_stride, static_cast<int>(cols - full_cols),
                     (rows - 1 - r) * in_stride + cols - full_cols);
    }
  }
  transpose_last_rows(in, in_stride, out, out_stride, full_rows, rows, cols);
#else
  for (std::int64_t c = 0; c < cols; c += kBlock) {
    transpose_part(in, in_stride, out, out_stride, 0, rows, c, std::min(cols, c + kBlock));
  }
#endif
}

void transpose_values(const void* in, std::int64_t in_stride, void* out, std::int64_t out_stride,
                      std::int64_t rows, std::int64_t cols, std::size_t element) {
  const auto blocked = [&](const auto* from, auto* to) {
    for (std::int64_t c = 0; c < cols; c += kBlock) {
      transpose_part(from, in_stride, to, out_stride, 0, rows, c, std::min(cols, c + kBlock));
    }
  };
  switch (element) {
    case 1:
      transpose_bytes(static_cast<const std::uint8_t*>(in), in_stride,
                      static_cast<std::uint8_t*>(out), out_stride, rows, cols);
      return;
    case 2:
      blocked(static_cast<const std::uint16_t*>(in), static_cast<std::uint16_t*>(out));
      return;
    case 4:
      blocked(static_cast<const std::uint32_t*>(in), static_cast<std::uint32_t*>(out));
      return;
    default:
      blocked(static_cast<const std::uint64_t*>(in), static_cast<std::uint64_t*>(out));
      return;
  }
}

}  // namespace qconv::detail
