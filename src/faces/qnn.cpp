// SPDX-License-Identifier: Apache-2.0
// TVM QNN face: translates qnn.conv2d, qnn.conv2d_transpose and qnn.requantize into qconv's
// Problem (or, for requantize, its output stage). TVM's own consistency rules (the Conv2D type
// relation's checks of channels and kernel_size against the weight, the layout strings) are
// checked here, before a Problem is built, so the errors name TVM's argument names.
#include "qconv/faces/qnn.hpp"

#include <algorithm>
#include <initializer_list>
#include <string>

#include "core/check.hpp"
#include "core/quantization_checks.hpp"
#include "core/weight_layout.hpp"
#include "faces/common.hpp"
#include "output/output_stage.hpp"
#include "qconv/error.hpp"

namespace qconv::qnn {
namespace {

using detail::fail;
using detail::require;

// The weight's logical dimensions, whatever its layout.
struct KernelDims {
  std::int64_t out_channels = 0;
  std::int64_t in_per_group = 0;  // the weight's I: C_in / groups
  std::int64_t kh = 0;
  std::int64_t kw = 0;
};

Layout parse_activation_layout(std::string_view name, std::string_view field) {
  const Layout layout = parse_layout(name, field);
  require(is_activation_layout(layout), field, name, "data layouts are NCHW or NHWC");
  return layout;
}

// out_layout "" means data_layout, as in TVM.
Layout out_layout_of(const std::string& out_layout, Layout data_layout) {
  return out_layout.empty() ? data_layout : parse_activation_layout(out_layout, "out_layout");
}

void require_int32_out_dtype(const std::string& out_dtype) {
  const DType dtype = parse_dtype(out_dtype, "out_dtype");
  require(dtype == DType::s32, "out_dtype", out_dtype,
          "the qnn convolutions output the int32 accumulator; requantize it with "
          "qnn::requantize");
}

// A tensor's own layout tag must say what the layout string says: TVM would read the buffer in
// the stated layout, so a disagreement is a mistake the caller must see.
void require_layout_tag(const ConstTensorView& tensor, Layout stated, std::string_view tensor_name,
                        std::string_view attribute) {
  require<ShapeMismatch>(
      tensor.layout() == stated, std::string(tensor_name) + ".layout", to_string(tensor.layout()),
      "must match " + std::string(attribute) + " = " + std::string(to_string(stated)));
}

std::int64_t channels_of(const ConstTensorView& data) {
  return data.layout() == Layout::NCHW ? data.dim(1) : data.dim(3);
}

void set_data_geometry(ProblemDesc& desc, const ConstTensorView& data) {
  const bool nchw = data.layout() == Layout::NCHW;
  desc.batch = data.dim(0);
  desc.in_channels = channels_of(data);
  desc.in_height = nchw ? data.dim(2) : data.dim(1);
  desc.in_width = nchw ? data.dim(3) : data.dim(2);
  desc.input_dtype = data.dtype();
  desc.input_layout = data.layout();
}

// The layouts a convolution's attributes name.
struct Layouts {
  Layout data = Layout::NCHW;
  Layout kernel = Layout::OIHW;
  Layout out = Layout::NCHW;
};

// The attribute checks both convolutions make first, in this order: the layout strings (the
// kernel's must be one of `kernel_layouts`, as `kernel_rule` says), out_dtype and the tensors'
// layout tags.
template <class Attrs>
Layouts check_attributes(const Attrs& attrs, std::initializer_list<Layout> kernel_layouts,
                         std::string_view kernel_rule, const ConstTensorView& data,
                         const ConstTensorView& weight, std::string_view weight_name) {
  Layouts layouts;
  layouts.data = parse_activation_layout(attrs.data_layout, "data_layout");
  layouts.kernel = parse_layout(attrs.kernel_layout, "kernel_layout");
  require(std::find(kernel_layouts.begin(), kernel_layouts.end(), layouts.kernel) !=
              kernel_layouts.end(),
          "kernel_layout", attrs.kernel_layout, kernel_rule);
  layouts.out = out_layout_of(attrs.out_layout, layouts.data);
  require_int32_out_dtype(attrs.out_dtype);
  require_layout_tag(data, layouts.data, "data", "data_layout");
  require_layout_tag(weight, layouts.kernel, weight_name, "kernel_layout");
  return layouts;
}

// groups in [1, 2^31 - 1], checked before anything divides by it or multiplies with it.
void require_groups_range(std::int64_t groups) {
  require(groups >= 1 && groups <= detail::kMaxSize, "groups", groups,
          "must be between 1 and 2^31 - 1");
}

// The weight's extent `extent` times groups must not overflow: it gives a channel count.
void require_times_groups(std::int64_t extent, std::int64_t groups, const ConstTensorView& weight,
                          std::string_view weight_name) {
  require<ShapeMismatch>(
      extent <= detail::kMaxSize / groups, std::string(weight_name) + ".shape",
      to_string(weight.shape()),
      "its channels per group times groups (" + std::to_string(groups) + ") exceed 2^31 - 1");
}

// groups >= 1 is checked first, before anything divides by it.
void require_groups(std::int64_t groups, std::int64_t in_channels, std::int64_t out_channels) {
  require(in_channels % groups == 0, "groups", groups,
          "must divide the data's channels = " + std::to_string(in_channels));
  require(out_channels % groups == 0, "groups", groups,
          "must divide channels = " + std::to_string(out_channels));
}

// The Conv2D type relation's check: a stated kernel_size must equal the weight's (kh, kw).
void require_kernel_size(std::span<const std::int64_t> kernel_size, const KernelDims& k,
                         const ConstTensorView& weight, std::string_view weight_name) {
  const auto [kh, kw] = detail::pair_from(kernel_size, "kernel_size", 0);
  require<ShapeMismatch>(kh == k.kh && kw == k.kw, "kernel_size", to_string(Shape{kh, kw}),
                         "must equal the " + std::string(weight_name) + "'s (kh, kw) = (" +
                             std::to_string(k.kh) + ", " + std::to_string(k.kw) + ") of shape " +
                             to_string(weight.shape()) + " in " +
                             std::string(to_string(weight.layout())));
}

void require_channels(std::int64_t channels, const KernelDims& k, const ConstTensorView& weight,
                      std::string_view weight_name) {
  require<ShapeMismatch>(channels == k.out_channels, "channels", channels,
                         "must equal the " + std::string(weight_name) + "'s output channels " +
                             std::to_string(k.out_channels) + " (shape " +
                             to_string(weight.shape()) + " in " +
                             std::string(to_string(weight.layout())) + ")");
}

// The weight's I times groups must give the data's channels.
void require_input_channels(const KernelDims& k, std::int64_t groups, std::int64_t in_channels,
                            const ConstTensorView& weight, std::string_view weight_name) {
  require<ShapeMismatch>(k.in_per_group * groups == in_channels,
                         std::string(weight_name) + ".shape", to_string(weight.shape()),
                         "its input channels per group (" + std::to_string(k.in_per_group) +
                             ") times groups (" + std::to_string(groups) +
                             ") must equal the data's channels " + std::to_string(in_channels));
}

KernelDims conv_kernel_dims(const ConstTensorView& kernel, std::int64_t groups,
                            std::int64_t in_channels) {
  const Shape& s = kernel.shape();
  if (kernel.layout() == Layout::HWOI) {  // depthwise: [kh, kw, C, multiplier]
    require(groups == in_channels, "groups", groups,
            "kernel_layout HWOI is depthwise: groups must equal the data's channels " +
                std::to_string(in_channels));
    require<ShapeMismatch>(s[2] == in_channels, "kernel.shape", to_string(s),
                           "HWOI is [kh, kw, C, multiplier]: C must equal the data's channels " +
                               std::to_string(in_channels));
    return {s[2] * s[3], 1, s[0], s[1]};
  }
  const auto axes = detail::conv_weight_axes(kernel.layout());
  if (!axes) return {};
  const auto at = [&s](int axis) { return s[static_cast<std::size_t>(axis)]; };
  return {at(axes->o), at(axes->i), at(axes->h), at(axes->w)};
}

// Geometry and attributes the two convolutions share; quantization is set by set_quantization.
template <class Attrs>
ProblemDesc describe(OpKind op, const ConstTensorView& data, const ConstTensorView& weight,
                     const KernelDims& k, Layout out_layout, const Attrs& attrs) {
  ProblemDesc desc;
  desc.op = op;
  set_data_geometry(desc, data);
  desc.out_channels = k.out_channels;
  desc.groups = attrs.groups;
  desc.kernel_h = k.kh;
  desc.kernel_w = k.kw;
  detail::set_stride(desc, attrs.strides, "strides");
  detail::set_dilation(desc, attrs.dilation, "dilation");
  detail::set_padding(
      desc,
      detail::padding_from(attrs.padding, detail::PaddingOrder::top_left_bottom_right, "padding"));
  desc.weight_dtype = weight.dtype();
  desc.weight_layout = weight.layout();
  desc.output_dtype = DType::s32;
  desc.output_layout = out_layout;
  desc.scheme.kind = SchemeKind::int32;  // scales are metadata: the output is the accumulator
  desc.allow_wraparound = attrs.allow_wraparound;
  return desc;
}

void set_quantization(ProblemDesc& desc, std::int32_t input_zero_point,
                      const ZeroPoints& kernel_zero_point, double input_scale,
                      const Scales& kernel_scale) {
  desc.input_scale = input_scale;
  desc.input_zero_point = input_zero_point;
  desc.weight_scale = kernel_scale;
  desc.weight_zero_point = kernel_zero_point;
}

// ---- requantize ----

std::int64_t normalized_axis(std::int64_t axis, std::size_t rank) {
  const auto r = static_cast<std::int64_t>(rank);
  const std::int64_t a = axis < 0 ? axis + r : axis;
  require(a >= 0 && a < r, "axis", axis,
          "must lie in [-" + std::to_string(r) + ", " + std::to_string(r - 1) +
              "] for a tensor of rank " + std::to_string(r));
  return a;
}

SchemeKind requantize_scheme(const std::string& compute_dtype) {
  if (compute_dtype == "int64") return SchemeKind::tvm;
  if (compute_dtype == "float32") return SchemeKind::tvm_f32;
  fail("compute_dtype", compute_dtype,
       "qnn.requantize computes in \"int64\" (integer fixed point) or \"float32\"");
}

DType requantize_out_dtype(const std::string& out_dtype) {
  const DType dtype = parse_dtype(out_dtype, "out_dtype");
  require(dtype == DType::s8 || dtype == DType::u8 || dtype == DType::s32, "out_dtype", out_dtype,
          "qnn.requantize outputs int8, uint8 or int32");
  return dtype;
}

void store(Tensor& out, std::int64_t i, std::int32_t value) {
  const auto index = static_cast<std::size_t>(i);
  switch (out.dtype()) {
    case DType::u8: out.as<std::uint8_t>()[index] = static_cast<std::uint8_t>(value); break;
    case DType::s8: out.as<std::int8_t>()[index] = static_cast<std::int8_t>(value); break;
    default: out.as<std::int32_t>()[index] = value; break;
  }
}

// TVM's argument names of the fields a ProblemDesc built here holds.
constexpr detail::FieldName kFieldNames[] = {
    {"stride_h", "strides[0]"},
    {"stride_w", "strides[1]"},
    {"dilation_h", "dilation[0]"},
    {"dilation_w", "dilation[1]"},
    {"pad_top", "padding[top]"},
    {"pad_bottom", "padding[bottom]"},
    {"pad_left", "padding[left]"},
    {"pad_right", "padding[right]"},
    {"output_padding_h", "output_padding[0]"},
    {"output_padding_w", "output_padding[1]"},
    {"input_layout", "data_layout"},
    {"weight_layout", "kernel_layout"},
    {"output_layout", "out_layout"},
    {"weight_scale", "kernel_scale"},
    {"weight_zero_point", "kernel_zero_point"},
    {"input", "data"},
    {"batch", "data.shape[batch]"},
    {"in_channels", "data.shape[channels]"},
    {"in_height", "data.shape[height]"},
    {"in_width", "data.shape[width]"},
};

}  // namespace

Tensor conv2d(const ConstTensorView& data, ConstTensorView kernel, std::int32_t input_zero_point,
              const ZeroPoints& kernel_zero_point, double input_scale, const Scales& kernel_scale,
              std::array<std::int64_t, 2> kernel_size, std::int64_t channels,
              const Conv2DAttrs& attrs) {
  return detail::in_face_words(kFieldNames, [&] {
    const Layouts layouts =
        check_attributes(attrs, {Layout::OIHW, Layout::OHWI, Layout::HWIO, Layout::HWOI},
                         "qnn.conv2d kernels are OIHW, OHWI, HWIO or HWOI", data, kernel, "kernel");
    const std::int64_t in_channels = channels_of(data);
    require_groups_range(attrs.groups);
    const KernelDims k = conv_kernel_dims(kernel, attrs.groups, in_channels);
    require_times_groups(k.in_per_group, attrs.groups, kernel, "kernel");
    require_channels(channels, k, kernel, "kernel");
    require_kernel_size(kernel_size, k, kernel, "kernel");
    require_groups(attrs.groups, in_channels, channels);
    require_input_channels(k, attrs.groups, in_channels, kernel, "kernel");

    ProblemDesc desc = describe(OpKind::conv2d, data, kernel, k, layouts.out, attrs);
    set_quantization(desc, input_zero_point, kernel_zero_point, input_scale, kernel_scale);
    return detail::run_once(Problem(std::move(desc)), kernel, data, {}, attrs.threads);
  });
}

Tensor conv2d_transpose(const ConstTensorView& data, ConstTensorView weight,
                        std::int32_t input_zero_point, const ZeroPoints& kernel_zero_point,
                        double input_scale, const Scales& kernel_scale,
                        const Conv2DTransposeAttrs& attrs) {
  return detail::in_face_words(kFieldNames, [&] {
    const Layouts layouts = check_attributes(
        attrs, {Layout::IOHW, Layout::OIHW},
        "qnn.conv2d_transpose weights are IOHW ([C_in, C_out/groups, kh, kw]) or OIHW", data,
        weight, "weight");
    const std::int64_t in_channels = channels_of(data);
    require_groups_range(attrs.groups);
    const Shape& s = weight.shape();
    KernelDims k;
    require_times_groups(s[1], attrs.groups, weight, "weight");
    if (layouts.kernel == Layout::IOHW) {
      require<ShapeMismatch>(s[0] == in_channels, "weight.shape", to_string(s),
                             "IOHW is [C_in, C_out/groups, kh, kw]: C_in must equal the data's "
                             "channels " +
                                 std::to_string(in_channels));
      k = {s[1] * attrs.groups, in_channels / attrs.groups, s[2], s[3]};
    } else {
      k = {s[0], s[1], s[2], s[3]};
    }
    if (attrs.channels != 0) require_channels(attrs.channels, k, weight, "weight");
    if (!attrs.kernel_size.empty()) require_kernel_size(attrs.kernel_size, k, weight, "weight");
    require_groups(attrs.groups, in_channels, k.out_channels);
    if (layouts.kernel == Layout::OIHW) {
      require_input_channels(k, attrs.groups, in_channels, weight, "weight");
    }

    ProblemDesc desc = describe(OpKind::conv2d_transpose, data, weight, k, layouts.out, attrs);
    set_quantization(desc, input_zero_point, kernel_zero_point, input_scale, kernel_scale);
    detail::set_output_padding(desc, attrs.output_padding, "output_padding");
    return detail::run_once(Problem(std::move(desc)), weight, data, {}, attrs.threads);
  });
}

Tensor requantize(const ConstTensorView& data, const Scales& input_scale,
                  std::int32_t input_zero_point, double output_scale,
                  std::int32_t output_zero_point, const RequantizeAttrs& attrs) {
  require<ShapeMismatch>(!data.empty(), "data", "empty view", "a tensor is required");
  require<ShapeMismatch>(data.dtype() == DType::s32, "data.dtype", to_string(data.dtype()),
                         "qnn.requantize takes an int32 tensor");
  const SchemeKind kind = requantize_scheme(attrs.compute_dtype);
  const Rounding rounding = parse_rounding(attrs.rounding, "rounding");
  const DType out_dtype = requantize_out_dtype(attrs.out_dtype);
  const Shape& shape = data.shape();
  const std::int64_t axis = normalized_axis(attrs.axis, shape.size());
  const std::int64_t axis_size = shape[static_cast<std::size_t>(axis)];
  require(input_scale.size() == 1 || static_cast<std::int64_t>(input_scale.size()) == axis_size,
          "input_scale.size", input_scale.size(),
          "holds 1 value or one per channel along axis " + std::to_string(axis) + " (" +
              std::to_string(axis_size) + ")");
  for (std::size_t i = 0; i < input_scale.size(); ++i) {
    detail::validate_scale(input_scale[i], "input_scale[" + std::to_string(i) + "]");
  }
  detail::validate_scale(output_scale, "output_scale");
  detail::validate_zero_point(output_zero_point, out_dtype, "output_zero_point");

  const auto stage = detail::OutputStage::for_requantize(kind, rounding, input_scale, output_scale,
                                                         output_zero_point, out_dtype);
  // Elements after the axis in row-major order: consecutive elements share a channel this long.
  std::int64_t inner = 1;
  for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];

  Tensor out(out_dtype, data.layout(), shape);
  const std::int32_t* in = data.as<std::int32_t>();
  const std::int64_t count = data.elements();
  for (std::int64_t i = 0; i < count; ++i) {
    const std::int64_t channel = (i / inner) % axis_size;
    // TVM subtracts the input zero point in 64 bits, so it can never wrap.
    const std::int64_t value = std::int64_t{in[i]} - input_zero_point;
    store(out, i, stage.apply_wide(value, channel));
  }
  return out;
}

}  // namespace qconv::qnn
