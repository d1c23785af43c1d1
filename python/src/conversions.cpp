// SPDX-License-Identifier: Apache-2.0
// Test hooks: which buffer a tensor view would read (so the tests can tell zero-copy from a
// copy), and each C++ exception class thrown on demand (so the tests see every translation).
#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/error.hpp"

namespace qconv::python {

void bind_conversions(py::module_& m) {
  m.def(
      "_borrowed_address",
      [](py::handle array) {
        const ArrayView v = borrow(array, "array", Layout::X, {DType::u8, DType::s8, DType::s32});
        return reinterpret_cast<std::uintptr_t>(v.view.data());
      },
      "Address of the buffer a one-dimensional u8/s8/s32 argument is read from (tests only).");
  m.def(
      "_converted",
      [](py::handle array, const std::string& dtype) {
        const ArrayView v = convert(array, "array", Layout::X, parse_dtype(dtype, "dtype"));
        return py::make_tuple(reinterpret_cast<std::uintptr_t>(v.view.data()), v.owner);
      },
      "(address, array) a one-dimensional argument converted to dtype is read from (tests only).");
  m.def(
      "_throw",
      [](const std::string& kind, const std::string& message) {
        if (kind == "Error") throw Error(message);
        if (kind == "InvalidArgument") throw InvalidArgument(message);
        if (kind == "ShapeMismatch") throw ShapeMismatch(message);
        if (kind == "OverflowRisk") throw OverflowRisk(message);
        if (kind == "PreparedMismatch") throw PreparedMismatch(message);
        if (kind == "FormatError") throw FormatError(message);
        throw py::value_error("unknown kind " + kind);
      },
      "Throws the C++ exception class `kind` with `message` (tests only).");
}

}  // namespace qconv::python
