#pragma once
// Stage: measurement planning. The candidate groups of the regions to search, deduplicated by
// group signature (a group measured once serves every region and request that holds it), each
// with its schedules and what the store already knows of them; the cost model's estimate of what
// fusing each saves; the budget's pruning (server/budget.h); and the jobs still to run.
// Measurements are read from the store here and written in server/measuring.cc, nowhere else.
// Which schedules a group tries first is decided here: its space (ir/schedule_space.h) in the
// order of server/schedule_model.h, the first --schedules of it planned; the rest stay candidates
// that the schedule search (server/schedule_search.h) measures under its per-region budget.
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "ir/plan.h"
#include "ir/subgraph.h"
#include "ir/text/signature.h"
#include "server/cost_model.h"
#include "server/partition_search.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "worker/job.h"

namespace fusetune {

// One distinct group (by signature) with its schedules and what is known of them.
struct GroupWork {
  std::string signature;
  CanonicalForm canon;
  FusedGroup group;  // an instance in this graph
  std::vector<Schedule> schedules;
  std::vector<double> median_us;     // per schedule; infinity = invalid or unmeasured
  std::vector<double> rel_error;     // per schedule: the median's relative standard error (noise.h)
  std::vector<bool> known;           // per schedule: a stored or fresh measurement exists
  std::vector<Schedule> candidates;  // the rest of the space, best ranked first: not yet planned
  double benefit = 0;                // roofline estimate of what fusing saves (µs)
  // The winner of the group's duel against its default (server/schedule_duels.h): the challenger
  // or the runner-up, or 0, the default; unset when no duel ran.
  std::optional<size_t> dueled;
  // The schedule used: the duel's winner; else the default (the first) unless another is faster
  // beyond the noise of the two measurements (server/noise.h), then the fastest such. best_us()
  // is its time.
  size_t best_index() const;
  double best_us() const { return median_us[best_index()]; }
  Schedule best_schedule() const { return schedules[best_index()]; }
  // Plans one more schedule, with the store's measurement of it when there is one (returns
  // whether there was).
  bool Add(Schedule schedule, const TuneCache& cache);
};
using MeasuredGroups = std::map<std::string, GroupWork>;  // by group signature

// `plan` (over `graph`, or over `region` of it when given) with each group on the first schedule
// of its space at `threads` threads (ir/schedule_space.h): the template's default, what a
// rules-only compiler runs. Validation's baselines (server/validation.h) and `cache verify` use it.
Plan WithDefaultSchedules(const Graph& graph, Plan plan, int threads,
                          const Subgraph* region = nullptr);

// One region to search.
struct RegionSearch {
  size_t region = 0;                    // index into the regions (a representative)
  Subgraph sub;                         // the region as a graph of its own: what validation times
  Plan greedy;                          // the greedy baseline over sub's ids
  std::vector<std::string> group_sigs;  // per candidate group of the region
  int candidates = 0;                   // (group, schedule) pairs
  int reused = 0;                       // of the groups first met here: stored measurements
  int pruned = 0;                       // unmeasured schedules of its pruned groups
  int measured = 0;                     // filled by measuring
};

// A group as a graph of its own: what its candidate jobs and its duel (server/schedule_duels.h)
// time, with the group's nodes in that graph's ids (sorted).
struct GroupGraph {
  Subgraph sub;
  std::vector<ValueId> nodes;
};
GroupGraph GroupAsGraph(const Graph& graph, const GroupWork& gw);

// The schedules of one group still to measure, as one job (a graph that is the group, one plan
// per schedule).
struct PlannedJob {
  std::string signature;
  std::vector<size_t> schedules;
  MeasureJob job;
};

// The job that measures schedules `missing` (indices into gw.schedules) of one group.
PlannedJob JobFor(const Graph& graph, const GroupWork& gw, std::vector<size_t> missing);

struct MeasurementPlan {
  MeasuredGroups groups;
  std::vector<RegionSearch> regions;  // in search order
  std::set<std::string> pruned;       // signatures the budget leaves unmeasured
  std::vector<PlannedJob> jobs;
  int reused = 0;  // stored measurements found
  int pruned_schedules = 0;
  // Which order the schedules were planned in: "roofline" or "learned"; "none" when no group's
  // order mattered (a warm-only tune), so the ranker was neither asked nor trained.
  std::string ranking;
};

// The candidate groups of `tr` (searched as `rs`) as the partition search takes them, each at
// `cost(its GroupWork)`; a pruned group is infinitely costly (never in a cover).
std::vector<CostedGroup> CostedCandidates(const TuneRegion& tr, const RegionSearch& rs,
                                          const MeasurementPlan& plan,
                                          double (*cost)(const GroupWork&));

// `unsearched`: regions of `to_search` that are planned only to be validated, never searched
// (a warm-only start's, server/warm_start.h). Their figures are the same as if searched, but a
// group only they hold, of which the store knows no schedule, is not ranked (see NewGroup).
MeasurementPlan PlanMeasurements(const RequestPolicy& policy,
                                 const std::vector<TuneRegion>& regions,
                                 const std::vector<size_t>& to_search, const TuneCache& cache,
                                 const RooflineTarget& roofline,
                                 const std::set<size_t>& unsearched = {});

}  // namespace fusetune
