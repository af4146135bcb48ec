#pragma once
// A measurement job: "time these plans of this graph on this machine". The same message serves
// every purpose: one candidate group (a graph that is the group, one plan with one group), a
// region's validation (a graph that is the region; tuned, greedy and unfused plans timed in the
// same run), and a target's calibration. Jobs travel as JSON: over the local sandbox's pipe, and
// inside the service's protobuf messages, so a worker never needs the submitted graph.
//
//   {"id":7,"graph":"fn (%p0: ...) {...}","threads":1,"seed":1,
//    "plans":[{"name":"g","groups":[{"nodes":["%n0","%n1"],"schedule":"vec=16"}]}],
//    "timing":{"warmup":1,"repeat":5,"min_repeat_ms":10,"flush_cache":false},"alone":false}
//
// Fault injection for tests: with FUSETUNE_TEST_INJECT=crash:OP, hang:OP or wrong:OP in the
// environment of the process that runs jobs, every fused group (two or more ops) that holds an op
// named OP crashes, hangs, or computes a wrong result, so tests can prove such kernels are recorded
// invalid and the search goes on. compile_crash:OP and compile_hang:OP crash or hang the process
// while such a group's kernel compiles (which may be ahead of its job, while an earlier job runs:
// worker/job_runner.h).
#include <cstdint>
#include <string>
#include <vector>

#include "worker/timing.h"  // TimingOptions

namespace fusetune {

struct JobPlan {
  std::string name;
  std::string json;  // ir/plan.h's PlanToJson over the job's graph
};

struct MeasureJob {
  int64_t id = 0;
  std::string graph_text;  // Relay text
  std::vector<JobPlan> plans;
  int threads = 1;
  uint64_t seed = 1;
  TimingOptions timing;
  // Timed with every core to itself: no kernel compiles and no reference is computed beside the
  // timing, even where the job's threads leave a core free. For the timings a decision rests on
  // (validation, the whole graph, cache verify): a compile on the other core disturbed the first
  // of every region's rounds by 10-30% and cost the decisions rounds (BENCHMARKS.md, "Decisions
  // against noise").
  bool alone = false;
};

struct PlanResult {
  std::string name;
  bool ok = false;
  std::string reason;  // why not ok: compile error, wrong result (with the error), crash, timeout
  double median_us = 0, min_us = 0, stddev_us = 0;
  double mad_us = 0;  // median absolute deviation of the repeats (worker/timing.h)
  int64_t number = 0, repeat = 0;
  double compile_ms = 0;  // this plan's kernels (0 when every one was found compiled)
  double check_ms = 0;    // one run of the plan and the comparison with the reference
  double timing_ms = 0;   // the timing harness
  double max_abs_error = 0;
  // The reference's largest finite |value| over the outputs: the scale max_abs_error is read on.
  double max_output_magnitude = 0;
  std::vector<double> kernel_us;  // per group, in plan order
};

// Where a job's wall time went, in milliseconds, so a tune can say what its measurements cost.
// The process that ran the job fills the first six; a sandbox's parent adds its own overhead, and
// the farm's daemon the time it waited for the job.
struct JobPhases {
  double parse_ms = 0;      // the graph and the plans read
  double reference_ms = 0;  // random inputs and the reference interpreter's outputs
  double setup_ms = 0;      // the JIT (LLVM) made ready
  double compile_ms = 0;    // every plan's kernels
  double check_ms = 0;      // every plan run once and compared with the reference
  double timing_ms = 0;     // the timing harness
  double sandbox_ms = 0;    // starting the sandbox child, the pipe and JSON, beyond the job itself
  double idle_ms = 0;       // before the job: the worker reporting its last result and leasing
  double total_ms = 0;      // the job where it ran (the sum of the first six, and what they miss)
  // Not wall time: core time no work ahead used while the job waited for some (its kernels or
  // reference): a kernel compiling alone on a machine of two leaves a core idle
  // (worker/prep_pool.h idle_core_ms).
  double cores_idle_ms = 0;
};

// Every figure of JobPhases with its name: the one list that the JSON and wire forms and the logs
// follow.
struct PhaseField {
  const char* name;
  double JobPhases::*figure;
};
inline constexpr PhaseField kPhaseFields[] = {
    {"parse_ms", &JobPhases::parse_ms},     {"reference_ms", &JobPhases::reference_ms},
    {"setup_ms", &JobPhases::setup_ms},     {"compile_ms", &JobPhases::compile_ms},
    {"check_ms", &JobPhases::check_ms},     {"timing_ms", &JobPhases::timing_ms},
    {"sandbox_ms", &JobPhases::sandbox_ms}, {"idle_ms", &JobPhases::idle_ms},
    {"total_ms", &JobPhases::total_ms},     {"cores_idle_ms", &JobPhases::cores_idle_ms}};

inline JobPhases& operator+=(JobPhases& total, const JobPhases& part) {
  for (const PhaseField& f : kPhaseFields) total.*f.figure += part.*f.figure;
  return total;
}

// "parse 1.2 ms, reference 30.0 ms, ..." for logs: every figure that is not zero.
std::string DescribePhases(const JobPhases& phases);

// What the job found ready in the worker's caches (worker/job_runner.h) and what it had to make.
struct JobReuse {
  int kernels_compiled = 0;
  int kernels_reused = 0;
  int reference_nodes_evaluated = 0;  // 0: every reference output was kept from earlier jobs
};

inline JobReuse& operator+=(JobReuse& total, const JobReuse& part) {
  total.kernels_compiled += part.kernels_compiled;
  total.kernels_reused += part.kernels_reused;
  total.reference_nodes_evaluated += part.reference_nodes_evaluated;
  return total;
}

struct JobResult {
  int64_t id = 0;
  std::string target;  // fingerprint of the machine that measured
  std::vector<PlanResult> plans;
  JobPhases phases;
  JobReuse reuse;
};

std::string JobToJson(const MeasureJob& job);
MeasureJob JobFromJson(const std::string& json);  // throws UserError
std::string ResultToJson(const JobResult& result);
JobResult ResultFromJson(const std::string& json);  // throws UserError

// Every plan of `job` marked failed with `reason` (a crash or timeout of the sandbox).
JobResult FailedResult(const MeasureJob& job, const std::string& reason);

}  // namespace fusetune
