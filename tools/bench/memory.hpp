// SPDX-License-Identifier: Apache-2.0
// Peak resident memory of the process, per network: Linux keeps a high-water mark (VmHWM) that
// writing "5" to /proc/self/clear_refs resets, so each network's peak is measured on its own.
#pragma once

#include <cstdint>
#include <optional>

namespace qconv::bench {

// Resets the high-water mark to the current resident size; false where the kernel refuses.
bool reset_peak_resident_memory();

// The high-water mark of resident memory in KiB since the last reset, if the kernel reports it.
std::optional<std::int64_t> peak_resident_memory_kib();

}  // namespace qconv::bench
