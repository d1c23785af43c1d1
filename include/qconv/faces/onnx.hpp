// SPDX-License-Identifier: Apache-2.0
// ONNX face: QLinearConv, ConvInteger and an integer ConvTranspose, with ONNX attributes.
// Tensors are NCHW, weights OIHW (ConvTranspose: [C_in, C_out/group, kh, kw]). `pads` is ONNX's
// [top, left, bottom, right]; `auto_pad` is NOTSET, VALID, SAME_UPPER or SAME_LOWER.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/tensor.hpp"

namespace qconv::onnx {

struct ConvAttributes {
  std::string auto_pad = "NOTSET";
  std::vector<std::int64_t> dilations{};  // empty: all 1
  std::int64_t group = 1;
  std::vector<std::int64_t> kernel_shape{};  // empty: taken from w; else must agree
  std::vector<std::int64_t> pads{};          // empty: all 0
  std::vector<std::int64_t> strides{};       // empty: all 1
  int threads = 1;
};

struct ConvTransposeAttributes : ConvAttributes {
  std::vector<std::int64_t> output_padding{};  // empty: all 0
  std::vector<std::int64_t> output_shape{};    // when given, pads are derived from it (ONNX rules)
};

// y = QLinearConv(x, x_scale, x_zero_point, w, w_scale, w_zero_point, y_scale, y_zero_point, B).
// The output dtype is y_zero_point's: `y_dtype` (uint8 by default, as in ONNX).
// w_scale / w_zero_point hold one value or one per output channel.
// `semantics`: "reference" (scheme onnx, the ONNX reference implementation: the zero point is
// added before rounding, in double) or "onnxruntime" (scheme onnxruntime, ONNX Runtime's CPU
// kernels: binary32 throughout, the zero point added after rounding). They differ by 1 on exact
// ties with an odd y_zero_point, where the binary32 product rounds onto or across a half, and
// where |acc + B| exceeds 2^24 (binary32 drops its low bits).
Tensor qlinear_conv(const ConstTensorView& x, double x_scale, std::int32_t x_zero_point,
                    const ConstTensorView& w, const std::vector<double>& w_scale,
                    const std::vector<std::int32_t>& w_zero_point, double y_scale,
                    std::int32_t y_zero_point, std::optional<std::span<const std::int32_t>> B = {},
                    const ConvAttributes& attributes = {}, DType y_dtype = DType::u8,
                    std::string_view semantics = "reference");

// y = ConvInteger(x, w, x_zero_point, w_zero_point): the s32 accumulator (scheme int32).
Tensor conv_integer(const ConstTensorView& x, ConstTensorView w, std::int32_t x_zero_point = 0,
                    const std::vector<std::int32_t>& w_zero_point = {0},
                    const ConvAttributes& attributes = {});

// The integer transposed convolution, ConvTranspose's attributes and ConvInteger's zero points:
// the s32 accumulator.
Tensor conv_transpose_integer(const ConstTensorView& x, ConstTensorView w,
                              std::int32_t x_zero_point = 0,
                              const std::vector<std::int32_t>& w_zero_point = {0},
                              const ConvTransposeAttributes& attributes = {});

}  // namespace qconv::onnx
