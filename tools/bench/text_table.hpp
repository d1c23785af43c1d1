// SPDX-License-Identifier: Apache-2.0
// Prints rows of text as aligned columns, two spaces apart.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace qconv::bench {

enum class Align { left, right };

// `align[i]` aligns column i; rows may be shorter than `align`. Trailing spaces are trimmed.
void print_columns(std::ostream& out, const std::vector<std::vector<std::string>>& rows,
                   const std::vector<Align>& align);

}  // namespace qconv::bench
