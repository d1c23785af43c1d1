#include "engines/engine.hpp"

namespace qconv::detail {

std::span<const Engine* const> all_engines() {
  static const Engine* const engines[] = {&reference_engine()};
  return engines;
}

}  // namespace qconv::detail
