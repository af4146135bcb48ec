#include "server/measurement_planning.h"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/matmul_schedule.h"
#include "ir/schedule_space.h"
#include "ir/text/relay_printer.h"
#include "server/budget.h"
#include "server/greedy_baseline.h"
#include "server/noise.h"
#include "server/schedule_model.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// A group first met: its schedules in the ranker's order (the first --schedules of them planned,
// the rest kept as candidates for the schedule search), what the store knows of them, and the
// model's estimate of what fusing saves. `searched`: whether a region to be searched holds the
// group. When none does and the store knows none of its schedules at these sizes, the order
// decides nothing: no job of it runs, and which schedules are planned changes no figure (every
// one is unknown), so the space keeps its own order and the ranker is not asked (nor trained).
GroupWork NewGroup(const Graph& g, const FusedGroup& group, std::string signature,
                   CanonicalForm canon, const SearchOptions& o, const TuneCache& cache,
                   const RooflineTarget& roofline, const ScheduleRanker& ranker, bool searched,
                   int* reused) {
  GroupWork gw;
  gw.signature = std::move(signature);
  gw.canon = std::move(canon);
  gw.group = group;
  std::vector<Schedule> space = ScheduleSpace(g, group, o.threads);
  if (space.empty()) space.push_back({});
  auto stored = [&] {
    for (const Schedule& s : space)
      if (cache.FindMeasurement(gw.signature, s.ToString())) return true;
    return false;
  };
  if (searched || stored()) space = ranker.Rank(g, group, std::move(space));
  // A group that recomputes is a variant of one that stores (candidates.h): its default alone
  // first, the schedule search adds more if it is among a region's heaviest. The variants
  // otherwise doubled a GPT-2 stack's measurements.
  const int planned = group.recompute.empty() ? std::max(1, o.schedules_per_group) : 1;
  size_t first = std::min(space.size(), static_cast<size_t>(planned));
  // The default's twin that packs constant weights once is always measured: its duel
  // (server/schedule_duels.h) keeps it unless the default wins, which needs its figure. The ranker
  // may put another tile on wpack first, 1-2% apart from it on BERT's denses.
  if (const std::optional<Schedule> twin = WeightsPackedTwin(space[0]); twin && first >= 2) {
    auto it = std::find(space.begin() + static_cast<std::ptrdiff_t>(first), space.end(), *twin);
    if (it != space.end())
      std::rotate(space.begin() + static_cast<std::ptrdiff_t>(first++), it, it + 1);
  }
  gw.candidates.assign(space.begin() + static_cast<std::ptrdiff_t>(first), space.end());
  space.resize(first);
  for (Schedule& s : space) *reused += gw.Add(std::move(s), cache);
  double parts = 0;
  for (ValueId v : group.nodes) {
    auto single = AnalyzeGroup(g, std::vector<ValueId>{v});
    parts += EstimateGroup(g, *single, roofline).estimate_us;
  }
  gw.benefit = parts - EstimateGroup(g, group, roofline).estimate_us;
  return gw;
}

}  // namespace

GroupGraph GroupAsGraph(const Graph& graph, const GroupWork& gw) {
  GroupGraph out{ExtractSubgraph(graph, gw.canon.inputs, gw.canon.nodes, gw.canon.outputs), {}};
  for (ValueId v : gw.canon.nodes) out.nodes.push_back(out.sub.ToSub(v));
  std::sort(out.nodes.begin(), out.nodes.end());
  return out;
}

PlannedJob JobFor(const Graph& g, const GroupWork& gw, std::vector<size_t> missing) {
  const GroupGraph group = GroupAsGraph(g, gw);
  PlannedJob planned;
  planned.signature = gw.signature;
  planned.job.graph_text = PrintRelay(group.sub.graph);
  for (size_t s : missing) {
    Plan plan{fmt::format("s{}", s), {{group.nodes, gw.schedules[s]}}};
    planned.job.plans.push_back({plan.name, PlanToJson(group.sub.graph, plan)});
  }
  planned.schedules = std::move(missing);
  return planned;
}

bool GroupWork::Add(Schedule schedule, const TuneCache& cache) {
  schedules.push_back(std::move(schedule));
  median_us.push_back(kInf);
  rel_error.push_back(0);
  known.push_back(false);
  auto rec = cache.FindMeasurement(signature, schedules.back().ToString());
  if (!rec) return false;
  known.back() = true;
  if (rec->status == db::MeasurementStatus::kOk) {
    median_us.back() = rec->median_us;
    rel_error.back() = RelativeError(rec->median_us, rec->stddev_us, rec->repeat);
  }
  return true;
}

size_t GroupWork::best_index() const {
  if (dueled) return *dueled;
  // A default schedule that failed or was not measured leaves the fastest that ran.
  if (!std::isfinite(median_us[0]))
    return std::min_element(median_us.begin(), median_us.end()) - median_us.begin();
  size_t best = 0;
  for (size_t s = 1; s < schedules.size(); ++s)
    if (FasterBeyondNoise(median_us[s], rel_error[s], median_us[0], rel_error[0]) &&
        median_us[s] < median_us[best])
      best = s;
  return best;
}

Plan WithDefaultSchedules(const Graph& graph, Plan plan, int threads, const Subgraph* region) {
  const std::vector<std::vector<ValueId>> recomputed = RecomputedNodes(plan.groups);
  for (size_t gi = 0; gi < plan.groups.size(); ++gi) {
    PlanGroup& pg = plan.groups[gi];
    std::vector<ValueId> nodes, recompute;
    for (ValueId v : pg.nodes) nodes.push_back(region ? region->ToOriginal(v) : v);
    for (ValueId v : recomputed[gi]) recompute.push_back(region ? region->ToOriginal(v) : v);
    std::sort(nodes.begin(), nodes.end());
    pg.schedule = {};
    if (auto group = AnalyzeGroup(graph, nodes, nullptr, recompute))
      pg.schedule = ScheduleSpace(graph, *group, threads).front();
  }
  return plan;
}

std::vector<CostedGroup> CostedCandidates(const TuneRegion& tr, const RegionSearch& rs,
                                          const MeasurementPlan& plan,
                                          double (*cost)(const GroupWork&)) {
  std::vector<CostedGroup> costed;
  for (size_t i = 0; i < tr.region.groups.size(); ++i) {
    const GroupWork& gw = plan.groups.at(rs.group_sigs[i]);
    costed.push_back({tr.region.groups[i].nodes, plan.pruned.count(gw.signature) ? kInf : cost(gw),
                      tr.region.groups[i].recompute});
  }
  return costed;
}

MeasurementPlan PlanMeasurements(const RequestPolicy& policy,
                                 const std::vector<TuneRegion>& regions,
                                 const std::vector<size_t>& to_search, const TuneCache& cache,
                                 const RooflineTarget& roofline,
                                 const std::set<size_t>& unsearched) {
  const Graph& g = policy.graph();
  MeasurementPlan plan;
  const ScheduleRanker ranker =
      ScheduleRanker::FromStore(cache, roofline, policy.options().threads);
  // The signatures of the groups some searched region holds, when some region is not searched:
  // their order matters.
  std::set<std::string> searched;
  if (!unsearched.empty())
    for (size_t r : to_search)
      if (!unsearched.count(r))
        for (const FusedGroup& group : regions[r].region.groups)
          searched.insert(Signature(g, group.nodes, group.recompute));
  std::vector<std::vector<BudgetCandidate>> budget_input;
  const Plan whole_greedy = GreedyBaseline(policy);
  for (size_t r : to_search) {
    const TuneRegion& tr = regions[r];
    RegionSearch rs;
    rs.region = r;
    rs.sub = ExtractSubgraph(g, tr.canon.inputs, tr.canon.nodes, tr.canon.outputs);
    rs.greedy = GreedyBaseline(policy, whole_greedy, rs.sub);
    // Greedy groups of the region are baselines, like single ops: always measured.
    std::set<std::vector<ValueId>> greedy;
    for (const PlanGroup& pg : rs.sub.PlanToOriginal(rs.greedy).groups) greedy.insert(pg.nodes);
    std::vector<BudgetCandidate> candidates;
    for (const FusedGroup& group : tr.region.groups) {
      CanonicalForm gc = Canonicalize(g, group.nodes, group.recompute);
      std::string sig = Hash128Hex(gc.text);
      auto it = plan.groups.find(sig);
      if (it == plan.groups.end()) {
        GroupWork gw = NewGroup(g, group, sig, std::move(gc), policy.options(), cache, roofline,
                                ranker, unsearched.empty() || searched.count(sig) > 0, &rs.reused);
        it = plan.groups.emplace(sig, std::move(gw)).first;
      }
      const GroupWork& gw = it->second;
      rs.group_sigs.push_back(sig);
      rs.candidates += static_cast<int>(gw.schedules.size());
      candidates.push_back({sig, gw.benefit,
                            static_cast<int>(std::count(gw.known.begin(), gw.known.end(), false)),
                            group.nodes.size() == 1 || greedy.count(group.nodes) > 0});
    }
    plan.reused += rs.reused;
    budget_input.push_back(std::move(candidates));
    plan.regions.push_back(std::move(rs));
  }

  plan.ranking = ranker.trained() ? ranker.name() : "none";
  BudgetDecision budget = PruneToBudget(budget_input, policy.options().budget);
  plan.pruned = std::move(budget.pruned);
  plan.pruned_schedules = budget.pruned_total;
  for (size_t i = 0; i < plan.regions.size(); ++i)
    plan.regions[i].pruned = budget.pruned_per_region[i];
  for (const std::string& sig : plan.pruned) {
    const GroupWork& gw = plan.groups.at(sig);
    spdlog::debug("pruned {} ({}): the budget's cost model expects fusing to save {:.2f} µs",
                  NodesText(g, gw.group.nodes), fmt::join(OpsOf(g, gw.group.nodes), ", "),
                  gw.benefit);
  }

  for (const auto& [sig, gw] : plan.groups) {
    if (plan.pruned.count(sig)) continue;
    std::vector<size_t> missing;
    for (size_t s = 0; s < gw.schedules.size(); ++s)
      if (!gw.known[s]) missing.push_back(s);
    if (!missing.empty()) plan.jobs.push_back(JobFor(g, gw, std::move(missing)));
  }
  for (const RegionSearch& rs : plan.regions)
    spdlog::debug("region {}: {} (group, schedule) candidates, {} found in the store, {} pruned",
                  regions[rs.region].signature, rs.candidates, rs.reused, rs.pruned);
  spdlog::debug("{} distinct groups, {} jobs to measure", plan.groups.size(), plan.jobs.size());
  return plan;
}

}  // namespace fusetune
