#pragma once
// Stage: validation. A plan chosen from per-group figures is timed as a whole against TVM's greedy
// plan and the unfused plan, in paired, interleaved rounds: each round is one job that times every
// distinct plan of the region back to back, in an order rotated per round, so a burst of load on a
// shared machine hits one round, not one plan. The decision (DecideThreeWay) keeps the simplest
// plan unless a faster one wins beyond the measured noise in a sign test over the rounds:
//   simplicity: greedy (the plan a rules-only compiler gives) < unfused (no fusion decision at
//   all) < tuned (a searched plan). A challenger replaces the plan kept so far only when it is
//   faster by more than the noise floor in enough rounds that the sign test's one-sided p <= 0.05
//   (5 of 5, 7 of 8, 8 of 9 rounds).
// Both baselines run on default schedules (WithDefaultSchedules), as a rules-only compiler would:
// every searched decision, of grouping and of schedule, is in the tuned slot, so a schedule that
// won per group, timed alone, is kept only if the plan holding it also wins in sequence, or, when
// it won a paired duel (server/schedule_duels.h), does not lose in sequence (see ValidateRegions).
// (It need not win: at 2 threads a BERT layer's searched schedules won group by group and lost
// 11% as a whole.) The unfused slot is on defaults too, not on the measured schedules: unfused on
// searched schedules is a searched plan, one the partition search could pick as tuned (single ops
// are candidates), and in the slot simpler than tuned it would be kept over a faster tuned plan
// within noise without being any simpler; on defaults it is the other rules-only baseline, the
// same plan `cache verify` re-times. A tuned plan with greedy's grouping on other schedules is
// named for what it is: "searched schedules 0.97× vs greedy on defaults, within noise".
// A round is won beyond the larger of kRoundNoiseFloor (1%) and the combined standard error of the
// two medians (from each timing's stddev and repeat count): server/noise.h's RoundWon says why
// not the 3% and two standard errors of unpaired figures. A round whose timings spread to
// kNoiseCeiling (RoundDisturbed) is left out of the sign test for that comparison, as a tie,
// rather than counted as a loss: on a loaded machine two such rounds settled 4-6% wins as
// "within noise".
// How many rounds: a sequential test. Validation runs kMinRounds rounds, then one more at a time
// while a comparison is undecided (more rounds, all won, could still make it a win before
// kMaxRounds). kMinRounds is 2 because no comparison can settle sooner (0 wins of 1 could still
// become 8 of 9), and an early stop never changes a decision: it stops only when no further
// rounds could make a win, so any longer run keeps the same plan (two rounds lost settle it;
// three, the old minimum, gave the same answer a round later). A plan truly faster still wins
// after 5, and one disturbed round costs a few more rounds instead of a wrong decision. A graph
// whose three slots hold one plan (a one-op region) has nothing to compare: one round, for its
// check and figures.
#include <array>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ir/graph.h"
#include "ir/plan.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/noise.h"
#include "server/region_formation.h"
#include "server/request_policy.h"

namespace fusetune {

enum Slot { kTuned = 0, kGreedy = 1, kUnfused = 2 };
// What the decision's text calls each slot's plan.
using SlotLabels = std::array<const char*, 3>;
// The slots' plans' names in the jobs, and in the decision's verdict ("greedy kept").
inline constexpr SlotLabels kSlotNames = {"tuned", "greedy", "unfused"};
inline constexpr SlotLabels kSlotLabels = {"tuned", "greedy", "unfused"};
// The tuned plan is greedy's grouping on other schedules: the comparison is of schedules.
inline constexpr SlotLabels kScheduleLabels = {"searched schedules", "greedy on defaults",
                                               "unfused"};
// Which plan is kept when none wins beyond noise, then which is preferred next.
using SlotOrder = std::array<int, 3>;
inline constexpr SlotOrder kSimplestFirst = {kGreedy, kUnfused, kTuned};
// For re-validating a stored plan (cache verify): the stored plan, in the tuned slot, is kept
// unless a baseline beats it beyond noise.
inline constexpr SlotOrder kIncumbentFirst = {kTuned, kGreedy, kUnfused};
// "1 round", "5 rounds": what every decision's text calls a count of rounds.
inline std::string RoundsText(int n) { return fmt::format("{} round{}", n, n == 1 ? "" : "s"); }

inline constexpr int kMinRounds = 2;  // when there is something to compare
inline constexpr int kMaxRounds = 9;
// The cap for a region whose signature stands for several regions of the graph (a model's
// repeated layers): its one decision is applied to every copy, so a plan truly faster but kept out
// by the cap costs that many times over, while a round costs no more than a single region's. With
// the cap at 9 a plan that wins 4 rounds of 5 is kept in about half of the tunes; at 17, in about
// 85% (a sign test's sequential runs, simulated), and a plan no faster that wins half its rounds
// still only in 9%. The 12 MLP regions of a GPT-2 stack were decided by one such coin toss:
// "tuned 1.05x vs greedy, within noise" in one tune, "1.08x, beyond noise (7 of 8)" in the next.
inline constexpr int kMaxRoundsRepeated = 17;
inline constexpr double kSignTestAlpha = 0.05;

// One round's figures of the three slots; infinity when the slot has no plan or its plan failed.
struct RoundFigures {
  double us[3] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity()};
  double rel_error[3] = {0, 0, 0};  // standard error of the median / median, per slot
};

struct NoiseDecision {
  int chosen = -1;      // the kept slot; -1 when no slot ran in every round
  bool settled = true;  // false: another round could still change the decision
  double margin = std::numeric_limits<double>::quiet_NaN();  // chosen / runner-up (median ratio)
  std::string text;  // e.g. "tuned 1.02x vs greedy, within noise: greedy kept"
};

// The pure rule over `rounds`. same_plan[slot] is the index of the slot's distinct plan (slots
// with one plan share figures and are one candidate, named by its simplest slot), -1 = no plan.
// `labels` name the plans in the comparisons; `names` the kept slot in the verdict ("greedy kept").
NoiseDecision DecideThreeWay(const std::vector<RoundFigures>& rounds, const int same_plan[3],
                             const SlotOrder& order = kSimplestFirst, int max_rounds = kMaxRounds,
                             const SlotLabels& labels = kSlotLabels,
                             const SlotLabels& names = kSlotNames);

// Whether two plans have the same groups on the same schedules (in any order).
bool SamePlan(const Plan& a, const Plan& b);
// Whether two plans have the same groups, whatever their schedules.
bool SameGrouping(const Plan& a, const Plan& b);

// The one-sided sign-test p-value of `wins` or more wins in `n` fair coin flips.
double SignTestP(int wins, int n);

// The three plans of one graph (a region or the whole), to be timed together.
struct ThreeWay {
  const Graph* graph = nullptr;
  std::optional<Plan> plans[3];
  const SlotOrder* order = nullptr;    // instead of TimeThreeWays' order, for this way
  const SlotLabels* labels = nullptr;  // what the decision calls the plans, when not the default
  const SlotLabels* names = nullptr;  // the slots' names in the jobs and verdict, if not kSlotNames
  int max_rounds = kMaxRounds;        // kMaxRoundsRepeated for a region standing for several
};

struct ThreeWayResult {
  double us[3] = {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::infinity(),
                  std::numeric_limits<double>::infinity()};  // median over the rounds
  double max_abs_error[3] = {0, 0, 0};
  double max_output_magnitude = 0;  // the reference's, which every slot is checked against
  std::string reason[3];            // why a plan could not run
  int chosen = -1;                  // the winner's slot; -1 when none ran
  std::string decision;             // NoiseDecision::text
  std::optional<double> margin;
  int rounds = 0;
};

// Times the plans of every ThreeWay in paired rounds (see above), as the progress phase `phase`,
// and decides each. A plan equal to another of its graph (the tuned plan is often the greedy one)
// is timed once and shares its figures. A tuned plan with the greedy plan's grouping on other
// schedules is compared under kScheduleLabels, unless the way names its plans (ThreeWay::labels).
std::vector<ThreeWayResult> TimeThreeWays(const std::vector<ThreeWay>& ways, JobRunner& runner,
                                          const std::string& phase,
                                          const SlotOrder& order = kSimplestFirst);

// The validated winner of one searched region.
struct RegionWinner {
  size_t region = 0;                // index into the regions (a representative)
  int chosen = -1;                  // the winner's slot
  Plan plan;                        // the winner, in the graph's ids
  double us[3] = {0, 0, 0};         // NaN: not timed
  double max_abs_error = 0;         // the winner's, against the reference interpreter
  double max_output_magnitude = 0;  // the reference's outputs: the scale of those errors
  // Every slot's plan as timed, in the graph's ids, and its error: what the whole graph's
  // timing (server/report_assembly.h) falls back to when a baseline beats the regions' plans.
  std::optional<Plan> plans[3];
  double max_abs_errors[3] = {0, 0, 0};
  std::string decision;
  std::optional<double> margin;
  int rounds = 0;
  // The search behind it offered wpack where the region's B is constant. False for a warm-only
  // answer transferred from a member tuned without bound weights: nothing here searched it.
  bool wpack_offered = true;
};

// How the greedy and unfused baselines are scheduled.
enum class BaselineSchedules {
  // Each group on its template's default schedule (WithDefaultSchedules): the baselines are what
  // a rules-only compiler gives, and the tuned plan's searched schedules must win against them.
  kDefaults,
  // As kDefaults, but a group with no measurement at these sizes takes the schedule of the same
  // group (same nodes) in the tuned plan. A warm start (server/warm_start.h): its tuned plan is
  // a family member's, whose schedules were measured at the member's sizes, validated there
  // against greedy on defaults, and adapted; so a transferred plan that is greedy's grouping is
  // the greedy plan, timed once, not against defaults that nothing at this size says are better.
  kFromTuned,
};

// Per entry of plan.regions, with `tuned` from plan choice (server/plan_choice.h). Throws when a
// region cannot run under any of the three plans.
// A tuned plan that is greedy's grouping with no schedule but those that won their group's duel
// (server/schedule_duels.h) is kept unless a baseline beats it (kIncumbentFirst): each of its
// schedules already won paired rounds against the default, and what validation adds is that the
// kernels in sequence do not lose it. Diluted by the region's other kernels and their noise, a
// dense's 4-5% won by duel read 1.03× for its region, not a win in 5 rounds (BENCHMARKS.md,
// "Schedule duels"). Any other tuned plan must win, as above.
// `time_unfused` false: no unfused plan is timed (its figure is NaN: not measured), so a tuned
// plan equal to greedy is one plan and one round (a warm-only tune, server/warm_start.h); only a
// region where neither ran is timed again with it.
std::vector<RegionWinner> ValidateRegions(
    const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
    const MeasurementPlan& plan, const std::vector<std::optional<Plan>>& tuned, JobRunner& runner,
    BaselineSchedules baselines = BaselineSchedules::kDefaults, bool time_unfused = true);

}  // namespace fusetune
