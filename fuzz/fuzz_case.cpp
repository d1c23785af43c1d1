// SPDX-License-Identifier: Apache-2.0
#include "fuzz_case.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <initializer_list>

#include "qconv/error.hpp"

namespace qconv::fuzz {
namespace {

class ByteSource {
 public:
  explicit ByteSource(std::span<const std::uint8_t> bytes) : bytes_(bytes) {}

  std::uint8_t byte() { return at_ < bytes_.size() ? bytes_[at_++] : 0; }
  // An integer in [lo, hi].
  std::int64_t range(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(byte()) % (hi - lo + 1);
  }
  template <class T>
  T pick(std::initializer_list<T> options) {
    return options.begin()[byte() % options.size()];
  }
  std::uint64_t raw64() {
    std::uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v |= std::uint64_t{byte()} << (8 * i);
    return v;
  }
  std::int32_t raw32() { return static_cast<std::int32_t>(static_cast<std::uint32_t>(raw64())); }
  // Tensor contents: the remaining bytes, then a fixed pattern once they run out.
  std::vector<std::uint8_t> fill(std::size_t n) {
    std::vector<std::uint8_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = at_ < bytes_.size() ? bytes_[at_++] : static_cast<std::uint8_t>(i * 37 + 11);
    }
    return out;
  }

 private:
  std::span<const std::uint8_t> bytes_;
  std::size_t at_ = 0;
};

// A large case's bounds: its input elements, and its multiply-adds (the reference engine computes
// them on every input the fuzzer tries, instrumented).
constexpr std::size_t kLargeElements = std::size_t{1} << 18;
constexpr std::int64_t kLargeMacs = std::int64_t{1} << 20;

// A size that is valid (in [lo, hi]) or, in wild mode now and then, 0 or negative.
std::int64_t size(ByteSource& in, bool wild, std::int64_t lo, std::int64_t hi) {
  const std::uint8_t b = in.byte();
  if (wild && b >= 250) return static_cast<std::int64_t>(b) - 252;  // -2 .. 3
  return lo + b % (hi - lo + 1);
}

// Scales from 2^-16 to 2^8 with an 8-bit mantissa; in wild mode also any double at all.
double scale(ByteSource& in, bool wild) {
  const std::uint8_t selector = in.byte();
  if (wild && selector % 8 == 0) return std::bit_cast<double>(in.raw64());
  return std::ldexp(1.0 + in.byte() / 256.0, selector % 25 - 16);
}

std::int32_t zero_point(ByteSource& in, bool wild, DType dtype) {
  if (wild && in.byte() % 8 == 0) return in.raw32();
  const std::int64_t lo = dtype == DType::u8 ? 0 : -128;
  return static_cast<std::int32_t>(lo + in.byte());
}

// Element count of a shape, or 0 when a dimension is below 1 or it exceeds `limit`.
std::size_t small_count(const Shape& shape, std::size_t limit) {
  std::size_t n = 1;
  for (std::int64_t d : shape) {
    if (d < 1 || d > static_cast<std::int64_t>(limit)) return 0;
    n *= static_cast<std::size_t>(d);
    if (n > limit) return 0;
  }
  return n;
}

// Few channels and pixels (sizes may break the rules in wild mode): cheap to check, so most inputs.
void small_geometry(ByteSource& in, bool wild, ProblemDesc& d) {
  d.batch = size(in, wild, 1, 2);
  d.groups = size(in, wild, 1, 3);
  const std::int64_t in_per_group = size(in, wild, 1, 4);
  const std::int64_t out_per_group = size(in, wild, 1, 4);
  d.in_channels = d.groups * in_per_group + (wild ? in.range(0, 1) : 0);
  d.out_channels = d.groups * out_per_group;
  d.in_height = size(in, wild, 1, 7);
  d.in_width = size(in, wild, 1, 7);
  d.kernel_h = size(in, wild, 1, 4);
  d.kernel_w = size(in, wild, 1, 4);
  d.stride_h = size(in, wild, 1, 3);
  d.stride_w = size(in, wild, 1, 3);
  d.dilation_h = size(in, wild, 1, 3);
  d.dilation_w = size(in, wild, 1, 3);
  d.pad_top = size(in, wild, 0, 3);
  d.pad_bottom = size(in, wild, 0, 3);
  d.pad_left = size(in, wild, 0, 3);
  d.pad_right = size(in, wild, 0, 3);
}

// Larger problems (up to kLargeElements input elements and kLargeMacs multiply-adds): whole
// 64-channel blocks and GEMM tiles, depthwise and dense layers with many channels, rows wide enough
// for the NCHW planes' rows mode, and enough work for a kernel to take two threads.
void large_geometry(ByteSource& in, ProblemDesc& d) {
  d.batch = in.range(1, 2);
  switch (in.byte() % 3) {
    case 0:  // depthwise, with a channel multiplier of 1 or 2
      d.groups = in.range(1, 96);
      d.in_channels = d.groups;
      d.out_channels = d.groups * in.range(1, 2);
      break;
    case 1:  // dense
      d.groups = 1;
      d.in_channels = in.range(1, 80);
      d.out_channels = in.range(1, 160);
      break;
    default:  // grouped
      d.groups = in.range(2, 40);
      d.in_channels = d.groups * in.range(1, 16);
      d.out_channels = d.groups * in.range(1, 16);
  }
  d.in_height = in.range(1, 160);
  d.in_width = in.range(1, 160);
  d.kernel_h = in.pick<std::int64_t>({1, 3, 3, 2, 4, 5, 7, 1});
  d.kernel_w = in.pick<std::int64_t>({1, 3, 3, 2, 4, 5, 7, 1});
  d.stride_h = in.pick<std::int64_t>({1, 1, 2, 2, 3, 4});
  d.stride_w = in.pick<std::int64_t>({1, 1, 2, 2, 3, 4});
  d.dilation_h = in.pick<std::int64_t>({1, 1, 1, 2, 3});
  d.dilation_w = in.pick<std::int64_t>({1, 1, 1, 2, 3});
  d.pad_top = in.pick<std::int64_t>({0, 0, 1, 2, 3});
  d.pad_bottom = in.pick<std::int64_t>({0, 0, 1, 2, 3});
  d.pad_left = in.pick<std::int64_t>({0, 0, 1, 2, 3});
  d.pad_right = in.pick<std::int64_t>({0, 0, 1, 2, 3});
}

}  // namespace

std::int64_t multiply_adds(const Problem& p) {
  const auto& d = p.desc();
  return d.batch * d.out_channels * p.out_height() * p.out_width() * p.in_channels_per_group() *
         d.kernel_h * d.kernel_w;
}

FuzzCase decode_case(std::span<const std::uint8_t> bytes) {
  ByteSource in(bytes);
  FuzzCase c;
  const std::uint8_t mode = in.byte();
  c.wild = mode % 4 == 0;
  c.large = mode % 8 == 3;
  const bool wild = c.wild;
  ProblemDesc& d = c.desc;

  d.op = in.pick({OpKind::conv2d, OpKind::conv2d_transpose});
  if (c.large) {
    large_geometry(in, d);
  } else {
    small_geometry(in, wild, d);
  }
  if (d.op == OpKind::conv2d_transpose) {
    // Valid below max(stride, dilation); wild mode also tries that bound itself.
    // (Wild strides and dilations may be 0 or negative: the range stays at least [0, 0].)
    const auto limit = [&](std::int64_t stride, std::int64_t dilation) {
      return std::max<std::int64_t>(0, std::max(stride, dilation) - (wild ? 0 : 1));
    };
    d.output_pad_h = size(in, wild, 0, limit(d.stride_h, d.dilation_h));
    d.output_pad_w = size(in, wild, 0, limit(d.stride_w, d.dilation_w));
  }

  d.scheme.kind = in.pick({SchemeKind::int32, SchemeKind::fbgemm, SchemeKind::qnnpack,
                           SchemeKind::onednn, SchemeKind::onnx, SchemeKind::tvm,
                           SchemeKind::tvm_f32, SchemeKind::tflite, SchemeKind::tflite_single});
  d.scheme.rounding = in.pick({Rounding::upward, Rounding::tonearest});
  d.input_dtype = in.pick({DType::u8, DType::s8});
  d.weight_dtype = in.pick({DType::s8, DType::u8});
  d.output_dtype =
      d.scheme.kind == SchemeKind::int32 ? DType::s32 : in.pick({DType::u8, DType::s8, DType::s32});
  if (wild && in.byte() % 8 == 0) d.output_dtype = in.pick({DType::u8, DType::s32, DType::f32});
  d.input_layout = in.pick({Layout::NHWC, Layout::NCHW});
  d.output_layout = in.pick({Layout::NHWC, Layout::NCHW});
  if (d.op == OpKind::conv2d) {
    const bool depthwise = d.groups == d.in_channels;  // HWOI is for depthwise problems only
    d.weight_layout = depthwise || wild
                          ? in.pick({Layout::OHWI, Layout::OIHW, Layout::HWIO, Layout::HWOI})
                          : in.pick({Layout::OHWI, Layout::OIHW, Layout::HWIO});
  } else {
    d.weight_layout = in.pick({Layout::IOHW, Layout::OIHW});
  }
  if (wild && in.byte() % 8 == 0)
    d.weight_layout = in.pick({Layout::NHWC, Layout::X, Layout::IOHW});

  d.input_scale = scale(in, wild);
  d.input_zero_point = zero_point(in, wild, d.input_dtype);
  const bool per_channel = in.byte() % 2 == 0 && d.out_channels >= 1 && d.out_channels <= 64;
  const auto channels = static_cast<std::size_t>(per_channel ? d.out_channels : 1);
  d.weight_scale.clear();
  d.weight_zero_point.clear();
  for (std::size_t o = 0; o < channels; ++o) d.weight_scale.push_back(scale(in, wild));
  // Half the large cases have symmetric weights (0 for s8, 128 for u8), the paths some layers
  // take only then; elsewhere a random byte makes a zero point of exactly that value rare.
  const bool symmetric = c.large && in.byte() % 2 == 0;
  for (std::size_t o = 0; o < channels; ++o) {
    d.weight_zero_point.push_back(symmetric ? (d.weight_dtype == DType::u8 ? 128 : 0)
                                            : zero_point(in, wild, d.weight_dtype));
  }
  d.output_scale = scale(in, wild);
  d.output_zero_point =
      d.scheme.kind == SchemeKind::int32 && !wild
          ? 0
          : zero_point(in, wild, d.output_dtype == DType::s8 ? DType::s8 : DType::u8);
  const bool tflite =
      d.scheme.kind == SchemeKind::tflite || d.scheme.kind == SchemeKind::tflite_single;
  if ((tflite || wild) && in.byte() % 4 == 0) {
    for (std::size_t o = 0; o < channels; ++o) {
      const std::int32_t q31 = in.raw32();
      d.scheme.multiplier_q31.push_back(wild ? q31 : (q31 & 0x7fffffff) | 0x40000000);
      d.scheme.shift.push_back(static_cast<std::int32_t>(in.range(-31, 30)) +
                               (wild ? static_cast<std::int32_t>(in.range(-1, 1)) : 0));
    }
  }
  switch (in.byte() % 3) {
    case 0: d.activation = Activation::none(); break;
    case 1: d.activation = Activation::relu(); break;
    default: {
      const double lo = static_cast<std::int8_t>(in.byte()) * 0.25;
      const double hi = lo + in.byte() * (wild ? -0.125 : 0.25);
      d.activation = Activation::clamp(lo, hi);
    }
  }
  d.has_bias = in.byte() % 2 == 0;
  d.allow_wraparound = in.byte() % 4 == 0;
  c.threads = static_cast<int>(in.range(1, 3));
  if (in.byte() % 4 == 0) {
    c.input_zero_point = wild ? in.raw32() : zero_point(in, false, d.input_dtype);
  }

  // Tensors, sized from the problem when it is valid (small by construction).
  try {
    const Problem problem(d);
    c.input_shape = problem.input_shape();
    if (wild && in.byte() % 4 == 0) c.input_shape[in.byte() % 4] += in.range(-1, 1);
    const auto bias_count = static_cast<std::size_t>(d.out_channels);
    for (std::size_t o = 0; o < bias_count; ++o) {
      const std::uint8_t b = in.byte();
      c.bias_f32.push_back(wild && b % 16 == 0 ? std::bit_cast<float>(in.raw32())
                                               : static_cast<std::int8_t>(b) * 0.5f);
      c.bias_s32.push_back(wild || b % 8 == 0 ? in.raw32() : static_cast<std::int8_t>(b) * 1000);
    }
    if (c.large && multiply_adds(problem) > kLargeMacs) return c;  // the reference: too long
    const std::size_t limit = c.large ? kLargeElements : 1 << 16;
    c.weights = in.fill(small_count(problem.weight_shape(), limit));
    c.input = in.fill(small_count(c.input_shape, limit));
  } catch (const Error&) {
    // The problem is invalid: the fuzzer only checks that it is refused.
  }
  return c;
}

}  // namespace qconv::fuzz
