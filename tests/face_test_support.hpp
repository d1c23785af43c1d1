// Small helpers for face tests: views over std::vector literals with the dtype taken from the
// element type, a tensor's values back as plain ints, and an exception check that also reads the
// message.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "qconv/tensor.hpp"

namespace qconv::test_support {

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  if constexpr (std::is_same_v<T, std::int8_t>) return DType::s8;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::s32;
}

template <class T>
ConstTensorView view(const std::vector<T>& values, Layout layout, Shape shape) {
  return {values.data(), values.size() * sizeof(T), dtype_of<T>(), layout, std::move(shape)};
}

// int8 and uint8 values widened, so that expectations read as plain numbers.
inline std::vector<int> ints(const Tensor& tensor) {
  std::vector<int> out(static_cast<std::size_t>(tensor.elements()));
  for (std::size_t i = 0; i < out.size(); ++i) {
    switch (tensor.dtype()) {
      case DType::u8: out[i] = tensor.as<std::uint8_t>()[i]; break;
      case DType::s8: out[i] = tensor.as<std::int8_t>()[i]; break;
      default: out[i] = tensor.as<std::int32_t>()[i]; break;
    }
  }
  return out;
}

// Runs `call` and checks that it throws exactly E with `fragment` somewhere in the message.
template <class E, class F>
void expect_error(F&& call, std::string_view fragment) {
  try {
    call();
    ADD_FAILURE() << "no exception; expected one containing \"" << fragment << "\"";
  } catch (const E& e) {
    EXPECT_NE(std::string_view(e.what()).find(fragment), std::string_view::npos)
        << "message: " << e.what() << "\nexpected to contain: " << fragment;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type; message: " << e.what();
  }
}

}  // namespace qconv::test_support
