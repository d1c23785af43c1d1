// SPDX-License-Identifier: Apache-2.0
// std::bad_alloc with a message that says what could not be allocated and how large it was.
#pragma once

#include <new>
#include <string>
#include <utility>

namespace qconv::detail {

class AllocationFailure : public std::bad_alloc {
 public:
  explicit AllocationFailure(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

}  // namespace qconv::detail
