// SPDX-License-Identifier: Apache-2.0
// Element types and tensor layouts, with the names the frameworks use for them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace qconv {

enum class DType : std::uint8_t { u8, s8, s32, f32 };

// Activation layouts (NCHW, NHWC), convolution weight layouts (OIHW, OHWI, HWIO, HWOI),
// the transposed-convolution weight layout IOHW, and X for a one-dimensional vector (a bias).
enum class Layout : std::uint8_t { NCHW, NHWC, OIHW, OHWI, HWIO, HWOI, IOHW, X };

std::string_view to_string(DType dtype);
std::string_view to_string(Layout layout);

std::size_t element_size(DType dtype);

// Smallest and largest value of an integer dtype (u8, s8, s32).
std::int64_t dtype_min(DType dtype);
std::int64_t dtype_max(DType dtype);

// Accepts qconv's own names and the frameworks' ones: "u8", "uint8", "quint8", "s8", "int8",
// "qint8", "s32", "int32", "qint32", "f32", "float32", "float". `field` names the argument in the
// error thrown (InvalidArgument) for anything else.
DType parse_dtype(std::string_view name, std::string_view field);

// Accepts the layout names above, exactly as written. Throws InvalidArgument naming `field`.
Layout parse_layout(std::string_view name, std::string_view field);

bool is_activation_layout(Layout layout);
bool is_weight_layout(Layout layout);

}  // namespace qconv
