// SPDX-License-Identifier: Apache-2.0
// The computations run with the GIL released, so that other Python threads keep running meanwhile.
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

namespace qconv::python {

// Calls `work` with the GIL released and returns its result once the GIL is held again (to turn
// it into Python objects). `work` must touch no Python object: convert the arguments before.
template <class Work>
auto without_gil(Work&& work) {
  pybind11::gil_scoped_release release;
  return std::forward<Work>(work)();
}

}  // namespace qconv::python
