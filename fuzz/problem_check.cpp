// SPDX-License-Identifier: Apache-2.0
// check_problem_input (checks.hpp): every engine against the reference engine on one decoded call.
#include <cstring>
#include <optional>
#include <string>
#include <typeinfo>

#include "checks.hpp"
#include "engines/engine.hpp"
#include "fuzz_case.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/serialize.hpp"

namespace {

using namespace qconv;

constexpr std::uint8_t kUntouched = 0xA5;

[[noreturn]] void disagree(const Problem& problem, const std::string& what) {
  throw fuzz::Failure(what + "\n  problem: " + problem.summary());
}

// The outcome of one execute(): the output bytes, or the kind of Error that refused the call.
struct Outcome {
  std::vector<std::uint8_t> output;
  const std::type_info* error = nullptr;
  std::string message;
};

Outcome execute(const Plan& plan, const fuzz::FuzzCase& c, int threads) {
  const Problem& p = plan.problem();
  const auto& d = p.desc();
  Outcome out;
  // Sized for the input's batch when that shape is plausible, else for the problem's.
  const std::int64_t batch =
      c.input_shape.empty() ? d.batch : std::max<std::int64_t>(1, c.input_shape[0]);
  const Shape out_shape = p.output_shape(std::min<std::int64_t>(batch, 4));
  out.output.assign(
      static_cast<std::size_t>(element_count(out_shape, "output")) * element_size(d.output_dtype),
      kUntouched);
  BiasView bias;
  if (d.has_bias && takes_float_bias(d.scheme.kind)) bias = std::span<const float>(c.bias_f32);
  if (d.has_bias && !takes_float_bias(d.scheme.kind))
    bias = std::span<const std::int32_t>(c.bias_s32);
  try {
    const ConstTensorView input(c.input.data(), c.input.size(), d.input_dtype, d.input_layout,
                                c.input_shape);
    const TensorView output(out.output.data(), out.output.size(), d.output_dtype, d.output_layout,
                            out_shape);
    plan.execute(input, output, bias, {threads, c.input_zero_point});
  } catch (const Error& e) {
    out.error = &typeid(e);
    out.message = e.what();
    for (std::uint8_t b : out.output) {
      if (b != kUntouched) disagree(p, std::string("output written before refusing: ") + e.what());
    }
  }
  return out;
}

void require_same(const Problem& problem, const Outcome& expected, const Outcome& got,
                  const std::string& who) {
  if ((expected.error == nullptr) != (got.error == nullptr) ||
      (expected.error != nullptr && *expected.error != *got.error)) {
    disagree(problem, who + " refused differently: reference \"" + expected.message + "\", " + who +
                          " \"" + got.message + "\"");
  }
  if (expected.output != got.output) {
    std::size_t i = 0;
    while (expected.output[i] == got.output[i]) ++i;
    disagree(problem, who + " differs from the reference first at output byte " +
                          std::to_string(i) + ": " + std::to_string(expected.output[i]) + " vs " +
                          std::to_string(got.output[i]));
  }
}

}  // namespace

namespace qconv::fuzz {

bool check_problem_input(std::span<const std::uint8_t> bytes) {
  const FuzzCase c = decode_case(bytes);
  std::optional<Problem> problem;
  try {
    problem.emplace(c.desc);
  } catch (const Error&) {
    return false;  // refused, as it should be when the description breaks a rule
  }
  if (c.weights.empty() || c.input.empty()) return false;
  const ConstTensorView weights(c.weights.data(), c.weights.size(), c.desc.weight_dtype,
                                c.desc.weight_layout, problem->weight_shape());
  std::optional<Plan> reference;
  try {
    reference.emplace(Plan::prepare(*problem, weights, {"reference"}));
  } catch (const OverflowRisk&) {
    return false;  // the accumulator bound, checked from the weights
  }
  const Outcome expected = execute(*reference, c, c.threads);

  for (const detail::Engine* engine : detail::all_engines()) {
    if (!engine->unsupported_reason(*problem).empty()) continue;
    const Plan plan = Plan::prepare(*problem, weights, {std::string(engine->name())});
    require_same(*problem, expected, execute(plan, c, engine_threads(c)),
                 std::string(engine->name()));
  }

  // The file format round trip keeps every bit of behaviour.
  const bool keep = (c.weights[0] & 1) != 0;
  const Plan loaded = deserialize(serialize(*reference, {keep}));
  require_same(*problem, expected, execute(loaded, c, c.threads), "the reloaded plan");
  return true;
}

}  // namespace qconv::fuzz
