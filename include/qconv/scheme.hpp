// SPDX-License-Identifier: Apache-2.0
// Output schemes (SPEC §4): how each framework turns the exact s32 accumulator into its output.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace qconv {

enum class SchemeKind : std::uint8_t {
  int32,          // TVM qnn.conv2d, ONNX ConvInteger: the accumulator (+ s32 bias)
  fbgemm,         // PyTorch engines fbgemm / x86
  qnnpack,        // PyTorch engine qnnpack
  onednn,         // PyTorch engine onednn (oneDNN 2.6 through ideep)
  onnx,           // ONNX QLinearConv reference implementation
  tvm,            // TVM qnn.requantize, integer path (compute_dtype = int64)
  tvm_f32,        // TVM qnn.requantize, float path (compute_dtype = float32)
  tflite,         // TFLite reference kernels, CMSIS-NN (double rounding)
  tflite_single,  // TFLite built with TFLITE_SINGLE_ROUNDING
  onnxruntime,    // ONNX Runtime's QLinearConv (CPU kernels: round, then add the zero point)
  // New schemes are appended here: the values are part of the prepared-weights file format.
};

// TVM's `rounding` attribute, used by the tvm and tvm_f32 schemes.
enum class Rounding : std::uint8_t { upward, tonearest };

std::string_view to_string(SchemeKind kind);
std::string_view to_string(Rounding rounding);
// Names as above ("int32", "fbgemm", …); throws InvalidArgument naming `field` otherwise.
SchemeKind parse_scheme(std::string_view name, std::string_view field);
// "UPWARD" or "TONEAREST" (TVM's spelling; lower case accepted too).
Rounding parse_rounding(std::string_view name, std::string_view field);

// Whether the scheme takes a float bias (the PyTorch engines) or an s32 bias added to the
// accumulator.
bool takes_float_bias(SchemeKind kind);

struct OutputScheme {
  SchemeKind kind = SchemeKind::fbgemm;  // with the defaults of ProblemDesc: u8 in, u8 out
  Rounding rounding = Rounding::upward;  // tvm, tvm_f32
  // tflite, tflite_single: when non-empty, these per-channel (or single) fixed-point multipliers
  // and shifts are used as given instead of being derived from the scales (CMSIS-NN, TFLite files).
  std::vector<std::int32_t> multiplier_q31{};
  std::vector<std::int32_t> shift{};
};

// A fused activation. Clamp bounds are real values, quantized with the scheme's own rounding and
// intersected with the output dtype's range; ReLU raises the low bound to the output zero point.
struct Activation {
  enum class Kind : std::uint8_t { none, relu, clamp };
  Kind kind = Kind::none;
  double min = 0.0;  // clamp only
  double max = 0.0;  // clamp only

  static Activation none() { return {}; }
  static Activation relu() { return {Kind::relu, 0.0, 0.0}; }
  static Activation clamp(double lo, double hi) { return {Kind::clamp, lo, hi}; }
};

std::string_view to_string(Activation::Kind kind);  // "none", "relu", "clamp"

}  // namespace qconv
