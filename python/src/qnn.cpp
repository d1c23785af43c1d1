// TVM QNN face: qnn.conv2d, qnn.conv2d_transpose, qnn.requantize.
#include "qconv/faces/qnn.hpp"

#include <pybind11/stl.h>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/error.hpp"

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

}  // namespace

void bind_qnn(py::module_& m) {
  m.def(
      "qnn_conv2d",
      [](py::handle data, py::handle kernel, py::handle input_zero_point,
         py::handle kernel_zero_point, py::handle input_scale, py::handle kernel_scale,
         py::handle kernel_size, std::int64_t channels, py::handle strides, py::handle padding,
         py::handle dilation, std::int64_t groups, std::string data_layout,
         std::string kernel_layout, std::string out_layout, std::string out_dtype,
         bool allow_wraparound, int threads) {
        qnn::Conv2DAttrs attrs;
        attrs.strides = int64s(strides, "strides");
        attrs.padding = int64s(padding, "padding");
        attrs.dilation = int64s(dilation, "dilation");
        attrs.groups = groups;
        attrs.data_layout = std::move(data_layout);
        attrs.kernel_layout = std::move(kernel_layout);
        attrs.out_layout = std::move(out_layout);
        attrs.out_dtype = std::move(out_dtype);
        attrs.allow_wraparound = allow_wraparound;
        attrs.threads = threads;
        const ArrayView x = borrow(data, "data", parse_layout(attrs.data_layout, "data_layout"),
                                   {DType::u8, DType::s8});
        const ArrayView w =
            borrow(kernel, "kernel", parse_layout(attrs.kernel_layout, "kernel_layout"),
                   {DType::u8, DType::s8});
        const std::int32_t zx = int32(input_zero_point, "input_zero_point");
        const qnn::ZeroPoints zw = int32s(kernel_zero_point, "kernel_zero_point");
        const double sx = number(input_scale, "input_scale");
        const qnn::Scales sw = doubles(kernel_scale, "kernel_scale");
        const std::array<std::int64_t, 2> k = pair(kernel_size, "kernel_size");
        Tensor y;
        {
          py::gil_scoped_release release;
          y = qnn::conv2d(x.view, w.view, zx, zw, sx, sw, k, channels, attrs);
        }
        return to_numpy(std::move(y));
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
         py::handle strides, py::handle padding, py::handle dilation, std::int64_t groups,
         std::optional<std::int64_t> channels, py::handle kernel_size, std::string data_layout,
         std::string kernel_layout, std::string out_layout, py::handle output_padding,
         std::string out_dtype, bool allow_wraparound, int threads) {
        qnn::Conv2DTransposeAttrs attrs;
        attrs.strides = int64s(strides, "strides");
        attrs.padding = int64s(padding, "padding");
        attrs.dilation = int64s(dilation, "dilation");
        attrs.groups = groups;
        attrs.channels = channels.value_or(0);
        attrs.kernel_size = int64s(kernel_size, "kernel_size");
        attrs.data_layout = std::move(data_layout);
        attrs.kernel_layout = std::move(kernel_layout);
        attrs.out_layout = std::move(out_layout);
        attrs.output_padding = int64s(output_padding, "output_padding");
        attrs.out_dtype = std::move(out_dtype);
        attrs.allow_wraparound = allow_wraparound;
        attrs.threads = threads;
        const ArrayView x = borrow(data, "data", parse_layout(attrs.data_layout, "data_layout"),
                                   {DType::u8, DType::s8});
        const ArrayView w =
            borrow(weight, "weight", parse_layout(attrs.kernel_layout, "kernel_layout"),
                   {DType::u8, DType::s8});
        const std::int32_t zx = int32(input_zero_point, "input_zero_point");
        const qnn::ZeroPoints zw = int32s(kernel_zero_point, "kernel_zero_point");
        const double sx = number(input_scale, "input_scale");
        const qnn::Scales sw = doubles(kernel_scale, "kernel_scale");
        Tensor y;
        {
          py::gil_scoped_release release;
          y = qnn::conv2d_transpose(x.view, w.view, zx, zw, sx, sw, attrs);
        }
        return to_numpy(std::move(y));
      },
      py::arg("data"), py::arg("weight"), py::arg("input_zero_point"), py::arg("kernel_zero_point"),
      py::arg("input_scale"), py::arg("kernel_scale"), py::arg("strides"), py::arg("padding"),
      py::arg("dilation"), py::arg("groups"), py::arg("channels"), py::arg("kernel_size"),
      py::arg("data_layout"), py::arg("kernel_layout"), py::arg("out_layout"),
      py::arg("output_padding"), py::arg("out_dtype"), py::arg("allow_wraparound"),
      py::arg("threads"));

  m.def(
      "qnn_requantize", [](py::handle data, py::handle input_scale, py::handle input_zero_point,
                           py::handle output_scale, py::handle output_zero_point, std::int64_t axis,
                           std::string rounding, std::string compute_dtype, std::string out_dtype) {
        qnn::RequantizeAttrs attrs;
        attrs.rounding = std::move(rounding);
        attrs.compute_dtype = std::move(compute_dtype);
        attrs.out_dtype = std::move(out_dtype);
        py::array array = py::array::ensure(data);
        if (!array)
          throw py::type_error("data must be an array, got " + py::repr(data).cast<std::string>());
        const py::tuple shape = array.attr("shape");
        const ChannelView channels = channel_view(array, axis);
        attrs.axis = channels.axis;
        const ArrayView x =
            convert(array.attr("reshape")(channels.shape), "data", channels.layout, DType::s32);
        const qnn::Scales si = doubles(input_scale, "input_scale");
        const std::int32_t zi = int32(input_zero_point, "input_zero_point");
        const double so = number(output_scale, "output_scale");
        const std::int32_t zo = int32(output_zero_point, "output_zero_point");
        Tensor y;
        {
          py::gil_scoped_release release;
          y = qnn::requantize(x.view, si, zi, so, zo, attrs);
        }
        return to_numpy(std::move(y)).attr("reshape")(shape);
      });
}

}  // namespace qconv::python
