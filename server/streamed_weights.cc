#include "server/streamed_weights.h"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/matmul_schedule.h"
#include "server/stored_plans.h"

namespace fusetune {
namespace {

// The twin is the challenger in the greedy slot; the regions' plans stay unless it wins.
inline constexpr SlotLabels kStreamedLabels = {"tuned", "weights streamed further ahead", ""};
inline constexpr SlotLabels kStreamedNames = {"tuned", "streamed", ""};

// The graph's weights: what its constants and the parameters carrying data hold.
int64_t WeightBytes(const Graph& graph) {
  int64_t bytes = 0;
  for (const Value& v : graph.values())
    if ((v.kind == ValueKind::kConst || v.kind == ValueKind::kParam) && v.data)
      bytes += v.type.NumBytes();
  return bytes;
}

}  // namespace

std::optional<Plan> StreamedPlan(const Plan& plan) {
  Plan twin = plan;
  bool changed = false;
  for (PlanGroup& g : twin.groups) {
    if (std::optional<Schedule> s = StreamedTwin(g.schedule)) {
      g.schedule = *s;
      changed = true;
    }
  }
  if (!changed) return std::nullopt;
  twin.name = kStreamedNames[kGreedy];
  return twin;
}

void DuelStreamedWeights(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                         const WholeGraphTiming& whole, const std::vector<RegionWinner>& winners,
                         JobRunner& runner, TuneCache& cache, TuneReport& report) {
  if (whole.chosen != kTuned || WeightBytes(policy.graph()) < kStreamedWeightsMinBytes) return;
  std::optional<Plan> twin = StreamedPlan(report.tuned_plan);
  if (!twin) return;
  ThreeWay way;
  way.graph = &policy.graph();
  way.plans[kTuned] = report.tuned_plan;
  way.plans[kGreedy] = *twin;
  way.labels = &kStreamedLabels;
  way.names = &kStreamedNames;
  const ThreeWayResult res =
      TimeThreeWays({way}, runner, "timing weights streamed ahead", kIncumbentFirst)[0];
  spdlog::debug("whole graph, weights streamed further ahead: {}", res.decision);
  if (res.chosen != kGreedy) {
    report.total_decision += "; " + res.decision;
    return;
  }
  std::vector<RegionWinner> streamed;
  for (const RegionWinner& w : winners) {
    std::optional<Plan> p = StreamedPlan(w.plan);
    if (!p) continue;
    RegionWinner s = w;
    s.plan = *p;
    s.plan.name = w.plan.name;
    s.decision = fmt::format("{}; in the whole graph: {}", w.decision, res.decision);
    streamed.push_back(std::move(s));
  }
  RecordBestPlans(policy, regions, streamed, cache, report.regions,
                  fmt::format("whole graph: weights streamed further ahead {:.2f}× faster",
                              res.us[kTuned] / res.us[kGreedy]));
  report.tuned_plan = CollectTunedPlan(policy.graph(), report.regions);
  report.total_tuned_us = res.us[kGreedy];
  report.max_abs_error = res.max_abs_error[kGreedy];
  const bool exact = SamePlan(report.tuned_plan, *twin);
  report.total_decision +=
      fmt::format("; {}; {} region plan(s) stored with it{}", res.decision, streamed.size(),
                  exact ? "" : ", not all: the stored plans are not exactly the plan timed");
  spdlog::info("whole graph: weights streamed further ahead in {} region plan(s) ({})",
               streamed.size(), res.decision);
}

}  // namespace fusetune
