// SPDX-License-Identifier: Apache-2.0
// Which rows of the layer table a command line asks for.
#pragma once

#include <vector>

#include "layer_table.hpp"
#include "options.hpp"

namespace qconv::bench {

// The rows of --network (or every network for "all"), narrowed to --layers when given, in table
// order. Throws UsageError for an unknown network or a layer name that matches no selected row.
std::vector<const LayerRow*> select_layers(const Options& options);

}  // namespace qconv::bench
