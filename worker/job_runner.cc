// Runs a measurement job in this process (see job.h): the graph's reference outputs once, then
// each plan compiled, checked against them and timed. A kernel that cannot be compiled or that
// computes a wrong result is a failed PlanResult with its reason, never a time.
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdlib>
#include <thread>

#include <fmt/format.h>

#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/job.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

// FUSETUNE_TEST_INJECT=crash:OP|hang:OP|wrong:OP (see job.h): the fault this plan should show.
std::string InjectedFault(const Graph& g, const Plan& plan) {
  const char* spec = std::getenv("FUSETUNE_TEST_INJECT");
  if (!spec) return "";
  std::string s = spec;
  size_t colon = s.find(':');
  if (colon == std::string::npos) return "";
  std::string kind = s.substr(0, colon), op = s.substr(colon + 1);
  for (const PlanGroup& group : plan.groups) {
    if (group.nodes.size() < 2) continue;
    for (ValueId v : group.nodes)
      if (g.value(v).op->name == op) return kind;
  }
  return "";
}

PlanResult RunPlan(const Graph& g, const JobPlan& job_plan, std::span<const Tensor> inputs,
                   const std::vector<Tensor>& reference, const MeasureJob& job, codegen::Jit& jit) {
  PlanResult r;
  r.name = job_plan.name;
  std::string stage = "compile";
  try {
    Plan plan = PlanFromJson(g, job_plan.json, job_plan.name);
    const std::string fault = InjectedFault(g, plan);
    auto start = std::chrono::steady_clock::now();
    PlanExecutor executor(g, plan, jit, job.threads);
    r.compile_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    stage = "run";
    executor.SetInputs(inputs);
    if (fault == "crash") std::raise(SIGSEGV);
    if (fault == "hang") std::this_thread::sleep_for(std::chrono::hours(24));
    executor.Run();
    std::vector<Tensor> outputs = executor.Outputs();
    if (fault == "wrong" && !outputs.empty() && outputs[0].size() > 0)
      outputs[0].Set(0, outputs[0].Get(0) + 1.0);
    const OutputComparison check = CompareOutputs(outputs, reference);
    r.max_abs_error = check.max_abs_error;
    if (!check.ok()) {
      r.reason = fmt::format(
          "wrong result: output {} differs from the reference by {:.3g} (allowed {:.3g})",
          check.wrong_output, check.wrong_error, check.allowed);
      return r;
    }
    stage = "timing";
    PlanProfile profile = executor.Measure(job.timing);
    r.median_us = profile.total.median_us;
    r.min_us = profile.total.min_us;
    r.stddev_us = profile.total.stddev_us;
    r.number = profile.total.number;
    r.repeat = profile.total.repeat;
    for (const KernelTiming& k : profile.kernels) r.kernel_us.push_back(k.timing.median_us);
    r.ok = true;
  } catch (const std::exception& e) {
    r.ok = false;
    r.reason = fmt::format("{} error: {}", stage, e.what());
  }
  return r;
}

}  // namespace

JobResult RunJob(const MeasureJob& job) {
  JobResult result;
  result.id = job.id;
  Graph g = ParseRelay(job.graph_text, fmt::format("job {}", job.id));
  std::vector<Tensor> inputs = RandomInputs(g, job.seed);
  std::vector<Tensor> reference = Interpret(g, inputs);
  codegen::Jit jit;
  result.target = jit.target().Fingerprint();
  for (const JobPlan& plan : job.plans)
    result.plans.push_back(RunPlan(g, plan, inputs, reference, job, jit));
  return result;
}

}  // namespace fusetune
