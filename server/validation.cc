#include "server/validation.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "ir/text/relay_printer.h"
#include "ir/text/signature.h"
#include "server/stage_log.h"
#include "worker/timing.h"

namespace fusetune {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// The plan's groups, sorted, with their schedules' text when `schedules`.
std::vector<std::pair<std::vector<ValueId>, std::string>> GroupList(const Plan& p, bool schedules) {
  std::vector<std::pair<std::vector<ValueId>, std::string>> out;
  for (const PlanGroup& g : p.groups)
    out.emplace_back(g.nodes, schedules ? g.schedule.ToString() : std::string());
  std::sort(out.begin(), out.end());
  return out;
}

// A challenger against the plan kept so far, over the rounds.
struct Comparison {
  double speedup = 1;  // median over rounds of kept time / challenger time
  int wins = 0;        // rounds the challenger was faster beyond the round's noise floor
  int rounds = 0;      // rounds that count: not disturbed
  int disturbed = 0;   // rounds whose timings' spread reached kNoiseCeiling: no evidence either way
  bool win = false;
  bool settled = true;
};

Comparison Compare(const std::vector<RoundFigures>& rounds, int challenger, int kept,
                   int max_rounds) {
  Comparison c;
  std::vector<double> ratios;
  for (const RoundFigures& r : rounds) {
    const double a = r.us[challenger], b = r.us[kept];
    ratios.push_back(b / a);
    if (RoundDisturbed(a, r.rel_error[challenger], b, r.rel_error[kept])) {
      ++c.disturbed;
      continue;
    }
    ++c.rounds;
    if (RoundWon(a, r.rel_error[challenger], b, r.rel_error[kept])) ++c.wins;
  }
  c.speedup = Median(ratios);
  c.win = c.speedup > 1 && SignTestP(c.wins, c.rounds) <= kSignTestAlpha;
  // Undecided while more rounds, all won, could still make it a win before the cap.
  c.settled = true;
  const int timed = static_cast<int>(rounds.size());
  if (!c.win)
    for (int more = 1; timed + more <= max_rounds; ++more)
      if (SignTestP(c.wins + more, c.rounds + more) <= kSignTestAlpha) c.settled = false;
  return c;
}

std::string Us(double us) { return us < kInf ? fmt::format("{:.2f} µs", us) : "failed"; }

// The search's measured group that `pg` (sub's ids) is, or nullptr when it planned none.
const GroupWork* MeasuredGroup(const Graph& g, const Subgraph& sub, const PlanGroup& pg,
                               const MeasuredGroups& groups) {
  std::vector<ValueId> nodes;
  for (ValueId v : pg.nodes) nodes.push_back(sub.ToOriginal(v));
  auto it = groups.find(Signature(g, nodes));
  return it == groups.end() ? nullptr : &it->second;
}

// BaselineSchedules::kFromTuned: each group of `baseline` (sub's ids) that has no measurement at
// these sizes takes the schedule of the tuned plan's group with the same nodes, if there is one.
Plan WithTunedSchedules(const Graph& g, const Subgraph& sub, Plan baseline, const Plan& tuned,
                        const MeasuredGroups& groups) {
  for (PlanGroup& pg : baseline.groups) {
    auto same = std::find_if(tuned.groups.begin(), tuned.groups.end(),
                             [&](const PlanGroup& t) { return t.nodes == pg.nodes; });
    if (same == tuned.groups.end()) continue;
    const GroupWork* gw = MeasuredGroup(g, sub, pg, groups);
    if (!gw || !(gw->best_us() < kInf)) pg.schedule = same->schedule;
  }
  return baseline;
}

// Whether `tuned` (sub's ids) is `greedy`'s grouping whose every schedule is its group's default
// or the schedule that won the group's duel, at least one of them the latter.
bool OnlyDueledSchedules(const Graph& g, const Subgraph& sub, const Plan& tuned, const Plan& greedy,
                         const MeasuredGroups& groups) {
  if (!SameGrouping(tuned, greedy)) return false;
  bool dueled = false;
  for (const PlanGroup& pg : tuned.groups) {
    const GroupWork* gw = MeasuredGroup(g, sub, pg, groups);
    if (!gw) return false;
    if (gw->dueled && *gw->dueled != 0 && pg.schedule == gw->schedules[*gw->dueled])
      dueled = true;
    else if (!(pg.schedule == gw->schedules[0]))
      return false;
  }
  return dueled;
}

// The region's greedy and unfused plans (sub's ids) on default schedules (kDefaults).
void SetDefaultBaselines(const Graph& g, const RegionSearch& rs, int threads, ThreeWay& way) {
  way.plans[kGreedy] = WithDefaultSchedules(g, rs.greedy, threads, &rs.sub);
  way.plans[kUnfused] = WithDefaultSchedules(g, UnfusedPlan(rs.sub.graph), threads, &rs.sub);
}

// Times `retimed`, the ways `again` of `ways` with other plans, and puts them and their results
// in place.
void RetimeWays(const std::vector<size_t>& again, std::vector<ThreeWay> retimed,
                std::vector<ThreeWay>& ways, JobRunner& runner,
                std::vector<ThreeWayResult>& results) {
  if (again.empty()) return;
  std::vector<ThreeWayResult> res = TimeThreeWays(retimed, runner, "validating");
  for (size_t j = 0; j < again.size(); ++j) {
    ways[again[j]] = std::move(retimed[j]);
    results[again[j]] = std::move(res[j]);
  }
}

// kFromTuned: a transferred schedule that fails at these sizes (a compile error, a wrong result)
// must not take the baselines down with it. A way whose greedy or unfused plan failed on the
// tuned plan's schedules is timed again with its baselines on default schedules (kDefaults), as
// a validation without a family would; the tuned plan stays in its slot.
void RetimeFailedBaselines(const Graph& g, const MeasurementPlan& plan, int threads,
                           std::vector<ThreeWay>& ways, JobRunner& runner,
                           std::vector<ThreeWayResult>& results) {
  std::vector<size_t> again;
  std::vector<ThreeWay> retimed;
  for (size_t i = 0; i < ways.size(); ++i) {
    ThreeWay way = ways[i];
    SetDefaultBaselines(g, plan.regions[i], threads, way);
    if (!ways[i].plans[kUnfused]) way.plans[kUnfused].reset();  // not timed: stays so
    bool redo = false;
    for (int slot : {kGreedy, kUnfused})
      redo |= way.plans[slot] && !(results[i].us[slot] < kInf) &&
              !SamePlan(*way.plans[slot], *ways[i].plans[slot]);
    if (!redo) continue;
    const std::string& why = results[i].reason[kGreedy].empty() ? results[i].reason[kUnfused]
                                                                : results[i].reason[kGreedy];
    spdlog::debug(
        "region {}: a baseline failed on the transferred schedules ({}); timed again "
        "on the defaults",
        i, why);
    again.push_back(i);
    retimed.push_back(std::move(way));
  }
  RetimeWays(again, std::move(retimed), ways, runner, results);
}

// time_unfused false: a region none of whose plans ran is timed again with its unfused plan (on
// defaults), the last plan that may run, rather than failing the tune.
void TimeUnfusedWhereNothingRan(const Graph& g, const MeasurementPlan& plan, int threads,
                                std::vector<ThreeWay>& ways, JobRunner& runner,
                                std::vector<ThreeWayResult>& results) {
  std::vector<size_t> again;
  std::vector<ThreeWay> retimed;
  for (size_t i = 0; i < ways.size(); ++i) {
    if (results[i].chosen >= 0 || ways[i].plans[kUnfused]) continue;
    ThreeWay way = ways[i];
    SetDefaultBaselines(g, plan.regions[i], threads, way);
    way.plans[kGreedy] = ways[i].plans[kGreedy];
    spdlog::debug("region {}: no plan ran; timed again with the unfused plan", i);
    again.push_back(i);
    retimed.push_back(std::move(way));
  }
  RetimeWays(again, std::move(retimed), ways, runner, results);
}

}  // namespace

bool SamePlan(const Plan& a, const Plan& b) {
  return a.groups.size() == b.groups.size() && GroupList(a, true) == GroupList(b, true);
}

bool SameGrouping(const Plan& a, const Plan& b) {
  return a.groups.size() == b.groups.size() && GroupList(a, false) == GroupList(b, false);
}

double SignTestP(int wins, int n) {
  if (n <= 0) return 1;
  double p = 0;
  for (int i = std::max(wins, 0); i <= n; ++i) {
    double c = 1;  // C(n, i)
    for (int k = 1; k <= i; ++k) c = c * (n - i + k) / k;
    p += c;
  }
  return p / std::pow(2.0, n);
}

NoiseDecision DecideThreeWay(const std::vector<RoundFigures>& rounds, const int same_plan[3],
                             const SlotOrder& order, int max_rounds, const SlotLabels& labels,
                             const SlotLabels& names) {
  NoiseDecision d;
  // The candidates, simplest first: one per distinct plan that ran in every round.
  std::vector<int> candidates;
  std::vector<std::string> phrases;
  for (int slot : order) {
    if (same_plan[slot] < 0) continue;
    bool duplicate = false;
    for (int other : order) {
      if (other == slot) break;
      if (same_plan[other] == same_plan[slot]) {
        duplicate = true;
        phrases.push_back(fmt::format("{} = {}", labels[slot], labels[other]));
        break;
      }
    }
    if (duplicate) continue;
    const bool ran = !rounds.empty() && std::all_of(rounds.begin(), rounds.end(), [&](auto& r) {
      return std::isfinite(r.us[slot]);
    });
    if (ran)
      candidates.push_back(slot);
    else
      phrases.push_back(fmt::format("{} failed", labels[slot]));
  }
  if (candidates.empty()) {
    d.text = "no plan ran";
    return d;
  }
  int kept = candidates[0];
  for (size_t i = 1; i < candidates.size(); ++i) {
    const int c = candidates[i];
    const Comparison cmp = Compare(rounds, c, kept, max_rounds);
    d.settled &= cmp.settled;
    std::string phrase = fmt::format("{} {:.2f}× vs {}", labels[c], cmp.speedup, labels[kept]);
    if (cmp.win)
      phrase += fmt::format(", beyond noise ({} of {}{})", cmp.wins, RoundsText(cmp.rounds),
                            cmp.disturbed ? fmt::format(", {} disturbed", cmp.disturbed) : "");
    else if (cmp.speedup > 1)
      phrase += cmp.disturbed
                    ? fmt::format(", within noise ({} disturbed)", RoundsText(cmp.disturbed))
                    : ", within noise";
    phrases.push_back(std::move(phrase));
    if (cmp.win) kept = c;
  }
  d.chosen = kept;
  // The margin: the kept plan against the fastest other candidate, as a median of round ratios.
  int runner_up = -1;
  double runner_up_us = kInf;
  for (int c : candidates) {
    if (c == kept) continue;
    std::vector<double> us;
    for (const RoundFigures& r : rounds) us.push_back(r.us[c]);
    if (Median(us) < runner_up_us) runner_up_us = Median(us), runner_up = c;
  }
  if (runner_up >= 0) {
    std::vector<double> ratios;
    for (const RoundFigures& r : rounds) ratios.push_back(r.us[kept] / r.us[runner_up]);
    d.margin = Median(ratios);
  }
  const std::string verdict =
      fmt::format("{} {}", names[kept], kept == candidates[0] ? "kept" : "chosen");
  d.text = phrases.empty() ? fmt::format("only {} ran: {}", names[kept], verdict)
                           : fmt::format("{}: {}", fmt::join(phrases, "; "), verdict);
  return d;
}

std::vector<ThreeWayResult> TimeThreeWays(const std::vector<ThreeWay>& ways, JobRunner& runner,
                                          const std::string& phase, const SlotOrder& order) {
  // Per way: its distinct plans (named by the simplest slot holding each) and which slot is which.
  struct Prepared {
    std::string graph_text;
    std::vector<JobPlan> distinct;
    int plan_of[3] = {-1, -1, -1};
    std::vector<bool> failed;  // per distinct plan: failed in a round, not timed again
    std::vector<RoundFigures> rounds;
    const SlotLabels* labels = &kSlotLabels;
    const SlotLabels* names = &kSlotNames;
  };
  std::vector<Prepared> prep(ways.size());
  auto order_of = [&](size_t i) -> const SlotOrder& {
    return ways[i].order ? *ways[i].order : order;
  };
  for (size_t i = 0; i < ways.size(); ++i) {
    if (ways[i].names) prep[i].names = ways[i].names;
    std::vector<const Plan*> distinct;
    for (int slot : order_of(i)) {
      if (!ways[i].plans[slot]) continue;
      for (size_t d = 0; d < distinct.size() && prep[i].plan_of[slot] < 0; ++d)
        if (SamePlan(*distinct[d], *ways[i].plans[slot]))
          prep[i].plan_of[slot] = static_cast<int>(d);
      if (prep[i].plan_of[slot] >= 0) continue;
      prep[i].plan_of[slot] = static_cast<int>(distinct.size());
      distinct.push_back(&*ways[i].plans[slot]);
      prep[i].distinct.push_back(
          {(*prep[i].names)[slot], PlanToJson(*ways[i].graph, *ways[i].plans[slot])});
    }
    prep[i].graph_text = PrintRelay(*ways[i].graph);
    const std::optional<Plan>&tuned = ways[i].plans[kTuned], &greedy = ways[i].plans[kGreedy];
    if (ways[i].labels)
      prep[i].labels = ways[i].labels;
    else if (tuned && greedy && SameGrouping(*tuned, *greedy) && !SamePlan(*tuned, *greedy))
      prep[i].labels = &kScheduleLabels;
    prep[i].failed.assign(distinct.size(), false);
  }
  std::vector<ThreeWayResult> out(ways.size());

  // `count[j]` more rounds of way `which[j]`, round-major so a way's rounds are spread in time.
  auto run_rounds = [&](const std::vector<size_t>& which, const std::vector<int>& count) {
    std::vector<MeasureJob> jobs;
    std::vector<size_t> way_of;
    const int most = count.empty() ? 0 : *std::max_element(count.begin(), count.end());
    for (int k = 0; k < most; ++k)
      for (size_t w = 0; w < which.size(); ++w) {
        if (k >= count[w]) continue;
        const size_t i = which[w];
        const Prepared& p = prep[i];
        MeasureJob job;
        job.graph_text = p.graph_text;
        job.alone = true;  // a decision rests on these figures
        const size_t n = p.distinct.size(), first = (p.rounds.size() + k) % std::max<size_t>(n, 1);
        for (size_t j = 0; j < n; ++j) {
          const size_t d = (first + j) % n;  // the order rotates per round
          if (!p.failed[d]) job.plans.push_back(p.distinct[d]);
        }
        jobs.push_back(std::move(job));
        way_of.push_back(i);
      }
    std::vector<JobResult> answers = runner.Run(phase, std::move(jobs));
    for (size_t j = 0; j < answers.size(); ++j) {
      Prepared& p = prep[way_of[j]];
      ThreeWayResult& res = out[way_of[j]];
      std::map<std::string, const PlanResult*> by_name;
      for (const PlanResult& t : answers[j].plans) by_name[t.name] = &t;
      RoundFigures round;
      for (int slot = 0; slot < 3; ++slot) {
        const int d = p.plan_of[slot];
        if (d < 0) continue;
        auto it = by_name.find(p.distinct[d].name);
        if (it == by_name.end()) continue;  // failed in an earlier round
        const PlanResult& t = *it->second;
        if (!t.ok) {
          p.failed[d] = true;
          res.reason[slot] = t.reason;
          continue;
        }
        // A plan's figure in a round is its fastest repeat: interference on a shared machine
        // only adds time, and its bursts hit single repeats (BENCHMARKS.md, "Whole-graph rounds
        // under bursts of load"). Its spread, from the repeats' MAD (noise.h), marks a round
        // disturbed only when most repeats were.
        round.us[slot] = t.min_us > 0 ? t.min_us : t.median_us;
        round.rel_error[slot] = RoundRelativeError(t.median_us, t.stddev_us, t.mad_us, t.repeat);
        res.max_abs_error[slot] = std::max(res.max_abs_error[slot], t.max_abs_error);
        res.max_output_magnitude = std::max(res.max_output_magnitude, t.max_output_magnitude);
      }
      spdlog::debug("{} {} round {}: tuned {} ±{:.1f}%, greedy {} ±{:.1f}%, unfused {} ±{:.1f}%",
                    phase, way_of[j], p.rounds.size() + 1, Us(round.us[kTuned]),
                    100 * round.rel_error[kTuned], Us(round.us[kGreedy]),
                    100 * round.rel_error[kGreedy], Us(round.us[kUnfused]),
                    100 * round.rel_error[kUnfused]);
      p.rounds.push_back(round);
    }
  };

  // The first batch: the fewest rounds that can settle each way (validation.h), all in one batch
  // so a farm spreads them; then one more round at a time for the ways still undecided.
  std::vector<size_t> all;
  std::vector<int> first;
  for (size_t i = 0; i < ways.size(); ++i)
    if (!prep[i].distinct.empty()) {
      all.push_back(i);
      first.push_back(prep[i].distinct.size() == 1 ? 1 : kMinRounds);
    }
  run_rounds(all, first);
  int most_rounds = 0;
  for (const ThreeWay& w : ways) most_rounds = std::max(most_rounds, w.max_rounds);
  for (int round = 1; round < most_rounds; ++round) {
    std::vector<size_t> undecided;
    for (size_t i : all) {
      const Prepared& p = prep[i];
      const bool any_left = std::count(p.failed.begin(), p.failed.end(), false) > 0;
      const int cap = ways[i].max_rounds;
      if (any_left && static_cast<int>(p.rounds.size()) < cap &&
          !DecideThreeWay(p.rounds, p.plan_of, order_of(i), cap, *p.labels, *p.names).settled)
        undecided.push_back(i);
    }
    if (undecided.empty()) break;
    run_rounds(undecided, std::vector<int>(undecided.size(), 1));
  }

  for (size_t i = 0; i < ways.size(); ++i) {
    const Prepared& p = prep[i];
    ThreeWayResult& res = out[i];
    for (int slot = 0; slot < 3; ++slot) {
      if (p.plan_of[slot] < 0) {
        res.reason[slot] = "no plan";
        continue;
      }
      std::vector<double> us;
      for (const RoundFigures& r : p.rounds) us.push_back(r.us[slot]);
      const bool ran = !us.empty() &&
                       std::all_of(us.begin(), us.end(), [](double x) { return std::isfinite(x); });
      res.us[slot] = ran ? Median(us) : kInf;
      // A plan that shares another slot's plan shares its failure reason too.
      if (!ran && res.reason[slot].empty())
        for (int other = 0; other < 3; ++other)
          if (p.plan_of[other] == p.plan_of[slot] && !res.reason[other].empty())
            res.reason[slot] = res.reason[other];
    }
    const NoiseDecision d =
        DecideThreeWay(p.rounds, p.plan_of, order_of(i), ways[i].max_rounds, *p.labels, *p.names);
    res.chosen = d.chosen;
    res.decision = d.text;
    if (std::isfinite(d.margin)) res.margin = d.margin;
    res.rounds = static_cast<int>(p.rounds.size());
  }
  return out;
}

std::vector<RegionWinner> ValidateRegions(const RequestPolicy& policy,
                                          const std::vector<TuneRegion>& regions,
                                          const MeasurementPlan& plan,
                                          const std::vector<std::optional<Plan>>& tuned,
                                          JobRunner& runner, BaselineSchedules baselines,
                                          bool time_unfused) {
  const Graph& g = policy.graph();
  std::vector<ThreeWay> ways;
  for (size_t i = 0; i < plan.regions.size(); ++i) {
    const RegionSearch& rs = plan.regions[i];
    ThreeWay way;
    way.graph = &rs.sub.graph;
    if (tuned[i]) way.plans[kTuned] = rs.sub.PlanToSub(*tuned[i]);
    SetDefaultBaselines(g, rs, policy.options().threads, way);
    if (baselines == BaselineSchedules::kFromTuned && way.plans[kTuned])
      for (int slot : {kGreedy, kUnfused})
        way.plans[slot] =
            WithTunedSchedules(g, rs.sub, *way.plans[slot], *way.plans[kTuned], plan.groups);
    if (!time_unfused) way.plans[kUnfused].reset();
    if (baselines == BaselineSchedules::kDefaults && way.plans[kTuned] &&
        OnlyDueledSchedules(g, rs.sub, *way.plans[kTuned], *way.plans[kGreedy], plan.groups))
      way.order = &kIncumbentFirst;
    const auto copies = std::count_if(regions.begin(), regions.end(), [&](const TuneRegion& r) {
      return r.representative == rs.region;
    });
    if (copies > 1) way.max_rounds = kMaxRoundsRepeated;
    ways.push_back(std::move(way));
  }
  std::vector<ThreeWayResult> results = TimeThreeWays(ways, runner, "validating");
  if (baselines == BaselineSchedules::kFromTuned)
    RetimeFailedBaselines(g, plan, policy.options().threads, ways, runner, results);
  if (!time_unfused)
    TimeUnfusedWhereNothingRan(g, plan, policy.options().threads, ways, runner, results);
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
    if (!ways[i].plans[kUnfused]) w.us[kUnfused] = std::numeric_limits<double>::quiet_NaN();
    w.max_abs_error = res.max_abs_error[res.chosen];
    w.max_output_magnitude = res.max_output_magnitude;
    for (int slot = 0; slot < 3; ++slot) {
      if (ways[i].plans[slot]) w.plans[slot] = rs.sub.PlanToOriginal(*ways[i].plans[slot]);
      w.max_abs_errors[slot] = res.max_abs_error[slot];
    }
    spdlog::debug(
        "region {}: max |error| vs reference: tuned {:.2g}, greedy {:.2g}, unfused {:.2g} on "
        "outputs up to {:.3g}",
        tr.signature, res.max_abs_error[kTuned], res.max_abs_error[kGreedy],
        res.max_abs_error[kUnfused], res.max_output_magnitude);
    w.decision =
        ways[i].order == &kIncumbentFirst
            ? "schedules that won their duels, kept unless a baseline wins: " + res.decision
            : res.decision;
    w.margin = res.margin;
    w.rounds = res.rounds;
    spdlog::debug("region {} validated in {} rounds: tuned {}, greedy {}, unfused {}: {}; plan {}",
                  tr.signature, res.rounds, Us(res.us[kTuned]), Us(res.us[kGreedy]),
                  Us(res.us[kUnfused]), res.decision, PlanText(g, w.plan.groups));
    out.push_back(std::move(w));
  }
  return out;
}

}  // namespace fusetune
