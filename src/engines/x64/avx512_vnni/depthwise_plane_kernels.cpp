// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels on NCHW planes, pixels in lanes (DepthwisePlanes in kernels.hpp): a slot of up
// to 16 output pixels of one channel sums, per entry, x·d over 4 taps a lane with one vpdpbusd,
// its bytes put in place by one vpermt2b from a single 64-byte load of the plane. In rows mode
// (stride 1, 3 kernel rows) a strip of 16 output columns walks down the plane instead, and each
// input row's permuted bytes serve the 3 output rows that read them. The channels-in-
// lanes kernels need the planes transposed to NHWC and back, which cost about as much as the
// convolution itself on MobileNet's layers; at stride 2 this is 1.1-1.6x faster than that on one
// thread (depthwise_planes.cpp says where it runs).
//
// Built with AVX-512 VBMI flags (vpermt2b): called only on a CPU that has them. See kernels.hpp
// for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// What kPlanes output channels from o need through a group: each one's input plane, weights
// (`entries` dwords of `parts` parts), the start of its sums (−zx·Σd modulo 2^32, as the
// reference wraps) and its output-stage constants. Into the caller's arrays: held in a struct
// they went to the stack (fbgemm's slot loop read 91 zmm from it, 5 so).
template <SchemeKind K, int kPlanes>
[[gnu::always_inline]] inline void load_group(const DepthwisePlanes& p, const StageView& stage,
                                              std::int64_t o, int entries, int parts,
                                              const std::uint8_t* (&in)[kPlanes],
                                              const std::int32_t* (&w)[kPlanes],
                                              __m512i (&start)[kPlanes],
                                              stage_lanes::Lanes (&at)[kPlanes]) {
#pragma GCC unroll 8
  for (int j = 0; j < kPlanes; ++j) {
    in[j] = p.input + (o + j) / p.multiplier * p.in_plane;
    w[j] = p.weights + (o + j) * entries * parts;
    const auto start_value = static_cast<std::uint32_t>(-p.zero_point) *
                             static_cast<std::uint32_t>(p.weight_sums[o + j]);
    start[j] = _mm512_set1_epi32(static_cast<std::int32_t>(start_value));
    at[j] = stage_lanes::Lanes::load<K, true>(stage, o + j);
  }
}

// kPlanes output channels' planes at once, from channel o: each slot's entries (bases, masks,
// index vectors) are read once for all of them. kEntries, kParts > 0: that schedule fixed; 0: read
// from p (kPlanes 1). Each weight dword is broadcast from memory where a vpdpbusd needs it: four
// planes' weights held in registers spilled them in the slot loop, no faster. kWords: s32 output
// (the int32 scheme), else u8 or s8 bytes. kMasked: loads masked to the plane (its last 64 bytes;
// else they may run on).
template <SchemeKind K, bool kWords, bool kFlip, int kEntries, int kParts, int kPlanes,
          bool kMasked>
[[gnu::always_inline]] inline void run_group(const DepthwisePlanes& p, std::int64_t o) {
  constexpr bool kFixed = kEntries > 0 && kParts > 0;
  static_assert(kFixed || kPlanes == 1);
  const int entries = kFixed ? kEntries : p.entries;
  const int parts = kFixed ? kParts : p.parts;
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(p.zero_point));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const StageView stage = *p.stage;  // a copy, as `p`: else its bounds are read after each store
  const std::uint8_t* in[kPlanes];
  const std::int32_t* w[kPlanes];
  __m512i start[kPlanes];
  stage_lanes::Lanes at[kPlanes];
  load_group<K, kPlanes>(p, stage, o, entries, parts, in, w, start, at);
  // Slot s's sums, then slot s − 1's output stage: the stage's long chain of dependent
  // instructions finds its inputs ready, rather than filling the scheduler while the sums run
  // (MobileNetV2's 96@112 stride-2 layer: 64.5 -> 55.3 us on an AMD Zen 5).
  const auto sums = [&](std::int32_t s, __m512i(&acc)[kPlanes]) {
    const DepthwisePlaneEntry* e = p.entry + s * entries;
#pragma GCC unroll 8
    for (int j = 0; j < kPlanes; ++j) acc[j] = start[j];
#pragma GCC unroll 4
    for (int t = 0; t < entries; ++t) {
      const __m512i pattern = _mm512_load_si512(p.patterns + e[t].pattern);
      const std::int64_t base = e[t].base;
#pragma GCC unroll 8
      for (int j = 0; j < kPlanes; ++j) {
        __m512i bytes = kMasked ? _mm512_maskz_loadu_epi8(e[t].mask, in[j] + base)
                                : _mm512_loadu_si512(in[j] + base);
        if constexpr (kFlip) bytes = _mm512_xor_si512(bytes, flip);
        const __m512i x = _mm512_permutex2var_epi8(bytes, pattern, fill);
#pragma GCC unroll 3
        for (int k = 0; k < parts; ++k) {
          acc[j] = _mm512_dpbusd_epi32(acc[j], x, _mm512_set1_epi32(w[j][t * parts + k]));
        }
      }
    }
  };
  const auto finish = [&](std::int32_t s, const __m512i(&acc)[kPlanes]) {
    const DepthwisePlaneSlot slot = p.slot[s];
    const auto lanes = static_cast<__mmask16>((std::uint32_t{1} << slot.count) - 1);
#pragma GCC unroll 8
    for (int j = 0; j < kPlanes; ++j) {
      // Every scheme clamps to [lo, hi] here: the narrowing to bytes then truncates exactly.
      const __m512i r = stage_lanes::apply<K>(acc[j], at[j], stage, false);
      const std::int64_t first = (o + j) * p.out_plane + slot.first;
      row_stores::store_lanes<kWords>(p.output, first, lanes, r);
    }
  };
  __m512i previous[kPlanes];
  sums(0, previous);
  for (std::int32_t s = 1; s < p.slots; ++s) {
    __m512i acc[kPlanes];
    sums(s, acc);
    finish(s - 1, previous);
#pragma GCC unroll 8
    for (int j = 0; j < kPlanes; ++j) previous[j] = acc[j];
  }
  finish(p.slots - 1, previous);
}

template <SchemeKind K, bool kWords, bool kFlip, int kEntries, int kParts>
void run_planes(const DepthwisePlanes& planes) {
  // A copy: the byte stores may alias anything behind a reference, which would then be read again
  // after every slot.
  const DepthwisePlanes p = planes;
  // Four planes a group, or two for the schemes with 3-5 per-channel constants (four planes'
  // constants alone would take half the registers; they spilled in the slot loop).
  constexpr bool kManyConstants =
      K == SchemeKind::tvm || K == SchemeKind::tflite || K == SchemeKind::tflite_single;
  constexpr int kGroup = kEntries > 0 && kParts > 0 ? (kManyConstants ? 2 : 4) : 1;
  const std::int64_t unmasked_end = p.masked_from < p.end ? p.masked_from : p.end;
  std::int64_t o = p.first;
  for (; o + kGroup <= unmasked_end; o += kGroup) {
    run_group<K, kWords, kFlip, kEntries, kParts, kGroup, false>(p, o);
  }
  for (; o < unmasked_end; ++o) run_group<K, kWords, kFlip, kEntries, kParts, 1, false>(p, o);
  for (; o < p.end; ++o) run_group<K, kWords, kFlip, kEntries, kParts, 1, true>(p, o);
}

// Rows mode: kPlanes output channels from o, strip after strip. Output row y's sums live in ring
// slot y mod 3 from the step that reads its first input row until the one that reads its last,
// which stores it and starts the slot over for row y + 3: the steps go in threes, so that every
// slot index is a constant and the ring stays in registers. Input rows outside the plane (the
// padding) are the zero point in every byte, as the permute's second table gives padded columns.
template <SchemeKind K, bool kWords, bool kFlip, int kParts, int kPlanes>
[[gnu::always_inline]] inline void rows_group(const DepthwisePlanes& p, std::int64_t o) {
  const int parts = kParts > 0 ? kParts : p.parts;
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(p.zero_point));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const StageView stage = *p.stage;  // a copy, as `p`: else its bounds are read after each store
  const std::uint8_t* in[kPlanes];
  const std::int32_t* w[kPlanes];
  __m512i start[kPlanes];
  stage_lanes::Lanes at[kPlanes];
  load_group<K, kPlanes>(p, stage, o, 3, parts, in, w, start, at);
  for (std::int32_t s = 0; s < p.strips; ++s) {
    const DepthwisePlaneStrip strip = p.strip[s];
    const __m512i pattern = _mm512_load_si512(p.patterns + strip.pattern);
    const auto lanes = static_cast<__mmask16>((std::uint32_t{1} << strip.count) - 1);
    __m512i acc[3][kPlanes];
#pragma GCC unroll 3
    for (int k = 0; k < 3; ++k) {
#pragma GCC unroll 8
      for (int j = 0; j < kPlanes; ++j) acc[k][j] = start[j];
    }
    // Input row i, step k of its three: kernel row r adds into output row i + pad_top − r (slot
    // (k − r) mod 3); output row i + pad_top − 2 (slot (k + 1) mod 3) is then complete.
    const auto step = [&]<int k>(std::int32_t i) {
      __m512i x[kPlanes];
      const bool inside = i >= 0 && i < p.in_height;
#pragma GCC unroll 8
      for (int j = 0; j < kPlanes; ++j) {
        if (inside) {
          __m512i bytes = _mm512_maskz_loadu_epi8(strip.mask, in[j] + i * p.in_width + strip.base);
          if constexpr (kFlip) bytes = _mm512_xor_si512(bytes, flip);
          x[j] = _mm512_permutex2var_epi8(bytes, pattern, fill);
        } else {
          x[j] = fill;
        }
      }
#pragma GCC unroll 3
      for (int r = 0; r < 3; ++r) {
        const int slot = (k - r + 3) % 3;
#pragma GCC unroll 8
        for (int j = 0; j < kPlanes; ++j) {
#pragma GCC unroll 3
          for (int q = 0; q < parts; ++q) {
            acc[slot][j] =
                _mm512_dpbusd_epi32(acc[slot][j], x[j], _mm512_set1_epi32(w[j][r * parts + q]));
          }
        }
      }
      constexpr int kDone = (k + 1) % 3;
      const std::int32_t done = i + p.pad_top - 2;
      if (done >= 0) {
#pragma GCC unroll 8
        for (int j = 0; j < kPlanes; ++j) {
          // Every scheme clamps to [lo, hi] here: the narrowing to bytes then truncates exactly.
          const __m512i r = stage_lanes::apply<K>(acc[kDone][j], at[j], stage, false);
          const std::int64_t first = (o + j) * p.out_plane + done * p.out_width + strip.first;
          row_stores::store_lanes<kWords>(p.output, first, lanes, r);
        }
      }
#pragma GCC unroll 8
      for (int j = 0; j < kPlanes; ++j) acc[kDone][j] = start[j];
    };
    // Input rows −pad_top .. out_height − 1 − pad_top + 2: the last completes the last output row.
    const std::int32_t first = -p.pad_top, steps = p.out_height + 2;
    std::int32_t m = 0;
    for (; m + 3 <= steps; m += 3) {
      step.template operator()<0>(first + m);
      step.template operator()<1>(first + m + 1);
      step.template operator()<2>(first + m + 2);
    }
    if (m < steps) step.template operator()<0>(first + m);
    if (m + 1 < steps) step.template operator()<1>(first + m + 1);
  }
}

template <SchemeKind K, bool kWords, bool kFlip, int kParts>
void run_rows(const DepthwisePlanes& planes) {
  const DepthwisePlanes p = planes;  // a copy: see run_planes
  // Two planes a group (one for the schemes with 3-5 per-channel constants): with four, the ring's
  // 12 accumulators and the planes' constants spilled (99 zmm accesses to the stack in fbgemm's
  // loop, 6 with two; MobileNetV2's 32@112 stride-1 layer 31.4 -> 26.7 us on two threads).
  constexpr bool kManyConstants =
      K == SchemeKind::tvm || K == SchemeKind::tflite || K == SchemeKind::tflite_single;
  constexpr int kGroup = kParts > 0 ? (kManyConstants ? 1 : 2) : 1;
  std::int64_t o = p.first;
  for (; o + kGroup <= p.end; o += kGroup) rows_group<K, kWords, kFlip, kParts, kGroup>(p, o);
  for (; o < p.end; ++o) rows_group<K, kWords, kFlip, kParts, 1>(p, o);
}

template <SchemeKind K, bool kWords, bool kFlip>
DepthwisePlaneKernel for_schedule(int entries, int parts) {
  if constexpr (kEveryKernelVariant) {
    if (entries == 3 && parts == 1) return &run_planes<K, kWords, kFlip, 3, 1>;
    if (entries == 3 && parts == 2) return &run_planes<K, kWords, kFlip, 3, 2>;
  }
  return &run_planes<K, kWords, kFlip, 0, 0>;
}

template <SchemeKind K, bool kWords>
DepthwisePlaneKernel for_input(bool flip, int entries, int parts) {
  return flip ? for_schedule<K, kWords, true>(entries, parts)
              : for_schedule<K, kWords, false>(entries, parts);
}

template <SchemeKind K, bool kWords>
DepthwisePlaneKernel rows_for_input(bool flip, int parts) {
  if constexpr (kEveryKernelVariant) {
    if (parts == 1) return flip ? &run_rows<K, kWords, true, 1> : &run_rows<K, kWords, false, 1>;
  }
  return flip ? &run_rows<K, kWords, true, 0> : &run_rows<K, kWords, false, 0>;
}

// f.template operator()<K, kWords>() for the output stage of (scheme, output dtype): the int32
// stage for an s32 output; null where the pair has no vector stage.
template <class F>
DepthwisePlaneKernel for_stage(SchemeKind scheme, DType output_dtype, const F& f) {
  if (epilogue_kernel(scheme, output_dtype) == nullptr) return nullptr;
  if (output_dtype == DType::s32) return f.template operator()<SchemeKind::int32, true>();
  return gemm::for_scheme<DepthwisePlaneKernel>(
      scheme, [&]<SchemeKind K>() -> DepthwisePlaneKernel {
        if constexpr (K == SchemeKind::int32) {
          return nullptr;  // int32 to bytes has no vector form
        } else {
          return f.template operator()<K, false>();
        }
      });
}

}  // namespace

DepthwisePlaneKernel depthwise_plane_kernel(SchemeKind scheme, DType output_dtype, bool flip,
                                            int entries, int parts) {
  return for_stage(scheme, output_dtype, [&]<SchemeKind K, bool kWords>() {
    return for_input<K, kWords>(flip, entries, parts);
  });
}

DepthwisePlaneKernel depthwise_plane_rows_kernel(SchemeKind scheme, DType output_dtype, bool flip,
                                                 int parts) {
  return for_stage(scheme, output_dtype, [&]<SchemeKind K, bool kWords>() {
    return rows_for_input<K, kWords>(flip, parts);
  });
}

}  // namespace qconv::detail::avx512_vnni
