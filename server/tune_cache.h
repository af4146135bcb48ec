#pragma once
// The tuner's view of the store: the calls it makes (best plans, measurements, the target's
// roofline), with the keys built here once from the target, the thread count and kSearchVersion.
// This file is the only one of the tuner that calls db::Cache.
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "server/cost_model.h"

namespace fusetune {
namespace db {
class Cache;
}

class TuneCache {
 public:
  TuneCache(db::Cache& store, std::string target, int threads);

  const std::string& target() const { return target_; }

  std::optional<db::BestPlanRecord> FindBestPlan(const std::string& region_signature) const;
  // Every stored plan of the family (ir/text/family.h) for this target and thread count only:
  // a plan never transfers across targets or thread counts.
  std::vector<db::BestPlanRecord> FindFamilyPlans(const std::string& family_key) const;
  // Every stored plan for this target and thread count whose region holds `op`: the candidates
  // of a family match without equalities (server/plan_transfer.h).
  std::vector<db::BestPlanRecord> FindPlansWithOp(const std::string& op) const;
  // Inserts or replaces the region's best plan; the record's key is filled in here.
  void PutBestPlan(db::BestPlanRecord record);
  // As PutBestPlan, with the reason the replaced plan is kept for in the store's history.
  void ReplaceBestPlan(db::BestPlanRecord record, const std::string& reason);

  std::optional<db::MeasurementRecord> FindMeasurement(const std::string& group_signature,
                                                       const std::string& schedule) const;
  // Stores the records in one transaction, so a concurrent task never sees half of them; each
  // record's key needs only its group signature and schedule, the rest is filled in here.
  void PutMeasurements(std::vector<db::MeasurementRecord> records);

  // Every ok measurement of this target at any thread count: what the learned schedule model
  // trains on (server/schedule_model.h).
  std::vector<db::MeasurementRecord> ListTargetMeasurements() const;

  // The target's measured peak and bandwidth, when calibrated before.
  std::optional<RooflineTarget> FindRoofline() const;
  void PutRoofline(const RooflineTarget& roofline);

 private:
  db::Cache& store_;
  std::string target_;
  int threads_;
};

}  // namespace fusetune
