// SPDX-License-Identifier: Apache-2.0
#include <algorithm>
#include <cstdlib>
#include <utility>

#include "core/check.hpp"
#include "engines/engine.hpp"
#include "qconv/error.hpp"

namespace qconv::detail {
namespace {

// Offset in the caller's weight buffer of value(o, c, r, s) for the problem's weight layout.
std::int64_t source_offset(const Problem& p, std::int64_t o, std::int64_t c, std::int64_t r,
                           std::int64_t s) {
  const auto& d = p.desc();
  const std::int64_t kh = d.kernel_h;
  const std::int64_t kw = d.kernel_w;
  const std::int64_t ipg = p.in_channels_per_group();
  const std::int64_t opg = p.out_channels_per_group();
  if (p.transposed()) {
    if (d.weight_layout == Layout::IOHW) {  // [C_in, C_out/groups, kh, kw]
      const std::int64_t g = o / opg;
      const std::int64_t input_channel = g * ipg + c;
      return ((input_channel * opg + (o - g * opg)) * kh + r) * kw + s;
    }
    return ((o * ipg + c) * kh + r) * kw + s;  // OIHW: [C_out, C_in/groups, kh, kw]
  }
  switch (d.weight_layout) {
    case Layout::OIHW: return ((o * ipg + c) * kh + r) * kw + s;
    case Layout::OHWI: return ((o * kh + r) * kw + s) * ipg + c;
    case Layout::HWIO: return ((r * kw + s) * ipg + c) * d.out_channels + o;
    // HWOI is depthwise only: [kh, kw, C_in, multiplier] with o = c_in · multiplier + m, which is
    // the same memory order as [kh, kw, C_out].
    case Layout::HWOI: return (r * kw + s) * d.out_channels + o;
    default: return 0;
  }
}

// Σ |u − reference| over n bytes u = values[i] xor bias: as unsigned bytes, a loop compilers
// turn into psadbw (x86-64) or uabal (AArch64). s8 values and zero point take a bias of 128.
// Out of line: inlined into its caller, GCC 12 no longer finds the psadbw form.
[[gnu::noinline]] std::int64_t abs_difference_run(const std::uint8_t* values, std::int64_t n,
                                                  std::uint8_t bias, std::uint8_t reference) {
  std::int64_t total = 0;
  constexpr std::int64_t kChunk = std::int64_t{1} << 20;  // 255 · 2^20 fits an int
  for (std::int64_t begin = 0; begin < n; begin += kChunk) {
    const std::int64_t end = std::min(n, begin + kChunk);
    int sum = 0;
    for (std::int64_t i = begin; i < end; ++i) {
      sum += std::abs(static_cast<std::uint8_t>(values[i] ^ bias) - reference);
    }
    total += sum;
  }
  return total;
}

}  // namespace

CanonicalWeights::CanonicalWeights(const Problem& p, const std::uint8_t* data)
    : data_(data),
      dtype_(p.desc().weight_dtype),
      count_(p.desc().out_channels * p.reduction_size()),
      groups_(p.desc().groups),
      in_per_group_(p.in_channels_per_group()),
      out_per_group_(p.out_channels_per_group()),
      kernel_h_(p.desc().kernel_h),
      kernel_w_(p.desc().kernel_w) {}

CanonicalWeights::CanonicalWeights(const Problem& p, const ConstTensorView& weights)
    : CanonicalWeights(p, static_cast<const std::uint8_t*>(weights.data())) {
  find_strides(p);
}

CanonicalWeights::CanonicalWeights(const Problem& p, std::vector<std::uint8_t> bytes)
    : CanonicalWeights(p, nullptr) {
  owned_ = std::move(bytes);
  data_ = owned_.data();
  find_strides(p);
}

void CanonicalWeights::find_strides(const Problem& p) {
  // source_offset is linear in (c, r, s) for a fixed o, and in o within a group: walk it with
  // strides from value (0, 0, 0, 0), which every layout has first. (A step along a dimension of
  // extent 1 is never taken and stays 0.)
  if (out_per_group_ > 1) step_o_ = source_offset(p, 1, 0, 0, 0);
  if (groups_ > 1) step_group_ = source_offset(p, out_per_group_, 0, 0, 0);
  if (in_per_group_ > 1) step_c_ = source_offset(p, 0, 1, 0, 0);
  // tap = r * kw + s: every layout keeps a kernel row's columns one step apart, rows kw steps.
  if (kernel_w_ > 1) {
    step_tap_ = source_offset(p, 0, 0, 0, 1);
  } else if (kernel_h_ > 1) {
    step_tap_ = source_offset(p, 0, 0, 1, 0);
  }
  find_channel_step();
}

void CanonicalWeights::find_channel_step() {
  if (out_per_group_ == 1) {
    step_channel_ = step_group_;
  } else if (groups_ == 1 || step_group_ == out_per_group_ * step_o_) {
    step_channel_ = step_o_;
  } else {
    step_channel_ = -1;
  }
}

CanonicalWeights::CanonicalWeights(const CanonicalWeights& other) { *this = other; }

CanonicalWeights& CanonicalWeights::operator=(const CanonicalWeights& other) {
  if (this == &other) return *this;
  data_ = other.data_;
  owned_.clear();
  dtype_ = other.dtype_;
  count_ = other.count_;
  groups_ = other.groups_;
  in_per_group_ = other.in_per_group_;
  out_per_group_ = other.out_per_group_;
  kernel_h_ = other.kernel_h_;
  kernel_w_ = other.kernel_w_;
  step_group_ = other.step_group_;
  step_o_ = other.step_o_;
  step_c_ = other.step_c_;
  step_tap_ = other.step_tap_;
  step_channel_ = other.step_channel_;
  own();
  return *this;
}

void CanonicalWeights::own() {
  // Every layout is dense: the tensor is the count_ bytes from data_.
  owned_.assign(data_, data_ + count_);
  data_ = owned_.data();
}

CanonicalWeights CanonicalWeights::from_bytes(const Problem& p, std::span<const std::byte> bytes,
                                              std::string_view field) {
  // Compared before anything is allocated: a file cannot make this reserve more than it holds.
  const auto count = static_cast<std::size_t>(p.desc().out_channels * p.reduction_size());
  if (bytes.size() != count) {
    fail<FormatError>(std::string(field) + ".size", bytes.size(),
                      "the problem has " + std::to_string(count) +
                          " weights (out_channels * in_channels/groups * kernel_h * kernel_w), "
                          "one byte each");
  }
  CanonicalWeights weights(p, reinterpret_cast<const std::uint8_t*>(bytes.data()));
  const std::int64_t taps = weights.kernel_h_ * weights.kernel_w_;
  weights.step_tap_ = 1;
  weights.step_c_ = taps;
  weights.step_o_ = weights.in_per_group_ * taps;
  weights.step_group_ = weights.out_per_group_ * weights.step_o_;
  weights.find_channel_step();
  weights.own();
  return weights;
}

std::vector<std::byte> CanonicalWeights::bytes() const {
  const std::int64_t taps = kernel_h_ * kernel_w_;
  const std::int64_t channel_values = in_per_group_ * taps;
  if (in_channel_order() &&
      (step_channel_ == channel_values ||
       count_ ==
           channel_values)) {  // OIHW, a file's bytes, and OHWI with one input channel per group
    const auto* begin = reinterpret_cast<const std::byte*>(data_);
    return std::vector<std::byte>(begin, begin + count_);
  }
  std::vector<std::byte> out(static_cast<std::size_t>(count_));
  std::size_t i = 0;
  for (std::int64_t o = 0; o < count_ / (in_per_group_ * taps); ++o) {
    const std::uint8_t* channel = data_ + channel_offset(o);
    for (std::int64_t c = 0; c < in_per_group_; ++c) {
      for (std::int64_t tap = 0; tap < taps; ++tap) {
        out[i++] = static_cast<std::byte>(channel[c * step_c_ + tap * step_tap_]);
      }
    }
  }
  return out;
}

std::int64_t CanonicalWeights::abs_difference_sum(std::int64_t o, std::int32_t zero_point) const {
  const std::int64_t taps = kernel_h_ * kernel_w_;
  const std::uint8_t* channel = data_ + channel_offset(o);
  const bool one_run = in_tap_order() || in_channel_order();
  const std::int32_t bias = dtype_ == DType::u8 ? 0 : 128;
  if (one_run && zero_point + bias >= 0 && zero_point + bias <= 255) {
    return abs_difference_run(channel, in_per_group_ * taps, static_cast<std::uint8_t>(bias),
                              static_cast<std::uint8_t>(zero_point + bias));
  }
  std::int64_t total = 0;
  for (std::int64_t c = 0; c < in_per_group_; ++c) {
    for (std::int64_t tap = 0; tap < taps; ++tap) {
      total += std::abs(widen(channel[c * step_c_ + tap * step_tap_]) - zero_point);
    }
  }
  return total;
}

}  // namespace qconv::detail
