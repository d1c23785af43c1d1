// SPDX-License-Identifier: Apache-2.0
// Little-endian encoding of fixed-width values, for the prepared-weights file format, and the
// FNV-1a 64 checksum. The reader checks every length against what is left and throws FormatError
// naming the field it was reading, so no file can make it read outside its bytes.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/check.hpp"
#include "qconv/error.hpp"

namespace qconv::detail {

// FNV-1a, 64 bits: every single changed byte changes the hash (each step is a bijection of the
// state), and it is a few lines with no table.
inline std::uint64_t fnv1a64(std::span<const std::byte> bytes) {
  std::uint64_t hash = 0xcbf29ce484222325ull;
  for (std::byte b : bytes) {
    hash ^= static_cast<std::uint8_t>(b);
    hash *= 0x100000001b3ull;
  }
  return hash;
}

class ByteWriter {
 public:
  void u8(std::uint8_t v) { bytes_.push_back(static_cast<std::byte>(v)); }
  void u32(std::uint32_t v) { unsigned_le(v, 4); }
  void u64(std::uint64_t v) { unsigned_le(v, 8); }
  void i32(std::int32_t v) { u32(static_cast<std::uint32_t>(v)); }
  void i64(std::int64_t v) { u64(static_cast<std::uint64_t>(v)); }
  void f64(double v) { u64(std::bit_cast<std::uint64_t>(v)); }
  void raw(std::span<const std::byte> v) {
    if (v.empty()) return;
    const std::size_t at = bytes_.size();
    bytes_.resize(at + v.size());
    std::memcpy(bytes_.data() + at, v.data(), v.size());
  }
  // A u32 length, then the characters.
  void string(std::string_view v) {
    u32(static_cast<std::uint32_t>(v.size()));
    for (char c : v) u8(static_cast<std::uint8_t>(c));
  }
  // A u64 length, then the bytes.
  void blob(std::span<const std::byte> v) {
    u64(v.size());
    raw(v);
  }
  void patch_u64(std::size_t offset, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) bytes_[offset + i] = static_cast<std::byte>(v >> (8 * i));
  }
  std::size_t size() const { return bytes_.size(); }
  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  void unsigned_le(std::uint64_t v, int count) {
    for (int i = 0; i < count; ++i) u8(static_cast<std::uint8_t>(v >> (8 * i)));
  }
  std::vector<std::byte> bytes_;
};

class ByteReader {
 public:
  explicit ByteReader(std::span<const std::byte> bytes) : bytes_(bytes) {}

  // The size the file says it has. Running out of bytes means the file is truncated while that size
  // is unknown or larger than the bytes given, and that a stored length is wrong otherwise.
  void set_declared_size(std::uint64_t size) {
    declared_size_ = size;
    declared_size_known_ = true;
  }

  std::span<const std::byte> take(std::size_t count, std::string_view field) {
    if (count > remaining()) truncated(count, field);
    const auto out = bytes_.subspan(offset_, count);
    offset_ += count;
    return out;
  }
  std::uint8_t u8(std::string_view field) { return static_cast<std::uint8_t>(take(1, field)[0]); }
  std::uint32_t u32(std::string_view field) {
    return static_cast<std::uint32_t>(unsigned_le(4, field));
  }
  std::uint64_t u64(std::string_view field) { return unsigned_le(8, field); }
  std::int32_t i32(std::string_view field) { return static_cast<std::int32_t>(u32(field)); }
  std::int64_t i64(std::string_view field) { return static_cast<std::int64_t>(u64(field)); }
  double f64(std::string_view field) { return std::bit_cast<double>(u64(field)); }

  std::string string(std::string_view field, std::size_t max_length) {
    const std::uint32_t length = u32(field);
    if (length > max_length) {
      fail<FormatError>(std::string(field) + ".length", length,
                        "longer than " + std::to_string(max_length) +
                            " characters: not a name this format writes (corrupted file)");
    }
    const auto chars = take(length, field);
    std::string out(chars.size(), '\0');
    for (std::size_t i = 0; i < chars.size(); ++i) out[i] = static_cast<char>(chars[i]);
    return out;
  }
  std::span<const std::byte> blob(std::string_view field) {
    const std::uint64_t length = u64(field);
    if (length > remaining()) truncated(length, field);
    return take(static_cast<std::size_t>(length), field);
  }
  // A u32 element count of `element_bytes`-sized values, checked against what is left before
  // anything is allocated for them.
  std::uint32_t count(std::string_view field, std::size_t element_bytes) {
    const std::uint32_t n = u32(field);
    if (std::uint64_t{n} * element_bytes > remaining()) truncated(n * element_bytes, field);
    return n;
  }

  std::size_t offset() const { return offset_; }
  std::size_t remaining() const { return bytes_.size() - offset_; }

 private:
  std::uint64_t unsigned_le(int count, std::string_view field) {
    const auto b = take(static_cast<std::size_t>(count), field);
    std::uint64_t v = 0;
    for (int i = 0; i < count; ++i) v |= std::uint64_t{static_cast<std::uint8_t>(b[i])} << (8 * i);
    return v;
  }

  [[noreturn]] void truncated(std::uint64_t needed, std::string_view field) const {
    const std::string need = "this field needs " + std::to_string(needed) + " bytes at offset " +
                             std::to_string(offset_) + ", the file ends at byte " +
                             std::to_string(bytes_.size());
    if (!declared_size_known_)
      fail<FormatError>(field, "(cut off)", "the file is truncated: " + need);
    if (declared_size_ > bytes_.size()) {
      fail<FormatError>(field, "(cut off)",
                        "the file is truncated: " + need + " of the " +
                            std::to_string(declared_size_) + " bytes its header declares");
    }
    fail<FormatError>(field, "(past the end)",
                      need + ": a length stored in the file is wrong (corrupted file)");
  }

  std::span<const std::byte> bytes_;
  std::size_t offset_ = 0;
  std::uint64_t declared_size_ = 0;
  bool declared_size_known_ = false;
};

}  // namespace qconv::detail
