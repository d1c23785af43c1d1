// SPDX-License-Identifier: Apache-2.0
// The AVX-512 VNNI (and AMX) micro-kernels, behind the plain-C interface of gemm/kernel_set.hpp.
// They live in translation units built with AVX-512 flags (CMakeLists.txt), so this header and
// those files use no standard-library templates (see kernel_set.hpp). The planner (gemm_engine.cpp,
// built for the baseline ISA) calls them through the KernelSet of kernel_set.cpp, only on a CPU
// that has the features (Engine::required_cpu_features).
#pragma once

#include <cstdint>

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::avx512_vnni {

using gemm::AmxBlock;
using gemm::EpilogueKernel;
using gemm::FlatRun;
using gemm::FlatRunKernel;
using gemm::GemmOutputKernel;
using gemm::GemmTile;
using gemm::GemmTileKernel;
using gemm::GroupedLanes;
using gemm::GroupedTile;
using gemm::GroupedTileKernel;
using gemm::InLaneOutputKernel;
using gemm::kPanelWidth;
using gemm::NchwFlatKernel;
using gemm::NchwFlatRun;
using gemm::RowInterleave;
using gemm::StageView;
using gemm::TileOutput;
using gemm::WindowGather;

// Sanitizer and fuzzer builds define QCONV_FEWER_KERNEL_VARIANTS (CMakeLists.txt): instrumented,
// every fixed schedule and shortcut variant of the fused kernels (depthwise, flat runs) takes the
// compiler many minutes. Those builds keep the generic schedule (the same tiles with the layout
// read at run time) and no saturating-low shortcut; the optimised builds' tests run every variant.
#ifdef QCONV_FEWER_KERNEL_VARIANTS
inline constexpr bool kEveryKernelVariant = false;
#else
inline constexpr bool kEveryKernelVariant = true;
#endif

// Where rows first .. first + kRows − 1 of a tile read tap `tap` (GemmTile::tap_row_offsets, or
// the tile's origin, tap offset and row offsets).
template <int kRows>
inline void tap_rows(const GemmTile& t, std::int32_t tap, int first,
                     const std::uint8_t* (&row)[kRows]) {
  if (t.tap_row_offsets != nullptr) {
    const std::int64_t* listed = t.tap_row_offsets + tap * t.tap_rows_stride + first;
    // Selected by masks, not branches: branches in the tap loop cost GCC its register allocation
    // of the accumulators (spills).
    const auto input = reinterpret_cast<std::uintptr_t>(t.input) + t.first_row;
    const auto padding = reinterpret_cast<std::uintptr_t>(t.padding_row) + t.first_row;
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) {
      const auto offset = static_cast<std::uintptr_t>(listed[i]);
      const std::uintptr_t padded = static_cast<std::uintptr_t>(listed[i] >> 63);  // all ones: −1
      row[i] =
          reinterpret_cast<const std::uint8_t*>(((input + offset) & ~padded) | (padding & padded));
    }
    return;
  }
  const std::int64_t origin = t.first_row + t.tap_offsets[tap];
#pragma GCC unroll 8
  for (int i = 0; i < kRows; ++i) {
    const std::int64_t offset =
        t.row_offsets != nullptr ? t.row_offsets[first + i] : (first + i) * t.row_stride;
    row[i] = t.input + (origin + offset);
  }
}

// Output pixels per register tile: 6 rows x 4 vectors = 24 accumulators, 4 weight vectors and one
// broadcast input register out of 32.
inline constexpr int kMaxRows = 6;

// 6x64 zmm tiles (gemm_kernels.cpp). The input is u8 (an s8 input is run from a copy as x + 128)
// and the weights s8 (u8 weights are packed as w − 128).
GemmTileKernel gemm_tile_kernel(int rows, int vectors);
// GEMM tiles through the stage from the registers (KernelSet::gemm_output_tile).
GemmOutputKernel gemm_output_kernel(SchemeKind scheme, DType output_dtype);

// Flat runs of pixels through the output stage in registers (flat_run_kernels.cpp): null for a
// (scheme, output dtype) pair without a vector output stage.
FlatRunKernel flat_run_kernel(SchemeKind scheme, DType output_dtype, int vectors);

// NCHW 1x1 layers with pixels in lanes (nchw_flat_kernels.cpp): null for an s32 output or a
// (scheme, output dtype) pair without a vector output stage.
NchwFlatKernel nchw_flat_run_kernel(SchemeKind scheme, DType output_dtype);

// Grouped tiles, several groups per panel (grouped_kernels.cpp): rows 1..6, vectors 1..4.
GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums,
                                      gemm::GroupedLanes lanes);
// The in-lane grouped tiles' epilogue in lane order (KernelSet::in_lane_epilogue), the tiles
// through the stage from the registers (KernelSet::in_lane_output_tile) and the stage's arrays in
// lane order (KernelSet::in_lane_stage), in grouped_kernels.cpp.
EpilogueKernel in_lane_epilogue_kernel(int width, SchemeKind scheme, DType output_dtype);
InLaneOutputKernel in_lane_output_kernel(int width, SchemeKind scheme, DType output_dtype);
void in_lane_stage(int width, const StageView& in, std::int64_t channels, std::int32_t* storage,
                   StageView& out);
// Grouped tiles of GroupedLanes::two_groups and one_group through the stage from the registers
// (KernelSet::grouped_output_tile), in grouped_kernels.cpp.
InLaneOutputKernel grouped_output_kernel(GroupedLanes lanes, SchemeKind scheme, DType output_dtype);

// AMX blocks (amx_kernels.cpp): only on a CPU with AMX-INT8 whose operating system grants this
// process the tile state (amx_available).
bool amx_available();  // asks the OS once for the tile state (Linux: arch_prctl)
void amx_begin();      // before a thread's first block of a run
void amx_end();        // after its last: releases the tiles
void amx_block(const AmxBlock& b);

// im2col with masked loads (gemm_kernels.cpp).
void gather_windows(const WindowGather& g);

// KernelSet::sum_pixels (pixel_sum_kernels.cpp).
void sum_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                std::int64_t channels, std::int32_t* out);

// KernelSet::pack_lane_block (weight_packing.cpp).
void pack_lane_block(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                     std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                     const gemm::LaneSums& lane_sums);

// KernelSet::interleave_rows (row_interleave_kernels.cpp).
void interleave_rows(const RowInterleave& r);

// The output stage in 16 lanes (epilogue_kernels.cpp).
void correct_tile(const TileOutput& tile);
EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype);

// Depthwise (groups = C_in, C_out = m·C_in; output channel o reads input channel o / m), four
// taps per vpdpbusd: channels in lanes, each s32 lane's 4 bytes the same input column of 4 kernel
// rows (depthwise_kernels.cpp, planned by depthwise_plan.cpp). A block of `width` (16, 32 or 64)
// output channels runs an output row at a time: depthwise_columns() interleaves each group's 4
// input rows into columns of 4·width bytes (lane depthwise_lane(width, c) of a column: channel c,
// its 4 rows' bytes),
// then a depthwise_output_kernel() sums the taps of a run of output pixels over those columns and
// writes them through the output stage.
// The lane of a block's channel c (0 ≤ c < width) in the columns, the weights and the sums: in
// order for 16 and 32 lanes; for 64, 16·q + 4·l + k where c = 16·l + 4·q + k (vector q, 128-bit
// lane l, dword k: where the byte unpacks put a row's channel c).
constexpr int depthwise_lane(int width, int c) {
  return width == 64 ? 16 * (c / 4 % 4) + 4 * (c / 16) + c % 4 : c;
}

struct DepthwiseColumns {
  // Per group 4 rows, each the address of its input column 0 (the same for every block of a row),
  // or null (a padding row, or a slot past the kernel's rows): the zero point then.
  const std::uint8_t* const* rows;  // [groups][4]
  std::int64_t channel_offset;      // the block's first input channel, added to each row's address
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
// depthwise_columns() for a block of width 32 without expand (multiplier 1), its columns
// interleaved by VBMI byte permutes (depthwise_columns_vbmi.cpp: built with VBMI; call only on a
// CPU that has it): the same buffer.
void depthwise_columns_32_vbmi(const DepthwiseColumns& c);

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
  std::int32_t channels;       // valid output channels of the block (1 to width)
  std::int64_t channel;        // the block's first output channel
  void* output;                // pixel 0's first channel
  std::int64_t output_stride;  // elements between consecutive pixels
  bool signed_output;          // an s8 output (else u8, or s32: 4-byte elements)
  // fbgemm to bytes whose (acc + bias)·scale stays below 2^31 in magnitude with hi the dtype's
  // maximum: the packs to bytes saturate there, so the stage may skip its high clamp.
  bool saturated_high;
  const StageView* stage;  // depthwise_block_stage()'s: 64-lane blocks in their lanes' order
  // Written instead of the output when the (scheme, output dtype) has no vector output stage: the
  // exact sums, [pixels rounded up to 8][64], 64-byte aligned, for the scalar stage.
  std::int32_t* sums;
  // A fused kernel's input rows (its rows, at the block's first channel with channel_offset 0,
  // first_column, in_width, pixel_bytes and zero_point), interleaved in registers: `columns` is
  // then not read. Null for the others.
  const DepthwiseColumns* source;
};
using DepthwiseOutputKernel = void (*)(const DepthwiseOutputs&);

// The output stage's per-channel arrays that `scheme` reads, copied into `storage` (7 arrays of
// `channels` rounded up to 64 words, 64-byte aligned) with the channels of each of the first
// `blocks64` 64-lane blocks in their lanes' order (depthwise_lane), the rest as they are; `out` is
// `in` pointing at the copies (`in` itself when every channel shares one set of constants).
void depthwise_block_stage(SchemeKind scheme, const StageView& in, std::int64_t blocks64,
                           std::int64_t channels, std::int32_t* storage, StageView& out);

// The kernel for a run of output pixels: fused with the output stage of (scheme, output dtype),
// or writing DepthwiseOutputs::sums where that pair has no vector form (epilogue_kernel() null).
// Its schedule is fixed for `columns` kernel columns at consecutive buffer columns, `parts` taps
// each (w − zw split into s8 parts), pixels `column_step` columns apart, where that layout has
// one; columns = 0: any layout.
DepthwiseOutputKernel depthwise_output_kernel(SchemeKind scheme, DType output_dtype, int columns,
                                              int parts, int column_step);

// How a fused kernel takes a w − zw outside s8 (depthwise_fused_kernel).
enum class DepthwiseSplit {
  // In `parts` s8 parts, each its own tap over the same column (one vpdpbusd a part).
  parts,
  // As a + c, a per tap and c per channel, both in s8: the group's weights hold the a of its taps,
  // then one more vector of c in the slots of its kernel rows (0 in the others). Each interleaved
  // column is multiplied by c once, and that sum added to every pixel whose window holds the
  // column: one vpdpbusd a column in place of a second part's one a tap.
  column_sums,
  // Every w − zw outside s8 of a channel in one kernel row (its duplicated row): the group's slot
  // that holds no kernel row (the spare slot, 3 or 0) is filled, channel by channel, with the
  // bytes of that channel's duplicated row, and its weights hold what the row's own slot cannot
  // (w − zw = a + e, both in s8; e = 0 where w − zw fits): two byte blends a column, no multiply.
  // The group's weights: its taps, then a tap's room that starts with the spare slot's choice:
  // the lanes (channels in order, not depthwise_lane's) that repeat the second of the other
  // three slots, as a u64 mask; those that repeat the third; the spare slot's index, a byte (the
  // other lanes repeat the first slot).
  duplicated_row,
};
// Where a duplicated_row group's spare-slot choice lies, in bytes after its taps' weights: the two
// u64 lane masks, then the spare slot's index. The packer (depthwise_plan.cpp) writes it there and
// the fused kernels (depthwise_fused_tiles.hpp) read it.
inline constexpr int kSpareSlotMasksAt = 0;
inline constexpr int kSpareSlotIndexAt = 16;

// The kernel for a full block of `width` (64, 32 or 16) lanes (as many channels, multiplier 1) of a
// u8 or s8 input (`flip`: s8, each interleaved vector flipped to u8, DepthwiseColumns::flip) at
// stride `step` (1 or 2) with `columns` kernel columns at consecutive buffer columns, `parts` taps
// each: 3 columns and one group of rows, or 5 columns, 64 lanes, and two groups; the columns
// interleaved in registers from DepthwiseOutputs::source (its rows: 4 per group), no buffer. Null
// where (scheme, output dtype) has no vector output stage to u8 or s8, for more than 2 parts (at
// stride 1: more than 1, or 32 lanes), for another width, step or column count, or for an s8 input
// in builds with fewer kernel variants (kEveryKernelVariant: the flipping set doubles the
// instrumented compile). `vbmi`: the CPU has AVX-512 VBMI, and a 16-lane block, or a 32-lane one at
// stride 2, gets the kernel that interleaves its columns with byte permutes
// (depthwise_fused_vector_vbmi_kernel, depthwise_fused_32_vbmi_kernel).
// `split` (parts 1; 64 lanes, 3 columns, one group of rows, stride 1 or 2, else null) says how a
// w − zw outside s8 (a weight zero point at one end of the weights' range) is taken without a
// second part per tap (DepthwiseSplit).
DepthwiseOutputKernel depthwise_fused_kernel(SchemeKind scheme, DType output_dtype, int parts,
                                             int width, int step, int columns, bool flip, bool vbmi,
                                             DepthwiseSplit split = DepthwiseSplit::parts);
// The two output rows of a row pair (depthwise_plan.cpp: at stride 1 the upper row's kernel rows in
// slots 0-2 of the same 4 input rows, the lower's in slots 1-3) of a full 64-lane block, each
// with its own arguments and weights, both rows' `source` the same.
using DepthwisePairKernel = void (*)(const DepthwiseOutputs& upper, const DepthwiseOutputs& lower);
// depthwise_fused_kernel's kernel for 64 lanes, 3 columns, one part at stride 1, for both rows of
// a pair: each input column interleaved once for the two rows' vpdpbusd (depthwise_fused_pair
// _kernels.cpp). Null where depthwise_fused_kernel is null for those arguments.
DepthwisePairKernel depthwise_fused_pair_kernel(SchemeKind scheme, DType output_dtype, bool flip);
// The 16-lane fused kernel of depthwise_fused_kernel (3 columns, one group of rows, `parts` 1 or 2,
// `step` 1 or 2, `flip` as there) whose columns are interleaved by one vpermt2b each
// (depthwise_fused_vbmi_kernels.cpp: built with VBMI; only for a CPU that has it); null for other
// arguments. Against the unpacks and shuffles of the other (5 shuffles a column, 3 here), on an
// AMD Zen 4: 16 channels at 56x56 17 % faster at stride 1 and 6 % at stride 2, 80 channels at
// 28x28 5 %, MobileNetV2's b3.dw (144 = 64 + 64 + 16 channels) 3 %.
DepthwiseOutputKernel depthwise_fused_vector_vbmi_kernel(SchemeKind scheme, int parts, int step,
                                                         bool flip);
// The 32-lane fused kernel of depthwise_fused_kernel (3 columns, one group of rows, stride 2,
// `parts` 1 or 2; else null), its columns interleaved by one VBMI byte permute per 16 channels
// (depthwise_fused_vbmi_kernels.cpp); call only on a CPU with AVX-512 VBMI.
DepthwiseOutputKernel depthwise_fused_32_vbmi_kernel(SchemeKind scheme, int parts, int step,
                                                     bool flip);

// Depthwise on NCHW planes, pixels in lanes (depthwise_plane_kernels.cpp, planned by
// depthwise_planes.cpp; needs AVX-512 VBMI besides the engine's features): each output plane is cut
// into slots of up to 16 output pixels, and a slot's s32 lane l sums its pixel's taps 4 at a time:
// per entry (a kernel row's group of 4 kernel columns) one load of the 64 input bytes the slot
// reads there, one vpermt2b putting each lane's 4 taps in its dword (the zero point where a tap
// falls in the padding: the permute's second table), one vpdpbusd per part against the entry's
// weight dword broadcast. No transposes: the plane is read and written where it lies.
struct DepthwisePlaneEntry {
  std::int32_t base;     // the 64 input bytes read start at the plane's byte `base`
  std::int32_t pattern;  // byte offset of the entry's vpermt2b index vector in `patterns`
  std::uint64_t mask;    // the bytes of those 64 inside the plane (no lane reads the others)
};
struct DepthwisePlaneSlot {
  std::int32_t first;  // first output pixel, in the plane
  std::int32_t count;  // 1 to 16 consecutive output pixels
};
// Rows mode (stride 1, 3 kernel rows of at most 4 columns): a strip of output columns
// [first, first + count) of every output row, walked down the plane; each input row's bytes are
// loaded and permuted once and added into the 3 output rows that read them.
struct DepthwisePlaneStrip {
  std::int32_t first;    // first output column
  std::int32_t count;    // 1 to 16 output columns
  std::int32_t base;     // the 64 bytes read start at input column `base` of a row
  std::int32_t pattern;  // byte offset of the strip's vpermt2b index vector in `patterns`
  std::uint64_t mask;    // the bytes of those 64 inside the row (no lane reads the others)
};
struct DepthwisePlanes {
  const std::uint8_t* input;  // image n's input planes
  void* output;               // image n's output planes
  std::int64_t in_plane;      // bytes per input plane
  std::int64_t out_plane;     // values per output plane
  std::int64_t first, end;    // output channels [first, end) of the image
  // Output channels from here on read input planes less than 64 bytes from the tensor's end:
  // their loads are masked to the plane (the others' 64 bytes may run into the next planes, where
  // no lane reads).
  std::int64_t masked_from;
  std::int64_t multiplier;  // output channel o reads input plane o / multiplier
  std::int32_t slots;
  const DepthwisePlaneSlot* slot;
  std::int32_t entries;              // per slot
  const DepthwisePlaneEntry* entry;  // [slots][entries]
  const std::uint8_t* patterns;      // 64-byte aligned index vectors
  std::int32_t parts;                // s8 parts of each w − zw
  const std::int32_t* weights;       // [output channel][entries][parts] dwords of 4 taps
  const std::int32_t* weight_sums;  // per output channel: Σ(w − zw); sums start at −zx times it
  std::int32_t zero_point;          // zx as read (an s8 input's + 128)
  const StageView* stage;           // the output stage in channel order
  // Rows mode: the strips (then `slots` and `slot` are not read) and the planes' shapes.
  std::int32_t strips;
  const DepthwisePlaneStrip* strip;
  std::int32_t in_width, in_height, out_width, out_height, pad_top;
};
using DepthwisePlaneKernel = void (*)(const DepthwisePlanes&);

// The plane kernel fused with the output stage of (scheme, output dtype); null where that pair has
// no vector output stage. `flip`: an s8 input, each byte read xor 0x80. `entries` 3 with `parts` 1
// or 2 have a fixed schedule.
DepthwisePlaneKernel depthwise_plane_kernel(SchemeKind scheme, DType output_dtype, bool flip,
                                            int entries, int parts);
// The rows-mode kernel (DepthwisePlaneStrip), likewise.
DepthwisePlaneKernel depthwise_plane_rows_kernel(SchemeKind scheme, DType output_dtype, bool flip,
                                                 int parts);

// A convolution of few input channels (groups 1) on NCHW planes, pixels in lanes (a network's
// first layer: dense_plane_kernels.cpp): the slots and entries of DepthwisePlanes, each entry's
// bytes of every input plane permuted once a slot and multiplied into the sums of every output
// channel.
struct DensePlanes {
  const std::uint8_t* input;  // image n's input planes
  void* output;               // image n's output planes
  std::int64_t in_plane;      // bytes per input plane
  std::int64_t out_plane;     // values per output plane
  std::int32_t in_channels;   // 1 to 4
  std::int32_t out_channels;
  std::int32_t first_slot, end_slot;  // the slots [first_slot, end_slot) of every output plane
  const DepthwisePlaneSlot* slot;
  std::int32_t entries;              // per slot
  const DepthwisePlaneEntry* entry;  // [slots][entries]
  const std::uint8_t* patterns;      // 64-byte aligned index vectors
  std::int32_t parts;                // s8 parts of each w − zw
  const std::int32_t* weights;       // [output channel][input channel][entry][part] dwords
  const std::int32_t* weight_sums;  // per output channel: Σ(w − zw); sums start at −zx times it
  std::int32_t zero_point;          // zx as read (an s8 input's + 128)
  const StageView* stage;           // the output stage in channel order
};
using DensePlaneKernel = void (*)(const DensePlanes&);

// Most (input channel, entry) pairs a dense plane kernel holds permuted at once.
inline constexpr int kDensePlaneInputs = 12;

// The dense plane kernel fused with the output stage of (scheme, output dtype); null where that
// pair has no vector output stage, or `channels` · `entries` exceeds kDensePlaneInputs. `flip`: an
// s8 input. 3 channels, 3 entries (a 3x3 kernel) and `parts` 1 have a fixed schedule.
DensePlaneKernel dense_plane_kernel(SchemeKind scheme, DType output_dtype, bool flip, int channels,
                                    int entries, int parts);

}  // namespace qconv::detail::avx512_vnni
