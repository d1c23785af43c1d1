// SPDX-License-Identifier: Apache-2.0
// Assertions for qconv's errors: the exact exception type, a message naming the field (and
// usually its value), and — for a refused execution — an output buffer left byte-for-byte as it
// was. Use as EXPECT_TRUE(throws<InvalidArgument>([&] { ... }, {"stride_h = 0"})) so a failure
// points at the calling line.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"

namespace qconv::test {

template <class E>
constexpr std::string_view error_name() {
  if constexpr (std::is_same_v<E, InvalidArgument>) return "InvalidArgument";
  if constexpr (std::is_same_v<E, ShapeMismatch>) return "ShapeMismatch";
  if constexpr (std::is_same_v<E, OverflowRisk>) return "OverflowRisk";
  if constexpr (std::is_same_v<E, PreparedMismatch>) return "PreparedMismatch";
  if constexpr (std::is_same_v<E, FormatError>) return "FormatError";
  return "an exception";
}

// Passes when `call` throws E (qconv's error types are siblings, so a sibling does not pass) and
// the message contains every needle.
template <class E, class Call>
::testing::AssertionResult throws(const Call& call,
                                  std::initializer_list<std::string_view> needles) {
  try {
    call();
  } catch (const E& e) {
    const std::string message = e.what();
    for (std::string_view needle : needles) {
      if (message.find(needle) == std::string::npos) {
        return ::testing::AssertionFailure()
               << error_name<E>() << " message \"" << message << "\" lacks \"" << needle << "\"";
      }
    }
    return ::testing::AssertionSuccess();
  } catch (const std::exception& e) {
    return ::testing::AssertionFailure()
           << "expected " << error_name<E>() << ", got another exception: " << e.what();
  }
  return ::testing::AssertionFailure() << "expected " << error_name<E>() << ", nothing was thrown";
}

// As `throws`, for a call that writes into `buffer`: the buffer is filled with a sentinel before
// the call and must hold exactly the sentinel after it.
template <class E, class Call>
::testing::AssertionResult throws_leaving_untouched(
    std::span<std::uint8_t> buffer, const Call& call,
    std::initializer_list<std::string_view> needles) {
  constexpr std::uint8_t kSentinel = 0xa5;
  std::fill(buffer.begin(), buffer.end(), kSentinel);
  ::testing::AssertionResult result = throws<E>(call, needles);
  if (!result) return result;
  const auto written =
      std::find_if(buffer.begin(), buffer.end(), [](std::uint8_t b) { return b != kSentinel; });
  if (written != buffer.end()) {
    return ::testing::AssertionFailure()
           << "the call threw " << error_name<E>() << " but wrote byte "
           << (written - buffer.begin()) << " of the output first";
  }
  return ::testing::AssertionSuccess();
}

}  // namespace qconv::test
