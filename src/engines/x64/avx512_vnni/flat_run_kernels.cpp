// SPDX-License-Identifier: Apache-2.0
// Flat runs (gemm::FlatRun): a run of consecutive pixels of a 1x1 layer times one panel, tile
// after tile of vpdpbusd sums (register_tile.hpp) put through the output stage straight from the
// accumulator registers (stage_lanes.hpp, row_stores.hpp) and stored. With few input channels a
// tile's multiplies are short, and storing its sums for an epilogue to read back, and a call per
// tile, cost more than they do. Built with AVX-512 flags: see kernels.hpp.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/register_tile.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// How a panel's last vector is multiplied: whole; its first 8 lanes alone (a 256-bit vpdpbusd,
// register_tile::add_tap's kHalfLast); or, for rows in pairs, both rows' first 8 lanes in one
// vector (register_tile::add_tap_paired).
enum class LastVector { whole, half, paired };

// Pixels per tile for a panel of kVectors vectors: as many as leave room for the weights, a
// broadcast and the output stage's temporaries (20 accumulators of 32 zmm; with 24 the register
// allocator spilled accumulators inside the multiplies' loop), so that narrow panels do not pay a
// tile's fixed costs (the weight loads, the stage's constants) for 6 pixels. One vector: 16 rows,
// each broadcast feeding one vpdpbusd, so broadcast loads bound it anyway. The onnx and tvm stages
// keep more constants (64-bit lanes) and get 4 accumulators fewer. Paired last vectors leave room
// for more rows: 12 of two vectors (18 accumulators; 14 spilled outside the multiplies' loop and
// ran no faster), 8 of three (20).
template <SchemeKind K, int kVectors, LastVector kLast = LastVector::whole>
inline constexpr int kFlatRows = K == SchemeKind::onnx || K == SchemeKind::tvm
                                     ? (kVectors == 1   ? 16
                                        : kVectors == 2 ? 8
                                        : kVectors == 3 ? 5
                                                        : 4)
                                 : (kLast == LastVector::paired && kVectors <= 3)
                                     ? (kVectors == 2 ? 12 : 8)
                                     : (kVectors == 1   ? 16
                                        : kVectors == 2 ? 10
                                        : kVectors == 3 ? 6
                                                        : 5);

// Whether a panel of kVectors vectors may pair its rows' last vectors: an even row count.
template <SchemeKind K, int kVectors>
inline constexpr bool kPairable =
    kVectors >= 2 && kFlatRows<K, kVectors, LastVector::paired> % 2 == 0;

// acc −= zw'·Σx for rows [first, first + rows) of the run (the rows past them repeat its last).
// kLast paired: the last vector of each even row i holds rows i and i + 1 (lanes 0-7, 8-15).
template <int kRows, int kVectors, LastVector kLast>
[[gnu::always_inline]] inline void take_window_sums(__m512i (&acc)[kRows][kVectors],
                                                    const FlatRun& run, std::int32_t first,
                                                    std::int32_t rows) {
  constexpr int kOwn = kLast == LastVector::paired ? kVectors - 1 : kVectors;  // per row
  constexpr __mmask16 kUpper = 0xff00;  // a paired vector's second row
  const auto sum_of = [&](int i) { return run.window_sums[first + (i < rows ? i : rows - 1)]; };
  if (run.uniform_weight_zero_point) {  // one product per row
    const auto zw = static_cast<std::uint32_t>(run.weight_zero_points[0]);
    const auto term = [&](int i) {
      return _mm512_set1_epi32(static_cast<int>(zw * static_cast<std::uint32_t>(sum_of(i))));
    };
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m512i t = term(i);
#pragma GCC unroll 4
      for (int j = 0; j < kOwn; ++j) acc[i][j] = _mm512_sub_epi32(acc[i][j], t);
      if constexpr (kLast == LastVector::paired) {
        if (i % 2 == 0) {
          acc[i][kVectors - 1] = _mm512_sub_epi32(acc[i][kVectors - 1],
                                                  _mm512_mask_blend_epi32(kUpper, t, term(i + 1)));
        }
      }
    }
    return;
  }
#pragma GCC unroll 4
  for (int j = 0; j < kOwn; ++j) {
    const __m512i zw = _mm512_loadu_si512(run.weight_zero_points + 16 * j);
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      const __m512i sum = _mm512_set1_epi32(sum_of(i));
      acc[i][j] = _mm512_sub_epi32(acc[i][j], _mm512_mullo_epi32(zw, sum));
    }
  }
  if constexpr (kLast == LastVector::paired) {
    const __m512i zw = first_8_lanes_twice(run.weight_zero_points + 16 * (kVectors - 1));
#pragma GCC unroll 16
    for (int i = 0; i < kRows; i += 2) {
      const __m512i sums = _mm512_mask_blend_epi32(kUpper, _mm512_set1_epi32(sum_of(i)),
                                                   _mm512_set1_epi32(sum_of(i + 1)));
      acc[i][kVectors - 1] = _mm512_sub_epi32(acc[i][kVectors - 1], _mm512_mullo_epi32(zw, sums));
    }
  }
}

// kSaturatedLow, kSaturatedHigh: the stores' narrowing saturates at the output's lower (upper)
// bound, so the stage skips that clamp (row_stores::saturated_low, FlatRun::saturated_high).
// kLast: how the last vector is multiplied (LastVector): half and paired where the panel's
// channels end in the first 8 lanes of its last vector.
// kKernelRows: a first layer's kernel rows (FlatRun::kernel_rows), their K steps read at offsets
// listed once per call; an instantiation of its own, so that the 1x1 layers' loop keeps its
// registers (in one function with the other, its accumulators went to the stack).
template <SchemeKind K, DType D, int kVectors, bool kSaturatedLow, bool kSaturatedHigh,
          LastVector kLast, bool kKernelRows>
void flat_run(const FlatRun& run, const StageView& s) {
  constexpr bool kHalfLast = kLast == LastVector::half;
  constexpr bool kPaired = kLast == LastVector::paired;
  // The walk in locals. The stage and the input zero point are read from memory once per tile,
  // after its multiplies: the output stores may alias them, so the compiler cannot hoist their
  // broadcasts out of the pixel loop, where they would hold registers through the multiplies and
  // push accumulators to the stack; and from a local copy per tile, not once per row.
  const std::uint8_t* const input = run.input;
  const std::int64_t pixel_bytes = run.pixel_bytes;
  const std::int32_t pixels = run.pixels;
  const std::int32_t channels = run.channels;
  const std::int8_t* const weights = run.weights;
  const std::int32_t* const zero_point_sums = run.zero_point_sums;
  const std::int32_t output_channels = run.output_channels;
  const std::int64_t channel = run.channel;
  void* const output = run.output;
  const std::int64_t output_stride = run.output_stride;
  // A first layer's kernel rows: each K step's input offset from its pixel's first byte, steps
  // whole (channels a multiple of 4).
  const std::int32_t kernel_steps = kKernelRows ? run.kernel_rows * (channels / 4) : 0;
  std::int64_t step_offsets[kKernelRows ? gemm::kMaxKernelRowSteps : 1];
  for (std::int32_t r = 0, k = 0; k < kernel_steps; ++r) {
    for (std::int32_t q = 0; q < channels / 4; ++q) {
      step_offsets[k++] = r * run.kernel_row_bytes + 4 * q;
    }
  }
  constexpr int kRows = kFlatRows<K, kVectors, kLast>;
  // The sums' start, −zx·zero_point_sums (or 0) per vector, made once per call, not per tile
  // (kVectors vpmulld on the pipes vpdpbusd takes); kPaired: one more, the last vector's first 8
  // lanes in both halves.
  constexpr int kStartTerms = kPaired ? kVectors + 1 : kVectors;
  alignas(64) std::int32_t start_terms[16 * kStartTerms];
  for (int j = 0; j < kStartTerms; ++j) {
    __m512i term = _mm512_setzero_si512();
    if (zero_point_sums != nullptr) {
      const __m512i sums = j < kVectors
                               ? _mm512_loadu_si512(zero_point_sums + 16 * j)
                               : first_8_lanes_twice(zero_point_sums + 16 * (kVectors - 1));
      term = _mm512_mullo_epi32(_mm512_set1_epi32(-run.input_zero_point), sums);
    }
    _mm512_store_si512(start_terms + 16 * j, term);
  }
  static_assert(!kPaired || kPairable<K, kVectors>);
  constexpr int kLastVector = kVectors - 1;
  constexpr bool kOnWords = row_stores::kZeroPointOnWords<K, D, kVectors>;
  for (std::int32_t first = 0; first < pixels; first += kRows) {
    // A last tile short of kRows pixels reads its last pixel again in the rows past it (nothing
    // past the run is read) and stores only its own.
    const std::int32_t rows = pixels - first < kRows ? pixels - first : kRows;
    const std::uint8_t* row[kRows];
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      row[i] = input + (first + (i < rows ? i : rows - 1)) * pixel_bytes;
    }
    // The sums start at the zero point's term, read anew per tile through a pointer the compiler
    // cannot see is the same each time: it would hoist the term out of the pixel loop and keep
    // kVectors registers for it through the multiplies, spilling accumulators. (Added after the
    // multiplies instead, one vpaddd per accumulator, it cost 4-10 % of MobileNetV2's expansions,
    // K = 16 to 64.)
    __m512i acc[kRows][kVectors];
    const std::int32_t* tile_start = start_terms;
    asm("" : "+r"(tile_start));
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
#pragma GCC unroll 4
      for (int j = 0; j < kVectors; ++j) {
        acc[i][j] =
            _mm512_load_si512(tile_start + 16 * (kPaired && j == kLastVector ? kVectors : j));
      }
    }
    if constexpr (kPaired) {
      register_tile::add_tap_paired<kRows, kVectors>(acc, row, weights, channels);
    } else if constexpr (!kKernelRows) {
      register_tile::add_tap<kRows, kVectors, kHalfLast>(acc, row, weights, channels);
    } else {
      register_tile::add_steps_at<kRows, kVectors, kHalfLast>(acc, row, weights, step_offsets,
                                                              kernel_steps);
    }
    if (run.window_sums != nullptr) take_window_sums<kRows, kVectors, kLast>(acc, run, first, rows);
    // Nor may the compiler move the stage's loads up above the multiplies (no store between).
    asm volatile("" ::: "memory");
    const StageView stage = s;
    const __m512i zero_point_words = _mm512_set1_epi16(static_cast<std::int16_t>(stage.zero_point));
    std::int64_t out_at = first * output_stride;  // row i's first element, a step per row
    if constexpr (kVectors == 1 && D != DType::s32 && kRows % 4 == 0) {  // 4 rows a store
      const stage_lanes::Lanes at = stage_lanes::Lanes::load<K>(stage, channel);
#pragma GCC unroll 4
      for (int i = 0; i < kRows; i += 4) {
        if (i >= rows) break;
        __m512i r[4];
#pragma GCC unroll 4
        for (int q = 0; q < 4; ++q) {  // rows past the tile's repeat its last pixel's sums
          r[q] =
              stage_lanes::apply<K>(acc[i + q][0], at, stage, kSaturatedLow, true, kSaturatedHigh);
        }
        row_stores::store_four_rows<D>(output, out_at, output_stride, output_channels,
                                       rows - i < 4 ? rows - i : 4, r);
        out_at += 4 * output_stride;
      }
      continue;
    }
    __m512i paired;  // kPaired: the last vector of rows i and i + 1 (i even), staged
#pragma GCC unroll 16
    for (int i = 0; i < kRows; ++i) {
      if (i >= rows) break;
      __m512i r[4];
#pragma GCC unroll 4
      for (int j = 0; j < (kPaired ? kLastVector : kVectors); ++j) {
        // The per-channel constants per row, as memory operands: kept in registers through the
        // tile they too would push accumulators to the stack (tvm reads 5 arrays).
        const stage_lanes::Lanes at = stage_lanes::Lanes::load<K>(stage, channel + 16 * j);
        r[j] =
            stage_lanes::apply<K>(acc[i][j], at, stage, kSaturatedLow, !kOnWords, kSaturatedHigh);
      }
      if constexpr (kPaired) {  // one output stage for both rows' last 8 channels
        if (i % 2 == 0) {
          const stage_lanes::Lanes at =
              stage_lanes::Lanes::load_twice<K>(stage, channel + 16 * kLastVector);
          paired = stage_lanes::apply<K>(acc[i][kLastVector], at, stage, kSaturatedLow, !kOnWords,
                                         kSaturatedHigh);
          r[kLastVector] = paired;
        } else {  // lanes 8-15 down to 0-7
          r[kLastVector] = _mm512_shuffle_i64x2(paired, paired, 0xee);
        }
      }
      row_stores::store_row<K, D, kVectors>(output, out_at, output_channels, r, zero_point_words);
      out_at += output_stride;
    }
  }
}

template <SchemeKind K, DType D, int kVectors, LastVector kLast, bool kKernelRows = false>
void flat_run_by_range(const FlatRun& f, const StageView& s) {
  row_stores::by_saturation<K, D>(s, f.saturated_high, [&]<bool kLow, bool kHigh>() {
    flat_run<K, D, kVectors, kLow, kHigh, kLast, kKernelRows>(f, s);
  });
}

// A panel whose channels end in the first 8 lanes of its last vector (24 channels: 16 + 8) pairs
// its rows' last vectors where its tile's rows are even, else takes the half-vector multiplies
// there. Half vectors made MobileNetV2's 24-channel projections 20-22 % faster on an AMD Zen 4,
// whose 512-bit units take a 256-bit vpdpbusd at half the cost; on an AMD Zen 5, whose do not,
// the pairs took 21 % less time than the half vectors on those layers (b3.project 36.4 -> 28.6
// us) and 36 % less on a 40-channel one (128 -> 40 at 28x28). (On a Zen 4 the pairs should cost
// what the half vectors do, in multiplies, plus a blend per two rows: not measured.)
template <SchemeKind K, DType D, int kVectors>
void flat_run_by_width(const FlatRun& f, const StageView& s) {
  // A first layer's kernel rows: all of the last vector (first layers seldom end in half of one).
  if (f.kernel_rows > 1) return flat_run_by_range<K, D, kVectors, LastVector::whole, true>(f, s);
  if constexpr (kEveryKernelVariant) {
    if (f.output_channels <= 16 * (kVectors - 1) + 8) {
      if constexpr (kPairable<K, kVectors>) {
        return flat_run_by_range<K, D, kVectors, LastVector::paired>(f, s);
      } else {
        return flat_run_by_range<K, D, kVectors, LastVector::half>(f, s);
      }
    }
  }
  flat_run_by_range<K, D, kVectors, LastVector::whole>(f, s);
}

}  // namespace

FlatRunKernel flat_run_kernel(SchemeKind scheme, DType output_dtype, int vectors) {
  return stage_lanes::for_vector_stage<FlatRunKernel>(
      scheme, output_dtype, [vectors]<SchemeKind K, DType D>() -> FlatRunKernel {
        switch (vectors) {
          case 1: return &flat_run_by_width<K, D, 1>;
          case 2: return &flat_run_by_width<K, D, 2>;
          case 3: return &flat_run_by_width<K, D, 3>;
          default: return &flat_run_by_width<K, D, 4>;
        }
      });
}

}  // namespace qconv::detail::avx512_vnni
