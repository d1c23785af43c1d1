// SPDX-License-Identifier: Apache-2.0
// PyTorch face: torch.ao.nn.quantized.functional.conv2d / conv_transpose2d translated into one
// Problem and run once. The tensors carry their own dtype and shape; everything PyTorch infers
// from them (channels, kernel size, input dtype) is read from there.
#include "qconv/faces/functional.hpp"

#include <array>
#include <limits>
#include <string_view>

#include "core/check.hpp"
#include "faces/common.hpp"
#include "qconv/error.hpp"
#include "qconv/problem.hpp"

namespace qconv::functional {
namespace {

using detail::fail;
using detail::require;

// What both operations share: the engine's output scheme, the output dtype, the fused ReLU.
struct OutputArgs {
  double scale;
  std::int32_t zero_point;
  std::string_view dtype;
  std::string_view engine;
  bool relu;
};

SchemeKind scheme_of_engine(std::string_view engine) {
  // PyTorch's x86 engine computes fbgemm's formula (SPEC §4).
  if (engine == "fbgemm" || engine == "x86") return SchemeKind::fbgemm;
  if (engine == "qnnpack") return SchemeKind::qnnpack;
  if (engine == "onednn") return SchemeKind::onednn;
  fail("engine", engine, "PyTorch's quantized engines are fbgemm (or x86), qnnpack and onednn");
}

DType output_dtype_of(std::string_view dtype) {
  if (dtype == "quint8") return DType::u8;
  if (dtype == "qint8") return DType::s8;
  fail("dtype", dtype, "a quantized convolution outputs quint8 or qint8");
}

// An NCHW quantized activation with one scale and one zero point.
void require_activation(const QTensor& input) {
  const ConstTensorView& v = input.values;
  require<ShapeMismatch>(!v.empty(), "input", "empty view", "a tensor is required");
  require<ShapeMismatch>(v.layout() == Layout::NCHW, "input.layout", to_string(v.layout()),
                         "PyTorch activations are NCHW");
  require(input.scale.size() == 1, "input.scale.size", input.scale.size(),
          "the input is quantized per tensor (one scale)");
  require(input.zero_point.size() == 1, "input.zero_point.size", input.zero_point.size(),
          "the input is quantized per tensor (one zero point)");
}

void require_weight_layout(const QTensor& weight, Layout layout) {
  const ConstTensorView& v = weight.values;
  require<ShapeMismatch>(!v.empty(), "weight", "empty view", "a tensor is required");
  require<ShapeMismatch>(v.layout() == layout, "weight.layout", to_string(v.layout()),
                         "this operation takes " + std::string(to_string(layout)) + " weights");
}

// A per-channel weight must be quantized along its output-channel axis: scales along any other
// axis do not belong to output channels and cannot be folded into the output stage.
void require_channel_axis(const QTensor& weight, std::int64_t output_axis) {
  const bool per_channel = weight.scale.size() > 1 || weight.zero_point.size() > 1;
  if (!per_channel) return;
  require(weight.axis == output_axis, "weight.axis", weight.axis,
          "per-channel weights must be quantized along the output-channel axis " +
              std::to_string(output_axis));
}

// Everything but the geometry, from the tensors and the options.
ProblemDesc quantized_desc(const QTensor& input, const QTensor& weight, bool has_bias,
                           const OutputArgs& out) {
  ProblemDesc d;
  d.batch = input.values.dim(0);
  d.in_channels = input.values.dim(1);
  d.in_height = input.values.dim(2);
  d.in_width = input.values.dim(3);
  d.kernel_h = weight.values.dim(2);
  d.kernel_w = weight.values.dim(3);
  d.input_dtype = input.values.dtype();
  d.weight_dtype = weight.values.dtype();
  d.output_dtype = output_dtype_of(out.dtype);
  d.input_layout = Layout::NCHW;
  d.output_layout = Layout::NCHW;
  d.input_scale = input.scale[0];
  d.input_zero_point = input.zero_point[0];
  d.weight_scale = weight.scale;
  d.weight_zero_point = weight.zero_point;
  d.output_scale = out.scale;
  d.output_zero_point = out.zero_point;
  d.scheme.kind = scheme_of_engine(out.engine);
  d.activation = out.relu ? Activation::relu() : Activation::none();
  d.has_bias = has_bias;
  return d;
}

// PyTorch's padding is one value or (pad_h, pad_w); an empty list means 0.
detail::Padding symmetric_padding(const std::vector<std::int64_t>& padding) {
  const std::array<std::int64_t, 2> hw = detail::pair_from(padding, "padding", 0);
  return detail::padding_from(hw, detail::PaddingOrder::top_bottom_left_right, "padding");
}

BiasView bias_view(const std::optional<std::span<const float>>& bias) {
  return bias ? BiasView(*bias) : BiasView();
}

QuantizedTensor run(const Problem& problem, const QTensor& input, const QTensor& weight,
                    const std::optional<std::span<const float>>& bias, int threads) {
  return {detail::run_once(problem, weight.values, input.values, bias_view(bias), threads),
          problem.desc().output_scale, problem.desc().output_zero_point};
}

// PyTorch's argument names of the fields a ProblemDesc built here holds.
constexpr detail::FieldName kFieldNames[] = {
    {"stride_h", "stride[0]"},
    {"stride_w", "stride[1]"},
    {"dilation_h", "dilation[0]"},
    {"dilation_w", "dilation[1]"},
    {"pad_top", "padding[0]"},
    {"pad_bottom", "padding[0]"},
    {"pad_left", "padding[1]"},
    {"pad_right", "padding[1]"},
    {"output_padding_h", "output_padding[0]"},
    {"output_padding_w", "output_padding[1]"},
    {"input_scale", "input.scale"},
    {"input_zero_point", "input.zero_point"},
    {"weight_scale", "weight.scale"},
    {"weight_zero_point", "weight.zero_point"},
    {"output_scale", "scale"},
    {"output_zero_point", "zero_point"},
    {"output_dtype", "dtype"},
    {"batch", "input.shape[0]"},
    {"in_channels", "input.shape[1]"},
    {"in_height", "input.shape[2]"},
    {"in_width", "input.shape[3]"},
};

}  // namespace

QuantizedTensor conv2d(const QTensor& input, const QTensor& weight,
                       std::optional<std::span<const float>> bias, const Conv2dOptions& options) {
  return detail::in_face_words(kFieldNames, [&] {
    require(options.padding_mode == "zeros", "padding_mode", options.padding_mode,
            "quantized convolution supports only padding_mode \"zeros\"");
    require_activation(input);
    require_weight_layout(weight, Layout::OIHW);
    require_channel_axis(weight, 0);

    ProblemDesc d = quantized_desc(
        input, weight, bias.has_value(),
        {options.scale, options.zero_point, options.dtype, options.engine, options.relu});
    d.op = OpKind::conv2d;
    d.out_channels = weight.values.dim(0);
    d.groups = options.groups;
    d.weight_layout = Layout::OIHW;
    detail::set_stride(d, options.stride, "stride");
    detail::set_dilation(d, options.dilation, "dilation");
    detail::set_padding(d, symmetric_padding(options.padding));
    const Problem problem(std::move(d));

    // OIHW holds C_in / groups input channels; the other dimensions defined the problem.
    require<ShapeMismatch>(
        weight.values.dim(1) == problem.in_channels_per_group(), "weight.shape[1]",
        weight.values.dim(1),
        "must equal in_channels / groups = " + std::to_string(problem.desc().in_channels) + " / " +
            std::to_string(problem.desc().groups));
    return run(problem, input, weight, bias, options.threads);
  });
}

QuantizedTensor conv_transpose2d(const QTensor& input, const QTensor& weight,
                                 std::optional<std::span<const float>> bias,
                                 const ConvTranspose2dOptions& options) {
  return detail::in_face_words(kFieldNames, [&] {
    require_activation(input);
    require_weight_layout(weight, Layout::IOHW);
    require_channel_axis(weight, 1);
    // IOHW's axis 1 holds C_out / groups channels: per-channel values along it name every output
    // channel only when there is one group.
    const bool per_channel = weight.scale.size() > 1 || weight.zero_point.size() > 1;
    require(!per_channel || options.groups == 1, "groups", options.groups,
            "per-channel weights of conv_transpose2d (axis 1 of IOHW) need groups == 1");
    // C_out is C_out/groups (the weight's axis 1) times groups: both must be valid before the
    // product is formed.
    using detail::kMaxSize;
    require(options.groups >= 1 && options.groups <= kMaxSize, "groups", options.groups,
            "must be between 1 and 2^31 - 1");
    require<ShapeMismatch>(weight.values.dim(1) <= kMaxSize / options.groups, "weight.shape[1]",
                           weight.values.dim(1),
                           "times groups = " + std::to_string(options.groups) +
                               " gives more than 2^31 - 1 output channels");

    ProblemDesc d = quantized_desc(
        input, weight, bias.has_value(),
        {options.scale, options.zero_point, options.dtype, options.engine, options.relu});
    d.op = OpKind::conv2d_transpose;
    d.out_channels = weight.values.dim(1) * options.groups;
    d.groups = options.groups;
    d.weight_layout = Layout::IOHW;
    detail::set_stride(d, options.stride, "stride");
    detail::set_dilation(d, options.dilation, "dilation");
    detail::set_output_padding(d, options.output_padding, "output_padding");
    detail::set_padding(d, symmetric_padding(options.padding));
    const Problem problem(std::move(d));

    // IOHW's axis 0 is every input channel.
    require<ShapeMismatch>(
        weight.values.dim(0) == problem.desc().in_channels, "weight.shape[0]", weight.values.dim(0),
        "must equal the input's channels = " + std::to_string(problem.desc().in_channels));
    return run(problem, input, weight, bias, options.threads);
  });
}

}  // namespace qconv::functional
