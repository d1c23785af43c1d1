// SPDX-License-Identifier: Apache-2.0
#include "qconv/types.hpp"

#include <array>
#include <limits>
#include <utility>

#include "core/check.hpp"

namespace qconv {
namespace {

constexpr std::array<std::pair<std::string_view, DType>, 12> kDTypeNames{{
    {"u8", DType::u8},
    {"uint8", DType::u8},
    {"quint8", DType::u8},
    {"s8", DType::s8},
    {"int8", DType::s8},
    {"qint8", DType::s8},
    {"s32", DType::s32},
    {"int32", DType::s32},
    {"qint32", DType::s32},
    {"f32", DType::f32},
    {"float32", DType::f32},
    {"float", DType::f32},
}};

constexpr std::array<std::pair<std::string_view, Layout>, 8> kLayoutNames{{
    {"NCHW", Layout::NCHW},
    {"NHWC", Layout::NHWC},
    {"OIHW", Layout::OIHW},
    {"OHWI", Layout::OHWI},
    {"HWIO", Layout::HWIO},
    {"HWOI", Layout::HWOI},
    {"IOHW", Layout::IOHW},
    {"X", Layout::X},
}};

}  // namespace

std::string_view to_string(DType dtype) {
  switch (dtype) {
    case DType::u8: return "u8";
    case DType::s8: return "s8";
    case DType::s32: return "s32";
    case DType::f32: return "f32";
  }
  return "?";
}

std::string_view to_string(Layout layout) {
  for (const auto& [name, value] : kLayoutNames) {
    if (value == layout) return name;
  }
  return "?";
}

std::size_t element_size(DType dtype) { return dtype == DType::u8 || dtype == DType::s8 ? 1 : 4; }

std::int64_t dtype_min(DType dtype) {
  switch (dtype) {
    case DType::u8: return 0;
    case DType::s8: return -128;
    default: return std::numeric_limits<std::int32_t>::min();
  }
}

std::int64_t dtype_max(DType dtype) {
  switch (dtype) {
    case DType::u8: return 255;
    case DType::s8: return 127;
    default: return std::numeric_limits<std::int32_t>::max();
  }
}

DType parse_dtype(std::string_view name, std::string_view field) {
  for (const auto& [n, value] : kDTypeNames) {
    if (n == name) return value;
  }
  detail::fail(field, name, "unknown dtype (expected uint8, int8, int32 or float32)");
}

Layout parse_layout(std::string_view name, std::string_view field) {
  for (const auto& [n, value] : kLayoutNames) {
    if (n == name) return value;
  }
  detail::fail(field, name, "unknown layout (expected NCHW, NHWC, OIHW, OHWI, HWIO, HWOI or IOHW)");
}

bool is_activation_layout(Layout layout) {
  return layout == Layout::NCHW || layout == Layout::NHWC;
}

bool is_weight_layout(Layout layout) {
  return layout != Layout::X && !is_activation_layout(layout);
}

}  // namespace qconv
