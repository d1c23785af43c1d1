// SPDX-License-Identifier: Apache-2.0
// The quantized problem the bench runs for a layer, and its random data.
//
// One realistic scheme for every layer: PyTorch's fbgemm (x86) quantized convolution as a
// quantized ResNet or MobileNet runs it — u8 NHWC activations, s8 weights with symmetric
// per-channel scales (zero point 0), a float bias (a folded batch norm), requantized to u8 NHWC by
// the fbgemm output scheme (SPEC §4). Data comes from a seed fixed per layer, so a layer gets the
// same numbers however the layers are filtered.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "layer_table.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

namespace qconv::bench {

// What the header of the bench's output says about the problem.
std::string workload_description();

struct Workload {
  Problem problem;
  Tensor weights;
  std::vector<float> bias;  // one per output channel, for the fbgemm scheme
  Tensor input;
};

// The dtypes, weight zero point and activation layout of the problem (the symmetric u8 x s8 one by
// default).
struct Variant {
  DType input_dtype = DType::u8;
  DType weight_dtype = DType::s8;
  std::optional<int> weight_zero_point;     // default: 0 for s8 weights, 128 for u8
  Layout activation_layout = Layout::NHWC;  // of the input and the output
};

Workload make_workload(const LayerRow& row, std::int64_t batch, const Variant& variant = {});

// A random input for `problem` from a seed (in its layout, the problem's batch).
Tensor random_input(const Problem& problem, std::uint64_t seed);

// Options for a run on `threads` threads with the prepared input zero point.
inline RunOptions on_threads(int threads) {
  RunOptions options;
  options.threads = threads;
  return options;
}

// The seed of a layer's data: a fixed constant mixed with the network and layer names.
std::uint64_t layer_seed(const LayerRow& row);

}  // namespace qconv::bench
