#include "server/warm_start.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <set>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/text/signature.h"
#include "server/noise.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

// (group, schedule) pairs the jobs of plan region `rs` measure; a group shared with an earlier
// region counts for the first only, as the search measures it once.
int SearchCandidates(const MeasurementPlan& plan, const RegionSearch& rs,
                     std::set<std::string>& counted) {
  int n = 0;
  for (const PlannedJob& pj : plan.jobs)
    if (std::find(rs.group_sigs.begin(), rs.group_sigs.end(), pj.signature) !=
            rs.group_sigs.end() &&
        counted.insert(pj.signature).second)
      n += static_cast<int>(pj.schedules.size());
  return n;
}

// kOnly: the warm regions leave the plan, with every job no remaining region needs.
void DropRegions(const std::set<size_t>& warm, MeasurementPlan& plan) {
  std::erase_if(plan.regions, [&](const RegionSearch& rs) { return warm.count(rs.region) > 0; });
  std::set<std::string> needed;
  for (const RegionSearch& rs : plan.regions)
    needed.insert(rs.group_sigs.begin(), rs.group_sigs.end());
  std::erase_if(plan.jobs, [&](const PlannedJob& pj) { return needed.count(pj.signature) == 0; });
}

// kSearch: the transferred plan's groups are measured first, with their adapted schedules among
// the schedules tried, and are never pruned by the budget.
void PreferFamilyGroups(const Graph& g, const std::vector<PlanGroup>& family,
                        const TuneCache& cache, MeasurementPlan& plan) {
  std::vector<std::string> first;
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(family);
  for (size_t gi = 0; gi < family.size(); ++gi) {
    const PlanGroup& pg = family[gi];
    const std::string sig = Signature(g, pg.nodes, recomputed[gi]);
    auto it = plan.groups.find(sig);
    if (it == plan.groups.end()) continue;  // not a candidate of this request
    GroupWork& gw = it->second;
    const std::string text = pg.schedule.ToString();
    size_t s = 0;
    while (s < gw.schedules.size() && gw.schedules[s].ToString() != text) ++s;
    const bool added = s == gw.schedules.size();
    if (added) {
      gw.schedules.push_back(pg.schedule);
      gw.median_us.push_back(std::numeric_limits<double>::infinity());
      gw.rel_error.push_back(0);
      gw.known.push_back(false);
      if (auto rec = cache.FindMeasurement(sig, text)) {
        gw.known[s] = true;
        if (rec->status == db::MeasurementStatus::kOk) {
          gw.median_us[s] = rec->median_us;
          gw.rel_error[s] = RelativeError(rec->median_us, rec->stddev_us, rec->repeat);
        }
      }
    }
    int unmeasured = 0;
    for (size_t k = 0; k < gw.schedules.size(); ++k) unmeasured += gw.known[k] ? 0 : 1;
    const bool was_pruned = plan.pruned.erase(sig) > 0;
    for (RegionSearch& rs : plan.regions) {
      if (std::find(rs.group_sigs.begin(), rs.group_sigs.end(), sig) == rs.group_sigs.end())
        continue;
      if (added) ++rs.candidates;
      if (was_pruned) rs.pruned = std::max(0, rs.pruned - (unmeasured - (added ? 1 : 0)));
    }
    if (was_pruned) plan.pruned_schedules -= unmeasured - (added ? 1 : 0);
    // The family's schedule first, then the others still unmeasured.
    std::vector<size_t> missing;
    if (!gw.known[s]) missing.push_back(s);
    for (size_t k = 0; k < gw.schedules.size(); ++k)
      if (k != s && !gw.known[k]) missing.push_back(k);
    std::erase_if(plan.jobs, [&](const PlannedJob& pj) { return pj.signature == sig; });
    if (!missing.empty()) plan.jobs.push_back(JobFor(g, gw, std::move(missing)));
    first.push_back(sig);
    spdlog::debug("warm start: {} ({}) measured first, schedule '{}'{}", NodesText(g, pg.nodes),
                  fmt::join(OpsOf(g, pg.nodes), ", "), text,
                  was_pruned ? ", kept under the budget" : "");
  }
  std::stable_partition(plan.jobs.begin(), plan.jobs.end(), [&](const PlannedJob& pj) {
    return std::find(first.begin(), first.end(), pj.signature) != first.end();
  });
}

}  // namespace

WarmStarts FindWarmStarts(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                          const std::vector<size_t>& to_search, WarmStart mode,
                          const TuneCache& cache) {
  WarmStarts out;
  if (mode == WarmStart::kOff) return out;
  const auto start = std::chrono::steady_clock::now();
  for (size_t r : to_search)
    if (std::optional<FamilyTransfer> t = FindFamilyTransfer(policy, regions, r, cache,
                                                             /*other_sizes_only=*/true))
      out.transfers.emplace(r, std::move(*t));
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

std::set<size_t> UnsearchedRegions(WarmStart mode, const WarmStarts& starts) {
  std::set<size_t> out;
  if (mode == WarmStart::kOnly)
    for (const auto& [region, transfer] : starts.transfers) out.insert(region);
  return out;
}

WarmStartResult WarmStartRegions(const RequestPolicy& policy,
                                 const std::vector<TuneRegion>& regions, WarmStart mode,
                                 WarmStarts starts, const TuneCache& cache, JobRunner& runner,
                                 MeasurementPlan& plan) {
  WarmStartResult out;
  if (mode == WarmStart::kOff) return out;
  const auto start = std::chrono::steady_clock::now();
  // The warm regions as a plan of their own, for the validation.
  MeasurementPlan warm_plan;
  std::vector<std::optional<Plan>> transferred;
  std::set<std::string> counted;
  for (const RegionSearch& rs : plan.regions) {
    auto t = starts.transfers.find(rs.region);
    if (t == starts.transfers.end()) continue;
    WarmRegion w;
    w.region = rs.region;
    w.search_candidates = SearchCandidates(plan, rs, counted);
    transferred.push_back(Plan{"tuned", t->second.plans.front().second});
    w.transfer = std::move(t->second);
    out.regions.push_back(std::move(w));
    warm_plan.regions.push_back(rs);
  }
  if (out.regions.empty()) return out;
  warm_plan.groups = plan.groups;  // the baselines' schedules: what the store knows
  const bool time_unfused = mode != WarmStart::kOnly;
  std::vector<RegionWinner> winners = ValidateRegions(
      policy, regions, warm_plan, transferred, runner, BaselineSchedules::kFromTuned, time_unfused);
  std::set<size_t> warm;
  for (size_t i = 0; i < out.regions.size(); ++i) {
    WarmRegion& w = out.regions[i];
    w.winner = std::move(winners[i]);
    // Answered by a member that could not pack the weights ahead, a warm-only region never
    // offered wpack; a warm start that goes on to search does.
    w.winner.wpack_offered = mode != WarmStart::kOnly || w.transfer.member.weights_bound;
    w.winner.decision = fmt::format(
        "warm start from {}, {}: {}", w.transfer.from,
        w.winner.plans[kUnfused] ? "baselines on its schedules"
                                 : "greedy on its schedules, unfused not timed (--warm-only)",
        w.winner.decision);
    warm.insert(w.region);
    spdlog::debug("region {}: {}", regions[w.region].signature, w.winner.decision);
    if (mode == WarmStart::kOnly)
      out.final_winners.push_back(w.winner);
    else
      PreferFamilyGroups(policy.graph(), w.transfer.plans.front().second, cache, plan);
  }
  if (mode == WarmStart::kOnly) DropRegions(warm, plan);
  out.seconds = starts.seconds +
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return out;
}

bool WarmOnlySkipsWholeGraph(WarmStart mode, const WarmStartResult& warm) {
  return mode == WarmStart::kOnly && !warm.regions.empty();
}

void AddWarmStartReports(const std::vector<TuneRegion>& regions, const WarmStartResult& warm,
                         bool searched, TuneReport& report) {
  for (const WarmRegion& w : warm.regions) {
    WarmStartReport wr;
    wr.from = w.transfer.from;
    wr.transferred_us = w.winner.us[kTuned];
    wr.chosen = kSlotNames[w.winner.chosen];
    wr.rounds = w.winner.rounds;
    wr.seconds = warm.seconds;
    wr.search_candidates = w.search_candidates;
    wr.searched = searched;
    for (size_t s = w.region; s < regions.size(); ++s)
      if (regions[s].representative == w.region) report.regions[s].warm_start = wr;
  }
}

}  // namespace fusetune
