// SPDX-License-Identifier: Apache-2.0
// Convolutions of few input channels on NCHW planes, pixels in lanes (DensePlanes in kernels.hpp):
// a network's first layer, 3 input channels, with NCHW tensors. Per slot of up to 16 output
// pixels, each entry (kernel row, group of 4 kernel columns) of each input plane is loaded and put
// in place by one vpermt2b, once; then every output channel sums one vpdpbusd per (input plane,
// entry, part) against its broadcast weight dword, and its output stage stores the slot straight
// into its output plane. The channels-in-lanes route needs the 3-byte pixels of an NHWC copy
// gathered into windows, and the output transposed back, which cost a third as much as the
// convolution itself there.
//
// Built with AVX-512 VBMI flags (vpermt2b): called only on a CPU that has them. See kernels.hpp
// for why this file uses no standard-library templates.
#include <immintrin.h>

#include "engines/x64/avx512_vnni/kernels.hpp"
#include "engines/x64/avx512_vnni/row_stores.hpp"
#include "engines/x64/avx512_vnni/stage_lanes.hpp"

namespace qconv::detail::avx512_vnni {
namespace {

// Output channels whose sums run at once: with 9 permuted inputs held, 8 accumulators leave room
// for the stage's temporaries.
constexpr int kGroup = 8;

// Calls body(i) for i in [0, n): unrolled where kN > 0 fixes n (n is then kN), a plain loop
// otherwise. An unroll pragma over a count known only at run time made clang build remainder copies
// of every body: two minutes for this file in the sanitizer build, 5 s so.
template <int kN, class Body>
[[gnu::always_inline]] inline void repeat(int n, const Body& body) {
  if constexpr (kN > 0) {
#pragma GCC unroll 16
    for (int i = 0; i < kN; ++i) body(i);
  } else {
    for (int i = 0; i < n; ++i) body(i);
  }
}

// kChannels, kEntries, kParts > 0: that schedule fixed; 0: read from p (the permuted inputs then
// live in a stack array). kWords: s32 output (the int32 scheme), else u8 or s8 bytes.
template <SchemeKind K, bool kWords, bool kFlip, int kChannels, int kEntries, int kParts>
void run_dense(const DensePlanes& planes) {
  // A copy: the byte stores may alias anything behind a reference, which would then be read again
  // after every slot.
  const DensePlanes p = planes;
  const int channels = kChannels > 0 ? kChannels : p.in_channels;
  const int entries = kEntries > 0 ? kEntries : p.entries;
  const int parts = kParts > 0 ? kParts : p.parts;
  const int inputs = channels * entries;
  constexpr int kInputs = kChannels * kEntries;
  const __m512i fill = _mm512_set1_epi8(static_cast<char>(p.zero_point));
  const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
  const StageView stage = *p.stage;
  const auto minus_zx = static_cast<std::uint32_t>(-p.zero_point);
  for (std::int32_t s = p.first_slot; s < p.end_slot; ++s) {
    const DepthwisePlaneEntry* e = p.entry + s * entries;
    __m512i x[kDensePlaneInputs];
    repeat<kInputs>(inputs, [&](int i) {
      const int c = i / entries, t = i % entries;
      const __m512i pattern = _mm512_load_si512(p.patterns + e[t].pattern);
      // Masked to the plane: no byte past it is read (the last plane's may lie past the tensor).
      __m512i bytes = _mm512_maskz_loadu_epi8(e[t].mask, p.input + c * p.in_plane + e[t].base);
      if constexpr (kFlip) bytes = _mm512_xor_si512(bytes, flip);
      x[i] = _mm512_permutex2var_epi8(bytes, pattern, fill);
    });
    const DepthwisePlaneSlot slot = p.slot[s];
    const auto lanes = static_cast<__mmask16>((std::uint32_t{1} << slot.count) - 1);
    // Output channels [o, o + kG): the sums, then each one's output stage and store.
    const auto outputs = [&]<int kG>(std::int32_t o) {
      __m512i acc[kG];
#pragma GCC unroll 8
      for (int g = 0; g < kG; ++g) {
        // −zx·Σ(w − zw) modulo 2^32, as the reference wraps: the zero point the padding taps
        // read then adds nothing.
        const std::uint32_t start = minus_zx * static_cast<std::uint32_t>(p.weight_sums[o + g]);
        acc[g] = _mm512_set1_epi32(static_cast<std::int32_t>(start));
      }
      repeat<kInputs>(inputs, [&](int i) {
#pragma GCC unroll 8
        for (int g = 0; g < kG; ++g) {
          const std::int32_t* w = p.weights + ((o + g) * inputs + i) * parts;
          repeat<kParts>(parts, [&](int k) {
            acc[g] = _mm512_dpbusd_epi32(acc[g], x[i], _mm512_set1_epi32(w[k]));
          });
        }
      });
#pragma GCC unroll 8
      for (int g = 0; g < kG; ++g) {
        const stage_lanes::Lanes at = stage_lanes::Lanes::load<K, true>(stage, o + g);
        // Every scheme clamps to [lo, hi] here: the narrowing to bytes then truncates exactly.
        const __m512i r = stage_lanes::apply<K>(acc[g], at, stage, false);
        const std::int64_t first = (o + g) * p.out_plane + slot.first;
        row_stores::store_lanes<kWords>(p.output, first, lanes, r);
      }
    };
    std::int32_t o = 0;
    for (; o + kGroup <= p.out_channels; o += kGroup) outputs.template operator()<kGroup>(o);
    for (; o < p.out_channels; ++o) outputs.template operator()<1>(o);
  }
}

template <SchemeKind K, bool kWords, bool kFlip>
DensePlaneKernel for_schedule(int channels, int entries, int parts) {
  if constexpr (kEveryKernelVariant) {
    if (channels == 3 && entries == 3 && parts == 1) return &run_dense<K, kWords, kFlip, 3, 3, 1>;
  }
  return &run_dense<K, kWords, kFlip, 0, 0, 0>;
}

}  // namespace

DensePlaneKernel dense_plane_kernel(SchemeKind scheme, DType output_dtype, bool flip, int channels,
                                    int entries, int parts) {
  if (channels * entries > kDensePlaneInputs) return nullptr;
  return stage_lanes::for_vector_stage<DensePlaneKernel>(
      scheme, output_dtype, [&]<SchemeKind K, DType D>() -> DensePlaneKernel {
        constexpr bool kWords = D == DType::s32;
        return flip ? for_schedule<K, kWords, true>(channels, entries, parts)
                    : for_schedule<K, kWords, false>(channels, entries, parts);
      });
}

}  // namespace qconv::detail::avx512_vnni
