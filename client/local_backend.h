#pragma once
// `--local`: measurement jobs run one at a time in a sandbox child process of this binary, each
// with the next jobs of its batch sent along (windows of JobsAhead()) so the child compiles them
// while this one is timed, on every core a timing leaves free, or in one go between timings. The
// embedded default: no daemons, one machine. With `--log-level debug` it logs where the time of
// each batch of jobs went (worker/job.h JobPhases), and the time between batches, which is the
// tuner's own (search, store writes).
#include <chrono>
#include <optional>

#include "server/tuner.h"
#include "worker/sandbox.h"

namespace fusetune::cli {

// How many jobs go ahead of the one running, sent in windows of that many (at least 1):
// FUSETUNE_JOBS_AHEAD when set, else 6. At 2 threads a timing takes every core, so compiles run
// only between timings, and each timing waited for the compiles already running with a core
// idle; the child now compiles a window's kernels in one go on both cores before the first
// timing (worker/prep_pool.h). BENCHMARKS.md "Tuning time", "Jobs sent ahead".
int JobsAhead();

class LocalBackend : public MeasurementBackend {
 public:
  explicit LocalBackend(std::chrono::milliseconds job_time_limit = std::chrono::seconds(120),
                        int jobs_ahead = JobsAhead())
      : sandbox_(job_time_limit), jobs_ahead_(jobs_ahead) {}
  ~LocalBackend() override;
  std::string TargetFingerprint() override;
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t finished)>& on_done) override;

 private:
  Sandbox sandbox_;
  int jobs_ahead_;
  JobPhases total_;  // over every job so far
  JobReuse reuse_;
  double jobs_ms_ = 0, between_ms_ = 0;
  size_t jobs_run_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_batch_end_;
};

}  // namespace fusetune::cli
