#pragma once
// Statements of the cache that run on a connection the caller already holds inside a transaction
// (Database::WriteTransaction / ReadTransaction), so several of them form one atomic step: the
// import merges, the export's snapshot. Internal to db/.
#include <string>
#include <vector>

#include "db/cache.h"
#include "db/records.h"
#include "db/table_util.h"

namespace fusetune::db {

class Connection;

std::vector<TargetRecord> ListTargetsIn(Connection& conn);
std::vector<MeasurementRecord> ListMeasurementsIn(Connection& conn,
                                                  const MeasurementFilter& filter);
std::vector<BestPlanRecord> ListBestPlansIn(Connection& conn, const BestPlanFilter& filter);

// Inserts a target unless one with its fingerprint exists; true when inserted.
bool MergeTargetIn(Connection& conn, const TargetRecord& target);
// The measurement rule of Cache::PutMeasurements for one record; true when written, and
// `*replaced` (when given) tells whether an existing row was overwritten.
bool PutMeasurementIn(Connection& conn, const MeasurementRecord& record, bool* replaced);
// Writes `record` when its key has no plan or a slower one (the old one is archived with
// `reason`); true when written, `*replaced` when a plan was there.
bool MergeBestPlanIn(Connection& conn, const BestPlanRecord& record, const std::string& reason,
                     bool* replaced);

}  // namespace fusetune::db
