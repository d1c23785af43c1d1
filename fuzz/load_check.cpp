// SPDX-License-Identifier: Apache-2.0
// check_load_input (checks.hpp): arbitrary bytes as a prepared-weights file. Loading either
// succeeds or throws FormatError; any other exception escapes to the caller and is a bug too.
#include <optional>
#include <string>

#include "checks.hpp"
#include "core/byte_io.hpp"
#include "core/cpu_features.hpp"
#include "core/serialize_internal.hpp"
#include "qconv/error.hpp"
#include "qconv/plan.hpp"
#include "qconv/serialize.hpp"

namespace {

using namespace qconv;

void put_u64(std::vector<std::byte>& b, std::size_t at, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) b[at + i] = static_cast<std::byte>(v >> (8 * i));
}

// Runs the plan once on zeros when the call is small enough to be quick.
void run_small(const Plan& plan) {
  const Problem& p = plan.problem();
  const auto& d = p.desc();
  const std::int64_t inputs = element_count(p.input_shape(1), "input");
  const std::int64_t outputs = element_count(p.output_shape(1), "output");
  if (inputs > 4096 || outputs > 4096 || outputs * p.reduction_size() > (1 << 20)) return;
  std::vector<std::uint8_t> x(static_cast<std::size_t>(inputs), 0);
  std::vector<std::uint8_t> y(static_cast<std::size_t>(outputs) * element_size(d.output_dtype));
  std::vector<float> bias_f(static_cast<std::size_t>(d.out_channels), 0.0f);
  std::vector<std::int32_t> bias_s(bias_f.size(), 0);
  BiasView bias;
  if (d.has_bias && takes_float_bias(d.scheme.kind)) bias = std::span<const float>(bias_f);
  if (d.has_bias && !takes_float_bias(d.scheme.kind)) bias = std::span<const std::int32_t>(bias_s);
  // No catch: a valid call on a loaded plan must not be refused.
  plan.execute({x.data(), x.size(), d.input_dtype, d.input_layout, p.input_shape(1)},
               {y.data(), y.size(), d.output_dtype, d.output_layout, p.output_shape(1)}, bias);
}

}  // namespace

namespace qconv::fuzz {

bool check_load_input(std::span<const std::uint8_t> input) {
  if (input.empty()) return false;
  const std::uint8_t steer = input[0];
  const auto* begin = reinterpret_cast<const std::byte*>(input.data() + 1);
  std::vector<std::byte> bytes(begin, begin + (input.size() - 1));
  if ((steer & 1) != 0 && bytes.size() >= 20) put_u64(bytes, 12, bytes.size());
  if ((steer & 2) != 0 && bytes.size() >= 8) {
    put_u64(bytes, bytes.size() - 8,
            detail::fnv1a64(std::span<const std::byte>(bytes).first(bytes.size() - 8)));
  }
  const detail::CpuFeatures host = (steer & 4) != 0 ? 0 : detail::host_cpu_features();

  std::optional<Plan> plan;
  try {
    plan.emplace(detail::deserialize_for(bytes, host));
  } catch (const FormatError&) {
    return false;
  }
  run_small(*plan);
  const bool keep = (steer & 8) != 0;
  const std::vector<std::byte> again = serialize(*plan, {keep});
  if (serialize(deserialize(again), {keep}) != again) {
    throw Failure("serialize(deserialize(b)) != b for b = serialize(a loaded plan)");
  }
  return true;
}

}  // namespace qconv::fuzz
