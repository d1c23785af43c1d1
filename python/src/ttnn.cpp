// SPDX-License-Identifier: Apache-2.0
// Preparation face after ttnn: Conv2dConfig, ComputeConfig, prepare_conv_weights,
// prepare_conv_bias and conv2d with prepared or unprepared weights.
#include "qconv/faces/ttnn.hpp"

#include <pybind11/stl.h>
#include <pybind11/stl/filesystem.h>

#include <cstring>
#include <optional>
#include <system_error>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/scheme.hpp"
#include "qconv/serialize.hpp"
#include "without_gil.hpp"

namespace qconv::python {
namespace {

using ttnn::ComputeConfig;
using ttnn::Conv2dConfig;
using ttnn::PreparedBias;
using ttnn::PreparedWeights;

// The geometry arguments every ttnn function repeats, converted once.
struct Geometry {
  std::int64_t in_channels, out_channels, batch_size, input_height, input_width;
  std::array<std::int64_t, 2> kernel_size, stride, dilation;
  std::vector<std::int64_t> padding;
  std::int64_t groups;
};

Geometry geometry(std::int64_t in_channels, std::int64_t out_channels, std::int64_t batch_size,
                  std::int64_t input_height, std::int64_t input_width, py::handle kernel_size,
                  py::handle stride, py::handle padding, py::handle dilation, std::int64_t groups) {
  return {in_channels,
          out_channels,
          batch_size,
          input_height,
          input_width,
          pair(kernel_size, "kernel_size"),
          pair(stride, "stride"),
          pair(dilation, "dilation"),
          int64s(padding, "padding"),
          groups};
}

Conv2dConfig conv_config_or_default(const std::optional<Conv2dConfig>& config) {
  return config.value_or(Conv2dConfig{});
}
ComputeConfig compute_config_or_default(const std::optional<ComputeConfig>& config) {
  return config.value_or(ComputeConfig{});
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

// ttnn's return convention: the output alone, or a tuple with [out_height, out_width] and/or
// [weights, bias] after it.
py::object conv2d_result(ttnn::Conv2dResult&& result, bool return_output_dim,
                         bool return_weights_and_bias) {
  py::object output = to_numpy(std::move(result.output));
  if (!return_output_dim && !return_weights_and_bias) return output;
  py::list parts;
  parts.append(output);
  if (return_output_dim) {
    const auto& dim = result.output_dim.value();
    py::list out_dim;
    out_dim.append(dim[0]);
    out_dim.append(dim[1]);
    parts.append(out_dim);
  }
  if (return_weights_and_bias) {
    py::list prepared;
    prepared.append(result.weights ? py::cast(std::move(*result.weights)) : py::none());
    prepared.append(result.bias ? py::cast(std::move(*result.bias)) : py::none());
    parts.append(prepared);
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

void bind_configs(py::module_& m) {
  const Conv2dConfig d{};
  py::class_<Conv2dConfig>(m, "Conv2dConfig")
      .def(py::init([](std::string activation, std::pair<double, double> clamp,
                       std::string input_dtype, std::string output_layout, std::string dtype,
                       int threads, std::string algorithm,
                       std::optional<std::int32_t> input_zero_point, bool allow_wraparound) {
             return Conv2dConfig{
                 std::move(activation), clamp,   std::move(input_dtype), std::move(output_layout),
                 std::move(dtype),      threads, std::move(algorithm),   input_zero_point,
                 allow_wraparound};
           }),
           py::kw_only(), py::arg("activation") = d.activation, py::arg("clamp") = d.clamp,
           py::arg("input_dtype") = d.input_dtype, py::arg("output_layout") = d.output_layout,
           py::arg("dtype") = d.dtype, py::arg("threads") = d.threads,
           py::arg("algorithm") = d.algorithm, py::arg("input_zero_point") = d.input_zero_point,
           py::arg("allow_wraparound") = d.allow_wraparound)
      .def_readwrite("activation", &Conv2dConfig::activation)
      .def_readwrite("clamp", &Conv2dConfig::clamp)
      .def_readwrite("input_dtype", &Conv2dConfig::input_dtype)
      .def_readwrite("output_layout", &Conv2dConfig::output_layout)
      .def_readwrite("dtype", &Conv2dConfig::dtype)
      .def_readwrite("threads", &Conv2dConfig::threads)
      .def_readwrite("algorithm", &Conv2dConfig::algorithm)
      .def_readwrite("input_zero_point", &Conv2dConfig::input_zero_point)
      .def_readwrite("allow_wraparound", &Conv2dConfig::allow_wraparound)
      .def("__repr__", &keyword_repr);

  const ComputeConfig c{};
  py::class_<ComputeConfig>(m, "ComputeConfig")
      .def(py::init([](std::string scheme, std::string rounding, double input_scale,
                       std::int32_t input_zero_point, double output_scale,
                       std::int32_t output_zero_point, std::vector<std::int32_t> multiplier_q31,
                       std::vector<std::int32_t> shift) {
             return ComputeConfig{std::move(scheme),         std::move(rounding), input_scale,
                                  input_zero_point,          output_scale,        output_zero_point,
                                  std::move(multiplier_q31), std::move(shift)};
           }),
           py::kw_only(), py::arg("scheme") = c.scheme, py::arg("rounding") = c.rounding,
           py::arg("input_scale") = c.input_scale, py::arg("input_zero_point") = c.input_zero_point,
           py::arg("output_scale") = c.output_scale,
           py::arg("output_zero_point") = c.output_zero_point,
           py::arg("multiplier_q31") = c.multiplier_q31, py::arg("shift") = c.shift)
      .def_readwrite("scheme", &ComputeConfig::scheme)
      .def_readwrite("rounding", &ComputeConfig::rounding)
      .def_readwrite("input_scale", &ComputeConfig::input_scale)
      .def_readwrite("input_zero_point", &ComputeConfig::input_zero_point)
      .def_readwrite("output_scale", &ComputeConfig::output_scale)
      .def_readwrite("output_zero_point", &ComputeConfig::output_zero_point)
      .def_readwrite("multiplier_q31", &ComputeConfig::multiplier_q31)
      .def_readwrite("shift", &ComputeConfig::shift)
      .def("__repr__", &keyword_repr);
}

void bind_prepared(py::module_& m) {
  py::class_<PreparedWeights>(m, "PreparedWeights")
      .def_property_readonly(
          "engine", [](const PreparedWeights& w) { return std::string(w.plan().engine()); })
      .def_property_readonly(
          "input_layout",
          [](const PreparedWeights& w) {
            return std::string(to_string(w.plan().problem().desc().input_layout));
          })
      .def("describe", [](const PreparedWeights& w) { return w.plan().describe(); })
      .def(
          "save",
          [](const PreparedWeights& w, const std::filesystem::path& path,
             bool keep_original_weights) {
            py::gil_scoped_release release;
            save(w.plan(), path, SaveOptions{keep_original_weights});
          },
          py::arg("path"), py::arg("keep_original_weights") = false)
      .def(
          "to_bytes",
          [](const PreparedWeights& w, bool keep_original_weights) {
            const std::vector<std::byte> bytes =
                serialize(w.plan(), SaveOptions{keep_original_weights});
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          py::arg("keep_original_weights") = false)
      .def_static(
          "load",
          [](const std::filesystem::path& path) {
            py::gil_scoped_release release;
            return PreparedWeights(load(path));
          },
          py::arg("path"))
      .def_static(
          "from_bytes",
          [](const py::bytes& data) {
            const std::string_view view = data;
            return PreparedWeights(deserialize(
                std::span(reinterpret_cast<const std::byte*>(view.data()), view.size())));
          },
          py::arg("data"))
      .def("__repr__", [](const PreparedWeights& w) {
        return "<qconv.PreparedWeights " + w.plan().describe() + ">";
      });
  py::class_<PreparedBias>(m, "PreparedBias").def("__repr__", [](const PreparedBias& b) {
    return "<qconv.PreparedBias for " + b.problem().summary() + ">";
  });
}

}  // namespace

void bind_ttnn(py::module_& m) {
  bind_configs(m);
  bind_prepared(m);

  m.def(
      "ttnn_prepare_conv_weights",
      [](py::handle values, py::handle scale, py::handle zero_point, std::string input_layout,
         std::string weights_format, std::int64_t in_channels, std::int64_t out_channels,
         std::int64_t batch_size, std::int64_t input_height, std::int64_t input_width,
         py::handle kernel_size, py::handle stride, py::handle padding, py::handle dilation,
         bool has_bias, std::int64_t groups, std::optional<Conv2dConfig> conv_config,
         std::optional<ComputeConfig> compute_config) {
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const WeightsArgument w = quantized_weights(values, scale, zero_point, weights_format);
        const Conv2dConfig conv = conv_config_or_default(conv_config);
        const ComputeConfig compute = compute_config_or_default(compute_config);
        return without_gil([&] {
          return ttnn::prepare_conv_weights(w.weights, input_layout, weights_format, g.in_channels,
                                            g.out_channels, g.batch_size, g.input_height,
                                            g.input_width, g.kernel_size, g.stride, g.padding,
                                            g.dilation, has_bias, g.groups, conv, compute);
        });
      },
      py::arg("values"), py::arg("scale"), py::arg("zero_point"), py::arg("input_layout"),
      py::arg("weights_format"), py::arg("in_channels"), py::arg("out_channels"),
      py::arg("batch_size"), py::arg("input_height"), py::arg("input_width"),
      py::arg("kernel_size"), py::arg("stride"), py::arg("padding"), py::arg("dilation"),
      py::arg("has_bias"), py::arg("groups"), py::arg("conv_config"), py::arg("compute_config"));

  m.def(
      "ttnn_prepare_conv_bias",
      [](py::handle bias_tensor, std::string input_layout, std::int64_t in_channels,
         std::int64_t out_channels, std::int64_t batch_size, std::int64_t input_height,
         std::int64_t input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, std::int64_t groups, std::optional<Conv2dConfig> conv_config,
         std::optional<ComputeConfig> compute_config) {
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const Conv2dConfig conv = conv_config_or_default(conv_config);
        const ComputeConfig compute = compute_config_or_default(compute_config);
        const ArrayView b = bias_array(bias_tensor, compute);
        return without_gil([&] {
          return ttnn::prepare_conv_bias(b.view, input_layout, g.in_channels, g.out_channels,
                                         g.batch_size, g.input_height, g.input_width, g.kernel_size,
                                         g.stride, g.padding, g.dilation, g.groups, conv, compute);
        });
      },
      py::arg("bias_tensor"), py::arg("input_layout"), py::arg("in_channels"),
      py::arg("out_channels"), py::arg("batch_size"), py::arg("input_height"),
      py::arg("input_width"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("conv_config"), py::arg("compute_config"));

  m.def(
      "ttnn_conv2d_prepared",
      [](py::handle input_tensor, const PreparedWeights& weight_tensor, std::int64_t in_channels,
         std::int64_t out_channels, std::int64_t batch_size, std::int64_t input_height,
         std::int64_t input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, std::int64_t groups, const PreparedBias* bias_tensor,
         std::optional<Conv2dConfig> conv_config, std::optional<ComputeConfig> compute_config,
         bool return_output_dim, bool return_weights_and_bias) {
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const ArrayView x = borrow_quantized(input_tensor, "input_tensor",
                                             weight_tensor.plan().problem().desc().input_layout);
        const Conv2dConfig conv = conv_config_or_default(conv_config);
        const ComputeConfig compute = compute_config_or_default(compute_config);
        ttnn::Conv2dResult result = without_gil([&] {
          return ttnn::conv2d(x.view, weight_tensor, g.in_channels, g.out_channels, g.batch_size,
                              g.input_height, g.input_width, g.kernel_size, g.stride, g.padding,
                              g.dilation, g.groups, bias_tensor, conv, compute, return_output_dim,
                              return_weights_and_bias);
        });
        return conv2d_result(std::move(result), return_output_dim, return_weights_and_bias);
      },
      py::arg("input_tensor"), py::arg("weight_tensor"), py::arg("in_channels"),
      py::arg("out_channels"), py::arg("batch_size"), py::arg("input_height"),
      py::arg("input_width"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("bias_tensor"), py::arg("conv_config"),
      py::arg("compute_config"), py::arg("return_output_dim"), py::arg("return_weights_and_bias"));

  m.def(
      "ttnn_conv2d",
      [](py::handle input_tensor, std::string input_layout, py::handle values, py::handle scale,
         py::handle zero_point, std::string weights_format, std::int64_t in_channels,
         std::int64_t out_channels, std::int64_t batch_size, std::int64_t input_height,
         std::int64_t input_width, py::handle kernel_size, py::handle stride, py::handle padding,
         py::handle dilation, std::int64_t groups, py::handle bias_tensor,
         std::optional<Conv2dConfig> conv_config, std::optional<ComputeConfig> compute_config,
         bool return_output_dim, bool return_weights_and_bias) {
        const Geometry g = geometry(in_channels, out_channels, batch_size, input_height,
                                    input_width, kernel_size, stride, padding, dilation, groups);
        const ArrayView x = borrow_quantized(input_tensor, "input_tensor",
                                             parse_layout(input_layout, "input_layout"));
        const WeightsArgument w = quantized_weights(values, scale, zero_point, weights_format);
        const Conv2dConfig conv = conv_config_or_default(conv_config);
        const ComputeConfig compute = compute_config_or_default(compute_config);
        std::optional<ArrayView> b;
        if (!bias_tensor.is_none()) b = bias_array(bias_tensor, compute);
        const std::optional<ConstTensorView> bias =
            b ? std::optional<ConstTensorView>(b->view) : std::nullopt;
        ttnn::Conv2dResult result = without_gil([&] {
          return ttnn::conv2d(x.view, w.weights, weights_format, g.in_channels, g.out_channels,
                              g.batch_size, g.input_height, g.input_width, g.kernel_size, g.stride,
                              g.padding, g.dilation, g.groups, bias, conv, compute,
                              return_output_dim, return_weights_and_bias);
        });
        return conv2d_result(std::move(result), return_output_dim, return_weights_and_bias);
      },
      py::arg("input_tensor"), py::arg("input_layout"), py::arg("values"), py::arg("scale"),
      py::arg("zero_point"), py::arg("weights_format"), py::arg("in_channels"),
      py::arg("out_channels"), py::arg("batch_size"), py::arg("input_height"),
      py::arg("input_width"), py::arg("kernel_size"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("bias_tensor"), py::arg("conv_config"),
      py::arg("compute_config"), py::arg("return_output_dim"), py::arg("return_weights_and_bias"));
}

}  // namespace qconv::python
