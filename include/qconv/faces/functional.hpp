// SPDX-License-Identifier: Apache-2.0
// PyTorch face: torch.ao.nn.quantized.functional.conv2d and conv_transpose2d (and the fused
// quantized::conv2d_relu), with PyTorch's argument names and defaults. Activations are NCHW,
// weights OIHW (conv_transpose2d: IOHW, [C_in, C_out/groups, kh, kw]). `padding` is one value
// or (pad_h, pad_w). The engine semantics (fbgemm, qnnpack, onednn) is chosen with `engine`.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/tensor.hpp"

namespace qconv::functional {

// A quantized tensor as PyTorch holds one: integer values with a scale and a zero point, per
// tensor (one value each) or per channel along `axis` (one per index of that axis).
struct QTensor {
  ConstTensorView values{};
  std::vector<double> scale{1.0};
  std::vector<std::int32_t> zero_point{0};
  std::int64_t axis = 0;  // per-channel only
};

// The owning result: values in NCHW with the requested scale and zero point.
struct QuantizedTensor {
  Tensor values{};
  double scale = 1.0;
  std::int32_t zero_point = 0;
};

struct Conv2dOptions {
  std::vector<std::int64_t> stride{1};
  std::vector<std::int64_t> padding{0};
  std::vector<std::int64_t> dilation{1};
  std::int64_t groups = 1;
  std::string padding_mode = "zeros";  // anything else is refused, as in PyTorch
  double scale = 1.0;                  // output scale
  std::int32_t zero_point = 0;         // output zero point
  std::string dtype = "quint8";        // output dtype: quint8 or qint8
  std::string engine = "fbgemm";       // fbgemm, qnnpack or onednn semantics
  bool relu = false;                   // quantized::conv2d_relu
  int threads = 1;
};

QuantizedTensor conv2d(const QTensor& input, const QTensor& weight,
                       std::optional<std::span<const float>> bias,
                       const Conv2dOptions& options = {});

struct ConvTranspose2dOptions {
  std::vector<std::int64_t> stride{1};
  std::vector<std::int64_t> padding{0};
  std::vector<std::int64_t> output_padding{0};
  std::int64_t groups = 1;
  std::vector<std::int64_t> dilation{1};
  double scale = 1.0;
  std::int32_t zero_point = 0;
  std::string dtype = "quint8";
  std::string engine = "fbgemm";
  bool relu = false;
  int threads = 1;
};

QuantizedTensor conv_transpose2d(const QTensor& input, const QTensor& weight,
                                 std::optional<std::span<const float>> bias,
                                 const ConvTranspose2dOptions& options = {});

}  // namespace qconv::functional
