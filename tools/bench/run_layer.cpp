#include "run_layer.hpp"

#include "qconv/plan.hpp"
#include "verify.hpp"
#include "workload.hpp"

namespace qconv::bench {

LayerResult run_layer(const LayerRow& row, const Options& options, const RepeatPolicy& policy) {
  const Workload workload = make_workload(row, options.batch);
  PrepareOptions prepare;
  prepare.engine = options.engine;
  const Plan plan = Plan::prepare(workload.problem, workload.weights, prepare);

  Tensor output(workload.problem.desc().output_dtype, workload.problem.desc().output_layout,
                workload.problem.output_shape());
  const BiasView bias(std::span<const float>(workload.bias));
  const RunOptions run_options = on_threads(options.threads);
  const Timing timing =
      time_runs([&] { plan.execute(workload.input, output.view(), bias, run_options); }, policy);

  LayerResult result;
  result.row = &row;
  result.engine = std::string(plan.engine());
  result.description = plan.describe();
  result.macs = macs(workload.problem);
  result.timing = timing;
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
