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
                            py::handle axis, const std::string& field, Layout layout) {
  QuantizedArgument q{borrow_quantized(values, field, layout), {}};
  q.tensor.values = q.array.view;
  q.tensor.scale = doubles(scale, field + ".scale");
  q.tensor.zero_point = int32s(zero_point, field + ".zero_point");
  q.tensor.axis = integer(axis, field + ".axis");
  return q;
}

// The arguments both operations take, in the order the Python package passes them; the last one
// is the operation's own (padding_mode, or output_padding).
#define QCONV_FUNCTIONAL_ARGS                                                                   \
  py::arg("input"), py::arg("input_scale"), py::arg("input_zero_point"), py::arg("input_axis"), \
      py::arg("weight"), py::arg("weight_scale"), py::arg("weight_zero_point"),                 \
      py::arg("weight_axis"), py::arg("bias"), py::arg("stride"), py::arg("padding"),           \
      py::arg("dilation"), py::arg("groups"), py::arg("scale"), py::arg("zero_point"),          \
      py::arg("dtype"), py::arg("engine"), py::arg("relu"), py::arg("threads")

// Binds one operation: `Options` its options, `set_own` sets its own argument, `run` calls it.
template <class Options, class SetOwn, class Run>
void def_operation(py::module_& m, const char* name, Layout weight_layout, const char* own_name,
                   SetOwn set_own, Run run) {
  m.def(
      name,
      [weight_layout, set_own, run](
          py::handle input, py::handle input_scale, py::handle input_zero_point,
          py::handle input_axis, py::handle weight, py::handle weight_scale,
          py::handle weight_zero_point, py::handle weight_axis, py::handle bias, py::handle stride,
          py::handle padding, py::handle dilation, py::handle groups, py::handle scale,
          py::handle zero_point, py::handle dtype, py::handle engine, py::handle relu,
          py::handle threads, py::handle own) {
        const QuantizedArgument x =
            quantized(input, input_scale, input_zero_point, input_axis, "input", Layout::NCHW);
        const QuantizedArgument w = quantized(weight, weight_scale, weight_zero_point, weight_axis,
                                              "weight", weight_layout);
        const std::optional<ArrayView> b = convert_optional(bias, "bias", Layout::X, DType::f32);
        Options options;
        options.stride = int64s(stride, "stride");
        options.padding = int64s(padding, "padding");
        options.dilation = int64s(dilation, "dilation");
        options.groups = integer(groups, "groups");
        options.scale = number(scale, "scale");
        options.zero_point = int32(zero_point, "zero_point");
        options.dtype = text(dtype, "dtype");
        options.engine = text(engine, "engine");
        options.relu = boolean(relu, "relu");
        options.threads = int_arg(threads, "threads");
        set_own(options, own);
        functional::QuantizedTensor y =
            without_gil([&] { return run(x.tensor, w.tensor, b, options); });
        return py::make_tuple(to_numpy(std::move(y.values)), y.scale, y.zero_point);
      },
      QCONV_FUNCTIONAL_ARGS, py::arg(own_name));
}

}  // namespace

void bind_functional(py::module_& m) {
  def_operation<functional::Conv2dOptions>(
      m, "functional_conv2d", Layout::OIHW, "padding_mode",
      [](functional::Conv2dOptions& o, py::handle v) { o.padding_mode = text(v, "padding_mode"); },
      [](const functional::QTensor& x, const functional::QTensor& w,
         const std::optional<ArrayView>& b, const functional::Conv2dOptions& o) {
        return functional::conv2d(x, w, span_of<float>(b), o);
      });
  def_operation<functional::ConvTranspose2dOptions>(
      m, "functional_conv_transpose2d", Layout::IOHW, "output_padding",
      [](functional::ConvTranspose2dOptions& o, py::handle v) {
        o.output_padding = int64s(v, "output_padding");
      },
      [](const functional::QTensor& x, const functional::QTensor& w,
         const std::optional<ArrayView>& b, const functional::ConvTranspose2dOptions& o) {
        return functional::conv_transpose2d(x, w, span_of<float>(b), o);
      });
}

}  // namespace qconv::python
