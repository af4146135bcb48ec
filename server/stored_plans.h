#pragma once
// Stages: reuse of stored plans, and storing of validated ones. A region's best plan is stored
// under its signature with its groups as positions in the region's canonical node order, so it
// applies to every region with that signature, in any graph. Whether a stored plan may answer a
// request, and whether a request's plan may be stored, is the request policy's decision. (A
// transfer of plans across shapes on a miss would start here.)
#include <optional>
#include <string>
#include <vector>

#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_report.h"
#include "server/validation.h"

namespace fusetune {

// A stored plan (canonical positions) -> groups in this graph's ids, via the region's canonical
// node order. Throws UserError when the record does not fit the region.
std::vector<PlanGroup> FromStored(const CanonicalForm& canon, const db::BestPlanRecord& rec);
// Groups in this graph's ids -> canonical positions, as the store keeps them.
std::vector<db::StoredGroup> ToStored(const CanonicalForm& canon, const Plan& plan);

// Who asks the store for a region's plan.
enum class StoredPlanUse {
  // A lookup (`query`, LookupBest, `run --plan tuned`): any stored plan of the signature answers.
  // One stored with bound weights runs with B as an input (a wpack kernel packs per call), and
  // one stored without them is a correct, if less searched, answer.
  kLookup,
  // A tune: as a lookup, except that a region whose matmuls have constant B (its space offers
  // wpack) refuses a plan whose tune offered none (db weights_bound false), searches the region
  // again and says so (RegionReport::searched_again). Its stored measurements still count.
  kTune,
  // A tune with the cache off (--no-cache): no stored plan answers.
  kOff,
};

// The reason a tune gives for searching a region whose stored plan it refused.
inline constexpr const char* kSearchedWithBoundWeights =
    "stored plan was tuned without bound weights: searched again";

// Fills the reports (one per region) of every region whose signature has a stored plan this
// request may reuse, all regions of a signature or none; returns the representatives of the
// signatures that need a search, in region order. With kOff, every one does.
std::vector<size_t> ReuseStoredPlans(const RequestPolicy& policy,
                                     const std::vector<TuneRegion>& regions, const TuneCache& cache,
                                     StoredPlanUse use, std::vector<RegionReport>& reports);

// Each validated winner into the reports of every region with its signature, and into the store
// when the policy allows (RequestPolicy::MayStoreBestPlan), flagged weights_bound when its region
// offered wpack to the search (TuneRegion::weights_bound, RegionWinner::wpack_offered); a stored
// plan it replaces is kept in the store's history with `replace_reason`, or the store's reason
// for a re-tune.
void RecordBestPlans(const RequestPolicy& policy, const std::vector<TuneRegion>& regions,
                     const std::vector<RegionWinner>& winners, TuneCache& cache,
                     std::vector<RegionReport>& reports,
                     const std::optional<std::string>& replace_reason = std::nullopt);

}  // namespace fusetune
