#include "server/plan_choice.h"

#include <spdlog/spdlog.h>

#include "ir/text/signature.h"
#include "server/cover_merging.h"
#include "server/noise.h"
#include "server/partition_search.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

std::string CoverText(const Graph& g, const Region& region, const Partition& p) {
  if (!p.found()) return "none";
  std::vector<PlanGroup> groups;
  for (size_t idx : p.groups) groups.push_back({region.groups[idx].nodes, {}});
  return fmt::format("{} {:.2f} µs", PlanText(g, groups), p.cost);
}

}  // namespace

std::optional<std::pair<Plan, double>> GreedyCover(const Graph& graph, const RegionSearch& rs,
                                                   const MeasurementPlan& plan) {
  Plan cover{"tuned", {}};
  double us = 0;
  for (const PlanGroup& pg : rs.sub.PlanToOriginal(rs.greedy).groups) {
    auto it = plan.groups.find(Signature(graph, pg.nodes));
    if (it == plan.groups.end() || plan.pruned.count(it->first) || !(it->second.best_us() < kInf))
      return std::nullopt;
    us += it->second.best_us();
    cover.groups.push_back({pg.nodes, it->second.best_schedule()});
  }
  return std::make_pair(std::move(cover), us);
}

std::vector<std::optional<Plan>> ChooseTunedPlans(const Graph& graph,
                                                  const std::vector<TuneRegion>& regions,
                                                  const MeasurementPlan& plan) {
  std::vector<std::optional<Plan>> out;
  for (const RegionSearch& rs : plan.regions) {
    const TuneRegion& tr = regions[rs.region];
    const std::vector<CostedGroup> costed =
        CostedCandidates(tr, rs, plan, [](const GroupWork& gw) { return gw.best_us(); });
    const RankedPartitions ranked = FindBestPartitions(graph, tr.region.nodes, costed);
    spdlog::debug("region {}: best cover {}; runner-up {}", tr.signature,
                  CoverText(graph, tr.region, ranked.best),
                  CoverText(graph, tr.region, ranked.runner_up));
    if (!ranked.best.found()) {
      out.push_back(std::nullopt);
      continue;
    }
    // Another grouping within the unpaired noise of greedy's is no evidence against the rules:
    // greedy's grouping is then the tuned plan, carrying what the search found for its groups'
    // schedules (which validation can then judge as schedules, server/validation.h). Except a
    // cover holding a group no rule forms (attention as one kernel, sibling matmuls as one, a
    // layer norm folded into its matmul, a value recomputed): what those save is traffic between
    // kernels (a score matrix, normalised rows or a recomputed value never written), which groups
    // timed alone do not show
    // (BENCHMARKS.md, "The attention kernel with its head split inside": 3.6% alone, 5.7% in
    // the plan), so the whole-plan rounds decide, and greedy's grouping on dueled schedules is
    // retried if it loses (server/grouping_fallback.h).
    bool beyond_rules = false;
    for (size_t idx : ranked.best.groups) {
      const FusedGroup& g = plan.groups.at(rs.group_sigs[idx]).group;
      beyond_rules |= g.Attention() || g.Horizontal() || g.norm >= 0 || !g.recompute.empty();
    }
    if (auto greedy = GreedyCover(graph, rs, plan);
        greedy && !beyond_rules && greedy->second <= ranked.best.cost * (1 + kNoiseFloor)) {
      spdlog::debug("region {}: greedy's grouping {:.2f} µs, within noise of the best cover: kept",
                    tr.signature, greedy->second);
      out.push_back(std::move(greedy->first));
      continue;
    }
    const Partition merged = MergeWithinNoise(costed, ranked.best, kNoiseFloor);
    if (merged.groups.size() < ranked.best.groups.size())
      spdlog::debug("region {}: fewer kernels within noise of the best cover: {}", tr.signature,
                    CoverText(graph, tr.region, merged));
    Plan tuned{"tuned", {}};
    for (size_t idx : merged.groups)
      tuned.groups.push_back(
          {tr.region.groups[idx].nodes, plan.groups.at(rs.group_sigs[idx]).best_schedule()});
    SortGroupsTopologically(graph, tuned);
    out.push_back(std::move(tuned));
  }
  return out;
}

}  // namespace fusetune
