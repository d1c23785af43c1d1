// SPDX-License-Identifier: Apache-2.0
// Prepared weights on disk and in memory: PreparedWeights.save / load / to_bytes / from_bytes.
#include <string_view>
#include <vector>

#include "bindings.hpp"
#include "convert.hpp"
#include "qconv/serialize.hpp"
#include "without_gil.hpp"

namespace qconv::python {

void bind_serialization(py::class_<ttnn::PreparedWeights>& weights) {
  using ttnn::PreparedWeights;
  weights
      .def(
          "save",
          [](const PreparedWeights& w, py::handle path, py::handle keep_original_weights) {
            const std::filesystem::path p = path_arg(path, "path");
            const SaveOptions options{boolean(keep_original_weights, "keep_original_weights")};
            without_gil([&] {
              save(w.plan(), p, options);
              return 0;
            });
          },
          py::arg("path"), py::arg("keep_original_weights") = false)
      .def(
          "to_bytes",
          [](const PreparedWeights& w, py::handle keep_original_weights) {
            const std::vector<std::byte> bytes = serialize(
                w.plan(), SaveOptions{boolean(keep_original_weights, "keep_original_weights")});
            return py::bytes(reinterpret_cast<const char*>(bytes.data()), bytes.size());
          },
          py::arg("keep_original_weights") = false)
      .def_static(
          "load",
          [](py::handle path) {
            const std::filesystem::path p = path_arg(path, "path");
            return without_gil([&] { return PreparedWeights(load(p)); });
          },
          py::arg("path"))
      .def_static(
          "from_bytes",
          [](py::handle data) {
            if (!PyBytes_Check(data.ptr()) && !PyByteArray_Check(data.ptr()) &&
                !PyMemoryView_Check(data.ptr())) {
              throw py::type_error("data must be bytes, bytearray or memoryview, got " +
                                   std::string(py::repr(data)));
            }
            PyObject* copy = PyBytes_FromObject(data.ptr());
            if (copy == nullptr) throw py::error_already_set();
            const std::string bytes = py::reinterpret_steal<py::bytes>(copy);
            return PreparedWeights(deserialize(
                std::span(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size())));
          },
          py::arg("data"));
}

}  // namespace qconv::python
