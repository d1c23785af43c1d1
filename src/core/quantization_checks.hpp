// SPDX-License-Identifier: Apache-2.0
// The rules every quantization parameter obeys (SPEC §4, §6), shared by Problem validation and the
// faces that take parameters outside a Problem (qnn.requantize).
#pragma once

#include <cstdint>
#include <string_view>

#include "qconv/types.hpp"

namespace qconv::detail {

// Scales are binary32 in every framework: a scale must be a positive, finite, normal binary32
// value. Throws InvalidArgument naming `field` otherwise.
void validate_scale(double scale, std::string_view field);

// Throws InvalidArgument naming `field` when `zero_point` lies outside `dtype`'s range.
void validate_zero_point(std::int64_t zero_point, DType dtype, std::string_view field);

}  // namespace qconv::detail
