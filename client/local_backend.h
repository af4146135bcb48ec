#pragma once
// `--local`: measurement jobs run one at a time in a sandbox child process of this binary. The
// embedded default: no daemons, one machine.
#include <chrono>

#include "server/tuner.h"
#include "worker/sandbox.h"

namespace fusetune::cli {

class LocalBackend : public MeasurementBackend {
 public:
  explicit LocalBackend(std::chrono::milliseconds job_time_limit = std::chrono::seconds(120))
      : sandbox_(job_time_limit) {}
  std::string TargetFingerprint() override;
  std::vector<JobResult> RunJobs(const std::vector<MeasureJob>& jobs,
                                 const std::function<void(size_t finished)>& on_done) override;

 private:
  Sandbox sandbox_;
};

}  // namespace fusetune::cli
