// SPDX-License-Identifier: Apache-2.0
// TVM QNN face: qnn.conv2d, qnn.conv2d_transpose, qnn.requantize.
#include "qconv/faces/qnn.hpp"

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/error.hpp"
#include "without_gil.hpp"

namespace qconv::python {
namespace {

// qnn.requantize takes a tensor of any rank; qconv's tensors have one dimension (layout X) or
// four. Other ranks are seen as four dimensions (before the axis, the axis, after it, 1) so the
// channel axis keeps its meaning; the result takes the data's shape back.
struct ChannelView {
  py::tuple shape;
  Layout layout;
  std::int64_t axis;
};

ChannelView channel_view(const py::array& data, std::int64_t axis) {
  const auto rank = static_cast<std::int64_t>(data.ndim());
  // A scalar has one value and no axis: per-tensor quantization applies to it whatever axis says.
  if (rank == 0) return {py::make_tuple(1), Layout::X, 0};
  if (rank == 1) return {py::make_tuple(data.shape(0)), Layout::X, axis};
  if (rank == 4) return {data.attr("shape"), Layout::NCHW, axis};
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<std::int64_t>(rank, 1)) {
    throw InvalidArgument("axis = " + std::to_string(axis) + ": must lie in [-" +
                          std::to_string(rank) + ", " + std::to_string(rank - 1) +
                          "] for a tensor of rank " + std::to_string(rank));
  }
  py::ssize_t before = 1, channels = 1, after = 1;
  for (std::int64_t d = 0; d < rank; ++d) {
    const py::ssize_t extent = data.shape(static_cast<py::ssize_t>(d));
    (d < a ? before : d == a ? channels : after) *= extent;
  }
  return {py::make_tuple(before, channels, after, 1), Layout::NCHW, 1};
}

// The attributes qnn.conv2d and qnn.conv2d_transpose share, converted in the same order.
template <class Attrs>
Attrs conv_attrs(py::handle strides, py::handle padding, py::handle dilation, py::handle groups,
                 py::handle data_layout, py::handle kernel_layout, py::handle out_layout,
                 py::handle out_dtype, py::handle allow_wraparound, py::handle threads) {
  Attrs attrs;
  attrs.strides = int64s(strides, "strides");
  attrs.padding = int64s(padding, "padding");
  attrs.dilation = int64s(dilation, "dilation");
  attrs.groups = integer(groups, "groups");
  attrs.data_layout = text(data_layout, "data_layout");
  attrs.kernel_layout = text(kernel_layout, "kernel_layout");
  attrs.out_layout = text(out_layout, "out_layout");
  attrs.out_dtype = text(out_dtype, "out_dtype");
  attrs.allow_wraparound = boolean(allow_wraparound, "allow_wraparound");
  attrs.threads = int_arg(threads, "threads");
  return attrs;
}

// The data, the kernel and their quantization, as both convolutions take them.
struct ConvOperands {
  ArrayView data, kernel;
  std::int32_t input_zero_point;
  qnn::ZeroPoints kernel_zero_point;
  double input_scale;
  qnn::Scales kernel_scale;
};

ConvOperands conv_operands(py::handle data, py::handle kernel, std::string_view kernel_field,
                           py::handle input_zero_point, py::handle kernel_zero_point,
                           py::handle input_scale, py::handle kernel_scale,
                           const std::string& data_layout, const std::string& kernel_layout) {
  return {borrow_quantized(data, "data", parse_layout(data_layout, "data_layout")),
          borrow_quantized(kernel, kernel_field, parse_layout(kernel_layout, "kernel_layout")),
          int32(input_zero_point, "input_zero_point"),
          int32s(kernel_zero_point, "kernel_zero_point"),
          number(input_scale, "input_scale"),
          doubles(kernel_scale, "kernel_scale")};
}

}  // namespace

void bind_qnn(py::module_& m) {
  m.def(
      "qnn_conv2d",
      [](py::handle data, py::handle kernel, py::handle input_zero_point,
         py::handle kernel_zero_point, py::handle input_scale, py::handle kernel_scale,
         py::handle kernel_size, py::handle channels, py::handle strides, py::handle padding,
         py::handle dilation, py::handle groups, py::handle data_layout, py::handle kernel_layout,
         py::handle out_layout, py::handle out_dtype, py::handle allow_wraparound,
         py::handle threads) {
        const auto attrs = conv_attrs<qnn::Conv2DAttrs>(strides, padding, dilation, groups,
                                                        data_layout, kernel_layout, out_layout,
                                                        out_dtype, allow_wraparound, threads);
        const std::int64_t c = integer(channels, "channels");
        const ConvOperands o =
            conv_operands(data, kernel, "kernel", input_zero_point, kernel_zero_point, input_scale,
                          kernel_scale, attrs.data_layout, attrs.kernel_layout);
        const std::array<std::int64_t, 2> k = pair(kernel_size, "kernel_size");
        return to_numpy(without_gil([&] {
          return qnn::conv2d(o.data.view, o.kernel.view, o.input_zero_point, o.kernel_zero_point,
                             o.input_scale, o.kernel_scale, k, c, attrs);
        }));
      },
      py::arg("data"), py::arg("kernel"), py::arg("input_zero_point"), py::arg("kernel_zero_point"),
      py::arg("input_scale"), py::arg("kernel_scale"), py::arg("kernel_size"), py::arg("channels"),
      py::arg("strides"), py::arg("padding"), py::arg("dilation"), py::arg("groups"),
      py::arg("data_layout"), py::arg("kernel_layout"), py::arg("out_layout"), py::arg("out_dtype"),
      py::arg("allow_wraparound"), py::arg("threads"));

  m.def(
      "qnn_conv2d_transpose",
      [](py::handle data, py::handle weight, py::handle input_zero_point,
         py::handle kernel_zero_point, py::handle input_scale, py::handle kernel_scale,
         py::handle strides, py::handle padding, py::handle dilation, py::handle groups,
         py::handle channels, py::handle kernel_size, py::handle data_layout,
         py::handle kernel_layout, py::handle out_layout, py::handle output_padding,
         py::handle out_dtype, py::handle allow_wraparound, py::handle threads) {
        auto attrs = conv_attrs<qnn::Conv2DTransposeAttrs>(strides, padding, dilation, groups,
                                                           data_layout, kernel_layout, out_layout,
                                                           out_dtype, allow_wraparound, threads);
        attrs.channels = channels.is_none() ? 0 : integer(channels, "channels");
        attrs.kernel_size = int64s(kernel_size, "kernel_size");
        attrs.output_padding = int64s(output_padding, "output_padding");
        const ConvOperands o =
            conv_operands(data, weight, "weight", input_zero_point, kernel_zero_point, input_scale,
                          kernel_scale, attrs.data_layout, attrs.kernel_layout);
        return to_numpy(without_gil([&] {
          return qnn::conv2d_transpose(o.data.view, o.kernel.view, o.input_zero_point,
                                       o.kernel_zero_point, o.input_scale, o.kernel_scale, attrs);
        }));
      },
      py::arg("data"), py::arg("weight"), py::arg("input_zero_point"), py::arg("kernel_zero_point"),
      py::arg("input_scale"), py::arg("kernel_scale"), py::arg("strides"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("channels"), py::arg("kernel_size"),
      py::arg("data_layout"), py::arg("kernel_layout"), py::arg("out_layout"),
      py::arg("output_padding"), py::arg("out_dtype"), py::arg("allow_wraparound"),
      py::arg("threads"));

  m.def("qnn_requantize", [](py::handle data, py::handle input_scale, py::handle input_zero_point,
                             py::handle output_scale, py::handle output_zero_point, py::handle axis,
                             py::handle rounding, py::handle compute_dtype, py::handle out_dtype) {
    qnn::RequantizeAttrs attrs;
    attrs.rounding = text(rounding, "rounding");
    attrs.compute_dtype = text(compute_dtype, "compute_dtype");
    attrs.out_dtype = text(out_dtype, "out_dtype");
    py::array array = py::array::ensure(data);
    if (!array)
      throw py::type_error("data must be an array, got " + py::repr(data).cast<std::string>());
    const py::tuple shape = array.attr("shape");
    const ChannelView channels = channel_view(array, integer(axis, "axis"));
    attrs.axis = channels.axis;
    const ArrayView x =
        convert(array.attr("reshape")(channels.shape), "data", channels.layout, DType::s32);
    const qnn::Scales si = doubles(input_scale, "input_scale");
    const std::int32_t zi = int32(input_zero_point, "input_zero_point");
    const double so = number(output_scale, "output_scale");
    const std::int32_t zo = int32(output_zero_point, "output_zero_point");
    return to_numpy(without_gil([&] { return qnn::requantize(x.view, si, zi, so, zo, attrs); }))
        .attr("reshape")(shape);
  });
}

}  // namespace qconv::python
