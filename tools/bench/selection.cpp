// SPDX-License-Identifier: Apache-2.0
#include "selection.hpp"

#include <algorithm>
#include <string>

namespace qconv::bench {

std::vector<const LayerRow*> select_layers(const Options& options) {
  const auto networks = network_names();
  const bool all = options.network == "all" || (options.list && !options.network_given);
  if (!all && std::find(networks.begin(), networks.end(), options.network) == networks.end()) {
    std::string known;
    for (const auto name : networks)
      known += std::string(known.empty() ? "" : ", ") + std::string(name);
    throw UsageError("--network " + options.network + ": unknown network (known: " + known +
                     ", or all)");
  }
  std::vector<const LayerRow*> rows;
  for (const LayerRow& row : layer_rows()) {
    if (all || row.network == options.network) rows.push_back(&row);
  }
  if (options.layers.empty()) return rows;

  for (const std::string& name : options.layers) {
    const bool found = std::any_of(rows.begin(), rows.end(),
                                   [&](const LayerRow* row) { return row->layer == name; });
    if (!found) {
      throw UsageError("--layers: no layer '" + name + "' in network " + options.network +
                       " (qconv-bench --list shows the names)");
    }
  }
  std::erase_if(rows, [&](const LayerRow* row) {
    return std::find(options.layers.begin(), options.layers.end(), row->layer) ==
           options.layers.end();
  });
  return rows;
}

}  // namespace qconv::bench
