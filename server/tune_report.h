#pragma once
// What a tune (or a lookup of cached plans) answers, per region and for the whole graph.
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/plan.h"
#include "ir/plan_changes.h"
#include "worker/job.h"

namespace fusetune {

// A tune that started from a tuned member of the region's family (server/warm_start.h).
struct WarmStartReport {
  std::string from;           // the member's sizes that differ, "s1=256 (here 192)"
  double transferred_us = 0;  // the transferred plan timed at this size (infinity: failed)
  std::string chosen;         // which of transferred ("tuned"), greedy, unfused won there
  int rounds = 0;             // paired rounds of that validation
  double seconds = 0;         // the warm start's wall time (every warm region together)
  // (group, schedule) pairs the region's search planned after the warm start (the schedule
  // search's further rounds not counted), or, when it stopped there (`searched` false,
  // --warm-only), would have measured and skipped.
  int search_candidates = 0;
  bool searched = true;
};

struct RegionReport {
  std::string signature;
  std::vector<ValueId> nodes;
  std::vector<std::string> ops;
  bool cached = false;
  // Non-empty: no plan is stored for this region, and `plan` is the nearest tuned member of its
  // family's, adapted to these sizes (server/plan_transfer.h). The text says where it came from,
  // "s1=256 (here 192)". Not measured at this size: the figures are the member's, not stored.
  std::string transferred_from;
  // Non-empty: no plan is stored or transferred for this region, though a size of its family was
  // tuned whose sizes coincide where these differ, so its plan does not carry over
  // (server/plan_transfer.h); "tuned at s0=12 s1=64, where 64 is two sizes here (8 and 64)".
  std::string transfer_refused;
  // Non-empty: the store held a plan for this region that the tune refused, and why
  // (kSearchedWithBoundWeights, server/stored_plans.h); the region was searched again.
  std::string searched_again;
  std::vector<PlanGroup> plan;  // the stored plan, in this graph's node ids
  std::string chosen;           // "tuned", "greedy" or "unfused"
  double tuned_us = 0, greedy_us = 0, unfused_us = 0;
  double max_abs_error = 0;
  double max_output_magnitude = 0;  // the reference's outputs: max_abs_error's scale
  // How the validation decided, e.g. "tuned 1.02× vs greedy, within noise: greedy kept"; "" for a
  // plan stored before decisions were recorded.
  std::string decision;
  std::optional<double> margin;               // chosen time / runner-up's time (the store's margin)
  int rounds = 0;                             // paired validation rounds behind the decision
  int candidates = 0;                         // (group, schedule) pairs in the search space
  int measured = 0;                           // measured in this run
  int reused = 0;                             // found in the store
  int pruned = 0;                             // skipped by the cost model under the budget
  std::optional<WarmStartReport> warm_start;  // this tune started from the family's plan
  // Where the plan leaves the rules (greedy on default schedules): what won, when it won.
  std::vector<PlanChange> changes;
};

// A group's fastest schedule timed against its default in paired rounds (server/schedule_duels.h).
struct ScheduleDuel {
  std::string group;  // its nodes, "%3, %4"
  std::vector<std::string> ops;
  std::string schedule;   // the challenger
  std::string runner_up;  // a third schedule timed in the same rounds, or empty
  std::string kept;  // the schedule the group keeps: the challenger, the runner-up or the default
  std::string decision;  // "schedule 1.05× vs default schedule, beyond noise (5 of 5 rounds): ..."
  int rounds = 0;
  bool won = false;  // a schedule other than the default won
  // The challenger was the default's weights-packed twin: kept unless the default won.
  bool kept_unless_beaten = false;
};

struct TuneReport {
  std::string target;
  int threads = 1;
  std::vector<RegionReport> regions;
  Plan tuned_plan;  // the whole graph
  double total_tuned_us = 0, total_greedy_us = 0, total_unfused_us = 0;
  // false: sums of stored region figures (a fully cached run, whose plans were checked against
  // the reference when they were stored). A graph that is one region is timed by its validation.
  bool totals_measured = false;
  std::string total_chosen = "tuned";  // which whole-graph plan was kept
  std::string total_decision;          // how, when the whole graph was timed
  double max_abs_error = 0;
  double max_output_magnitude = 0;  // the largest reference value max_abs_error was read beside
  int candidates_measured = 0;
  int measurements_reused = 0;
  int pruned = 0;
  double seconds = 0;
  // Where the seconds went: wall time per measuring stage ("measuring", "validating", ...) and
  // the jobs' own phases summed (compile, reference, timing, sandbox, ...; worker/job.h).
  std::vector<std::pair<std::string, double>> stage_seconds;
  JobPhases job_phases;
  // The order the search planned schedules in (MeasurementPlan::ranking): "learned", "roofline",
  // or "none" when no order mattered (a warm-only tune: no ranker trained); "" when nothing was
  // planned (an answer from the cache).
  std::string schedule_ranking;
  std::vector<ScheduleDuel> duels;
};

// The `tune --json` shape of docs/architecture.md.
std::string TuneReportToJson(const Graph& graph, const std::string& graph_name,
                             const TuneReport& report);

}  // namespace fusetune
