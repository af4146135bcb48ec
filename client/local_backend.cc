#include "client/local_backend.h"

#include <spdlog/spdlog.h>

#include "worker/codegen/target.h"

namespace fusetune::cli {
namespace {

double MsBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

LocalBackend::~LocalBackend() {
  if (jobs_run_ == 0) return;
  spdlog::debug(
      "measurement: {} jobs in {:.0f} ms, the tuner between batches {:.0f} ms; {}; kernels "
      "compiled {}, reused {}; reference nodes evaluated {}",
      jobs_run_, jobs_ms_, between_ms_, DescribePhases(total_), reuse_.kernels_compiled,
      reuse_.kernels_reused, reuse_.reference_nodes_evaluated);
}

std::string LocalBackend::TargetFingerprint() { return codegen::HostTarget().Fingerprint(); }

std::vector<JobResult> LocalBackend::RunJobs(const std::vector<MeasureJob>& jobs,
                                             const std::function<void(size_t finished)>& on_done) {
  const auto start = std::chrono::steady_clock::now();
  if (last_batch_end_) between_ms_ += MsBetween(*last_batch_end_, start);
  std::vector<JobResult> results;
  results.reserve(jobs.size());
  JobPhases batch;
  for (const MeasureJob& job : jobs) {
    results.push_back(sandbox_.Run(job));
    batch += results.back().phases;
    reuse_ += results.back().reuse;
    if (on_done) on_done(results.size());
  }
  const auto end = std::chrono::steady_clock::now();
  last_batch_end_ = end;
  jobs_ms_ += MsBetween(start, end);
  jobs_run_ += jobs.size();
  total_ += batch;
  spdlog::debug("{} jobs in {:.0f} ms: {}", jobs.size(), MsBetween(start, end),
                DescribePhases(batch));
  return results;
}

}  // namespace fusetune::cli
