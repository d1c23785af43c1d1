// SPDX-License-Identifier: Apache-2.0
// The AVX-512 engines' depthwise convolution with NCHW input and output: output planes cut into
// slots of pixels, pixels in lanes (DepthwisePlanes in kernels.hpp, depthwise_plane_kernels.cpp),
// no transposes. Part of the depthwise path (depthwise_plan.cpp), which runs it where it applies.
// Built for the baseline ISA; the kernels only on a CPU with AVX-512 VBMI.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/aligned.hpp"
#include "engines/engine.hpp"
#include "engines/x64/avx512_vnni/kernels.hpp"

namespace qconv::detail::avx512_vnni {

// How many s8 parts the widest w − zw of the layer needs (1 to 3: w − zw lies in [−255, 255]).
int weight_parts_needed(const Problem& problem, const CanonicalWeights& weights);

// Part k of v = w − zw: v less the parts before it, clamped to s8; their sum is v.
inline std::int8_t weight_part(std::int32_t v, int k) {
  for (int i = 0; i < k; ++i) v -= std::clamp(v, -128, 127);
  return static_cast<std::int8_t>(std::clamp(v, -128, 127));
}

// An output plane cut into slots of up to 16 pixels, with each slot's entries (kernel row r,
// kernel columns 4g .. 4g + 3): the geometry every input plane of a layer shares (the slot
// comment in depthwise_planes.cpp says how it is cut).
struct PlaneSlots {
  std::int32_t entries = 0;  // per slot: kernel_h · ⌈kernel_w / 4⌉
  std::vector<DepthwisePlaneSlot> slots;
  std::vector<DepthwisePlaneEntry> entries_of_slots;  // [slot][entry]
  AlignedVector<std::uint8_t> patterns;               // 64-byte vpermt2b index vectors

  // The slots of `problem`'s output planes; false where one output pixel's taps in a kernel row
  // span more than 64 input bytes.
  bool plan(const Problem& problem);
};

// The strips of the depthwise planes' rows mode (DepthwisePlaneStrip in kernels.hpp).
struct PlaneStrips {
  std::vector<DepthwisePlaneStrip> strips;
  AlignedVector<std::uint8_t> patterns;  // 64-byte vpermt2b index vectors

  // Whether rows mode runs `problem`: stride 1, dilation 1, 3 kernel rows of at most 4 columns,
  // output rows of 12 pixels or more (narrower ones leave most lanes of a strip empty, where
  // slots run on across rows).
  static bool apply(const Problem& problem);
  void plan(const Problem& problem);
};

// The plane kernels' weights: for output channel o, input plane c of `channels` (1 for depthwise)
// and entry e (kernel row r, columns 4g .. 4g + 3), `parts` dwords at
// words[((o·channels + c)·entries + e)·parts + k], byte s % 4 of dword k part k of w − zw
// (weight_part); and sums[o] = Σ(w − zw) modulo 2^32.
void pack_plane_weights(const Problem& problem, const CanonicalWeights& weights, int channels,
                        int parts, std::vector<std::int32_t>& words,
                        std::vector<std::int32_t>& sums);

class DepthwisePlanePath {
 public:
  // The path for `problem`, or null where it does not apply: a transposed layer, NHWC on either
  // side, a (scheme, output dtype) without a vector output
  // stage, a CPU without AVX-512 VBMI, or one output pixel's taps in a kernel row spanning more
  // than 64 input bytes.
  // `parts`: weight_parts_needed(problem, weights), which the caller has already counted.
  static std::unique_ptr<DepthwisePlanePath> plan(const Problem& problem,
                                                  const CanonicalWeights& weights, int parts);

  // Whether this path runs a call on `threads` threads (else the transposing one, as measured).
  bool faster_than_transposes(int threads) const;
  void run(const RunContext& call, int threads) const;
  std::string describe() const;

 private:
  DepthwisePlanePath() = default;

  std::int64_t in_channels_ = 0, out_channels_ = 0, multiplier_ = 1;
  std::int64_t in_plane_ = 0, out_plane_ = 0, element_ = 1;
  std::int64_t stride_w_ = 1;
  std::int32_t entries_ = 0, parts_ = 1;  // per output channel: kernel rows × column groups
  bool flip_ = false;
  PlaneSlots slots_;    // slots mode
  PlaneStrips strips_;  // rows mode, where PlaneStrips::apply (then slots_ is empty)
  std::int32_t in_width_ = 0, in_height_ = 0, out_width_ = 0, out_height_ = 0, pad_top_ = 0;
  std::vector<std::int32_t> weights_;      // [output channel][entry][part]
  std::vector<std::int32_t> weight_sums_;  // per output channel: Σ(w − zw)
  DepthwisePlaneKernel kernel_ = nullptr;
};

}  // namespace qconv::detail::avx512_vnni
