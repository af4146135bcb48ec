#include "server/plan_transfer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/error.h"
#include "ir/text/family.h"
#include "ir/text/plan_transfer.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

struct StoredMember {
  const db::BestPlanRecord* record;
  FamilyMember member;
  std::vector<int64_t> here_sizes;  // this region's size of each of the member's symbols
};

// The stored members this region could take a plan from, unreadable ones skipped, nearest first
// (RankByNearness's order: distance, then the larger member, then the smaller binding). `here`'s
// family or, with `loose`, its family without equalities when it keeps the member's.
// `refused`: the first member (with `loose`) whose sizes coincide where here's differ.
std::vector<StoredMember> ReadMembers(const std::vector<db::BestPlanRecord>& records,
                                      const FamilyForm& here, bool loose, std::string* refused) {
  std::vector<StoredMember> out;
  for (const db::BestPlanRecord& rec : records) {
    try {
      StoredMember m{&rec, ReadFamilyMember(rec.region_text), here.binding};
      std::string conflict;
      if (loose && !EqualitiesRefine(m.member.family, here, &m.here_sizes, &conflict)) {
        if (refused && refused->empty() && !conflict.empty())
          *refused =
              fmt::format("tuned at {}, where {}", BindingText(m.member.family.binding), conflict);
        continue;
      }
      out.push_back(std::move(m));
    } catch (const UserError& e) {
      spdlog::debug("family member {} skipped: {}", rec.key.region_signature, e.what());
    }
  }
  struct Key {
    double distance, log_size;
  };
  std::vector<Key> keys;
  for (const StoredMember& m : out) {
    double log_size = 0;
    for (int64_t s : m.member.family.binding) log_size += std::log(static_cast<double>(s));
    keys.push_back({BindingDistance(m.here_sizes, m.member.family.binding), log_size});
  }
  std::vector<size_t> order(out.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  constexpr double kSame = 1e-9;  // sums of logs: equal ones may differ in the last bits
  std::sort(order.begin(), order.end(), [&](size_t x, size_t y) {
    if (std::fabs(keys[x].distance - keys[y].distance) > kSame)
      return keys[x].distance < keys[y].distance;
    if (std::fabs(keys[x].log_size - keys[y].log_size) > kSame)
      return keys[x].log_size > keys[y].log_size;
    return out[x].member.family.binding < out[y].member.family.binding;
  });
  std::vector<StoredMember> sorted;
  for (size_t i : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

// The region's family without equalities: stored plans with the region's ops (as a multiset).
std::vector<db::BestPlanRecord> LooseCandidates(const Graph& g, const TuneRegion& region,
                                                const TuneCache& cache) {
  std::vector<std::string> ops = OpsOf(g, region.region.nodes);
  std::sort(ops.begin(), ops.end());
  std::vector<db::BestPlanRecord> records = cache.FindPlansWithOp(ops.front());
  std::erase_if(records, [&](db::BestPlanRecord& rec) {
    std::vector<std::string> theirs = rec.ops;
    std::sort(theirs.begin(), theirs.end());
    return theirs != ops;
  });
  return records;
}

std::vector<MemberGroup> GroupsOf(const db::BestPlanRecord& rec) {
  std::vector<MemberGroup> out;
  for (const db::StoredGroup& g : rec.groups) out.push_back({g.nodes, g.schedule});
  return out;
}

void Answer(RegionReport& report, std::vector<PlanGroup> plan, const FamilyTransfer& t) {
  constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  report.plan = std::move(plan);
  report.chosen = t.member.chosen;
  report.transferred_from = t.from;
  report.tuned_us = report.greedy_us = report.unfused_us = kNotMeasured;
}

}  // namespace

std::optional<FamilyTransfer> FindFamilyTransfer(const RequestPolicy& policy,
                                                 const std::vector<TuneRegion>& regions, size_t r,
                                                 const TuneCache& cache, bool other_sizes_only,
                                                 std::string* refused) {
  const Graph& g = policy.graph();
  const FamilyForm here = CanonicalizeFamily(g, regions[r].region.nodes);
  // The family's members first; when none answers, the family without equalities (a size that
  // happens to equal another here, such as S = the head size, makes another family).
  for (const bool loose : {false, true}) {
    std::vector<db::BestPlanRecord> records =
        loose ? LooseCandidates(g, regions[r], cache) : cache.FindFamilyPlans(here.key);
    std::erase_if(records, [&](const db::BestPlanRecord& rec) {
      return (loose && rec.family_key == here.key) ||
             (other_sizes_only && rec.key.region_signature == regions[r].signature);
    });
    for (const StoredMember& m : ReadMembers(records, here, loose, refused)) {
      const std::vector<MemberGroup> groups = GroupsOf(*m.record);
      FamilyTransfer t;
      t.from = TransferSizesText(m.here_sizes, m.member.family.binding);
      if (t.from.empty()) t.from = BindingText(m.member.family.binding);
      std::string why_not;
      try {
        for (size_t s = r; s < regions.size() && why_not.empty(); ++s) {
          if (regions[s].representative != r) continue;
          const FamilyForm form = s == r ? here : CanonicalizeFamily(g, regions[s].region.nodes);
          std::vector<PlanGroup> plan =
              TransferPlan(g, form, m.member, groups, policy.options().threads);
          if (policy.MayReuse(plan, &why_not)) t.plans.emplace_back(s, std::move(plan));
        }
      } catch (const UserError& e) {
        why_not = e.what();
      }
      if (!why_not.empty()) {
        spdlog::debug("region {}: the plan of member {} ({}) does not transfer: {}",
                      regions[r].signature, m.record->key.region_signature, t.from, why_not);
        continue;
      }
      if (spdlog::should_log(spdlog::level::debug))
        spdlog::debug("region {}: no stored plan; transferred {} from member {} ({}{})",
                      regions[r].signature, PlanText(g, t.plans.front().second),
                      m.record->key.region_signature, t.from,
                      loose ? ", a family with fewer equal sizes" : "");
      t.member = *m.record;
      return t;
    }
  }
  return std::nullopt;
}

std::vector<size_t> TransferFamilyPlans(const RequestPolicy& policy,
                                        const std::vector<TuneRegion>& regions,
                                        const std::vector<size_t>& missing, const TuneCache& cache,
                                        std::vector<RegionReport>& reports) {
  std::vector<size_t> still_missing;
  for (size_t r : missing) {
    std::string refused;
    std::optional<FamilyTransfer> t =
        FindFamilyTransfer(policy, regions, r, cache, false, &refused);
    if (!t) {
      still_missing.push_back(r);
      for (size_t s = r; s < regions.size(); ++s)
        if (regions[s].representative == r) reports[s].transfer_refused = refused;
      continue;
    }
    for (auto& [s, plan] : t->plans) Answer(reports[s], std::move(plan), *t);
  }
  return still_missing;
}

}  // namespace fusetune
