// SPDX-License-Identifier: Apache-2.0
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

}  // namespace

CanonicalWeights::CanonicalWeights(const Problem& p)
    : values_(static_cast<std::size_t>(p.desc().out_channels * p.reduction_size())),
      dtype_(p.desc().weight_dtype),
      in_per_group_(p.in_channels_per_group()),
      kernel_h_(p.desc().kernel_h),
      kernel_w_(p.desc().kernel_w) {}

CanonicalWeights::CanonicalWeights(const Problem& p, const ConstTensorView& weights)
    : CanonicalWeights(p) {
  const std::int64_t out = p.desc().out_channels;
  // source_offset is linear in (c, r, s) for a fixed o: walk it with strides.
  const std::int64_t base0 = source_offset(p, 0, 0, 0, 0);
  const std::int64_t step_c = in_per_group_ > 1 ? source_offset(p, 0, 1, 0, 0) - base0 : 0;
  const std::int64_t step_r = kernel_h_ > 1 ? source_offset(p, 0, 0, 1, 0) - base0 : 0;
  const std::int64_t step_s = kernel_w_ > 1 ? source_offset(p, 0, 0, 0, 1) - base0 : 0;
  const auto copy = [&](const auto* source) {
    std::int16_t* v = values_.data();
    for (std::int64_t o = 0; o < out; ++o) {
      const std::int64_t base = source_offset(p, o, 0, 0, 0);
      for (std::int64_t c = 0; c < in_per_group_; ++c) {
        for (std::int64_t r = 0; r < kernel_h_; ++r) {
          const auto* row = source + base + c * step_c + r * step_r;
          for (std::int64_t s = 0; s < kernel_w_; ++s)
            *v++ = static_cast<std::int16_t>(row[s * step_s]);
        }
      }
    }
  };
  if (dtype_ == DType::u8) {
    copy(weights.as<std::uint8_t>());
  } else {
    copy(weights.as<std::int8_t>());
  }
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
  CanonicalWeights weights(p);
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    const auto byte = static_cast<std::uint8_t>(bytes[i]);
    weights.values_[i] = weights.dtype_ == DType::u8 ? std::int16_t{byte}
                                                     : std::int16_t{static_cast<std::int8_t>(byte)};
  }
  return weights;
}

std::vector<std::byte> CanonicalWeights::bytes() const {
  std::vector<std::byte> out(values_.size());
  for (std::size_t i = 0; i < values_.size(); ++i) {
    out[i] = static_cast<std::byte>(static_cast<std::uint8_t>(values_[i]));
  }
  return out;
}

}  // namespace qconv::detail
