// ONNX face: QLinearConv, ConvInteger and the integer ConvTranspose, with ONNX attributes.
#include "qconv/faces/onnx.hpp"

#include <optional>
#include <span>

#include "bindings.hpp"
#include "convert.hpp"

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

}  // namespace

void bind_onnx(py::module_& m) {
  m.def(
      "onnx_qlinear_conv",
      [](py::handle x, py::handle x_scale, py::handle x_zero_point, py::handle w,
         py::handle w_scale, py::handle w_zero_point, py::handle y_scale, py::handle y_zero_point,
         py::handle B, std::string auto_pad, py::handle dilations, std::int64_t group,
         py::handle kernel_shape, py::handle pads, py::handle strides, std::string y_dtype,
         int threads) {
        onnx::ConvAttributes attributes;
        set_attributes(attributes, std::move(auto_pad), dilations, group, kernel_shape, pads,
                       strides, threads);
        const ArrayView xv = borrow(x, "x", Layout::NCHW, {DType::u8, DType::s8});
        const ArrayView wv = borrow(w, "w", Layout::OIHW, {DType::u8, DType::s8});
        const double sx = number(x_scale, "x_scale");
        const std::int32_t zx = int32(x_zero_point, "x_zero_point");
        const std::vector<double> sw = doubles(w_scale, "w_scale");
        const std::vector<std::int32_t> zw = int32s(w_zero_point, "w_zero_point");
        const double sy = number(y_scale, "y_scale");
        const std::int32_t zy = int32(y_zero_point, "y_zero_point");
        const DType out = parse_dtype(y_dtype, "y_zero_point.dtype");
        std::optional<ArrayView> bias;
        if (!B.is_none()) bias = convert(B, "B", Layout::X, DType::s32);
        std::optional<std::span<const std::int32_t>> b;
        if (bias) {
          b = std::span<const std::int32_t>(bias->view.as<std::int32_t>(),
                                            static_cast<std::size_t>(bias->view.elements()));
        }
        Tensor y;
        {
          py::gil_scoped_release release;
          y = onnx::qlinear_conv(xv.view, sx, zx, wv.view, sw, zw, sy, zy, b, attributes, out);
        }
        return to_numpy(std::move(y));
      },
      py::arg("x"), py::arg("x_scale"), py::arg("x_zero_point"), py::arg("w"), py::arg("w_scale"),
      py::arg("w_zero_point"), py::arg("y_scale"), py::arg("y_zero_point"), py::arg("B"),
      py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"),
      py::arg("pads"), py::arg("strides"), py::arg("y_dtype"), py::arg("threads"));

  m.def(
      "onnx_conv_integer",
      [](py::handle x, py::handle w, py::handle x_zero_point, py::handle w_zero_point,
         std::string auto_pad, py::handle dilations, std::int64_t group, py::handle kernel_shape,
         py::handle pads, py::handle strides, int threads) {
        onnx::ConvAttributes attributes;
        set_attributes(attributes, std::move(auto_pad), dilations, group, kernel_shape, pads,
                       strides, threads);
        const ArrayView xv = borrow(x, "x", Layout::NCHW, {DType::u8, DType::s8});
        const ArrayView wv = borrow(w, "w", Layout::OIHW, {DType::u8, DType::s8});
        const std::int32_t zx = zero_point_or_0(x_zero_point, "x_zero_point");
        const std::vector<std::int32_t> zw = zero_points_or_0(w_zero_point, "w_zero_point");
        Tensor y;
        {
          py::gil_scoped_release release;
          y = onnx::conv_integer(xv.view, wv.view, zx, zw, attributes);
        }
        return to_numpy(std::move(y));
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
        const ArrayView xv = borrow(x, "x", Layout::NCHW, {DType::u8, DType::s8});
        const ArrayView wv = borrow(w, "w", Layout::IOHW, {DType::u8, DType::s8});
        const std::int32_t zx = zero_point_or_0(x_zero_point, "x_zero_point");
        const std::vector<std::int32_t> zw = zero_points_or_0(w_zero_point, "w_zero_point");
        Tensor y;
        {
          py::gil_scoped_release release;
          y = onnx::conv_transpose_integer(xv.view, wv.view, zx, zw, attributes);
        }
        return to_numpy(std::move(y));
      },
      py::arg("x"), py::arg("w"), py::arg("x_zero_point"), py::arg("w_zero_point"),
      py::arg("auto_pad"), py::arg("dilations"), py::arg("group"), py::arg("kernel_shape"),
      py::arg("output_padding"), py::arg("output_shape"), py::arg("pads"), py::arg("strides"),
      py::arg("threads"));
}

}  // namespace qconv::python
