#include "client/local_backend.h"

#include "worker/codegen/target.h"

namespace fusetune::cli {

std::string LocalBackend::TargetFingerprint() { return codegen::HostTarget().Fingerprint(); }

std::vector<JobResult> LocalBackend::RunJobs(const std::vector<MeasureJob>& jobs,
                                             const std::function<void(size_t finished)>& on_done) {
  std::vector<JobResult> results;
  results.reserve(jobs.size());
  for (const MeasureJob& job : jobs) {
    results.push_back(sandbox_.Run(job));
    if (on_done) on_done(results.size());
  }
  return results;
}

}  // namespace fusetune::cli
