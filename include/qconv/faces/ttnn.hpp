// SPDX-License-Identifier: Apache-2.0
// Preparation face, after tt-metal's ttnn: prepare_conv_weights / prepare_conv_bias once, then
// conv2d with the prepared objects. Padding is ttnn's (top, bottom, left, right) when 4 values,
// (pad_h, pad_w) when 2. Unlike ttnn, a prepared object records everything it was prepared for,
// and conv2d refuses a call that differs (PreparedMismatch names the field, the prepared value
// and the given one). Fixed at preparation: every argument of prepare_conv_weights except
// batch_size, which may change between calls, and the input zero point: each call uses its own
// compute_config.input_zero_point, or conv_config.input_zero_point when that is set. The input
// layout and dtype of a call are the input tensor's own (conv_config.input_dtype is read when
// preparing).
//
// Shapes are ttnn's: conv2d returns an NHWC output as [1, 1, N·H·W, C] (an NCHW one, qconv's own
// choice, as [N, C, H, W]), and takes an NHWC input either as [N, H, W, C] or in that flattened
// form, [1, 1, N·H·W, C], read with the call's batch_size, input_height and input_width.
// ttnn's device-only arguments (device, memory configs, DRAM slicing) have no counterpart here.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/tensor.hpp"

namespace qconv::ttnn {

// What the caller may steer (ttnn's Conv2dConfig).
struct Conv2dConfig {
  std::string activation = "";                     // "", "relu" or "clamp"
  std::pair<double, double> clamp{0.0, 0.0};       // real bounds, activation "clamp" only
  std::string input_dtype = "uint8";               // uint8 or int8
  std::string output_layout = "NHWC";              // NHWC or NCHW
  std::string dtype = "uint8";                     // output dtype: uint8, int8 or int32
  int threads = 1;                                 // 0 = all hardware threads
  std::string algorithm = "auto";                  // engine hint: "auto" or an engine name
  std::optional<std::int32_t> input_zero_point{};  // per-call override (conv2d only)
  bool allow_wraparound = false;
};

// The output scheme and the activation quantization (ttnn's compute_config).
struct ComputeConfig {
  std::string scheme = "fbgemm";    // int32, fbgemm, qnnpack, onednn, onnx, onnxruntime, tvm,
                                    // tvm_f32, tflite, tflite_single
  std::string rounding = "UPWARD";  // tvm, tvm_f32
  double input_scale = 1.0;
  std::int32_t input_zero_point = 0;
  double output_scale = 1.0;
  std::int32_t output_zero_point = 0;
  std::vector<std::int32_t> multiplier_q31{};  // tflite schemes: given per-channel multipliers
  std::vector<std::int32_t> shift{};
};

// Quantized weights: values in `weights_format` with one scale / zero point or one per channel.
struct QuantizedWeights {
  ConstTensorView values{};
  std::vector<double> scale{1.0};
  std::vector<std::int32_t> zero_point{0};
};

class PreparedWeights {
 public:
  explicit PreparedWeights(Plan plan) : plan_(std::move(plan)) {}
  const Plan& plan() const { return plan_; }

 private:
  Plan plan_;
};

// A bias checked against the problem it was prepared for: s32 or float as the scheme takes.
class PreparedBias {
 public:
  PreparedBias(Problem problem, std::vector<std::int32_t> s32, std::vector<float> f32)
      : problem_(std::move(problem)), s32_(std::move(s32)), f32_(std::move(f32)) {}
  const Problem& problem() const { return problem_; }
  BiasView view() const { return f32_.empty() ? BiasView(s32_) : BiasView(f32_); }

 private:
  Problem problem_;
  std::vector<std::int32_t> s32_;
  std::vector<float> f32_;
};

PreparedWeights prepare_conv_weights(
    const QuantizedWeights& weight_tensor, const std::string& input_layout,
    const std::string& weights_format, std::int64_t in_channels, std::int64_t out_channels,
    std::int64_t batch_size, std::int64_t input_height, std::int64_t input_width,
    std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
    const std::vector<std::int64_t>& padding, std::array<std::int64_t, 2> dilation, bool has_bias,
    std::int64_t groups, const Conv2dConfig& conv_config = {},
    const ComputeConfig& compute_config = {});

// `bias_tensor`: out_channels values, s32 or f32 (layout X) as compute_config.scheme takes.
PreparedBias prepare_conv_bias(const ConstTensorView& bias_tensor, const std::string& input_layout,
                               std::int64_t in_channels, std::int64_t out_channels,
                               std::int64_t batch_size, std::int64_t input_height,
                               std::int64_t input_width, std::array<std::int64_t, 2> kernel_size,
                               std::array<std::int64_t, 2> stride,
                               const std::vector<std::int64_t>& padding,
                               std::array<std::int64_t, 2> dilation, std::int64_t groups,
                               const Conv2dConfig& conv_config = {},
                               const ComputeConfig& compute_config = {});

struct Conv2dResult {
  Tensor output{};  // NHWC: [1, 1, N·H·W, C], as ttnn; NCHW: [N, C, H, W]
  std::optional<std::array<std::int64_t, 2>> output_dim;  // [out_height, out_width]
  std::optional<PreparedWeights> weights{};               // return_weights_and_bias
  std::optional<PreparedBias> bias{};
};

// Runs prepared weights; every geometry argument is checked against what they were prepared for.
Conv2dResult conv2d(const ConstTensorView& input_tensor, const PreparedWeights& weight_tensor,
                    std::int64_t in_channels, std::int64_t out_channels, std::int64_t batch_size,
                    std::int64_t input_height, std::int64_t input_width,
                    std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
                    const std::vector<std::int64_t>& padding, std::array<std::int64_t, 2> dilation,
                    std::int64_t groups, const PreparedBias* bias_tensor = nullptr,
                    const Conv2dConfig& conv_config = {}, const ComputeConfig& compute_config = {},
                    bool return_output_dim = false, bool return_weights_and_bias = false);

// As ttnn, conv2d also takes unprepared weights (and a raw bias) and prepares them on the way;
// return_weights_and_bias hands the prepared objects back for reuse.
Conv2dResult conv2d(const ConstTensorView& input_tensor, const QuantizedWeights& weight_tensor,
                    const std::string& weights_format, std::int64_t in_channels,
                    std::int64_t out_channels, std::int64_t batch_size, std::int64_t input_height,
                    std::int64_t input_width, std::array<std::int64_t, 2> kernel_size,
                    std::array<std::int64_t, 2> stride, const std::vector<std::int64_t>& padding,
                    std::array<std::int64_t, 2> dilation, std::int64_t groups,
                    std::optional<ConstTensorView> bias_tensor = {},
                    const Conv2dConfig& conv_config = {}, const ComputeConfig& compute_config = {},
                    bool return_output_dim = false, bool return_weights_and_bias = false);

}  // namespace qconv::ttnn
