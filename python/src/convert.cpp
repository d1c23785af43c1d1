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
    throw InvalidArgument(std::string(field) + " = " + repr_of(value) + ": must be an integer");
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

std::vector<std::int64_t> int64s(py::handle value, std::string_view field) {
  if (value.is_none()) return {};
  auto index = [&](py::handle item) {
    if (!PyIndex_Check(item.ptr())) {
      throw py::type_error(std::string(field) + " must be an int or a sequence of ints, got " +
                           repr_of(value));
    }
    return py::reinterpret_steal<py::int_>(PyNumber_Index(item.ptr())).cast<std::int64_t>();
  };
  if (PyIndex_Check(value.ptr())) return {index(value)};
  if (!PySequence_Check(value.ptr()) || py::isinstance<py::str>(value)) {
    throw py::type_error(std::string(field) + " must be an int or a sequence of ints, got " +
                         repr_of(value));
  }
  std::vector<std::int64_t> out;
  for (py::handle item : py::reinterpret_borrow<py::sequence>(value)) out.push_back(index(item));
  return out;
}

std::array<std::int64_t, 2> pair(py::handle value, std::string_view field) {
  const std::vector<std::int64_t> values = int64s(value, field);
  if (values.size() == 1) return {values[0], values[0]};
  if (values.size() == 2) return {values[0], values[1]};
  throw InvalidArgument(std::string(field) + " = " + repr_of(value) +
                        ": takes 1 or 2 values (h, w)");
}

}  // namespace qconv::python
