// SPDX-License-Identifier: Apache-2.0
// Problem: one plain, validated description of a quantized convolution or transposed convolution.
// Faces translate their framework's arguments into a ProblemDesc; constructing a Problem checks
// every rule of SPEC §6 in one place and throws a qconv::Error naming the field, value and rule.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "qconv/scheme.hpp"
#include "qconv/tensor.hpp"
#include "qconv/types.hpp"

namespace qconv {

enum class OpKind : std::uint8_t { conv2d, conv2d_transpose };
std::string_view to_string(OpKind op);

struct ProblemDesc {
  OpKind op = OpKind::conv2d;

  // Geometry. Padding is (top, bottom, left, right); output padding (transposed only) adds rows
  // at the bottom and columns at the right.
  std::int64_t batch = 1;
  std::int64_t in_channels = 1;
  std::int64_t in_height = 1;
  std::int64_t in_width = 1;
  std::int64_t out_channels = 1;
  std::int64_t groups = 1;
  std::int64_t kernel_h = 1;
  std::int64_t kernel_w = 1;
  std::int64_t stride_h = 1;
  std::int64_t stride_w = 1;
  std::int64_t dilation_h = 1;
  std::int64_t dilation_w = 1;
  std::int64_t pad_top = 0;
  std::int64_t pad_bottom = 0;
  std::int64_t pad_left = 0;
  std::int64_t pad_right = 0;
  std::int64_t output_pad_h = 0;
  std::int64_t output_pad_w = 0;

  // Element types and layouts of the three tensors.
  DType input_dtype = DType::u8;
  DType weight_dtype = DType::s8;
  DType output_dtype = DType::u8;
  Layout input_layout = Layout::NHWC;
  Layout weight_layout = Layout::OHWI;
  Layout output_layout = Layout::NHWC;

  // Quantization. Weight scale and zero point hold one value (per tensor) or one per output
  // channel.
  double input_scale = 1.0;
  std::int32_t input_zero_point = 0;
  std::vector<double> weight_scale{1.0};
  std::vector<std::int32_t> weight_zero_point{0};
  double output_scale = 1.0;
  std::int32_t output_zero_point = 0;

  OutputScheme scheme;
  Activation activation;
  bool has_bias = false;  // s32 or float, as the scheme takes (takes_float_bias)
  // Accept problems whose accumulator may leave s32 and wrap it two's-complement (what TVM and
  // PyTorch silently do); by default such a problem is refused with OverflowRisk.
  bool allow_wraparound = false;
};

class Problem {
 public:
  // Validates everything; throws InvalidArgument / ShapeMismatch naming the field.
  explicit Problem(ProblemDesc desc);

  const ProblemDesc& desc() const { return desc_; }
  OpKind op() const { return desc_.op; }
  bool transposed() const { return desc_.op == OpKind::conv2d_transpose; }

  std::int64_t out_height() const { return out_height_; }
  std::int64_t out_width() const { return out_width_; }
  std::int64_t in_channels_per_group() const { return desc_.in_channels / desc_.groups; }
  std::int64_t out_channels_per_group() const { return desc_.out_channels / desc_.groups; }
  // Reduction length of one output element: C_in/groups · kh · kw.
  std::int64_t reduction_size() const;
  // Lowest and highest output value after the output dtype and the fused activation.
  // (Computed by the output stage; for int32 the full s32 range, or [0, max] with ReLU.)

  // Shapes of the three tensors in their layouts' dimension order, for a given batch size.
  Shape input_shape(std::int64_t batch) const;
  Shape weight_shape() const;
  Shape output_shape(std::int64_t batch) const;
  Shape input_shape() const { return input_shape(desc_.batch); }
  Shape output_shape() const { return output_shape(desc_.batch); }

  // Weight scale / zero point of output channel o (per-tensor values broadcast).
  double weight_scale(std::int64_t o) const;
  std::int32_t weight_zero_point(std::int64_t o) const;

  // Human-readable one-line summary, for error messages and the bench.
  std::string summary() const;

 private:
  ProblemDesc desc_;
  std::int64_t out_height_ = 0;
  std::int64_t out_width_ = 0;
};

}  // namespace qconv
