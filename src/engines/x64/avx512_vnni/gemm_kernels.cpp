// SPDX-License-Identifier: Apache-2.0
// The GEMM register tiles: up to 6 output pixels x 64 output channels, all taps and input channels
// summed in registers (register_tile.hpp), the sums stored for the epilogue or (full panels of 5
// or 6 pixels) put through the output stage from the registers; and the im2col gather. Built with
// AVX-512 flags: see kernels.hpp.
// GCC 12 warns falsely about the undefined upper lanes its own headers use (_mm_undefined_si128).
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/register_tile.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// A tile's sums: all its taps' K steps from the constant term on.
template <int kRows, int kVectors>
[[gnu::always_inline]] inline void gemm_sums(const GemmTile& t, __m512i (&acc)[kRows][kVectors]) {
  register_tile::start(acc, t.zero_point_sums, t.input_zero_point);
  const std::int64_t step_bytes = std::int64_t{kVectors} * 64;
  for (std::int32_t tap = 0; tap < t.taps; ++tap) {
    const std::uint8_t* row[kRows];
    tap_rows(t, tap, 0, row);
    const std::int8_t* weights = t.weights + t.tap_steps[tap] * step_bytes;
    if constexpr (kRows * kVectors <= 4) {
      register_tile::add_tap_two_sets(acc, row, weights, t.channels);
    } else {
      register_tile::add_tap(acc, row, weights, t.channels);
    }
  }
}

template <int kRows, int kVectors>
void gemm_tile(const GemmTile& t) {
  __m512i acc[kRows][kVectors];
  gemm_sums(t, acc);
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

// The windows of `pixels` output pixels whose kernel rows are each at most kBytes long and whose
// lines may each be read kBytes from every window's column (`column`, then `column_step` more
// per pixel): each row loaded whole (with the bytes past it) and stored at its place, in
// increasing order, so that each store overwrites what the one before wrote past its row; then
// zeros from the window's end (`used`) to its row's (`row_bytes`) end, by one store of kTail bytes
// (the buffer has 64 bytes of slack). Plain loads and stores, and no per-pixel bookkeeping: merging
// a window's rows in a register by masked loads, pixel by pixel, took as long as the multiplies of
// a 3x3 first layer on a CPU without AMX.
template <int kBytes, int kTail>
void copy_windows(std::uint8_t* out, std::int64_t row_bytes, std::int32_t pixels,
                  const std::uint8_t* const* lines, std::int64_t kernel_rows, std::int64_t column,
                  std::int64_t column_step, std::int64_t window_row, __m512i fill,
                  std::int64_t used) {
  for (std::int32_t i = 0; i < pixels; ++i, out += row_bytes, column += column_step) {
    for (std::int64_t r = 0; r < kernel_rows; ++r) {
      std::uint8_t* const to = out + r * window_row;
      const std::uint8_t* const line = lines[r];  // null: the row is in the padding
      if constexpr (kBytes == 16) {
        const __m128i v = line != nullptr
                              ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(line + column))
                              : _mm512_castsi512_si128(fill);
        _mm_storeu_si128(reinterpret_cast<__m128i*>(to), v);
      } else if constexpr (kBytes == 32) {
        const __m256i v = line != nullptr
                              ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(line + column))
                              : _mm512_castsi512_si256(fill);
        _mm256_storeu_si256(reinterpret_cast<__m256i*>(to), v);
      } else {
        _mm512_storeu_si512(to, line != nullptr ? _mm512_loadu_si512(line + column) : fill);
      }
    }
    if constexpr (kTail == 4) {
      _mm_storeu_si32(out + used, _mm_setzero_si128());
    } else {
      _mm512_storeu_si512(out + used, _mm512_setzero_si512());
    }
  }
}

template <int kBytes>
void copy_windows(std::uint8_t* out, std::int64_t row_bytes, std::int32_t pixels,
                  const std::uint8_t* const* lines, std::int64_t kernel_rows, std::int64_t column,
                  std::int64_t column_step, std::int64_t window_row, __m512i fill,
                  std::int64_t used) {
  if (row_bytes - used <= 4) {
    copy_windows<kBytes, 4>(out, row_bytes, pixels, lines, kernel_rows, column, column_step,
                            window_row, fill, used);
  } else {
    copy_windows<kBytes, 64>(out, row_bytes, pixels, lines, kernel_rows, column, column_step,
                             window_row, fill, used);
  }
}

// Kernel rows a shuffled store takes (ShuffledWindows).
constexpr std::int64_t kMaxShuffledRows = 8;

// Several windows per 64-byte store, for windows of short rows: `per_store` pixels (two or more,
// at most 64 / row_bytes) whose kernel row r lies, for all of them, within 16 bytes of its line
// from the first one's column. Each line's 16 bytes are broadcast to the four 128-bit lanes and one
// merge-masked vpshufb per kernel row moves them to their places in all the rows at once; the
// bytes no row takes stay zero (the windows' tails, and past the last row, overwritten by the next
// store or in the buffer's slack). kernel_h loads, kernel_h shuffles and one store per per_store
// pixels, where copy_windows stores each row of each pixel (a 3x3 stride-2 first layer's gather,
// bound by its stores, took a quarter of the layer's time). Returns the pixels written, a multiple
// of per_store; the caller copies the rest.
struct ShuffledWindows {
  __m512i index;                       // byte j of a store: the byte of its line's 16 it takes
  __mmask64 rows[kMaxShuffledRows]{};  // the bytes kernel row r's line gives
  std::int32_t per_store;

  ShuffledWindows(std::int64_t row_bytes, std::int64_t kernel_rows, std::int64_t window_row,
                  std::int64_t pixel_step)
      : index(_mm512_setzero_si512()),
        per_store(static_cast<std::int32_t>(pixels_per_store(row_bytes, window_row, pixel_step))) {
    alignas(64) static constexpr std::uint8_t kIota[64] = {
        0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
        22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
        44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
    const __m512i iota = _mm512_load_si512(kIota);
    const std::uint64_t row_mask = (std::uint64_t{1} << window_row) - 1;
    for (std::int64_t q = 0; q < per_store; ++q) {
      for (std::int64_t r = 0; r < kernel_rows; ++r) {
        const std::int64_t begin = q * row_bytes + r * window_row;
        const __mmask64 bytes = row_mask << begin;
        rows[r] |= bytes;
        // Byte begin + i takes byte q · pixel_step + i of the 16.
        index = _mm512_mask_sub_epi8(index, bytes, iota,
                                     _mm512_set1_epi8(static_cast<char>(begin - q * pixel_step)));
      }
    }
  }

  // Whether windows of this shape go several to a store (the rows' loads then being 16 bytes).
  static bool fit(std::int64_t row_bytes, std::int64_t kernel_rows, std::int64_t window_row,
                  std::int64_t pixel_step) {
    return kernel_rows <= kMaxShuffledRows &&
           pixels_per_store(row_bytes, window_row, pixel_step) >= 2;
  }
  // As many as a store holds and whose rows' bytes lie within 16 of the first one's.
  static std::int64_t pixels_per_store(std::int64_t row_bytes, std::int64_t window_row,
                                       std::int64_t pixel_step) {
    if (window_row > 16) return 0;
    const std::int64_t within = (16 - window_row) / pixel_step + 1;  // pixel_step ≥ 1
    return within < 64 / row_bytes ? within : 64 / row_bytes;
  }

  std::int32_t copy(std::uint8_t* out, std::int64_t row_bytes, std::int32_t pixels,
                    const std::uint8_t* const* lines, std::int64_t kernel_rows, std::int64_t column,
                    std::int64_t column_step, __m512i fill) const {
    switch (kernel_rows) {
      case 1: return copy_rows<1>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 2: return copy_rows<2>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 3: return copy_rows<3>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 4: return copy_rows<4>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 5: return copy_rows<5>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 6: return copy_rows<6>(out, row_bytes, pixels, lines, column, column_step, fill);
      case 7: return copy_rows<7>(out, row_bytes, pixels, lines, column, column_step, fill);
      default:
        return copy_rows<kMaxShuffledRows>(out, row_bytes, pixels, lines, column, column_step,
                                           fill);
    }
  }

 private:
  // The stores' loop with the kernel rows a constant: unrolled, the rows' masks and lines held in
  // registers (with the count read at run time, the compares and branches per row were as many
  // instructions as the copy itself: a 3x3 first layer's gather took 25 % of its time); and, in
  // every output row but those whose window reaches into the padding, no test of the lines.
  template <int kRows>
  std::int32_t copy_rows(std::uint8_t* out, std::int64_t row_bytes, std::int32_t pixels,
                         const std::uint8_t* const* lines, std::int64_t column,
                         std::int64_t column_step, __m512i fill) const {
    bool every_line = true;
    for (int r = 0; r < kRows; ++r) every_line = every_line && lines[r] != nullptr;
    return every_line
               ? copy_rows<kRows, true>(out, row_bytes, pixels, lines, column, column_step, fill)
               : copy_rows<kRows, false>(out, row_bytes, pixels, lines, column, column_step, fill);
  }

  template <int kRows, bool kEveryLine>
  std::int32_t copy_rows(std::uint8_t* out, std::int64_t row_bytes, std::int32_t pixels,
                         const std::uint8_t* const* lines, std::int64_t column,
                         std::int64_t column_step, __m512i fill) const {
    const std::uint8_t* line[kRows];  // null: the row is in the padding
    __mmask64 takes[kRows];
#pragma GCC unroll 8
    for (int r = 0; r < kRows; ++r) {
      line[r] = lines[r];
      takes[r] = rows[r];
    }
    const std::int32_t stores = pixels / per_store;
    const std::int64_t store_step = per_store * column_step;
    for (std::int32_t i = 0; i < stores; ++i, out += per_store * row_bytes, column += store_step) {
      __m512i v = _mm512_setzero_si512();
#pragma GCC unroll 8
      for (int r = 0; r < kRows; ++r) {
        const __m512i from = kEveryLine || line[r] != nullptr
                                 ? _mm512_broadcast_i32x4(_mm_loadu_si128(
                                       reinterpret_cast<const __m128i*>(line[r] + column)))
                                 : fill;
        v = _mm512_mask_shuffle_epi8(v, takes[r], from, index);
      }
      _mm512_storeu_si512(out, v);
    }
    return stores * per_store;
  }
};

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
  // Whole-row loads of this many bytes where they stay within the image (its lines are in
  // increasing order: the last one in it bounds them all).
  const int row_load = window_row <= 16 ? 16 : window_row <= 32 ? 32 : 64;
  const std::uint8_t* const image_end = g.input + (g.n + 1) * g.in_height * g.in_width * g.channels;
  const std::uint8_t* last_line = g.input;
  for (std::int64_t r = 0; r < kernel_rows; ++r) {
    if (lines[r] != nullptr) last_line = lines[r];
  }
  const __mmask64 row_mask = (~std::uint64_t{0}) >> (64 - (window_row < 64 ? window_row : 64));
  // The pixels whose windows lie inside the input's width and whose whole-row loads stay within
  // the image: a run in the middle of the row of pixels, copied by copy_windows.
  const auto column_of = [&](std::int64_t i) { return (g.x + i) * g.stride_w - g.pad_left; };
  const auto whole_rows = [&](std::int64_t i) {
    const std::int64_t w0 = column_of(i);
    return short_rows && w0 >= 0 && w0 + (g.kernel_w - 1) * g.dilation_w < g.in_width &&
           last_line + w0 * g.channels + row_load <= image_end;
  };
  std::int32_t run_begin = 0, run_end = g.rows;
  while (run_begin < run_end && !whole_rows(run_begin)) ++run_begin;
  while (run_end > run_begin && !whole_rows(run_end - 1)) --run_end;
  const auto copy_run = [&] {
    std::uint8_t* const out = g.out + run_begin * g.row_bytes;
    const std::int64_t column = column_of(run_begin) * g.channels;
    const std::int64_t step = g.stride_w * g.channels;
    const std::int32_t pixels = run_end - run_begin;
    switch (row_load) {
      case 16: {
        std::int32_t done = 0;
        if (ShuffledWindows::fit(g.row_bytes, g.kernel_h, window_row, step)) {
          const ShuffledWindows shuffled(g.row_bytes, g.kernel_h, window_row, step);
          done = shuffled.copy(out, g.row_bytes, pixels, lines, g.kernel_h, column, step, fill);
        }
        copy_windows<16>(out + done * g.row_bytes, g.row_bytes, pixels - done, lines, g.kernel_h,
                         column + done * step, step, window_row, fill, used);
        break;
      }
      case 32:
        copy_windows<32>(out, g.row_bytes, pixels, lines, g.kernel_h, column, step, window_row,
                         fill, used);
        break;
      default:
        copy_windows<64>(out, g.row_bytes, pixels, lines, g.kernel_h, column, step, window_row,
                         fill, used);
    }
  };
  // The pixels copy_windows leaves (at the borders, or whose whole-row loads would pass the
  // image's end) go one by one, reading nothing outside the input: rows of up to 64 bytes a masked
  // vector each, any other window tap by tap.
  // Each pixel's stores may run past its row into the next one's: pixels in increasing order.
  const auto copy_one = [&](std::int32_t i) {
    std::uint8_t* out = g.out + i * g.row_bytes;
    const std::int64_t w0 = column_of(i);  // column of tap s = 0
    const std::int64_t w_last = w0 + (g.kernel_w - 1) * g.dilation_w;
    const bool inside = w0 >= 0 && w_last < g.in_width;
    if (short_rows && inside) {  // one vector per kernel row
      for (std::int64_t r = 0; r < g.kernel_h; ++r) {
        const __m512i v = lines[r] != nullptr
                              ? _mm512_maskz_loadu_epi8(row_mask, lines[r] + w0 * g.channels)
                              : fill;
        _mm512_storeu_si512(out + r * window_row, v);
      }
      _mm512_storeu_si512(out + used, _mm512_setzero_si512());
      return;
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
        const bool in_row = w >= 0 && w < g.in_width;
        copy_bytes(dst + s * g.channels, in_row ? line + w * g.channels : nullptr, g.channels,
                   fill);
      }
    }
    copy_bytes(out + used, nullptr, g.row_bytes - used, _mm512_setzero_si512());
  };
  for (std::int32_t i = 0; i < run_begin; ++i) copy_one(i);
  if (run_begin < run_end) copy_run();
  for (std::int32_t i = run_end; i < g.rows; ++i) copy_one(i);
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

namespace {

// A full panel's tile of kRows pixels through the output stage from the registers. Not inlined:
// its multiplies are allocated on their own.
template <int kRows, SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
[[gnu::noinline]] void gemm_output_rows(const GemmTile& t, const TileOutput& out,
                                        const StageView& stage) {
  __m512i acc[kRows][4];
  gemm_sums(t, acc);
  row_stores::stage_rows<kRows, 4, K, D, kSaturatedLow, kSaturatedHigh>(acc, out, stage, 0);
}

// Tiles of 5 and 6 pixels of a full panel (the implicit GEMM's tiles, and the 5s and 6s of a 7x7
// output) through the stage from the registers; any other tile's sums stored for the epilogue.
// The stored sums' pass took 2-3 % of ResNet-50's 56-wide 3x3 layer.
template <SchemeKind K, DType D, bool kSaturatedLow, bool kSaturatedHigh>
void gemm_output_tile(const GemmTile& t, const TileOutput& out, const StageView& stage) {
  if (t.vectors == 4 && out.rows == 6) {
    return gemm_output_rows<6, K, D, kSaturatedLow, kSaturatedHigh>(t, out, stage);
  }
  if (t.vectors == 4 && out.rows == 5) {
    return gemm_output_rows<5, K, D, kSaturatedLow, kSaturatedHigh>(t, out, stage);
  }
  static const EpilogueKernel epilogue = epilogue_kernel(K, D);  // looked up once
  gemm_tile_kernel(out.rows, t.vectors)(t);
  epilogue(out, stage);
}

template <SchemeKind K, DType D>
void gemm_output_by_range(const GemmTile& t, const TileOutput& out, const StageView& stage) {
  row_stores::by_saturation<K, D>(stage, out.saturated_high, [&]<bool kLow, bool kHigh>() {
    gemm_output_tile<K, D, kLow, kHigh>(t, out, stage);
  });
}

}  // namespace

GemmOutputKernel gemm_output_kernel(SchemeKind scheme, DType output_dtype) {
  if (output_dtype == DType::s32) return nullptr;
  return stage_lanes::for_vector_stage<GemmOutputKernel>(
      scheme, output_dtype, []<SchemeKind K, DType D>() { return &gemm_output_by_range<K, D>; });
}

}  // namespace qconv::detail::avx512_vnni
