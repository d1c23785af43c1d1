// The inside of a Plan, shared by the files that prepare, run and serialize one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engines/engine.hpp"
#include "qconv/plan.hpp"

namespace qconv {

struct Plan::Impl {
  Problem problem;
  // Σ_k |w[o,k] − zw[o]| per output channel: the accumulator bound is max|x − zx| times this.
  std::vector<std::int64_t> abs_weight_sums;
  std::int64_t max_abs_weight_sum = 0;
  const detail::Engine* engine = nullptr;
  std::string reason;  // why this engine was chosen
  std::unique_ptr<detail::PreparedKernel> kernel;
};

}  // namespace qconv
