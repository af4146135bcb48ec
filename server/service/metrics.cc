#include "server/service/metrics.h"

#include <chrono>
#include <sstream>

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include "db/cache.h"
#include "db/job_queue.h"
#include "ir/version.h"

namespace fusetune::service {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// LookupBest answers from memory in tens of microseconds and from SQLite plus a graph parse in
// milliseconds; a second is pathological.
const prometheus::Histogram::BucketBoundaries kLookupBuckets = {
    50e-6, 100e-6, 250e-6, 500e-6, 1e-3,   2.5e-3, 5e-3,
    10e-3, 25e-3,  50e-3,  100e-3, 250e-3, 0.5,    1.0};

}  // namespace

ServiceMetrics::ServiceMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  tasks_ = &BuildGauge()
                .Name("fusetune_tasks")
                .Help("Tasks in the store by state (read from the store at scrape time)")
                .Register(r);
  for (const char* s : {"queued", "running", "done", "failed", "cancelled"})
    task_gauges_[s] = &tasks_->Add({{"state", s}});
  jobs_ = &BuildGauge()
               .Name("fusetune_jobs")
               .Help("Measurement jobs in the durable queue by state (read at scrape time)")
               .Register(r);
  for (const char* s : {"queued", "leased", "done", "failed"})
    job_gauges_[s] = &jobs_->Add({{"state", s}});
  workers_ = &BuildGauge()
                  .Name("fusetune_workers")
                  .Help("Registered workers by target fingerprint and state (read at scrape time)")
                  .Register(r);
  best_plans_ = &BuildGauge()
                     .Name("fusetune_best_plans")
                     .Help("Best plans cached in the store (read at scrape time)")
                     .Register(r)
                     .Add({});
  refresh_seconds_ = &BuildGauge()
                          .Name("fusetune_store_scrape_seconds")
                          .Help("Time the last scrape spent counting in the store")
                          .Register(r)
                          .Add({});

  auto& measured = BuildCounter()
                       .Name("fusetune_measurements_total")
                       .Help(
                           "Plans timed by workers and reported to this server process, by "
                           "status; rate() of it is measurements per second")
                       .Register(r);
  measurements_ok_ = &measured.Add({{"status", "ok"}});
  measurements_invalid_ = &measured.Add({{"status", "invalid"}});
  failed_attempts_ = &BuildCounter()
                          .Name("fusetune_job_attempts_failed_total")
                          .Help(
                              "Job attempts a worker could not finish (sandbox crash, timeout); "
                              "the job is retried or fails when out of attempts")
                          .Register(r)
                          .Add({});
  auto& lookups = BuildCounter()
                      .Name("fusetune_cache_lookups_total")
                      .Help("Regions looked up by LookupBest, by whether a best plan was cached")
                      .Register(r);
  lookup_hits_ = &lookups.Add({{"result", "hit"}});
  lookup_misses_ = &lookups.Add({{"result", "miss"}});
  submitted_ = &BuildCounter()
                    .Name("fusetune_tasks_submitted_total")
                    .Help("Tasks accepted by SubmitTune in this server process")
                    .Register(r)
                    .Add({});
  lookup_seconds_ = &BuildHistogram()
                         .Name("fusetune_lookup_duration_seconds")
                         .Help("Latency of LookupBest requests that were answered")
                         .Register(r)
                         .Add({}, kLookupBuckets);
  BuildGauge()
      .Name("fusetune_build_info")
      .Help("Always 1; the labels name the running build")
      .Register(r)
      .Add({{"version", Version()}})
      .Set(1);
  BuildGauge()
      .Name("fusetune_start_time_seconds")
      .Help("When this server process started, in Unix seconds")
      .Register(r)
      .Add({})
      .SetToCurrentTime();
}

ServiceMetrics::~ServiceMetrics() = default;

void ServiceMetrics::ObserveLookup(double seconds, int64_t hits, int64_t misses) {
  lookup_seconds_->Observe(seconds);
  if (hits > 0) lookup_hits_->Increment(static_cast<double>(hits));
  if (misses > 0) lookup_misses_->Increment(static_cast<double>(misses));
}

void ServiceMetrics::CountMeasurements(int64_t ok, int64_t invalid) {
  if (ok > 0) measurements_ok_->Increment(static_cast<double>(ok));
  if (invalid > 0) measurements_invalid_->Increment(static_cast<double>(invalid));
}

void ServiceMetrics::CountFailedAttempt() { failed_attempts_->Increment(); }

void ServiceMetrics::CountSubmittedTask() { submitted_->Increment(); }

void ServiceMetrics::RefreshFromStore(const db::Cache& cache, const db::JobQueue& queue) {
  auto start = std::chrono::steady_clock::now();
  db::TaskCounts tasks = queue.CountTasks();
  task_gauges_["queued"]->Set(static_cast<double>(tasks.queued));
  task_gauges_["running"]->Set(static_cast<double>(tasks.running));
  task_gauges_["done"]->Set(static_cast<double>(tasks.done));
  task_gauges_["failed"]->Set(static_cast<double>(tasks.failed));
  task_gauges_["cancelled"]->Set(static_cast<double>(tasks.cancelled));

  // Index-only counts, whatever the store's size.
  db::JobCounts jobs = queue.CountJobs();
  job_gauges_["queued"]->Set(static_cast<double>(jobs.queued));
  job_gauges_["leased"]->Set(static_cast<double>(jobs.leased));
  job_gauges_["done"]->Set(static_cast<double>(jobs.done));
  job_gauges_["failed"]->Set(static_cast<double>(jobs.failed));
  best_plans_->Set(static_cast<double>(cache.QuickStats().best_plans));

  std::map<std::pair<std::string, std::string>, int64_t> counts;
  for (const db::WorkerRecord& w : queue.ListWorkers()) {
    // Both states of a target get a series, so "offline" reads 0 rather than vanishing.
    counts[{w.target_fingerprint, "online"}] += 0;
    counts[{w.target_fingerprint, "offline"}] += 0;
    counts[{w.target_fingerprint, std::string(db::WorkerStateName(w.state))}] += 1;
  }
  for (auto& [key, gauge] : worker_gauges_) gauge->Set(0);
  for (const auto& [key, n] : counts) {
    prometheus::Gauge*& gauge = worker_gauges_[key];
    if (gauge == nullptr) gauge = &workers_->Add({{"target", key.first}, {"state", key.second}});
    gauge->Set(static_cast<double>(n));
  }
  refresh_seconds_->Set(
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
}

std::string ServiceMetrics::Scrape(const db::Cache& cache, const db::JobQueue& queue) {
  std::lock_guard lock(scrape_mutex_);
  RefreshFromStore(cache, queue);
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace fusetune::service
