// SPDX-License-Identifier: Apache-2.0
// Every input that once made a fuzzer fail, replayed through the check that failed
// (fuzz/checks.hpp). Each file in fuzz/regressions/<fuzzer>/ is a raw fuzzer input, named as
// libFuzzer wrote it; the fix that made it pass is in the history of the file it names.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "checks.hpp"

namespace {

std::vector<std::filesystem::path> inputs(const char* fuzzer) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry : std::filesystem::directory_iterator(
           std::filesystem::path(QCONV_FUZZ_REGRESSIONS) / fuzzer)) {
    const bool hidden = entry.path().filename().string().starts_with(".");  // .gitkeep
    if (entry.is_regular_file() && !hidden) out.push_back(entry.path());
  }
  return out;
}

std::vector<std::uint8_t> read(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(FuzzRegression, LoadInputs) {
  const auto files = inputs("load");
  EXPECT_FALSE(files.empty());
  for (const auto& file : files) {
    EXPECT_NO_THROW(qconv::fuzz::check_load_input(read(file))) << file;
  }
}

TEST(FuzzRegression, ProblemInputs) {
  for (const auto& file : inputs("problem")) {
    EXPECT_NO_THROW(qconv::fuzz::check_problem_input(read(file))) << file;
  }
}

}  // namespace
