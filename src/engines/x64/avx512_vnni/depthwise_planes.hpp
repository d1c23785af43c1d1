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
  bool plan_slots(const Problem& problem);
  void pack(const Problem& problem, const CanonicalWeights& weights);

  std::int64_t in_channels_ = 0, out_channels_ = 0, multiplier_ = 1;
  std::int64_t in_plane_ = 0, out_plane_ = 0, element_ = 1;
  std::int64_t stride_w_ = 1;
  std::int32_t entries_ = 0, parts_ = 1;
  bool flip_ = false;
  std::vector<DepthwisePlaneSlot> slots_;
  std::vector<DepthwisePlaneEntry> entries_of_slots_;  // [slot][entry]
  AlignedVector<std::uint8_t> patterns_;               // 64-byte index vectors
  std::vector<std::int32_t> weights_;                  // [output channel][entry][part]
  std::vector<std::int32_t> weight_sums_;              // per output channel: Σ(w − zw)
  DepthwisePlaneKernel kernel_ = nullptr;
};

}  // namespace qconv::detail::avx512_vnni
