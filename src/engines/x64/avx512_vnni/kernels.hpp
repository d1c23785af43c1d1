// SPDX-License-Identifier: Apache-2.0
// The AVX-512 VNNI micro-kernels, behind a plain-C interface. They live in translation units built
// with AVX-512 flags (CMakeLists.txt), so this header and those files use no standard-library
// templates: an inline function instantiated there would be compiled for AVX-512 and could be the
// copy the linker keeps for every caller, on any CPU. The engine (engine.cpp, built for the
// baseline ISA) calls them through the function pointers below, only on a CPU that has the
// features (Engine::required_cpu_features).
#pragma once

#include <cstdint>

#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::detail::avx512_vnni {

// Output channels per weight panel: four zmm vectors of 16 s32 accumulators.
inline constexpr int kPanelWidth = 64;
// Output pixels per register tile: 6 rows x 4 vectors = 24 accumulators, 4 weight vectors and one
// broadcast input register out of 32.
inline constexpr int kMaxRows = 6;

// One register tile: `rows` output pixels (at a constant byte stride in the input) times one panel
// of weights, summed over a list of taps. For each tap, every row reads `steps` 4-byte groups of
// input channels and the tap's weight block, laid out [step][panel_width][4] (u8·s8 or s8·u8 pairs,
// as vpdpbusd takes them).
struct GemmTile {
  const std::uint8_t* input;        // the input tensor's bytes
  std::int64_t first_row;           // byte offset of row 0's window origin in `input`
  std::int64_t row_stride;          // bytes from one row's window origin to the next
  const std::int64_t* row_offsets;  // or, when not null: row i's origin is first_row + this[i]
  const std::int64_t* tap_offsets;  // per tap: byte offset from a window origin to the tap's pixel
  const std::int64_t* tap_steps;  // per tap: its first K step in the panel (times the step's bytes)
  std::int32_t taps;
  std::int32_t steps;     // ceil(channels / 4)
  std::int32_t channels;  // input bytes a tap reads per row (the last step masks the rest)
  std::int32_t vectors;   // panel width / 16 (1 to 4)
  const std::int8_t* weights;
  // The sums start at −input_zero_point · zero_point_sums[c] (the exact sum's constant term,
  // engine.cpp), or at 0 when zero_point_sums is null.
  const std::int32_t* zero_point_sums;  // of the panel's channels
  std::int32_t input_zero_point;
  std::int32_t* acc;          // out: [rows][64] s32 sums
  std::int32_t* window_sums;  // out: per row, sum of the input values read; null when not needed
};
// The input is u8 (an s8 input is run from a copy as x + 128) and the weights s8 (u8 weights are
// packed as w − 128).
using GemmTileKernel = void (*)(const GemmTile&);
GemmTileKernel gemm_tile_kernel(int rows, int vectors);

// AMX (Intel's tile registers): blocks of 16 or 32 output pixels x 64 output channels, from the
// same packed panels (a panel's 16 steps of 64 lanes x 4 bytes are exactly a 16 x 64-byte B tile,
// at a stride of 256 bytes) and rows of an input whose channels are a multiple of 64. Only on a CPU
// with AMX-INT8 whose operating system grants this process the tile state (amx_available).
struct AmxBlock {
  const std::uint8_t* input;
  std::int64_t first_row;   // byte offset of row 0's window origin
  std::int64_t row_stride;  // bytes between consecutive rows' origins
  const std::int64_t* tap_offsets;
  const std::int64_t* tap_steps;  // per tap: its first K step in a full (64-lane) panel
  std::int32_t taps;
  std::int32_t chunks;  // channels / 64
  std::int32_t rows;    // 1 to 32
  const std::int8_t* weights;
  const std::int32_t* zero_point_sums;  // as GemmTile
  std::int32_t input_zero_point;
  std::int32_t* acc;          // out: [rows][64]
  std::int32_t* window_sums;  // out: per row, or null
};
bool amx_available();  // asks the OS once for the tile state (Linux: arch_prctl)
void amx_begin();      // before a thread's first block of a run
void amx_end();        // after its last: releases the tiles
// A u8 input, s8 weights, as gemm_tile_kernel.
void amx_block(const AmxBlock& b);

// Depthwise (one input channel per output channel): `rows` pixels x up to 64 channels, the sum
// (x − zx)·(w − zw) over the listed taps in s32, exact (a padded tap is simply not listed).
struct DepthwiseTile {
  const std::uint8_t* input;
  std::int64_t first_row;           // byte offset of row 0's window origin, at the first channel
  std::int64_t row_stride;          // bytes between consecutive rows' origins
  const std::int64_t* tap_offsets;  // per tap: bytes from a window origin to its pixel
  std::int32_t taps;
  std::int32_t channels;  // 1 to 64
  std::int32_t rows;      // 1 to kMaxRows
  // w − zw as 16-bit pairs of consecutive listed taps (the last of an odd list paired with 0):
  // [pair][64 channels][2].
  const std::int16_t* weights;
  std::int32_t zero_point;  // zx
  std::int32_t* acc;        // out: [rows][64]
};
void depthwise_tile(const DepthwiseTile& t);

// im2col of one tile: output pixels (n, y, x .. x + rows) as rows of `row_bytes` bytes holding
// their windows in (r, s, c) order, padding filled with the input zero point, the rest of each row
// (up to a multiple of 4) with zeros. Masked loads: nothing outside the input is read. `out` needs
// 64 bytes of slack after the last row (whole-vector stores).
struct WindowGather {
  const std::uint8_t* input;
  std::uint8_t* out;
  std::int64_t row_bytes;  // a multiple of 4, at least kernel_h * kernel_w * channels
  std::int64_t n, y, x;
  std::int32_t rows;
  std::int64_t channels, in_height, in_width;
  std::int64_t kernel_h, kernel_w, stride_h, stride_w, dilation_h, dilation_w, pad_top, pad_left;
  std::uint8_t zero_point;
};
void gather_windows(const WindowGather& g);

// The output stage as the kernels read it (VectorConstants, as plain pointers).
struct StageView {
  const std::int32_t* bias_s32;
  const float* bias_f32;
  const float* scale_f32;
  const std::int32_t* q31;
  const std::int32_t* shift_left;
  const std::int32_t* shift_right;
  const std::int32_t* round_down;
  std::int64_t channel_step;
  std::int32_t zero_point;
  std::int32_t lo;
  std::int32_t hi;
  bool round_upward;  // tvm_f32
};

// The accumulators of one tile, corrected for zero points and signedness, then through the output
// stage into the output tensor.
struct TileOutput {
  std::int32_t* acc;  // [rows][64], corrected in place
  std::int32_t rows;
  std::int32_t channels;  // valid output channels of this panel (1 to 64)
  std::int64_t channel;   // the panel's first output channel
  // acc -= weight_zero_point[c] * window_sums[row] when both are given.
  const std::int32_t* window_sums;
  const std::int32_t* weight_zero_points;  // of the panel's channels
  bool uniform_weight_zero_point;          // every channel's is weight_zero_points[0]
  void* output;                            // the tile's first pixel, the panel's first channel
  std::int64_t output_row_stride;          // elements from one row's pixel to the next
};
void correct_tile(const TileOutput& tile);
// Writes a corrected tile through the output stage; null for a (scheme, output dtype) pair that has
// no vector form (the engine then applies the scalar stage).
using EpilogueKernel = void (*)(const TileOutput&, const StageView&);
EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype);

}  // namespace qconv::detail::avx512_vnni
