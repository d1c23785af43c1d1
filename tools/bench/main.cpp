// SPDX-License-Identifier: Apache-2.0
// qconv-bench: times network convolution layers through qconv and verifies them against the
// reference engine. See --help, or usage() in options.cpp.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "clock.hpp"
#include "layer_table.hpp"
#include "memory.hpp"
#include "onednn_peer.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "qconv/error.hpp"
#include "report.hpp"
#include "run_layer.hpp"
#include "selection.hpp"
#include "text_table.hpp"
#include "timing.hpp"
#include "verify.hpp"
#include "workload.hpp"

namespace qconv::bench {
namespace {

constexpr int kUsageStatus = 2;
constexpr int kFailureStatus = 1;

void print_list(std::ostream& out, const std::vector<const LayerRow*>& rows) {
  std::vector<std::vector<std::string>> lines = {{"network", "layer", "op", "C_in->C_out", "HxW",
                                                  "kernel", "stride", "pad t,b,l,r", "groups",
                                                  "count", "MACs/image"}};
  for (const LayerRow* r : rows) {
    lines.push_back({std::string(r->network), std::string(r->layer), std::string(r->op),
                     std::to_string(r->in_channels) + "->" + std::to_string(r->out_channels),
                     std::to_string(r->in_height) + "x" + std::to_string(r->in_width),
                     std::to_string(r->kernel_h) + "x" + std::to_string(r->kernel_w),
                     std::to_string(r->stride_h) + "x" + std::to_string(r->stride_w),
                     std::to_string(r->pad_top) + "," + std::to_string(r->pad_bottom) + "," +
                         std::to_string(r->pad_left) + "," + std::to_string(r->pad_right),
                     std::to_string(r->groups), std::to_string(r->count),
                     std::to_string(r->macs_batch1)});
  }
  constexpr Align L = Align::left, R = Align::right;
  print_columns(out, lines, {L, L, L, R, R, R, R, R, R, R, R});
}

std::string repeat_text(const RepeatPolicy& policy) {
  if (policy.min_time_ms == 0.0 && policy.min_runs == policy.max_runs) {
    return std::to_string(policy.min_runs) + " timed run(s)";
  }
  return "timed runs until at least " + std::to_string(policy.min_runs) + " run(s) and " +
         std::to_string(static_cast<long long>(policy.min_time_ms)) + " ms (at most " +
         std::to_string(policy.max_runs) + ")";
}

void print_header(std::ostream& out, const Options& options, std::size_t layer_count,
                  const RunSettings& settings, const RepeatPolicy& policy) {
  out << "qconv-bench: network " << options.network << ", " << layer_count << " layer(s), batch "
      << settings.batch << ", " << settings.threads << " thread(s), engine " << options.engine
      << '\n';
  out << "problem: " << workload_description() << '\n';
  out << std::fixed << std::setprecision(1) << "peak: " << settings.peak.macs_per_cycle
      << " MACs/cycle/core (" << settings.peak.how << ") x " << std::setprecision(2)
      << settings.clock.ghz << " GHz (" << settings.clock.source << ") x " << settings.threads
      << " core(s) = " << std::setprecision(0) << settings.peak_gops() << " GOPS\n"
      << std::defaultfloat;
  out << "time: median of " << repeat_text(policy) << ", after one warm-up run\n";
  if (options.verify) {
    out << "verify: bit for bit against the reference engine; layers over "
        << options.verify_max_macs
        << " MACs on a smaller input with the same channels, kernel, stride and padding "
           "(exact@HxW)\n";
  } else {
    out << "verify: off\n";
  }
  out << "peer: "
      << (options.peer == "none" ? "none"
          : peer_available()     ? "oneDNN, timed in alternating rounds in this process"
                                 : "none (built without oneDNN)");
  if (!options.peer_isa.empty()) out << ", ISA limited to " << options.peer_isa;
  out << "; ratio = oneDNN ms / qconv ms (above 1: qconv is faster)\n";
  out << "variant: input " << options.input_dtype << ", weights " << options.weight_dtype
      << (options.weight_zero_point
              ? ", weight zero point " + std::to_string(*options.weight_zero_point)
              : std::string())
      << ", qconv's activations " << options.layout << " (oneDNN's NHWC)" << '\n';
  out << '\n' << std::flush;
}

// Each distinct engine once, as Plan::describe() gives it for the first layer it ran.
void print_engines(std::ostream& out, const std::vector<LayerResult>& results) {
  out << "\nengines (Plan::describe() of the first layer each ran):\n";
  std::vector<std::string> seen;
  for (const LayerResult& r : results) {
    if (std::find(seen.begin(), seen.end(), r.engine) != seen.end()) continue;
    seen.push_back(r.engine);
    out << "  " << r.description << '\n';
  }
  std::vector<std::string> peers;
  for (const LayerResult& r : results) {
    const std::string line = r.peer_implementation + ": " + r.peer_problem;
    if (r.peer_implementation.empty() || std::find(peers.begin(), peers.end(), line) != peers.end())
      continue;
    peers.push_back(line);
    out << "  peer " << line << '\n';
  }
}

int run(const Options& options, const std::vector<const LayerRow*>& rows) {
  if (options.list) {
    print_list(std::cout, rows);
    return 0;
  }
  if (options.list_engines) {
    for (const EngineInfo& e : engines()) {
      std::cout << e.name << ": " << (e.available ? "runs on this CPU" : e.reason) << '\n';
    }
    return 0;
  }
  std::ofstream json;
  if (!options.json_path.empty()) {
    json.open(options.json_path);
    if (!json) throw std::runtime_error("--json " + options.json_path + ": cannot write the file");
  }
  const CoreClock clock = core_clock(options.clock_ghz);
  const RunSettings settings{
      .batch = options.batch,
      .threads = options.threads > 0
                     ? options.threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
      .clock = clock,
      .peak = peak_rate(clock.ghz)};
  const RepeatPolicy policy = repeat_policy(options);
  if (!options.peer_isa.empty()) limit_peer_isa(options.peer_isa);
  const Context context = measure_context();
  print_header(std::cout, options, rows.size(), settings, policy);
  std::cout << "machine: " << context.cpu << ", " << context.cores
            << " hardware thread(s), engines " << context.engines << ", load average " << std::fixed
            << std::setprecision(2) << context.load_average << std::defaultfloat << '\n';
  if (const std::string warning = busy_warning(context); !warning.empty()) {
    std::cout << warning << '\n';
  }

  std::vector<LayerResult> results;
  {
    Progress progress(rows.size());
    std::size_t network_begin = 0;
    for (std::size_t i = 0; i < rows.size(); ++i) {
      if (i == network_begin) reset_peak_resident_memory();
      progress.show(i, rows[i]->network, rows[i]->layer);
      results.push_back(run_layer(*rows[i], options, policy));
      if (i + 1 == rows.size() || rows[i + 1]->network != rows[i]->network) {
        const auto peak = peak_resident_memory_kib();
        for (std::size_t j = network_begin; j <= i; ++j) results[j].network_peak_rss_kib = peak;
        network_begin = i + 1;
      }
    }
  }
  print_table(std::cout, results, settings);
  print_engines(std::cout, results);
  if (json.is_open()) {
    write_json(json, results, settings, context);
    json.close();
    if (!json) throw std::runtime_error("--json " + options.json_path + ": writing failed");
  }
  return 0;
}

}  // namespace
}  // namespace qconv::bench

int main(int argc, char** argv) {
  using namespace qconv::bench;
  const std::vector<std::string_view> args(argv + 1, argv + argc);
  Options options;
  std::vector<const LayerRow*> rows;
  try {
    options = parse_options(args);
    if (options.help) {
      std::cout << usage();
      return 0;
    }
    if (!options.table.empty()) {
      load_layer_table(options.table);
      if (!options.network_given) options.network = "all";  // a table of one's own: all of it
    }
    rows = select_layers(options);
  } catch (const UsageError& e) {
    std::cerr << "qconv-bench: " << e.what() << "\nTry 'qconv-bench --help'.\n";
    return kUsageStatus;
  }
  try {
    check_layer_table();  // the MACs of every row, before anything is timed
    return run(options, rows);
  } catch (const VerificationFailure& e) {
    std::cerr << "qconv-bench: VERIFICATION FAILED: " << e.what() << '\n';
  } catch (const qconv::Error& e) {
    std::cerr << "qconv-bench: qconv refused a layer: " << e.what() << '\n';
  } catch (const std::exception& e) {
    std::cerr << "qconv-bench: " << e.what() << '\n';
  }
  return kFailureStatus;
}
