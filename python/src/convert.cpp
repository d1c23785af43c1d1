// SPDX-License-Identifier: Apache-2.0
#include "convert.hpp"

#include <limits>
#include <memory>

#include "qconv/error.hpp"

namespace qconv::python {
namespace {

py::module_ numpy() { return py::module_::import("numpy"); }

std::string repr_of(py::handle value) { return py::repr(value).cast<std::string>(); }

std::string dtype_name(const py::dtype& dtype) { return dtype.attr("name").cast<std::string>(); }

std::string names(std::initializer_list<DType> dtypes) {
  std::string out;
  std::size_t i = 0;
  for (DType d : dtypes) {
    if (i > 0) out += i + 1 == dtypes.size() ? " or " : ", ";
    out += dtype_name(numpy_dtype(d));
    ++i;
  }
  return out;
}

// The argument as a NumPy array, without copying when it already is one.
py::array as_array(py::handle value, std::string_view field) {
  if (value.is_none()) throw py::type_error(std::string(field) + " must be an array, got None");
  py::array array = py::array::ensure(value);
  if (!array) {
    throw py::type_error(std::string(field) + " must be an array or convertible to one, got " +
                         repr_of(value));
  }
  return array;
}

// The array itself when it is C-contiguous, aligned and of `dtype` in native byte order;
// otherwise a contiguous, aligned copy in `dtype` (values must already be known to fit).
py::array contiguous(const py::array& array, DType dtype) {
  return numpy().attr("require")(array, numpy_dtype(dtype), py::make_tuple("C", "A"));
}

ArrayView view_of(py::array array, std::string_view field, DType dtype, Layout layout) {
  const Shape shape(array.shape(), array.shape() + array.ndim());
  try {
    ConstTensorView view(array.data(), static_cast<std::size_t>(array.nbytes()), dtype, layout,
                         shape);
    return {std::move(array), view};
  } catch (const InvalidArgument& e) {
    // The view's own message names the rule; the argument's name tells the caller which array.
    throw InvalidArgument(std::string(field) + ": " + e.what());
  }
}

void require_fits(const py::array& array, std::string_view field, DType target) {
  if (array.size() == 0) return;
  const py::object lo = array.attr("min")();
  const py::object hi = array.attr("max")();
  // Exact for every integer dtype: the bounds of the targets are small integers.
  if (lo.cast<double>() >= static_cast<double>(dtype_min(target)) &&
      hi.cast<double>() <= static_cast<double>(dtype_max(target))) {
    return;
  }
  throw InvalidArgument(std::string(field) + " = values in [" + py::str(lo).cast<std::string>() +
                        ", " + py::str(hi).cast<std::string>() + "]: must fit in " +
                        dtype_name(numpy_dtype(target)));
}

}  // namespace

py::dtype numpy_dtype(DType dtype) {
  switch (dtype) {
    case DType::u8: return py::dtype::of<std::uint8_t>();
    case DType::s8: return py::dtype::of<std::int8_t>();
    case DType::s32: return py::dtype::of<std::int32_t>();
    case DType::f32: return py::dtype::of<float>();
  }
  return py::dtype::of<std::uint8_t>();
}

std::optional<DType> qconv_dtype(const py::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'u' && size == 1) return DType::u8;
  if (kind == 'i' && size == 1) return DType::s8;
  if (kind == 'i' && size == 4) return DType::s32;
  if (kind == 'f' && size == 4) return DType::f32;
  return std::nullopt;
}

ArrayView borrow(py::handle value, std::string_view field, Layout layout,
                 std::initializer_list<DType> accepted) {
  py::array array = as_array(value, field);
  const std::optional<DType> dtype = qconv_dtype(array.dtype());
  bool ok = false;
  for (DType d : accepted) ok = ok || dtype == d;
  if (!ok) {
    throw InvalidArgument(std::string(field) + ".dtype = " + dtype_name(array.dtype()) +
                          ": must be " + names(accepted) +
                          " (the array's dtype chooses the quantized type)");
  }
  return view_of(contiguous(array, *dtype), field, *dtype, layout);
}

ArrayView borrow_quantized(py::handle value, std::string_view field, Layout layout) {
  return borrow(value, field, layout, {DType::u8, DType::s8});
}

ArrayView convert(py::handle value, std::string_view field, Layout layout, DType target) {
  py::array array = as_array(value, field);
  const char kind = array.dtype().kind();
  const bool integer = kind == 'i' || kind == 'u';
  if (target == DType::f32) {
    if (!integer && kind != 'f') {
      throw InvalidArgument(std::string(field) + ".dtype = " + dtype_name(array.dtype()) +
                            ": must be a real number type");
    }
  } else {
    if (!integer) {
      throw InvalidArgument(std::string(field) + ".dtype = " + dtype_name(array.dtype()) +
                            ": must be an integer type");
    }
    if (qconv_dtype(array.dtype()) != target) require_fits(array, field, target);
  }
  return view_of(contiguous(array, target), field, target, layout);
}

std::optional<ArrayView> convert_optional(py::handle value, std::string_view field, Layout layout,
                                          DType target) {
  if (value.is_none()) return std::nullopt;
  return convert(value, field, layout, target);
}

py::array to_numpy(Tensor&& tensor) {
  auto owned = std::make_unique<Tensor>(std::move(tensor));
  const Shape& shape = owned->shape();
  const std::vector<py::ssize_t> extents(shape.begin(), shape.end());
  void* data = owned->data();
  const py::dtype dtype = numpy_dtype(owned->dtype());
  py::capsule base(owned.get(), [](void* p) { delete static_cast<Tensor*>(p); });
  owned.release();  // the capsule owns it now
  return py::array(dtype, extents, data, base);
}

std::vector<double> doubles(py::handle value, std::string_view field) {
  py::array array = as_array(value, field);
  const char kind = array.dtype().kind();
  if (kind != 'f' && kind != 'i' && kind != 'u') {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) + ": must be a real number");
  }
  if (array.ndim() > 1 || array.size() == 0) {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be a scalar or a one-dimensional array of one value per channel");
  }
  const auto flat = py::array_t<double, py::array::c_style | py::array::forcecast>::ensure(array);
  return {flat.data(), flat.data() + flat.size()};
}

double number(py::handle value, std::string_view field) {
  const std::vector<double> values = doubles(value, field);
  if (values.size() != 1) {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be a single number");
  }
  return values[0];
}

std::vector<std::int32_t> int32s(py::handle value, std::string_view field) {
  py::array array = as_array(value, field);
  const char kind = array.dtype().kind();
  if (kind != 'i' && kind != 'u') {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be an integer in [-2^31, 2^31 - 1]");
  }
  if (array.ndim() > 1 || array.size() == 0) {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be a scalar or a one-dimensional array of one value per channel");
  }
  require_fits(array, field, DType::s32);
  const auto flat =
      py::array_t<std::int32_t, py::array::c_style | py::array::forcecast>::ensure(array);
  return {flat.data(), flat.data() + flat.size()};
}

std::int32_t int32(py::handle value, std::string_view field) {
  const std::vector<std::int32_t> values = int32s(value, field);
  if (values.size() != 1) {
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be a single integer");
  }
  return values[0];
}

namespace {

[[noreturn]] void wrong_type(std::string_view field, std::string_view wanted, py::handle value) {
  throw py::type_error(std::string(field) + " must be " + std::string(wanted) + ", got " +
                       std::string(py::str(py::type::handle_of(value).attr("__name__"))) + " " +
                       repr_of(value));
}

bool is_text_or_bytes(py::handle value) {
  return PyUnicode_Check(value.ptr()) || PyBytes_Check(value.ptr()) ||
         PyByteArray_Check(value.ptr());
}

// An int-like value as a Python int (new reference), or a TypeError naming `field`. A NumPy array
// of rank >= 1 has __index__ only to raise: it is not an int here.
py::int_ index_of(py::handle item, std::string_view field, std::string_view wanted,
                  py::handle whole) {
  const bool array_of_rank =
      py::isinstance<py::array>(item) && py::reinterpret_borrow<py::array>(item).ndim() > 0;
  // NumPy's bool is an index only by deprecation: it is no int here.
  const bool numpy_bool = py::isinstance(item, numpy().attr("bool_"));
  if (array_of_rank || numpy_bool || !PyIndex_Check(item.ptr())) wrong_type(field, wanted, whole);
  PyObject* index = PyNumber_Index(item.ptr());
  if (index == nullptr) {
    // __index__ raised: keep its message, name the argument.
    const py::error_already_set raised;
    throw py::type_error(std::string(field) + " must be " + std::string(wanted) + ": " +
                         repr_of(item) + ".__index__() raised " + raised.what());
  }
  return py::reinterpret_steal<py::int_>(index);
}

std::string range_text(std::int64_t lo, std::int64_t hi) {
  auto bound = [](std::int64_t v) {
    if (v == std::numeric_limits<std::int64_t>::max()) return std::string("2^63 - 1");
    if (v == std::numeric_limits<std::int64_t>::min()) return std::string("-2^63");
    if (v == std::numeric_limits<std::int32_t>::max()) return std::string("2^31 - 1");
    if (v == std::numeric_limits<std::int32_t>::min()) return std::string("-2^31");
    return std::to_string(v);
  };
  return "must be between " + bound(lo) + " and " + bound(hi);
}

std::int64_t in_range(const py::int_& value, std::string_view field, std::int64_t lo,
                      std::int64_t hi, std::string_view shown) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(value.ptr(), &overflow);
  if (v == -1 && PyErr_Occurred()) throw py::error_already_set();
  if (overflow != 0 || v < lo || v > hi) {
    throw InvalidArgument(std::string(field) + " = " + std::string(shown) + ": " +
                          range_text(lo, hi));
  }
  return v;
}

}  // namespace

std::vector<std::int64_t> int64s(py::handle value, std::string_view field) {
  if (value.is_none()) return {};
  constexpr std::string_view wanted = "an int or a sequence of ints";
  constexpr auto lo = std::numeric_limits<std::int64_t>::min();
  constexpr auto hi = std::numeric_limits<std::int64_t>::max();
  const bool zero_d =
      py::isinstance<py::array>(value) && py::reinterpret_borrow<py::array>(value).ndim() == 0;
  if (zero_d || (PyIndex_Check(value.ptr()) && !py::isinstance<py::array>(value))) {
    return {in_range(index_of(value, field, wanted, value), field, lo, hi, repr_of(value))};
  }
  if (!PySequence_Check(value.ptr()) || is_text_or_bytes(value)) wrong_type(field, wanted, value);
  if (py::isinstance<py::array>(value) && py::reinterpret_borrow<py::array>(value).ndim() != 1) {
    wrong_type(field, wanted, value);
  }
  std::vector<std::int64_t> out;
  const auto sequence = py::reinterpret_borrow<py::sequence>(value);
  const py::ssize_t size = PySequence_Size(value.ptr());
  if (size < 0) throw py::error_already_set();
  for (py::ssize_t i = 0; i < size; ++i) {
    const py::object item = sequence[static_cast<std::size_t>(i)];
    out.push_back(in_range(index_of(item, field, wanted, value), field, lo, hi, repr_of(value)));
  }
  return out;
}

std::int64_t integer(py::handle value, std::string_view field, std::int64_t lo, std::int64_t hi) {
  return in_range(index_of(value, field, "an int", value), field, lo, hi, repr_of(value));
}

int int_arg(py::handle value, std::string_view field) {
  return static_cast<int>(
      integer(value, field, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

std::optional<std::int32_t> optional_int32(py::handle value, std::string_view field) {
  if (value.is_none()) return std::nullopt;
  return static_cast<std::int32_t>(integer(value, field, std::numeric_limits<std::int32_t>::min(),
                                           std::numeric_limits<std::int32_t>::max()));
}

std::vector<std::int32_t> int32_list(py::handle value, std::string_view field) {
  if (value.is_none()) return {};
  const bool is_array = py::isinstance<py::array>(value);
  const auto rank = is_array ? py::reinterpret_borrow<py::array>(value).ndim() : 1;
  if ((PyIndex_Check(value.ptr()) && !is_array) || (is_array && rank == 0)) {
    return {*optional_int32(value, field)};
  }
  if (!PySequence_Check(value.ptr()) || is_text_or_bytes(value) || rank != 1) {
    wrong_type(field, "a sequence of ints", value);
  }
  std::vector<std::int32_t> out;
  const auto sequence = py::reinterpret_borrow<py::sequence>(value);
  const py::ssize_t size = PySequence_Size(value.ptr());
  if (size < 0) throw py::error_already_set();
  for (py::ssize_t i = 0; i < size; ++i) {
    const py::object item = sequence[static_cast<std::size_t>(i)];
    out.push_back(static_cast<std::int32_t>(
        in_range(index_of(item, field, "a sequence of ints", value), field,
                 std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
                 repr_of(value))));
  }
  return out;
}

bool boolean(py::handle value, std::string_view field) {
  if (PyBool_Check(value.ptr())) return value.ptr() == Py_True;
  if (py::isinstance(value, numpy().attr("bool_"))) return PyObject_IsTrue(value.ptr()) == 1;
  wrong_type(field, "True or False", value);
}

std::string text(py::handle value, std::string_view field) {
  if (!PyUnicode_Check(value.ptr())) wrong_type(field, "a str", value);
  Py_ssize_t size = 0;
  const char* data = PyUnicode_AsUTF8AndSize(value.ptr(), &size);
  if (data == nullptr) {
    PyErr_Clear();
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                          ": must be text that UTF-8 can encode");
  }
  return std::string(data, static_cast<std::size_t>(size));
}

std::filesystem::path path_arg(py::handle value, std::string_view field) {
  PyObject* bytes = nullptr;
  if (!PyUnicode_Check(value.ptr()) && !PyBytes_Check(value.ptr()) &&
      !PyObject_HasAttrString(value.ptr(), "__fspath__")) {
    wrong_type(field, "a path (str, bytes or os.PathLike)", value);
  }
  if (PyUnicode_FSConverter(value.ptr(), &bytes) == 0) {
    const py::error_already_set raised;
    throw py::type_error(std::string(field) + " must be a path: " + raised.what());
  }
  const py::bytes owned = py::reinterpret_steal<py::bytes>(bytes);
  return std::filesystem::path(std::string(owned));
}

py::str to_str(std::string_view text) {
  PyObject* s = PyUnicode_DecodeUTF8(text.data(), static_cast<Py_ssize_t>(text.size()), "replace");
  if (s == nullptr) throw py::error_already_set();
  return py::reinterpret_steal<py::str>(s);
}

std::array<std::int64_t, 2> pair(py::handle value, std::string_view field) {
  const std::vector<std::int64_t> values = int64s(value, field);
  if (values.size() == 1) return {values[0], values[0]};
  if (values.size() == 2) return {values[0], values[1]};
  throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                        ": takes 1 or 2 values (h, w)");
}

}  // namespace qconv::python
