// SPDX-License-Identifier: Apache-2.0
// ONNX face: translates QLinearConv, ConvInteger and an integer ConvTranspose into qconv's
// Problem. ONNX's attribute rules (auto_pad, pads, kernel_shape, output_shape) are resolved here
// into explicit (top, bottom, left, right) padding; everything else is the Problem's to check.
#include "qconv/faces/onnx.hpp"

#include <algorithm>
#include <string>

#include "core/check.hpp"
#include "faces/common.hpp"
#include "qconv/error.hpp"

namespace qconv::onnx {
namespace {

using detail::fail;
using detail::require;

enum class AutoPad { notset, valid, same_upper, same_lower };

AutoPad parse_auto_pad(const std::string& name) {
  if (name == "NOTSET") return AutoPad::notset;
  if (name == "VALID") return AutoPad::valid;
  if (name == "SAME_UPPER") return AutoPad::same_upper;
  if (name == "SAME_LOWER") return AutoPad::same_lower;
  fail("auto_pad", name, "must be NOTSET, VALID, SAME_UPPER or SAME_LOWER");
}

// One spatial axis of the problem, before padding is resolved.
struct Axis {
  std::int64_t in = 0, kernel = 0, stride = 0, dilation = 0, output_padding = 0;
  std::int64_t span() const { return (kernel - 1) * dilation + 1; }
};

struct AxisPadding {
  std::int64_t begin = 0, end = 0;
};

// Splits a total padding in two; `extra_at_end` says which side gets the odd extra.
AxisPadding split(std::int64_t total, bool extra_at_end) {
  const std::int64_t half = total / 2;
  return extra_at_end ? AxisPadding{half, total - half} : AxisPadding{total - half, half};
}

// ONNX allows `pads` only with auto_pad NOTSET, and for a 2-D convolution it holds four values.
void require_pads_form(const ConvAttributes& a, AutoPad auto_pad) {
  require(a.pads.empty() || auto_pad == AutoPad::notset, "pads", to_string(Shape(a.pads)),
          "explicit pads cannot be used together with auto_pad = " + a.auto_pad);
  require(a.pads.empty() || a.pads.size() == 4, "pads", to_string(Shape(a.pads)),
          "a 2-D convolution takes 4 pads [top, left, bottom, right] (x1_begin, x2_begin, "
          "x1_end, x2_end)");
}

detail::Padding explicit_pads(const ConvAttributes& a) {
  if (a.pads.empty()) return {};
  return detail::padding_from(a.pads, detail::PaddingOrder::top_left_bottom_right, "pads");
}

// SPEC §2: the SAME padding of a convolution, so that out = ceil(in / stride).
AxisPadding same_conv_padding(const Axis& x, AutoPad auto_pad) {
  const std::int64_t out = (x.in + x.stride - 1) / x.stride;
  const std::int64_t total = std::max<std::int64_t>(0, (out - 1) * x.stride + x.span() - x.in);
  return split(total, auto_pad == AutoPad::same_upper);
}

detail::Padding conv_padding(const ConvAttributes& a, const Axis& h, const Axis& w) {
  const AutoPad auto_pad = parse_auto_pad(a.auto_pad);
  require_pads_form(a, auto_pad);
  switch (auto_pad) {
    case AutoPad::notset: return explicit_pads(a);
    case AutoPad::valid: return {};
    default: {
      const AxisPadding ph = same_conv_padding(h, auto_pad);
      const AxisPadding pw = same_conv_padding(w, auto_pad);
      return {ph.begin, ph.end, pw.begin, pw.end};
    }
  }
}

// ConvTranspose (ONNX operator spec): with output_shape given, or with SAME_* (which asks for
// output_shape = in · stride), total_padding = stride·(in − 1) + output_padding + span − out;
// SAME_UPPER puts total/2 at the beginning (the odd extra at the end), anything else puts the
// odd extra at the beginning.
AxisPadding transpose_padding_for(const Axis& x, std::int64_t out, AutoPad auto_pad,
                                  std::string_view field) {
  const std::int64_t natural = x.stride * (x.in - 1) + x.output_padding + x.span();
  const std::int64_t total = natural - out;
  require<ShapeMismatch>(total >= 0, field, out,
                         "asks for an output larger than the transposed convolution produces "
                         "without negative padding (" +
                             std::to_string(natural) + "); raise output_padding instead");
  return split(total, auto_pad == AutoPad::same_upper);
}

detail::Padding transpose_padding(const ConvTransposeAttributes& a, const Axis& h, const Axis& w) {
  const AutoPad auto_pad = parse_auto_pad(a.auto_pad);
  require_pads_form(a, auto_pad);
  const bool given_shape = !a.output_shape.empty();
  if (given_shape) {
    require(a.output_shape.size() == 2, "output_shape", to_string(Shape(a.output_shape)),
            "holds the 2 spatial output sizes (H, W)");
    require(a.pads.empty(), "pads", to_string(Shape(a.pads)),
            "pads are derived from output_shape; give one or the other");
    require(auto_pad != AutoPad::valid, "auto_pad", a.auto_pad,
            "VALID fixes the padding at 0; it cannot be used with output_shape");
  }
  if (!given_shape && (auto_pad == AutoPad::notset || auto_pad == AutoPad::valid)) {
    return auto_pad == AutoPad::notset ? explicit_pads(a) : detail::Padding{};
  }
  const std::int64_t out_h = given_shape ? a.output_shape[0] : h.in * h.stride;
  const std::int64_t out_w = given_shape ? a.output_shape[1] : w.in * w.stride;
  // Name what asked for the output size: the given output_shape, or SAME's in · stride.
  const std::string field_h = given_shape ? "output_shape[0]" : "auto_pad output height";
  const std::string field_w = given_shape ? "output_shape[1]" : "auto_pad output width";
  const AxisPadding ph = transpose_padding_for(h, out_h, auto_pad, field_h);
  const AxisPadding pw = transpose_padding_for(w, out_w, auto_pad, field_w);
  return {ph.begin, ph.end, pw.begin, pw.end};
}

void require_layout(const ConstTensorView& tensor, Layout layout, std::string_view name) {
  require<ShapeMismatch>(tensor.layout() == layout, std::string(name) + ".layout",
                         to_string(tensor.layout()),
                         "the ONNX face takes " + std::string(to_string(layout)));
}

void require_kernel_shape(const ConvAttributes& a, const ConstTensorView& w) {
  if (a.kernel_shape.empty()) return;
  const Shape from_w{w.dim(2), w.dim(3)};
  require<ShapeMismatch>(a.kernel_shape == from_w, "kernel_shape", to_string(a.kernel_shape),
                         "must equal w's spatial shape " + to_string(from_w));
}

// Everything but padding: geometry from x and w, attributes and zero points, with the integer
// operators' int32 scheme (QLinearConv replaces it with its own).
ProblemDesc describe(OpKind op, const ConstTensorView& x, const ConstTensorView& w,
                     std::int32_t x_zero_point, const std::vector<std::int32_t>& w_zero_point,
                     const ConvAttributes& a) {
  const bool transposed = op == OpKind::conv2d_transpose;
  require_layout(x, Layout::NCHW, "x");
  require_layout(w, transposed ? Layout::IOHW : Layout::OIHW, "w");
  require_kernel_shape(a, w);
  require(a.group >= 1, "group", a.group, "must be at least 1");

  ProblemDesc d;
  d.op = op;
  d.batch = x.dim(0);
  d.in_channels = x.dim(1);
  d.in_height = x.dim(2);
  d.in_width = x.dim(3);
  d.groups = a.group;
  require(d.in_channels % a.group == 0, "group", a.group,
          "must divide x's channels = " + std::to_string(d.in_channels));
  if (transposed) {  // w: [C_in, C_out/group, kh, kw]
    require<ShapeMismatch>(w.dim(0) == d.in_channels, "w.shape", to_string(w.shape()),
                           "ConvTranspose weights are [C, M/group, kh, kw]: C must equal x's "
                           "channels " +
                               std::to_string(d.in_channels));
    d.out_channels = w.dim(1) * a.group;
  } else {  // w: [C_out, C_in/group, kh, kw]
    require<ShapeMismatch>(w.dim(1) * a.group == d.in_channels, "w.shape", to_string(w.shape()),
                           "w's second dimension times group (" + std::to_string(a.group) +
                               ") must equal x's channels " + std::to_string(d.in_channels));
    d.out_channels = w.dim(0);
  }
  d.kernel_h = w.dim(2);
  d.kernel_w = w.dim(3);
  detail::set_stride(d, a.strides, "strides");
  detail::set_dilation(d, a.dilations, "dilations");
  d.input_dtype = x.dtype();
  d.weight_dtype = w.dtype();
  d.input_layout = Layout::NCHW;
  d.weight_layout = w.layout();
  d.output_layout = Layout::NCHW;
  d.input_zero_point = x_zero_point;
  d.weight_zero_point = w_zero_point;
  // The integer operators carry no scales: they are metadata of the int32 scheme, 1 stands in.
  d.scheme.kind = SchemeKind::int32;
  d.output_dtype = DType::s32;
  return d;
}

Axis axis_of(const ProblemDesc& d, bool height) {
  if (height) return {d.in_height, d.kernel_h, d.stride_h, d.dilation_h, d.output_pad_h};
  return {d.in_width, d.kernel_w, d.stride_w, d.dilation_w, d.output_pad_w};
}

// Every value the padding rules compute with must be in range first, so that their arithmetic
// cannot overflow and an error names the attribute the caller gave, not a padding derived from it.
void require_axis_attributes(const ProblemDesc& d) {
  using detail::kMaxSize;
  const auto in_range = [](std::int64_t v) { return v >= 1 && v <= kMaxSize; };
  require(in_range(d.stride_h) && in_range(d.stride_w), "strides",
          to_string(Shape{d.stride_h, d.stride_w}), "every stride must be between 1 and 2^31 - 1");
  require(in_range(d.dilation_h) && in_range(d.dilation_w), "dilations",
          to_string(Shape{d.dilation_h, d.dilation_w}),
          "every dilation must be between 1 and 2^31 - 1");
  require<ShapeMismatch>(in_range(d.in_height) && in_range(d.in_width), "x.shape",
                         to_string(Shape{d.batch, d.in_channels, d.in_height, d.in_width}),
                         "spatial sizes must be between 1 and 2^31 - 1");
  require<ShapeMismatch>(in_range(d.kernel_h) && in_range(d.kernel_w), "w.shape",
                         to_string(Shape{d.kernel_h, d.kernel_w}),
                         "kernel sizes must be between 1 and 2^31 - 1");
}

// ConvTranspose's output_padding and output_shape, before they enter the padding arithmetic.
void require_transpose_attributes(const ConvTransposeAttributes& a) {
  for (std::int64_t v : a.output_padding) {
    require(v >= 0 && v <= detail::kMaxSize, "output_padding", to_string(Shape(a.output_padding)),
            "every output padding must be between 0 and 2^31 - 1 (and below max(stride, "
            "dilation))");
  }
  for (std::size_t i = 0; i < a.output_shape.size(); ++i) {
    const std::int64_t v = a.output_shape[i];
    require<ShapeMismatch>(v >= 1 && v <= detail::kMaxSize,
                           "output_shape[" + std::to_string(i) + "]", v,
                           "an output size must be between 1 and 2^31 - 1");
  }
}

// ONNX's attribute and input names of the fields a ProblemDesc built here holds.
constexpr detail::FieldName kFieldNames[] = {
    {"stride_h", "strides[0]"},
    {"stride_w", "strides[1]"},
    {"dilation_h", "dilations[0]"},
    {"dilation_w", "dilations[1]"},
    {"pad_top", "pads[0]"},
    {"pad_left", "pads[1]"},
    {"pad_bottom", "pads[2]"},
    {"pad_right", "pads[3]"},
    {"output_padding_h", "output_padding[0]"},
    {"output_padding_w", "output_padding[1]"},
    {"groups", "group"},
    {"input_scale", "x_scale"},
    {"input_zero_point", "x_zero_point"},
    {"weight_scale", "w_scale"},
    {"weight_zero_point", "w_zero_point"},
    {"output_scale", "y_scale"},
    {"output_zero_point", "y_zero_point"},
    {"input", "x"},
    {"weight", "w"},
    {"bias", "B"},
    {"batch", "x.shape[0]"},
    {"in_channels", "x.shape[1]"},
    {"in_height", "x.shape[2]"},
    {"in_width", "x.shape[3]"},
};

// QLinearConv's `semantics`: whose numbers it gives (SPEC §4 onnx or onnxruntime).
SchemeKind qlinear_conv_scheme(std::string_view semantics) {
  if (semantics == "reference") return SchemeKind::onnx;
  if (semantics == "onnxruntime") return SchemeKind::onnxruntime;
  fail("semantics", semantics,
       "must be \"reference\" (the ONNX reference implementation) or "
       "\"onnxruntime\" (ONNX Runtime's CPU kernels)");
}

}  // namespace

Tensor qlinear_conv(const ConstTensorView& x, double x_scale, std::int32_t x_zero_point,
                    const ConstTensorView& w, const std::vector<double>& w_scale,
                    const std::vector<std::int32_t>& w_zero_point, double y_scale,
                    std::int32_t y_zero_point, std::optional<std::span<const std::int32_t>> B,
                    const ConvAttributes& attributes, DType y_dtype, std::string_view semantics) {
  return detail::in_face_words(kFieldNames, [&] {
    const SchemeKind scheme = qlinear_conv_scheme(semantics);
    require(y_dtype == DType::u8 || y_dtype == DType::s8, "y_dtype", to_string(y_dtype),
            "QLinearConv outputs uint8 or int8 (the type of y_zero_point)");
    ProblemDesc d = describe(OpKind::conv2d, x, w, x_zero_point, w_zero_point, attributes);
    require_axis_attributes(d);
    detail::set_padding(d, conv_padding(attributes, axis_of(d, true), axis_of(d, false)));
    d.input_scale = x_scale;
    d.weight_scale = w_scale;
    d.output_scale = y_scale;
    d.output_zero_point = y_zero_point;
    d.output_dtype = y_dtype;
    d.scheme.kind = scheme;
    d.has_bias = B.has_value();
    require<ShapeMismatch>(!B || static_cast<std::int64_t>(B->size()) == d.out_channels, "B.size",
                           B ? B->size() : 0,
                           "QLinearConv's B holds one value per output channel (" +
                               std::to_string(d.out_channels) + ")");
    const BiasView bias = B ? BiasView(*B) : BiasView();
    return detail::run_once(Problem(std::move(d)), w, x, bias, attributes.threads);
  });
}

Tensor conv_integer(const ConstTensorView& x, ConstTensorView w, std::int32_t x_zero_point,
                    const std::vector<std::int32_t>& w_zero_point,
                    const ConvAttributes& attributes) {
  return detail::in_face_words(kFieldNames, [&] {
    ProblemDesc d = describe(OpKind::conv2d, x, w, x_zero_point, w_zero_point, attributes);
    require_axis_attributes(d);
    detail::set_padding(d, conv_padding(attributes, axis_of(d, true), axis_of(d, false)));
    return detail::run_once(Problem(std::move(d)), w, x, {}, attributes.threads);
  });
}

Tensor conv_transpose_integer(const ConstTensorView& x, ConstTensorView w,
                              std::int32_t x_zero_point,
                              const std::vector<std::int32_t>& w_zero_point,
                              const ConvTransposeAttributes& attributes) {
  return detail::in_face_words(kFieldNames, [&] {
    ProblemDesc d =
        describe(OpKind::conv2d_transpose, x, w, x_zero_point, w_zero_point, attributes);
    require_axis_attributes(d);
    require_transpose_attributes(attributes);
    detail::set_output_padding(d, attributes.output_padding, "output_padding");
    detail::set_padding(d, transpose_padding(attributes, axis_of(d, true), axis_of(d, false)));
    return detail::run_once(Problem(std::move(d)), w, x, {}, attributes.threads);
  });
}

}  // namespace qconv::onnx
