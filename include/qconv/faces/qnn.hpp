// SPDX-License-Identifier: Apache-2.0
// TVM QNN face: qnn.conv2d, qnn.conv2d_transpose and qnn.requantize with TVM's argument names,
// defaults and conventions. Padding is TVM's: 1 value, 2 values (pad_h, pad_w) or 4 values
// (top, left, bottom, right). Output of the convolutions: the s32 accumulator (scheme int32).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/tensor.hpp"

namespace qconv::qnn {

// TVM takes a scalar or a per-output-channel vector for kernel_zero_point and kernel_scale.
using ZeroPoints = std::vector<std::int32_t>;
using Scales = std::vector<double>;

struct Conv2DAttrs {
  std::vector<std::int64_t> strides{1, 1};
  std::vector<std::int64_t> padding{0, 0};  // (top, left, bottom, right) when 4 values
  std::vector<std::int64_t> dilation{1, 1};
  std::int64_t groups = 1;
  std::string data_layout = "NCHW";
  std::string kernel_layout = "OIHW";  // OIHW, OHWI, HWIO, or HWOI for depthwise
  std::string out_layout = "";         // "" means data_layout
  std::string out_dtype = "int32";
  bool allow_wraparound = false;  // TVM wraps silently; qconv refuses unless asked
  int threads = 1;
};

// `data`: u8/s8 activations in data_layout; `kernel`: u8/s8 weights in kernel_layout.
// `kernel_size` and `channels` must agree with the kernel's shape.
Tensor conv2d(const ConstTensorView& data, ConstTensorView kernel, std::int32_t input_zero_point,
              const ZeroPoints& kernel_zero_point, double input_scale, const Scales& kernel_scale,
              std::array<std::int64_t, 2> kernel_size, std::int64_t channels,
              const Conv2DAttrs& attrs = {});

struct Conv2DTransposeAttrs {
  std::vector<std::int64_t> strides{1, 1};
  std::vector<std::int64_t> padding{0, 0};  // (top, left, bottom, right) when 4 values
  std::vector<std::int64_t> dilation{1, 1};
  std::int64_t groups = 1;
  std::int64_t channels = 0;                // 0: taken from the weight; else must agree
  std::vector<std::int64_t> kernel_size{};  // empty: taken from the weight; else must agree
  std::string data_layout = "NCHW";
  std::string kernel_layout = "IOHW";  // IOHW ([C_in, C_out/groups, kh, kw]) or OIHW
  std::string out_layout = "";
  std::vector<std::int64_t> output_padding{0, 0};
  std::string out_dtype = "int32";
  bool allow_wraparound = false;
  int threads = 1;
};

Tensor conv2d_transpose(const ConstTensorView& data, ConstTensorView weight,
                        std::int32_t input_zero_point, const ZeroPoints& kernel_zero_point,
                        double input_scale, const Scales& kernel_scale,
                        const Conv2DTransposeAttrs& attrs = {});

struct RequantizeAttrs {
  std::int64_t axis = -1;               // the channel axis of per-channel input scales
  std::string rounding = "UPWARD";      // or "TONEAREST"
  std::string compute_dtype = "int64";  // "int64" (scheme tvm) or "float32" (scheme tvm_f32)
  std::string out_dtype = "int8";       // "int8", "uint8" or "int32"
};

// qnn.requantize of an s32 tensor (any layout; a one-dimensional tensor has layout X):
// q = requantize(data − input_zero_point) with input_scale per tensor or per channel along `axis`.
Tensor requantize(const ConstTensorView& data, const Scales& input_scale,
                  std::int32_t input_zero_point, double output_scale,
                  std::int32_t output_zero_point, const RequantizeAttrs& attrs = {});

}  // namespace qconv::qnn
