// SPDX-License-Identifier: Apache-2.0
// Writes the fuzzers' seed corpora (fuzz/corpus/problem, fuzz/corpus/load), deterministically:
//   make_corpus <corpus directory>
// problem/: one valid, runnable case per output scheme, found by decoding seeded random bytes, and
// one large case per path of path_seeds.hpp (path-<name>.bin: on a CPU with the avx512_vnni engine,
// else left as they are; without AVX-512 VBMI the NCHW planes' seeds are not found, as it says).
// load/: prepared-weights files of a few of those cases, each after the load fuzzer's steering
// byte.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>
#include <string>

#include "fuzz_case.hpp"
#include "path_seeds.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/serialize.hpp"

namespace {

using namespace qconv;

void write(const std::filesystem::path& path, const void* data, std::size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

// The reference engine's prepared plan of a case that is valid and runs without error, or nothing.
// The reference engine's: a file of it loads on every CPU, with or without the original weights (a
// fast engine's file without them loads only where that engine runs).
std::optional<Plan> runnable(const fuzz::FuzzCase& c) {
  if (c.wild || c.weights.empty() || c.input.empty()) return std::nullopt;
  try {
    const Problem p(c.desc);
    if (c.input_shape != p.input_shape()) return std::nullopt;
    Plan plan = Plan::prepare(p,
                              {c.weights.data(), c.weights.size(), c.desc.weight_dtype,
                               c.desc.weight_layout, p.weight_shape()},
                              {"reference"});
    BiasView bias;
    if (c.desc.has_bias && takes_float_bias(c.desc.scheme.kind)) bias = std::span(c.bias_f32);
    if (c.desc.has_bias && !takes_float_bias(c.desc.scheme.kind)) bias = std::span(c.bias_s32);
    (void)plan.execute(
        {c.input.data(), c.input.size(), c.desc.input_dtype, c.desc.input_layout, c.input_shape},
        bias, {c.threads, c.input_zero_point});
    return plan;
  } catch (const Error&) {
    return std::nullopt;
  }
}

// Large cases (first byte 3) until each path of kPathSeeds has a runnable seed; writes them and
// returns how many it wrote (0 where this CPU cannot run those paths).
int write_path_seeds(const std::filesystem::path& dir, std::mt19937& rng) {
  const PrepareOptions avx512{"avx512_vnni"};
  const auto all = engines();
  if (std::none_of(all.begin(), all.end(),
                   [&](const EngineInfo& e) { return e.name == avx512.engine && e.available; })) {
    return 0;
  }
  int written = 0;
  for (const fuzz::PathSeed& seed : fuzz::kPathSeeds) {
    bool done = false;
    for (int attempt = 0; attempt < 2000000 && !done; ++attempt) {
      std::vector<std::uint8_t> bytes(48 + rng() % 200);
      for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
      bytes[0] = 3;
      const fuzz::FuzzCase c = fuzz::decode_case(bytes);
      if (c.weights.empty() || c.input.empty()) continue;
      try {  // the path first (preparation only), then whether the call runs
        const Problem p(c.desc);
        const Plan plan = Plan::prepare(p,
                                        {c.weights.data(), c.weights.size(), c.desc.weight_dtype,
                                         c.desc.weight_layout, p.weight_shape()},
                                        avx512);
        if (!fuzz::seeds(seed, c, plan.describe()) || !runnable(c)) continue;
      } catch (const Error&) {
        continue;
      }
      write(dir / (std::string("path-") + seed.name + ".bin"), bytes.data(), bytes.size());
      done = true;
      ++written;
    }
    if (!done) std::fprintf(stderr, "no seed found for path %s\n", seed.name);
  }
  return written;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus directory>\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root = argv[1];
  std::filesystem::create_directories(root / "problem");
  std::filesystem::create_directories(root / "load");

  std::mt19937 rng(20240601);
  std::map<std::string, std::pair<std::vector<std::uint8_t>, Plan>> found;  // by scheme
  for (int attempt = 0; attempt < 200000 && found.size() < 9; ++attempt) {
    std::vector<std::uint8_t> bytes(48 + rng() % 200);
    for (auto& b : bytes) b = static_cast<std::uint8_t>(rng());
    const fuzz::FuzzCase c = fuzz::decode_case(bytes);
    const std::string scheme(to_string(c.desc.scheme.kind));
    if (found.count(scheme) != 0) continue;
    if (auto plan = runnable(c)) found.emplace(scheme, std::make_pair(bytes, std::move(*plan)));
  }
  const int paths = write_path_seeds(root / "problem", rng);
  int load_files = 0;
  for (const auto& [scheme, entry] : found) {
    const auto& [bytes, plan] = entry;
    write(root / "problem" / (scheme + ".bin"), bytes.data(), bytes.size());
    if (scheme != "int32" && scheme != "fbgemm" && scheme != "tflite") continue;
    for (bool keep : {false, true}) {
      std::vector<std::byte> file{std::byte{0}};  // steering byte: load the file as it is
      const auto body = serialize(plan, {keep});
      file.insert(file.end(), body.begin(), body.end());
      write(root / "load" / (scheme + (keep ? "-with-original-weights" : "") + ".bin"), file.data(),
            file.size());
      ++load_files;
    }
  }
  std::printf("%zu problem seeds, %d path seeds, %d load seeds in %s\n", found.size(), paths,
              load_files, root.string().c_str());
  return found.size() == 9 && (paths == 0 || paths == std::size(fuzz::kPathSeeds)) ? 0 : 1;
}
