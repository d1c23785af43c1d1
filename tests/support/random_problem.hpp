// SPDX-License-Identifier: Apache-2.0
// Random, valid quantized convolution problems with their data, for differential tests.
//
// The generator draws every parameter of a ProblemDesc (geometry, groups and depthwise, layouts,
// dtypes, zero points with a bias toward both ends of their range, per-tensor or per-channel weight
// quantization, output scheme, activation, bias) from a seeded engine, so a failure is reproduced
// by its seed. Tensors are kept twice: logically (input [N][C][H][W], weights
// [C_out][C_in/groups][kh][kw], where c counts within o's group for a transposed convolution too)
// and packed in the problem's layouts. The packing is written from the layouts' letter names and
// shares nothing with the library's own layout handling, so a layout bug in the library cannot
// hide in the test.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <random>
#include <span>
#include <string_view>
#include <vector>

#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

namespace qconv::test {

// Every output scheme of SPEC §4, for tests that run each.
inline constexpr std::array<SchemeKind, 10> kEveryScheme = {
    SchemeKind::int32,         SchemeKind::fbgemm,     SchemeKind::qnnpack, SchemeKind::onednn,
    SchemeKind::onnx,          SchemeKind::tvm,        SchemeKind::tvm_f32, SchemeKind::tflite,
    SchemeKind::tflite_single, SchemeKind::onnxruntime};

// A thin wrapper over a seeded engine with the draws the generator needs.
class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}

  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {  // both ends included
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(engine_);
  }
  double real(double lo, double hi) {
    return std::uniform_real_distribution<double>(lo, hi)(engine_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(engine_); }
  template <class T>
  T pick(std::initializer_list<T> values) {
    return *(values.begin() + uniform(0, static_cast<std::int64_t>(values.size()) - 1));
  }

 private:
  std::mt19937_64 engine_;
};

// Fields left empty are drawn; the limits keep problems small enough to run thousands of them.
struct RandomProblemOptions {
  std::optional<OpKind> op;
  std::optional<SchemeKind> scheme;
  std::optional<DType> input_dtype;
  std::optional<DType> weight_dtype;
  std::optional<Layout> input_layout;
  std::optional<Layout> weight_layout;
  std::optional<Layout> output_layout;
  std::optional<bool> depthwise;     // HWOI weights force depthwise
  bool extreme_zero_points = false;  // every zero point at one end of its dtype's range
  std::int64_t max_batch = 3;
  std::int64_t max_groups = 3;  // besides depthwise
  std::int64_t max_channels_per_group = 4;
  std::int64_t max_multiplier = 4;  // depthwise: out_channels = multiplier · in_channels
  std::int64_t max_depthwise_channels = 6;
  // When above max_depthwise_channels: half the depthwise problems draw up to this many channels
  // (tails past 16, 32 and 64 lanes).
  std::int64_t max_depthwise_channels_wide = 0;
  std::int64_t max_extent = 8;  // input height and width
  std::int64_t max_kernel = 4;
  std::int64_t max_stride = 4;
  std::int64_t max_dilation = 3;
  std::int64_t max_padding = 3;
};

// One output extent by SPEC §2; below 1 when the geometry has no output.
inline std::int64_t spec_output_extent(OpKind op, std::int64_t in, std::int64_t kernel,
                                       std::int64_t stride, std::int64_t dilation,
                                       std::int64_t pad_begin, std::int64_t pad_end,
                                       std::int64_t output_pad) {
  const std::int64_t span = (kernel - 1) * dilation + 1;
  if (op == OpKind::conv2d) {
    const std::int64_t room = in + pad_begin + pad_end - span;
    return room < 0 ? 0 : room / stride + 1;
  }
  return stride * (in - 1) + span - pad_begin - pad_end + output_pad;
}

// A value of an integer dtype, drawn so that both ends of the range come up often.
inline std::int32_t random_value(Rng& rng, DType dtype) {
  const auto lo = static_cast<std::int32_t>(dtype_min(dtype));
  const auto hi = static_cast<std::int32_t>(dtype_max(dtype));
  if (rng.chance(0.1)) return rng.chance(0.5) ? lo : hi;
  return static_cast<std::int32_t>(rng.uniform(lo, hi));
}

inline std::int32_t random_zero_point(Rng& rng, DType dtype, bool extreme) {
  const auto lo = static_cast<std::int32_t>(dtype_min(dtype));
  const auto hi = static_cast<std::int32_t>(dtype_max(dtype));
  if (extreme || rng.chance(0.4)) return rng.chance(0.5) ? lo : hi;
  if (rng.chance(0.2)) return dtype == DType::u8 ? 128 : 0;
  return static_cast<std::int32_t>(rng.uniform(lo, hi));
}

// A positive scale of a few binary orders of magnitude around `around`.
inline double random_scale(Rng& rng, double around) {
  return around * std::exp2(rng.real(-3.0, 3.0));
}

inline void draw_geometry(Rng& rng, const RandomProblemOptions& opt, ProblemDesc& d) {
  const bool depthwise =
      d.weight_layout == Layout::HWOI || opt.depthwise.value_or(rng.chance(0.25));
  if (depthwise) {
    const bool wide =
        opt.max_depthwise_channels_wide > opt.max_depthwise_channels && rng.chance(0.5);
    d.in_channels =
        rng.uniform(1, wide ? opt.max_depthwise_channels_wide : opt.max_depthwise_channels);
    d.groups = d.in_channels;
    d.out_channels = d.in_channels * rng.uniform(1, opt.max_multiplier);
  } else {
    d.groups = rng.uniform(1, opt.max_groups);
    d.in_channels = d.groups * rng.uniform(1, opt.max_channels_per_group);
    d.out_channels = d.groups * rng.uniform(1, opt.max_channels_per_group);
  }
  d.batch = rng.uniform(1, opt.max_batch);
  for (;;) {  // redraw until both axes have an output
    d.kernel_h = rng.uniform(1, opt.max_kernel);
    d.kernel_w = rng.uniform(1, opt.max_kernel);
    d.stride_h = rng.uniform(1, opt.max_stride);
    d.stride_w = rng.uniform(1, opt.max_stride);
    d.dilation_h = rng.uniform(1, opt.max_dilation);
    d.dilation_w = rng.uniform(1, opt.max_dilation);
    d.pad_top = rng.uniform(0, opt.max_padding);
    d.pad_bottom = rng.uniform(0, opt.max_padding);
    d.pad_left = rng.uniform(0, opt.max_padding);
    d.pad_right = rng.uniform(0, opt.max_padding);
    d.in_height = rng.uniform(1, opt.max_extent);
    d.in_width = rng.uniform(1, opt.max_extent);
    d.output_pad_h = 0;
    d.output_pad_w = 0;
    if (d.op == OpKind::conv2d_transpose) {
      d.output_pad_h = rng.uniform(0, std::max(d.stride_h, d.dilation_h) - 1);
      d.output_pad_w = rng.uniform(0, std::max(d.stride_w, d.dilation_w) - 1);
    }
    if (spec_output_extent(d.op, d.in_height, d.kernel_h, d.stride_h, d.dilation_h, d.pad_top,
                           d.pad_bottom, d.output_pad_h) >= 1 &&
        spec_output_extent(d.op, d.in_width, d.kernel_w, d.stride_w, d.dilation_w, d.pad_left,
                           d.pad_right, d.output_pad_w) >= 1) {
      return;
    }
  }
}

inline void draw_quantization(Rng& rng, const RandomProblemOptions& opt, ProblemDesc& d) {
  d.input_zero_point = random_zero_point(rng, d.input_dtype, opt.extreme_zero_points);
  d.input_scale = random_scale(rng, 0.02);
  const std::size_t scales = rng.chance(0.5) ? static_cast<std::size_t>(d.out_channels) : 1;
  const std::size_t zero_points = rng.chance(0.5) ? static_cast<std::size_t>(d.out_channels) : 1;
  d.weight_scale.resize(scales);
  for (double& s : d.weight_scale) s = random_scale(rng, 0.01);
  d.weight_zero_point.resize(zero_points);
  for (auto& z : d.weight_zero_point)
    z = random_zero_point(rng, d.weight_dtype, opt.extreme_zero_points);
  // An output scale that maps a typical accumulator (|x − zx|·|w − zw| ≈ 128·128 per term, the
  // terms of one sign when zero points sit at the ends) to a few tens keeps most outputs off the
  // clamp, so they still carry the accumulator's information.
  const auto k = static_cast<double>(d.in_channels / d.groups * d.kernel_h * d.kernel_w);
  d.output_scale = random_scale(rng, d.input_scale * d.weight_scale[0] * 16384.0 * k / 32.0);
  if (d.scheme.kind == SchemeKind::int32) {
    d.output_zero_point = 0;
  } else {
    d.output_zero_point = random_zero_point(rng, d.output_dtype, opt.extreme_zero_points);
    if (d.output_dtype == DType::s32)
      d.output_zero_point = static_cast<std::int32_t>(rng.uniform(-1000, 1000));
  }
}

inline void draw_scheme(Rng& rng, ProblemDesc& d) {
  auto& s = d.scheme;
  s.rounding = rng.chance(0.5) ? Rounding::upward : Rounding::tonearest;
  const bool tflite = s.kind == SchemeKind::tflite || s.kind == SchemeKind::tflite_single;
  if (tflite && rng.chance(0.25)) {  // multipliers given directly, as in a TFLite file
    const std::size_t n = rng.chance(0.5) ? static_cast<std::size_t>(d.out_channels) : 1;
    for (std::size_t i = 0; i < n; ++i) {
      s.multiplier_q31.push_back(static_cast<std::int32_t>(rng.uniform(1 << 30, 0x7fffffff)));
      s.shift.push_back(static_cast<std::int32_t>(rng.uniform(-14, -4)));
    }
  }
  const int activation = static_cast<int>(rng.uniform(0, 3));
  if (activation == 1) d.activation = Activation::relu();
  // SPEC §4: clamp bounds are real values; min ≤ 0 ≤ max keeps the output zero point inside, so
  // the quantized range is never empty.
  if (activation == 2 && s.kind != SchemeKind::int32) {
    d.activation = Activation::clamp(-d.output_scale * rng.real(0.0, 100.0),
                                     d.output_scale * rng.real(0.0, 100.0));
  }
}

inline ProblemDesc random_problem_desc(Rng& rng, const RandomProblemOptions& opt = {}) {
  ProblemDesc d;
  d.op = opt.op.value_or(rng.chance(0.5) ? OpKind::conv2d : OpKind::conv2d_transpose);
  const bool transposed = d.op == OpKind::conv2d_transpose;
  d.input_dtype = opt.input_dtype.value_or(rng.pick({DType::u8, DType::s8}));
  d.weight_dtype = opt.weight_dtype.value_or(rng.pick({DType::s8, DType::u8}));
  d.input_layout = opt.input_layout.value_or(rng.pick({Layout::NCHW, Layout::NHWC}));
  d.output_layout = opt.output_layout.value_or(rng.pick({Layout::NCHW, Layout::NHWC}));
  if (opt.weight_layout) {
    d.weight_layout = *opt.weight_layout;
  } else if (transposed) {
    d.weight_layout = rng.pick({Layout::IOHW, Layout::OIHW});
  } else {
    d.weight_layout = rng.pick({Layout::OIHW, Layout::OHWI, Layout::HWIO});
  }
  d.scheme.kind = opt.scheme.value_or(kEveryScheme[static_cast<std::size_t>(
      rng.uniform(0, static_cast<std::int64_t>(kEveryScheme.size()) - 1))]);
  if (d.scheme.kind == SchemeKind::int32) {
    d.output_dtype = DType::s32;
  } else {
    d.output_dtype = rng.chance(0.1) ? DType::s32 : rng.pick({DType::u8, DType::s8});
  }
  draw_geometry(rng, opt, d);
  // TVM's depthwise layout suits a depthwise problem drawn by chance, too.
  if (!opt.weight_layout && !transposed && d.groups == d.in_channels && rng.chance(0.3)) {
    d.weight_layout = Layout::HWOI;
  }
  draw_quantization(rng, opt, d);
  draw_scheme(rng, d);
  d.has_bias = rng.chance(0.5);
  return d;
}

// ---- Layouts, from their letter names -------------------------------------------------------

// Dimension sizes of an activation tensor in its layout's order.
inline Shape activation_shape(Layout layout, std::int64_t n, std::int64_t c, std::int64_t h,
                              std::int64_t w) {
  return layout == Layout::NCHW ? Shape{n, c, h, w} : Shape{n, h, w, c};
}

// Row-major offset of logical element (n, c, h, w) of an NCHW-described tensor stored in `layout`.
inline std::int64_t activation_offset(Layout layout, const std::array<std::int64_t, 4>& nchw_dims,
                                      std::int64_t n, std::int64_t c, std::int64_t h,
                                      std::int64_t w) {
  const auto [N, C, H, W] = nchw_dims;
  (void)N;
  if (layout == Layout::NCHW) return ((n * C + c) * H + h) * W + w;
  return ((n * H + h) * W + w) * C + c;
}

// Where logical weight (o, c, r, s) sits: each of the layout's four letters gets a coordinate and
// an extent, and the offset is row-major over the letters in the order the layout spells them.
struct WeightCoordinates {
  std::array<std::int64_t, 4> index;
  std::array<std::int64_t, 4> extent;
};

inline WeightCoordinates weight_coordinates(const ProblemDesc& d, std::int64_t o, std::int64_t c,
                                            std::int64_t r, std::int64_t s) {
  const std::int64_t ipg = d.in_channels / d.groups;
  const std::int64_t opg = d.out_channels / d.groups;
  const std::int64_t group = o / opg;
  if (d.weight_layout == Layout::HWOI) {  // [kh, kw, C_in, multiplier], depthwise
    return {{r, s, group, o % opg}, {d.kernel_h, d.kernel_w, d.in_channels, opg}};
  }
  // Coordinate and extent of each letter. A transposed IOHW weight is [C_in, C_out/groups, kh, kw]:
  // its I is the input channel over all groups and its O counts within the group.
  const bool iohw = d.weight_layout == Layout::IOHW;
  const std::array<std::int64_t, 2> letter_o =
      iohw ? std::array{o % opg, opg} : std::array{o, d.out_channels};
  const std::array<std::int64_t, 2> letter_i =
      iohw ? std::array{group * ipg + c, d.in_channels} : std::array{c, ipg};
  const std::array<std::int64_t, 2> letter_h{r, d.kernel_h};
  const std::array<std::int64_t, 2> letter_w{s, d.kernel_w};
  const std::string_view name = to_string(d.weight_layout);
  WeightCoordinates at{};
  for (std::size_t i = 0; i < 4; ++i) {
    const auto& letter = name[i] == 'O'   ? letter_o
                         : name[i] == 'I' ? letter_i
                         : name[i] == 'H' ? letter_h
                                          : letter_w;
    at.index[i] = letter[0];
    at.extent[i] = letter[1];
  }
  return at;
}

inline Shape packed_weight_shape(const ProblemDesc& d) {
  const auto extent = weight_coordinates(d, 0, 0, 0, 0).extent;
  return {extent.begin(), extent.end()};
}

inline std::int64_t weight_offset(const ProblemDesc& d, std::int64_t o, std::int64_t c,
                                  std::int64_t r, std::int64_t s) {
  const WeightCoordinates at = weight_coordinates(d, o, c, r, s);
  std::int64_t offset = 0;
  for (std::size_t i = 0; i < 4; ++i) offset = offset * at.extent[i] + at.index[i];
  return offset;
}

// ---- A whole case: problem, data, packed buffers ----------------------------------------------

inline void store_value(std::vector<std::uint8_t>& bytes, DType dtype, std::int64_t i,
                        std::int64_t v) {
  const std::size_t size = element_size(dtype);
  if (size == 1) {
    bytes[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v);  // two's complement for s8
  } else {
    const auto v32 = static_cast<std::int32_t>(v);
    std::memcpy(bytes.data() + static_cast<std::size_t>(i) * 4, &v32, 4);
  }
}

inline std::int32_t load_value(std::span<const std::uint8_t> bytes, DType dtype, std::int64_t i) {
  const auto at = static_cast<std::size_t>(i);
  switch (dtype) {
    case DType::u8: return bytes[at];
    case DType::s8: return static_cast<std::int8_t>(bytes[at]);
    default: {
      std::int32_t v = 0;
      std::memcpy(&v, bytes.data() + at * 4, 4);
      return v;
    }
  }
}

struct RandomCase {
  ProblemDesc desc;
  std::vector<std::int32_t> input;    // logical [N][C_in][H][W]
  std::vector<std::int32_t> weights;  // logical [C_out][C_in/groups][kh][kw]
  std::vector<std::int32_t> bias_s32;
  std::vector<float> bias_f32;
  std::vector<std::uint8_t> input_bytes;   // packed in desc.input_layout
  std::vector<std::uint8_t> weight_bytes;  // packed in desc.weight_layout

  ConstTensorView input_view() const {
    return {input_bytes.data(), input_bytes.size(), desc.input_dtype, desc.input_layout,
            activation_shape(desc.input_layout, desc.batch, desc.in_channels, desc.in_height,
                             desc.in_width)};
  }
  ConstTensorView weight_view() const {
    return {weight_bytes.data(), weight_bytes.size(), desc.weight_dtype, desc.weight_layout,
            packed_weight_shape(desc)};
  }
  BiasView bias() const {
    if (!desc.has_bias) return {};
    if (takes_float_bias(desc.scheme.kind)) return std::span<const float>(bias_f32);
    return std::span<const std::int32_t>(bias_s32);
  }
};

// Fills a case for `desc` with random data: values biased toward their dtype's ends, s32 biases
// that now and then sit at the ends of s32 (the sum wraps), float biases of the accumulator's size.
inline RandomCase random_case_for(Rng& rng, ProblemDesc desc) {
  RandomCase rc;
  rc.desc = std::move(desc);
  const ProblemDesc& d = rc.desc;
  const std::int64_t ipg = d.in_channels / d.groups;
  rc.input.resize(static_cast<std::size_t>(d.batch * d.in_channels * d.in_height * d.in_width));
  for (auto& v : rc.input) v = random_value(rng, d.input_dtype);
  rc.weights.resize(static_cast<std::size_t>(d.out_channels * ipg * d.kernel_h * d.kernel_w));
  for (auto& v : rc.weights) v = random_value(rng, d.weight_dtype);

  rc.input_bytes.resize(rc.input.size());
  const std::array<std::int64_t, 4> dims{d.batch, d.in_channels, d.in_height, d.in_width};
  std::size_t i = 0;
  for (std::int64_t n = 0; n < d.batch; ++n)
    for (std::int64_t c = 0; c < d.in_channels; ++c)
      for (std::int64_t h = 0; h < d.in_height; ++h)
        for (std::int64_t w = 0; w < d.in_width; ++w)
          store_value(rc.input_bytes, d.input_dtype,
                      activation_offset(d.input_layout, dims, n, c, h, w), rc.input[i++]);

  rc.weight_bytes.resize(rc.weights.size());
  i = 0;
  for (std::int64_t o = 0; o < d.out_channels; ++o)
    for (std::int64_t c = 0; c < ipg; ++c)
      for (std::int64_t r = 0; r < d.kernel_h; ++r)
        for (std::int64_t s = 0; s < d.kernel_w; ++s)
          store_value(rc.weight_bytes, d.weight_dtype, weight_offset(d, o, c, r, s),
                      rc.weights[i++]);

  // Biases of an accumulator's typical size, in accumulator units.
  const auto acc_size = static_cast<std::int64_t>(
      16384.0 * std::sqrt(static_cast<double>(ipg * d.kernel_h * d.kernel_w)));
  for (std::int64_t o = 0; o < d.out_channels; ++o) {
    auto b = static_cast<std::int32_t>(rng.uniform(-acc_size, acc_size));
    if (rng.chance(0.05))
      b = rng.chance(0.5) ? std::numeric_limits<std::int32_t>::min()
                          : std::numeric_limits<std::int32_t>::max();
    rc.bias_s32.push_back(b);
    const double real =
        rng.real(-1.0, 1.0) * static_cast<double>(acc_size) * d.input_scale *
        d.weight_scale[d.weight_scale.size() == 1 ? 0 : static_cast<std::size_t>(o)];
    rc.bias_f32.push_back(static_cast<float>(real));
  }
  return rc;
}

// fbgemm from u8 to u8 (even rounds) or s8 (odd), unit input and weight scales, with values far
// past the output's range, by round / 2: 0 past 255 (output scale 20: K·255²/20), within 2^31; 1
// past 2^31 by a tiny output scale alone (no bias); 2 under a clamp below the dtype's maximum (the
// low end still the dtype's); 3 past 2^31 by one channel's huge bias (set on the case's data by
// fbgemm_bias_past_the_range).
inline void fbgemm_past_the_range(Rng& rng, ProblemDesc& d, int round) {
  d.scheme = OutputScheme{};
  d.scheme.kind = SchemeKind::fbgemm;
  d.input_dtype = DType::u8;
  d.input_zero_point = random_zero_point(rng, DType::u8, false);
  d.output_dtype = round % 2 == 0 ? DType::u8 : DType::s8;
  d.output_zero_point = round % 2 == 0 ? 10 : 3;
  d.input_scale = 1.0;
  d.weight_scale.assign(d.weight_scale.size(), 1.0);
  d.output_scale = round / 2 == 1 ? 1e-5 : 20.0;
  d.activation = round / 2 == 2 ? Activation::clamp(-1e9, 1000.0) : Activation::none();
  d.has_bias = round / 2 != 1;
}
inline void fbgemm_bias_past_the_range(RandomCase& rc, int round) {
  if (round / 2 == 3) rc.bias_f32[1] = 1e12f;
}

inline RandomCase random_case(Rng& rng, const RandomProblemOptions& opt = {}) {
  return random_case_for(rng, random_problem_desc(rng, opt));
}

}  // namespace qconv::test
