// SPDX-License-Identifier: Apache-2.0
#include "report.hpp"

#include <cstdio>
#include <iomanip>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "text_table.hpp"

namespace qconv::bench {

namespace {

std::string fixed(double value, int decimals) {
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, value);
  return text;
}

double gops(std::int64_t macs, double ms) { return ms > 0 ? 2.0 * macs / (ms * 1e6) : 0.0; }

// Enough decimals that the slow engines' tiny shares do not all print as 0.
std::string percent(double share) {
  const double p = 100.0 * share;
  return fixed(p, p < 1 ? 3 : 1) + "%";
}

using Row = std::vector<std::string>;

}  // namespace

void print_table(std::ostream& out, std::span<const LayerResult> results,
                 const RunSettings& settings) {
  const double peak = settings.peak_gops();
  std::vector<Row> rows = {{"network", "layer", "count", "MMACs", "ms", "GOPS", "peak", "oneDNN ms",
                            "ratio", "prep ms", "oneDNN prep", "verified", "peak RSS"}};
  const auto peer_ms = [](const LayerResult& r) {
    return r.peer_timing ? fixed(r.peer_timing->median_ms, 3) : std::string("-");
  };
  for (std::size_t begin = 0; begin < results.size();) {
    const std::string_view network = results[begin].row->network;
    std::size_t end = begin;
    std::int64_t layers = 0;
    double total_macs = 0.0, total_ms = 0.0, total_peer_ms = 0.0, total_prepare = 0.0,
           total_peer_prepare = 0.0;
    bool every_peer = true;
    for (; end < results.size() && results[end].row->network == network; ++end) {
      const LayerResult& r = results[end];
      const double g = gops(r.macs, r.timing.median_ms);
      const std::string ratio =
          r.peer_timing ? fixed(r.peer_timing->median_ms / r.timing.median_ms, 2) : "-";
      rows.push_back({std::string(network), std::string(r.row->layer), std::to_string(r.row->count),
                      fixed(r.macs / 1e6, 1), fixed(r.timing.median_ms, 3), fixed(g, 1),
                      percent(g / peak), peer_ms(r), ratio, fixed(r.prepare_ms, 3),
                      r.peer_timing ? fixed(r.peer_prepare_ms, 2) : "-", r.verified, ""});
      layers += r.row->count;
      total_macs += static_cast<double>(r.macs) * r.row->count;
      total_ms += r.timing.median_ms * r.row->count;
      total_prepare += r.prepare_ms * r.row->count;
      if (r.peer_timing) {
        total_peer_ms += r.peer_timing->median_ms * r.row->count;
        total_peer_prepare += r.peer_prepare_ms * r.row->count;
      } else {
        every_peer = false;
      }
    }
    const double g = total_ms > 0 ? 2.0 * total_macs / (total_ms * 1e6) : 0.0;
    const auto& rss = results[begin].network_peak_rss_kib;
    rows.push_back({std::string(network), "total (x count)", std::to_string(layers),
                    fixed(total_macs / 1e6, 1), fixed(total_ms, 3), fixed(g, 1), percent(g / peak),
                    every_peer ? fixed(total_peer_ms, 3) : "-",
                    every_peer ? fixed(total_peer_ms / total_ms, 2) : "-", fixed(total_prepare, 2),
                    every_peer ? fixed(total_peer_prepare, 1) : "-", "",
                    rss ? fixed(*rss / 1024.0, 1) + " MiB" : "n/a"});
    begin = end;
  }
  constexpr Align L = Align::left, R = Align::right;
  print_columns(out, rows, {L, L, R, R, R, R, R, R, R, R, R, L, R});
}

void write_json(std::ostream& out, std::span<const LayerResult> results,
                const RunSettings& settings, const Context& context) {
  using nlohmann::json;
  json layers = json::array();
  for (const LayerResult& r : results) {
    const double g = gops(r.macs, r.timing.median_ms);
    json record = {{"network", r.row->network},
                   {"layer", r.row->layer},
                   {"count", r.row->count},
                   {"macs", r.macs},
                   {"batch", settings.batch},
                   {"threads", settings.threads},
                   {"engine", r.engine},
                   {"problem", r.problem},
                   {"layout", r.layout},
                   {"ms", r.timing.median_ms},
                   {"min_ms", r.timing.min_ms},
                   {"stddev_ms", r.timing.stddev_ms},
                   {"runs", r.timing.runs},
                   {"gops", g},
                   {"peak_share", g / settings.peak_gops()},
                   {"pct_of_peak", 100.0 * g / settings.peak_gops()},
                   {"clock_ghz", settings.clock.ghz},
                   {"verified", r.verified},
                   {"prepare_ms", r.prepare_ms},
                   {"network_peak_rss_kib", nullptr},
                   {"peer", nullptr},
                   {"onednn_ms", nullptr},
                   {"onednn_min_ms", nullptr},
                   {"onednn_gops", nullptr},
                   {"onednn_prepare_ms", nullptr},
                   {"ratio_vs_onednn", nullptr}};
    if (r.network_peak_rss_kib) record["network_peak_rss_kib"] = *r.network_peak_rss_kib;
    if (r.peer_timing) {
      record["peer"] = "onednn";
      record["peer_implementation"] = r.peer_implementation;
      record["peer_problem"] = r.peer_problem;
      record["onednn_ms"] = r.peer_timing->median_ms;
      record["onednn_min_ms"] = r.peer_timing->min_ms;
      record["onednn_gops"] = gops(r.macs, r.peer_timing->median_ms);
      record["onednn_prepare_ms"] = r.peer_prepare_ms;
      record["ratio_vs_onednn"] = r.peer_timing->median_ms / r.timing.median_ms;
    }
    layers.push_back(std::move(record));
  }
  const json document = {{"context",
                          {{"cpu", context.cpu},
                           {"cores", context.cores},
                           {"engines", context.engines},
                           {"compiler", context.compiler},
                           {"commit", context.commit},
                           {"date", context.date},
                           {"load_average", context.load_average},
                           {"clock_ghz", settings.clock.ghz},
                           {"clock_source", settings.clock.source},
                           {"peak_macs_per_cycle", settings.peak.macs_per_cycle},
                           {"peak_source", settings.peak.how},
                           {"batch", settings.batch},
                           {"threads", settings.threads}}},
                         {"layers", std::move(layers)}};
  out << document.dump(1) << '\n';
}

}  // namespace qconv::bench
