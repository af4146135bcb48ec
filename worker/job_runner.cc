// Runs measurement jobs in this process (job_runner.h): the graph's reference outputs (from the
// cache where it has them), then each plan compiled (or found compiled), checked against them and
// timed.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <functional>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "ir/interpreter.h"
#include "ir/plan.h"
#include "ir/text/relay_parser.h"
#include "worker/codegen/jit.h"
#include "worker/executor.h"
#include "worker/job_runner.h"
#include "worker/output_check.h"

namespace fusetune {
namespace {

// FUSETUNE_TEST_INJECT=KIND:OP (see job.h): KIND when some fused group of `groups` (node lists)
// holds an op named OP, else "".
std::string InjectedFault(const Graph& g, const std::vector<std::vector<ValueId>>& groups) {
  const char* spec = std::getenv("FUSETUNE_TEST_INJECT");
  if (!spec) return "";
  std::string s = spec;
  size_t colon = s.find(':');
  if (colon == std::string::npos) return "";
  std::string kind = s.substr(0, colon), op = s.substr(colon + 1);
  for (const std::vector<ValueId>& nodes : groups) {
    if (nodes.size() < 2) continue;
    for (ValueId v : nodes)
      if (g.value(v).op->name == op) return kind;
  }
  return "";
}

std::string InjectedFault(const Graph& g, const Plan& plan) {
  std::vector<std::vector<ValueId>> groups;
  for (const PlanGroup& group : plan.groups) groups.push_back(group.nodes);
  return InjectedFault(g, groups);
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
  std::shared_ptr<const Graph> graph;
  const MeasureJob& job;
  std::span<const Tensor> inputs;
  const std::vector<Tensor>& reference;
  // The reference's rounding spread (worker/output_check.h CheckOutputs).
  std::function<std::vector<double>()> spread;
  codegen::Jit& jit;
  KernelCache& kernels;
  PrepPool& pool;
  // Waits until every kernel of the plan is in `kernels`; rethrows a compile's error.
  std::function<void(const Plan&)> await_kernels;
  CheckedExecutors& checked;
  // The output tensors every plan of the job compiled here writes into (PlanExecutor::UseOutputs):
  // a kept plan's, else the first's. Where an output lies is then not what tells plans apart.
  std::vector<Tensor>& outputs;
};

std::string CheckedKey(const MeasureJob& job, const JobPlan& plan) {
  return CheckedExecutors::Key(job.graph_text, plan.json, job.seed, job.threads);
}

// `checked`: the plan's executor from an earlier job, or none.
PlanResult RunPlan(const PlanRun& run, const JobPlan& job_plan, CheckedExecutors::Checked checked,
                   double best_us, int& kernels) {
  const Graph& g = *run.graph;
  PlanResult r;
  r.name = job_plan.name;
  std::string stage = "compile";
  auto start = std::chrono::steady_clock::now();
  try {
    // The call that warmed the plan up: the check's, or for an executor kept from an earlier
    // job, a call of its last timing when that was as long as a repeat (it touched all it will
    // touch; no warm-up call is worth its time), else none (a full warm-up).
    std::optional<double> call_ms;
    if (checked.executor) {
      r.max_abs_error = checked.max_abs_error;
      r.max_output_magnitude = checked.max_output_magnitude;
      if (checked.call_ms >= run.job.timing.min_repeat_ms) call_ms = checked.call_ms;
    } else {
      Plan plan = PlanFromJson(g, job_plan.json, job_plan.name);
      const std::string fault = InjectedFault(g, plan);
      run.await_kernels(plan);
      checked.graph = run.graph;
      checked.executor =
          std::make_unique<PlanExecutor>(g, plan, run.jit, run.job.threads, &run.kernels);
      r.compile_ms = MsSince(start);
      stage = "run";
      start = std::chrono::steady_clock::now();
      if (run.outputs.empty())
        run.outputs = checked.executor->OutputBuffers();
      else
        checked.executor->UseOutputs(run.outputs);
      checked.executor->SetInputs(run.inputs);
      if (fault == "crash") std::raise(SIGSEGV);
      if (fault == "hang") std::this_thread::sleep_for(std::chrono::hours(24));
      const auto call_start = std::chrono::steady_clock::now();
      checked.executor->Run();
      call_ms = MsSince(call_start);
      std::vector<Tensor> outputs = checked.executor->Outputs();
      if (fault == "wrong" && !outputs.empty() && outputs[0].size() > 0)
        outputs[0].Set(0, outputs[0].Get(0) + 1.0);
      const OutputComparison check = CheckOutputs(outputs, run.reference, run.spread);
      r.max_abs_error = checked.max_abs_error = check.max_abs_error;
      r.max_output_magnitude = checked.max_output_magnitude = check.max_magnitude;
      r.check_ms = MsSince(start);
      if (!check.ok()) {
        r.reason = fmt::format(
            "wrong result: output {} differs from the reference by {:.3g} (allowed {:.3g})",
            check.wrong_output, check.wrong_error, check.allowed);
        return r;
      }
    }
    PlanExecutor& executor = *checked.executor;
    kernels += executor.num_kernels();
    stage = "timing";
    start = std::chrono::steady_clock::now();
    // Waits for compiles on its cores (on every core for a job timed alone).
    PrepPool::Timing quiet(
        run.pool, run.job.alone ? std::max(run.pool.cores(), run.job.threads) : run.job.threads);
    r.compile_ms += MsSince(start);
    start = std::chrono::steady_clock::now();
    const bool debug = spdlog::should_log(spdlog::level::debug);
    rusage before{}, after{};
    if (debug) getrusage(RUSAGE_THREAD, &before);
    PlanProfile profile =
        executor.Measure(JobTiming(run.job.timing, best_us, call_ms, run.job.alone),
                         PlanExecutor::KernelTimes::kInSequence);
    r.timing_ms = MsSince(start);
    if (debug) {
      getrusage(RUSAGE_THREAD, &after);
      // Each repeat, and whether this thread itself was disturbed while timing (page faults, the
      // scheduler taking its core): on a shared machine a slow repeat with neither came from
      // outside.
      spdlog::debug(
          "job {} plan {}: check call {}; {} repeat(s) of {} call(s): {::.4g} µs; while "
          "timing {} page fault(s), {} involuntary context switch(es)",
          run.job.id, r.name,
          call_ms ? fmt::format("{:.4g} µs", *call_ms * 1e3) : "none (checked before)",
          profile.total.repeat, profile.total.number, profile.total.samples_us,
          after.ru_minflt - before.ru_minflt + after.ru_majflt - before.ru_majflt,
          after.ru_nivcsw - before.ru_nivcsw);
    }
    r.median_us = profile.total.median_us;
    r.min_us = profile.total.min_us;
    r.stddev_us = profile.total.stddev_us;
    r.mad_us = profile.total.mad_us;
    r.number = profile.total.number;
    r.repeat = profile.total.repeat;
    for (const KernelTiming& k : profile.kernels) r.kernel_us.push_back(k.timing.median_us);
    r.ok = true;
    // Only a decision's job has later rounds (validation, duels, the whole graph, cache verify);
    // a candidate's plan is timed once, and keeping it would only hold its memory.
    if (run.job.alone) {
      checked.call_ms = r.median_us / 1e3;
      run.checked.Keep(CheckedKey(run.job, job_plan), std::move(checked));
    }
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

TimingOptions JobTiming(const TimingOptions& asked, double best_us,
                        std::optional<double> check_call_ms, bool alone) {
  TimingOptions t = asked;
  // The check has just run the plan once: one warm-up call fewer, or none after a call that long
  // (for a call of 8 ms and three repeats of one call, the warm-up was a fourth of the timing).
  if (check_call_ms)
    t.warmup = *check_call_ms >= asked.min_repeat_ms ? 0 : std::max(0, asked.warmup - 1);
  t.min_repeat = std::min(kMinRepeats, std::max(1, asked.repeat));
  t.tolerance = kAgreement;
  // A decision's rounds take each plan's fastest repeat (server/validation.cc), and a burst of
  // load on the machine lasts a few 100 ms: two disturbed repeats of a 120 ms plan raced it out
  // with no undisturbed one (the GPT-2 stack's greedy plan read 1.25-1.5x its time in 3 of 9
  // rounds). Those jobs give every plan its repeats; the others race.
  t.race_us = alone ? 0 : best_us;
  t.race_after = kRaceAfter;
  t.race_margin = kRaceMargin;
  return t;
}

int DefaultPrepThreads() {
  if (const char* n = std::getenv("FUSETUNE_PREP_THREADS")) return std::max(0, std::atoi(n));
  return UsableCores();
}

JobRunner::JobRunner(int prep_threads) : pool_(prep_threads) {}
JobRunner::~JobRunner() = default;

codegen::Jit& JobRunner::jit() {
  std::lock_guard<std::mutex> lock(jit_mutex_);
  if (!jit_) jit_ = std::make_unique<codegen::Jit>();
  return *jit_;
}

std::shared_future<void> JobRunner::EnsureKernel(std::shared_ptr<const Graph> graph,
                                                 KernelOrder order, int threads, int64_t job_id) {
  std::unique_lock<std::mutex> lock(mutex_);
  if (kernels_.Contains(order.key)) {
    std::promise<void> ready;
    ready.set_value();
    return ready.get_future().share();
  }
  if (auto it = failed_.find(order.key); it != failed_.end()) {
    std::promise<void> failed;
    failed.set_exception(it->second);
    return failed.get_future().share();
  }
  if (auto it = compiling_.find(order.key); it != compiling_.end()) return it->second;
  ++prepared_[job_id].kernels_compiled;
  const std::string key = order.key;
  codegen::Jit& jit = this->jit();
  auto compile = [this, graph, order = std::move(order), threads, &jit] {
    try {
      const std::string fault = InjectedFault(*graph, {order.group.nodes});
      if (fault == "compile_crash") std::raise(SIGSEGV);
      if (fault == "compile_hang") std::this_thread::sleep_for(std::chrono::hours(24));
      kernels_.Put(order.key, CompileKernel(*graph, order, jit, threads));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex_);
      failed_[order.key] = std::current_exception();
      compiling_.erase(order.key);
      throw;
    }
    std::lock_guard<std::mutex> lock(mutex_);
    compiling_.erase(order.key);
  };
  if (pool_.cores() == 0) {  // no pool: the caller compiles, outside the lock
    std::packaged_task<void()> task(std::move(compile));
    std::shared_future<void> done = task.get_future().share();
    lock.unlock();
    task();
    return done;
  }
  std::shared_future<void> done = pool_.Submit(std::move(compile));
  compiling_.emplace(key, done);
  return done;
}

void JobRunner::Prepare(const MeasureJob& job) {
  if (pool_.cores() == 0) return;  // nothing can run ahead
  // A later round of plans checked before: Run needs neither their kernels nor the reference.
  if (std::all_of(job.plans.begin(), job.plans.end(),
                  [&](const JobPlan& plan) { return checked_.Contains(CheckedKey(job, plan)); }))
    return;
  try {
    auto graph =
        std::make_shared<const Graph>(ParseRelay(job.graph_text, fmt::format("job {}", job.id)));
    auto reference = std::make_shared<ReferenceCache::Reference>();
    std::shared_future<void> done =
        pool_.Submit([this, graph, reference, seed = job.seed, id = job.id] {
          std::lock_guard<std::mutex> lock(reference_mutex_);
          *reference = references_.Get(*graph, seed);
          std::lock_guard<std::mutex> count(mutex_);
          if (reference->evaluated > 0) prepared_[id].reference_evaluated += reference->evaluated;
        });
    {
      std::lock_guard<std::mutex> lock(mutex_);
      prepared_references_[job.id] = {done, reference};
    }
    for (const JobPlan& job_plan : job.plans) {
      Plan plan = PlanFromJson(*graph, job_plan.json, job_plan.name);
      for (KernelOrder& order : PlanKernels(*graph, plan, jit(), job.threads))
        EnsureKernel(graph, std::move(order), job.threads, job.id);
    }
  } catch (const std::exception&) {
    // A job or plan that cannot be read: Run reports it.
  }
}

JobResult JobRunner::Run(const MeasureJob& job) {
  const auto job_start = std::chrono::steady_clock::now();
  const double idle_before = pool_.idle_core_ms();
  PrepPool::Foreground foreground(pool_, job.threads);
  JobResult result;
  result.id = job.id;
  JobPhases& phases = result.phases;
  auto start = job_start;
  auto graph =
      std::make_shared<const Graph>(ParseRelay(job.graph_text, fmt::format("job {}", job.id)));
  const Graph& g = *graph;
  phases.parse_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  ReferenceCache::Reference reference;
  std::optional<PreparedReference> prepared_reference;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (auto it = prepared_references_.find(job.id); it != prepared_references_.end()) {
      prepared_reference = std::move(it->second);
      prepared_references_.erase(it);
    }
  }
  // The executors of this job's plans checked in an earlier job (a later round), all taken now,
  // before timing one gives it back and might evict another. A job with one for every plan
  // compares nothing with the reference: a whole model's is seconds of interpreting.
  std::vector<CheckedExecutors::Checked> checked;
  for (const JobPlan& plan : job.plans) checked.push_back(checked_.Take(CheckedKey(job, plan)));
  bool have_reference = std::all_of(checked.begin(), checked.end(),
                                    [](const auto& c) { return c.executor != nullptr; });
  if (prepared_reference && !have_reference) {
    try {
      pool_.Wait(prepared_reference->done);
      reference = *prepared_reference->value;
      reference.evaluated = 0;  // counted by the preparation
      have_reference = true;
    } catch (const std::exception&) {
      // The preparation failed: again here, where the failure is the job's error.
    }
  }
  if (!have_reference) {
    std::lock_guard<std::mutex> lock(reference_mutex_);
    reference = references_.Get(g, job.seed);
  }
  phases.reference_ms = MsSince(start);
  start = std::chrono::steady_clock::now();
  codegen::Jit& jit = this->jit();
  result.target = jit.target().Fingerprint();
  phases.setup_ms = MsSince(start);
  // Every plan's kernels queued at once (in parallel on the pool), and all awaited before the
  // first plan runs. Without a pool they compile here, one by one: that is the job's compile time.
  start = std::chrono::steady_clock::now();
  std::vector<std::shared_future<void>> compiles;
  for (size_t i = 0; i < job.plans.size(); ++i) {
    if (checked[i].executor) continue;
    const JobPlan& job_plan = job.plans[i];
    try {
      Plan plan = PlanFromJson(g, job_plan.json, job_plan.name);
      for (KernelOrder& order : PlanKernels(g, plan, jit, job.threads))
        compiles.push_back(EnsureKernel(graph, std::move(order), job.threads, job.id));
    } catch (const std::exception&) {
      // RunPlan reports the plan's error.
    }
  }
  // So no plan is timed while another plan of the job compiles: on a machine of two cores that
  // compile ran beside the timing, and in warm seed tunes (a fused kernel timed while the unfused
  // plan's three compiled) the first round read up to 2x slow in 3 runs of 8, each of which then
  // cost a third round. The next job's compiles still overlap this one's timings
  // (PrepPool::Timing).
  // Waited through the pool: while a Foreground of every core lives, only a waiting job lets
  // queued compiles start. A compile's error is its plan's, reported by RunPlan.
  for (const std::shared_future<void>& compile : compiles) {
    try {
      pool_.Wait(compile);
    } catch (const std::exception&) {
    }
  }
  auto await_kernels = [&](const Plan& plan) {
    for (KernelOrder& order : PlanKernels(g, plan, jit, job.threads))
      pool_.Wait(EnsureKernel(graph, std::move(order), job.threads, job.id));
  };
  auto spread = [&] {
    std::lock_guard<std::mutex> lock(reference_mutex_);
    return references_.Spread(g, reference, job.seed);
  };
  // A plan kept from an earlier job is bound to its outputs already: the others take them.
  std::vector<Tensor> outputs;
  for (const CheckedExecutors::Checked& c : checked)
    if (c.executor && outputs.empty()) outputs = c.executor->OutputBuffers();
  const PlanRun run{graph,    job,   reference.inputs, reference.outputs, spread, jit,
                    kernels_, pool_, await_kernels,    checked_,          outputs};
  phases.compile_ms = MsSince(start);
  double best_us = 0;
  int kernels = 0;
  for (size_t i = 0; i < job.plans.size(); ++i) {
    result.plans.push_back(RunPlan(run, job.plans[i], std::move(checked[i]), best_us, kernels));
    const PlanResult& r = result.plans.back();
    if (r.ok && (best_us == 0 || r.median_us < best_us)) best_us = r.median_us;
    phases.compile_ms += r.compile_ms;
    phases.check_ms += r.check_ms;
    phases.timing_ms += r.timing_ms;
  }
  {
    std::lock_guard<std::mutex> lock(mutex_);
    const Prepared prepared = prepared_[job.id];
    prepared_.erase(job.id);
    result.reuse.kernels_compiled = prepared.kernels_compiled;
    result.reuse.kernels_reused = std::max(0, kernels - prepared.kernels_compiled);
    result.reuse.reference_nodes_evaluated = reference.evaluated + prepared.reference_evaluated;
  }
  phases.total_ms = MsSince(job_start);
  phases.cores_idle_ms = pool_.idle_core_ms() - idle_before;
  return result;
}

}  // namespace fusetune
