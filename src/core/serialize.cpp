// SPDX-License-Identifier: Apache-2.0
// The prepared-weights file format (docs/GUARANTEES.md has the table):
//
//   magic "QCONVPLN" · format_version u32 · file_size u64 · library_version string ·
//   engine string · engine_cpu_features u64 · flags u32 · problem (every ProblemDesc field) ·
//   packed_weights blob · [original_weights blob, when flags bit 0] · checksum u64
//
// Integers are little-endian, doubles their IEEE-754 bits as u64, strings a u32 length and bytes,
// blobs a u64 length and bytes, vectors a u32 count and values. The checksum is FNV-1a 64 over
// every byte before it. Loading checks, in this order: the magic, the version, the size, the
// checksum, then every field's value, so that the first error names the real cause.
#include "qconv/serialize.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <type_traits>

#include "core/byte_io.hpp"
#include "core/check.hpp"
#include "core/file_io.hpp"
#include "core/plan_impl.hpp"
#include "core/problem_fields.hpp"
#include "core/serialize_internal.hpp"
#include "engines/engine.hpp"
#include "qconv/error.hpp"

namespace qconv {
namespace detail {
namespace {

constexpr std::size_t kMaxNameLength = 255;
constexpr std::size_t kFileSizeOffset = 12;  // after the magic and the version

std::span<const std::byte> as_bytes(std::string_view s) {
  return std::as_bytes(std::span<const char>(s.data(), s.size()));
}

std::string hex(std::uint64_t v) {
  std::ostringstream out;
  out << "0x" << std::hex << v;
  return out.str();
}

// ---- writing ----

template <class T, class Write>
void write_vector(ByteWriter& w, const std::vector<T>& values, Write write) {
  w.u32(static_cast<std::uint32_t>(values.size()));
  for (const T& v : values) write(v);
}

// One field's encoding (the file's table in docs/GUARANTEES.md): enums and flags a u8, sizes an
// i64, zero points an i32, scales and bounds a double, per-channel values a vector.
struct FieldWriter {
  ByteWriter& w;
  void operator()(const FieldInfo&, std::int64_t v) const { w.i64(v); }
  void operator()(const FieldInfo&, std::int32_t v) const { w.i32(v); }
  void operator()(const FieldInfo&, double v) const { w.f64(v); }
  void operator()(const FieldInfo&, bool v) const { w.u8(v ? 1 : 0); }
  void operator()(const FieldInfo&, const std::vector<double>& v) const {
    write_vector(w, v, [this](double x) { w.f64(x); });
  }
  void operator()(const FieldInfo&, const std::vector<std::int32_t>& v) const {
    write_vector(w, v, [this](std::int32_t x) { w.i32(x); });
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(const FieldInfo&, E v) const { w.u8(static_cast<std::uint8_t>(v)); }
};

void write_problem(ByteWriter& w, const ProblemDesc& d) { for_each_field(FieldWriter{w}, d); }

// ---- reading: fields first, then what they mean ----

// An enum stored as a byte: values above `last` belong to no version of the format.
template <class E>
E read_enum(ByteReader& r, std::string_view field, E last) {
  const std::uint8_t v = r.u8(field);
  if (v > static_cast<std::uint8_t>(last)) {
    fail<FormatError>(field, int{v},
                      "not a value this format defines (0 to " +
                          std::to_string(static_cast<int>(last)) + "): corrupted file");
  }
  return static_cast<E>(v);
}

bool read_bool(ByteReader& r, std::string_view field) {
  const std::uint8_t v = r.u8(field);
  if (v > 1) fail<FormatError>(field, int{v}, "a flag is 0 or 1: corrupted file");
  return v == 1;
}

template <class T, class Read>
std::vector<T> read_vector(ByteReader& r, std::string_view field, std::size_t element_bytes,
                           Read read) {
  const std::uint32_t n = r.count(std::string(field) + ".size", element_bytes);
  std::vector<T> values(n);
  for (std::uint32_t i = 0; i < n; ++i)
    values[i] = read(std::string(field) + "[" + std::to_string(i) + "]");
  return values;
}

// The last value each enum stored as a byte may take in this format.
template <class E>
constexpr E last_value();
template <>
constexpr OpKind last_value() {
  return OpKind::conv2d_transpose;
}
template <>
constexpr DType last_value() {
  return DType::f32;
}
template <>
constexpr Layout last_value() {
  return Layout::X;
}
template <>
constexpr SchemeKind last_value() {
  return SchemeKind::onnxruntime;
}
template <>
constexpr Rounding last_value() {
  return Rounding::tonearest;
}
template <>
constexpr Activation::Kind last_value() {
  return Activation::Kind::clamp;
}

struct FieldReader {
  ByteReader& r;
  static std::string name(const FieldInfo& f) { return "problem." + std::string(f.name); }
  void operator()(const FieldInfo& f, std::int64_t& v) const { v = r.i64(name(f)); }
  void operator()(const FieldInfo& f, std::int32_t& v) const { v = r.i32(name(f)); }
  void operator()(const FieldInfo& f, double& v) const { v = r.f64(name(f)); }
  void operator()(const FieldInfo& f, bool& v) const { v = read_bool(r, name(f)); }
  void operator()(const FieldInfo& f, std::vector<double>& v) const {
    v = read_vector<double>(r, name(f), 8, [this](const std::string& e) { return r.f64(e); });
  }
  void operator()(const FieldInfo& f, std::vector<std::int32_t>& v) const {
    v = read_vector<std::int32_t>(r, name(f), 4, [this](const std::string& e) { return r.i32(e); });
  }
  template <class E>
  requires std::is_enum_v<E>
  void operator()(const FieldInfo& f, E& v) const { v = read_enum(r, name(f), last_value<E>()); }
};

ProblemDesc read_problem(ByteReader& r) {
  ProblemDesc d;
  for_each_field(FieldReader{r}, d);
  return d;
}

// Every field after the size, read without judging values beyond their encoding.
struct FileFields {
  std::uint32_t format_version = 0;
  std::string library_version;
  std::string engine;
  std::uint32_t engine_packing_version = 1;  // format 1 did not record it: every packing was 1
  CpuFeatures engine_cpu_features = 0;
  std::uint32_t flags = 0;
  ProblemDesc problem;
  std::span<const std::byte> packed_weights;
  std::span<const std::byte> original_weights;
  bool has_original_weights = false;
  std::uint64_t checksum = 0;
};

FileFields read_fields(ByteReader& r, std::uint32_t format_version) {
  FileFields f;
  f.format_version = format_version;
  f.library_version = r.string("library_version", kMaxNameLength);
  f.engine = r.string("engine", kMaxNameLength);
  if (format_version >= 2) f.engine_packing_version = r.u32("engine_packing_version");
  f.engine_cpu_features = r.u64("engine_cpu_features");
  f.flags = r.u32("flags");
  f.problem = read_problem(r);
  f.packed_weights = r.blob("packed_weights");
  f.has_original_weights = (f.flags & kFlagOriginalWeights) != 0;
  if (f.has_original_weights) f.original_weights = r.blob("original_weights");
  f.checksum = r.u64("checksum");
  return f;
}

// Reads and checks the magic and the format version and returns the declared size; `r` then stands
// after the size. `file_size` is the size of the whole file, of which `r` may hold only a prefix:
// a file with a valid header that holds more bytes than it declares is refused from its header
// alone, before the rest is read.
std::uint64_t check_header(ByteReader& r, std::uint64_t file_size, std::uint32_t& version_out) {
  const auto magic = r.take(kFileMagic.size(), "magic");
  if (!std::equal(magic.begin(), magic.end(), as_bytes(kFileMagic).begin())) {
    std::string shown;
    for (std::byte b : magic) {
      const auto c = static_cast<unsigned char>(b);
      constexpr char kDigits[] = "0123456789abcdef";
      if (c >= 32 && c < 127) {
        shown += static_cast<char>(c);
      } else {
        shown += {'\\', 'x', kDigits[c >> 4], kDigits[c & 15]};
      }
    }
    fail<FormatError>("magic", '"' + shown + '"',
                      "not a qconv prepared-weights file (those begin with \"QCONVPLN\")");
  }
  const std::uint32_t version = r.u32("format_version");
  version_out = version;
  if (version > kFormatVersion) {
    fail<FormatError>(
        "format_version", version,
        "written by a newer qconv; this library (" QCONV_VERSION ") reads format versions " +
            std::to_string(kOldestFormatVersion) + " to " + std::to_string(kFormatVersion) +
            ": upgrade qconv, or prepare the weights again with this one");
  }
  if (version < kOldestFormatVersion) {
    fail<FormatError>("format_version", version,
                      "no qconv writes this version (the first is " +
                          std::to_string(kOldestFormatVersion) + "): corrupted file");
  }
  const std::uint64_t declared = r.u64("file_size");
  r.set_declared_size(declared);
  if (declared < file_size) {
    fail<FormatError>("file_size", declared,
                      "the file holds " + std::to_string(file_size) +
                          " bytes: " + std::to_string(file_size - declared) +
                          " bytes follow the checksum (a bad copy, or files joined)");
  }
  return declared;
}

// Checks the header, the whole file's length and its checksum; on return `r` stands at the first
// variable field. Returns the format version.
std::uint32_t check_envelope(ByteReader& r, std::span<const std::byte> bytes) {
  std::uint32_t version = 0;
  const std::uint64_t declared = check_header(r, bytes.size(), version);
  if (declared > bytes.size()) {
    // Name the field the file was cut in: reading the fields runs out of bytes there.
    ByteReader probe = r;
    (void)read_fields(probe, version);
    fail<FormatError>("file_size", declared,
                      "the file is truncated: it holds " + std::to_string(bytes.size()) + " bytes");
  }
  if (bytes.size() < r.offset() + 8) {
    fail<FormatError>("file_size", declared, "too small to hold the header and the checksum");
  }
  const auto body = bytes.first(bytes.size() - 8);
  ByteReader tail(bytes.subspan(body.size()));
  const std::uint64_t stored = tail.u64("checksum");
  const std::uint64_t computed = fnv1a64(body);
  if (stored != computed) {
    fail<FormatError>("checksum", hex(stored),
                      "the contents hash to " + hex(computed) +
                          ": the file is corrupted (changed bytes or a damaged copy); save it "
                          "again from the original weights");
  }
  return version;
}

const Engine* find_engine(std::string_view name) {
  for (const Engine* engine : all_engines()) {
    if (engine->name() == name) return engine;
  }
  return nullptr;
}

std::string engine_names() {
  std::string out;
  for (const Engine* engine : all_engines())
    out += (out.empty() ? "" : ", ") + std::string(engine->name());
  return out;
}

// Why the file's packed weights cannot be used here; empty when they can.
std::string why_packed_unusable(const FileFields& f, CpuFeatures host) {
  const Engine* engine = find_engine(f.engine);
  if (engine == nullptr) {
    return "engine = " + f.engine + ": this library has no such engine (it has " + engine_names() +
           ")";
  }
  const CpuFeatures missing = f.engine_cpu_features & ~host;
  if (missing != 0) {
    return "engine_cpu_features = " + to_string_features(f.engine_cpu_features) + ": engine " +
           f.engine + " packed the weights for " + to_string_features(f.engine_cpu_features) +
           ", and this CPU lacks " + to_string_features(missing) + " (it has " +
           to_string_features(host) + ")";
  }
  if (engine->packing_version() != f.engine_packing_version) {
    return "engine_packing_version = " + std::to_string(f.engine_packing_version) + ": engine " +
           f.engine + " in this library packs in version " +
           std::to_string(engine->packing_version()) +
           ", so it cannot unpack the file's packed weights";
  }
  if (engine->required_cpu_features() != f.engine_cpu_features) {
    return "engine_cpu_features = " + to_string_features(f.engine_cpu_features) + ": engine " +
           f.engine + " in this library packs for " +
           to_string_features(engine->required_cpu_features()) +
           ", so the file was packed by another build of it";
  }
  return {};
}

// Every engine's packed form holds at least one byte per weight (a format rule), so a problem with
// more weights than the file has packed bytes is refused before it sizes anything: validating a
// Problem derives a table per output channel.
void check_weights_fit(const ProblemDesc& d, std::size_t packed_bytes) {
  const auto packed = static_cast<__int128>(packed_bytes);
  if (d.out_channels > packed) {
    fail<FormatError>("problem.out_channels", d.out_channels,
                      "more output channels than the " + std::to_string(packed_bytes) +
                          " bytes of packed weights can hold: corrupted file");
  }
  // Problem validation names a size outside [1, 2^31 - 1]; within it, the product fits in 124 bits.
  for (std::int64_t v : {d.out_channels, d.in_channels, d.groups, d.kernel_h, d.kernel_w}) {
    if (v < 1 || v > kMaxSize) return;
  }
  const __int128 count =
      static_cast<__int128>(d.out_channels) * (d.in_channels / d.groups) * d.kernel_h * d.kernel_w;
  if (count > packed) {
    fail<FormatError>("packed_weights.size", packed_bytes,
                      "fewer bytes than the problem has weights: corrupted file");
  }
}

Plan build_plan(const FileFields& f, CpuFeatures host) {
  check_weights_fit(f.problem, f.packed_weights.size());
  Problem problem = [&] {
    try {
      return Problem(f.problem);
    } catch (const Error& e) {
      throw FormatError(std::string("problem.") + e.what() +
                        " (the file's problem description is invalid: corrupted file)");
    }
  }();
  const std::string written_by =
      "format " + std::to_string(f.format_version) + ", written by qconv " + f.library_version;
  std::string unusable = why_packed_unusable(f, host);
  // QCONV_ENGINE forcing another engine than the file's: re-packed for it where the file kept the
  // original weights (otherwise the packed form is loaded as it is).
  const char* forced = std::getenv("QCONV_ENGINE");
  if (unusable.empty() && f.has_original_weights && forced != nullptr && *forced != '\0' &&
      std::string_view(forced) != "auto" && std::string_view(forced) != f.engine) {
    unusable = "QCONV_ENGINE = " + std::string(forced) + " forces another engine than the file's " +
               f.engine;
  }
  if (unusable.empty()) {
    const Engine& engine = *find_engine(f.engine);
    std::unique_ptr<PreparedKernel> kernel = engine.unpack(problem, f.packed_weights);
    const CanonicalWeights weights = kernel->canonical_weights();
    if (f.has_original_weights) {
      const std::vector<std::byte> unpacked = weights.bytes();
      if (!std::equal(unpacked.begin(), unpacked.end(), f.original_weights.begin(),
                      f.original_weights.end())) {
        fail<FormatError>("original_weights", "(differ)",
                          "the packed weights hold other values: corrupted or crafted file");
      }
    }
    const std::string reason = "loaded from prepared weights (" + written_by + ")";
    return Plan(std::make_shared<Plan::Impl>(std::move(problem), engine, reason, std::move(kernel),
                                             weights));
  }
  if (!f.has_original_weights) {
    throw FormatError(unusable +
                      "; the file carries no original weights to re-pack from: prepare the weights "
                      "again on this machine (Plan::prepare), or save with "
                      "SaveOptions::keep_original_weights so that a file can re-pack itself");
  }
  const CanonicalWeights weights =
      CanonicalWeights::from_bytes(problem, f.original_weights, "original_weights");
  return prepare_plan(
      problem, weights, PrepareOptions{},
      "re-packed from the file's original weights (" + written_by + "; " + unusable + "); ");
}

}  // namespace

Plan deserialize_for(std::span<const std::byte> bytes, CpuFeatures host) {
  ByteReader r(bytes);
  const std::uint32_t version = check_envelope(r, bytes);
  FileFields f = read_fields(r, version);
  if (r.remaining() != 0) {
    fail<FormatError>("checksum", "(misplaced)",
                      std::to_string(r.remaining()) +
                          " bytes lie between the last field and the checksum: corrupted file");
  }
  if ((f.flags & ~kFlagOriginalWeights) != 0) {
    fail<FormatError>("flags", hex(f.flags),
                      "unknown flag bits (written by a newer qconv, or corrupted)");
  }
  if ((f.engine_cpu_features & ~kKnownCpuFeatures) != 0) {
    fail<FormatError>("engine_cpu_features", hex(f.engine_cpu_features),
                      "names CPU features this library does not know (" +
                          to_string_features(f.engine_cpu_features & ~kKnownCpuFeatures) +
                          "): written by a newer qconv, or corrupted");
  }
  try {
    return build_plan(f, host);
  } catch (const FormatError&) {
    throw;
  } catch (const Error& e) {
    // The problem and the weights each passed their checks but do not go together (the
    // accumulator bound): such a file was never written by save().
    throw FormatError(std::string("the file's weights do not fit its problem: ") + e.what());
  }
}

}  // namespace detail

std::vector<std::byte> serialize(const Plan& plan, const SaveOptions& options) {
  const Plan::Impl& impl = plan.impl();
  detail::ByteWriter w;
  w.raw(detail::as_bytes(detail::kFileMagic));
  w.u32(detail::kFormatVersion);
  w.u64(0);  // file_size, known at the end
  w.string(QCONV_VERSION);
  w.string(impl.engine->name());
  w.u32(impl.engine->packing_version());
  w.u64(impl.engine->required_cpu_features());
  w.u32(options.keep_original_weights ? detail::kFlagOriginalWeights : 0);
  detail::write_problem(w, impl.problem.desc());
  w.blob(impl.kernel->packed());
  if (options.keep_original_weights) w.blob(impl.kernel->canonical_weights().bytes());
  w.patch_u64(detail::kFileSizeOffset, w.size() + 8);
  w.u64(detail::fnv1a64(w.bytes()));
  return std::move(w.bytes());
}

Plan deserialize(std::span<const std::byte> bytes) {
  return detail::deserialize_for(bytes, detail::host_cpu_features());
}

void save(const Plan& plan, const std::filesystem::path& path, const SaveOptions& options) {
  detail::write_file_atomically(path, serialize(plan, options));
}

Plan load(const std::filesystem::path& path) {
  detail::InputFile file(path);
  // The header first: a file that is not a loadable prepared-weights file, or that holds more bytes
  // than it declares, is refused before the rest is read or any memory is sized by it.
  std::vector<std::byte> bytes;
  file.read(bytes, detail::kHeaderSize);
  detail::ByteReader header(bytes);
  std::uint32_t version = 0;
  const std::uint64_t declared = detail::check_header(header, file.size(), version);
  // Never more than the file holds (a shorter file is reported as truncated by deserialize).
  const std::uint64_t wanted = std::min<std::uint64_t>(declared, file.size());
  if (wanted > bytes.size()) file.read(bytes, static_cast<std::size_t>(wanted - bytes.size()));
  return deserialize(bytes);
}

}  // namespace qconv
