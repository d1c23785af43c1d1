// SPDX-License-Identifier: Apache-2.0
#include "progress.hpp"

#include <unistd.h>

#include <cstdio>

namespace qconv::bench {

Progress::Progress(std::size_t total) : total_(total), terminal_(isatty(STDERR_FILENO) == 1) {}

Progress::~Progress() { clear(); }

void Progress::show(std::size_t index, std::string_view network, std::string_view layer) {
  if (!terminal_) {  // a log (CI): one plain line per layer, so a slow layer shows where it is
    std::fprintf(stderr, "[%zu/%zu] %.*s %.*s\n", index + 1, total_,
                 static_cast<int>(network.size()), network.data(), static_cast<int>(layer.size()),
                 layer.data());
    std::fflush(stderr);
    return;
  }
  // "\r\033[K": back to the start of the line and erase it, so each message replaces the last.
  std::fprintf(stderr, "\r\033[K[%zu/%zu] %.*s %.*s ...", index + 1, total_,
               static_cast<int>(network.size()), network.data(), static_cast<int>(layer.size()),
               layer.data());
  std::fflush(stderr);
  shown_ = true;
}

void Progress::clear() {
  if (!shown_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
  shown_ = false;
}

}  // namespace qconv::bench
