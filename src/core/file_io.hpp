// SPDX-License-Identifier: Apache-2.0
// Whole-file reads and atomic whole-file writes, for prepared-weights files.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <vector>

namespace qconv::detail {

// Writes `bytes` to a new temporary file beside `path`, fsyncs it, renames it over `path` and
// fsyncs the directory: readers see the old file or the whole new one, never a part. The
// temporary file is removed on failure. A `path` that is a symbolic link is followed: the file it
// points to is replaced and the link kept. An existing file's permission bits are kept; a new
// file gets 0666 less the umask. The temporary file's name is short (`.qconv-<hash>.<pid>.<n>`,
// whatever the length of the target's), and temporary files of this target left behind by a
// process that no longer runs (a save killed by SIGKILL) are removed. Throws std::system_error
// naming the path.
void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes);

// A regular file open for reading. Opening never blocks (a FIFO or a device is refused as not a
// regular file before anything is read). Throws std::system_error naming the path.
class InputFile {
 public:
  explicit InputFile(const std::filesystem::path& path);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;

  // The file's size when it was opened.
  std::uint64_t size() const { return size_; }
  // Appends up to `count` further bytes to `bytes` (fewer only when the file ends first).
  void read(std::vector<std::byte>& bytes, std::size_t count);

 private:
  std::filesystem::path path_;
  int fd_ = -1;
  std::uint64_t size_ = 0;
};

// The whole file (InputFile, read to its end).
std::vector<std::byte> read_file(const std::filesystem::path& path);

}  // namespace qconv::detail
