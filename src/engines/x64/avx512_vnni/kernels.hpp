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
using gemm::DepthwiseTile;
using gemm::EpilogueKernel;
using gemm::GemmTile;
using gemm::GemmTileKernel;
using gemm::GroupedTile;
using gemm::GroupedTileKernel;
using gemm::kPanelWidth;
using gemm::StageView;
using gemm::TileOutput;
using gemm::WindowGather;

// Where rows first .. first + kRows − 1 of a tile read tap `tap` (GemmTile::tap_rows, or the
// tile's origin, tap offset and row offsets).
template <int kRows>
inline void tap_rows(const GemmTile& t, std::int32_t tap, int first,
                     const std::uint8_t* (&row)[kRows]) {
  if (t.tap_rows != nullptr) {
    const std::uint8_t* const* listed = t.tap_rows + tap * t.tap_rows_stride + first;
#pragma GCC unroll 8
    for (int i = 0; i < kRows; ++i) row[i] = listed[i];
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

// Grouped tiles, several groups per panel (grouped_kernels.cpp): rows 1..6, vectors 1..4.
GroupedTileKernel grouped_tile_kernel(int rows, int vectors, bool window_sums,
                                      gemm::GroupedLanes lanes);

// AMX blocks (amx_kernels.cpp): only on a CPU with AMX-INT8 whose operating system grants this
// process the tile state (amx_available).
bool amx_available();  // asks the OS once for the tile state (Linux: arch_prctl)
void amx_begin();      // before a thread's first block of a run
void amx_end();        // after its last: releases the tiles
void amx_block(const AmxBlock& b);

// Depthwise tiles (depthwise_kernels.cpp).
void depthwise_tile(const DepthwiseTile& t);

// im2col with masked loads (gemm_kernels.cpp).
void gather_windows(const WindowGather& g);

// The output stage in 16 lanes (epilogue_kernels.cpp).
void correct_tile(const TileOutput& tile);
EpilogueKernel epilogue_kernel(SchemeKind scheme, DType output_dtype);

}  // namespace qconv::detail::avx512_vnni
