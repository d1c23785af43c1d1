// SPDX-License-Identifier: Apache-2.0
#include "core/file_io.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <string>
#include <system_error>

namespace qconv::detail {
namespace {

[[noreturn]] void throw_errno(int error, const std::string& what,
                              const std::filesystem::path& path) {
  throw std::system_error(error, std::generic_category(), what + " '" + path.string() + "'");
}

// Closes on scope exit unless closed before; remembers nothing else.
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

// The file a save replaces: `path`, or what it links to (links followed, at most 40 deep, as the
// kernel does). A dangling link names the file the save creates.
std::filesystem::path final_target(std::filesystem::path path) {
  for (int depth = 0; depth < 40; ++depth) {
    struct stat info {};
    if (::lstat(path.c_str(), &info) != 0 || !S_ISLNK(info.st_mode)) return path;
    std::error_code error;
    const std::filesystem::path link = std::filesystem::read_symlink(path, error);
    if (error) return path;
    path = link.is_absolute() ? link : path.parent_path() / link;
  }
  throw_errno(ELOOP, "qconv: cannot resolve the symbolic link", path);
}

// The prefix of this target's temporary files: short whatever the target's name, and the same
// for every process that saves to it, so that one save can find what another left behind.
std::string temporary_prefix(const std::filesystem::path& target) {
  std::uint64_t hash = 0xcbf29ce484222325ull;  // FNV-1a 64 of the file name
  for (const char c : target.filename().string()) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ull;
  }
  char text[32];
  std::snprintf(text, sizeof text, ".qconv-%016llx.", static_cast<unsigned long long>(hash));
  return text;
}

// Removes `<prefix><pid>.<n>` files in `directory` whose process no longer runs: what a save
// killed before its rename (SIGKILL, power loss) left. Live processes' files are never touched.
void remove_stale_temporaries(const std::filesystem::path& directory, const std::string& prefix) {
  DIR* dir = ::opendir(directory.c_str());
  if (dir == nullptr) return;
  while (const dirent* entry = ::readdir(dir)) {
    const std::string name = entry->d_name;
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    const std::string rest = name.substr(prefix.size());
    const auto dot = rest.find('.');
    if (dot == 0 || dot == std::string::npos) continue;
    if (rest.find_first_not_of("0123456789") != dot) continue;
    if (rest.substr(dot + 1).find_first_not_of("0123456789") != std::string::npos) continue;
    long pid = 0;
    try {
      pid = std::stol(rest.substr(0, dot));
    } catch (const std::exception&) {
      continue;
    }
    if (pid <= 0 || pid == ::getpid()) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or unknown
    (void)::unlinkat(::dirfd(dir), name.c_str(), 0);
  }
  ::closedir(dir);
}

}  // namespace

void write_file_atomically(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  static std::atomic<unsigned> counter{0};
  const std::filesystem::path target = final_target(path);
  const std::filesystem::path directory =
      target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
  const std::string prefix = temporary_prefix(target);
  remove_stale_temporaries(directory, prefix);

  // An existing file keeps its permission bits.
  struct stat existing {};
  const bool keep_mode = ::stat(target.c_str(), &existing) == 0 && S_ISREG(existing.st_mode);

  std::filesystem::path temporary;
  int fd = -1;
  // A name no other writer uses: the process id and a per-process counter; O_EXCL guarantees it.
  for (int attempt = 0; fd < 0; ++attempt) {
    temporary = directory /
                (prefix + std::to_string(::getpid()) + "." + std::to_string(counter.fetch_add(1)));
    fd = ::open(temporary.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && (errno != EEXIST || attempt == 100)) {
      throw_errno(errno, "qconv: cannot create a temporary file beside", target);
    }
  }
  FileDescriptor file(fd);
  try {
    if (keep_mode && ::fchmod(file.get(), existing.st_mode & 07777) != 0) {
      throw_errno(errno, "qconv: cannot set the permissions of", temporary);
    }
    write_all(file.get(), bytes, temporary);
    if (::fsync(file.get()) != 0) throw_errno(errno, "qconv: cannot fsync", temporary);
    if (file.close() != 0) throw_errno(errno, "qconv: cannot close", temporary);
    if (::rename(temporary.c_str(), target.c_str()) != 0) {
      throw_errno(errno, "qconv: cannot rename the temporary file onto", target);
    }
  } catch (...) {
    ::unlink(temporary.c_str());
    throw;
  }
  sync_directory(directory);
}

InputFile::InputFile(const std::filesystem::path& path) : path_(path) {
  // O_NONBLOCK: opening a FIFO with no writer (or some devices) would otherwise wait forever.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw_errno(errno, "qconv: cannot open", path);
  struct stat info {};
  if (::fstat(fd_, &info) != 0) {
    const int error = errno;
    ::close(fd_);
    throw_errno(error, "qconv: cannot stat", path);
  }
  if (!S_ISREG(info.st_mode)) {
    ::close(fd_);
    throw_errno(EINVAL, "qconv: not a regular file:", path);
  }
  // A regular file: reads are ordinary blocking reads again.
  const int flags = ::fcntl(fd_, F_GETFL);
  if (flags >= 0) (void)::fcntl(fd_, F_SETFL, flags & ~O_NONBLOCK);
  size_ = static_cast<std::uint64_t>(info.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

void InputFile::read(std::vector<std::byte>& bytes, std::size_t count) {
  std::size_t done = bytes.size();
  bytes.resize(done + count);
  while (done < bytes.size()) {
    const ssize_t n = ::read(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno(errno, "qconv: cannot read", path_);
    if (n == 0) break;  // shrank while reading: what was read is checked like any short file
    done += static_cast<std::size_t>(n);
  }
  bytes.resize(done);
}

std::vector<std::byte> read_file(const std::filesystem::path& path) {
  InputFile file(path);
  std::vector<std::byte> bytes;
  file.read(bytes, static_cast<std::size_t>(file.size()));
  return bytes;
}

}  // namespace qconv::detail
