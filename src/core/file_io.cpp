// SPDX-License-Identifier: Apache-2.0
#include "core/file_io.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <string>
#include <system_error>

namespace qconv::detail {
namespace {

[[noreturn]] void throw_errno(int error, const std::string& what,
                              const std::filesystem::path& path) {
  throw std::system_error(error, std::generic_category(), what + " '" + path.string() + "'");
}

// Closes on scope exit unless released; remembers nothing else.
class FileDescriptor {
 public:
  explicit FileDescriptor(int fd) : fd_(fd) {}
  ~FileDescriptor() {
    if (fd_ >= 0) ::close(fd_);
  }
  FileDescriptor(const FileDescriptor&) = delete;
  FileDescriptor& operator=(const FileDescriptor&) = delete;
  int get() const { return fd_; }
  // Closes now, reporting the error close() gives (data may be lost at close on some systems).
  int close() {
    const int result = ::close(fd_);
    fd_ = -1;
    return result;
  }

 private:
  int fd_;
};

void write_all(int fd, std::span<const std::byte> bytes, const std::filesystem::path& path) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno(errno, "qconv: cannot write", path);
    }
    done += static_cast<std::size_t>(n);
  }
}

// Makes the rename itself durable; some file systems refuse fsync on a directory, which is fine.
void sync_directory(const std::filesystem::path& directory) {
  const int fd = ::open(directory.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;
  (void)::fsync(fd);
  ::close(fd);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  static std::atomic<unsigned> counter{0};
  std::filesystem::path temporary;
  int fd = -1;
  // A name no other writer uses: the process id and a per-process counter; O_EXCL guarantees it.
  for (int attempt = 0; fd < 0; ++attempt) {
    temporary = path;
    temporary += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100)) {
      throw_errno(errno, "qconv: cannot create", temporary);
    }
  }
  FileDescriptor file(fd);
  try {
    write_all(file.get(), bytes, temporary);
    if (::fsync(file.get()) != 0) throw_errno(errno, "qconv: cannot fsync", temporary);
    if (file.close() != 0) throw_errno(errno, "qconv: cannot close", temporary);
    if (::rename(temporary.c_str(), path.c_str()) != 0) {
      throw_errno(errno, "qconv: cannot rename the temporary file onto", path);
    }
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  sync_directory(path.has_parent_path() ? path.parent_path() : std::filesystem::path("."));
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  FileDescriptor file(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (file.get() < 0) throw_errno(errno, "qconv: cannot open", path);
  struct stat info {};
  if (::fstat(file.get(), &info) != 0) throw_errno(errno, "qconv: cannot stat", path);
  if (!S_ISREG(info.st_mode)) throw_errno(EINVAL, "qconv: not a regular file:", path);
  std::vector<std::byte> bytes(static_cast<std::size_t>(info.st_size));
  std::size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::read(file.get(), bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, "qconv: cannot read", path);
    if (n == 0) break;  // shrank while reading: what was read is checked like any short file
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
  return bytes;
}

}  // namespace qconv::detail
