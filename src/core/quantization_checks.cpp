// SPDX-License-Identifier: Apache-2.0
#include "core/quantization_checks.hpp"

#include <cmath>
#include <limits>
#include <string>

#include "core/check.hpp"

namespace qconv::detail {

void validate_scale(double scale, std::string_view field) {
  require(std::isfinite(scale) && scale >= std::numeric_limits<float>::min() &&
              scale <= std::numeric_limits<float>::max(),
          field, scale, "a scale must be a positive, finite, normal (not subnormal) number");
}

void validate_zero_point(std::int64_t zero_point, DType dtype, std::string_view field) {
  require(zero_point >= dtype_min(dtype) && zero_point <= dtype_max(dtype), field, zero_point,
          "must lie in the range of " + std::string(to_string(dtype)) + " [" +
              std::to_string(dtype_min(dtype)) + ", " + std::to_string(dtype_max(dtype)) + "]");
}

}  // namespace qconv::detail
