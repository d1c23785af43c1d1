// SPDX-License-Identifier: Apache-2.0
// Prepared-weights files: round trips, and every kind of bad file refused with FormatError.
// The test writes down the layout docs/GUARANTEES.md documents (header offsets, field order) and
// its own FNV-1a, independently of src/core/serialize.cpp, so a change of the format that the
// documentation does not follow makes it fail. Golden files of every format version:
// tests/serialize_files_test.cpp.
#include "qconv/serialize.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>

#include "core/cpu_features.hpp"
#include "core/serialize_internal.hpp"
#include "engines/engine.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "support/random_bytes.hpp"

namespace {

using qconv::DType;
using qconv::Layout;
using qconv::test::random_bytes;
using Bytes = std::vector<std::byte>;

// ---- the documented layout, independently ----

std::uint64_t fnv1a64(const std::byte* data, std::size_t size) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < size; ++i) {
    h = (h ^ static_cast<std::uint8_t>(data[i])) * 1099511628211ull;
  }
  return h;
}

std::uint64_t read_le(const Bytes& b, std::size_t at, int count) {
  std::uint64_t v = 0;
  for (int i = 0; i < count; ++i)
    v |= std::uint64_t{static_cast<std::uint8_t>(b[at + i])} << (8 * i);
  return v;
}

void write_le(Bytes& b, std::size_t at, std::uint64_t v, int count) {
  for (int i = 0; i < count; ++i) b[at + i] = static_cast<std::byte>(v >> (8 * i));
}

// Recomputes the checksum (the last 8 bytes), as a forger would.
void reseal(Bytes& b) { write_le(b, b.size() - 8, fnv1a64(b.data(), b.size() - 8), 8); }

// Where each header field begins (docs/GUARANTEES.md, "File format").
struct HeaderOffsets {
  std::size_t magic = 0, format_version = 8, file_size = 12, library_version = 20;
  std::size_t engine = 0, engine_packing_version = 0, engine_cpu_features = 0, flags = 0;
  std::size_t problem = 0;
};

HeaderOffsets header_offsets(const Bytes& b) {
  HeaderOffsets h;
  h.engine = h.library_version + 4 + read_le(b, h.library_version, 4);
  h.engine_packing_version = h.engine + 4 + read_le(b, h.engine, 4);
  h.engine_cpu_features = h.engine_packing_version + 4;
  h.flags = h.engine_cpu_features + 8;
  h.problem = h.flags + 4;
  return h;
}

// ---- problems ----

// A grouped, strided, padded conv2d with per-channel weights, fbgemm output and a float bias.
qconv::ProblemDesc grouped_problem() {
  qconv::ProblemDesc d;
  d.batch = 2;
  d.in_channels = 4;
  d.in_height = 5;
  d.in_width = 6;
  d.out_channels = 6;
  d.groups = 2;
  d.kernel_h = 3;
  d.kernel_w = 2;
  d.stride_h = 2;
  d.pad_top = d.pad_bottom = d.pad_left = 1;
  d.input_layout = Layout::NCHW;
  d.weight_layout = Layout::OIHW;
  d.input_scale = 0.05;
  d.input_zero_point = 7;
  d.weight_scale = {0.01, 0.02, 0.03, 0.04, 0.05, 0.06};
  d.weight_zero_point = {0, 1, -2, 3, 0, -1};
  d.output_scale = 0.1;
  d.output_zero_point = 100;
  d.scheme.kind = qconv::SchemeKind::fbgemm;
  d.has_bias = true;
  return d;
}

// A transposed convolution with the int32 scheme.
qconv::ProblemDesc transposed_problem() {
  qconv::ProblemDesc d;
  d.op = qconv::OpKind::conv2d_transpose;
  d.in_channels = 3;
  d.in_height = 4;
  d.in_width = 3;
  d.out_channels = 2;
  d.kernel_h = d.kernel_w = 3;
  d.stride_h = d.stride_w = 2;
  d.output_pad_h = 1;
  d.input_dtype = DType::s8;
  d.weight_dtype = DType::u8;
  d.weight_zero_point = {128};
  d.output_dtype = DType::s32;
  d.weight_layout = Layout::IOHW;
  d.scheme.kind = qconv::SchemeKind::int32;
  return d;
}

struct Prepared {
  qconv::Problem problem;
  std::vector<std::uint8_t> weights;
  qconv::Plan plan;
};

Prepared prepare(const qconv::ProblemDesc& d, unsigned seed = 1) {
  qconv::Problem p(d);
  auto shape = p.weight_shape();
  auto w = random_bytes(static_cast<std::size_t>(qconv::element_count(shape, "w")), seed);
  auto plan = qconv::Plan::prepare(
      p, {std::span<const std::uint8_t>(w), d.weight_dtype, d.weight_layout, shape});
  return {p, std::move(w), std::move(plan)};
}

// Runs `plan` on a seeded input (and bias, when the problem has one) and returns the output bytes.
Bytes run(const qconv::Plan& plan, unsigned seed = 2) {
  const auto& p = plan.problem();
  const auto& d = p.desc();
  auto x = random_bytes(static_cast<std::size_t>(qconv::element_count(p.input_shape(), "x")), seed);
  qconv::ConstTensorView input(std::span<const std::uint8_t>(x), d.input_dtype, d.input_layout,
                               p.input_shape());
  std::vector<float> bias_f(static_cast<std::size_t>(d.out_channels));
  std::vector<std::int32_t> bias_s(bias_f.size());
  for (std::size_t i = 0; i < bias_f.size(); ++i) {
    bias_f[i] = 0.37f * static_cast<float>(i) - 1.0f;
    bias_s[i] = static_cast<std::int32_t>(i) * 1000 - 2500;
  }
  qconv::BiasView bias;
  if (d.has_bias && qconv::takes_float_bias(d.scheme.kind)) bias = std::span<const float>(bias_f);
  if (d.has_bias && !qconv::takes_float_bias(d.scheme.kind)) {
    bias = std::span<const std::int32_t>(bias_s);
  }
  const qconv::Tensor y = plan.execute(input, bias);
  const auto* out = static_cast<const std::byte*>(y.data());
  return Bytes(out, out + y.bytes());
}

// The FormatError message for `bytes`, or a failure when they load.
std::string load_error(const Bytes& bytes, qconv::detail::CpuFeatures host) {
  try {
    (void)qconv::detail::deserialize_for(bytes, host);
  } catch (const qconv::FormatError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the bytes loaded";
  return {};
}

std::string load_error(const Bytes& bytes) {
  return load_error(bytes, qconv::detail::host_cpu_features());
}

// ---- round trips ----

TEST(Serialize, HandComputedOutputSurvivesTheRoundTrip) {
  // 1×1 conv, 2 input channels, 1 output channel: y = (x0 − 3)·(5 − 1) + (x1 − 3)·(−2 − 1).
  qconv::ProblemDesc d;
  d.in_channels = 2;
  d.input_zero_point = 3;
  d.weight_zero_point = {1};
  d.output_dtype = DType::s32;
  d.scheme.kind = qconv::SchemeKind::int32;
  const qconv::Problem p(d);
  const std::int8_t w[] = {5, -2};
  const auto plan = qconv::Plan::prepare(
      p, {std::span<const std::int8_t>(w), DType::s8, Layout::OHWI, {1, 1, 1, 2}});
  const auto loaded = qconv::deserialize(qconv::serialize(plan));
  const std::uint8_t x[] = {10, 1};
  std::int32_t y = 0;
  loaded.execute({std::span<const std::uint8_t>(x), DType::u8, Layout::NHWC, {1, 1, 1, 2}},
                 {std::span<std::int32_t>(&y, 1), DType::s32, Layout::NHWC, {1, 1, 1, 1}});
  EXPECT_EQ(y, (10 - 3) * 4 + (1 - 3) * -3);
}

TEST(Serialize, RoundTripGivesEqualOutputsAndEqualBytes) {
  for (const auto& desc : {grouped_problem(), transposed_problem()}) {
    for (bool keep : {false, true}) {
      const Prepared prepared = prepare(desc);
      const Bytes file = qconv::serialize(prepared.plan, {keep});
      const qconv::Plan loaded = qconv::deserialize(file);
      EXPECT_EQ(run(loaded), run(prepared.plan));
      EXPECT_EQ(loaded.engine(), prepared.plan.engine());
      EXPECT_EQ(loaded.problem().summary(), prepared.plan.problem().summary());
      EXPECT_NO_THROW(loaded.require_compatible(prepared.problem));
      EXPECT_NE(loaded.describe().find("loaded from prepared weights"), std::string::npos);
      EXPECT_EQ(qconv::serialize(loaded, {keep}), file);  // nothing lost, nothing added
    }
  }
}

TEST(Serialize, HeaderFollowsTheDocumentedLayout) {
  const Prepared prepared = prepare(grouped_problem());
  const Bytes file = qconv::serialize(prepared.plan);
  EXPECT_EQ(std::string(reinterpret_cast<const char*>(file.data()), 8), "QCONVPLN");
  EXPECT_EQ(read_le(file, 8, 4), 2u);
  EXPECT_EQ(read_le(file, 12, 8), file.size());
  const HeaderOffsets h = header_offsets(file);
  const std::string engine(reinterpret_cast<const char*>(file.data() + h.engine + 4),
                           read_le(file, h.engine, 4));
  EXPECT_EQ(engine, prepared.plan.engine());
  // The features the engine's packed form needs (none for the reference engine: plain C++).
  std::uint64_t features = ~0ull;
  std::uint64_t packing_version = 0;
  for (const qconv::detail::Engine* e : qconv::detail::all_engines()) {
    if (e->name() == engine) {
      features = e->required_cpu_features();
      packing_version = e->packing_version();
    }
  }
  EXPECT_EQ(read_le(file, h.engine_packing_version, 4), packing_version);
  EXPECT_EQ(read_le(file, h.engine_cpu_features, 8), features);
  EXPECT_EQ(read_le(file, h.flags, 4), 0u);
  EXPECT_EQ(read_le(file, file.size() - 8, 8), fnv1a64(file.data(), file.size() - 8));
  // The problem's first fields: op (conv2d = 0), then batch, in_channels as i64.
  EXPECT_EQ(read_le(file, h.problem, 1), 0u);
  EXPECT_EQ(read_le(file, h.problem + 1, 8), 2u);
  EXPECT_EQ(read_le(file, h.problem + 9, 8), 4u);
  const Bytes with_weights = qconv::serialize(prepared.plan, {true});
  EXPECT_EQ(read_le(with_weights, header_offsets(with_weights).flags, 4), 1u);
  // One byte per weight more, plus the blob's u64 length.
  EXPECT_EQ(with_weights.size(), file.size() + 8 + prepared.weights.size());
}

TEST(Serialize, SaveAndLoadAFile) {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("qconv_serialize_test_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto path = dir / "plan.qconv";
  const Prepared first = prepare(grouped_problem(), 1);
  const Prepared second = prepare(grouped_problem(), 9);
  qconv::save(first.plan, path);
  qconv::save(second.plan, path);  // replaces the first
  EXPECT_EQ(run(qconv::load(path)), run(second.plan));
  EXPECT_NE(run(first.plan), run(second.plan));
  // Only the file itself is left: the temporary file was renamed, not copied.
  EXPECT_EQ(std::distance(std::filesystem::directory_iterator(dir), {}), 1);
  EXPECT_THROW(qconv::load(dir / "missing.qconv"), std::system_error);
  EXPECT_THROW(qconv::save(first.plan, dir / "no" / "such" / "dir.qconv"), std::system_error);
  std::filesystem::remove_all(dir);
}

// ---- bad files ----

TEST(Serialize, EveryTruncationIsRefusedNamingTheFieldCut) {
  for (bool keep : {false, true}) {
    const Bytes file = qconv::serialize(prepare(grouped_problem()).plan, {keep});
    const HeaderOffsets h = header_offsets(file);
    const std::pair<std::size_t, std::string> fields[] = {
        {h.magic, "magic"},
        {h.format_version, "format_version"},
        {h.file_size, "file_size"},
        {h.library_version, "library_version"},
        {h.engine, "engine"},
        {h.engine_packing_version, "engine_packing_version"},
        {h.engine_cpu_features, "engine_cpu_features"},
        {h.flags, "flags"},
        {h.problem, "problem.op"},
        {h.problem + 1, "problem.batch"},
        {h.problem + 9, "problem.in_channels"},
        {file.size() - 8, "checksum"},
    };
    for (std::size_t length = 0; length < file.size(); ++length) {
      const Bytes prefix(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(length));
      const std::string message = load_error(prefix);
      // The field the cut falls in: the last one that begins at or before it.
      std::string expected;
      for (const auto& [at, name] : fields) {
        if (at <= length) expected = name;
      }
      if (length < h.problem + 17 || length >= file.size() - 8) {
        EXPECT_EQ(message.rfind(expected + " = (cut off)", 0), 0u)
            << "prefix of " << length << " bytes: " << message;
      }
      if (length >= 20) {
        EXPECT_NE(message.find("truncated"), std::string::npos) << message;
      }
    }
  }
}

TEST(Serialize, EveryChangedByteIsRefused) {
  const Bytes file = qconv::serialize(prepare(transposed_problem()).plan, {true});
  for (std::size_t at = 0; at < file.size(); ++at) {
    for (int bit : {0, 7}) {
      Bytes bad = file;
      bad[at] ^= static_cast<std::byte>(1 << bit);
      EXPECT_FALSE(load_error(bad).empty()) << "byte " << at;
    }
  }
}

TEST(Serialize, FlippedPayloadBitFailsTheChecksum) {
  const Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  Bytes bad = file;
  bad[file.size() - 8 - 5] ^= std::byte{0x10};  // inside the packed weights
  const std::string message = load_error(bad);
  EXPECT_EQ(message.rfind("checksum = 0x", 0), 0u) << message;
  EXPECT_NE(message.find("corrupted"), std::string::npos) << message;
}

TEST(Serialize, WrongMagicIsNotAQconvFile) {
  Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  file[0] = std::byte{'P'};
  const std::string message = load_error(file);
  EXPECT_EQ(message.rfind("magic = \"PCONVPLN\"", 0), 0u) << message;
  EXPECT_NE(message.find("not a qconv prepared-weights file"), std::string::npos);
  file[1] = std::byte{0x01};  // unprintable bytes are shown escaped
  EXPECT_EQ(load_error(file).rfind("magic = \"P\\x01ONVPLN\"", 0), 0u) << load_error(file);
}

TEST(Serialize, NewerVersionAsksForAnUpgrade) {
  Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  write_le(file, 8, 3, 4);
  reseal(file);
  const std::string message = load_error(file);
  EXPECT_EQ(message.rfind("format_version = 3: written by a newer qconv", 0), 0u) << message;
  EXPECT_NE(message.find("reads format versions 1 to 2"), std::string::npos) << message;
  write_le(file, 8, 0, 4);
  reseal(file);
  EXPECT_EQ(load_error(file).rfind("format_version = 0", 0), 0u);
}

TEST(Serialize, WrongCpuTagIsRefusedWithoutOriginalWeights) {
  Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  const HeaderOffsets h = header_offsets(file);
  write_le(file, h.engine_cpu_features, qconv::detail::kAvx512vnni, 8);
  reseal(file);
  // On a CPU with only AVX2 the packed form cannot run, and nothing can be re-packed.
  const std::string message = load_error(file, qconv::detail::kAvx2);
  EXPECT_EQ(message.rfind("engine_cpu_features = avx512vnni", 0), 0u) << message;
  EXPECT_NE(message.find("this CPU lacks avx512vnni (it has avx2)"), std::string::npos) << message;
  EXPECT_NE(message.find("keep_original_weights"), std::string::npos) << message;
  // On a CPU with every feature, the engine's own features still disagree with the tag.
  const std::string other = load_error(file, qconv::detail::kKnownCpuFeatures);
  EXPECT_NE(other.find("packed by another build"), std::string::npos) << other;
  // A feature bit no version of this library knows.
  write_le(file, h.engine_cpu_features, std::uint64_t{1} << 40, 8);
  reseal(file);
  const std::string unknown = load_error(file);
  EXPECT_EQ(unknown.rfind("engine_cpu_features = 0x10000000000", 0), 0u) << unknown;
  EXPECT_NE(unknown.find("bit40"), std::string::npos) << unknown;
}

TEST(Serialize, WrongCpuTagRepacksFromOriginalWeights) {
  const Prepared prepared = prepare(grouped_problem());
  Bytes file = qconv::serialize(prepared.plan, {true});
  write_le(file, header_offsets(file).engine_cpu_features, qconv::detail::kAvx512vnni, 8);
  reseal(file);
  const qconv::Plan loaded = qconv::detail::deserialize_for(file, 0);
  EXPECT_EQ(run(loaded), run(prepared.plan));
  EXPECT_NE(loaded.describe().find("re-packed from the file's original weights"), std::string::npos)
      << loaded.describe();
  EXPECT_NE(loaded.describe().find("lacks avx512vnni"), std::string::npos) << loaded.describe();
}

TEST(Serialize, UnknownEngineRepacksOrSaysWhatToDo) {
  const Prepared prepared = prepare(transposed_problem());
  for (bool keep : {false, true}) {
    Bytes file = qconv::serialize(prepared.plan, {keep});
    // The engine name's last letter becomes '#': "reference" → "referenc#", an engine no
    // library has.
    std::string name(prepared.plan.engine());
    file[header_offsets(file).engine + 4 + name.size() - 1] = std::byte{'#'};
    name.back() = '#';
    reseal(file);
    if (!keep) {
      const std::string message = load_error(file);
      EXPECT_EQ(message.rfind("engine = " + name + ": this library has no such engine", 0), 0u)
          << message;
      EXPECT_NE(message.find("prepare the weights again"), std::string::npos) << message;
    } else {
      EXPECT_EQ(run(qconv::deserialize(file)), run(prepared.plan));
    }
  }
}

TEST(Serialize, InvalidProblemWithAGoodChecksumIsAFormatError) {
  Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  write_le(file, header_offsets(file).problem + 9, 0, 8);  // in_channels = 0
  reseal(file);
  const std::string message = load_error(file);
  EXPECT_EQ(message.rfind("problem.in_channels = 0", 0), 0u) << message;
  // An enum byte out of range.
  file = qconv::serialize(prepare(grouped_problem()).plan);
  file[header_offsets(file).problem] = std::byte{7};
  reseal(file);
  EXPECT_EQ(load_error(file).rfind("problem.op = 7", 0), 0u);
}

TEST(Serialize, HugeSizesAreRefusedBeforeAnythingIsSizedByThem) {
  const Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  const std::size_t problem = header_offsets(file).problem;
  const std::size_t in_channels = problem + 9, out_channels = problem + 33, groups = problem + 41;
  Bytes bad = file;
  write_le(bad, out_channels, 0x7fffffff, 8);  // valid for a Problem, but not for 72 bytes
  reseal(bad);
  EXPECT_EQ(load_error(bad).rfind("problem.out_channels = 2147483647: more output channels", 0), 0u)
      << load_error(bad);
  bad = file;
  write_le(bad, in_channels, 0x7ffffffe, 8);
  write_le(bad, groups, 1, 8);
  reseal(bad);
  EXPECT_EQ(load_error(bad).rfind("packed_weights.size = 72: fewer bytes", 0), 0u)
      << load_error(bad);
  bad = file;
  write_le(bad, in_channels, 1ull << 62, 8);  // beyond every size: Problem names it
  reseal(bad);
  EXPECT_EQ(load_error(bad).rfind("problem.in_channels = 4611686018427387904", 0), 0u)
      << load_error(bad);
}

TEST(Serialize, TrailingBytesAndLyingLengthsAreRefused) {
  const Bytes file = qconv::serialize(prepare(grouped_problem()).plan);
  Bytes longer = file;
  longer.push_back(std::byte{0});
  EXPECT_NE(load_error(longer).find("1 bytes follow the checksum"), std::string::npos);
  // A packed-weights length larger than the file, with the size and checksum made consistent.
  Bytes lying = file;
  const std::size_t packed_length_at = file.size() - 8 - 6 * 2 * 3 * 2 - 8;
  ASSERT_EQ(read_le(lying, packed_length_at, 8), 6u * 2 * 3 * 2);
  write_le(lying, packed_length_at, 1ull << 62, 8);
  reseal(lying);
  const std::string message = load_error(lying);
  EXPECT_EQ(message.rfind("packed_weights = (past the end)", 0), 0u) << message;
  // A shorter packed-weights blob leaves bytes before the checksum.
  write_le(lying, packed_length_at, 6u * 2 * 3 * 2 - 1, 8);
  reseal(lying);
  EXPECT_NE(load_error(lying).find("between the last field and the checksum"), std::string::npos);
}

TEST(Serialize, OriginalWeightsMustAgreeWithThePackedOnes) {
  Bytes file = qconv::serialize(prepare(grouped_problem()).plan, {true});
  file[file.size() - 9] ^= std::byte{1};  // the last original weight
  reseal(file);
  EXPECT_EQ(load_error(file).rfind("original_weights = (differ)", 0), 0u);
}

TEST(Serialize, TheAccumulatorBoundIsRecomputedNotTrusted) {
  // K = 4096·9 = 36864 > 2^31 / 255²: prepared with wrap-around allowed, then the file's flag is
  // cleared: loading must find the bound broken from the weights themselves.
  qconv::ProblemDesc d;
  d.in_channels = 4096;
  d.in_height = d.in_width = 3;
  d.kernel_h = d.kernel_w = 3;
  d.weight_zero_point = {127};
  d.output_dtype = DType::s32;
  d.scheme.kind = qconv::SchemeKind::int32;
  d.allow_wraparound = true;
  const qconv::Problem p(d);
  std::vector<std::int8_t> w(4096 * 9, -128);
  const auto plan = qconv::Plan::prepare(
      p, {std::span<const std::int8_t>(w), DType::s8, Layout::OHWI, p.weight_shape()});
  Bytes file = qconv::serialize(plan);
  const std::size_t allow_wraparound_at = file.size() - 8 - w.size() - 8 - 1;
  ASSERT_EQ(file[allow_wraparound_at], std::byte{1});
  file[allow_wraparound_at] = std::byte{0};
  reseal(file);
  const std::string message = load_error(file);
  EXPECT_EQ(message.rfind("the file's weights do not fit its problem: accumulator", 0), 0u)
      << message;
}

}  // namespace
