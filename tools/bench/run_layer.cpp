// SPDX-License-Identifier: Apache-2.0
#include "run_layer.hpp"

#include <chrono>
#include <memory>
#include <thread>

#include "onednn_peer.hpp"
#include "qconv/plan.hpp"
#include "verify.hpp"
#include "workload.hpp"

namespace qconv::bench {

int resolve_threads(int threads) {
  return threads > 0 ? threads
                     : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

namespace {

DType dtype_named(const std::string& name) { return name == "s8" ? DType::s8 : DType::u8; }

}  // namespace

LayerResult run_layer(const LayerRow& row, const Options& options, const RepeatPolicy& policy) {
  const Variant variant{dtype_named(options.input_dtype), dtype_named(options.weight_dtype),
                        options.weight_zero_point,
                        options.layout == "nchw" ? Layout::NCHW : Layout::NHWC};
  const Workload workload = make_workload(row, options.batch, variant);
  PrepareOptions prepare;
  prepare.engine = options.engine;
  const auto prepare_started = std::chrono::steady_clock::now();
  const Plan plan = Plan::prepare(workload.problem, workload.weights, prepare);
  // The bias is bound once, as a deployed model does (and as oneDNN's primitive takes it).
  const PreparedBias bias = plan.prepare_bias(std::span<const float>(workload.bias));
  const double prepare_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - prepare_started)
          .count();

  Tensor output(workload.problem.desc().output_dtype, workload.problem.desc().output_layout,
                workload.problem.output_shape());
  const RunOptions run_options = on_threads(options.threads);
  const auto run_qconv = [&] { plan.execute(workload.input, output.view(), bias, run_options); };
  LayerResult result;
  std::unique_ptr<Peer> peer;
  if (options.peer != "none") {
    peer = make_peer(workload.problem, resolve_threads(options.threads), result.peer_problem);
  }
  Timing timing;
  if (peer) {
    const auto [mine, theirs] = time_alternating(
        run_qconv, [&] { peer->run(); }, policy, resolve_threads(options.threads));
    timing = mine;
    result.peer_timing = theirs;
    result.peer_prepare_ms = peer->prepare_ms();
    result.peer_implementation = peer->implementation();
  } else {
    timing = time_runs(run_qconv, policy);
  }

  result.row = &row;
  result.engine = std::string(plan.engine());
  result.description = plan.describe();
  result.problem = benchdnn_problem(workload.problem);
  result.layout = options.layout;
  result.macs = macs(workload.problem);
  result.timing = timing;
  result.prepare_ms = prepare_ms;
  result.verified = "off";
  if (options.verify) {
    const std::string name = std::string(row.network) + "/" + std::string(row.layer);
    result.verified = verify_against_reference(
        workload, plan, output,
        {.max_macs = options.verify_max_macs, .threads = options.threads, .layer_name = name});
  }
  return result;
}

}  // namespace qconv::bench
