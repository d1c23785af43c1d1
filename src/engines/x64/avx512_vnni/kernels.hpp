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

// Depthwise (groups = C_in, C_out = m·C_in; output channel o reads input channel o / m), four
// taps per vpdpbusd: channels in lanes, each s32 lane's 4 bytes the same input column of 4 kernel
// rows. A block of `width` (16, 32 or 64) output channels runs an output row at a time:
// depthwise_columns() interleaves each group's 4 input rows into columns of 4·width bytes (lane c
// of a column: channel c, its 4 rows' bytes), then depthwise_outputs() sums the taps of a run of
// output pixels over those columns and writes them through the output stage.
struct DepthwiseColumns {
  // Per group 4 rows, each the address of its input column 0 at the block's first input channel,
  // or null (a padding row, or a slot past the kernel's rows): the zero point then.
  const std::uint8_t* const* rows;  // [groups][4]
  std::int32_t groups;
  std::int64_t pixel_bytes;   // bytes between input columns (C_in)
  std::int64_t in_width;      // columns outside [0, in_width) hold the zero point
  std::int64_t first_column;  // input column of buffer column 0 (negative: left padding)
  std::int32_t columns;       // buffer columns to build
  std::int32_t width;         // 16, 32 or 64 output channels
  std::int32_t input_bytes;   // bytes read per column: the channels, or (m ≥ 2) their span ≤ 32
  const std::uint16_t* expand;  // m ≥ 2: per output lane, its byte in the span (64); else null
  bool flip;                    // an s8 input: each byte xor 0x80 (read as u8, x + 128)
  std::uint8_t zero_point;      // zx as u8 (an s8 input's + 128)
  std::uint8_t* out;            // [groups][columns][4·width], 64-byte aligned
};
void depthwise_columns(const DepthwiseColumns& c);

struct DepthwiseOutputs {
  const std::uint8_t* columns;      // depthwise_columns()'s buffer
  std::int32_t groups;              // of 4 kernel rows
  std::int32_t buffer_columns;      // columns per group in the buffer
  std::int32_t width;               // 16, 32 or 64
  std::int32_t taps;                // column taps per group
  const std::int32_t* tap_columns;  // per tap: the buffer column pixel 0 reads
  // [group][tap][width][4] s8: w − zw of 4 kernel rows per channel (a w − zw outside s8 is split
  // over taps that read the same column).
  const std::int8_t* weights;
  // Per channel: Σ(w − zw) over the taps; the sums start at −zx times it.
  const std::int32_t* weight_sums;
  std::int32_t zero_point;     // zx (u8)
  std::int32_t pixels;         // output pixels of the run
  std::int32_t column_step;    // buffer columns between consecutive pixels' windows
  std::int32_t tile;           // pixels per register tile: 4 to 6 (width 64), 4 to 8 (narrower)
  std::int32_t channels;       // valid output channels of the block (1 to width)
  std::int64_t channel;        // the block's first output channel
  void* output;                // pixel 0's first channel
  std::int64_t output_stride;  // elements between consecutive pixels
  // The output stage, or null: the caller applies the scalar stage to `sums`.
  EpilogueKernel epilogue;
  const StageView* stage;
  std::int32_t* sums;  // out: the exact sums, [pixels rounded up to the tile][64], 64-byte aligned
};
void depthwise_outputs(const DepthwiseOutputs& o);

}  // namespace qconv::detail::avx512_vnni
