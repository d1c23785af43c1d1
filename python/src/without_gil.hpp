// SPDX-License-Identifier: Apache-2.0
// The computations run with the GIL released, so that other Python threads keep running meanwhile.
//
// A daemon thread may still be inside such a computation when the interpreter exits. CPython then
// ends any thread that asks for the GIL back (from a destructor that must not throw: the process
// would abort), and C++ static destructors (the thread pool's) run while the computation still
// uses them. So the module counts the computations in flight, and an atexit hook (which runs
// before either) waits for those in flight to finish; a computation another thread asks for after
// it waits for the process to end instead of starting (the exiting thread itself runs as usual).
#pragma once

#include <pybind11/pybind11.h>

#include <utility>

namespace qconv::python {

namespace detail {
// Counts a computation in; once the interpreter has begun to exit, waits (without the GIL) for the
// process to end instead.
void enter_computation();
// Counts it out (with the GIL held again).
void leave_computation() noexcept;
}  // namespace detail

// Registers the atexit hook (once, at import).
void register_exit_hook(pybind11::module_& m);

// Calls `work` with the GIL released and returns its result once the GIL is held again (to turn
// it into Python objects). `work` must touch no Python object: convert the arguments before.
template <class Work>
auto without_gil(Work&& work) {
  detail::enter_computation();
  struct Leave {
    ~Leave() { detail::leave_computation(); }
  } leave;  // destroyed after `release`, so with the GIL held
  pybind11::gil_scoped_release release;
  return std::forward<Work>(work)();
}

}  // namespace qconv::python
