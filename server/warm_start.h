#pragma once
// Stage: warm start. A region to search whose family has a tuned member for this target and
// thread count (server/plan_transfer.h) starts from that member's plan, adapted to its sizes:
//
//   1. the transferred plan is timed against greedy and unfused (unfused not with 2.) in the
//      validation's paired rounds (server/validation.h, the noise rule: greedy is kept unless
//      the transferred plan wins beyond noise). The baselines' groups that the transferred plan
//      holds too take its schedules (BaselineSchedules::kFromTuned): nothing is measured per
//      group at this size, and the member's measured schedules, adapted, are better evidence
//      than the defaults. So a transferred plan with greedy's grouping (the usual case) is
//      greedy, timed once (against unfused, or alone with 2.), and the warm answer is as well
//      scheduled as the member was;
//   2. WarmStart::kOnly (`tune --warm-only`) stops there: the winner is the region's plan,
//      measured at this size and stored like any validated plan, and the search's (group,
//      schedule) measurements are skipped. It times the transferred plan against greedy only,
//      as the issue puts it ("measures the transferred plan against greedy first and, under a
//      small budget, can stop there"): the unfused slot is not timed (its figure is stored as
//      NULL, not measured, and the decision says so). Unfused is the slot that cost most here:
//      its kernels (the seed: three) compiled in the first job, and a second distinct plan,
//      which needs two rounds where a transferred plan equal to greedy needs one (its check
//      against the reference and its figure). The family member was itself validated, against
//      unfused where it was searched; a warm start that searches (3.) times all three;
//   3. otherwise the search runs as usual, with the family's groups and their adapted schedules
//      measured first and never left out by --budget (the budget then goes to the other groups
//      by the cost model), so the budget goes where the family says fusion pays.
//
// Why a flag and not a budget threshold: --budget counts (group, schedule) measurements beyond
// the baselines, and a warm start measures none (it times whole plans), so no budget value
// means "stop at the warm start" the way MetaSchedule's max_trials=0 means "use the database".
// A user asks for it; a region without a tuned family member is searched either way.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/plan_transfer.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_options.h"
#include "server/tune_report.h"
#include "server/validation.h"

namespace fusetune {

struct WarmRegion {
  size_t region = 0;          // index into the regions (a representative)
  FamilyTransfer transfer;    // where its plan came from
  RegionWinner winner;        // transferred vs greedy vs unfused at this size
  int search_candidates = 0;  // (group, schedule) pairs its search measures (or would have)
};

struct WarmStartResult {
  std::vector<WarmRegion> regions;
  double seconds = 0;  // transfer and validation, wall time
  // kOnly: the validated winners of the warm regions, which the search no longer holds.
  std::vector<RegionWinner> final_winners;
};

// The regions to search (representatives) whose family has a tuned member to start from, found
// before the search is planned: a warm-only tune plans those regions for their validation only
// (UnsearchedRegions), which spares it ranking, and training a ranker for, schedules it never
// measures (server/schedule_model.h).
struct WarmStarts {
  std::map<size_t, FamilyTransfer> transfers;  // by region
  double seconds = 0;                          // finding them, wall time
};
// kOff: none. A region's own stored plan is no member to start from: a region to search has
// none this tune takes (the cache is off, the request's policy refuses it, or it was tuned
// without the bound weights this tune has), and a re-tune starts from other sizes only.
WarmStarts FindWarmStarts(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                          const std::vector<size_t>& to_search, WarmStart mode,
                          const TuneCache& cache);
// PlanMeasurements' `unsearched`: with kOnly, the warm regions; otherwise none.
std::set<size_t> UnsearchedRegions(WarmStart mode, const WarmStarts& starts);

// Runs steps 1-3 above on `plan` (from PlanMeasurements over the regions to search, with
// UnsearchedRegions). With kOnly, the warm regions leave `plan` (with the jobs only they needed)
// and their winners are in final_winners; with kSearch, `plan` measures the family's groups
// first. kOff: nothing.
WarmStartResult WarmStartRegions(const RequestPolicy& policy,
                                 const std::vector<TuneRegion>& regions, WarmStart mode,
                                 WarmStarts starts, const TuneCache& cache, JobRunner& runner,
                                 MeasurementPlan& plan);

// Whether the tune's whole-graph timing is skipped: with kOnly, once a region was warm-started.
// A warm-only tune is asked for a quick answer, and the whole graph timed under the three plans
// would cost about as much as the warm start itself (a BERT layer: 2.8 of 9.6 s) to report
// totals that no stored plan depends on; each region's plan was checked and timed against its
// baselines, so the report's totals are the sums of the regions' figures, and it says so.
bool WarmOnlySkipsWholeGraph(WarmStart mode, const WarmStartResult& warm);
inline constexpr const char* kWarmOnlyTotals =
    "warm start only: the whole graph was not timed; totals are the sums of the regions' figures";

// Each warm region's WarmStartReport into the reports of the regions with its signature.
void AddWarmStartReports(const std::vector<TuneRegion>& regions, const WarmStartResult& warm,
                         bool searched, TuneReport& report);

}  // namespace fusetune
