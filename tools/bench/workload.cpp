// SPDX-License-Identifier: Apache-2.0
#include "workload.hpp"

#include <cmath>
#include <random>
#include <string>

namespace qconv::bench {

namespace {

constexpr std::int32_t kInputZeroPoint = 5;     // not 0, so padding and Σx terms matter
constexpr std::int32_t kOutputZeroPoint = 128;  // outputs centred in the u8 range
constexpr double kInputScale = 0.05;
constexpr double kWeightScale = 0.01;  // per-channel scales spread over [0.5, 1.5] × this
// Output scale chosen so that a typical output spreads over about ±kOutputSpread steps.
constexpr double kOutputSpread = 32.0;

double unit_interval(std::mt19937_64& rng) {
  return static_cast<double>(rng() >> 11) * 0x1.0p-53;  // [0, 1), the same on every platform
}

// Fills a buffer with uniformly random bytes (every u8 or s8 value equally likely).
void fill_random_bytes(void* data, std::size_t bytes, std::mt19937_64& rng) {
  auto* out = static_cast<unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; i += 8) {
    std::uint64_t bits = rng();
    for (std::size_t j = i; j < bytes && j < i + 8; ++j, bits >>= 8) {
      out[j] = static_cast<unsigned char>(bits);
    }
  }
}

}  // namespace

std::string workload_description() {
  return "u8 NHWC input (zero point " + std::to_string(kInputZeroPoint) +
         ") x s8 weights (OHWI, IOHW when transposed; symmetric per-channel scales) + float "
         "bias -> u8 NHWC (zero point " +
         std::to_string(kOutputZeroPoint) + "), scheme fbgemm (PyTorch fbgemm/x86)";
}

std::uint64_t layer_seed(const LayerRow& row) {
  std::uint64_t hash = 0xcbf29ce484222325u;  // FNV-1a over "network/layer"
  auto mix = [&](std::string_view text) {
    for (const char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 0x100000001b3u;
  };
  mix(row.network);
  mix("/");
  mix(row.layer);
  return hash ^ 0x5eed0f0c0de5eedu;
}

Tensor random_input(const Problem& problem, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Tensor input(problem.desc().input_dtype, problem.desc().input_layout, problem.input_shape());
  fill_random_bytes(input.data(), input.bytes(), rng);
  return input;
}

Workload make_workload(const LayerRow& row, std::int64_t batch, const Variant& variant) {
  std::mt19937_64 rng(layer_seed(row));
  ProblemDesc d = geometry(row);
  d.batch = batch;
  d.input_dtype = variant.input_dtype;
  d.weight_dtype = variant.weight_dtype;
  d.output_dtype = DType::u8;
  d.input_layout = variant.activation_layout;
  // geometry() chose the weight layout: OHWI, or IOHW for a transposed layer.
  d.output_layout = variant.activation_layout;
  d.scheme.kind = SchemeKind::fbgemm;
  d.has_bias = true;
  d.input_scale = kInputScale;
  d.input_zero_point = kInputZeroPoint;
  d.weight_scale.resize(static_cast<std::size_t>(d.out_channels));
  for (double& scale : d.weight_scale) scale = kWeightScale * (0.5 + unit_interval(rng));
  d.weight_zero_point = {
      variant.weight_zero_point.value_or(variant.weight_dtype == DType::u8 ? 128 : 0)};
  d.output_zero_point = kOutputZeroPoint;
  // An accumulator of K random products has a standard deviation of about
  // sqrt(K) · rms(x − zx) · rms(w) ≈ sqrt(K) · 143 · 74.
  const double reduction = static_cast<double>(d.in_channels / d.groups * d.kernel_h * d.kernel_w);
  const double accumulator_spread = std::sqrt(reduction) * 143.0 * 74.0;
  d.output_scale = kInputScale * kWeightScale * accumulator_spread / kOutputSpread;

  Problem problem(d);
  Tensor weights(d.weight_dtype, d.weight_layout, problem.weight_shape());
  fill_random_bytes(weights.data(), weights.bytes(), rng);
  // A bias worth up to ±16 output steps, in real units as PyTorch takes it.
  std::vector<float> bias(static_cast<std::size_t>(d.out_channels));
  for (float& b : bias) {
    b = static_cast<float>((unit_interval(rng) - 0.5) * 32.0 * d.output_scale);
  }
  Tensor input = random_input(problem, rng());
  return Workload{std::move(problem), std::move(weights), std::move(bias), std::move(input)};
}

}  // namespace qconv::bench
