#pragma once
// Cache listings that run on a connection the caller has already locked (and, for a consistent
// snapshot of several listings, wrapped in one read transaction). Internal to db/.
#include <vector>

#include "db/records.h"
#include "db/store.h"

namespace fusetune::db {

class Connection;

std::vector<TargetRecord> ListTargetsIn(Connection& conn);
std::vector<MeasurementRecord> ListMeasurementsIn(Connection& conn,
                                                  const MeasurementFilter& filter);
std::vector<BestPlanRecord> ListBestPlansIn(Connection& conn, const BestPlanFilter& filter);

}  // namespace fusetune::db
