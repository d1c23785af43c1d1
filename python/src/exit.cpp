// SPDX-License-Identifier: Apache-2.0
// The module's shutdown: computations still in flight when Python exits are waited for before the
// interpreter and the C++ statics are torn down (without_gil.hpp says why).
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

#include "bindings.hpp"
#include "without_gil.hpp"

namespace qconv::python {

namespace {

struct InFlight {
  std::mutex mutex;
  std::condition_variable idle;
  int count = 0;
  bool closing = false;
  std::thread::id exiting_thread;  // the thread that runs the exit (and may still call qconv)
};

// Never destroyed: daemon threads may still count out while the process's statics go away.
InFlight& in_flight() {
  static auto* state = new InFlight;
  return *state;
}

}  // namespace

namespace detail {

void enter_computation() {
  InFlight& s = in_flight();
  std::unique_lock lock(s.mutex);
  if (s.closing && std::this_thread::get_id() != s.exiting_thread) {
    // Only a daemon thread can get here: Python is exiting. It waits, without the GIL, for the
    // process to end (as CPython itself makes daemon threads wait): returning to Python or
    // raising would only print noise, and asking for the GIL back could abort the process.
    lock.unlock();
    const pybind11::gil_scoped_release release;
    for (;;) std::this_thread::sleep_for(std::chrono::hours(1));
  }
  ++s.count;
}

void leave_computation() noexcept {
  InFlight& s = in_flight();
  const std::lock_guard lock(s.mutex);
  if (--s.count == 0) s.idle.notify_all();
}

}  // namespace detail

void register_exit_hook(pybind11::module_& m) {
  namespace py = pybind11;
  m.def("_wait_for_computations", [] {
    InFlight& s = in_flight();
    {
      const std::lock_guard lock(s.mutex);
      s.closing = true;
      // Exit handlers registered before qconv was imported run after this one, on this thread,
      // and may still call qconv: they run as usual (only other threads are held back).
      s.exiting_thread = std::this_thread::get_id();
    }
    // The computations in flight need the GIL back to finish.
    const py::gil_scoped_release release;
    std::unique_lock lock(s.mutex);
    s.idle.wait(lock, [&s] { return s.count == 0; });
  });
  py::module_::import("atexit").attr("register")(m.attr("_wait_for_computations"));
}

}  // namespace qconv::python
