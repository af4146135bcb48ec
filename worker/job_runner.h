#pragma once
// Runs measurement jobs (worker/job.h) in this process, one at a time, and keeps for its life
// what a later job can reuse: one JIT, the compiled kernels (worker/kernel_cache.h) and the
// reference values (worker/reference_cache.h). The sandbox child holds one for as long as it
// lives; a crash takes the caches with it, and the next child starts empty.
//
// Timing is the worker's choice within what the job asks (repeat length, at most `repeat`
// repeats): adaptive, and racing the plans of one job against each other, except in a job a
// decision rests on (JobTiming).
//
// Compiling and the reference run ahead on a PrepPool (worker/prep_pool.h): Prepare(job) queues
// the job's reference and its kernels as soon as the job is known (the sandbox child calls it for
// the next job while the current one runs), and Run waits only for what is not ready yet. A
// job's kernels compile in parallel with each other, all of them before its first plan is timed
// (no plan is timed beside a compile of its own job), and with a 1-thread timing on a machine of
// two cores the next job's compile overlaps this job's timing; a timing never shares its cores
// with a compile (PrepPool::Timing). A kernel compiled ahead is the one the executor would compile
// (worker/executor.h PlanKernels), kept in the kernel cache under the same key.
#include <exception>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "ir/graph.h"
#include "worker/checked_executors.h"
#include "worker/executor.h"
#include "worker/job.h"
#include "worker/kernel_cache.h"
#include "worker/prep_pool.h"
#include "worker/reference_cache.h"

namespace fusetune {

namespace codegen {
class Jit;
}

// The timing of a job's plans: the job's warm-up, repeat length and most repeats; adaptive from
// 3 repeats; racing against `best_us`, the fastest plan of the job so far (0: none yet). The
// check has just run the plan once, in `check_call_ms`: that counts as one warm-up call, and as
// all of them when it lasted a repeat (a call that long has touched everything it will touch);
// nullopt when no check ran (the plan was checked in an earlier job): every warm-up call.
// A job timed `alone` (MeasureJob::alone: a decision rests on it) does not race.
TimingOptions JobTiming(const TimingOptions& asked, double best_us,
                        std::optional<double> check_call_ms = 0, bool alone = false);

// The threads of a JobRunner's PrepPool: FUSETUNE_PREP_THREADS when set (0: compile and
// interpret on the job's own thread, one kernel at a time), else the cores this process may use.
int DefaultPrepThreads();

class JobRunner {
 public:
  explicit JobRunner(int prep_threads = DefaultPrepThreads());
  ~JobRunner();
  JobRunner(const JobRunner&) = delete;
  JobRunner& operator=(const JobRunner&) = delete;

  // Queues the work `job` will need (its reference values, then its kernels) on the pool, to be
  // done before or while earlier jobs run. Thread-safe, and only a head start: Run does whatever
  // was not prepared. A job that cannot be read is left to Run to report.
  void Prepare(const MeasureJob& job);

  // Parses the job, gets its inputs and reference outputs, then compiles, checks and times each
  // plan. A kernel that cannot be compiled or computes a wrong result is a failed PlanResult with
  // its reason, never a time; a job that cannot be read throws UserError.
  JobResult Run(const MeasureJob& job);

  const KernelCache& kernels() const { return kernels_; }
  const ReferenceCache& references() const { return references_; }
  const PrepPool& pool() const { return pool_; }

 private:
  codegen::Jit& jit();  // made by the first job (prepared or run), so its cost is that job's
  // The kernel of `order` in the cache, being compiled, or queued now; counts a queued compile
  // as `job_id`'s. The future rethrows the compile's error.
  std::shared_future<void> EnsureKernel(std::shared_ptr<const Graph> graph, KernelOrder order,
                                        int threads, int64_t job_id);

  std::mutex jit_mutex_;
  std::unique_ptr<codegen::Jit> jit_;
  KernelCache kernels_;
  std::mutex reference_mutex_;  // the ReferenceCache is not thread-safe
  ReferenceCache references_;
  CheckedExecutors checked_;  // plans checked in earlier jobs, for their later rounds
  std::mutex mutex_;          // the maps below
  std::unordered_map<std::string, std::shared_future<void>> compiling_;  // by kernel key
  std::unordered_map<std::string, std::exception_ptr> failed_;           // by kernel key
  struct Prepared {  // what a job's preparation made, reported by its run
    int kernels_compiled = 0;
    int reference_evaluated = 0;
  };
  std::unordered_map<int64_t, Prepared> prepared_;  // by job id
  // A job's reference computed ahead, kept for its run, so the run never waits for the
  // interpreter working on a later job's reference (reference_mutex_).
  struct PreparedReference {
    std::shared_future<void> done;
    std::shared_ptr<ReferenceCache::Reference> value;
  };
  std::unordered_map<int64_t, PreparedReference> prepared_references_;  // by job id
  PrepPool pool_;  // last: its threads stop before anything they use is destroyed
};

}  // namespace fusetune
