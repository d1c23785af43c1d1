// SPDX-License-Identifier: Apache-2.0
// What every face test uses, brought in with `using namespace qconv::test_support`: views over
// std::vector literals with the dtype taken from the element type, a tensor's values back as
// plain ints, and the error check of support/expect_error.hpp.
#pragma once

#include <cstdint>
#include <type_traits>
#include <vector>

#include "qconv/error.hpp"
#include "qconv/tensor.hpp"
#include "support/expect_error.hpp"

namespace qconv::test_support {

using qconv::DType;
using qconv::InvalidArgument;
using qconv::Layout;
using qconv::Shape;
using qconv::ShapeMismatch;
using qconv::test::throws;

using U8 = std::vector<std::uint8_t>;
using S8 = std::vector<std::int8_t>;
using S32 = std::vector<std::int32_t>;

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, std::uint8_t>) return DType::u8;
  if constexpr (std::is_same_v<T, std::int8_t>) return DType::s8;
  if constexpr (std::is_same_v<T, std::int32_t>) return DType::s32;
  if constexpr (std::is_same_v<T, float>) return DType::f32;
}

template <class T>
ConstTensorView view(const std::vector<T>& values, Layout layout, Shape shape) {
  return {values.data(), values.size() * sizeof(T), dtype_of<T>(), layout, std::move(shape)};
}

// The tensor's elements read as T, widened to int.
template <class T>
std::vector<int> values_of(const Tensor& tensor) {
  return std::vector<int>(tensor.as<T>(), tensor.as<T>() + tensor.elements());
}

// int8 and uint8 values widened, read as the tensor's own dtype, so that expectations read as
// plain numbers.
inline std::vector<int> ints(const Tensor& tensor) {
  switch (tensor.dtype()) {
    case DType::u8: return values_of<std::uint8_t>(tensor);
    case DType::s8: return values_of<std::int8_t>(tensor);
    default: return values_of<std::int32_t>(tensor);
  }
}

}  // namespace qconv::test_support
