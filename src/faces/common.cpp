// SPDX-License-Identifier: Apache-2.0
#include "faces/common.hpp"

#include "core/check.hpp"
#include "qconv/tensor.hpp"

namespace qconv::detail {
namespace {

std::string list(std::span<const std::int64_t> values) {
  return to_string(Shape(values.begin(), values.end()));
}

}  // namespace

Padding padding_from(std::span<const std::int64_t> values, PaddingOrder order,
                     std::string_view field) {
  for (std::int64_t v : values) {
    require(v >= 0, field, list(values), "padding must not be negative");
  }
  switch (values.size()) {
    case 1: return {values[0], values[0], values[0], values[0]};
    case 2: return {values[0], values[0], values[1], values[1]};
    case 4:
      if (order == PaddingOrder::top_left_bottom_right) {
        return {values[0], values[2], values[1], values[3]};
      }
      return {values[0], values[1], values[2], values[3]};
    default:
      fail(field, list(values),
           order == PaddingOrder::top_left_bottom_right
               ? "padding takes 1, 2 (pad_h, pad_w) or 4 (top, left, bottom, right) values"
               : "padding takes 1, 2 (pad_h, pad_w) or 4 (top, bottom, left, right) values");
  }
}

std::array<std::int64_t, 2> pair_from(std::span<const std::int64_t> values, std::string_view field,
                                      std::int64_t fallback) {
  switch (values.size()) {
    case 0: return {fallback, fallback};
    case 1: return {values[0], values[0]};
    case 2: return {values[0], values[1]};
    default: fail(field, list(values), "takes 1 or 2 values (h, w)");
  }
}

void set_padding(ProblemDesc& desc, const Padding& padding) {
  desc.pad_top = padding.top;
  desc.pad_bottom = padding.bottom;
  desc.pad_left = padding.left;
  desc.pad_right = padding.right;
}

void set_stride(ProblemDesc& desc, std::span<const std::int64_t> values, std::string_view field) {
  const auto [h, w] = pair_from(values, field, 1);
  desc.stride_h = h;
  desc.stride_w = w;
}

void set_dilation(ProblemDesc& desc, std::span<const std::int64_t> values, std::string_view field) {
  const auto [h, w] = pair_from(values, field, 1);
  desc.dilation_h = h;
  desc.dilation_w = w;
}

void set_output_padding(ProblemDesc& desc, std::span<const std::int64_t> values,
                        std::string_view field) {
  const auto [h, w] = pair_from(values, field, 0);
  desc.output_pad_h = h;
  desc.output_pad_w = w;
}

std::string renamed(std::string_view message, std::span<const FieldName> names) {
  const FieldName* best = nullptr;
  for (const FieldName& name : names) {
    if (!message.starts_with(name.internal) || message.size() == name.internal.size()) continue;
    const char next = message[name.internal.size()];
    if (next != ' ' && next != ':' && next != '.' && next != '[') continue;
    if (best == nullptr || name.internal.size() > best->internal.size()) best = &name;
  }
  if (best == nullptr) return std::string(message);
  return std::string(best->face) + std::string(message.substr(best->internal.size()));
}

Tensor run_once(const Problem& problem, const ConstTensorView& weights, ConstTensorView input,
                BiasView bias, int threads) {
  const Plan plan = Plan::prepare(problem, weights);
  RunOptions options;
  options.threads = threads;
  return plan.execute(input, bias, options);
}

}  // namespace qconv::detail
