#pragma once
// Re-validation of stored plans (`fusetune cache verify`): a plan stored once is otherwise served
// forever, so one stored after a disturbed measurement stays wrong. Each stored plan is rebuilt
// from its region's canonical text and timed again against the region's greedy plan and its
// unfused plan, both with default schedules (what a rules-only compiler gives), in the paired
// rounds of validation (server/validation.h) with the stored plan as the incumbent: it is kept
// unless a baseline is faster beyond noise, and then the baseline replaces it in the store (the
// old row goes to replaced_plans with the reason, e.g. "verify: greedy 1.12× faster"). A plan kept
// is left as stored, with only its verified_at set (the next idle re-check starts elsewhere).
#include <optional>
#include <string>
#include <vector>

#include "db/cache.h"
#include "server/measurement_backend.h"
#include "server/tune_options.h"

namespace fusetune {

struct VerifiedPlan {
  db::BestPlanRecord stored;  // as it was before verification
  std::string skipped;        // why it was not re-timed (another target, a text that does not
                              // rebuild the region); empty when it was
  std::string kept;           // "stored", "greedy" or "unfused"
  bool replaced = false;
  std::string decision;  // the noise rule's text, with the stored plan as "tuned"
  double stored_us = 0, greedy_us = 0, unfused_us = 0;  // medians over the rounds
  std::optional<double> margin;
  int rounds = 0;
};

// The order in which to re-check plans: never re-validated before re-validated (those the
// longest ago first); among those never re-validated, the least certain first: the margin nearest
// 1 (the decision closest to the noise), then the fewest rounds, then the oldest.
std::vector<db::BestPlanRecord> LeastCertainFirst(std::vector<db::BestPlanRecord> plans);

// Verifies `plans` on `backend` (its target; plans of another target are skipped), timing as in
// `options` (threads come from each plan's key). Replaces plans found slower beyond noise.
std::vector<VerifiedPlan> VerifyStoredPlans(const std::vector<db::BestPlanRecord>& plans,
                                            db::Cache& store, MeasurementBackend& backend,
                                            const TuneOptions& options,
                                            const ProgressFn& progress = {});

}  // namespace fusetune
