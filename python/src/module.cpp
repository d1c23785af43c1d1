// SPDX-License-Identifier: Apache-2.0
// The extension module qconv._qconv: the C++ faces, bound one to one. Every function converts its
// arguments while holding the GIL and releases it for the computation.
#include "bindings.hpp"
#include "without_gil.hpp"

PYBIND11_MODULE(_qconv, m) {
  m.doc() = "qconv's C++ faces, bound one to one; use the qconv package's modules instead.";
  qconv::python::bind_errors(m);
  qconv::python::bind_conversions(m);
  qconv::python::bind_qnn(m);
  qconv::python::bind_functional(m);
  qconv::python::bind_ttnn(m);
  qconv::python::bind_onnx(m);
  qconv::python::register_exit_hook(m);
}
