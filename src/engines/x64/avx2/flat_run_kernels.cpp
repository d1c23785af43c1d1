// SPDX-License-Identifier: Apache-2.0
// Flat runs (gemm::FlatRun) for the avx2 kernel set: a run of consecutive pixels of a 1x1 layer
// (or gathered windows, or a transposed layer's one-tap phase) times one panel, 4 pixels x 16
// channels at a time summed in registers as the GEMM tile sums them (widened_dot.hpp), then put
// through the output stage (stage_lanes.hpp) from the registers straight to the output. With few
// input channels the multiplies are short, and storing a tile's sums for the epilogue to read back,
// and a call per tile, cost a third of the layer (MobileNetV2's 1x1 layers of 16 to 32 input
// channels at 112x112). A sub-panel whose channels end in its first 8 lanes multiplies those alone:
// a 24-channel layer's panel is 16 + 8 lanes, not 32. Built with AVX2 flags: see kernel_set.hpp.
#include <immintrin.h>

#include "engines/x64/avx2/kernels.hpp"
#include "engines/x64/avx2/stage_lanes.hpp"
#include "engines/x64/avx2/widened_dot.hpp"

namespace qconv::detail::avx2 {
namespace {

using Dot = Widened;
using gemm::FlatRun;

// Pixels per tile: the GEMM tile's 4 rows x 2 vectors of 8 lanes, its weights and inputs.
constexpr int kRows = kMaxRows;

// The sums of the first kActive rows of a tile (`row`: their input) times sub-panel j's kHalves
// vectors of 8 lanes, into acc. A run's last tile of fewer than kRows pixels multiplies its own
// alone (a 7x7 layer's 49 pixels are 12 tiles of 4 and one of 1).
template <int kVectors, int kHalves, int kActive>
[[gnu::always_inline]] inline void multiply(__m256i (&acc)[kActive][kHalves], const FlatRun& run,
                                            const std::uint8_t* const (&row)[kRows], int j) {
  constexpr int kHalf = 32 * Dot::kWidening;  // 8 lanes of a step
  constexpr std::int64_t kStepBytes = std::int64_t{kVectors} * 64 * Dot::kWidening;
#pragma GCC unroll 2
  for (int h = 0; h < kHalves; ++h) {
    const __m256i start =
        x64_ymm::constant_term(run.zero_point_sums, run.input_zero_point, 16 * j + 8 * h);
#pragma GCC unroll 4
    for (int i = 0; i < kActive; ++i) acc[i][h] = start;
  }
  // Every step whole: the values past the last channel (the next pixel's, or the widened copy's
  // zeros after it) meet zero weights. A first layer's kernel rows (FlatRun::kernel_rows) one
  // after the other, their weights' steps in the same order.
  const std::int32_t steps = (run.channels + 3) / 4;
  const std::int8_t* w = run.weights + j * 2 * kHalf;
  for (std::int32_t r = 0; r < run.kernel_rows; ++r) {
    const std::int64_t offset = r * run.kernel_row_bytes;
    for (std::int32_t k = 0; k < steps; ++k) {
      typename Dot::Weights weights[kHalves];
#pragma GCC unroll 2
      for (int h = 0; h < kHalves; ++h) weights[h] = Dot::weights(w + h * kHalf);
#pragma GCC unroll 4
      for (int i = 0; i < kActive; ++i) {
        const typename Dot::Input x = Dot::input(row[i] + offset + 4 * Dot::kInputWidening * k);
#pragma GCC unroll 2
        for (int h = 0; h < kHalves; ++h) acc[i][h] = Dot::add(acc[i][h], x, weights[h]);
      }
      w += kStepBytes;
    }
  }
}

// The kActive pixels of the tile from the run's pixel `first` (`row`: their input) times
// sub-panel j: kHalves vectors of 8 lanes, the sums through the stage and stored. (A compile-time
// row count throughout: with one tile body for every count the accumulators met from four
// versions of the loop, and the register allocator copied and spilled them in it.)
template <SchemeKind K, DType D, int kVectors, int kHalves, int kActive>
[[gnu::always_inline]] inline void sub_panel(const FlatRun& run, const StageView& view,
                                             const Stage& stage,
                                             const std::uint8_t* const (&row)[kRows],
                                             std::int32_t first, int j) {
  __m256i acc[kActive][kHalves];
  multiply<kVectors, kHalves, kActive>(acc, run, row, j);
  if (run.window_sums != nullptr) {  // acc − zw'·Σx, the exact sum (gemm_engine.cpp)
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) {
      const __m256i zw = run.uniform_weight_zero_point
                             ? _mm256_set1_epi32(run.weight_zero_points[0])
                             : _mm256_loadu_si256(reinterpret_cast<const __m256i*>(
                                   run.weight_zero_points + 16 * j + 8 * h));
#pragma GCC unroll 4
      for (int i = 0; i < kActive; ++i) {
        const __m256i sum = _mm256_set1_epi32(run.window_sums[first + i]);
        acc[i][h] = _mm256_sub_epi32(acc[i][h], _mm256_mullo_epi32(zw, sum));
      }
    }
  }
  Lanes at[kHalves];
#pragma GCC unroll 2
  for (int h = 0; h < kHalves; ++h) at[h] = Lanes::load<K>(view, run.channel + 16 * j + 8 * h);
  const std::int32_t channels = run.output_channels - 16 * j;
  auto* out = static_cast<std::byte*>(run.output) +
              (first * run.output_stride + 16 * j) * element_bytes<D>();
#pragma GCC unroll 4
  for (int i = 0; i < kActive; ++i) {
    __m256i r[kHalves];
#pragma GCC unroll 2
    for (int h = 0; h < kHalves; ++h) r[h] = apply<K>(acc[i][h], at[h], stage);
    store_row<D, kHalves>(out, r, channels < 16 ? channels : 16);
    out += run.output_stride * element_bytes<D>();
  }
}

// A tile of kActive pixels times each sub-panel in turn.
template <SchemeKind K, DType D, int kVectors, int kActive>
void panels(const FlatRun& run, const StageView& view, const Stage& stage,
            const std::uint8_t* const (&row)[kRows], std::int32_t first) {
#pragma GCC unroll 4
  for (int j = 0; j < kVectors; ++j) {
    if (run.output_channels - 16 * j > 8) {
      sub_panel<K, D, kVectors, 2, kActive>(run, view, stage, row, first, j);
    } else {
      sub_panel<K, D, kVectors, 1, kActive>(run, view, stage, row, first, j);
    }
  }
}

template <SchemeKind K, DType D, int kVectors>
void flat_run(const FlatRun& given_run, const StageView& given_view) {
  // Local copies: the byte stores may alias the caller's structs.
  const FlatRun run = given_run;
  const StageView view = given_view;
  const Stage stage = Stage::make(view, saturated_low<D>(view));
  for (std::int32_t first = 0; first < run.pixels; first += kRows) {
    const std::int32_t rows = run.pixels - first < kRows ? run.pixels - first : kRows;
    const std::uint8_t* row[kRows];
#pragma GCC unroll 4
    for (int i = 0; i < kRows; ++i) {
      row[i] = run.input + (first + (i < rows ? i : rows - 1)) * run.pixel_bytes;
    }
    switch (rows) {
      case 1: panels<K, D, kVectors, 1>(run, view, stage, row, first); break;
      case 2: panels<K, D, kVectors, 2>(run, view, stage, row, first); break;
      case 3: panels<K, D, kVectors, 3>(run, view, stage, row, first); break;
      default: panels<K, D, kVectors, 4>(run, view, stage, row, first); break;
    }
  }
}

}  // namespace

gemm::FlatRunKernel flat_run_kernel(SchemeKind scheme, DType output_dtype, int vectors) {
  return for_vector_stage<gemm::FlatRunKernel>(
      scheme, output_dtype, [vectors]<SchemeKind K, DType D>() -> gemm::FlatRunKernel {
        switch (vectors) {
          case 1: return &flat_run<K, D, 1>;
          case 2: return &flat_run<K, D, 2>;
          case 3: return &flat_run<K, D, 3>;
          default: return &flat_run<K, D, 4>;
        }
      });
}

}  // namespace qconv::detail::avx2
