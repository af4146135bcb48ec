#include "client/local_backend.h"

#include <algorithm>
#include <cstdlib>
#include <span>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "worker/codegen/target.h"

namespace fusetune::cli {
namespace {

double MsBetween(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int JobsAhead() {
  if (const char* n = std::getenv("FUSETUNE_JOBS_AHEAD")) return std::max(0, std::atoi(n));
  return 6;
}

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
  for (size_t i = 0; i < jobs.size(); ++i) {
    const MeasureJob& job = jobs[i];
    // Sent in windows of jobs_ahead_: the jobs i + 1 up to the end of the next window, which the
    // child then compiles in one go (worker/prep_pool.h), and never fewer than one ahead.
    const size_t window = std::max<size_t>(1, jobs_ahead_);
    const size_t end = std::min(jobs.size(), (i / window + 1) * window + 1);
    results.push_back(sandbox_.Run(job, std::span(jobs).subspan(i + 1, end - i - 1)));
    if (spdlog::should_log(spdlog::level::trace)) {
      std::string plans;
      for (const PlanResult& p : results.back().plans)
        plans += fmt::format("; {} {:.1f} us x{}x{} (compile {:.0f} ms, timing {:.0f} ms)", p.name,
                             p.median_us, p.number, p.repeat, p.compile_ms, p.timing_ms);
      spdlog::trace("job {}: {}{}", job.id, DescribePhases(results.back().phases), plans);
    }
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
