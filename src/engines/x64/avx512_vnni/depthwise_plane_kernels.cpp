// SPDX-License-Identifier: Apache-2.0
// Depthwise kernels on NCHW planes, pixels in lanes (DepthwisePlanes in kernels.hpp): a slot of up
// to 16 output pixels of one channel sums, per entry, x·d over 4 taps a lane with one vpdpbusd,
// its bytes put in place by one vpermt2b from a single 64-byte load of the plane. The channels-in-
// lanes kernels need the planes transposed to NHWC and back, which cost about as much as the
// convolution itself on MobileNet's layers; at stride 2 this is 1.1-1.6x faster than that on one
// thread (depthwise_planes.cpp says where it runs).
//
// Built with AVX-512 VBMI flags (vpermt2b): called only on a CPU that has them. See kernels.hpp
// for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

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
#pragma GCC unroll 8
  for (int j = 0; j < kPlanes; ++j) {
    in[j] = p.input + (o + j) / p.multiplier * p.in_plane;
    w[j] = p.weights + (o + j) * entries * parts;
    // −zx·Σd modulo 2^32, as the reference wraps.
    const auto start_value = static_cast<std::uint32_t>(-p.zero_point) *
                             static_cast<std::uint32_t>(p.weight_sums[o + j]);
    start[j] = _mm512_set1_epi32(static_cast<std::int32_t>(start_value));
    at[j] = stage_lanes::Lanes::load<K, true>(stage, o + j);
  }
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
      if constexpr (kWords) {
        _mm512_mask_storeu_epi32(static_cast<std::int32_t*>(p.output) + first, lanes, r);
      } else {
        _mm512_mask_cvtepi32_storeu_epi8(static_cast<std::uint8_t*>(p.output) + first, lanes, r);
      }
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

}  // namespace

DepthwisePlaneKernel depthwise_plane_kernel(SchemeKind scheme, DType output_dtype, bool flip,
                                            int entries, int parts) {
  if (epilogue_kernel(scheme, output_dtype) == nullptr) return nullptr;
  if (output_dtype == DType::s32) {
    return for_input<SchemeKind::int32, true>(flip, entries, parts);
  }
  switch (scheme) {
    case SchemeKind::fbgemm: return for_input<SchemeKind::fbgemm, false>(flip, entries, parts);
    case SchemeKind::qnnpack: return for_input<SchemeKind::qnnpack, false>(flip, entries, parts);
    case SchemeKind::onednn: return for_input<SchemeKind::onednn, false>(flip, entries, parts);
    case SchemeKind::onnx: return for_input<SchemeKind::onnx, false>(flip, entries, parts);
    case SchemeKind::tvm: return for_input<SchemeKind::tvm, false>(flip, entries, parts);
    case SchemeKind::tvm_f32: return for_input<SchemeKind::tvm_f32, false>(flip, entries, parts);
    case SchemeKind::tflite: return for_input<SchemeKind::tflite, false>(flip, entries, parts);
    case SchemeKind::tflite_single:
      return for_input<SchemeKind::tflite_single, false>(flip, entries, parts);
    case SchemeKind::onnxruntime:
      return for_input<SchemeKind::onnxruntime, false>(flip, entries, parts);
    case SchemeKind::int32: break;  // int32 to bytes has no vector form
  }
  return nullptr;
}

}  // namespace qconv::detail::avx512_vnni
