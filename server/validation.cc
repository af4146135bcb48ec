#include "server/validation.h"

#include <algorithm>
#include <array>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/text/relay_printer.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

bool SameGroups(const Plan& a, const Plan& b) {
  if (a.groups.size() != b.groups.size()) return false;
  std::vector<std::vector<ValueId>> x, y;
  for (const PlanGroup& g : a.groups) x.push_back(g.nodes);
  for (const PlanGroup& g : b.groups) y.push_back(g.nodes);
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

// The fastest slot that ran; ties go to tuned, then greedy.
int PickWinner(const ThreeWayResult& r) {
  int chosen = -1;
  for (int slot = 0; slot < 3; ++slot)
    if (r.us[slot] < kInf && (chosen < 0 || r.us[slot] < r.us[chosen])) chosen = slot;
  return chosen;
}

std::string Us(double us) { return us < kInf ? fmt::format("{:.2f} µs", us) : "failed"; }

}  // namespace

std::vector<ThreeWayResult> TimeThreeWays(const std::vector<ThreeWay>& ways, JobRunner& runner,
                                          const std::string& phase) {
  std::vector<MeasureJob> jobs;
  std::vector<std::array<int, 3>> job_plan_of(ways.size());  // slot -> plan index in the job
  for (size_t i = 0; i < ways.size(); ++i) {
    std::vector<const Plan*> distinct;
    for (int slot = 0; slot < 3; ++slot) {
      job_plan_of[i][slot] = -1;
      if (!ways[i].plans[slot]) continue;
      for (size_t d = 0; d < distinct.size() && job_plan_of[i][slot] < 0; ++d)
        if (SameGroups(*distinct[d], *ways[i].plans[slot]))
          job_plan_of[i][slot] = static_cast<int>(d);
      if (job_plan_of[i][slot] < 0) {
        job_plan_of[i][slot] = static_cast<int>(distinct.size());
        distinct.push_back(&*ways[i].plans[slot]);
      }
    }
    MeasureJob job;
    job.graph_text = PrintRelay(*ways[i].graph);
    for (size_t d = 0; d < distinct.size(); ++d)
      job.plans.push_back({fmt::format("plan{}", d), PlanToJson(*ways[i].graph, *distinct[d])});
    jobs.push_back(std::move(job));
  }
  std::vector<MeasureJob> all;
  for (int round = 0; round < kTimingRounds; ++round)
    all.insert(all.end(), jobs.begin(), jobs.end());
  std::vector<JobResult> answers = runner.Run(phase, std::move(all));
  std::vector<ThreeWayResult> out(ways.size());
  for (size_t i = 0; i < ways.size(); ++i) {
    for (int slot = 0; slot < 3; ++slot) {
      const int p = job_plan_of[i][slot];
      if (p < 0) {
        out[i].reason[slot] = "no plan";
        continue;
      }
      double best = kInf, error = 0;
      std::string reason;
      for (int round = 0; round < kTimingRounds; ++round) {
        const PlanResult& t = answers[round * ways.size() + i].plans.at(p);
        if (!t.ok) {
          reason = t.reason;
          best = kInf;
          break;
        }
        best = std::min(best, t.median_us);
        error = std::max(error, t.max_abs_error);
      }
      out[i].us[slot] = best;
      out[i].max_abs_error[slot] = error;
      out[i].reason[slot] = reason;
    }
    out[i].chosen = PickWinner(out[i]);
  }
  return out;
}

std::vector<RegionWinner> ValidateRegions(const RequestPolicy& policy,
                                          const std::vector<TuneRegion>& regions,
                                          const MeasurementPlan& plan,
                                          const std::vector<std::optional<Plan>>& tuned,
                                          JobRunner& runner) {
  const Graph& g = policy.graph();
  std::vector<ThreeWay> ways;
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    const RegionSearch& rs = plan.regions[i];
    ThreeWay way;
    way.graph = &rs.sub.graph;
    if (tuned[i]) way.plans[kTuned] = rs.sub.PlanToSub(*tuned[i]);
    way.plans[kGreedy] = WithBestSchedules(g, rs.greedy, plan.groups, &rs.sub);
    way.plans[kUnfused] = WithBestSchedules(g, UnfusedPlan(rs.sub.graph), plan.groups, &rs.sub);
    ways.push_back(std::move(way));
  }
  const std::vector<ThreeWayResult> results = TimeThreeWays(ways, runner, "validating");
  std::vector<RegionWinner> out;
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    const RegionSearch& rs = plan.regions[i];
    const TuneRegion& tr = regions[rs.region];
    const ThreeWayResult& res = results[i];
    if (res.chosen < 0) {
      std::string reasons;
      for (int slot = 0; slot < 3; ++slot)
        if (ways[i].plans[slot])
          reasons += fmt::format("\n  {}: {}", kSlotNames[slot], res.reason[slot]);
      throw std::runtime_error(fmt::format("region {} ({}) could not be run under any plan:{}",
                                           tr.signature, fmt::join(OpsOf(g, tr.region.nodes), ", "),
                                           reasons));
    }
    RegionWinner w;
    w.region = rs.region;
    w.chosen = res.chosen;
    w.plan = rs.sub.PlanToOriginal(*ways[i].plans[res.chosen]);
    std::copy(std::begin(res.us), std::end(res.us), std::begin(w.us));
    w.max_abs_error = res.max_abs_error[res.chosen];
    spdlog::debug("region {} validated: tuned {}, greedy {}, unfused {}: {} wins with {}",
                  tr.signature, Us(res.us[kTuned]), Us(res.us[kGreedy]), Us(res.us[kUnfused]),
                  kSlotNames[res.chosen], PlanText(g, w.plan.groups));
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace fusetune
