// SPDX-License-Identifier: Apache-2.0
// What every face needs to translate its framework's arguments: the padding orders, one-or-two
// value pairs, and a one-shot prepare + execute.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/problem.hpp"
#include "qconv/tensor.hpp"

namespace qconv::detail {

struct Padding {
  std::int64_t top = 0, bottom = 0, left = 0, right = 0;
};

// The order of a 4-value padding: TVM and ONNX write (top, left, bottom, right); ttnn writes
// (top, bottom, left, right). One value pads every side; two are (pad_h, pad_w).
enum class PaddingOrder { top_left_bottom_right, top_bottom_left_right };

// Throws InvalidArgument naming `field` for a count other than 1, 2 or 4, or a negative value.
Padding padding_from(std::span<const std::int64_t> values, PaddingOrder order,
                     std::string_view field);

// (h, w) from 1 value (both) or 2; an empty list gives (fallback, fallback).
// Throws InvalidArgument naming `field` for any other count.
std::array<std::int64_t, 2> pair_from(std::span<const std::int64_t> values, std::string_view field,
                                      std::int64_t fallback);

void set_padding(ProblemDesc& desc, const Padding& padding);

// (stride_h, stride_w), (dilation_h, dilation_w) and (output_pad_h, output_pad_w) from a
// framework's list, read by pair_from; an empty list gives the default (1, 1 and 0).
// Each throws InvalidArgument naming `field` for a count other than 0, 1 or 2.
void set_stride(ProblemDesc& desc, std::span<const std::int64_t> values, std::string_view field);
void set_dilation(ProblemDesc& desc, std::span<const std::int64_t> values, std::string_view field);
void set_output_padding(ProblemDesc& desc, std::span<const std::int64_t> values,
                        std::string_view field);

// A field as Problem and Plan name it, and as a face's caller named the argument it came from.
struct FieldName {
  std::string_view internal;
  std::string_view face;
};

// Runs `work` (which builds a Problem, prepares or runs a Plan) and rethrows any qconv error with
// the field it names at its start (`<field> = ...` or `<field>: ...`) replaced by the face's name
// for it, so that an error names what the caller wrote (batch_size, strides[0]), not qconv's field.
template <class Work>
auto in_face_words(std::span<const FieldName> names, Work&& work) -> decltype(work());

// The message with a leading internal field name replaced by its face name.
std::string renamed(std::string_view message, std::span<const FieldName> names);

// Prepares the weights for `problem` and runs it once on `input`, returning a new output tensor.
Tensor run_once(const Problem& problem, const ConstTensorView& weights, ConstTensorView input,
                BiasView bias = {}, int threads = 1);

template <class Work>
auto in_face_words(std::span<const FieldName> names, Work&& work) -> decltype(work()) {
  try {
    return work();
  } catch (const InvalidArgument& e) {
    throw InvalidArgument(renamed(e.what(), names));
  } catch (const ShapeMismatch& e) {
    throw ShapeMismatch(renamed(e.what(), names));
  } catch (const OverflowRisk& e) {
    throw OverflowRisk(renamed(e.what(), names));
  } catch (const PreparedMismatch& e) {
    throw PreparedMismatch(renamed(e.what(), names));
  }
}

}  // namespace qconv::detail
