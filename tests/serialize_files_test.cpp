// SPDX-License-Identifier: Apache-2.0
// Prepared-weights files on disk and across versions: golden files written by earlier builds
// (tests/data/prepared/, with their generator), the per-engine packing version, and what save and
// load do to the file system (modes, links, long names, leftovers, FIFOs, oversized files).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <system_error>
#include <thread>

#include "core/serialize_internal.hpp"
#include "qconv/error.hpp"
#include "qconv/serialize.hpp"

namespace {

namespace fs = std::filesystem;
using Bytes = std::vector<std::byte>;

const fs::path kGolden = fs::path(QCONV_TEST_DATA) / "prepared";

Bytes read_bytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Bytes out(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) out[i] = static_cast<std::byte>(s[i]);
  return out;
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

std::uint64_t fnv1a64(const void* data, std::size_t size) {
  std::uint64_t h = 14695981039346656037ull;
  for (std::size_t i = 0; i < size; ++i) {
    h = (h ^ static_cast<const std::uint8_t*>(data)[i]) * 1099511628211ull;
  }
  return h;
}

void reseal(Bytes& b) { write_le(b, b.size() - 8, fnv1a64(b.data(), b.size() - 8), 8); }

std::string load_error(const Bytes& file) {
  try {
    (void)qconv::deserialize(file);
  } catch (const qconv::FormatError& e) {
    return e.what();
  }
  return "(loaded)";
}

// Runs a golden file's plan on the input its JSON records and returns the output.
std::vector<int> run_golden(const qconv::Plan& plan, const nlohmann::json& golden) {
  const auto input = golden["input"].get<std::vector<std::uint8_t>>();
  const qconv::Problem& p = plan.problem();
  const qconv::ConstTensorView x(std::span<const std::uint8_t>(input), qconv::DType::u8,
                                 qconv::Layout::NHWC, p.input_shape());
  const qconv::Tensor y = plan.execute(x);
  const auto* out = y.as<std::uint8_t>();
  return std::vector<int>(out, out + y.elements());
}

// tests/data/prepared/v<version><suffix>.<extension>
fs::path golden_file(unsigned version, std::string_view suffix, std::string_view extension) {
  std::string name = "v";
  name += std::to_string(version);
  name += suffix;
  name += '.';
  name += extension;
  return kGolden / name;
}

nlohmann::json golden_json(unsigned version) {
  std::ifstream in(golden_file(version, "", "json"));
  return nlohmann::json::parse(in);
}

// ---- files written by earlier builds ----

TEST(SerializeGolden, EveryFormatVersionsFilesLoadAndComputeWhatTheirBuildComputed) {
  for (unsigned version = qconv::detail::kOldestFormatVersion;
       version <= qconv::detail::kFormatVersion; ++version) {
    const nlohmann::json golden = golden_json(version);
    ASSERT_EQ(golden["format_version"].get<unsigned>(), version);
    const std::vector<int> expected = golden["output"].get<std::vector<int>>();
    ASSERT_EQ(expected.size(), 96u);
    for (const std::string suffix : {"", "_original"}) {
      const fs::path file = golden_file(version, suffix, "qcpw");
      ASSERT_EQ(read_le(read_bytes(file), 8, 4), static_cast<std::uint64_t>(version)) << file;
      const qconv::Plan plan = qconv::load(file);
      EXPECT_EQ(run_golden(plan, golden), expected) << file;
      const qconv::ProblemDesc& d = plan.problem().desc();
      EXPECT_EQ(d.input_layout, qconv::Layout::NHWC);
      EXPECT_EQ(d.weight_layout, qconv::Layout::OHWI);
      EXPECT_EQ(d.weight_zero_point, (std::vector<std::int32_t>{-3, -2, -1, 0, 1, 2}));
      EXPECT_EQ(d.scheme.kind, qconv::SchemeKind::tvm);
      EXPECT_EQ(d.activation.kind, qconv::Activation::Kind::relu);
      EXPECT_EQ(d.pad_top, 1);
      EXPECT_EQ(d.pad_bottom, 0);
      EXPECT_EQ(d.pad_left, 2);
      EXPECT_EQ(d.pad_right, 1);
    }
  }
}

TEST(SerializeGolden, TheCurrentVersionIsWrittenByteForByteAsItsGoldenFile) {
  // A change of the bytes written without a new format version (and new golden files) fails here.
  for (const std::string suffix : {"", "_original"}) {
    const fs::path file = golden_file(qconv::detail::kFormatVersion, suffix, "qcpw");
    const Bytes golden = read_bytes(file);
    const Bytes again = qconv::serialize(qconv::load(file), {suffix == "_original"});
    EXPECT_EQ(again, golden) << file;
  }
}

// ---- the per-engine packing version ----

std::size_t packing_version_offset(const Bytes& b) {
  const std::size_t engine = 20 + 4 + read_le(b, 20, 4);
  return engine + 4 + read_le(b, engine, 4);
}

TEST(SerializeGolden, AnotherPackingVersionRepacksOrIsRefusedSayingWhy) {
  const fs::path file = golden_file(qconv::detail::kFormatVersion, "", "qcpw");
  for (bool original : {false, true}) {
    const qconv::Plan plan = qconv::load(file);
    Bytes bytes = qconv::serialize(plan, {original});
    const std::size_t at = packing_version_offset(bytes);
    ASSERT_EQ(read_le(bytes, at, 4), 1u);
    write_le(bytes, at, 2, 4);
    reseal(bytes);
    if (!original) {
      const std::string message = load_error(bytes);
      EXPECT_EQ(message.rfind("engine_packing_version = 2: engine reference in this library packs "
                              "in version 1",
                              0),
                0u)
          << message;
      EXPECT_NE(message.find("keep_original_weights"), std::string::npos) << message;
    } else {
      const qconv::Plan repacked = qconv::deserialize(bytes);
      EXPECT_NE(repacked.describe().find("re-packed from the file's original weights"),
                std::string::npos)
          << repacked.describe();
      EXPECT_NE(repacked.describe().find("engine_packing_version = 2"), std::string::npos);
      EXPECT_EQ(run_golden(repacked, golden_json(2)), run_golden(plan, golden_json(2)));
    }
  }
}

TEST(SerializeGolden, AFlagHoldingTwoBehindAValidChecksumIsRefused) {
  Bytes bytes = read_bytes(kGolden / "v2.qcpw");
  // has_bias and allow_wraparound are the problem's last two bytes, before packed_weights
  // (u64 length + 6·3·2·4 bytes) and the checksum.
  const std::size_t allow_wraparound = bytes.size() - 8 - 144 - 8 - 1;
  const std::size_t has_bias = allow_wraparound - 1;
  ASSERT_EQ(bytes[has_bias], std::byte{0});
  ASSERT_EQ(bytes[allow_wraparound], std::byte{0});
  for (const std::size_t at : {has_bias, allow_wraparound}) {
    Bytes bad = bytes;
    bad[at] = std::byte{2};
    reseal(bad);
    const std::string field = at == has_bias ? "problem.has_bias" : "problem.allow_wraparound";
    EXPECT_EQ(load_error(bad).rfind(field + " = 2: a flag is 0 or 1", 0), 0u) << load_error(bad);
  }
}

// ---- the file system ----

class SerializeFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("qconv_files_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    plan_.emplace(qconv::load(kGolden / "v2.qcpw"));
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::optional<qconv::Plan> plan_;
};

TEST_F(SerializeFiles, SavingOverAFileKeepsItsMode) {
  const fs::path path = dir_ / "w.qcpw";
  qconv::save(*plan_, path);
  ASSERT_EQ(::chmod(path.c_str(), 0600), 0);
  qconv::save(*plan_, path);
  struct stat info {};
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0600u);
  ASSERT_EQ(::chmod(path.c_str(), 0640), 0);
  qconv::save(*plan_, path);
  ASSERT_EQ(::stat(path.c_str(), &info), 0);
  EXPECT_EQ(info.st_mode & 07777, 0640u);
}

TEST_F(SerializeFiles, SavingThroughASymbolicLinkReplacesItsTargetAndKeepsTheLink) {
  const fs::path target = dir_ / "real.qcpw";
  const fs::path link = dir_ / "link.qcpw";
  fs::create_symlink("real.qcpw", link);  // relative, and dangling until the first save
  qconv::save(*plan_, link);
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_TRUE(fs::is_regular_file(target));
  qconv::save(*plan_, link, {true});
  EXPECT_TRUE(fs::is_symlink(link));
  EXPECT_EQ(read_bytes(target), qconv::serialize(*plan_, {true}));
}

TEST_F(SerializeFiles, ALongLegalNameSaves) {
  const fs::path path = dir_ / (std::string(245, 'n') + ".qcpw");  // 250 characters
  qconv::save(*plan_, path);
  EXPECT_EQ(read_bytes(path), qconv::serialize(*plan_));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path(), path) << "left behind: " << entry.path();
  }
}

TEST_F(SerializeFiles, TemporaryFilesOfADeadSaveAreRemovedOthersKept) {
  const fs::path path = dir_ / "w.qcpw";
  const std::string name = path.filename().string();
  char prefix[40];
  std::snprintf(prefix, sizeof prefix, ".qconv-%016llx.",
                static_cast<unsigned long long>(fnv1a64(name.data(), name.size())));
  // A process that has ended: its pid names no running process any more.
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  ASSERT_EQ(::waitpid(child, nullptr, 0), child);
  const fs::path stale = dir_ / (prefix + std::to_string(child) + ".7");
  const fs::path live = dir_ / (prefix + std::to_string(::getppid()) + ".3");  // a running process
  const fs::path other = dir_ / (".qconv-0000000000000000." + std::to_string(child) + ".1");
  for (const auto& p : {stale, live, other}) std::ofstream(p) << "partial";
  qconv::save(*plan_, path);
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_TRUE(fs::exists(live));
  EXPECT_TRUE(fs::exists(other));  // another target's
}

TEST_F(SerializeFiles, LoadingAFifoIsRefusedWithoutBlocking) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  // In a child process, so that a load that blocks cannot hang the test run.
  const pid_t child = ::fork();
  if (child == 0) {
    try {
      (void)qconv::load(fifo);
    } catch (const std::system_error& e) {
      ::_exit(std::string(e.what()).find("not a regular file") != std::string::npos ? 0 : 2);
    } catch (...) {
      ::_exit(3);
    }
    ::_exit(4);
  }
  ASSERT_GT(child, 0);
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 100 && done == 0; ++i) {
    done = ::waitpid(child, &status, WNOHANG);
    if (done == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (done == 0) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    FAIL() << "load blocked on a FIFO";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST_F(SerializeFiles, AnOversizedFileIsRefusedFromItsHeaderWithoutReadingIt) {
  // A valid file followed by a terabyte of (sparse) zeros: reading it whole would need a terabyte.
  const fs::path path = dir_ / "huge.qcpw";
  qconv::save(*plan_, path);
  const auto size = fs::file_size(path);
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(1) << 40), 0);
  try {
    (void)qconv::load(path);
    FAIL() << "loaded";
  } catch (const qconv::FormatError& e) {
    EXPECT_NE(std::string(e.what()).find("bytes follow the checksum"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).rfind("file_size = " + std::to_string(size), 0), 0u)
        << e.what();
  }
  // Not a qconv file at all, however large: refused from its magic.
  std::ofstream(path, std::ios::binary | std::ios::trunc) << "NOTQCONV";
  ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(1) << 40), 0);
  try {
    (void)qconv::load(path);
    FAIL() << "loaded";
  } catch (const qconv::FormatError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("magic = \"NOTQCONV\"", 0), 0u) << e.what();
  }
}

}  // namespace
