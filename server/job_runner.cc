#include "server/job_runner.h"

#include <algorithm>
#include <chrono>

#include "ir/error.h"

namespace fusetune {

JobRunner::JobRunner(MeasurementBackend& backend, const TuneOptions& options,
                     const ProgressFn& progress)
    : backend_(backend),
      options_(options),
      progress_(progress),
      target_(backend.TargetFingerprint()) {}

std::vector<JobResult> JobRunner::Run(const std::string& phase, std::vector<MeasureJob> jobs) {
  for (size_t i = 0; i < jobs.size(); ++i) {
    jobs[i].id = static_cast<int64_t>(i + 1);
    jobs[i].threads = options_.search.threads;
    jobs[i].timing = options_.timing;
  }
  const auto start = std::chrono::steady_clock::now();
  if (progress_) progress_({phase, 0, jobs.size()});
  std::vector<JobResult> results = backend_.RunJobs(jobs, [&](size_t done) {
    if (progress_) progress_({phase, done, jobs.size()});
  });
  FT_CHECK(results.size() == jobs.size(), "backend returned a result count that differs from jobs");
  for (size_t i = 0; i < jobs.size(); ++i)
    if (results[i].plans.size() != jobs[i].plans.size())
      results[i] = FailedResult(jobs[i], "the worker answered for a different set of plans");
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  auto stage =
      std::find_if(stages_.begin(), stages_.end(), [&](const auto& s) { return s.first == phase; });
  if (stage == stages_.end()) stage = stages_.insert(stages_.end(), {phase, 0.0});
  stage->second += seconds;
  for (const JobResult& r : results) job_phases_ += r.phases;
  return results;
}

}  // namespace fusetune
