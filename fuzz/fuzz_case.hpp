// SPDX-License-Identifier: Apache-2.0
// Turns fuzzer bytes into one convolution call: geometry, quantization, output scheme, tensors.
// Bytes are read front to back; once they run out every further choice reads as 0, so any input,
// even an empty one, decodes to a case. The first byte picks "wild" mode, where sizes, zero
// points, scales and tensor shapes may also break the rules (to exercise validation).
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

}  // namespace qconv::fuzz
