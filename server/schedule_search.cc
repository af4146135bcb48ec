#include "server/schedule_search.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "ir/schedule_space.h"
#include "server/measuring.h"
#include "server/noise.h"
#include "server/partition_search.h"
#include "server/stage_log.h"

namespace fusetune {
namespace {

constexpr int kPerRound = 2;    // new schedules per group per round
constexpr int kMaxStale = 2;    // rounds without a faster schedule before a group drops out
constexpr int kMaxRounds = 16;  // a bound on the batches (each waits for its slowest job)

// The measured schedules within noise of the group's fastest, at most half of those measured
// (at least one).
std::vector<size_t> BetterHalf(const GroupWork& gw) {
  std::vector<size_t> ok;
  for (size_t s = 0; s < gw.schedules.size(); ++s)
    if (std::isfinite(gw.median_us[s])) ok.push_back(s);
  std::sort(ok.begin(), ok.end(),
            [&](size_t a, size_t b) { return gw.median_us[a] < gw.median_us[b]; });
  std::vector<size_t> half;
  for (size_t s : ok) {
    if (!half.empty() &&
        (half.size() * 2 >= ok.size() || FasterBeyondNoise(gw.median_us[ok[0]], gw.rel_error[ok[0]],
                                                           gw.median_us[s], gw.rel_error[s])))
      break;
    half.push_back(s);
  }
  return half;
}

// The fastest measured time of the group (not the noise rule's pick: the search follows speed).
double Fastest(const GroupWork& gw) {
  return *std::min_element(gw.median_us.begin(), gw.median_us.end());
}

// The signatures of the groups in `rs`'s best cover by their fastest times so far. Heaviest
// first over all of a region's groups spent a GPT-2 MLP region's whole budget on fused groups no
// cover used (FFN 2 behind part of the GELU, 5.0-5.3 ms), never on FFN 2 alone (2.9 ms), which the
// plan ran, at 89.9% of the FMA peak where a schedule of the space reaches 93.6%.
std::set<std::string> InBestCover(const Graph& graph, const TuneRegion& tr, const RegionSearch& rs,
                                  const MeasurementPlan& plan) {
  const std::vector<CostedGroup> costed = CostedCandidates(tr, rs, plan, Fastest);
  std::set<std::string> sigs;
  for (size_t idx : FindBestPartition(graph, tr.region.nodes, costed).groups)
    sigs.insert(rs.group_sigs[idx]);
  return sigs;
}

}  // namespace

std::vector<Schedule> NextSchedules(GroupWork& gw, int n) {
  std::vector<Schedule> picked;
  const std::vector<size_t> half = BetterHalf(gw);
  auto take = [&](auto&& wanted) {
    for (auto it = gw.candidates.begin();
         it != gw.candidates.end() && static_cast<int>(picked.size()) < n;) {
      if (wanted(*it)) {
        picked.push_back(std::move(*it));
        it = gw.candidates.erase(it);
      } else {
        ++it;
      }
    }
  };
  take([&](const Schedule& c) {
    for (size_t s : half)
      if (ScheduleDistance(c, gw.schedules[s]) == 1) return true;
    return false;
  });
  take([](const Schedule&) { return true; });
  return picked;
}

int MeasureWithScheduleSearch(const Graph& graph, const std::vector<TuneRegion>& regions,
                              MeasurementPlan& plan, JobRunner& runner, TuneCache& cache,
                              int budget_per_region) {
  int measured = Measure(graph, plan, runner, cache);
  std::vector<PlannedJob> all = std::move(plan.jobs);
  std::vector<int> left(plan.regions.size(), budget_per_region);
  std::map<std::string, int> stale;
  std::map<std::string, double> fastest;
  int extra = 0, rounds = 0, from_store = 0;
  for (int round = 1; round <= kMaxRounds && budget_per_region > 0; ++round) {
    plan.jobs.clear();
    std::set<std::string> taken;
    for (size_t r = 0; r < plan.regions.size(); ++r) {
      RegionSearch& rs = plan.regions[r];
      std::vector<std::string> sigs;
      for (const std::string& sig : rs.group_sigs) {
        const GroupWork& gw = plan.groups.at(sig);
        if (plan.pruned.count(sig) || gw.candidates.empty() || !std::isfinite(Fastest(gw)) ||
            stale[sig] >= kMaxStale || std::find(sigs.begin(), sigs.end(), sig) != sigs.end())
          continue;
        sigs.push_back(sig);
      }
      if (left[r] <= 0 || sigs.empty()) continue;  // nothing to order: skip the cover's search
      const std::set<std::string> cover = InBestCover(graph, regions[rs.region], rs, plan);
      std::stable_sort(sigs.begin(), sigs.end(), [&](const std::string& a, const std::string& b) {
        if (cover.count(a) != cover.count(b)) return cover.count(a) > cover.count(b);
        return Fastest(plan.groups.at(a)) > Fastest(plan.groups.at(b));
      });
      for (const std::string& sig : sigs) {
        if (left[r] <= 0) break;
        if (!taken.insert(sig).second) continue;
        GroupWork& gw = plan.groups.at(sig);
        if (!fastest.count(sig)) fastest[sig] = Fastest(gw);
        std::vector<size_t> missing;
        for (Schedule& s : NextSchedules(gw, std::min(kPerRound, left[r]))) {
          const bool stored = gw.Add(std::move(s), cache);
          for (RegionSearch& other : plan.regions)
            if (std::find(other.group_sigs.begin(), other.group_sigs.end(), sig) !=
                other.group_sigs.end())
              ++other.candidates;
          --left[r];
          if (stored) {
            ++plan.reused;
            ++rs.reused;
            ++from_store;
          } else {
            missing.push_back(gw.schedules.size() - 1);
          }
        }
        if (!missing.empty()) plan.jobs.push_back(JobFor(graph, gw, std::move(missing)));
      }
    }
    if (taken.empty()) break;
    ++rounds;
    for (const PlannedJob& pj : plan.jobs) extra += static_cast<int>(pj.schedules.size());
    measured += Measure(graph, plan, runner, cache);
    for (const std::string& sig : taken) {
      const double now = Fastest(plan.groups.at(sig));
      const GroupWork& gw = plan.groups.at(sig);
      const size_t at =
          std::min_element(gw.median_us.begin(), gw.median_us.end()) - gw.median_us.begin();
      // A faster schedule beyond noise keeps the group alive; else it goes stale.
      if (now < fastest[sig] && FasterBeyondNoise(now, gw.rel_error[at], fastest[sig], 0))
        stale[sig] = 0;
      else
        ++stale[sig];
      fastest[sig] = std::min(fastest[sig], now);
    }
    all.insert(all.end(), std::make_move_iterator(plan.jobs.begin()),
               std::make_move_iterator(plan.jobs.end()));
  }
  plan.jobs = std::move(all);
  spdlog::debug(
      "schedule search (ranking: {}): {} rounds, {} more schedules measured, {} from the store",
      plan.ranking, rounds, extra, from_store);
  for (const auto& [sig, gw] : plan.groups)
    if (gw.schedules.size() > 1 && gw.best_index() != 0)
      spdlog::debug("{} ({}): schedule '{}' {:.2f} µs over the default's {:.2f} µs",
                    NodesText(graph, gw.group.nodes), fmt::join(OpsOf(graph, gw.group.nodes), ", "),
                    gw.best_schedule().ToString(), gw.best_us(), gw.median_us[0]);
  return measured;
}

}  // namespace fusetune
