// SPDX-License-Identifier: Apache-2.0
// Every input that once made a fuzzer fail, replayed through the check that failed
// (fuzz/checks.hpp). Each file in fuzz/regressions/<fuzzer>/ is a raw fuzzer input, named as
// libFuzzer wrote it; the fix that made it pass is in the history of the file it names.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "checks.hpp"
#include "core/cpu_features.hpp"
#include "fuzz_case.hpp"
#include "path_seeds.hpp"
#include "qconv/plan.hpp"

namespace {

// The files of fuzz/<kind>/<fuzzer>/ (kind: regressions, or corpus for the seed corpora).
std::vector<std::filesystem::path> inputs(const char* kind, const char* fuzzer) {
  std::vector<std::filesystem::path> out;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(QCONV_FUZZ_DIR) / kind / fuzzer)) {
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
  const auto files = inputs("regressions", "load");
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    EXPECT_NO_THROW((void)qconv::fuzz::check_load_input(read(file))) << file;
  }
}

TEST(FuzzRegression, ProblemInputs) {
  const auto files = inputs("regressions", "problem");
  ASSERT_FALSE(files.empty());
  for (const auto& file : files) {
    EXPECT_NO_THROW((void)qconv::fuzz::check_problem_input(read(file))) << file;
  }
}

// The regressions above are inputs that once crashed, most of them refused now: alone they would
// pass with checks that compare nothing. The seed corpora are valid calls and files, so every one
// must reach the comparisons (engines against the reference, file round trips) and pass them.
TEST(FuzzRegression, SeedCorporaReachTheComparisonsAndPass) {
  const auto problems = inputs("corpus", "problem");
  ASSERT_GE(problems.size(), 8u);
  for (const auto& file : problems) {
    bool ran = false;
    EXPECT_NO_THROW(ran = qconv::fuzz::check_problem_input(read(file))) << file;
    EXPECT_TRUE(ran) << file << " was refused";
  }
  const auto files = inputs("corpus", "load");
  ASSERT_GE(files.size(), 6u);
  for (const auto& file : files) {
    bool loaded = false;
    EXPECT_NO_THROW(loaded = qconv::fuzz::check_load_input(read(file))) << file;
    EXPECT_TRUE(loaded) << file << " was refused";
  }
}

// The paths only large cases reach (path_seeds.hpp) each have a seed the fuzzer starts from, which
// SeedCorporaReachTheComparisonsAndPass runs; here each still takes its path on this CPU.
TEST(FuzzRegression, PathSeedsStillTakeTheirPaths) {
  using namespace qconv;
  const auto all = engines();
  if (std::none_of(all.begin(), all.end(),
                   [](const EngineInfo& e) { return e.name == "avx512_vnni" && e.available; })) {
    GTEST_SKIP() << "the paths are the avx512_vnni engine's, which this CPU cannot run";
  }
  const bool vbmi = (detail::host_cpu_features() & detail::kAvx512vbmi) != 0;
  int checked = 0;
  for (const fuzz::PathSeed& seed : fuzz::kPathSeeds) {
    if (seed.needs_vbmi && !vbmi) continue;
    const auto file = std::filesystem::path(QCONV_FUZZ_DIR) / "corpus" / "problem" /
                      (std::string("path-") + seed.name + ".bin");
    ASSERT_TRUE(std::filesystem::exists(file)) << file << ": run make_corpus";
    const fuzz::FuzzCase c = fuzz::decode_case(read(file));
    ASSERT_TRUE(c.large) << file;
    ASSERT_FALSE(c.weights.empty() || c.input.empty()) << file;
    const Problem p(c.desc);
    const Plan plan = Plan::prepare(p,
                                    {c.weights.data(), c.weights.size(), c.desc.weight_dtype,
                                     c.desc.weight_layout, p.weight_shape()},
                                    {"avx512_vnni"});
    EXPECT_TRUE(fuzz::seeds(seed, c, plan.describe()))
        << file << " no longer takes the path that names it (\"" << seed.describes
        << "\"): regenerate the corpus with make_corpus\n  " << plan.describe();
    ++checked;
  }
  if (!vbmi) GTEST_SKIP() << checked << " seeds checked; the NCHW plane paths need avx512vbmi";
}

}  // namespace
