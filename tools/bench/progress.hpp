// SPDX-License-Identifier: Apache-2.0
// "[3/23] resnet50 l1.3x3 ..." on stderr while the bench runs, only when stderr is a terminal
// (so logs and pipes stay clean).
#pragma once

#include <cstddef>
#include <string_view>

namespace qconv::bench {

class Progress {
 public:
  explicit Progress(std::size_t total);
  ~Progress();  // clears the line
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  void show(std::size_t index, std::string_view network, std::string_view layer);
  void clear();

 private:
  std::size_t total_;
  bool terminal_;
  bool shown_ = false;
};

}  // namespace qconv::bench
