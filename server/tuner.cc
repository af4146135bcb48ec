// Tune(): the search for one graph as a script of its stages, one file each (see tuner.h). Each
// stage logs what it decided at --log-level debug, so a user can follow why a plan won.
#include "server/tuner.h"

#include <chrono>
#include <set>

#include <spdlog/spdlog.h>

#include "server/calibration.h"
#include "server/grouping_fallback.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/measuring.h"
#include "server/plan_choice.h"
#include "server/plan_transfer.h"
#include "server/region_formation.h"
#include "server/report_assembly.h"
#include "server/request_policy.h"
#include "server/schedule_duels.h"
#include "server/schedule_search.h"
#include "server/stored_plans.h"
#include "server/tune_cache.h"
#include "server/validation.h"
#include "server/warm_start.h"

namespace fusetune {

TuneReport Tune(const Graph& graph, const TuneOptions& options, db::Cache& store,
                MeasurementBackend& backend, const ProgressFn& progress) {
  const auto start = std::chrono::steady_clock::now();
  const RequestPolicy policy(graph, options.search);
  JobRunner runner(backend, options, progress);
  TuneCache cache(store, runner.target(), options.search.threads);
  TuneReport report;
  report.target = runner.target();
  report.threads = options.search.threads;

  const std::vector<TuneRegion> regions = FormRegions(policy);
  report.regions = DescribeRegions(graph, regions);
  const std::vector<size_t> to_search = ReuseStoredPlans(
      policy, regions, cache, options.use_cache ? StoredPlanUse::kTune : StoredPlanUse::kOff,
      report.regions);

  if (to_search.empty()) {
    report.tuned_plan = CollectTunedPlan(graph, report.regions);
    report.total_chosen = report.regions.size() == 1 ? report.regions[0].chosen : "tuned";
    SumRegionFigures(report);
  } else {
    WarmStarts starts = FindWarmStarts(policy, regions, to_search, options.warm_start, cache);
    const std::set<size_t> unsearched = UnsearchedRegions(options.warm_start, starts);
    // The roofline orders and prunes what a search measures: a tune that searches no region (a
    // warm-only one) never times a calibration job for it.
    const RooflineTarget roofline =
        Calibrate(cache, runner, options.search.budget > 0 && unsearched.size() < to_search.size());
    MeasurementPlan plan =
        PlanMeasurements(policy, regions, to_search, cache, roofline, unsearched);
    const WarmStartResult warm = WarmStartRegions(policy, regions, options.warm_start,
                                                  std::move(starts), cache, runner, plan);
    const int measured = MeasureWithScheduleSearch(graph, regions, plan, runner, cache,
                                                   options.search.schedule_budget);
    std::vector<RegionWinner> winners = warm.final_winners;
    if (!plan.regions.empty()) {
      std::vector<std::optional<Plan>> tuned = ChooseTunedPlans(graph, regions, plan);
      // A duel can change a group's schedule and time either way: the covers are chosen again,
      // and a group new to them is dueled in turn (no group twice; a bound on the passes).
      for (int pass = 0; pass < kDuelPasses; ++pass) {
        std::vector<ScheduleDuel> duels = DuelSchedules(graph, tuned, plan, runner);
        if (duels.empty()) break;
        report.duels.insert(report.duels.end(), std::make_move_iterator(duels.begin()),
                            std::make_move_iterator(duels.end()));
        tuned = ChooseTunedPlans(graph, regions, plan);
      }
      std::vector<RegionWinner> validated = ValidateRegions(policy, regions, plan, tuned, runner);
      std::vector<ScheduleDuel> duels =
          RetryOnGreedysGrouping(policy, regions, plan, tuned, validated, runner);
      report.duels.insert(report.duels.end(), std::make_move_iterator(duels.begin()),
                          std::make_move_iterator(duels.end()));
      for (RegionWinner& w : validated) winners.push_back(std::move(w));
    }
    RecordBestPlans(policy, regions, winners, cache, report.regions);
    AddSearchCounts(plan, measured, report);
    AddWarmStartReports(regions, warm, options.warm_start != WarmStart::kOnly, report);
    report.tuned_plan = CollectTunedPlan(graph, report.regions);
    // A graph that is one region was just timed whole by its validation: those are the totals.
    if (report.regions.size() == 1 &&
        static_cast<int64_t>(report.regions[0].nodes.size()) == graph.num_nodes()) {
      report.total_chosen = report.regions[0].chosen;
      report.total_decision = report.regions[0].decision;
      report.totals_measured = true;
      SumRegionFigures(report);
    } else if (WarmOnlySkipsWholeGraph(options.warm_start, warm)) {
      report.total_chosen = report.regions.size() == 1 ? report.regions[0].chosen : "tuned";
      report.total_decision = kWarmOnlyTotals;
      SumRegionFigures(report);
    } else {
      const WholeGraphTiming whole = TimeWholeGraph(policy, runner, report);
      KeepTheWholeGraphsChoice(policy, regions, whole, winners, cache, report);
    }
  }
  NameChangesFromGreedy(policy, report);
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  report.stage_seconds = runner.stage_seconds();
  report.job_phases = runner.job_phases();
  spdlog::debug("tuned in {:.2f} s: {} measured, {} reused, {} pruned", report.seconds,
                report.candidates_measured, report.measurements_reused, report.pruned);
  for (const auto& [stage, seconds] : report.stage_seconds)
    spdlog::debug("  {}: {:.2f} s", stage, seconds);
  if (!report.stage_seconds.empty())
    spdlog::debug("  in the jobs: {}", DescribePhases(report.job_phases));
  return report;
}

TuneReport LookupCached(const Graph& graph, const SearchOptions& options, db::Cache& store,
                        const std::string& target, std::vector<std::string>* missing,
                        bool exact_only) {
  const RequestPolicy policy(graph, options);
  TuneCache cache(store, target, options.threads);
  TuneReport report;
  report.target = target;
  report.threads = options.threads;
  const std::vector<TuneRegion> regions = FormRegions(policy);
  report.regions = DescribeRegions(graph, regions);
  std::vector<size_t> unanswered =
      ReuseStoredPlans(policy, regions, cache, StoredPlanUse::kLookup, report.regions);
  if (!exact_only)
    unanswered = TransferFamilyPlans(policy, regions, unanswered, cache, report.regions);
  for (size_t r : unanswered) missing->push_back(regions[r].signature);
  if (missing->empty()) report.tuned_plan = CollectTunedPlan(graph, report.regions);
  SumRegionFigures(report);
  NameChangesFromGreedy(policy, report);
  return report;
}

}  // namespace fusetune
