// SPDX-License-Identifier: Apache-2.0
// Turns fuzzer bytes into one convolution call: geometry, quantization, output scheme, tensors.
// Bytes are read front to back; once they run out every further choice reads as 0, so any input,
// even an empty one, decodes to a case. The first byte picks "wild" mode (one in 4), where sizes,
// zero points, scales and tensor shapes may also break the rules (to exercise validation), or
// "large" mode (one in 8: first byte 3 mod 8), where valid problems are larger: up to 160x160
// pixels, 160 channels, 1M multiply-adds (whole 64-channel blocks, wide rows, two threads' work).
// Every other case has at most 12 channels and 7x7 pixels.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/problem.hpp"

namespace qconv::fuzz {

struct FuzzCase {
  ProblemDesc desc;
  bool wild = false;
  bool large = false;
  std::vector<std::uint8_t> weights;  // as many bytes as the weight shape needs, when it is valid
  Shape input_shape;                  // usually the problem's, sometimes off by one in wild mode
  std::vector<std::uint8_t> input;
  std::vector<float> bias_f32;
  std::vector<std::int32_t> bias_s32;
  int threads = 1;
  std::optional<std::int32_t> input_zero_point;  // a per-call override
};

// Decodes `bytes`; the weight and input buffers are sized for the decoded shapes when those are
// valid and small (otherwise left empty: the Problem will refuse them).
FuzzCase decode_case(std::span<const std::uint8_t> bytes);

// The multiply-adds of a call, padding taps included (for a transposed layer, more than it does).
std::int64_t multiply_adds(const Problem& problem);

// The thread count the check runs the fast engines with: another than the reference's, since
// results must not depend on it.
inline int engine_threads(const FuzzCase& c) { return 1 + c.threads % 3; }

}  // namespace qconv::fuzz
