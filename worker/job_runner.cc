// Runs measurement jobs in this process (job_runner.h): the graph's reference outputs (from the
// cache where it has them), then each plan compiled (or found compiled), checked against them and
// timed.
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
#include "worker/job_runner.h"
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

double MsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// How much a job's timing may adapt: at least this many repeats, and then stop once a majority of
// them lie within this fraction of their median. Repeats of >= 10 ms on a quiet core agree within
// ~1%, so most timings stop at 3 instead of 5; a noisy core still gets every repeat the job allows.
constexpr int kMinRepeats = 3;
constexpr double kAgreement = 0.02;
// Racing: a plan whose fastest repeat, after two, is still 10% slower than the best plan's median
// cannot be the best, and more repeats would only refine a figure nobody picks.
constexpr int kRaceAfter = 2;
constexpr double kRaceMargin = 0.10;

struct PlanRun {
  const Graph& graph;
  const MeasureJob& job;
  std::span<const Tensor> inputs;
  const std::vector<Tensor>& reference;
  codegen::Jit& jit;
  KernelCache& kernels;
};

PlanResult RunPlan(const PlanRun& run, const JobPlan& job_plan, double best_us, JobReuse& reuse) {
  const Graph& g = run.graph;
  PlanResult r;
  r.name = job_plan.name;
  std::string stage = "compile";
  auto start = std::chrono::steady_clock::now();
  try {
    Plan plan = PlanFromJson(g, job_plan.json, job_plan.name);
    const std::string fault = InjectedFault(g, plan);
    PlanExecutor executor(g, plan, run.jit, run.job.threads, &run.kernels);
    r.compile_ms = MsSince(start);
    reuse.kernels_compiled += executor.num_compiled();
    reuse.kernels_reused += executor.num_kernels() - executor.num_compiled();
    stage = "run";
    start = std::chrono::steady_clock::now();
    executor.SetInputs(run.inputs);
    if (fault == "crash") std::raise(SIGSEGV);
    if (fault == "hang") std::this_thread::sleep_for(std::chrono::hours(24));
    const auto call_start = std::chrono::steady_clock::now();
    executor.Run();
    const double call_ms = MsSince(call_start);
    std::vector<Tensor> outputs = executor.Outputs();
    if (fault == "wrong" && !outputs.empty() && outputs[0].size() > 0)
      outputs[0].Set(0, outputs[0].Get(0) + 1.0);
    const OutputComparison check = CompareOutputs(outputs, run.reference);
    r.max_abs_error = check.max_abs_error;
    r.check_ms = MsSince(start);
    if (!check.ok()) {
      r.reason = fmt::format(
          "wrong result: output {} differs from the reference by {:.3g} (allowed {:.3g})",
          check.wrong_output, check.wrong_error, check.allowed);
      return r;
    }
    stage = "timing";
    start = std::chrono::steady_clock::now();
    PlanProfile profile = executor.Measure(JobTiming(run.job.timing, best_us, call_ms),
                                           PlanExecutor::KernelTimes::kInSequence);
    r.timing_ms = MsSince(start);
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
    (stage == "compile" ? r.compile_ms
     : stage == "run"   ? r.check_ms
                        : r.timing_ms) = MsSince(start);
  }
  return r;
}

}  // namespace

TimingOptions JobTiming(const TimingOptions& asked, double best_us, double check_call_ms) {
  TimingOptions t = asked;
  // The check has just run the plan once: one warm-up call fewer, or none after a call that long
  // (for a call of 8 ms and three repeats of one call, the warm-up was a fourth of the timing).
  t.warmup = check_call_ms >= asked.min_repeat_ms ? 0 : std::max(0, asked.warmup - 1);
  t.min_repeat = std::min(kMinRepeats, std::max(1, asked.repeat));
  t.tolerance = kAgreement;
  t.race_us = best_us;
  t.race_after = kRaceAfter;
  t.race_margin = kRaceMargin;
  return t;
}

JobRunner::JobRunner() = default;
JobRunner::~JobRunner() = default;

JobResult JobRunner::Run(const MeasureJob& job) {
  const auto job_start = std::chrono::steady_clock::now();
  JobResult result;
  result.id = job.id;
  JobPhases& phases = result.phases;
  auto start = job_start;
  Graph g = ParseRelay(job.graph_text, fmt::format("job {}", job.id));
  phases.parse_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  ReferenceCache::Reference reference = references_.Get(g, job.seed);
  phases.reference_ms = MsSince(start);
  result.reuse.reference_nodes_evaluated = reference.evaluated;
  start = std::chrono::steady_clock::now();
  if (!jit_) jit_ = std::make_unique<codegen::Jit>();
  result.target = jit_->target().Fingerprint();
  phases.setup_ms = MsSince(start);
  const PlanRun run{g, job, reference.inputs, reference.outputs, *jit_, kernels_};
  double best_us = 0;
  for (const JobPlan& plan : job.plans) {
    result.plans.push_back(RunPlan(run, plan, best_us, result.reuse));
    const PlanResult& r = result.plans.back();
    if (r.ok && (best_us == 0 || r.median_us < best_us)) best_us = r.median_us;
    phases.compile_ms += r.compile_ms;
    phases.check_ms += r.check_ms;
    phases.timing_ms += r.timing_ms;
  }
  phases.total_ms = MsSince(job_start);
  return result;
}

}  // namespace fusetune
