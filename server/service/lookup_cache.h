#pragma once
// LookupBest by graph costs the graph's region enumeration (about 1.5 ms for a BERT layer), yet
// its answer changes only when the stored plan of one of its regions does. This cache keeps, per
// request (graph, options, target, threads), the answer and a stamp of each region's stored plan;
// a hit re-reads those plans (keyed reads, microseconds) and is served only when none changed, so
// a cached answer is never stale.
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "db/cache.h"
#include "proto/fusetune.pb.h"

namespace fusetune::service {

class LookupCache {
 public:
  explicit LookupCache(size_t capacity = 256) : capacity_(capacity) {}

  // A request's cache key.
  static std::string KeyOf(const v1::LookupBestRequest& request, const std::string& target);
  // The plan keys a response depends on: one per region, with the response's target/threads.
  static std::vector<db::BestPlanKey> PlanKeysOf(const v1::LookupBestResponse& response,
                                                 int threads, int search_version);

  std::optional<v1::LookupBestResponse> Find(const std::string& key, const db::Cache& cache);
  void Put(const std::string& key, const v1::LookupBestResponse& response,
           std::vector<db::BestPlanKey> plans, const db::Cache& cache);

 private:
  struct Entry {
    v1::LookupBestResponse response;
    std::vector<db::BestPlanKey> plans;
    std::vector<std::string> stamps;  // per plan: what the store held ("" = nothing)
    std::list<std::string>::iterator lru;
  };
  static std::vector<std::string> Stamps(const std::vector<db::BestPlanKey>& plans,
                                         const db::Cache& cache);

  size_t capacity_;
  std::mutex mutex_;
  std::list<std::string> lru_;  // most recent first
  std::unordered_map<std::string, Entry> entries_;
};

}  // namespace fusetune::service
