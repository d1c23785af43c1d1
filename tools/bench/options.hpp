// SPDX-License-Identifier: Apache-2.0
// qconv-bench's command line: what may be asked, parsed by hand (no dependency).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qconv::bench {

// A bad command line; the bench prints it with a pointer to --help and exits with status 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct Options {
  std::string network = "resnet50";  // a network of the table, or "all"
  std::string table;                 // a CSV file of layers to use instead of layers.csv
  bool network_given = false;        // --list lists every network unless --network is given
  std::vector<std::string> layers;   // exact layer names; empty = every layer of the network(s)
  std::int64_t batch = 1;
  int threads = 1;                    // 0 = all hardware threads
  std::optional<int> repeat;          // timed runs per layer
  std::optional<double> min_time_ms;  // keep timing until the timed runs add up to this
  std::string json_path;              // empty = no JSON
  bool verify = true;
  // Layers above this many MACs are verified on a smaller input height and width.
  std::int64_t verify_max_macs = 20'000'000;
  std::string engine = "auto";
  std::string peer = "onednn";           // "onednn" or "none"
  std::string peer_isa;                  // oneDNN's ISA limit (empty: none)
  std::optional<int> weight_zero_point;  // the variants oneDNN cannot run
  std::string weight_dtype = "s8";
  std::string input_dtype = "u8";
  std::string layout = "nhwc";  // qconv's activation layout, input and output ("nhwc" or "nchw")
  std::optional<double> clock_ghz;  // overrides the measured clock
  bool list = false;
  bool list_engines = false;
  bool help = false;
};

// Parses argv[1..]. Throws UsageError naming the option and what it needs.
Options parse_options(std::span<const std::string_view> args);

// The --help text.
std::string usage();

}  // namespace qconv::bench
