// `fusetune run GRAPH [--plan unfused|greedy|tuned|PLAN.json] [--db PATH] [--threads N]
// [--inputs DIR] [--outputs DIR] [--repeat N] [--against PLAN [--rounds N]] [--json]
// [--dim NAME=SIZE]`: compile every group of the plan, run the graph as that sequence of kernels,
// time each kernel and the whole, compare the outputs with the reference interpreter, and set the
// graph's matmul FLOPs against the FMA peak timed in the same process; with --against, time a
// second plan against it in paired rounds in the same process. The work, in
// `fusetune-codegen`; the options are registered by client/cmd_run.cc.
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <span>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "client/codegen_commands.h"
#include "client/graph_loader.h"
#include "client/local_backend.h"
#include "db/cache.h"
#include "db/database.h"
#include "db/default_path.h"
#include "ir/error.h"
#include "ir/flops.h"
#include "ir/interpreter.h"
#include "ir/npy.h"
#include "ir/plan.h"
#include "ir/text/relay_printer.h"
#include "server/tuner.h"
#include "server/validation.h"
#include "worker/codegen/fma_peak.h"
#include "worker/codegen/jit.h"
#include "worker/codegen/runtime/thread_pool.h"
#include "worker/executor.h"
#include "worker/kernel_cache.h"
#include "worker/output_check.h"
#include "worker/prep_pool.h"

namespace fusetune::cli {
namespace {

// The regions of --plan tuned whose plan was transferred from another size: "s1=256 (here 192)".
using Transfers = std::vector<std::string>;

// The stored best plans of every region, for this machine and thread count.
Plan TunedPlan(const Graph& graph, const RunOptions& o, const DimBinding& binding,
               Transfers* transfers) {
  db::Database database(o.db_path.empty() ? db::DefaultDbPath() : o.db_path);
  db::Cache store(database);
  SearchOptions search;
  search.threads = o.threads;
  std::vector<std::string> missing;
  TuneReport report =
      LookupCached(graph, search, store, LocalBackend().TargetFingerprint(), &missing, o.exact);
  for (const RegionReport& r : report.regions)
    if (!r.transferred_from.empty()) transfers->push_back(r.transferred_from);
  if (!missing.empty()) {
    std::string names;
    for (const RegionReport& r : report.regions) {
      if (r.cached || !r.transferred_from.empty()) continue;
      std::string nodes;
      for (ValueId v : r.nodes) nodes += (nodes.empty() ? "" : " ") + RelayRef(graph, v);
      names += fmt::format("\n  {} [{}]", r.signature, nodes);
      if (!r.transfer_refused.empty())
        names += fmt::format("\n    {}, so its plan does not carry over", r.transfer_refused);
    }
    throw UserError(fmt::format(
        "--plan tuned: {} region{} of {} ha{} no stored plan for this CPU at {} thread{}{}:{}\n"
        "run `fusetune tune {}{} --threads {}` first",
        missing.size(), missing.size() == 1 ? "" : "s", o.graph_path,
        missing.size() == 1 ? "s" : "ve", o.threads, o.threads == 1 ? "" : "s",
        o.exact ? " (--exact)" : " and no tuned size to transfer from", names, o.graph_path,
        DimFlagsText(binding), o.threads));
  }
  return report.tuned_plan;
}

// `spec`: --plan's or --against's value.
Plan LoadPlan(const Graph& graph, const std::string& spec, const RunOptions& o,
              const DimBinding& binding, Transfers* transfers) {
  if (spec == "unfused") return UnfusedPlan(graph);
  if (spec == "greedy") return GreedyPlan(graph);
  if (spec == "tuned") return TunedPlan(graph, o, binding, transfers);
  std::ifstream in(spec);
  if (!in)
    throw UserError(fmt::format("{} '{}' is not unfused, greedy, tuned or a readable plan file",
                                spec == o.plan ? "--plan" : "--against", spec));
  std::stringstream text;
  text << in.rdbuf();
  return PlanFromJson(graph, text.str(), spec);
}

std::vector<Tensor> LoadInputs(const Graph& graph, const std::string& dir) {
  if (dir.empty()) return RandomInputs(graph, 1);
  std::vector<Tensor> inputs;
  for (ValueId p : graph.params()) {
    const Value& param = graph.value(p);
    std::filesystem::path path = std::filesystem::path(dir) / (param.name + ".npy");
    if (!std::filesystem::exists(path)) {
      if (param.data) {
        inputs.emplace_back();  // use the parameter's own data
        continue;
      }
      throw UserError(fmt::format("--inputs: no {} for parameter %{}", path.string(), param.name));
    }
    Tensor t = ReadNpy(path.string());
    if (t.type() != param.type) {
      throw UserError(fmt::format("{} has type {}, parameter %{} is {}", path.string(),
                                  t.type().ToString(), param.name, param.type.ToString()));
    }
    inputs.push_back(std::move(t));
  }
  return inputs;
}

// What the first output waits for, in ms from the start of the command's work (after the
// process's own start-up): the graph read, the plan found, its kernels compiled, the weights
// bound (packed), one run.
struct StartUp {
  using Clock = std::chrono::steady_clock;
  Clock::time_point start = Clock::now(), last = start;
  double load_ms = 0, plan_ms = 0, compile_ms = 0, bind_ms = 0, first_run_ms = 0;
  // The ms since the previous lap.
  double Lap() {
    const Clock::time_point now = Clock::now();
    const double ms = std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
    return ms;
  }
  double total_ms() const {
    return std::chrono::duration<double, std::milli>(last - start).count();
  }
};

// --against: the second plan, checked like the first, and both timed in paired rounds.
struct PairedRounds {
  Plan plan;
  int kernels = 0;
  double max_abs_error = 0;
  std::vector<double> plan_us, against_us;  // per round, the median of its repeats
  int plan_faster = 0;                      // rounds the --plan ran faster in
  double ratio_median = 0;                  // of plan_us / against_us, round by round
  double sign_test_p = 1;                   // one-sided, for whichever plan won more rounds
};

// `check` compares a plan's outputs with the reference (RunGraph's, which --plan passed).
PairedRounds TimeAgainst(
    const Graph& graph, const RunOptions& o, const DimBinding& binding,
    const std::vector<Tensor>& inputs,
    const std::function<OutputComparison(std::span<const Tensor>)>& check_outputs,
    const TimingOptions& timing, PlanExecutor& first, codegen::Jit& jit, KernelCache& kernels,
    int compile_threads) {
  PairedRounds out;
  Transfers transfers;
  out.plan = LoadPlan(graph, o.against, o, binding, &transfers);
  // The groups the two plans share run the same compiled kernels, as in the tuner's jobs
  // (worker/job_runner.h): two compiles of one group, placed elsewhere in memory, can time apart.
  PlanExecutor second(graph, out.plan, jit, o.threads, &kernels, compile_threads);
  out.kernels = second.num_kernels();
  second.UseOutputs(first.OutputBuffers());  // the same memory for both: only kernels differ
  second.SetInputs(inputs);
  second.Run();
  const OutputComparison check = check_outputs(second.Outputs());
  out.max_abs_error = check.max_abs_error;
  if (!check.ok())
    throw std::runtime_error(fmt::format(
        "--against {}: disagrees with the reference interpreter (max |error| {:.3g}, {:.3g} "
        "allowed): not timed",
        o.against, check.max_abs_error, check.allowed));
  runtime::SetNumThreads(o.threads);
  std::vector<double> ratios;
  for (int r = 0; r < o.rounds; ++r) {
    // Which goes first alternates: the load of a shared machine moves in levels that last
    // minutes, and a plan that always ran second would find the caches as the other left them.
    double us[2];
    for (int i = 0; i < 2; ++i) {
      const bool plan_now = (i == 0) == (r % 2 == 0);
      PlanExecutor& e = plan_now ? first : second;
      us[plan_now ? 0 : 1] = TimeCalls([&] { e.Run(); }, timing).median_us;
    }
    out.plan_us.push_back(us[0]);
    out.against_us.push_back(us[1]);
    ratios.push_back(us[0] / us[1]);
    if (us[0] < us[1]) ++out.plan_faster;
  }
  out.ratio_median = Median(ratios);
  out.sign_test_p = SignTestP(std::max(out.plan_faster, o.rounds - out.plan_faster), o.rounds);
  return out;
}

}  // namespace

void RunGraph(const RunOptions& o) {
  StartUp startup;
  DimBinding binding = OneDimBinding(o.dims, "run");
  Graph graph = GraphSource(o.graph_path, {}, o.params_dir).Bind(binding);
  startup.load_ms = startup.Lap();
  Transfers transfers;
  Plan plan = LoadPlan(graph, o.plan, o, binding, &transfers);
  if (o.threads < 1 || o.threads > runtime::MaxThreads()) {
    throw UserError(fmt::format("--threads {} is outside 1..{}", o.threads, runtime::MaxThreads()));
  }
  if (o.repeat < 1) throw UserError("--repeat must be at least 1");
  if (!o.against.empty() && o.rounds < 1) throw UserError("--rounds must be at least 1");
  std::vector<Tensor> inputs = LoadInputs(graph, o.inputs_dir);
  startup.plan_ms = startup.Lap();

  codegen::Jit jit;
  // Compiling precedes running: every core this process may use compiles.
  const int compile_threads = UsableCores();
  KernelCache kernels;  // shared with --against's plan
  PlanExecutor executor(graph, plan, jit, o.threads, &kernels, compile_threads);
  startup.compile_ms = startup.Lap();
  executor.SetInputs(inputs);
  startup.bind_ms = startup.Lap();
  executor.Run();
  std::vector<Tensor> outputs = executor.Outputs();
  startup.first_run_ms = startup.Lap();
  const std::vector<Tensor> reference = Interpret(graph, inputs);
  // The reference's rounding spread costs a second evaluation of the whole graph (seconds for a
  // 12-layer model): computed at most once, and only for a plan past the fixed tolerance.
  std::optional<std::vector<double>> spread;
  auto check_outputs = [&](std::span<const Tensor> got) {
    return CheckOutputs(got, reference, [&] {
      if (!spread)
        spread = RoundingSpread(InterpretPerturbed(graph, inputs, /*seed=*/1), reference);
      return *spread;
    });
  };
  const OutputComparison check = check_outputs(outputs);
  const double error = check.max_abs_error;
  if (!transfers.empty() && !check.ok())
    throw std::runtime_error(fmt::format(
        "--plan tuned: the plan transferred from {} disagrees with the reference interpreter "
        "(max |error| {:.3g}); run `fusetune tune {}{}` to measure this size",
        transfers.front(), error, o.graph_path, DimFlagsText(binding)));
  TimingOptions timing;
  timing.repeat = o.repeat;
  // The graph's matmuls against the FMA peak of the same threads, timed on each side of the
  // plan's repeats (the host's speed drifts by 5-10% within minutes): what share of the core's
  // arithmetic the whole plan turns into matmul work.
  const double matmul_flops = MatmulFlops(graph);
  std::unique_ptr<codegen::FmaPeakKernel> peak_kernel;
  double peak_gflops = 0;
  if (matmul_flops > 0) {
    peak_kernel = codegen::CompileFmaPeak(jit, 16);
    peak_gflops = codegen::FmaPeakGflops(*peak_kernel, o.threads);
  }
  // Alone, a kernel's repeats find its weights and inputs where its last call left them; in
  // sequence, where the kernels before it did (a 12-layer GPT-2 stack's kernels summed to 1.08x
  // their figures alone with a buffer per value, about 1.02x with shared blocks: BENCHMARKS.md,
  // "Decisions that hold from one tune to the next", "Values between kernels in shared blocks").
  PlanProfile measured =
      executor.Measure(timing, o.in_sequence ? PlanExecutor::KernelTimes::kInSequence
                                             : PlanExecutor::KernelTimes::kSeparately);
  if (peak_kernel)
    peak_gflops = std::max(peak_gflops, codegen::FmaPeakGflops(*peak_kernel, o.threads));
  // Both figures the fastest of their calls, the closest to an undisturbed core (interference
  // only adds time); GFLOP/s are FLOPs per 1e3 microseconds.
  const double matmul_gflops = matmul_flops / measured.total.min_us / 1e3;
  const double matmul_share = matmul_flops > 0 ? matmul_gflops / peak_gflops : 0;
  std::optional<PairedRounds> paired;
  if (!o.against.empty())
    paired = TimeAgainst(graph, o, binding, inputs, check_outputs, timing, executor, jit, kernels,
                         compile_threads);

  if (!o.outputs_dir.empty()) {
    std::filesystem::create_directories(o.outputs_dir);
    for (size_t i = 0; i < outputs.size(); ++i) {
      WriteNpy((std::filesystem::path(o.outputs_dir) / fmt::format("output_{}.npy", i)).string(),
               outputs[i]);
    }
  }

  auto node_names = [&](const std::vector<ValueId>& nodes) {
    std::vector<std::string> names;
    for (ValueId v : nodes) names.push_back(RelayRef(graph, v));
    return names;
  };
  if (o.json) {
    nlohmann::ordered_json groups = nlohmann::ordered_json::array();
    nlohmann::ordered_json kernels = nlohmann::ordered_json::array();
    for (const KernelTiming& k : measured.kernels) {
      groups.push_back(node_names(k.nodes));
      kernels.push_back({{"nodes", node_names(k.nodes)},
                         {"us", k.timing.median_us},
                         {"calls_per_repeat", k.timing.number},
                         {"compile_ms", k.shared ? 0.0 : k.compile.total_ms()},
                         {"shared", k.shared}});
    }
    nlohmann::ordered_json out = {{"graph", o.graph_path},
                                  {"plan", plan.name},
                                  {"threads", o.threads},
                                  {"target", jit.target().Fingerprint()},
                                  {"groups", groups},
                                  {"kernels", kernels},
                                  {"kernel_times", o.in_sequence ? "in sequence" : "alone"},
                                  {"total_us", measured.total.median_us},
                                  {"total_repeats_us", measured.total.samples_us},
                                  {"matmul_gflop", matmul_flops / 1e9},
                                  {"max_abs_error", error},
                                  {"max_output_magnitude", check.max_magnitude},
                                  {"within_rounding_spread", check.within_spread},
                                  {"startup",
                                   {{"first_output_ms", startup.total_ms()},
                                    {"load_ms", startup.load_ms},
                                    {"plan_ms", startup.plan_ms},
                                    {"compile_ms", startup.compile_ms},
                                    {"bind_ms", startup.bind_ms},
                                    {"first_run_ms", startup.first_run_ms},
                                    {"kernels_compiled", executor.num_compiled()},
                                    {"compile_threads", compile_threads}}}};
    if (matmul_flops > 0) {
      out["fma_peak_gflops"] = peak_gflops;
      out["matmul_fraction_of_peak"] = matmul_share;
    }
    if (!transfers.empty()) {
      out["transferred_from"] = transfers;  // checked against the reference above
      out["checked_against_reference"] = true;
    }
    if (!binding.empty()) out["dims"] = binding;
    if (paired) {
      nlohmann::ordered_json rounds = nlohmann::ordered_json::array();
      for (size_t r = 0; r < paired->plan_us.size(); ++r)
        rounds.push_back({{"plan_us", paired->plan_us[r]}, {"against_us", paired->against_us[r]}});
      nlohmann::ordered_json against_groups = nlohmann::ordered_json::array();
      for (const PlanGroup& g : paired->plan.groups) against_groups.push_back(node_names(g.nodes));
      out["against"] = {{"plan", paired->plan.name},
                        {"groups", against_groups},
                        {"kernels", paired->kernels},
                        {"max_abs_error", paired->max_abs_error},
                        {"rounds", rounds},
                        {"ratio_median", paired->ratio_median},
                        {"plan_faster_rounds", paired->plan_faster},
                        {"sign_test_p", paired->sign_test_p}};
    }
    std::cout << out.dump(2) << "\n";
    return;
  }
  std::cout << fmt::format("graph    {}\n", o.graph_path);
  if (!binding.empty()) std::cout << fmt::format("dims     {}\n", DimBindingText(binding));
  std::cout << fmt::format("plan     {} ({} kernels)\nthreads  {}\ntarget   {}\n\n", plan.name,
                           measured.kernels.size(), o.threads, jit.target().Fingerprint());
  std::cout << fmt::format("{:>14}  {:>10}  {}\n", o.in_sequence ? "in sequence us" : "alone us",
                           "compile ms", "group");
  for (const KernelTiming& k : measured.kernels) {
    std::string group;
    for (const std::string& n : node_names(k.nodes)) group += (group.empty() ? "" : ",") + n;
    std::string ops;
    for (ValueId v : k.nodes) ops += (ops.empty() ? "" : " ") + graph.value(v).op->name;
    // A kernel compiled once serves every group with its key: its compile time is shown once.
    const std::string compile =
        k.shared ? std::string("shared") : fmt::format("{:.1f}", k.compile.total_ms());
    std::cout << fmt::format("{:>14.2f}  {:>10}  {} ({})\n", k.timing.median_us, compile, group,
                             ops);
  }
  std::string verdict;
  if (!check.ok())
    verdict = fmt::format(", past the {:.3g} allowed: a wrong result", check.allowed);
  else if (check.within_spread)
    verdict = " (past 1e-4 of the output's magnitude, within 10x the graph's own rounding spread)";
  // The error means little without the size of what it is measured on (a GPT-2 block's 0.05 is
  // 3e-5 of outputs reaching 1,700).
  std::cout << fmt::format(
      "\ntotal    {:.2f} us (median of {} repeats)\nmax_abs_error {:.3g} on outputs up to "
      "{:.3g}{}\n",
      measured.total.median_us, measured.total.repeat, error, check.max_magnitude, verdict);
  if (matmul_flops > 0)
    std::cout << fmt::format(
        "matmuls  {:.3g} GFLOP, {:.1f} GFLOP/s in the fastest repeat of the whole plan: {:.0f}% "
        "of the FMA peak of {} thread{} ({:.1f} GFLOP/s, the fastest call of a peak kernel timed "
        "around the repeats)\n",
        matmul_flops / 1e9, matmul_gflops, 100 * matmul_share, o.threads, o.threads == 1 ? "" : "s",
        peak_gflops);
  std::cout << fmt::format(
      "start-up {:.0f} ms to the first output: load {:.0f}, plan and inputs {:.0f}, compile {:.0f} "
      "({} kernel{} for {} group{}, on {} thread{}), bind {:.0f}, first run {:.0f}\n",
      startup.total_ms(), startup.load_ms, startup.plan_ms, startup.compile_ms,
      executor.num_compiled(), executor.num_compiled() == 1 ? "" : "s", executor.num_kernels(),
      executor.num_kernels() == 1 ? "" : "s", compile_threads, compile_threads == 1 ? "" : "s",
      startup.bind_ms, startup.first_run_ms);
  if (paired) {
    std::cout << fmt::format(
        "\nagainst  {} ({} kernels), max_abs_error {:.3g}: {} paired rounds of {} repeats, "
        "alternating which runs first\n{:>5}  {:>12}  {:>12}  {:>14}\n",
        paired->plan.name, paired->kernels, paired->max_abs_error, o.rounds, o.repeat, "round",
        "plan us", "against us", "plan / against");
    for (size_t r = 0; r < paired->plan_us.size(); ++r)
      std::cout << fmt::format("{:>5}  {:>12.2f}  {:>12.2f}  {:>14.3f}\n", r + 1,
                               paired->plan_us[r], paired->against_us[r],
                               paired->plan_us[r] / paired->against_us[r]);
    std::cout << fmt::format(
        "plan / against {:.3f} (median of the rounds); plan faster in {} of {} rounds (one-sided "
        "sign test for the side that won more: p = {:.3f})\n",
        paired->ratio_median, paired->plan_faster, o.rounds, paired->sign_test_p);
  }
  for (const std::string& from : transfers)
    std::cout << fmt::format(
        "transferred, not measured at this size: a region's plan tuned at {}; checked against "
        "the reference interpreter (max_abs_error above)\n",
        from);
}

}  // namespace fusetune::cli
