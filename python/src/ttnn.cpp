// SPDX-License-Identifier: Apache-2.0
// Preparation face after ttnn: Conv2dConfig, ComputeConfig, prepare_conv_weights,
// prepare_conv_bias and conv2d with prepared or unprepared weights.
#include "qconv/faces/ttnn.hpp"

#include <pybind11/stl.h>

#include <cstring>
#include <optional>
#include <system_error>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/error.hpp"
#include "qconv/scheme.hpp"
#include "without_gil.hpp"

namespace qconv::python {
namespace {

using ttnn::ComputeConfig;
using ttnn::Conv2dConfig;
using ttnn::PreparedBias;
using ttnn::PreparedWeights;

// The geometry arguments every ttnn function repeats, converted once, in ttnn's names.
struct Geometry {
  std::int64_t in_channels, out_channels, batch_size, input_height, input_width;
  std::array<std::int64_t, 2> kernel_size, stride, dilation;
  std::vector<std::int64_t> padding;
  std::int64_t groups;
};

Geometry geometry(py::handle in_channels, py::handle out_channels, py::handle batch_size,
                  py::handle input_height, py::handle input_width, py::handle kernel_size,
                  py::handle stride, py::handle padding, py::handle dilation, py::handle groups) {
  return {integer(in_channels, "in_channels"),
          integer(out_channels, "out_channels"),
          integer(batch_size, "batch_size"),
          integer(input_height, "input_height"),
          integer(input_width, "input_width"),
          pair(kernel_size, "kernel_size"),
          pair(stride, "stride"),
          pair(dilation, "dilation"),
          int64s(padding, "padding"),
          integer(groups, "groups")};
}

// The geometry arguments' names, in the order of Geometry and of every ttnn signature.
#define QCONV_TTNN_GEOMETRY_ARGS                                                                   \
  py::arg("in_channels"), py::arg("out_channels"), py::arg("batch_size"), py::arg("input_height"), \
      py::arg("input_width"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"),       \
      py::arg("dilation")

// A config argument: None means the defaults; anything else must be the config class.
template <class Config>
Config config_or_default(py::handle config, std::string_view field) {
  if (config.is_none()) return Config{};
  if (!py::isinstance<Config>(config)) {
    throw py::type_error(std::string(field) + " must be a qconv." +
                         std::string(py::str(py::type::of<Config>().attr("__name__"))) +
                         " or None, got " + std::string(py::repr(config)));
  }
  return config.cast<Config>();
}

// Unprepared weights: the values (kept alive by `array`) with their scale and zero point.
struct WeightsArgument {
  ArrayView array;
  ttnn::QuantizedWeights weights;
};

WeightsArgument quantized_weights(py::handle values, py::handle scale, py::handle zero_point,
                                  const std::string& weights_format) {
  WeightsArgument w{
      borrow_quantized(values, "weight_tensor", parse_layout(weights_format, "weights_format")),
      {}};
  w.weights = {w.array.view, doubles(scale, "weight_tensor.scale"),
               int32s(zero_point, "weight_tensor.zero_point")};
  return w;
}

// The bias in the element type the scheme takes: s32, or float for the PyTorch schemes.
ArrayView bias_array(py::handle bias, const ComputeConfig& compute) {
  const bool wants_float = takes_float_bias(parse_scheme(compute.scheme, "compute_config.scheme"));
  return convert(bias, "bias_tensor", Layout::X, wants_float ? DType::f32 : DType::s32);
}

// ttnn's return convention: the output alone, or a tuple of the output, then
// (out_height, out_width) with return_output_dim, then (weights, bias) with
// return_weights_and_bias.
py::object conv2d_result(ttnn::Conv2dResult&& result, bool return_output_dim,
                         bool return_weights_and_bias) {
  py::object output = to_numpy(std::move(result.output));
  if (!return_output_dim && !return_weights_and_bias) return output;
  py::list parts;
  parts.append(output);
  if (return_output_dim) {
    const auto& dim = result.output_dim.value();
    parts.append(py::make_tuple(dim[0], dim[1]));
  }
  if (return_weights_and_bias) {
    parts.append(py::make_tuple(result.weights ? py::cast(std::move(*result.weights)) : py::none(),
                                result.bias ? py::cast(std::move(*result.bias)) : py::none()));
  }
  return py::tuple(parts);
}

// "Conv2dConfig(activation='relu', ...)": every field, as a keyword constructor call would
// give it, read through the bound properties in their order of definition.
std::string keyword_repr(py::handle self) {
  const py::handle type = py::type::handle_of(self);
  const py::object property = py::module_::import("builtins").attr("property");
  std::string out = type.attr("__name__").cast<std::string>() + "(";
  const char* separator = "";
  for (const auto item : type.attr("__dict__").cast<py::dict>()) {
    if (!py::isinstance(item.second, property)) continue;
    const auto name = item.first.cast<std::string>();
    out += separator + name + "=" + py::repr(self.attr(name.c_str())).cast<std::string>();
    separator = ", ";
  }
  return out + ")";
}

std::pair<double, double> clamp_bounds(py::handle value) {
  const std::vector<double> bounds = doubles(value, "clamp");
  if (bounds.size() != 2) {
    throw InvalidArgument("clamp = " + std::string(py::repr(value)) +
                          ": holds the two real bounds (lo, hi)");
  }
  return {bounds[0], bounds[1]};
}

// A config field: read as its C++ type, written from any Python value through `convert`, which
// names the field in every error.
template <class Class, class Field, class Convert>
void def_field(py::class_<Class>& cls, const char* name, Field Class::*member, Convert convert) {
  cls.def_property(
      name, [member](const Class& c) { return c.*member; },
      [member, convert, name](Class& c, py::handle value) { c.*member = convert(value, name); });
}

std::string text_field(py::handle v, const char* name) { return text(v, name); }

void bind_configs(py::module_& m) {
  const Conv2dConfig d{};
  py::class_<Conv2dConfig> conv(m, "Conv2dConfig");
  conv.def(
      py::init([](py::handle activation, py::handle clamp, py::handle input_dtype,
                  py::handle output_layout, py::handle dtype, py::handle threads,
                  py::handle algorithm, py::handle input_zero_point, py::handle allow_wraparound) {
        return Conv2dConfig{text(activation, "activation"),
                            clamp_bounds(clamp),
                            text(input_dtype, "input_dtype"),
                            text(output_layout, "output_layout"),
                            text(dtype, "dtype"),
                            int_arg(threads, "threads"),
                            text(algorithm, "algorithm"),
                            optional_int32(input_zero_point, "input_zero_point"),
                            boolean(allow_wraparound, "allow_wraparound")};
      }),
      py::kw_only(), py::arg("activation") = d.activation,
      py::arg("clamp") = py::make_tuple(d.clamp.first, d.clamp.second),
      py::arg("input_dtype") = d.input_dtype, py::arg("output_layout") = d.output_layout,
      py::arg("dtype") = d.dtype, py::arg("threads") = d.threads,
      py::arg("algorithm") = d.algorithm, py::arg("input_zero_point") = py::none(),
      py::arg("allow_wraparound") = d.allow_wraparound);
  def_field(conv, "activation", &Conv2dConfig::activation, text_field);
  def_field(conv, "clamp", &Conv2dConfig::clamp,
            [](py::handle v, const char*) { return clamp_bounds(v); });
  def_field(conv, "input_dtype", &Conv2dConfig::input_dtype, text_field);
  def_field(conv, "output_layout", &Conv2dConfig::output_layout, text_field);
  def_field(conv, "dtype", &Conv2dConfig::dtype, text_field);
  def_field(conv, "threads", &Conv2dConfig::threads, int_arg);
  def_field(conv, "algorithm", &Conv2dConfig::algorithm, text_field);
  def_field(conv, "input_zero_point", &Conv2dConfig::input_zero_point, optional_int32);
  def_field(conv, "allow_wraparound", &Conv2dConfig::allow_wraparound, boolean);
  conv.def("__repr__", &keyword_repr);

  const ComputeConfig c{};
  py::class_<ComputeConfig> compute(m, "ComputeConfig");
  compute.def(
      py::init([](py::handle scheme, py::handle rounding, py::handle input_scale,
                  py::handle input_zero_point, py::handle output_scale,
                  py::handle output_zero_point, py::handle multiplier_q31, py::handle shift) {
        return ComputeConfig{text(scheme, "scheme"),
                             text(rounding, "rounding"),
                             number(input_scale, "input_scale"),
                             int32(input_zero_point, "input_zero_point"),
                             number(output_scale, "output_scale"),
                             int32(output_zero_point, "output_zero_point"),
                             int32_list(multiplier_q31, "multiplier_q31"),
                             int32_list(shift, "shift")};
      }),
      py::kw_only(), py::arg("scheme") = c.scheme, py::arg("rounding") = c.rounding,
      py::arg("input_scale") = c.input_scale, py::arg("input_zero_point") = c.input_zero_point,
      py::arg("output_scale") = c.output_scale, py::arg("output_zero_point") = c.output_zero_point,
      py::arg("multiplier_q31") = py::list(), py::arg("shift") = py::list());
  def_field(compute, "scheme", &ComputeConfig::scheme, text_field);
  def_field(compute, "rounding", &ComputeConfig::rounding, text_field);
  def_field(compute, "input_scale", &ComputeConfig::input_scale,
            [](py::handle v, const char* name) { return number(v, name); });
  def_field(compute, "input_zero_point", &ComputeConfig::input_zero_point,
            [](py::handle v, const char* name) { return int32(v, name); });
  def_field(compute, "output_scale", &ComputeConfig::output_scale,
            [](py::handle v, const char* name) { return number(v, name); });
  def_field(compute, "output_zero_point", &ComputeConfig::output_zero_point,
            [](py::handle v, const char* name) { return int32(v, name); });
  def_field(compute, "multiplier_q31", &ComputeConfig::multiplier_q31,
            [](py::handle v, const char* name) { return int32_list(v, name); });
  def_field(compute, "shift", &ComputeConfig::shift,
            [](py::handle v, const char* name) { return int32_list(v, name); });
  compute.def("__repr__", &keyword_repr);
}

void bind_prepared(py::module_& m) {
  py::class_<PreparedWeights> weights(m, "PreparedWeights");
  weights
      .def_property_readonly("engine",
                             [](const PreparedWeights& w) { return to_str(w.plan().engine()); })
      .def_property_readonly(
          "input_layout",
          [](const PreparedWeights& w) {
            return std::string(to_string(w.plan().problem().desc().input_layout));
          })
      .def_property_readonly(
          "weights_format",
          [](const PreparedWeights& w) {
            return std::string(to_string(w.plan().problem().desc().weight_layout));
          })
      .def("describe", [](const PreparedWeights& w) { return to_str(w.plan().describe()); })
      .def("__repr__", [](const PreparedWeights& w) {
        return to_str("<qconv.PreparedWeights " + w.plan().describe() + ">");
      });
  bind_serialization(weights);
  py::class_<PreparedBias>(m, "PreparedBias").def("__repr__", [](const PreparedBias& b) {
    return to_str("<qconv.PreparedBias for " + b.problem().summary() + ">");
  });
}

// The input's layout: the one named, else the one the weights were prepared for.
Layout input_layout_of(py::handle input_layout, const PreparedWeights& weights) {
  if (input_layout.is_none()) return weights.plan().problem().desc().input_layout;
  return parse_layout(text(input_layout, "input_layout"), "input_layout");
}

}  // namespace

void bind_ttnn(py::module_& m) {
  bind_configs(m);
  bind_prepared(m);

  m.def(
      "ttnn_prepare_conv_weights",
      [](py::handle values, py::handle scale, py::handle zero_point, py::handle input_layout,
         py::handle weights_format, py::handle in_channels, py::handle out_channels,
         py::handle batch_size, py::handle input_height, py::handle input_width,
         py::handle kernel_size, py::handle stride, py::handle padding, py::handle dilation,
         py::handle has_bias, py::handle groups, py::handle conv_config,
         py::handle compute_config) {
        const std::string layout = text(input_layout, "input_layout");
        const std::string format = text(weights_format, "weights_format");
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const bool bias = boolean(has_bias, "has_bias");
        const WeightsArgument w = quantized_weights(values, scale, zero_point, format);
        const auto conv = config_or_default<Conv2dConfig>(conv_config, "conv_config");
        const auto compute = config_or_default<ComputeConfig>(compute_config, "compute_config");
        return without_gil([&] {
          return ttnn::prepare_conv_weights(w.weights, layout, format, g.in_channels,
                                            g.out_channels, g.batch_size, g.input_height,
                                            g.input_width, g.kernel_size, g.stride, g.padding,
                                            g.dilation, bias, g.groups, conv, compute);
        });
      },
      py::arg("values"), py::arg("scale"), py::arg("zero_point"), py::arg("input_layout"),
      py::arg("weights_format"), QCONV_TTNN_GEOMETRY_ARGS, py::arg("has_bias"), py::arg("groups"),
      py::arg("conv_config"), py::arg("compute_config"));

  m.def(
      "ttnn_prepare_conv_bias",
      [](py::handle bias_tensor, py::handle input_layout, py::handle in_channels,
         py::handle out_channels, py::handle batch_size, py::handle input_height,
         py::handle input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, py::handle groups, py::handle conv_config,
         py::handle compute_config) {
        const std::string layout = text(input_layout, "input_layout");
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const auto conv = config_or_default<Conv2dConfig>(conv_config, "conv_config");
        const auto compute = config_or_default<ComputeConfig>(compute_config, "compute_config");
        const ArrayView b = bias_array(bias_tensor, compute);
        return without_gil([&] {
          return ttnn::prepare_conv_bias(b.view, layout, g.in_channels, g.out_channels,
                                         g.batch_size, g.input_height, g.input_width, g.kernel_size,
                                         g.stride, g.padding, g.dilation, g.groups, conv, compute);
        });
      },
      py::arg("bias_tensor"), py::arg("input_layout"), QCONV_TTNN_GEOMETRY_ARGS, py::arg("groups"),
      py::arg("conv_config"), py::arg("compute_config"));

  m.def(
      "ttnn_conv2d_prepared",
      [](py::handle input_tensor, const PreparedWeights& weight_tensor, py::handle in_channels,
         py::handle out_channels, py::handle batch_size, py::handle input_height,
         py::handle input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, py::handle groups, const PreparedBias* bias_tensor,
         py::handle conv_config, py::handle compute_config, py::handle return_output_dim,
         py::handle return_weights_and_bias, py::handle input_layout) {
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        // A named input_layout tags the input: one that differs from the preparation's is then
        // refused by conv2d as the mismatch it is.
        const ArrayView x = borrow_quantized(input_tensor, "input_tensor",
                                             input_layout_of(input_layout, weight_tensor));
        const auto conv = config_or_default<Conv2dConfig>(conv_config, "conv_config");
        const auto compute = config_or_default<ComputeConfig>(compute_config, "compute_config");
        const bool output_dim = boolean(return_output_dim, "return_output_dim");
        const bool weights_and_bias = boolean(return_weights_and_bias, "return_weights_and_bias");
        ttnn::Conv2dResult result = without_gil([&] {
          return ttnn::conv2d(x.view, weight_tensor, g.in_channels, g.out_channels, g.batch_size,
                              g.input_height, g.input_width, g.kernel_size, g.stride, g.padding,
                              g.dilation, g.groups, bias_tensor, conv, compute, output_dim,
                              weights_and_bias);
        });
        return conv2d_result(std::move(result), output_dim, weights_and_bias);
      },
      py::arg("input_tensor"), py::arg("weight_tensor"), QCONV_TTNN_GEOMETRY_ARGS,
      py::arg("groups"), py::arg("bias_tensor"), py::arg("conv_config"), py::arg("compute_config"),
      py::arg("return_output_dim"), py::arg("return_weights_and_bias"), py::arg("input_layout"));

  m.def(
      "ttnn_conv2d",
      [](py::handle input_tensor, py::handle input_layout, py::handle values, py::handle scale,
         py::handle zero_point, py::handle weights_format, py::handle in_channels,
         py::handle out_channels, py::handle batch_size, py::handle input_height,
         py::handle input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, py::handle groups, py::handle bias_tensor, py::handle conv_config,
         py::handle compute_config, py::handle return_output_dim,
         py::handle return_weights_and_bias) {
        const std::string format = text(weights_format, "weights_format");
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const ArrayView x =
            borrow_quantized(input_tensor, "input_tensor",
                             parse_layout(text(input_layout, "input_layout"), "input_layout"));
        const WeightsArgument w = quantized_weights(values, scale, zero_point, format);
        const auto conv = config_or_default<Conv2dConfig>(conv_config, "conv_config");
        const auto compute = config_or_default<ComputeConfig>(compute_config, "compute_config");
        std::optional<ArrayView> b;
        if (!bias_tensor.is_none()) b = bias_array(bias_tensor, compute);
        const std::optional<ConstTensorView> bias =
            b ? std::optional<ConstTensorView>(b->view) : std::nullopt;
        const bool output_dim = boolean(return_output_dim, "return_output_dim");
        const bool weights_and_bias = boolean(return_weights_and_bias, "return_weights_and_bias");
        ttnn::Conv2dResult result = without_gil([&] {
          return ttnn::conv2d(x.view, w.weights, format, g.in_channels, g.out_channels,
                              g.batch_size, g.input_height, g.input_width, g.kernel_size, g.stride,
                              g.padding, g.dilation, g.groups, bias, conv, compute, output_dim,
                              weights_and_bias);
        });
        return conv2d_result(std::move(result), output_dim, weights_and_bias);
      },
      py::arg("input_tensor"), py::arg("input_layout"), py::arg("values"), py::arg("scale"),
      py::arg("zero_point"), py::arg("weights_format"), QCONV_TTNN_GEOMETRY_ARGS, py::arg("groups"),
      py::arg("bias_tensor"), py::arg("conv_config"), py::arg("compute_config"),
      py::arg("return_output_dim"), py::arg("return_weights_and_bias"));
}

}  // namespace qconv::python
