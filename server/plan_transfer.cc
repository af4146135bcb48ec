#include "server/plan_transfer.h"

#include <cmath>
#include <limits>
#include <optional>

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
};

// The family's stored members this region could take a plan from, unreadable ones skipped.
std::vector<StoredMember> ReadMembers(const std::vector<db::BestPlanRecord>& records) {
  std::vector<StoredMember> out;
  for (const db::BestPlanRecord& rec : records) {
    try {
      out.push_back({&rec, ReadFamilyMember(rec.region_text)});
    } catch (const UserError& e) {
      spdlog::debug("family member {} skipped: {}", rec.key.region_signature, e.what());
    }
  }
  return out;
}

std::vector<MemberGroup> GroupsOf(const db::BestPlanRecord& rec) {
  std::vector<MemberGroup> out;
  for (const db::StoredGroup& g : rec.groups) out.push_back({g.nodes, g.schedule});
  return out;
}

void Answer(RegionReport& report, std::vector<PlanGroup> plan, const db::BestPlanRecord& rec,
            const std::string& from) {
  constexpr double kNotMeasured = std::numeric_limits<double>::quiet_NaN();
  report.plan = std::move(plan);
  report.chosen = rec.chosen;
  report.transferred_from = from;
  report.tuned_us = report.greedy_us = report.unfused_us = kNotMeasured;
}

// Every region with representative `r`'s signature answered by the nearest member that fits,
// or none.
bool TransferOne(const RequestPolicy& policy, const std::vector<TuneRegion>& regions, size_t r,
                 const TuneCache& cache, std::vector<RegionReport>& reports) {
  const Graph& g = policy.graph();
  const FamilyForm here = CanonicalizeFamily(g, regions[r].region.nodes);
  const std::vector<db::BestPlanRecord> records = cache.FindFamilyPlans(here.key);
  if (records.empty()) return false;
  const std::vector<StoredMember> members = ReadMembers(records);
  std::vector<std::vector<int64_t>> bindings;
  for (const StoredMember& m : members) bindings.push_back(m.member.family.binding);
  for (size_t i : RankByNearness(here.binding, bindings)) {
    const StoredMember& m = members[i];
    const std::vector<MemberGroup> groups = GroupsOf(*m.record);
    std::string from = TransferSizesText(here.binding, m.member.family.binding);
    if (from.empty()) from = BindingText(m.member.family.binding);
    std::vector<std::pair<size_t, std::vector<PlanGroup>>> answers;
    std::string why_not;
    try {
      for (size_t s = r; s < regions.size() && why_not.empty(); ++s) {
        if (regions[s].representative != r) continue;
        const FamilyForm form = s == r ? here : CanonicalizeFamily(g, regions[s].region.nodes);
        std::vector<PlanGroup> plan =
            TransferPlan(g, form, m.member, groups, policy.options().threads);
        if (policy.MayReuse(plan, &why_not)) answers.emplace_back(s, std::move(plan));
      }
    } catch (const UserError& e) {
      why_not = e.what();
    }
    if (!why_not.empty()) {
      spdlog::debug("region {}: the plan of member {} ({}) does not transfer: {}",
                    regions[r].signature, m.record->key.region_signature, from, why_not);
      continue;
    }
    if (spdlog::should_log(spdlog::level::debug))
      spdlog::debug("region {}: no stored plan; transferred {} from member {} ({})",
                    regions[r].signature, PlanText(g, answers.front().second),
                    m.record->key.region_signature, from);
    for (auto& [s, plan] : answers) Answer(reports[s], std::move(plan), *m.record, from);
    return true;
  }
  return false;
}

}  // namespace

std::vector<size_t> TransferFamilyPlans(const RequestPolicy& policy,
                                        const std::vector<TuneRegion>& regions,
                                        const std::vector<size_t>& missing, const TuneCache& cache,
                                        std::vector<RegionReport>& reports) {
  std::vector<size_t> still_missing;
  for (size_t r : missing)
    if (!TransferOne(policy, regions, r, cache, reports)) still_missing.push_back(r);
  return still_missing;
}

}  // namespace fusetune
