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

void set_attributes(onnx::ConvAttributes& a, std::string auto_pad, py::handle dilations,
                    std::int64_t group, py::handle kernel_shape, py::handle pads,
                    py::handle strides, int threads) {
  a.auto_pad = std::move(auto_pad);
  a.dilations = int64s(dilations, "dilations");
  a.group = group;
  a.kernel_shape = int64s(kernel_shape, "kernel_shape");
  a.pads = int64s(pads, "pads");
  a.strides = int64s(strides, "strides");
  a.threads = threads;
}

std::int32_t zero_point_or_0(py::handle zero_point, std::string_view field) {
  return zero_point.is_none() ? 0 : int32(zero_point, field);
}

std::vector<std::int32_t> zero_points_or_0(py::handle zero_point, std::string_view field) {
  return zero_point.is_none() ? std::vector<std::int32_t>{0} : int32s(zero_point, field);
}

// The operands of ConvInteger and the integer ConvTranspose: absent zero points are 0.
struct IntegerOperands {
  ArrayView x, w;
  std::int32_t x_zero_point;
  std::vector<std::int32_t> w_zero_point;
};

IntegerOperands integer_operands(py::handle x, py::handle w, Layout w_layout,
                                 py::handle x_zero_point, py::handle w_zero_point) {
  return {borrow_quantized(x, "x", Layout::NCHW), borrow_quantized(w, "w", w_layout),
          zero_point_or_0(x_zero_point, "x_zero_point"),
          zero_points_or_0(w_zero_point, "w_zero_point")};
}

}  // namespace

void bind_onnx(py::module_& m) {
  m.def(
      "onnx_qlinear_conv",
      [](py::handle x, py::handle x_scale, py::handle x_zero_point, py::handle w,
         py::handle w_scale, py::handle w_zero_point, py::handle y_scale, py::handle y_zero_point,
         py::handle B, std::string auto_pad, py::handle dilations, std::int64_t group,
         py::handle kernel_shape, py::handle pads, py::handle strides, std::string y_dtype,
         int threads, std::string semantics) {
        onnx::ConvAttributes attributes;
        set_attributes(attributes, std::move(auto_pad), dilations, group, kernel_shape, pads,
                       strides, threads);
        const ArrayView xv = borrow_quantized(x, "x", Layout::NCHW);
        const ArrayView wv = borrow_quantized(w, "w", Layout::OIHW);
        const double sx = number(x_scale, "x_scale");
        const std::int32_t zx = int32(x_zero_point, "x_zero_point");
        const std::vector<double> sw = doubles(w_scale, "w_scale");
        const std::vector<std::int32_t> zw = int32s(w_zero_point, "w_zero_point");
        const double sy = number(y_scale, "y_scale");
        const std::int32_t zy = int32(y_zero_point, "y_zero_point");
        const DType out = parse_dtype(y_dtype, "y_zero_point.dtype");
        const std::optional<ArrayView> bias = convert_optional(B, "B", Layout::X, DType::s32);
        return to_numpy(without_gil([&] {
          return onnx::qlinear_conv(xv.view, sx, zx, wv.view, sw, zw, sy, zy,
                                    span_of<std::int32_t>(bias), attributes, out, semantics);
        }));
      },
      py::arg("x"), py::arg("x_scale"), py::arg("x_zero_point"), py::arg("w"), py::arg("w_scale"),
      py::arg("w_zero_point"), py::arg("y_scale"), py::arg("y_zero_point"), py::arg("B"),
      py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"),
      py::arg("pads"), py::arg("strides"), py::arg("y_dtype"), py::arg("threads"),
      py::arg("semantics"));

  m.def(
      "onnx_conv_integer",
      [](py::handle x, py::handle w, py::handle x_zero_point, py::handle w_zero_point,
         std::string auto_pad, py::handle dilations, std::int64_t group, py::handle kernel_shape,
         py::handle pads, py::handle strides, int threads) {
        onnx::ConvAttributes attributes;
        set_attributes(attributes, std::move(auto_pad), dilations, group, kernel_shape, pads,
                       strides, threads);
        const IntegerOperands o = integer_operands(x, w, Layout::OIHW, x_zero_point, w_zero_point);
        return to_numpy(without_gil([&] {
          return onnx::conv_integer(o.x.view, o.w.view, o.x_zero_point, o.w_zero_point, attributes);
        }));
      },
      py::arg("x"), py::arg("w"), py::arg("x_zero_point"), py::arg("w_zero_point"),
      py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"),
      py::arg("pads"), py::arg("strides"), py::arg("threads"));

  m.def(
      "onnx_conv_transpose_integer",
      [](py::handle x, py::handle w, py::handle x_zero_point, py::handle w_zero_point,
         std::string auto_pad, py::handle dilations, std::int64_t group, py::handle kernel_shape,
         py::handle output_padding, py::handle output_shape, py::handle pads, py::handle strides,
         int threads) {
        onnx::ConvTransposeAttributes attributes;
        set_attributes(attributes, std::move(auto_pad), dilations, group, kernel_shape, pads,
                       strides, threads);
        attributes.output_padding = int64s(output_padding, "output_padding");
        attributes.output_shape = int64s(output_shape, "output_shape");
        const IntegerOperands o = integer_operands(x, w, Layout::IOHW, x_zero_point, w_zero_point);
        return to_numpy(without_gil([&] {
          return onnx::conv_transpose_integer(o.x.view, o.w.view, o.x_zero_point, o.w_zero_point,
                                              attributes);
        }));
      },
      py::arg("x"), py::arg("w"), py::arg("x_zero_point"), py::arg("w_zero_point"),
      py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"),
      py::arg("output_padding"), py::arg("output_shape"), py::arg("pads"), py::arg("strides"),
      py::arg("threads"));
}

}  // namespace qconv::python
