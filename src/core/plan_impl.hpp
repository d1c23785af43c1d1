// The inside of a Plan, shared by the files that prepare, run and serialize one.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
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

namespace detail {

// Throws PreparedMismatch naming the first field where `given` differs from `prepared`, with both
// values; the batch size and the input zero point are not compared (they may change per call).
// `prepared_object` names what must be prepared again ("weights", "bias"). Compares plain
// descriptions so that a face can check a call before the call's own Problem is built.
void require_same_problem(const ProblemDesc& prepared, const ProblemDesc& given,
                          std::string_view prepared_object);

}  // namespace detail
}  // namespace qconv
