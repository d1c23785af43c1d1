// SPDX-License-Identifier: Apache-2.0
// PyTorch face: torch.ao.nn.quantized.functional.conv2d / conv_transpose2d. The Python package
// unpacks PyTorch's quantized tensors (or qconv.QuantizedArray) into values, scales and zero
// points.
#include "qconv/faces/functional.hpp"

#include <optional>
#include <string>

#include "bindings.hpp"
#include "convert.hpp"
#include "without_gil.hpp"

namespace qconv::python {
namespace {

// A quantized tensor's parts as the face takes them; `array` keeps the values alive.
struct QuantizedArgument {
  ArrayView array;
  functional::QTensor tensor;
};

QuantizedArgument quantized(py::handle values, py::handle scale, py::handle zero_point,
                            std::int64_t axis, const std::string& field, Layout layout) {
  QuantizedArgument q{borrow_quantized(values, field, layout), {}};
  q.tensor.values = q.array.view;
  q.tensor.scale = doubles(scale, field + ".scale");
  q.tensor.zero_point = int32s(zero_point, field + ".zero_point");
  q.tensor.axis = axis;
  return q;
}

std::optional<ArrayView> float_bias(py::handle bias) {
  return convert_optional(bias, "bias", Layout::X, DType::f32);
}

// The output quantization and run settings, the same fields in both operations' options.
template <class Options>
void set_output(Options& options, double scale, std::int32_t zero_point, std::string dtype,
                std::string engine, bool relu, int threads) {
  options.scale = scale;
  options.zero_point = zero_point;
  options.dtype = std::move(dtype);
  options.engine = std::move(engine);
  options.relu = relu;
  options.threads = threads;
}

py::tuple result(functional::QuantizedTensor&& y) {
  return py::make_tuple(to_numpy(std::move(y.values)), y.scale, y.zero_point);
}

}  // namespace

void bind_functional(py::module_& m) {
  m.def(
      "functional_conv2d",
      [](py::handle input, py::handle input_scale, py::handle input_zero_point,
         std::int64_t input_axis, py::handle weight, py::handle weight_scale,
         py::handle weight_zero_point, std::int64_t weight_axis, py::handle bias, py::handle stride,
         py::handle padding, py::handle dilation, std::int64_t groups, std::string padding_mode,
         double scale, std::int32_t zero_point, std::string dtype, std::string engine, bool relu,
         int threads) {
        const QuantizedArgument x =
            quantized(input, input_scale, input_zero_point, input_axis, "input", Layout::NCHW);
        const QuantizedArgument w =
            quantized(weight, weight_scale, weight_zero_point, weight_axis, "weight", Layout::OIHW);
        const std::optional<ArrayView> b = float_bias(bias);
        functional::Conv2dOptions options;
        options.stride = int64s(stride, "stride");
        options.padding = int64s(padding, "padding");
        options.dilation = int64s(dilation, "dilation");
        options.groups = groups;
        options.padding_mode = std::move(padding_mode);
        set_output(options, scale, zero_point, std::move(dtype), std::move(engine), relu, threads);
        return result(without_gil(
            [&] { return functional::conv2d(x.tensor, w.tensor, span_of<float>(b), options); }));
      },
      py::arg("input"), py::arg("input_scale"), py::arg("input_zero_point"), py::arg("input_axis"),
      py::arg("weight"), py::arg("weight_scale"), py::arg("weight_zero_point"),
      py::arg("weight_axis"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("padding_mode"), py::arg("scale"),
      py::arg("zero_point"), py::arg("dtype"), py::arg("engine"), py::arg("relu"),
      py::arg("threads"));

  m.def(
      "functional_conv_transpose2d",
      [](py::handle input, py::handle input_scale, py::handle input_zero_point,
         std::int64_t input_axis, py::handle weight, py::handle weight_scale,
         py::handle weight_zero_point, std::int64_t weight_axis, py::handle bias, py::handle stride,
         py::handle padding, py::handle output_padding, std::int64_t groups, py::handle dilation,
         double scale, std::int32_t zero_point, std::string dtype, std::string engine, bool relu,
         int threads) {
        const QuantizedArgument x =
            quantized(input, input_scale, input_zero_point, input_axis, "input", Layout::NCHW);
        const QuantizedArgument w =
            quantized(weight, weight_scale, weight_zero_point, weight_axis, "weight", Layout::IOHW);
        const std::optional<ArrayView> b = float_bias(bias);
        functional::ConvTranspose2dOptions options;
        options.stride = int64s(stride, "stride");
        options.padding = int64s(padding, "padding");
        options.output_padding = int64s(output_padding, "output_padding");
        options.groups = groups;
        options.dilation = int64s(dilation, "dilation");
        set_output(options, scale, zero_point, std::move(dtype), std::move(engine), relu, threads);
        return result(without_gil([&] {
          return functional::conv_transpose2d(x.tensor, w.tensor, span_of<float>(b), options);
        }));
      },
      py::arg("input"), py::arg("input_scale"), py::arg("input_zero_point"), py::arg("input_axis"),
      py::arg("weight"), py::arg("weight_scale"), py::arg("weight_zero_point"),
      py::arg("weight_axis"), py::arg("bias"), py::arg("stride"), py::arg("padding"),
      py::arg("output_padding"), py::arg("groups"), py::arg("dilation"), py::arg("scale"),
      py::arg("zero_point"), py::arg("dtype"), py::arg("engine"), py::arg("relu"),
      py::arg("threads"));
}

}  // namespace qconv::python
