// SPDX-License-Identifier: Apache-2.0
// ONNX face: QLinearConv, ConvInteger and the integer ConvTranspose, with ONNX attributes.
#include "qconv/faces/onnx.hpp"

#include <optional>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"
#include "without_gil.hpp"

namespace qconv::python {
namespace {

void set_attributes(onnx::ConvAttributes& a, py::handle auto_pad, py::handle dilations,
                    py::handle group, py::handle kernel_shape, py::handle pads, py::handle strides,
                    py::handle threads) {
  a.auto_pad = text(auto_pad, "auto_pad");
  a.dilations = int64s(dilations, "dilations");
  a.group = integer(group, "group");
  a.kernel_shape = int64s(kernel_shape, "kernel_shape");
  a.pads = int64s(pads, "pads");
  a.strides = int64s(strides, "strides");
  a.threads = int_arg(threads, "threads");
}

std::int32_t zero_point_or_0(py::handle zero_point, std::string_view field) {
  return zero_point.is_none() ? 0 : int32(zero_point, field);
}

std::vector<std::int32_t> zero_points_or_0(py::handle zero_point, std::string_view field) {
  return zero_point.is_none() ? std::vector<std::int32_t>{0} : int32s(zero_point, field);
}

// The attributes every operator takes, in the order the Python package passes them.
#define QCONV_ONNX_ATTRIBUTES                                                           \
  py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"), \
      py::arg("pads"), py::arg("strides"), py::arg("threads")

// ConvInteger and the integer ConvTranspose: the same operands (absent zero points are 0) and
// attributes; `Attributes` adds the transposed operator's own, `run` calls the operator.
template <class Attributes, class SetOwn, class Run>
void def_integer_operator(py::module_& m, const char* name, Layout w_layout, SetOwn set_own,
                          Run run) {
  m.def(
      name,
      [w_layout, set_own, run](py::handle x, py::handle w, py::handle x_zero_point,
                               py::handle w_zero_point, py::handle auto_pad, py::handle dilations,
                               py::handle group, py::handle kernel_shape, py::handle pads,
                               py::handle strides, py::handle threads, py::handle output_padding,
                               py::handle output_shape) {
        Attributes attributes;
        set_attributes(attributes, auto_pad, dilations, group, kernel_shape, pads, strides,
                       threads);
        set_own(attributes, output_padding, output_shape);
        const ArrayView xv = borrow_quantized(x, "x", Layout::NCHW);
        const ArrayView wv = borrow_quantized(w, "w", w_layout);
        const std::int32_t zx = zero_point_or_0(x_zero_point, "x_zero_point");
        const std::vector<std::int32_t> zw = zero_points_or_0(w_zero_point, "w_zero_point");
        return to_numpy(without_gil([&] { return run(xv.view, wv.view, zx, zw, attributes); }));
      },
      py::arg("x"), py::arg("w"), py::arg("x_zero_point"), py::arg("w_zero_point"),
      QCONV_ONNX_ATTRIBUTES, py::arg("output_padding") = py::none(),
      py::arg("output_shape") = py::none());
}

}  // namespace

void bind_onnx(py::module_& m) {
  m.def(
      "onnx_qlinear_conv",
      [](py::handle x, py::handle x_scale, py::handle x_zero_point, py::handle w,
         py::handle w_scale, py::handle w_zero_point, py::handle y_scale, py::handle y_zero_point,
         py::handle B, py::handle auto_pad, py::handle dilations, py::handle group,
         py::handle kernel_shape, py::handle pads, py::handle strides, py::handle threads,
         py::handle y_dtype, py::handle semantics) {
        onnx::ConvAttributes attributes;
        set_attributes(attributes, auto_pad, dilations, group, kernel_shape, pads, strides,
                       threads);
        const ArrayView xv = borrow_quantized(x, "x", Layout::NCHW);
        const ArrayView wv = borrow_quantized(w, "w", Layout::OIHW);
        const double sx = number(x_scale, "x_scale");
        const std::int32_t zx = int32(x_zero_point, "x_zero_point");
        const std::vector<double> sw = doubles(w_scale, "w_scale");
        const std::vector<std::int32_t> zw = int32s(w_zero_point, "w_zero_point");
        const double sy = number(y_scale, "y_scale");
        const std::int32_t zy = int32(y_zero_point, "y_zero_point");
        const DType out = parse_dtype(text(y_dtype, "y_zero_point.dtype"), "y_zero_point.dtype");
        const std::string scheme = text(semantics, "semantics");
        const std::optional<ArrayView> bias = convert_optional(B, "B", Layout::X, DType::s32);
        return to_numpy(without_gil([&] {
          return onnx::qlinear_conv(xv.view, sx, zx, wv.view, sw, zw, sy, zy,
                                    span_of<std::int32_t>(bias), attributes, out, scheme);
        }));
      },
      py::arg("x"), py::arg("x_scale"), py::arg("x_zero_point"), py::arg("w"), py::arg("w_scale"),
      py::arg("w_zero_point"), py::arg("y_scale"), py::arg("y_zero_point"), py::arg("B"),
      QCONV_ONNX_ATTRIBUTES, py::arg("y_dtype"), py::arg("semantics"));

  def_integer_operator<onnx::ConvAttributes>(
      m, "onnx_conv_integer", Layout::OIHW,
      [](onnx::ConvAttributes&, py::handle output_padding, py::handle output_shape) {
        if (!output_padding.is_none() || !output_shape.is_none()) {
          throw py::type_error("ConvInteger takes no output_padding or output_shape");
        }
      },
      [](const ConstTensorView& x, const ConstTensorView& w, std::int32_t zx,
         const std::vector<std::int32_t>& zw,
         const onnx::ConvAttributes& a) { return onnx::conv_integer(x, w, zx, zw, a); });
  def_integer_operator<onnx::ConvTransposeAttributes>(
      m, "onnx_conv_transpose_integer", Layout::IOHW,
      [](onnx::ConvTransposeAttributes& a, py::handle output_padding, py::handle output_shape) {
        a.output_padding = int64s(output_padding, "output_padding");
        a.output_shape = int64s(output_shape, "output_shape");
      },
      [](const ConstTensorView& x, const ConstTensorView& w, std::int32_t zx,
         const std::vector<std::int32_t>& zw, const onnx::ConvTransposeAttributes& a) {
        return onnx::conv_transpose_integer(x, w, zx, zw, a);
      });
}

}  // namespace qconv::python
