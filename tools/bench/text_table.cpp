// SPDX-License-Identifier: Apache-2.0
#include "text_table.hpp"

#include <algorithm>

namespace qconv::bench {

void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                   const std::vector<Align>& align) {
  std::vector<std::size_t> widths(align.size(), 0);
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      widths[i] = std::max(widths[i], row[i].size());
    }
  }
  for (const auto& row : rows) {
    std::string line;
    for (std::size_t i = 0; i < row.size() && i < widths.size(); ++i) {
      const std::string pad(widths[i] - row[i].size(), ' ');
      line += i ? "  " : "";
      line += align[i] == Align::left ? row[i] + pad : pad + row[i];
    }
    line.erase(line.find_last_not_of(' ') + 1);
    out << line << '\n';
  }
}

}  // namespace qconv::bench
