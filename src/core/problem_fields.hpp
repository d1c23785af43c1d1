// SPDX-License-Identifier: Apache-2.0
// Every ProblemDesc field, listed once: its name (as errors, mismatch checks, files and summaries
// name it), its place in the prepared-weights file (the order below) and whether a prepared Plan
// fixes it. The mismatch check (plan.cpp), the file writer and reader (serialize.cpp) and
// Problem::summary all walk this one list, so a new field cannot be forgotten by one of them.
#pragma once

#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "qconv/problem.hpp"
#include "qconv/scheme.hpp"
#include "qconv/types.hpp"

namespace qconv::detail {

struct FieldInfo {
  std::string_view name;
  bool fixed_at_preparation;  // false: may change per call (batch, input zero point)
  bool in_summary;            // shown by Problem::summary
};

// Calls visit(info, member...) for every field, in file order, with that member of each of the
// descriptions `d` (ProblemDescs, const or not): one to write or read it, two to compare them.
template <class Visit, class... Desc>
void for_each_field(Visit&& visit, Desc&... d) {
  static_assert((std::is_same_v<std::remove_const_t<Desc>, ProblemDesc> && ...));
  visit(FieldInfo{"op", true, true}, d.op...);
  visit(FieldInfo{"batch", false, true}, d.batch...);
  visit(FieldInfo{"in_channels", true, true}, d.in_channels...);
  visit(FieldInfo{"in_height", true, true}, d.in_height...);
  visit(FieldInfo{"in_width", true, true}, d.in_width...);
  visit(FieldInfo{"out_channels", true, true}, d.out_channels...);
  visit(FieldInfo{"groups", true, true}, d.groups...);
  visit(FieldInfo{"kernel_h", true, true}, d.kernel_h...);
  visit(FieldInfo{"kernel_w", true, true}, d.kernel_w...);
  visit(FieldInfo{"stride_h", true, true}, d.stride_h...);
  visit(FieldInfo{"stride_w", true, true}, d.stride_w...);
  visit(FieldInfo{"dilation_h", true, true}, d.dilation_h...);
  visit(FieldInfo{"dilation_w", true, true}, d.dilation_w...);
  visit(FieldInfo{"pad_top", true, true}, d.pad_top...);
  visit(FieldInfo{"pad_bottom", true, true}, d.pad_bottom...);
  visit(FieldInfo{"pad_left", true, true}, d.pad_left...);
  visit(FieldInfo{"pad_right", true, true}, d.pad_right...);
  visit(FieldInfo{"output_padding_h", true, true}, d.output_pad_h...);
  visit(FieldInfo{"output_padding_w", true, true}, d.output_pad_w...);
  visit(FieldInfo{"input_dtype", true, true}, d.input_dtype...);
  visit(FieldInfo{"weight_dtype", true, true}, d.weight_dtype...);
  visit(FieldInfo{"output_dtype", true, true}, d.output_dtype...);
  visit(FieldInfo{"input_layout", true, true}, d.input_layout...);
  visit(FieldInfo{"weight_layout", true, true}, d.weight_layout...);
  visit(FieldInfo{"output_layout", true, true}, d.output_layout...);
  visit(FieldInfo{"input_scale", true, false}, d.input_scale...);
  visit(FieldInfo{"input_zero_point", false, false}, d.input_zero_point...);
  visit(FieldInfo{"weight_scale", true, false}, d.weight_scale...);
  visit(FieldInfo{"weight_zero_point", true, false}, d.weight_zero_point...);
  visit(FieldInfo{"output_scale", true, false}, d.output_scale...);
  visit(FieldInfo{"output_zero_point", true, false}, d.output_zero_point...);
  visit(FieldInfo{"scheme", true, true}, d.scheme.kind...);
  visit(FieldInfo{"rounding", true, false}, d.scheme.rounding...);
  visit(FieldInfo{"scheme.multiplier_q31", true, false}, d.scheme.multiplier_q31...);
  visit(FieldInfo{"scheme.shift", true, false}, d.scheme.shift...);
  visit(FieldInfo{"activation", true, false}, d.activation.kind...);
  visit(FieldInfo{"activation.min", true, false}, d.activation.min...);
  visit(FieldInfo{"activation.max", true, false}, d.activation.max...);
  visit(FieldInfo{"has_bias", true, false}, d.has_bias...);
  visit(FieldInfo{"allow_wraparound", true, false}, d.allow_wraparound...);
}

// A field's value as text: enums by name, vectors as [a, b], doubles to 17 digits.
template <class T>
std::string field_text(const T& value) {
  std::ostringstream out;
  out.precision(17);
  if constexpr (std::is_enum_v<T>) {
    out << to_string(value);
  } else if constexpr (std::is_same_v<T, bool>) {
    out << (value ? "true" : "false");
  } else if constexpr (std::is_same_v<T, std::vector<double>> ||
                       std::is_same_v<T, std::vector<std::int32_t>>) {
    out << '[';
    for (std::size_t i = 0; i < value.size(); ++i) out << (i ? ", " : "") << value[i];
    out << ']';
  } else {
    out << value;
  }
  return out.str();
}

}  // namespace qconv::detail
