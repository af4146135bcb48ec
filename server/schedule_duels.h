#pragma once
// Stage: schedule duels. From per-group figures a schedule enters the tuned plan only when it
// beats its group's default beyond the unpaired noise rule (3% and two standard errors,
// server/noise.h): the candidate jobs time each schedule once, beside compiles. Few gains worth
// having got through that rule: weights packed once (wpack) ran 4-8% faster on BERT's denses
// alone, yet at S = 256 tunes kept it in almost no region (BENCHMARKS.md, "Schedule duels").
// A duel gives such a schedule a fair test. The group's fastest other schedule by median, unless
// it is slower than the default beyond the unpaired noise floor, is timed against the default in
// paired rounds: alone on the worker, in an order rotated per round, decided by validation's sign
// test (server/validation.h). A schedule the unpaired rule picked is dueled too, and loses its
// place if it loses the duel: the group's schedule then rests on paired rounds either way. The
// duel's winner becomes the group's schedule for plan choice; validation then keeps a plan whose
// only schedule changes won duels unless a baseline beats it.
// A group whose B is constant duels the default's twin that packs the weights once (wpack=1, no
// other knob changed; measurement planning always measures it), and keeps it unless the default
// wins: the twin does the default's arithmetic and moves B's packing out of the call, so paired
// rounds that cannot tell the two apart are no evidence for the default. When the twin had to win,
// tunes a minute apart kept it in different dense groups of BERT's layer. Another schedule the
// unpaired rule picked is dueled instead when its figure beats the twin's beyond the floor.
// A third schedule, the runner-up, rides in the same rounds when its figure is within the
// unpaired noise floor (3%) of the challenger's: the fastest other schedule. It must beat
// whichever of the default and the challenger the rounds keep, so the unpaired rule's choice
// between schedules a few percent apart is made by paired rounds too.
// Only groups of the regions' tuned plans are dueled: every schedule the unpaired rule picked and
// every weights-packed twin (so a plan whose schedule changes all won duels is judged as such by
// validation), and of the rest at most kMaxDuels in all, the heaviest (by the default's time)
// first: a duel costs 2-9 paired rounds of its group, and two when the schedules are of one speed.
#include <optional>
#include <vector>

#include "ir/plan.h"
#include "server/job_runner.h"
#include "server/measurement_planning.h"
#include "server/tune_report.h"

namespace fusetune {

inline constexpr int kMaxDuels = 6;
// Rounds of duels and plan choice, while a new cover holds groups not yet dueled.
inline constexpr int kDuelPasses = 3;

// Duels the groups of `tuned` (per entry of plan.regions, in `graph`'s ids) and marks each
// dueled group's winner (GroupWork::dueled: the challenger, the runner-up, or 0 for the default).
// Returns every duel run, won or not.
std::vector<ScheduleDuel> DuelSchedules(const Graph& graph,
                                        const std::vector<std::optional<Plan>>& tuned,
                                        MeasurementPlan& plan, JobRunner& runner);

}  // namespace fusetune
