// SPDX-License-Identifier: Apache-2.0
// int32 (SPEC §4): the s32 sum plus the s32 bias, no requantization (ConvInteger, qnn.conv2d).
#include "output/scheme_unit.hpp"

namespace qconv::detail::scheme {

extern const SchemeUnit kInt32{
    [](const DeriveArgs&, ChannelConstants&) {},
    [](std::int32_t acc, const ChannelConstants& c, const StageLimits& limits) {
      return finish(with_bias(acc, c), limits);
    },
    round_even, false, nullptr};

}  // namespace qconv::detail::scheme
