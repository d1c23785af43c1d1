// SPDX-License-Identifier: Apache-2.0
// The avx2 micro-kernels (AVX2 alone: exact, no vpmaddubsw where it could saturate), behind the
// plain-C interface of gemm/kernel_set.hpp. The gather and the 8-lane output stage serve the
// avx2_vnni kernel set too.
#pragma once

#include "engines/gemm/kernel_set.hpp"

namespace qconv::detail::avx2 {

// Output pixels per register tile: 4 rows x 2 vectors = 8 accumulators of 16, plus the widened
// weights and inputs.
inline constexpr int kMaxRows = 4;

gemm::GemmTileKernel gemm_tile_kernel(int rows, int vectors);
// The tiles' form of the packed panels (KernelSet::widen_weights) and back.
void widen_weights(const std::int8_t* packed, std::int64_t bytes, std::int8_t* out);
void narrow_weights(const std::int8_t* widened, std::int64_t packed_bytes, std::int8_t* out);
void gather_windows(const gemm::WindowGather& g);
void depthwise_tile(const gemm::DepthwiseTile& t);
// Depthwise tiles through the output stage; null where epilogue_kernel is.
gemm::DepthwiseOutputKernel depthwise_output_tile(SchemeKind scheme, DType output_dtype);
// Grouped tiles, lanes `gathered`, `four_groups` and `four_groups_of_8` (on the input widened
// by grouped_widening), up to kMaxRows rows (grouped_tile.cpp).
gemm::GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums,
                                            gemm::GroupedLanes lanes);
gemm::WidenBytes grouped_widening(gemm::GroupedLanes lanes);
void correct_tile(const gemm::TileOutput& tile);
gemm::EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype);
// Per pixel, the sum of its first `channels` bytes (KernelSet::sum_pixels).
void sum_pixels(const std::uint8_t* in, std::int64_t pixels, std::int64_t pixel_bytes,
                std::int64_t channels, std::int32_t* out);
// Flat runs on the widened input and weights (flat_run_kernels.cpp); null where epilogue_kernel
// is.
gemm::FlatRunKernel flat_run_kernel(SchemeKind scheme, DType output_dtype, int vectors);
// NCHW 1x1 layers with pixels in lanes (nchw_flat_kernels.cpp); null for s32 outputs and where
// epilogue_kernel is.
gemm::NchwFlatKernel nchw_flat_run_kernel(SchemeKind scheme, DType output_dtype);
// NCHW depthwise rows with pixels in lanes (nchw_depthwise_kernels.cpp); null for s32 outputs,
// strides other than 1 and 2, and where epilogue_kernel is.
gemm::NchwDepthwiseKernel nchw_depthwise_row_kernel(SchemeKind scheme, DType output_dtype,
                                                    int stride_w);

// The kernel set (kernel_set.cpp, baseline ISA).
const gemm::KernelSet& kernel_set();

}  // namespace qconv::detail::avx2
