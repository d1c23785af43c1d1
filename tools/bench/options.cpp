// SPDX-License-Identifier: Apache-2.0
#include "options.hpp"

#include <charconv>
#include <cmath>
#include <functional>
#include <map>

namespace qconv::bench {

namespace {

template <class T>
T parse_number(std::string_view option, std::string_view text) {
  T value{};
  const char* end = text.data() + text.size();
  const auto [stop, error] = std::from_chars(text.data(), end, value);
  if (text.empty() || error != std::errc() || stop != end) {
    throw UsageError(std::string(option) + " = '" + std::string(text) + "': not a number");
  }
  if constexpr (std::is_floating_point_v<T>) {
    if (!std::isfinite(value)) {
      throw UsageError(std::string(option) + " = '" + std::string(text) + "': not finite");
    }
  }
  return value;
}

template <class T>
T parse_at_least(std::string_view option, std::string_view text, T minimum) {
  const T value = parse_number<T>(option, text);
  if (value < minimum) {
    throw UsageError(std::string(option) + " = " + std::string(text) + ": must be at least " +
                     std::to_string(minimum));
  }
  return value;
}

// A file name option's value: any text but the empty one.
std::string file_name(std::string_view option, std::string_view text) {
  if (text.empty()) throw UsageError(std::string(option) + ": needs a file name");
  return std::string(text);
}

std::vector<std::string> split_commas(std::string_view option, std::string_view text) {
  std::vector<std::string> parts;
  std::size_t begin = 0;
  while (true) {
    const std::size_t comma = text.find(',', begin);
    const std::string_view part = text.substr(begin, comma - begin);
    if (part.empty()) throw UsageError(std::string(option) + ": an empty layer name");
    parts.emplace_back(part);
    if (comma == std::string_view::npos) break;
    begin = comma + 1;
  }
  return parts;
}

}  // namespace

std::string usage() {
  return R"(Usage: qconv-bench [options]

Times the convolution layers of a network through qconv (Plan::prepare with the chosen engine,
"auto" by default), verifies every layer bit for bit against the reference engine, and prints
time, GOPS and the share of this machine's int8 peak (measured at start: independent chains of
the best multiply-add its CPU has, e.g. vpdpbusd zmm) per layer, with a count-weighted total per
network.

Problem: u8 NHWC input (zero point 5), s8 weights (OHWI; IOHW for transposed layers) with
symmetric per-channel scales, float bias, output scheme fbgemm (PyTorch's fbgemm/x86 engines) to
u8 NHWC (zero point 128). Inputs, weights and scales are random from a fixed seed.

Options:
  --network NAME      a network of the table, or "all" (default: resnet50)
  --layers A,B,...    only these layers (exact names as --list shows them)
  --table FILE        time the layers of FILE instead of the built-in table (every network of
                      it unless --network): a CSV with layers.csv's header and columns
                      (macs_batch1 may be empty), e.g. tools/bench/small_layers.csv
  --batch N           images per run (default: 1)
  --threads N         threads per run, 0 = all hardware threads (default: 1)
  --repeat N          exactly N timed runs per layer, after one warm-up run
  --min-time-ms T     repeat timed runs until they add up to T ms (at most 1000 runs)
                      (default without either: at least 1 run and 500 ms; so a layer that
                      takes over half a second is timed once)
  --verify            check every layer against the reference engine (default)
  --no-verify         skip that check
  --verify-max-macs M layers above M MACs are verified on a smaller input height and width
                      with the same channels, kernel, stride and padding (default: 20000000)
  --engine NAME       engine for Plan::prepare: "auto" (default), "reference", or an engine name
  --peer NAME         time the peer side by side: "onednn" (default, when built with it) or "none"
  --peer-isa ISA      limit oneDNN's ISA, e.g. avx512_core_vnni, avx2_vnni, avx2 (its
                      ONEDNN_MAX_CPU_ISA)
  --weight-zero-point N  a weight zero point (oneDNN takes none: it runs the symmetric problem)
  --weight-dtype T    s8 (default) or u8 (zero point 128 unless --weight-zero-point)
  --input-dtype T     u8 (default) or s8
  --layout L          qconv's input and output layout: nhwc (default) or nchw (oneDNN still
                      runs NHWC, its only fast int8 layout, so the ratio prices the layout)
  --clock-ghz F       core clock for the peak share (default: measured by a dependent-add loop)
  --json FILE         also write one JSON record per layer to FILE
  --list              list the layers of the table (of --network when given) and exit
  --list-engines      list qconv's engines, whether this CPU runs them and why not, and exit
  --help              show this text and exit

Exit status: 0 success, 1 a layer differs from the reference engine (or another failure),
2 a bad command line.
)";
}

Options parse_options(std::span<const std::string_view> args) {
  Options options;
  using Handler = std::function<void(std::string_view option, std::string_view value)>;
  const std::map<std::string_view, Handler, std::less<>> with_value = {
      {"--network",
       [&](auto, auto v) {
         options.network = std::string(v);
         options.network_given = true;
       }},
      {"--layers", [&](auto o, auto v) { options.layers = split_commas(o, v); }},
      {"--batch", [&](auto o, auto v) { options.batch = parse_at_least<std::int64_t>(o, v, 1); }},
      {"--threads", [&](auto o, auto v) { options.threads = parse_at_least<int>(o, v, 0); }},
      {"--repeat", [&](auto o, auto v) { options.repeat = parse_at_least<int>(o, v, 1); }},
      {"--min-time-ms", [&](auto o, auto v) { options.min_time_ms = parse_at_least(o, v, 0.0); }},
      {"--verify-max-macs",
       [&](auto o, auto v) { options.verify_max_macs = parse_at_least<std::int64_t>(o, v, 1); }},
      {"--engine", [&](auto, auto v) { options.engine = std::string(v); }},
      {"--peer",
       [&](auto o, auto v) {
         if (v != "onednn" && v != "none") {
           throw UsageError(std::string(o) + " = " + std::string(v) + ": onednn or none");
         }
         options.peer = std::string(v);
       }},
      {"--peer-isa", [&](auto, auto v) { options.peer_isa = std::string(v); }},
      {"--weight-zero-point",
       [&](auto o, auto v) { options.weight_zero_point = parse_number<int>(o, v); }},
      {"--weight-dtype",
       [&](auto o, auto v) {
         if (v != "u8" && v != "s8") throw UsageError(std::string(o) + ": u8 or s8");
         options.weight_dtype = std::string(v);
       }},
      {"--input-dtype",
       [&](auto o, auto v) {
         if (v != "u8" && v != "s8") throw UsageError(std::string(o) + ": u8 or s8");
         options.input_dtype = std::string(v);
       }},
      {"--layout",
       [&](auto o, auto v) {
         if (v != "nhwc" && v != "nchw") throw UsageError(std::string(o) + ": nhwc or nchw");
         options.layout = std::string(v);
       }},
      {"--clock-ghz", [&](auto o, auto v) { options.clock_ghz = parse_at_least(o, v, 0.001); }},
      {"--json", [&](auto o, auto v) { options.json_path = file_name(o, v); }},
      {"--table", [&](auto o, auto v) { options.table = file_name(o, v); }}};
  const std::map<std::string_view, std::function<void()>, std::less<>> flags = {
      {"--verify", [&] { options.verify = true; }},
      {"--no-verify", [&] { options.verify = false; }},
      {"--list", [&] { options.list = true; }},
      {"--list-engines", [&] { options.list_engines = true; }},
      {"--help", [&] { options.help = true; }},
      {"-h", [&] { options.help = true; }}};

  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    std::optional<std::string_view> value;
    if (const std::size_t eq = arg.find('='); arg.starts_with("--") && eq != arg.npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
    }
    if (const auto flag = flags.find(arg); flag != flags.end()) {
      if (value) throw UsageError(std::string(arg) + " takes no value");
      flag->second();
    } else if (const auto option = with_value.find(arg); option != with_value.end()) {
      if (!value) {
        if (i + 1 == args.size()) throw UsageError(std::string(arg) + " needs a value");
        value = args[++i];
      }
      option->second(arg, *value);
    } else {
      throw UsageError("unknown option '" + std::string(args[i]) + "'");
    }
  }
  return options;
}

}  // namespace qconv::bench
