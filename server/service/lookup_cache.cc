#include "server/service/lookup_cache.h"

#include <set>

#include <fmt/format.h>

#include "ir/text/signature.h"

namespace fusetune::service {

std::string LookupCache::KeyOf(const v1::LookupBestRequest& request, const std::string& target) {
  return Hash128Hex(request.SerializeAsString() + '\0' + target);
}

std::vector<db::BestPlanKey> LookupCache::PlanKeysOf(const v1::LookupBestResponse& response,
                                                     int threads, int search_version) {
  std::set<std::string> signatures;
  for (const v1::RegionResult& r : response.regions()) signatures.insert(r.signature());
  std::vector<db::BestPlanKey> keys;
  for (const std::string& s : signatures)
    keys.push_back({s, response.target(), threads, search_version});
  return keys;
}

std::vector<std::string> LookupCache::Stamps(const std::vector<db::BestPlanKey>& plans,
                                             const db::Cache& cache) {
  std::vector<std::string> stamps;
  stamps.reserve(plans.size());
  for (const db::BestPlanKey& key : plans) {
    std::optional<db::BestPlanRecord> plan = cache.FindBestPlan(key);
    stamps.push_back(plan ? fmt::format("{}|{}|{}|{}|{}|{}", plan->created_at, plan->chosen,
                                        plan->tuned_us, plan->greedy_us, plan->unfused_us,
                                        db::GroupsToJson(plan->groups))
                          : std::string());
  }
  return stamps;
}

std::optional<v1::LookupBestResponse> LookupCache::Find(const std::string& key,
                                                        const db::Cache& cache) {
  std::vector<db::BestPlanKey> plans;
  std::vector<std::string> stamps;
  {
    std::lock_guard lock(mutex_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return std::nullopt;
    plans = it->second.plans;
    stamps = it->second.stamps;
  }
  if (Stamps(plans, cache) != stamps) return std::nullopt;  // a plan changed: compute again
  std::lock_guard lock(mutex_);
  auto it = entries_.find(key);
  if (it == entries_.end()) return std::nullopt;
  lru_.splice(lru_.begin(), lru_, it->second.lru);
  return it->second.response;
}

void LookupCache::Put(const std::string& key, const v1::LookupBestResponse& response,
                      std::vector<db::BestPlanKey> plans, const db::Cache& cache) {
  // Stamped after the answer was computed, so a plan stored in between could make the stamps
  // newer than the answer: it is cached only when every region's figures agree with its stamp.
  std::vector<std::string> stamps = Stamps(plans, cache);
  for (const v1::RegionResult& r : response.regions()) {
    // A transferred answer depends on every stored member of the family, which the stamps do
    // not cover (a nearer size tuned later would not show): it is computed each time.
    if (!r.transferred_from().empty()) return;
    size_t i = 0;
    while (i < plans.size() && plans[i].region_signature != r.signature()) ++i;
    if (i == plans.size()) return;
    const std::string& stamp = stamps[i];
    if (stamp.empty() != !r.found()) return;
    if (r.found() && stamp.find(fmt::format("|{}|{}|{}|{}|", r.chosen(), r.tuned_us(),
                                            r.greedy_us(), r.unfused_us())) == std::string::npos)
      return;
  }
  std::lock_guard lock(mutex_);
  if (auto it = entries_.find(key); it != entries_.end()) {
    lru_.erase(it->second.lru);
    entries_.erase(it);
  }
  lru_.push_front(key);
  entries_[key] = Entry{response, std::move(plans), std::move(stamps), lru_.begin()};
  while (entries_.size() > capacity_) {
    entries_.erase(lru_.back());
    lru_.pop_back();
  }
}

}  // namespace fusetune::service
