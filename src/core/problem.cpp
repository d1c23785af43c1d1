// SPDX-License-Identifier: Apache-2.0
// Validation of a ProblemDesc (SPEC §2, §4, §6): every rule lives here, checked once.
#include "qconv/problem.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "core/check.hpp"
#include "core/problem_fields.hpp"
#include "core/quantization_checks.hpp"
#include "core/weight_layout.hpp"
#include "output/output_stage.hpp"
#include "qconv/error.hpp"

namespace qconv {
namespace {

using detail::require;
using detail::validate_scale;
using detail::validate_zero_point;

using detail::kMaxSize;

void require_size(std::int64_t value, std::string_view field) {
  require(value >= 1 && value <= kMaxSize, field, value, "must be between 1 and 2^31 - 1");
}

void require_padding(std::int64_t value, std::string_view field) {
  require(value >= 0 && value <= kMaxSize, field, value, "must be between 0 and 2^31 - 1");
}

void validate_geometry(const ProblemDesc& d) {
  require_size(d.batch, "batch");
  require_size(d.in_channels, "in_channels");
  require_size(d.in_height, "in_height");
  require_size(d.in_width, "in_width");
  require_size(d.out_channels, "out_channels");
  require_size(d.groups, "groups");
  require_size(d.kernel_h, "kernel_h");
  require_size(d.kernel_w, "kernel_w");
  require_size(d.stride_h, "stride_h");
  require_size(d.stride_w, "stride_w");
  require_size(d.dilation_h, "dilation_h");
  require_size(d.dilation_w, "dilation_w");
  require_padding(d.pad_top, "pad_top");
  require_padding(d.pad_bottom, "pad_bottom");
  require_padding(d.pad_left, "pad_left");
  require_padding(d.pad_right, "pad_right");
  require(d.in_channels % d.groups == 0, "groups", d.groups,
          "must divide in_channels = " + std::to_string(d.in_channels));
  require(d.out_channels % d.groups == 0, "groups", d.groups,
          "must divide out_channels = " + std::to_string(d.out_channels));
  if (d.op == OpKind::conv2d) {
    require(d.output_pad_h == 0, "output_padding_h", d.output_pad_h,
            "output padding applies to conv2d_transpose only; must be 0 for conv2d");
    require(d.output_pad_w == 0, "output_padding_w", d.output_pad_w,
            "output padding applies to conv2d_transpose only; must be 0 for conv2d");
  } else {
    const auto limit_h = std::max(d.stride_h, d.dilation_h);
    const auto limit_w = std::max(d.stride_w, d.dilation_w);
    require(d.output_pad_h >= 0 && d.output_pad_h < limit_h, "output_padding_h", d.output_pad_h,
            "must satisfy 0 <= output_padding < max(stride_h, dilation_h) = " +
                std::to_string(limit_h));
    require(d.output_pad_w >= 0 && d.output_pad_w < limit_w, "output_padding_w", d.output_pad_w,
            "must satisfy 0 <= output_padding < max(stride_w, dilation_w) = " +
                std::to_string(limit_w));
  }
}

// SPEC §2: output size of a convolution or a transposed convolution along one axis.
std::int64_t output_extent(const ProblemDesc& d, std::int64_t in, std::int64_t k, std::int64_t s,
                           std::int64_t dil, std::int64_t pad_begin, std::int64_t pad_end,
                           std::int64_t out_pad, std::string_view axis) {
  const std::int64_t span = (k - 1) * dil + 1;
  std::int64_t out = 0;
  std::string rule;
  if (d.op == OpKind::conv2d) {
    const std::int64_t padded = in + pad_begin + pad_end - span;
    out = padded < 0 ? 0 : padded / s + 1;
    rule = "the padded input (" + std::to_string(in + pad_begin + pad_end) +
           ") is smaller than the dilated kernel (" + std::to_string(span) + ")";
  } else {
    out = s * (in - 1) + span - pad_begin - pad_end + out_pad;
    rule = "stride*(in-1) + (k-1)*dilation + 1 - padding + output_padding must be at least 1";
  }
  if (out > kMaxSize) rule = "an output extent must not exceed 2^31 - 1";
  require<ShapeMismatch>(out >= 1 && out <= kMaxSize, "output_" + std::string(axis), out, rule);
  return out;
}

void require_channel_vector_length(std::size_t length, std::int64_t out_channels,
                                   std::string_view field) {
  require(length == 1 || static_cast<std::int64_t>(length) == out_channels,
          std::string(field) + ".size", length,
          "a per-channel vector holds 1 value or out_channels = " + std::to_string(out_channels));
}

void validate_types_and_layouts(const ProblemDesc& d) {
  require(d.input_dtype == DType::u8 || d.input_dtype == DType::s8, "input_dtype",
          to_string(d.input_dtype), "activations are uint8 or int8");
  require(d.weight_dtype == DType::u8 || d.weight_dtype == DType::s8, "weight_dtype",
          to_string(d.weight_dtype), "weights are int8 or uint8");
  if (d.scheme.kind == SchemeKind::int32) {
    require(d.output_dtype == DType::s32, "output_dtype", to_string(d.output_dtype),
            "the int32 scheme outputs the s32 accumulator");
  } else {
    require(d.output_dtype != DType::f32, "output_dtype", to_string(d.output_dtype),
            "outputs are uint8, int8 or int32");
  }
  require(is_activation_layout(d.input_layout), "input_layout", to_string(d.input_layout),
          "activations are NCHW or NHWC");
  require(is_activation_layout(d.output_layout), "output_layout", to_string(d.output_layout),
          "activations are NCHW or NHWC");
  if (d.op == OpKind::conv2d) {
    require(d.weight_layout == Layout::OIHW || d.weight_layout == Layout::OHWI ||
                d.weight_layout == Layout::HWIO || d.weight_layout == Layout::HWOI,
            "weight_layout", to_string(d.weight_layout),
            "conv2d weights are OIHW, OHWI, HWIO or HWOI");
    require(d.weight_layout != Layout::HWOI || d.groups == d.in_channels, "weight_layout", "HWOI",
            "HWOI ([kh, kw, C, multiplier]) is for depthwise problems (groups == in_channels)");
  } else {
    require(d.weight_layout == Layout::IOHW || d.weight_layout == Layout::OIHW, "weight_layout",
            to_string(d.weight_layout), "conv2d_transpose weights are IOHW, or OIHW when stated");
  }
}

void validate_quantization(const ProblemDesc& d) {
  validate_scale(d.input_scale, "input_scale");
  validate_zero_point(d.input_zero_point, d.input_dtype, "input_zero_point");
  require(!d.weight_scale.empty(), "weight_scale.size", 0,
          "needs 1 value or one per output channel");
  require(!d.weight_zero_point.empty(), "weight_zero_point.size", 0,
          "needs 1 value or one per output channel");
  require_channel_vector_length(d.weight_scale.size(), d.out_channels, "weight_scale");
  require_channel_vector_length(d.weight_zero_point.size(), d.out_channels, "weight_zero_point");
  for (std::size_t i = 0; i < d.weight_scale.size(); ++i) {
    validate_scale(d.weight_scale[i], "weight_scale[" + std::to_string(i) + "]");
  }
  for (std::size_t i = 0; i < d.weight_zero_point.size(); ++i) {
    validate_zero_point(d.weight_zero_point[i], d.weight_dtype,
                        "weight_zero_point[" + std::to_string(i) + "]");
  }
  validate_scale(d.output_scale, "output_scale");
  if (d.scheme.kind == SchemeKind::int32) {
    require(d.output_zero_point == 0, "output_zero_point", d.output_zero_point,
            "the int32 scheme has output zero point 0");
  } else {
    validate_zero_point(d.output_zero_point, d.output_dtype, "output_zero_point");
  }
}

void validate_scheme_vectors(const ProblemDesc& d) {
  const auto& s = d.scheme;
  const bool tflite = s.kind == SchemeKind::tflite || s.kind == SchemeKind::tflite_single;
  if (!tflite) {
    require(s.multiplier_q31.empty() && s.shift.empty(), "scheme.multiplier_q31.size",
            s.multiplier_q31.size(), "given multipliers belong to the tflite schemes only");
    return;
  }
  require(s.multiplier_q31.size() == s.shift.size(), "scheme.shift.size", s.shift.size(),
          "must equal scheme.multiplier_q31.size = " + std::to_string(s.multiplier_q31.size()));
  if (s.multiplier_q31.empty()) return;
  require_channel_vector_length(s.multiplier_q31.size(), d.out_channels, "scheme.multiplier_q31");
  for (std::size_t i = 0; i < s.multiplier_q31.size(); ++i) {
    require(s.multiplier_q31[i] >= 0, "scheme.multiplier_q31[" + std::to_string(i) + "]",
            s.multiplier_q31[i], "a Q31 multiplier is in [0, 2^31 - 1]");
    require(s.shift[i] >= -31 && s.shift[i] <= 30, "scheme.shift[" + std::to_string(i) + "]",
            s.shift[i], "a shift is in [-31, 30]");
  }
}

void validate_activation(const ProblemDesc& d) {
  const auto& a = d.activation;
  if (a.kind != Activation::Kind::clamp) return;
  require(!std::isnan(a.min), "activation.min", a.min, "a clamp bound must not be NaN");
  require(!std::isnan(a.max), "activation.max", a.max, "a clamp bound must not be NaN");
  require(a.min <= a.max, "activation.min", a.min,
          "must not exceed activation.max = " + detail::describe_value(a.max));
  require(d.scheme.kind != SchemeKind::int32, "activation", "clamp",
          "the int32 scheme has no output scale to quantize clamp bounds with (use relu or none)");
}

}  // namespace

std::string_view to_string(OpKind op) {
  return op == OpKind::conv2d ? "conv2d" : "conv2d_transpose";
}

Problem::Problem(ProblemDesc desc) : desc_(std::move(desc)) {
  const auto& d = desc_;
  require(d.op == OpKind::conv2d || d.op == OpKind::conv2d_transpose, "op", static_cast<int>(d.op),
          "must be conv2d or conv2d_transpose");
  validate_geometry(d);
  validate_types_and_layouts(d);
  out_height_ = output_extent(d, d.in_height, d.kernel_h, d.stride_h, d.dilation_h, d.pad_top,
                              d.pad_bottom, d.output_pad_h, "height");
  out_width_ = output_extent(d, d.in_width, d.kernel_w, d.stride_w, d.dilation_w, d.pad_left,
                             d.pad_right, d.output_pad_w, "width");
  (void)element_count(input_shape(), "input shape");
  (void)element_count(weight_shape(), "weight shape");
  (void)element_count(output_shape(), "output shape");
  validate_quantization(d);
  validate_scheme_vectors(d);
  validate_activation(d);
  // Derives every per-channel constant of the output scheme; throws where one is out of range
  // (a tflite shift above 30, a clamp range that is empty after quantization).
  (void)detail::OutputStage(d, BiasView{});
}

std::int64_t Problem::reduction_size() const {
  return in_channels_per_group() * desc_.kernel_h * desc_.kernel_w;
}

Shape Problem::input_shape(std::int64_t batch) const {
  const auto& d = desc_;
  if (d.input_layout == Layout::NCHW) return {batch, d.in_channels, d.in_height, d.in_width};
  return {batch, d.in_height, d.in_width, d.in_channels};
}

Shape Problem::output_shape(std::int64_t batch) const {
  const auto& d = desc_;
  if (d.output_layout == Layout::NCHW) return {batch, d.out_channels, out_height_, out_width_};
  return {batch, out_height_, out_width_, d.out_channels};
}

Shape Problem::weight_shape() const {
  const auto& d = desc_;
  const std::int64_t kh = d.kernel_h;
  const std::int64_t kw = d.kernel_w;
  if (transposed()) {
    if (d.weight_layout == Layout::IOHW) return {d.in_channels, out_channels_per_group(), kh, kw};
    return {d.out_channels, in_channels_per_group(), kh, kw};  // OIHW, stated explicitly
  }
  const std::int64_t o = d.out_channels;
  if (d.weight_layout == Layout::HWOI) return {kh, kw, d.in_channels, o / d.in_channels};
  const auto axes = detail::conv_weight_axes(d.weight_layout);
  return axes ? detail::weight_shape_of(*axes, o, in_channels_per_group(), kh, kw) : Shape{};
}

double Problem::weight_scale(std::int64_t o) const {
  const auto& v = desc_.weight_scale;
  return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(o)];
}

std::int32_t Problem::weight_zero_point(std::int64_t o) const {
  const auto& v = desc_.weight_zero_point;
  return v.size() == 1 ? v[0] : v[static_cast<std::size_t>(o)];
}

std::string Problem::summary() const {
  // The geometry, types, layouts and scheme, named as the field table names them (the
  // quantization is left to the error messages that need it).
  std::string out(to_string(desc_.op));
  detail::for_each_field(
      [&out, transposed = transposed()](const detail::FieldInfo& field, const auto& value) {
        if (!field.in_summary || field.name == "op") return;
        if (field.name.starts_with("output_padding") && !transposed) return;
        out += " " + std::string(field.name) + "=" + detail::field_text(value);
      },
      desc_);
  return out + " output=" + std::to_string(out_height_) + "x" + std::to_string(out_width_);
}

}  // namespace qconv
