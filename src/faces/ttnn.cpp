// SPDX-License-Identifier: Apache-2.0
// Preparation face after ttnn: every entry point turns its arguments into a ProblemDesc through
// one translation (problem_desc below), so preparing and running can never disagree on what an
// argument means. A prepared object is compared field by field with each call's translation.
#include "qconv/faces/ttnn.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "core/allocation.hpp"
#include "core/check.hpp"
#include "core/plan_impl.hpp"
#include "faces/common.hpp"
#include "qconv/error.hpp"
#include "qconv/problem.hpp"

namespace qconv::ttnn {
namespace {

using detail::fail;
using detail::require;

// The geometry arguments every entry point takes, in ttnn's names.
struct Geometry {
  Layout input_layout;
  std::optional<DType> input_dtype;  // conv2d: the input tensor's own; else conv_config's
  std::int64_t in_channels;
  std::int64_t out_channels;
  std::int64_t batch_size;
  std::int64_t input_height;
  std::int64_t input_width;
  std::array<std::int64_t, 2> kernel_size;
  std::array<std::int64_t, 2> stride;
  const std::vector<std::int64_t>& padding;
  std::array<std::int64_t, 2> dilation;
  std::int64_t groups;
};

// What the weights contribute to a problem: their element type, layout and quantization.
struct WeightFormat {
  DType dtype = DType::s8;
  Layout layout = Layout::OIHW;
  std::vector<double> scale{1.0};
  std::vector<std::int32_t> zero_point{0};
};

WeightFormat weight_format_of(const QuantizedWeights& weights, const std::string& weights_format) {
  return {weights.values.dtype(), parse_layout(weights_format, "weights_format"), weights.scale,
          weights.zero_point};
}

WeightFormat weight_format_of(const Problem& prepared) {
  const ProblemDesc& d = prepared.desc();
  return {d.weight_dtype, d.weight_layout, d.weight_scale, d.weight_zero_point};
}

// A bias does not depend on the weights' format or quantization, so it is prepared (and compared)
// with a neutral one standing in for them. Its weight scale makes the scheme's real multiplier
// sx·sw/sy equal 1/2 where a normal binary32 scale can: a stand-in of 1 would make the bias's
// problem invalid for scales whose real weights give a valid multiplier (a tflite problem with
// sw = 2^-40, sx = 1, sy = 2^-35 has multiplier 2^-5, while sw = 1 would give 2^35).
WeightFormat bias_weight_format(const ComputeConfig& compute) {
  WeightFormat format;
  const double wanted = 0.5 * compute.output_scale / compute.input_scale;
  if (std::isfinite(wanted) && wanted > 0) {
    format.scale = {std::clamp(wanted, static_cast<double>(std::numeric_limits<float>::min()),
                               static_cast<double>(std::numeric_limits<float>::max()))};
  }  // otherwise a scale is invalid: validation names it, as for the weights
  return format;
}

// The ttnn argument names of the fields a ProblemDesc built here holds.
constexpr detail::FieldName kFieldNames[] = {
    {"batch", "batch_size"},
    {"in_height", "input_height"},
    {"in_width", "input_width"},
    {"kernel_h", "kernel_size[0]"},
    {"kernel_w", "kernel_size[1]"},
    {"stride_h", "stride[0]"},
    {"stride_w", "stride[1]"},
    {"dilation_h", "dilation[0]"},
    {"dilation_w", "dilation[1]"},
    {"pad_top", "padding[top]"},
    {"pad_bottom", "padding[bottom]"},
    {"pad_left", "padding[left]"},
    {"pad_right", "padding[right]"},
    {"input_dtype", "input_dtype"},
    {"output_dtype", "conv_config.dtype"},
    {"output_layout", "conv_config.output_layout"},
    {"weight_dtype", "weight_tensor.dtype"},
    {"weight_layout", "weights_format"},
    {"weight", "weight_tensor"},
    {"input", "input_tensor"},
    {"input_scale", "compute_config.input_scale"},
    {"input_zero_point", "compute_config.input_zero_point"},
    {"output_scale", "compute_config.output_scale"},
    {"output_zero_point", "compute_config.output_zero_point"},
    {"weight_scale", "weight_tensor.scale"},
    {"weight_zero_point", "weight_tensor.zero_point"},
    {"scheme.multiplier_q31", "compute_config.multiplier_q31"},
    {"scheme.shift", "compute_config.shift"},
    {"scheme", "compute_config.scheme"},
    {"rounding", "compute_config.rounding"},
    {"activation.min", "conv_config.clamp[0]"},
    {"activation.max", "conv_config.clamp[1]"},
    {"activation", "conv_config.activation"},
    {"allow_wraparound", "conv_config.allow_wraparound"},
};

Geometry geometry_of(Layout input_layout, std::int64_t in_channels, std::int64_t out_channels,
                     std::int64_t batch_size, std::int64_t input_height, std::int64_t input_width,
                     std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
                     const std::vector<std::int64_t>& padding, std::array<std::int64_t, 2> dilation,
                     std::int64_t groups) {
  return {input_layout, std::nullopt, in_channels, out_channels, batch_size, input_height,
          input_width,  kernel_size,  stride,      padding,      dilation,   groups};
}

// conv2d's geometry: the input's layout and dtype are the input tensor's own, as a ttnn tensor
// carries them.
Geometry call_geometry(const ConstTensorView& input_tensor, std::int64_t in_channels,
                       std::int64_t out_channels, std::int64_t batch_size,
                       std::int64_t input_height, std::int64_t input_width,
                       std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
                       const std::vector<std::int64_t>& padding,
                       std::array<std::int64_t, 2> dilation, std::int64_t groups) {
  Geometry g =
      geometry_of(input_tensor.layout(), in_channels, out_channels, batch_size, input_height,
                  input_width, kernel_size, stride, padding, dilation, groups);
  if (!input_tensor.empty()) g.input_dtype = input_tensor.dtype();
  return g;
}

// ttnn's flattened activations: an NHWC tensor [1, 1, N·H·W, C] (what ttnn's conv2d returns and
// its next conv2d takes) is read as [N, H, W, C], with N, H and W the call's batch_size,
// input_height and input_width. Any other tensor is read as it is.
ConstTensorView unflattened(const ConstTensorView& input, const Geometry& g) {
  if (input.empty() || input.layout() != Layout::NHWC || input.shape().size() != 4) return input;
  const Shape& s = input.shape();
  if (s[0] != 1 || s[1] != 1 || g.batch_size < 1 || g.input_height < 1 || g.input_width < 1)
    return input;
  std::int64_t rows = 0, pixels = 0;
  if (__builtin_mul_overflow(g.batch_size, g.input_height, &rows) ||
      __builtin_mul_overflow(rows, g.input_width, &pixels) || s[2] != pixels) {
    return input;
  }
  return {input.data(),
          input.capacity_bytes(),
          input.dtype(),
          Layout::NHWC,
          {g.batch_size, g.input_height, g.input_width, s[3]}};
}

Activation activation_of(const Conv2dConfig& config) {
  if (config.activation.empty()) return Activation::none();
  if (config.activation == "relu") return Activation::relu();
  if (config.activation == "clamp")
    return Activation::clamp(config.clamp.first, config.clamp.second);
  fail("conv_config.activation", config.activation, "activation is \"\", \"relu\" or \"clamp\"");
}

OutputScheme scheme_of(const ComputeConfig& config) {
  OutputScheme scheme;
  scheme.kind = parse_scheme(config.scheme, "compute_config.scheme");
  scheme.rounding = parse_rounding(config.rounding, "compute_config.rounding");
  scheme.multiplier_q31 = config.multiplier_q31;
  scheme.shift = config.shift;
  return scheme;
}

// The one translation from ttnn's arguments to a problem description.
ProblemDesc problem_desc(const Geometry& g, const WeightFormat& weights, bool has_bias,
                         const Conv2dConfig& conv_config, const ComputeConfig& compute_config) {
  ProblemDesc d;
  d.op = OpKind::conv2d;
  d.batch = g.batch_size;
  d.in_channels = g.in_channels;
  d.in_height = g.input_height;
  d.in_width = g.input_width;
  d.out_channels = g.out_channels;
  d.groups = g.groups;
  d.kernel_h = g.kernel_size[0];
  d.kernel_w = g.kernel_size[1];
  detail::set_stride(d, g.stride, "stride");
  detail::set_dilation(d, g.dilation, "dilation");
  detail::set_padding(
      d, detail::padding_from(g.padding, detail::PaddingOrder::top_bottom_left_right, "padding"));

  d.input_dtype = g.input_dtype ? *g.input_dtype
                                : parse_dtype(conv_config.input_dtype, "conv_config.input_dtype");
  d.weight_dtype = weights.dtype;
  d.output_dtype = parse_dtype(conv_config.dtype, "conv_config.dtype");
  d.input_layout = g.input_layout;
  d.weight_layout = weights.layout;
  d.output_layout = parse_layout(conv_config.output_layout, "conv_config.output_layout");

  d.input_scale = compute_config.input_scale;
  d.input_zero_point = compute_config.input_zero_point;
  d.weight_scale = weights.scale;
  d.weight_zero_point = weights.zero_point;
  d.output_scale = compute_config.output_scale;
  d.output_zero_point = compute_config.output_zero_point;

  d.scheme = scheme_of(compute_config);
  d.activation = activation_of(conv_config);
  d.has_bias = has_bias;
  d.allow_wraparound = conv_config.allow_wraparound;
  return d;
}

// The bias must be what the scheme adds: float for the PyTorch schemes, s32 for the others; one
// value per output channel.
std::pair<std::vector<std::int32_t>, std::vector<float>> copy_bias(const ConstTensorView& bias,
                                                                   const Problem& problem) {
  const ProblemDesc& d = problem.desc();
  require<ShapeMismatch>(!bias.empty(), "bias_tensor", "empty view", "a tensor is required");
  require<ShapeMismatch>(bias.layout() == Layout::X, "bias_tensor.layout", to_string(bias.layout()),
                         "a bias is a vector (layout X)");
  const DType wanted = takes_float_bias(d.scheme.kind) ? DType::f32 : DType::s32;
  require<ShapeMismatch>(bias.dtype() == wanted, "bias_tensor.dtype", to_string(bias.dtype()),
                         "scheme " + std::string(to_string(d.scheme.kind)) + " takes a " +
                             std::string(to_string(wanted)) + " bias");
  require<ShapeMismatch>(bias.dim(0) == d.out_channels, "bias_tensor.shape",
                         to_string(bias.shape()),
                         "needs out_channels = " + std::to_string(d.out_channels) + " values");
  const auto count = static_cast<std::size_t>(bias.dim(0));
  if (wanted == DType::f32) return {{}, {bias.as<float>(), bias.as<float>() + count}};
  return {{bias.as<std::int32_t>(), bias.as<std::int32_t>() + count}, {}};
}

Conv2dResult run_prepared(const ConstTensorView& call_input, const PreparedWeights& weights,
                          const Geometry& geometry, const PreparedBias* bias,
                          const Conv2dConfig& conv_config, const ComputeConfig& compute_config,
                          bool return_output_dim, bool return_weights_and_bias) {
  const Plan& plan = weights.plan();
  // The weights' own format and quantization are what this call uses: they cannot differ.
  const ProblemDesc call = problem_desc(geometry, weight_format_of(plan.problem()), bias != nullptr,
                                        conv_config, compute_config);
  // The call is compared as a plain description (what Plan::require_compatible compares), never
  // built into a Problem of its own: a changed field is then reported as the mismatch it is,
  // where building it could first fail another rule (a changed out_channels against per-channel
  // weight scales). When nothing differs, the prepared Problem is the call's.
  detail::require_same_problem(plan.problem().desc(), call, "weights");
  if (bias != nullptr) {
    detail::require_same_problem(bias->problem().desc(),
                                 problem_desc(geometry, bias_weight_format(compute_config), true,
                                              conv_config, compute_config),
                                 "bias");
  }
  const ConstTensorView input_tensor = unflattened(call_input, geometry);
  // (An input of another rank is refused by execute, which names its shape.)
  if (!input_tensor.empty() && input_tensor.shape().size() == 4) {
    require<ShapeMismatch>(input_tensor.dim(0) == geometry.batch_size, "batch_size",
                           geometry.batch_size,
                           "the input tensor's batch is " + std::to_string(input_tensor.dim(0)));
  }

  RunOptions options;
  options.threads = conv_config.threads;
  // The input zero point is the one field of compute_config that may change per call;
  // conv_config.input_zero_point, when set, overrides it.
  options.input_zero_point = conv_config.input_zero_point.value_or(compute_config.input_zero_point);

  Conv2dResult result;
  if (input_tensor.empty() || input_tensor.shape().size() != 4) {
    result.output = plan.execute(input_tensor, BiasView(), options);  // refused, naming the shape
  }
  // ttnn's output: NHWC as [1, 1, N·H·W, C]; NCHW (qconv's own choice) as [N, C, H, W].
  const Problem& problem = plan.problem();
  const ProblemDesc& d = problem.desc();
  const Shape shape = problem.output_shape(geometry.batch_size);
  try {
    result.output = Tensor(d.output_dtype, d.output_layout,
                           d.output_layout == Layout::NHWC
                               ? Shape{1, 1, shape[0] * shape[1] * shape[2], shape[3]}
                               : shape);
  } catch (const std::bad_alloc& e) {
    throw detail::AllocationFailure(std::string("output: ") + e.what() +
                                    " (the output of this call; a smaller batch needs less)");
  }
  plan.execute(input_tensor,
               TensorView(result.output.data(), result.output.bytes(), d.output_dtype,
                          d.output_layout, shape),
               bias ? bias->view() : BiasView(), options);
  if (return_output_dim) {
    result.output_dim = {plan.problem().out_height(), plan.problem().out_width()};
  }
  if (return_weights_and_bias) {
    result.weights = weights;
    if (bias != nullptr) result.bias = *bias;
  }
  return result;
}

// prepare_conv_weights once the geometry arguments are collected.
PreparedWeights prepare_weights(const QuantizedWeights& weight_tensor,
                                const std::string& weights_format, const Geometry& geometry,
                                bool has_bias, const Conv2dConfig& conv_config,
                                const ComputeConfig& compute_config) {
  const Problem problem(problem_desc(geometry, weight_format_of(weight_tensor, weights_format),
                                     has_bias, conv_config, compute_config));
  PrepareOptions options;
  options.engine = conv_config.algorithm;
  return PreparedWeights(Plan::prepare(problem, weight_tensor.values, options));
}

// prepare_conv_bias once the geometry arguments are collected.
PreparedBias prepare_bias(const ConstTensorView& bias_tensor, const Geometry& geometry,
                          const Conv2dConfig& conv_config, const ComputeConfig& compute_config) {
  Problem problem(problem_desc(geometry, bias_weight_format(compute_config), true, conv_config,
                               compute_config));
  auto [s32, f32] = copy_bias(bias_tensor, problem);
  return PreparedBias(std::move(problem), std::move(s32), std::move(f32));
}

}  // namespace

PreparedWeights prepare_conv_weights(
    const QuantizedWeights& weight_tensor, const std::string& input_layout,
    const std::string& weights_format, std::int64_t in_channels, std::int64_t out_channels,
    std::int64_t batch_size, std::int64_t input_height, std::int64_t input_width,
    std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
    const std::vector<std::int64_t>& padding, std::array<std::int64_t, 2> dilation, bool has_bias,
    std::int64_t groups, const Conv2dConfig& conv_config, const ComputeConfig& compute_config) {
  return detail::in_face_words(kFieldNames, [&] {
    const Geometry geometry = geometry_of(parse_layout(input_layout, "input_layout"), in_channels,
                                          out_channels, batch_size, input_height, input_width,
                                          kernel_size, stride, padding, dilation, groups);
    return prepare_weights(weight_tensor, weights_format, geometry, has_bias, conv_config,
                           compute_config);
  });
}

PreparedBias prepare_conv_bias(const ConstTensorView& bias_tensor, const std::string& input_layout,
                               std::int64_t in_channels, std::int64_t out_channels,
                               std::int64_t batch_size, std::int64_t input_height,
                               std::int64_t input_width, std::array<std::int64_t, 2> kernel_size,
                               std::array<std::int64_t, 2> stride,
                               const std::vector<std::int64_t>& padding,
                               std::array<std::int64_t, 2> dilation, std::int64_t groups,
                               const Conv2dConfig& conv_config,
                               const ComputeConfig& compute_config) {
  return detail::in_face_words(kFieldNames, [&] {
    const Geometry geometry = geometry_of(parse_layout(input_layout, "input_layout"), in_channels,
                                          out_channels, batch_size, input_height, input_width,
                                          kernel_size, stride, padding, dilation, groups);
    return prepare_bias(bias_tensor, geometry, conv_config, compute_config);
  });
}

Conv2dResult conv2d(const ConstTensorView& input_tensor, const PreparedWeights& weight_tensor,
                    std::int64_t in_channels, std::int64_t out_channels, std::int64_t batch_size,
                    std::int64_t input_height, std::int64_t input_width,
                    std::array<std::int64_t, 2> kernel_size, std::array<std::int64_t, 2> stride,
                    const std::vector<std::int64_t>& padding, std::array<std::int64_t, 2> dilation,
                    std::int64_t groups, const PreparedBias* bias_tensor,
                    const Conv2dConfig& conv_config, const ComputeConfig& compute_config,
                    bool return_output_dim, bool return_weights_and_bias) {
  return detail::in_face_words(kFieldNames, [&] {
    const Geometry geometry =
        call_geometry(input_tensor, in_channels, out_channels, batch_size, input_height,
                      input_width, kernel_size, stride, padding, dilation, groups);
    return run_prepared(input_tensor, weight_tensor, geometry, bias_tensor, conv_config,
                        compute_config, return_output_dim, return_weights_and_bias);
  });
}

Conv2dResult conv2d(const ConstTensorView& input_tensor, const QuantizedWeights& weight_tensor,
                    const std::string& weights_format, std::int64_t in_channels,
                    std::int64_t out_channels, std::int64_t batch_size, std::int64_t input_height,
                    std::int64_t input_width, std::array<std::int64_t, 2> kernel_size,
                    std::array<std::int64_t, 2> stride, const std::vector<std::int64_t>& padding,
                    std::array<std::int64_t, 2> dilation, std::int64_t groups,
                    std::optional<ConstTensorView> bias_tensor, const Conv2dConfig& conv_config,
                    const ComputeConfig& compute_config, bool return_output_dim,
                    bool return_weights_and_bias) {
  return detail::in_face_words(kFieldNames, [&] {
    // Prepared, then run, with the one geometry: the input tensor's layout and dtype.
    const Geometry geometry =
        call_geometry(input_tensor, in_channels, out_channels, batch_size, input_height,
                      input_width, kernel_size, stride, padding, dilation, groups);
    const PreparedWeights weights =
        prepare_weights(weight_tensor, weights_format, geometry, bias_tensor.has_value(),
                        conv_config, compute_config);
    std::optional<PreparedBias> bias;
    if (bias_tensor) bias = prepare_bias(*bias_tensor, geometry, conv_config, compute_config);
    return run_prepared(input_tensor, weights, geometry, bias ? &*bias : nullptr, conv_config,
                        compute_config, return_output_dim, return_weights_and_bias);
  });
}

}  // namespace qconv::ttnn
