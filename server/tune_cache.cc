#include "server/tune_cache.h"

#include "db/cache.h"
#include "server/tune_options.h"

namespace fusetune {

TuneCache::TuneCache(db::Cache& store, std::string target, int threads)
    : store_(store), target_(std::move(target)), threads_(threads) {}

std::optional<db::BestPlanRecord> TuneCache::FindBestPlan(
    const std::string& region_signature) const {
  return store_.FindBestPlan({region_signature, target_, threads_, kSearchVersion});
}

std::vector<db::BestPlanRecord> TuneCache::FindFamilyPlans(const std::string& family_key) const {
  return store_.FindBestPlansByFamily(family_key, target_, threads_, kSearchVersion);
}

std::vector<db::BestPlanRecord> TuneCache::FindPlansWithOp(const std::string& op) const {
  db::BestPlanFilter filter;
  filter.target_fingerprint = target_;
  filter.threads = threads_;
  filter.search_version = kSearchVersion;
  filter.op = op;
  return store_.ListBestPlans(filter);
}

void TuneCache::PutBestPlan(db::BestPlanRecord record) {
  ReplaceBestPlan(std::move(record), db::kReplacedByRetune);
}

void TuneCache::ReplaceBestPlan(db::BestPlanRecord record, const std::string& reason) {
  record.key = {record.key.region_signature, target_, threads_, kSearchVersion};
  store_.PutBestPlan(record, reason);
}

std::optional<db::MeasurementRecord> TuneCache::FindMeasurement(const std::string& group_signature,
                                                                const std::string& schedule) const {
  return store_.FindMeasurement({group_signature, schedule, target_, threads_});
}

void TuneCache::PutMeasurements(std::vector<db::MeasurementRecord> records) {
  for (db::MeasurementRecord& r : records) {
    r.key.target_fingerprint = target_;
    r.key.threads = threads_;
  }
  store_.PutMeasurements(records);
}

std::vector<db::MeasurementRecord> TuneCache::ListTargetMeasurements() const {
  db::MeasurementFilter filter;
  filter.target_fingerprint = target_;
  filter.status = db::MeasurementStatus::kOk;
  return store_.ListMeasurements(filter);
}

std::optional<RooflineTarget> TuneCache::FindRoofline() const {
  std::optional<db::TargetRecord> rec = store_.FindTarget(target_);
  if (!rec || rec->peak_gflops <= 0) return std::nullopt;
  return RooflineTarget{rec->peak_gflops, rec->bandwidth_gbs};
}

void TuneCache::PutRoofline(const RooflineTarget& roofline) {
  db::TargetRecord rec;
  rec.fingerprint = target_;
  rec.cores = threads_;
  rec.bandwidth_gbs = roofline.bandwidth_gbs;
  rec.peak_gflops = roofline.peak_gflops;
  store_.PutTarget(rec);
}

}  // namespace fusetune
