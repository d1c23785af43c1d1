// SPDX-License-Identifier: Apache-2.0
// The prepared-weights file format's constants and a loader that takes the CPU's features as an
// argument, so that tests can load a file as a CPU without some feature would.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "core/cpu_features.hpp"
#include "qconv/plan.hpp"

namespace qconv::detail {

inline constexpr std::string_view kFileMagic = "QCONVPLN";
// The version this library writes. It reads every version from kOldestFormatVersion up to it.
// Any change to the layout, to the meaning of a field or to an engine's packed form bumps it.
// Version 2 added engine_packing_version after the engine's name.
inline constexpr std::uint32_t kFormatVersion = 2;
inline constexpr std::uint32_t kOldestFormatVersion = 1;
// The bytes before anything variable: the magic, the format version and the file size.
inline constexpr std::size_t kHeaderSize = 8 + 4 + 8;
// Flag bits of the header's `flags` field.
inline constexpr std::uint32_t kFlagOriginalWeights = 1u << 0;

// deserialize() for a CPU with `host` features.
Plan deserialize_for(std::span<const std::byte> bytes, CpuFeatures host);

}  // namespace qconv::detail
