// SPDX-License-Identifier: Apache-2.0
// The interface between the ISA-neutral GEMM planner (gemm_engine.cpp) and one instruction set's
// micro-kernels: the argument structs the kernels take, and a KernelSet — a table of function
// pointers plus the register tile's constants — that the planner calls through. The planner plans
// every layer class (paths flat / rows / im2col, padding patterns, groups, transposed, NCHW), packs
// the weights and walks the tiles; a KernelSet only multiplies, gathers and writes outputs.
//
// How a new ISA plugs in (NEON, SVE, another x86 width):
//  1. Write its kernels in files of their own, built with that ISA's flags (CMakeLists.txt), in a
//     namespace of their own, taking the structs below. They use no standard-library templates:
//     an inline function instantiated there would be compiled for that ISA and could be the copy
//     the linker keeps for every caller, on any CPU.
//  2. In a file built for the baseline ISA, define `const gemm::KernelSet& <isa>_kernel_set()`
//     filling the table (see src/engines/x64/avx512_vnni/kernel_set.cpp). Pointers it lacks stay
//     null: no depthwise tile → the engine declines depthwise problems; no epilogue for a scheme →
//     the scalar output stage (OutputStage::apply) runs; no AMX → no blocks above max_rows.
//  3. Make an engine of it with gemm::make_engine(name, features, kernel set) and list it in
//     detail::all_engines() (src/engines/registry.cpp), fastest first. The conformance suite then
//     runs it against the reference engine.
//
// The packed weights are common to every kernel set: panels of up to 64 output channels of one
// group, [tap][K step][panel lanes][4 bytes], a panel's lanes being 16, 32, 48 or 64 ("vectors"
// of 16 lanes), weights s8 (u8 weights stored as w − 128). A kernel narrower than 64 lanes walks a
// panel as 16-lane sub-panels: sub-panel j's part of a step is the 64 bytes at j * 64.
// Accumulators are always [rows][64] s32, lane l of sub-panel j at j * 16 + l.
#pragma once

#include <cstdint>

#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::detail::gemm {

struct LaneSums;  // panel_packing.hpp

// −zx · sum in s32, wrapping as the reference's s32 sums do: the constant term the exact sums
// start at (sum: a channel's Σ(w − zw)).
inline std::int32_t zero_point_term(std::int32_t zx, std::int32_t sum) {
  return static_cast<std::int32_t>(static_cast<std::uint32_t>(-zx) *
                                   static_cast<std::uint32_t>(sum));
}

// Output channels per weight panel.
inline constexpr int kPanelWidth = 64;
// The most rows a KernelSet's max_rows may be (in-lane grouped tiles take up to kMaxInLaneRows).
inline constexpr int kMaxTileRows = 8;
// The most rows of one grouped tile in lane order (GroupedLanes::in_lane_groups): up to four
// register chunks per call, so that the tile's fixed costs spread over four times the pixels.
inline constexpr int kMaxInLaneRows = 24;
// The rows of one register chunk of an in-lane tile of `width` (4, 8 or 16) channels per group,
// without window sums: 6 rows x 4 vectors of accumulators, 5 where each row's load is kept for
// several K steps.
constexpr int in_lane_chunk_rows(std::int64_t width) { return width == 4 ? 6 : 5; }
// The most rows of one depthwise tile through the output stage (KernelSet::depthwise_output_rows).
inline constexpr int kMaxDepthwiseOutputRows = 32;

// `bytes` input bytes zero-extended to u16 at `out`, in some kernel set's order.
using WidenBytes = void (*)(const std::uint8_t* in, std::int64_t bytes, std::uint16_t* out);

// One register tile: `rows` output pixels (at a constant byte stride in the input) times one panel
// of weights, summed over a list of taps. For each tap, every row reads `steps` 4-byte groups of
// input channels and the tap's weight block, laid out [step][panel_width][4] (input·weight byte
// pairs, as vpdpbusd or sdot take them).
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
  // gemm_engine.cpp), or at 0 when zero_point_sums is null.
  const std::int32_t* zero_point_sums;  // of the panel's channels
  std::int32_t input_zero_point;
  std::int32_t* acc;  // out: [rows][64] s32 sums
  // Out: per row, the sum of the input values read; null when not needed. Never asked of a kernel
  // set with sum_pixels (the planner adds the sums up from those).
  std::int32_t* window_sums;
  // When not null (kernel sets with takes_tap_row_offsets only): row i reads tap k at
  // input + tap_row_offsets[k * tap_rows_stride + i] + first_row, instead of input + first_row +
  // tap_offsets[k] + row i's offset; or, where that offset is −1, at padding_row + first_row. A
  // tile of pixels with different padding then runs as one: their padded taps read a row of
  // zero-point bytes, which add (zx − zx)·w = 0 once corrected. (first_row is then the panel's
  // first input channel: the offsets are the same for every panel.)
  const std::int64_t* tap_row_offsets;
  const std::uint8_t* padding_row;
  std::int32_t tap_rows_stride;
};
// The input's signedness is the KernelSet's (u8_input; the planner copies an input of the other
// kind with its sign bit flipped) and the weights are s8 (u8 weights are packed as w − 128).
using GemmTileKernel = void (*)(const GemmTile&);

// A grouped-convolution tile whose panel holds several groups side by side (gemm_engine.cpp:
// groups_per_panel): lane l of the panel multiplies its own group's input channels, which start
// at dword lane_dwords[l] of the panel's input channels (the tile's input origin), so each row's
// input is read once per K step and spread to the lanes. `gemm.channels` is a group's input
// channels (a multiple of 4) and `gemm.steps` its K steps.
struct GroupedTile {
  GemmTile gemm;                    // its window_sums unused: see zero_points
  const std::int32_t* lane_dwords;  // [64]
  std::int32_t span;                // bytes of input channels of all the panel's groups (<= 64)
  // zw' per lane: with window sums the tile takes zw'·Σx of each lane's own window off itself.
  const std::int32_t* zero_points;
  // GroupedLanes::in_lane_groups: the sums left in the tile's lane order, for
  // KernelSet::in_lane_epilogue (false: in channel order, for any epilogue).
  bool lane_order = false;
};
using GroupedTileKernel = void (*)(const GroupedTile&);

// How a grouped tile's lanes get their input (the planner picks one per problem and packs for it).
enum class GroupedLanes : std::uint8_t {
  // Any groups: each row's panel channels loaded once per K step, spread by lane_dwords.
  gathered,
  // Every 16 lanes in one group (16 or 32 output channels per group): a broadcast of its dword.
  one_group,
  // 4 input and 4 output channels per group: vector j holds groups 4j..4j+3, lane l the output
  // channel l / 4 of group 4j + l % 4, so one 16-byte broadcast (the 4 groups' channels) feeds
  // all lanes; the tile puts its lanes back in channel order at the end.
  four_groups,
  // 4, 8 or 16 input and output channels per group, every panel full (64 input channels): each
  // 128-bit lane of a row's 64 input bytes holds whole groups, and lane 4q + r of every vector
  // computes an output of a group in 128-bit lane q (gemm_engine.cpp's lane_of), so one load per
  // row and tap and one in-lane dword shuffle per K step feed all four vectors; the tile puts its
  // lanes back in channel order at the end.
  in_lane_groups,
  // 8 input and 8 output channels per group, on a widened input (KernelSet::grouped_widening):
  // vectors 2q and 2q + 1 hold outputs 0-3 and 4-7 of groups 4q..4q+3, lane l of vector j the
  // output 4·(j % 2) + l / 4 of group 4q + l % 4, so that a K step's (x0, x1) and (x2, x3) pairs
  // of the 4 groups, side by side in the widened copy, are two 16-byte broadcasts for all lanes.
  four_groups_of_8,
  // Groups of a width that does not divide 64 (13-15 or 17-31 channels), side by side in
  // channel order: each vector's lanes are in at most two groups, the second (from a lane on) the
  // next vector's first, so a row's K step is a broadcast of each vector's first group's dword,
  // and a vector with a second group takes those lanes from the next one's broadcast (one blend).
  // Symmetric weights only (no window sums).
  two_groups,
};

// AMX (Intel's tile registers): blocks of 16 or 32 output pixels x 64 (or 32) output channels,
// from the same packed panels (16 steps of a panel's 16 lanes x 4 bytes are exactly a 16 x 64-byte
// B tile, at the stride of a step: 256 bytes, or 128 in a panel of 32 lanes; 8 steps with 32-byte
// chunks) and rows of an input whose channels are a multiple of 32.
struct AmxBlock {
  const std::uint8_t* input;
  std::int64_t first_row;   // byte offset of row 0's window origin
  std::int64_t row_stride;  // bytes between consecutive rows' origins
  const std::int64_t* tap_offsets;
  const std::int64_t* tap_steps;  // per tap: its first K step in a full (64-lane) panel
  std::int32_t taps;
  std::int32_t chunks;       // channels / chunk_bytes
  std::int32_t chunk_bytes;  // K bytes per tile load: 64, or 32 (then B tiles of 8 K steps)
  std::int32_t rows;         // 1 to 32
  const std::int8_t* weights;
  // Unlike a GemmTile's, the sums start at 0: the constant term −input_zero_point ·
  // zero_point_sums[c] goes to `terms` (when zero_point_sums is not null), for the output stage to
  // add (TileOutput::channel_terms). Loading it into the accumulator tiles took 4 of a 32-pixel
  // block's 15 or so tile loads and stores (8 % of a 3-channel first layer).
  const std::int32_t* zero_point_sums;
  std::int32_t input_zero_point;
  std::int32_t* acc;     // out: [rows][64]
  std::int32_t vectors;  // the panel's 16-lane vectors: 1 to 4
  std::int32_t* terms;   // out: [64], written when zero_point_sums is not null
};

// Depthwise (one input channel per output channel): `rows` pixels x up to 64 channels, the sum
// (x − zx)·(w − zw) over the listed taps in s32, exact (a padded tap is simply not listed).
struct DepthwiseTile {
  const std::uint8_t* input;
  std::int64_t first_row;           // byte offset of row 0's window origin, at the first channel
  std::int64_t row_stride;          // bytes between consecutive rows' origins
  const std::int64_t* tap_offsets;  // per tap: bytes from a window origin to its pixel
  std::int32_t taps;
  std::int32_t channels;  // 1 to 64
  std::int32_t rows;      // 1 to the kernel set's max_rows
  // w − zw as 16-bit pairs of consecutive listed taps (the last of an odd list paired with 0):
  // [pair][64 channels][2].
  const std::int16_t* weights;
  std::int32_t zero_point;  // zx
  std::int32_t* acc;        // out: [rows][64]
  // Σ(w − zw) over the listed taps per channel (null when zx is 0): a tile may multiply x rather
  // than x − zx and start its sums at −zx · these instead (the avx2 tile: one subtraction fewer
  // per pair of taps, row and vector).
  const std::int32_t* zero_point_sums = nullptr;
};

// im2col of one tile: output pixels (n, y, x .. x + rows) as rows of `row_bytes` bytes holding
// their windows in (r, s, c) order, padding filled with the input zero point, the rest of each row
// (up to a multiple of 4) with zeros. Nothing outside the input is read. `out` needs 64 bytes of
// slack after the last row (whole-vector stores).
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

// A first layer's input (a few channels) with its rows interleaved per pixel, so that an AMX
// block reads each output pixel's window of a kernel row group as one contiguous run
// (interleaved_rows.hpp): group g of image n holds padded input rows g·group_step + j for
// j < rows_per_group, and its position x, at out + ((n·groups + g)·positions + x)·rows·4 + j·4,
// the 4 bytes of padded input pixel (g·group_step + j, x): its channels, then `fill`. A pixel in
// the padding, or past the input, is 4 bytes of `fill` (the zero point). Groups
// [first_group, first_group + group_count) of the batch (n·groups + g) are written.
struct RowInterleave {
  const std::uint8_t* input;  // NHWC, `channels` bytes per pixel
  std::uint8_t* out;
  std::int64_t height, width, channels;  // channels: 1 to 4
  std::int64_t rows_per_group, group_step, groups, positions;
  std::int64_t top, left;  // input pixel (h, w) is padded pixel (h + top, w + left)
  std::int64_t first_group, group_count;
  bool flip_sign;  // each input byte xor 0x80 (s8 read as u8); fill is already the copy's value
  std::uint8_t fill;
};

// The output stage as the kernels read it (VectorConstants, as plain pointers: stage_view.hpp).
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
  // When not null (AMX blocks: AmxBlock::terms), added to every row's sums before the rest; a
  // kernel set with amx_block honours it in its epilogues and correct_tile.
  const std::int32_t* channel_terms = nullptr;  // of the panel's channels
  // fbgemm only: the narrowing to bytes saturates at the output's upper bound, and every value
  // before rounding stays below 2^31 (narrowing_saturates_high): an epilogue may skip that clamp.
  bool saturated_high = false;
};
// Writes a corrected tile through the output stage; null for a (scheme, output dtype) pair that has
// no vector form (the engine then applies the scalar stage).
using EpilogueKernel = void (*)(const TileOutput&, const StageView&);
// A depthwise tile whose exact sums go through the output stage from the registers, straight to
// the output (`out` says where; its acc and window_sums are unused): where the sums of a few taps
// are stored and read back by an epilogue, the epilogue took a quarter of a 3x3 layer's time.
using DepthwiseOutputKernel = void (*)(const DepthwiseTile&, const TileOutput& out,
                                       const StageView&);
// An in-lane grouped tile of a full panel (GroupedTile::lane_order) through the output stage from
// the registers, straight to the output (`out` says where; its acc is scratch the kernel may use):
// where the sums of a few taps are stored and read back by an epilogue.
using InLaneOutputKernel = void (*)(const GroupedTile&, const TileOutput& out, const StageView&);
// A GEMM tile through the output stage from the registers, straight to the output.
using GemmOutputKernel = void (*)(const GemmTile&, const TileOutput& out, const StageView&);
// The int32s KernelSet::in_lane_stage writes for `channels` output channels: each of StageView's
// seven arrays in whole panels.
inline std::int64_t in_lane_stage_ints(std::int64_t channels) {
  return 7 * ((channels + kPanelWidth - 1) / kPanelWidth * kPanelWidth);
}

// A run of consecutive output pixels of a 1x1, stride-1, unpadded layer (the planner's flat path)
// or of a first layer's gathered windows (im2col) or kernel rows (kernel_rows) times one panel:
// register tiles whose exact sums go through the output stage in registers, straight to the output,
// in one call for the whole run (a tile per call and its sums stored and read back by an epilogue
// cost more than the multiplies where K is small). Pixel p reads `channels` bytes at input + p ·
// pixel_bytes. The sums are exact once a weight zero point's zw'·Σx is taken off (window_sums): no
// AMX terms. A kernel set with input_widening 2 reads the planner's widened copy: `input` and
// `pixel_bytes` are then in that copy's bytes (two per value), and the values after a pixel's last
// channel are the next pixel's or the copy's zeros (they meet zero weights).
struct FlatRun {
  const std::uint8_t* input;  // pixel 0, at the panel's group's first input channel
  std::int64_t pixel_bytes;   // bytes from one pixel to the next
  std::int32_t pixels;
  std::int32_t channels;  // input values per pixel (K), the last step masked past them
  // The panel, [step][vectors · 16][4], in the kernel set's form (widen_weights, where it has one).
  const std::int8_t* weights;
  const std::int32_t* zero_point_sums;  // as GemmTile's: null, or the sums include −zx · these
  std::int32_t input_zero_point;
  std::int32_t output_channels;  // valid output channels of the panel (1 to 64)
  std::int64_t channel;          // the panel's first output channel
  void* output;                  // pixel 0, the panel's first channel
  std::int64_t output_stride;    // elements from one pixel to the next
  // A weight zero point: per pixel of the run the sum of its input bytes (null: none), and zw' per
  // lane of the panel; the sums then take zw'·Σx off (with uniform_weight_zero_point,
  // weight_zero_points[0] for every lane).
  const std::int32_t* window_sums;
  const std::int32_t* weight_zero_points;
  bool uniform_weight_zero_point;
  // fbgemm: the packs to bytes may stand for the stage's high clamp (narrowing_saturates_high).
  bool saturated_high;
  // A first layer's kernel rows read in place from a padded copy, no im2col (gemm_engine.cpp:
  // kernel-row runs): pixel p's input is kernel_rows runs of `channels` bytes, run r at
  // input + p · pixel_bytes + r · kernel_row_bytes, the weights' steps of run r after those of run
  // r − 1. 1 (and 0) elsewhere.
  std::int32_t kernel_rows;
  std::int64_t kernel_row_bytes;
};
// A flat run's kernel rows have at most this many K steps in all.
inline constexpr std::int32_t kMaxKernelRowSteps = 256;
using FlatRunKernel = void (*)(const FlatRun&, const StageView&);

// A block of up to 64 consecutive pixels of one image of a 1x1, stride-1, unpadded layer whose
// input and output are both NCHW, run with pixels in lanes: its input channels' rows (each
// contiguous) interleaved 4 at a time into `scratch`, then register tiles of output channels x 64
// pixels, each output channel's weights broadcast, through the output stage and stored as the
// output channels' rows. No transposes of either tensor.
struct NchwFlatRun {
  const std::uint8_t* input;    // channel 0 of the block's first pixel
  std::int64_t channel_stride;  // elements between input channels, and between output channels
  std::int32_t pixels;          // valid pixels of the block (1 to 64)
  std::int32_t channels;        // input channels (K)
  bool flip_input;              // an s8 input: each byte xor 0x80 (read as u8, x + 128)
  // (channels rounded up to 4) · 64 · KernelSet::input_widening bytes, 64-byte aligned
  std::uint8_t* scratch;
  const std::int8_t* weights;           // [out_channels][channels rounded up to 4] s8 (w − zw)
  std::int32_t out_channels;            // output channels to write, from `first_channel`
  std::int64_t first_channel;           // the first of them (the stage's and the sums' index)
  const std::int32_t* zero_point_sums;  // per output channel: Σ(w − zw), times −zx; or null
  std::int32_t input_zero_point;        // zx as the kernels read the input (u8)
  void* output;                         // the first output channel's row at the block's pixel
};
using NchwFlatKernel = void (*)(const NchwFlatRun&, const StageView&);

// The output rows of one channel of an NCHW depthwise layer (multiplier 1, dilation 1), run with
// pixels in lanes from the channel's input plane padded with the input zero point (every tap of
// every output pixel inside it, so the sums start at −zx·Σ(w − zw) over all taps): output pixel
// (y, x) reads kernel row r's taps at input + y · output_row_step + r · row_stride + x · stride_w.
struct NchwDepthwiseRows {
  const std::uint8_t* input;     // output pixel (0, 0)'s first tap (u8: an s8 input flipped)
  std::int64_t row_stride;       // bytes between kernel rows; 64 readable after each row's taps
  std::int64_t output_row_step;  // bytes from one output row's first tap to the next's
  std::int32_t kernel_h;
  std::int32_t pairs;           // kernel columns in pairs: ceil(kernel_w / 2)
  std::int32_t width, rows;     // output pixels per row, and rows
  const std::int32_t* weights;  // [kernel_h][pairs]: (w − zw) of columns 2q, 2q + 1 as s16
                                // pairs (low, high), 0 past the kernel's columns
  std::int32_t start;           // −zx·Σ(w − zw), the sums' start
  std::int64_t channel;         // the stage's channel
  void* output;                 // the output plane (rows of `width` pixels, one after another)
};
using NchwDepthwiseKernel = void (*)(const NchwDepthwiseRows&, const StageView&);

// One instruction set's kernels and register tile, as the planner calls them.
struct KernelSet {
  const char* name;  // e.g. "avx2_vnni", for describe()
  const char* tile;  // the register tile, e.g. "6x16 ymm", for describe()
  int max_rows;      // output pixels per register tile: 1 to kMaxTileRows
  // The input the GEMM kernels take: u8 (vpdpbusd: u8·s8) or s8 (sdot: s8·s8). Window sums and
  // the input zero point are then of that signedness.
  bool u8_input;
  GemmTileKernel (*gemm_tile)(int rows, int vectors);  // rows 1..max_rows, vectors 1..4
  void (*gather_windows)(const WindowGather&);
  void (*correct_tile)(const TileOutput&);  // the zero-point corrections alone
  EpilogueKernel (*epilogue)(SchemeKind scheme, DType output_dtype);
  // Optional (null when the ISA has none).
  // A kernel set whose GEMM tiles take the panels in a wider form of their own (the avx2 set: each
  // 32 bytes of 8 lanes x 4 s8 as 64 bytes of s16 pairs) gives `weight_widening` (its bytes per
  // packed byte) and both ways of the transform, chunk by chunk over the whole packed array; the
  // tiles then get that form and GemmTile::tap_steps count steps of the wider bytes. widen_weights
  // writes every byte of its output (the planner does not clear it first).
  int weight_widening = 1;  // 1 (the common form) or 2
  void (*widen_weights)(const std::int8_t* packed, std::int64_t bytes, std::int8_t* out) = nullptr;
  void (*narrow_weights)(const std::int8_t* widened, std::int64_t packed_bytes,
                         std::int8_t* out) = nullptr;
  // 2 when the GEMM tiles read the input zero-extended to u16 (the avx2 set): the planner hands
  // them a widened copy (64 zero bytes after it) and the same byte offsets, which they double.
  int input_widening = 1;  // 1 or 2
  // With input_widening 2: the widened copy that grouped tiles of `lanes` take (null: the plain
  // one). For four_groups and four_groups_of_8 each block of 4 groups' channels (whole pixels of
  // a multiple of them) goes K step by K step, each step the 4 groups' (x0, x1) pairs then their
  // (x2, x3) pairs: what a vector's two 128-bit broadcasts then feed to its lanes as they are.
  WidenBytes (*grouped_widening)(GroupedLanes lanes) = nullptr;
  void (*depthwise_tile)(const DepthwiseTile&);
  // Depthwise tiles through the output stage (DepthwiseOutputKernel); null for a (scheme, output
  // dtype) pair without a vector stage, or a kernel set without them (depthwise_tile and the
  // epilogue then run).
  DepthwiseOutputKernel (*depthwise_output_tile)(SchemeKind scheme, DType output_dtype) = nullptr;
  // The most rows (output pixels) a depthwise_output_tile takes, up to kMaxDepthwiseOutputRows
  // (0: max_rows). A tile's fixed costs, outside its passes of a few rows, then spread over a
  // run of pixels.
  int depthwise_output_rows = 0;
  bool (*amx_available)();  // asks the OS once for the tile state (Linux: arch_prctl)
  void (*amx_begin)();      // before a thread's first block of a run
  void (*amx_end)();        // after its last: releases the tiles
  void (*amx_block)(const AmxBlock&);
  // Grouped tiles for groups narrower than a panel (null: each group has panels of its own). It
  // returns null for a lane arrangement it has no tiles for (the planner then uses `gathered`,
  // which every grouped tile must take).
  GroupedTileKernel (*grouped_tile)(int rows, int vectors, bool window_sums, GroupedLanes lanes);
  // Its `gathered` tiles take groups of any width side by side, each lane reading its own dword
  // (GroupedTile::lane_dwords) within the panel's channels (GroupedTile::span); false: only
  // widths that divide 64.
  bool gathers_any_group_width = false;
  // The epilogue of an in-lane grouped tile's sums left in its lane order (GroupedTile::lane_order;
  // `width` = 4, 8 or 16 channels per group, a full panel, sums that need no correction): the
  // stage in lane order, its bytes put in channel order by one in-lane shuffle per row, where
  // putting the sums back in order took a third of the multiplies' time at 4 channels per group.
  // Null for a (scheme, output dtype) pair without a vector stage to bytes, or a kernel set
  // without it. It reads the stage's per-channel arrays in lane order, made by in_lane_stage
  // once per call into `storage` (in_lane_stage_ints(channels) int32s).
  EpilogueKernel (*in_lane_epilogue)(int width, SchemeKind scheme, DType output_dtype) = nullptr;
  void (*in_lane_stage)(int width, const StageView& in, std::int64_t channels,
                        std::int32_t* storage, StageView& out) = nullptr;
  // The same tiles through the stage from the registers (InLaneOutputKernel, the stage's arrays in
  // lane order as in_lane_epilogue reads them), any rows; null where in_lane_epilogue is, or a
  // kernel set without them.
  InLaneOutputKernel (*in_lane_output_tile)(int width, SchemeKind scheme,
                                            DType output_dtype) = nullptr;
  // Grouped tiles whose sums are in channel order (GroupedLanes::two_groups, one_group) through the
  // stage from the registers, straight to the output, any rows and panel (InLaneOutputKernel's
  // form: the stage's arrays as they are), for symmetric weights (no window sums); null for other
  // lanes, a (scheme, output dtype) pair without a vector stage to bytes, or a kernel set without
  // it.
  InLaneOutputKernel (*grouped_output_tile)(GroupedLanes lanes, SchemeKind scheme,
                                            DType output_dtype) = nullptr;
  // GEMM tiles whose sums need no correction (symmetric weights, no AMX terms) through the stage
  // from the registers (full panels of 5 or 6 rows; any other tile it stores for the epilogue);
  // null for a (scheme, output dtype) pair without a vector stage to bytes, or a kernel set
  // without it.
  GemmOutputKernel (*gemm_output_tile)(SchemeKind scheme, DType output_dtype) = nullptr;
  // The GEMM and grouped tiles take GemmTile::tap_row_offsets (false: the planner never passes
  // them).
  bool takes_tap_row_offsets = false;
  // Per pixel of an NHWC byte tensor, the sum of its first `channels` bytes (pixels `pixel_bytes`
  // apart) into out[pixel]. With it the planner adds up a weight zero point's window sums from
  // these, once per call, instead of each tile summing its windows' bytes again for every panel
  // (null: the GEMM tiles sum them, GemmTile::window_sums). A kernel set with amx_block has it:
  // AMX blocks never sum their windows.
  void (*sum_pixels)(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                     std::int64_t channels, std::int32_t* out) = nullptr;
  // gemm::pack_lane_block (panel_packing.hpp) in this ISA's vectors: the same bytes and sums
  // (null: the portable one packs).
  void (*pack_lane_block)(const std::uint8_t* const* rows, std::int64_t n, std::int64_t steps,
                          std::uint8_t flip, std::int8_t* out, std::int64_t step_stride,
                          const LaneSums& lane_sums) = nullptr;
  // Writes a RowInterleave. With it (and AMX blocks) first layers of up to 4 input channels run
  // on AMX straight from the interleaved rows instead of gathering each pixel's window.
  void (*interleave_rows)(const RowInterleave&) = nullptr;
  // Flat runs for panels of `vectors` (1 to 4) vectors; null for a (scheme, output dtype) pair
  // without a vector output stage (the planner then runs tiles and the epilogue).
  FlatRunKernel (*flat_run)(SchemeKind scheme, DType output_dtype, int vectors) = nullptr;
  // NCHW 1x1 layers with pixels in lanes (NchwFlatRun), to u8 or s8 through a vector stage; null
  // for other (scheme, output dtype) pairs, or a kernel set without them.
  NchwFlatKernel (*nchw_flat_run)(SchemeKind scheme, DType output_dtype) = nullptr;
  // NCHW depthwise rows with pixels in lanes (NchwDepthwiseRows) at stride_w 1 or 2, to u8 or s8
  // through a vector stage; null for other strides and pairs, or a kernel set without them.
  NchwDepthwiseKernel (*nchw_depthwise_row)(SchemeKind scheme, DType output_dtype,
                                            int stride_w) = nullptr;
};

}  // namespace qconv::detail::gemm
