#include "server/schedule_duels.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <set>

#include <spdlog/spdlog.h>

#include "ir/text/signature.h"
#include "server/noise.h"
#include "server/stage_log.h"
#include "server/validation.h"

namespace fusetune {
namespace {

inline constexpr SlotLabels kDuelLabels = {"schedule", "default schedule", "unfused"};

// The schedule to duel against the default: the one plan choice uses when the unpaired rule
// picked it (confirmed or overturned by paired rounds), else the fastest other schedule unless
// its median is slower than the default's beyond the unpaired noise floor. A candidate job's
// single figure, timed beside compiles, put BERT's QKV dense on weights packed once 1% on either
// side of its default in one tune and 5% ahead in the next.
std::optional<size_t> Challenger(const GroupWork& gw) {
  if (gw.schedules.size() < 2 || gw.dueled || !std::isfinite(gw.median_us[0])) return std::nullopt;
  if (gw.best_index() != 0) return gw.best_index();
  const size_t fastest =
      std::min_element(gw.median_us.begin() + 1, gw.median_us.end()) - gw.median_us.begin();
  if (!(gw.median_us[fastest] < gw.median_us[0] * (1 + kNoiseFloor))) return std::nullopt;
  return fastest;
}

}  // namespace

std::vector<ScheduleDuel> DuelSchedules(const Graph& graph,
                                        const std::vector<std::optional<Plan>>& tuned,
                                        MeasurementPlan& plan, JobRunner& runner) {
  struct Entry {
    GroupWork* gw;
    size_t challenger;
    bool picked;  // by the unpaired rule: dueled whatever the cap
  };
  std::vector<Entry> entries;
  std::set<std::string> seen;
  for (const std::optional<Plan>& p : tuned) {
    if (!p) continue;
    for (const PlanGroup& pg : p->groups) {
      const std::string sig = Signature(graph, pg.nodes);
      auto it = plan.groups.find(sig);
      if (it == plan.groups.end() || plan.pruned.count(sig) || !seen.insert(sig).second) continue;
      GroupWork& gw = it->second;
      if (std::optional<size_t> c = Challenger(gw))
        entries.push_back({&gw, *c, *c == gw.best_index()});
    }
  }
  // Every pick of the unpaired rule, then the heaviest groups first: there a schedule's few
  // percent are worth most.
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    if (a.picked != b.picked) return a.picked;
    return a.gw->median_us[0] > b.gw->median_us[0];
  });
  size_t keep = 0;
  while (keep < entries.size() && (entries[keep].picked || keep < static_cast<size_t>(kMaxDuels)))
    ++keep;
  entries.resize(keep);
  if (entries.empty()) return {};

  // Each group as a graph of its own, as its candidate jobs timed it (JobFor).
  std::deque<GroupGraph> groups;
  std::vector<ThreeWay> ways;
  for (const Entry& e : entries) {
    const GroupGraph& group = groups.emplace_back(GroupAsGraph(graph, *e.gw));
    ThreeWay way;
    way.graph = &group.sub.graph;
    way.plans[kTuned] = Plan{"tuned", {{group.nodes, e.gw->schedules[e.challenger]}}};
    way.plans[kGreedy] = Plan{"greedy", {{group.nodes, e.gw->schedules[0]}}};
    way.labels = &kDuelLabels;
    ways.push_back(std::move(way));
  }
  const std::vector<ThreeWayResult> results = TimeThreeWays(ways, runner, "dueling schedules");

  std::vector<ScheduleDuel> out;
  for (size_t i = 0; i < entries.size(); ++i) {
    GroupWork& gw = *entries[i].gw;
    ScheduleDuel duel;
    duel.group = NodesText(graph, gw.group.nodes);
    duel.ops = OpsOf(graph, gw.group.nodes);
    duel.schedule = gw.schedules[entries[i].challenger].ToString();
    duel.decision = results[i].decision;
    duel.rounds = results[i].rounds;
    duel.won = results[i].chosen == kTuned;
    gw.dueled = duel.won ? entries[i].challenger : 0;
    spdlog::debug("{} ({}): schedule '{}' against the default in {} paired rounds: {}", duel.group,
                  fmt::join(duel.ops, ", "), duel.schedule, duel.rounds, duel.decision);
    out.push_back(std::move(duel));
  }
  return out;
}

}  // namespace fusetune
