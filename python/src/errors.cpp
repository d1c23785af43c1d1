// SPDX-License-Identifier: Apache-2.0
// qconv's C++ exceptions as Python exceptions, one class per C++ class, all ValueErrors, each
// carrying the C++ message (which names the field, the value and the rule). Messages are decoded
// as UTF-8 with replacement: a file's non-UTF-8 bytes quoted in a message never lose it.
#include <system_error>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/error.hpp"

namespace qconv::python {

namespace py = pybind11;

namespace {

// The Python classes, created once and kept for the life of the process (never released: the
// translator may run until the interpreter's very end).
struct ErrorTypes {
  PyObject* error = nullptr;
  PyObject* invalid_argument = nullptr;
  PyObject* shape_mismatch = nullptr;
  PyObject* overflow_risk = nullptr;
  PyObject* prepared_mismatch = nullptr;
  PyObject* format_error = nullptr;
};
ErrorTypes types;

PyObject* new_type(py::module_& m, const char* name, PyObject* base) {
  PyObject* type = PyErr_NewException(
      (std::string(py::str(m.attr("__name__"))) + "." + name).c_str(), base, nullptr);
  if (type == nullptr) throw py::error_already_set();
  Py_INCREF(type);  // one reference for the module, one kept here
  if (PyModule_AddObject(m.ptr(), name, type) != 0) throw py::error_already_set();
  return type;
}

void raise(PyObject* type, const char* message) {
  const py::str text = to_str(message);
  PyErr_SetObject(type, text.ptr());
}

// OSError(errno, message): Python picks the subclass of the errno (FileNotFoundError,
// PermissionError, IsADirectoryError, ...) and keeps it in .errno.
void raise_os_error(const std::system_error& e) {
  const py::str text = to_str(e.what());
  PyObject* error = PyObject_CallFunction(PyExc_OSError, "iO", e.code().value(), text.ptr());
  if (error == nullptr) return;  // the call's own exception is set
  PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error)), error);
  Py_DECREF(error);
}

}  // namespace

void bind_errors(py::module_& m) {
  types.error = new_type(m, "Error", PyExc_ValueError);
  types.invalid_argument = new_type(m, "InvalidArgument", types.error);
  types.shape_mismatch = new_type(m, "ShapeMismatch", types.error);
  types.overflow_risk = new_type(m, "OverflowRisk", types.error);
  types.prepared_mismatch = new_type(m, "PreparedMismatch", types.error);
  types.format_error = new_type(m, "FormatError", types.error);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InvalidArgument& e) {
      raise(types.invalid_argument, e.what());
    } catch (const ShapeMismatch& e) {
      raise(types.shape_mismatch, e.what());
    } catch (const OverflowRisk& e) {
      raise(types.overflow_risk, e.what());
    } catch (const PreparedMismatch& e) {
      raise(types.prepared_mismatch, e.what());
    } catch (const FormatError& e) {
      raise(types.format_error, e.what());
    } catch (const Error& e) {
      raise(types.error, e.what());
    } catch (const std::system_error& e) {
      // A file the system refuses to read or write (save, load) is an OSError, as Python's own
      // are, with its errno.
      raise_os_error(e);
    } catch (const std::bad_alloc& e) {
      raise(PyExc_MemoryError, e.what());
    }
  });
}

}  // namespace qconv::python
