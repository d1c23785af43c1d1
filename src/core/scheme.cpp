// SPDX-License-Identifier: Apache-2.0
#include "qconv/scheme.hpp"

#include <array>
#include <utility>

#include "core/check.hpp"

namespace qconv {
namespace {

constexpr std::array<std::pair<std::string_view, SchemeKind>, 10> kSchemeNames{{
    {"int32", SchemeKind::int32},
    {"fbgemm", SchemeKind::fbgemm},
    {"qnnpack", SchemeKind::qnnpack},
    {"onednn", SchemeKind::onednn},
    {"onnx", SchemeKind::onnx},
    {"tvm", SchemeKind::tvm},
    {"tvm_f32", SchemeKind::tvm_f32},
    {"tflite", SchemeKind::tflite},
    {"tflite_single", SchemeKind::tflite_single},
    {"onnxruntime", SchemeKind::onnxruntime},
}};

}  // namespace

std::string_view to_string(SchemeKind kind) {
  for (const auto& [name, value] : kSchemeNames) {
    if (value == kind) return name;
  }
  return "?";
}

std::string_view to_string(Rounding rounding) {
  return rounding == Rounding::upward ? "UPWARD" : "TONEAREST";
}

SchemeKind parse_scheme(std::string_view name, std::string_view field) {
  for (const auto& [n, value] : kSchemeNames) {
    if (n == name) return value;
  }
  detail::fail(field, name,
               "unknown output scheme (expected int32, fbgemm, qnnpack, onednn, onnx, onnxruntime, "
               "tvm, tvm_f32, tflite or tflite_single)");
}

Rounding parse_rounding(std::string_view name, std::string_view field) {
  if (name == "UPWARD" || name == "upward") return Rounding::upward;
  if (name == "TONEAREST" || name == "tonearest") return Rounding::tonearest;
  detail::fail(field, name, "rounding is UPWARD or TONEAREST");
}

std::string_view to_string(Activation::Kind kind) {
  switch (kind) {
    case Activation::Kind::relu: return "relu";
    case Activation::Kind::clamp: return "clamp";
    default: return "none";
  }
}

bool takes_float_bias(SchemeKind kind) {
  return kind == SchemeKind::fbgemm || kind == SchemeKind::qnnpack || kind == SchemeKind::onednn;
}

}  // namespace qconv
