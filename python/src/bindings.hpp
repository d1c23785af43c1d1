// SPDX-License-Identifier: Apache-2.0
// One function per face adds that face's low-level functions to the extension module. The
// Python package (python/qconv) wraps them with the frameworks' signatures and docstrings.
#pragma once

#include <pybind11/pybind11.h>

#include "qconv/faces/ttnn.hpp"

namespace qconv::python {

void bind_errors(pybind11::module_& m);
void bind_conversions(pybind11::module_& m);
void bind_qnn(pybind11::module_& m);
void bind_functional(pybind11::module_& m);
void bind_ttnn(pybind11::module_& m);
void bind_onnx(pybind11::module_& m);
// PreparedWeights.save / load / to_bytes / from_bytes (python/src/serialization.cpp).
void bind_serialization(pybind11::class_<ttnn::PreparedWeights>& weights);

}  // namespace qconv::python
