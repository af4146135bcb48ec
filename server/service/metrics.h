#pragma once
// The service's Prometheus instruments (docs/observability.md lists them). Counters and the lookup
// histogram are updated by the handlers as things happen; the gauges that describe the store
// (tasks, jobs and workers by state) are refreshed from it when /metrics is scraped, so they are
// right even for work done by an earlier server process on the same file.
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

namespace prometheus {
class Registry;
class Counter;
class Gauge;
class Histogram;
template <typename T>
class Family;
}  // namespace prometheus

namespace fusetune::db {
class Cache;
class JobQueue;
}  // namespace fusetune::db

namespace fusetune::service {

class ServiceMetrics {
 public:
  ServiceMetrics();
  ~ServiceMetrics();
  ServiceMetrics(const ServiceMetrics&) = delete;
  ServiceMetrics& operator=(const ServiceMetrics&) = delete;

  // One LookupBest answered: its latency and how many regions it found cached / missing.
  void ObserveLookup(double seconds, int64_t hits, int64_t misses);
  // A worker's accepted report: how many plans it timed, and how many of them were invalid.
  void CountMeasurements(int64_t ok, int64_t invalid);
  // A worker could not measure a job (sandbox crash, timeout): the attempt is retried.
  void CountFailedAttempt();
  void CountSubmittedTask();

  // Reads the store's counts into the gauges, then renders every family in the Prometheus text
  // format 0.0.4. Safe to call from several threads.
  std::string Scrape(const db::Cache& cache, const db::JobQueue& queue);

 private:
  void RefreshFromStore(const db::Cache& cache, const db::JobQueue& queue);

  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Gauge>* tasks_ = nullptr;
  prometheus::Family<prometheus::Gauge>* jobs_ = nullptr;
  prometheus::Family<prometheus::Gauge>* workers_ = nullptr;
  std::map<std::string, prometheus::Gauge*> task_gauges_, job_gauges_;
  // (target, state) -> gauge; a target seen once keeps its series (at 0 when it has no worker).
  std::map<std::pair<std::string, std::string>, prometheus::Gauge*> worker_gauges_;
  prometheus::Gauge* best_plans_ = nullptr;
  prometheus::Gauge* refresh_seconds_ = nullptr;
  prometheus::Counter* measurements_ok_ = nullptr;
  prometheus::Counter* measurements_invalid_ = nullptr;
  prometheus::Counter* failed_attempts_ = nullptr;
  prometheus::Counter* lookup_hits_ = nullptr;
  prometheus::Counter* lookup_misses_ = nullptr;
  prometheus::Counter* submitted_ = nullptr;
  prometheus::Histogram* lookup_seconds_ = nullptr;
  std::mutex scrape_mutex_;  // one refresh + render at a time
};

}  // namespace fusetune::service
