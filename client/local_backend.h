#pragma once
// `--local`: measurement jobs run one at a time in a sandbox child process of this binary, each
// with the next one sent along so the child compiles it while this one is timed. The
// embedded default: no daemons, one machine. With `--log-level debug` it logs where the time of
// each batch of jobs went (worker/job.h JobPhases), and the time between batches, which is the
// tuner's own (search, store writes).
#include <chrono>
#include <optional>

#include "server/tuner.h"
#include "worker/sandbox.h"

namespace fusetune::cli {

class LocalBackend : public MeasurementBackend {
 public:
  explicit LocalBackend(std::chrono::milliseconds job_time_limit = std::chrono::seconds(120))
      : sandbox_(job_time_limit) {}
  ~LocalBackend() override;
  std::string TargetFingerprint() override;
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t finished)>& on_done) override;

 private:
  Sandbox sandbox_;
  JobPhases total_;  // over every job so far
  JobReuse reuse_;
  double jobs_ms_ = 0, between_ms_ = 0;
  size_t jobs_run_ = 0;
  std::optional<std::chrono::steady_clock::time_point> last_batch_end_;
};

}  // namespace fusetune::cli
