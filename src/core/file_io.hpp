// SPDX-License-Identifier: Apache-2.0
// Whole-file reads and atomic whole-file writes, for prepared-weights files.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

namespace qconv::detail {

// Writes `bytes` to a new temporary file beside `path`, fsyncs it, renames it over `path` and
// fsyncs the directory: readers see the old file or the whole new one, never a part. The
// temporary file is removed on failure. Throws std::system_error naming the path.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

// Throws std::system_error naming the path when it cannot be opened or read.
std::vector<std::byte> read_file(const std::filesystem::path& path);

}  // namespace qconv::detail
