// SPDX-License-Identifier: Apache-2.0
// NumPy arrays in and out of qconv tensors. An input array is used in place when it already is
// C-contiguous, aligned and of the wanted native dtype (zero-copy); anything else (a slice with
// steps, negative strides, Fortran order, a byte-swapped or misaligned buffer, a Python list, an
// integer dtype of another width) is copied into a fresh contiguous array first, and a value that
// the wanted dtype cannot hold is refused rather than wrapped.
#pragma once

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>

#include <array>
#include <cstdint>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qconv/tensor.hpp"
#include "qconv/types.hpp"

namespace qconv::python {

namespace py = pybind11;

// A tensor view into a NumPy array; `owner` keeps the memory alive for as long as the view is used
// (the caller's own array when zero-copy, otherwise the contiguous copy).
struct ArrayView {
  py::array owner;
  ConstTensorView view;
};

// An argument whose element type is chosen by the array's own dtype (activations and weights:
// uint8 means u8, int8 means s8). Any other dtype is refused with InvalidArgument naming `field`.
ArrayView borrow(py::handle array, std::string_view field, Layout layout,
                 std::initializer_list<DType> accepted);
// `borrow` for the quantized operands every face takes: u8 or s8.
ArrayView borrow_quantized(py::handle array, std::string_view field, Layout layout);

// An argument of one fixed element type (an s32 accumulator, an s32 or float bias). Integer
// arrays of other widths are converted when every value fits (InvalidArgument otherwise); a float
// target also takes any real array, rounded to binary32 as NumPy's astype does.
ArrayView convert(py::handle array, std::string_view field, Layout layout, DType target);
// `convert`, or nothing when the argument is None (an optional bias).
std::optional<ArrayView> convert_optional(py::handle array, std::string_view field, Layout layout,
                                          DType target);

// The elements of an optional converted argument, as the faces take an optional bias.
template <class T>
std::optional<std::span<const T>> span_of(const std::optional<ArrayView>& array) {
  if (!array) return std::nullopt;
  return std::span<const T>(array->view.as<T>(), static_cast<std::size_t>(array->view.elements()));
}

// The NumPy dtype of a qconv element type.
py::dtype numpy_dtype(DType dtype);
// The qconv element type of a NumPy dtype, if it is one (byte order ignored).
std::optional<DType> qconv_dtype(const py::dtype& dtype);

// Hands an owning tensor to NumPy without copying: the array's base owns the storage.
py::array to_numpy(Tensor&& tensor);

// A scalar or a one-dimensional sequence of numbers (a scale, a zero point, per tensor or per
// channel). Zero points must be integers that fit in int32.
std::vector<double> doubles(py::handle value, std::string_view field);
double number(py::handle value, std::string_view field);
std::vector<std::int32_t> int32s(py::handle value, std::string_view field);
std::int32_t int32(py::handle value, std::string_view field);

// An int or a sequence of ints (strides, padding, dilation); `None` gives an empty list. A NumPy
// integer array of rank 0 or 1 is taken too; str, bytes and bytearray are refused (TypeError).
std::vector<std::int64_t> int64s(py::handle value, std::string_view field);
// (h, w) from one int (both) or two (kernel_size, stride and dilation where a face takes a pair).
std::array<std::int64_t, 2> pair(py::handle value, std::string_view field);

// ---- the bindings' scalar arguments: each names its argument in every error ----
// A wrong Python type is a TypeError naming the argument; a value out of the C++ type's range is
// InvalidArgument (qconv.InvalidArgument) naming the argument, the value and the range.

// A Python int (or anything with __index__: numpy integers, bool) in [lo, hi].
std::int64_t integer(py::handle value, std::string_view field,
                     std::int64_t lo = std::numeric_limits<std::int64_t>::min(),
                     std::int64_t hi = std::numeric_limits<std::int64_t>::max());
// `integer` in the range of int (thread counts).
int int_arg(py::handle value, std::string_view field);
// None, or `integer` in the range of int32.
std::optional<std::int32_t> optional_int32(py::handle value, std::string_view field);
// A list of int32 values; an empty sequence gives an empty list.
std::vector<std::int32_t> int32_list(py::handle value, std::string_view field);
// True or False (or a NumPy bool).
bool boolean(py::handle value, std::string_view field);
// A str, as UTF-8.
std::string text(py::handle value, std::string_view field);
// A file-system path: str, bytes or os.PathLike (non-UTF-8 names are kept as their bytes).
std::filesystem::path path_arg(py::handle value, std::string_view field);

// A C++ string as a Python str: bytes that are not UTF-8 are replaced (U+FFFD), never an error.
py::str to_str(std::string_view text);

}  // namespace qconv::python
