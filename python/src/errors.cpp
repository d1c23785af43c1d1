// SPDX-License-Identifier: Apache-2.0
// qconv's C++ exceptions as Python exceptions, one class per C++ class, all ValueErrors, each
// carrying the C++ message (which names the field, the value and the rule).
#include <system_error>

#include "bindings.hpp"
#include "qconv/error.hpp"

namespace qconv::python {

namespace py = pybind11;

void bind_errors(py::module_& m) {
  // pybind11 tries translators newest first, so the base class is registered first and every
  // subclass is caught as itself.
  const auto& error = py::register_exception<Error>(m, "Error", PyExc_ValueError);
  py::register_exception<InvalidArgument>(m, "InvalidArgument", error.ptr());
  py::register_exception<ShapeMismatch>(m, "ShapeMismatch", error.ptr());
  py::register_exception<OverflowRisk>(m, "OverflowRisk", error.ptr());
  py::register_exception<PreparedMismatch>(m, "PreparedMismatch", error.ptr());
  py::register_exception<FormatError>(m, "FormatError", error.ptr());
  // A file the system refuses to read or write (save, load) is an OSError, as Python's own are.
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const std::system_error& e) {
      PyErr_SetString(PyExc_OSError, e.what());
    }
  });
}

}  // namespace qconv::python
