#pragma once
// Runs measurement jobs (worker/job.h) in this process, one at a time, and keeps for its life
// what a later job can reuse: one JIT, the compiled kernels (worker/kernel_cache.h) and the
// reference values (worker/reference_cache.h). The sandbox child holds one for as long as it
// lives; a crash takes the caches with it, and the next child starts empty.
//
// Timing is the worker's choice within what the job asks (repeat length, at most `repeat`
// repeats): adaptive, and racing the plans of one job against each other (JobTiming).
#include <memory>

#include "worker/job.h"
#include "worker/kernel_cache.h"
#include "worker/reference_cache.h"

namespace fusetune {

namespace codegen {
class Jit;
}

// The timing of a job's plans: the job's warm-up, repeat length and most repeats; adaptive from
// 3 repeats; racing against `best_us`, the fastest plan of the job so far (0: none yet). The
// check has just run the plan once, in `check_call_ms`: that counts as one warm-up call, and as
// all of them when it lasted a repeat (a call that long has touched everything it will touch).
TimingOptions JobTiming(const TimingOptions& asked, double best_us, double check_call_ms = 0);

class JobRunner {
 public:
  JobRunner();
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Parses the job, gets its inputs and reference outputs, then compiles, checks and times each
  // plan. A kernel that cannot be compiled or computes a wrong result is a failed PlanResult with
  // its reason, never a time; a job that cannot be read throws UserError.
  JobResult Run(const MeasureJob& job);

  const KernelCache& kernels() const { return kernels_; }
  const ReferenceCache& references() const { return references_; }

 private:
  std::unique_ptr<codegen::Jit> jit_;  // made by the first job, so its cost is that job's setup
  KernelCache kernels_;
  ReferenceCache references_;
};

}  // namespace fusetune
