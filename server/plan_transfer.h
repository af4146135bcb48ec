#pragma once
// Stage of a lookup: transfer on a miss. A region with no stored plan takes the plan of the
// nearest tuned member of its family (ir/text/family.h) for the same target and thread count,
// with its schedules adapted to this region's sizes (ir/text/plan_transfer.h). "Nearest" is the
// smallest sum over the family's size symbols of |ln(here / member)| (BindingDistance), ties to
// the larger member; docs/signatures.md, "Transfer". A transferred plan is an answer, not a
// measurement: it is never stored, its figures are NaN ("not measured at this size"), and
// `run --plan tuned` checks it against the reference interpreter.
#include <vector>

#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_report.h"

namespace fusetune {

// For each region in `missing` (representatives, as ReuseStoredPlans returns them), fills the
// report of every region with its signature with the nearest member's plan that this request may
// use (RequestPolicy::MayReuse), marking `transferred_from`. Returns the representatives that no
// member answers, in order.
std::vector<size_t> TransferFamilyPlans(const RequestPolicy& policy,
                                        const std::vector<TuneRegion>& regions,
                                        const std::vector<size_t>& missing, const TuneCache& cache,
                                        std::vector<RegionReport>& reports);

}  // namespace fusetune
