// SPDX-License-Identifier: Apache-2.0
// The ARM64 micro-kernels, behind the GEMM planner's plain-C interface
// (engines/gemm/kernel_set.hpp). Two engines share them:
//
//   neon_dot  ARMv8.2 dot product (sdot), built with -march=armv8.2-a+dotprod (neon_dot/);
//   neon      plain ARMv8.0 Advanced SIMD, for CPUs without it (neon/).
//
// The register tile (neon_dot/gemm_kernels.cpp), as XNNPACK's 4x16c4 neondot kernels: up to 4
// output pixels (rows) x 16 output channels, "c4" = 4 consecutive K bytes per lane, so one
// `sdot v.4s, w.16b, x.4b[i]` adds 4 products into each of 4 channels. The planner's panels hold
// up to 64 channels as [tap][step][64 lanes][4 bytes]; the tile walks them as four 16-channel
// sub-panels, whose part of a step is 64 contiguous bytes: 4 q registers of weights. Per sub-panel:
// 16 accumulators (4 rows x 4 q), 4 weight registers, 4 input registers of 16 bytes (4 K steps
// each, taken lane by lane by the indexed sdot) — 24 of the 32 vector registers.
//
// The arithmetic. sdot multiplies s8 by s8 (and udot u8 by u8; a mixed u8·s8 needs I8MM's usdot),
// and the packed weights are s8 w' (u8 weights stored as w − 128). So these kernels take an s8
// input: the planner gives them a u8 input as x' = x − 128 (its sign bit flipped, xor 0x80), and
// the zero point as zx' = zx − 128 with it — the mirror image of the x86 engines, which move an s8
// input to u8. (x − zx) = (x' − zx') term by term, so the exact sum and its decomposition
//     Σ (x' − zx')(w' − zw') = P − zw'·Σx' − zx'·Σ(w' − zw'),    P = Σ x'·w'
// are the planner's, unchanged: Σ(w' − zw') per padding pattern is precomputed and starts the
// accumulators (times −zx'), and Σx' (the window sums, s8) is needed only for a non-zero zw'.
//
// Built per ISA: these declarations use no standard-library templates (see kernel_set.hpp).
#pragma once

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::arm64 {

// Output pixels per register tile (4x16c4).
inline constexpr int kMaxRows = 4;

namespace neon_dot {
// sdot tiles: rows 1..kMaxRows, vectors (16-channel sub-panels) 1..4. Needs the dot product.
gemm::GemmTileKernel gemm_tile_kernel(int rows, int vectors);
// Grouped tiles (groups side by side in a panel): gathered by tbl, or one group per 16 lanes.
gemm::GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums,
                                            gemm::GroupedLanes lanes);
}  // namespace neon_dot

namespace neon {
// Plain NEON tiles on the same panels: smull (s8 x s8 -> s16) and sadalp (pairwise add into s32).
gemm::GemmTileKernel gemm_tile_kernel(int rows, int vectors);
gemm::GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums,
                                            gemm::GroupedLanes lanes);

// Shared by both engines (ARMv8.0 NEON, which every aarch64 CPU has):
void depthwise_tile(const gemm::DepthwiseTile& t);  // channels in lanes, widened s16 multiplies
void gather_windows(const gemm::WindowGather& g);   // im2col of one tile
void correct_tile(const gemm::TileOutput& t);       // the window-sum corrections alone
// t.window_sums[i] = Σ of the s8 input bytes row i of the tile reads (rows 0..rows − 1).
void window_sums(const gemm::GemmTile& t, int rows);
// A grouped tile's sub-panel j run as the GEMM sub-panel `t` (groups of 16 or 32 channels): its
// lanes' zw'·Σx off t.acc, Σx being the window sums of t.
void subtract_group_window_sums(const gemm::GroupedTile& g, const gemm::GemmTile& t, int j,
                                int rows);
// The output stage in 4-lane NEON: every scheme of SPEC §4, bit for bit as OutputStage::apply.
gemm::EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype);
}  // namespace neon

}  // namespace qconv::detail::arm64
