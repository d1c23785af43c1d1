// SPDX-License-Identifier: Apache-2.0
// One way to build error messages: "<field> = <value>: <rule>".
#pragma once

#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

#include "qconv/error.hpp"

namespace qconv::detail {

// The largest size, stride, dilation, padding or output extent a problem may have: 2^31 - 1.
inline constexpr std::int64_t kMaxSize = 0x7fffffff;

template <class V>
std::string describe_value(const V& value) {
  std::ostringstream out;
  out.precision(17);
  out << std::boolalpha;
  out << value;
  return out.str();
}

template <class E = InvalidArgument, class V>
[[noreturn]] void fail(std::string_view field, const V& value, std::string_view rule) {
  throw E(std::string(field) + " = " + describe_value(value) + ": " + std::string(rule));
}

// Throws E naming the field when `ok` is false.
template <class E = InvalidArgument, class V>
void require(bool ok, std::string_view field, const V& value, std::string_view rule) {
  if (!ok) fail<E>(field, value, rule);
}

}  // namespace qconv::detail
