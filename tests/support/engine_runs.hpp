// SPDX-License-Identifier: Apache-2.0
// What the engine suites share: the fast engines this CPU runs, and one run of a random case's
// problem on a prepared plan, its output as bytes.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/cpu_features.hpp"
#include "engines/engine.hpp"
#include "qconv/plan.hpp"
#include "support/random_problem.hpp"

namespace qconv::test {

// Every engine but the reference whose CPU features this CPU has, fastest first.
inline std::vector<std::string> fast_engines_here() {
  std::vector<std::string> names;
  const detail::CpuFeatures features = detail::host_cpu_features();
  for (const detail::Engine* e : detail::all_engines()) {
    const bool runs_here = (e->required_cpu_features() & ~features) == 0;
    if (e->name() != "reference" && runs_here) names.emplace_back(e->name());
  }
  return names;
}

// The output bytes of `rc` run on `plan` with `threads` threads.
inline std::vector<std::uint8_t> run_case(const RandomCase& rc, const Plan& plan, int threads) {
  const Problem& p = plan.problem();
  Tensor out(p.desc().output_dtype, p.desc().output_layout, p.output_shape(rc.desc.batch));
  RunOptions options;
  options.threads = threads;
  plan.execute(rc.input_view(), out.view(), rc.bias(), options);
  const auto* bytes = static_cast<const std::uint8_t*>(out.view().data());
  return {bytes, bytes + out.view().bytes()};
}

}  // namespace qconv::test
