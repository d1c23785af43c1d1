// SPDX-License-Identifier: Apache-2.0
// Prepared weights on disk: a Plan saved once and loaded many times, here or on another machine.
// The file layout and which library versions load which files: docs/GUARANTEES.md.
#pragma once

#include <cstddef>
#include <filesystem>
#include <span>
#include <vector>

#include "qconv/plan.hpp"

namespace qconv {

struct SaveOptions {
  // Also store the weight values as given, so that a machine whose CPU lacks the features the
  // packed form needs (or whose library lacks its engine) re-packs them on load instead of
  // refusing the file. Adds one byte per weight.
  bool keep_original_weights = false;
};

// The whole file as bytes: a versioned header (format and library version, the engine and the CPU
// features its packed form needs, the full ProblemDesc), the packed weights, optionally the
// original weights, and an FNV-1a 64 checksum of everything before it.
std::vector<std::byte> serialize(const Plan& plan, const SaveOptions& options = {});

// Rebuilds the Plan. Throws FormatError naming what is wrong for bytes that are truncated,
// corrupted (checksum), of a newer format version, not a qconv file, describe an invalid problem,
// or were packed for CPU features this machine lacks with no original weights to re-pack from.
// Never reads outside `bytes`.
Plan deserialize(std::span<const std::byte> bytes);

// serialize() written atomically: to a temporary file in the same directory, flushed to disk
// (fsync), then renamed over `path`, so that a crash leaves either the old file or the new one.
// Throws std::system_error (naming the path) when the file system refuses.
void save(const Plan& plan, const std::filesystem::path& path, const SaveOptions& options = {});

// Reads `path` and deserialize()s it. Throws std::system_error when the file cannot be read,
// FormatError when its contents cannot be loaded.
Plan load(const std::filesystem::path& path);

}  // namespace qconv
