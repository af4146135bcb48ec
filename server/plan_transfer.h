#pragma once
// Stage of a lookup: transfer on a miss. A region with no stored plan takes the plan of the
// nearest tuned member of its family (ir/text/family.h) for the same target and thread count,
// with its schedules adapted to this region's sizes (ir/text/plan_transfer.h). "Nearest" is the
// smallest sum over the family's size symbols of |ln(here / member)| (BindingDistance), ties to
// the larger member; docs/signatures.md, "Transfer". A transferred plan is an answer, not a
// measurement: it is never stored, its figures are NaN ("not measured at this size"), and
// `run --plan tuned` checks it against the reference interpreter. A warm-started tune
// (server/warm_start.h) times it here before it counts.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "db/records.h"
#include "server/region_formation.h"
#include "server/request_policy.h"
#include "server/tune_cache.h"
#include "server/tune_report.h"

namespace fusetune {

// The plan of one family member carried to every region with one signature.
struct FamilyTransfer {
  db::BestPlanRecord member;  // the stored plan it came from
  std::string from;           // the member's sizes that differ: "s1=256 (here 192)"
  // Per region with the representative's signature: its index and the plan in the graph's ids.
  std::vector<std::pair<size_t, std::vector<PlanGroup>>> plans;
};

// The nearest member's plan that lowers on every region with representative `r`'s signature and
// that this request may use (RequestPolicy::MayReuse); nullopt when no member answers.
// `other_sizes_only`: a member with this very signature is skipped (a re-tune warm-starts from
// other sizes, never from the plan it replaces). `refused`: when no member answers and one of
// the family without equalities was passed over because its sizes coincide where these differ
// (S = 64, the head size, tuned; S = 8 asked), which member and which sizes; else left empty.
std::optional<FamilyTransfer> FindFamilyTransfer(const RequestPolicy& policy,
                                                 const std::vector<TuneRegion>& regions, size_t r,
                                                 const TuneCache& cache,
                                                 bool other_sizes_only = false,
                                                 std::string* refused = nullptr);

// For each region in `missing` (representatives, as ReuseStoredPlans returns them), fills the
// report of every region with its signature with FindFamilyTransfer's plan, marking
// `transferred_from`. Returns the representatives that no member answers, in order, with their
// reports' `transfer_refused` set where FindFamilyTransfer says why.
std::vector<size_t> TransferFamilyPlans(const RequestPolicy& policy,
                                        const std::vector<TuneRegion>& regions,
                                        const std::vector<size_t>& missing, const TuneCache& cache,
                                        std::vector<RegionReport>& reports);

}  // namespace fusetune
